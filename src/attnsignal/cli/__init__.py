"""The ``attnsignal`` command line.

Sub-commands live in one module each (``run``, ...); they register themselves on ``app``.
Bad input of any kind — an out-of-range value, an unknown option, an unreadable file — and a
fault of the file system while writing (a full disk, a read-only mount) end with one line on
stderr and exit status 2, never a traceback.
"""

from __future__ import annotations

import sys

import typer
from typer.core import TyperCommand

try:  # typer >= 0.25 vendors click
    from typer._click import exceptions as _cx
except ImportError:  # pragma: no cover - older typer on top of click
    from click import exceptions as _cx

from ..config import ConfigError
from ._app import HelpCommand, UsageFailure, app

__all__ = ["app", "main", "entry", "UsageFailure"]


def _register() -> None:
    """Import the command modules (each registers its commands on ``app``)."""
    from . import (advise, baseline, bench, compare, reproduce, run, scaling,  # noqa: F401
                   sweep, theory, validate)

    for info in app.registered_commands:  # help without <bool>, <str> or eaten [brackets]
        if info.cls is None or info.cls is TyperCommand:
            info.cls = HelpCommand


#: Options whose value is a path: an empty value is refused before click sees it.
PATH_OPTIONS = ("--out", "--config")


def _empty_path_option(args: list[str]) -> str | None:
    """The first path option given an empty value (``--out ''`` or ``--out=``), or None."""
    for i, a in enumerate(args):
        if a == "--":
            break
        if a in PATH_OPTIONS and i + 1 < len(args) and args[i + 1] == "":
            return a.lstrip("-")
        if a.endswith("=") and a[:-1] in PATH_OPTIONS:
            return a[:-1].lstrip("-")
    return None


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the app, turning bad input into one line and exit status 2."""
    _register()
    cmd = typer.main.get_command(app)
    args = sys.argv[1:] if argv is None else list(argv)
    empty = _empty_path_option(args)
    if empty is not None:  # click turns '' into Path('') == '.', the current directory
        print(f"attnsignal: error: {empty}: must name a path; got ''", file=sys.stderr)
        return 2
    try:
        rv = cmd.main(args=args, prog_name="attnsignal", standalone_mode=False)
    except typer.Exit as exc:
        return int(exc.exit_code)
    except typer.Abort:
        print("attnsignal: aborted", file=sys.stderr)
        return 130
    except _cx.NoArgsIsHelpError as exc:
        exc.show()
        return 0
    except _cx.ClickException as exc:  # usage errors: unknown option, missing argument...
        print(f"attnsignal: error: {exc.format_message()}".replace("\n", " "), file=sys.stderr)
        return 2
    except (ConfigError, UsageFailure) as exc:
        print(f"attnsignal: error: {exc}".replace("\n", " "), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("attnsignal: interrupted", file=sys.stderr)
        return 130
    except OSError as exc:  # the file system: a full disk, a read-only mount, an I/O error
        print(f"attnsignal: error: {os_error_line(exc)}", file=sys.stderr)
        return 2
    return int(rv or 0)


def os_error_line(exc: OSError) -> str:
    """``PATH: cause`` of a file-system fault, on one line (``results/run/manifest.json: No
    space left on device``); the writers name the file they were writing
    (:func:`attnsignal.persistence.atomic_write`)."""
    cause = exc.strerror or " ".join(str(exc).split()) or type(exc).__name__
    if exc.filename is None:
        return cause
    where = str(exc.filename) + ("" if exc.filename2 is None else f" -> {exc.filename2}")
    return f"{where}: {cause}"


def entry() -> None:
    """The ``attnsignal`` console script and ``python -m attnsignal``: :func:`main`, then a
    quick exit.

    Once :func:`main` has returned, the exit handlers run as at any exit (logging's,
    multiprocessing's, weak-reference finalizers), the standard streams are flushed, and the
    process ends with :func:`main`'s status — without the interpreter's teardown of every
    module and object, which took half a second after a reproduction (numba's, pandas' and
    matplotlib's objects), one core idle. Nothing is left to write by then: results are
    written atomically and their files closed. The ordinary exit is kept where a thread
    other than this one still runs (it would be cut short) and where ``atexit`` has no
    ``_run_exitfuncs``; an exception that escapes :func:`main` ends the ordinary way (its
    traceback, status 1)."""
    import atexit
    import os
    import threading

    code = main()
    run_exit_handlers = getattr(atexit, "_run_exitfuncs", None)
    if run_exit_handlers is None or threading.active_count() > 1:
        sys.exit(code)
    run_exit_handlers()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed or broken stream: nothing more to write
            pass
    os._exit(code)


if __name__ == "__main__":  # pragma: no cover
    entry()
