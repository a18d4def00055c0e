"""Helpers of the hostile-input suite: run a CLI command in process and classify how it ends.

(A module of its own, not ``conftest``: every test directory has a ``conftest`` and
``from conftest import ...`` gets whichever pytest imported last.)

Every case must end in one of two ways:

* ``"refused"`` — exit status 2 with exactly one line on stderr, ``attnsignal: error: ...``
  (in Python: a ``ConfigError``, one line);
* ``"ok"`` — exit status 0 (in Python: a result whose numbers are finite, or NaN only where a
  run is flagged diverged).

Anything else (a traceback, another exit status, a non-finite number passed silently, a raw
numpy warning, running past the case's bound) fails the case.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass

import numpy as np

from attnsignal.cli import main
from attnsignal.config import ConfigError
from attnsignal.persistence import ResultFileError

_PROGRESS = re.compile(r"(eta [-:0-9]+|\d+/\d+ \d+:\d\d:\d\d|━)")


@dataclass
class Ending:
    how: str          # "refused" | "ok"
    rc: int
    message: str      # the error line, or ""


def error_lines(err: str) -> list[str]:
    """stderr without progress-bar frames and warnings the command may print."""
    lines = [ln.strip() for ln in err.replace("\r", "\n").splitlines()]
    return [ln for ln in lines if ln and not _PROGRESS.search(ln)
            and not ln.startswith(("warning:", "[E"))]


def run_cli(args: list[str], capsys) -> Ending:
    """``attnsignal ARGS`` in this process; fails on anything but exit 0 or one-line exit 2."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # raw numpy warnings are failures
        rc = main([str(a) for a in args])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err, err[-2000:]
    if rc == 0:
        return Ending("ok", rc, "")
    lines = [ln for ln in error_lines(err) if ln.startswith("attnsignal: error:")]
    assert rc == 2, f"exit status {rc}: {err[-2000:]}"
    assert len(lines) == 1 and len(error_lines(err)) == 1, err[-2000:]
    return Ending("refused", rc, lines[0])


def call(fn, *args, **kwargs) -> tuple[str, object]:
    """``fn(*args, **kwargs)`` classified: ("refused", the one-line ConfigError — or
    ResultFileError, for a damaged saved result) or ("ok", value)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        try:
            return "ok", fn(*args, **kwargs)
        except (ConfigError, ResultFileError) as exc:
            assert "\n" not in str(exc), str(exc)
            assert len(str(exc)) < 600, str(exc)
            return "refused", exc


def assert_finite_result(res) -> None:
    """A simulation Result: every record finite except in runs flagged diverged."""
    ok = ~np.asarray(res.diverged)
    assert np.all(np.isfinite(res.alignment[ok])), "non-finite alignment in a run not flagged"
    assert np.all(np.isfinite(res.informative_mass[ok][:, 1:]))
    assert np.all(np.isfinite(res.ode_time))
