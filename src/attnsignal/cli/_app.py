"""The ``attnsignal`` application object that every sub-command module registers on, and
the exception for bad input that is not a :class:`~attnsignal.config.ConfigError`.

Its own module so that the command modules import it without importing the package that
imports them (:mod:`attnsignal.cli` registers the commands and runs the app).
"""

from __future__ import annotations

import typer

__all__ = ["app", "UsageFailure"]

app = typer.Typer(
    name="attnsignal",
    help=(
        "Softmax attention discovering a hidden signal (arXiv 2606.22406): simulate SGA on "
        "the sphere, compute the theory, run sweeps and reproduce the paper."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _print_version(value: bool) -> None:
    if value:
        from .._version import __version__

        print(f"attnsignal {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_print_version, is_eager=True,
                                 help="print the version and exit"),
) -> None:
    """Softmax attention discovering a hidden signal."""


class UsageFailure(Exception):
    """Raised by commands for bad input that is not a ConfigError (one line, exit 2)."""
