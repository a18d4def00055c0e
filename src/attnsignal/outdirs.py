"""Output directories that never overwrite a saved result by accident.

:func:`new_output_dir` picks where a command writes:

* no directory named: a new one under ``base`` (``results/run-20261204-153012``; a second
  within the same second gets ``-2``, ``-3``, …), created atomically with ``mkdir`` so that two
  commands started together never share one;
* a directory named that does not exist or is empty: that one;
* a directory named that holds files: refused (``ConfigError``) unless ``overwrite`` — the
  previous results stay where they are.

A path that exists and is a file, or a parent that cannot be written, is refused before any
work starts. (Prepared for the command line's ``--out``/``--overwrite``; not yet used by it.)
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from .validation import ConfigError

__all__ = ["new_output_dir"]

#: new directories per base and second before giving up (a runaway loop, not a real workload)
_MAX_SAME_SECOND = 1000


def new_output_dir(out: str | os.PathLike | None, *, base: str | os.PathLike = "results",
                   prefix: str = "run", overwrite: bool = False,
                   now: float | None = None) -> Path:
    """The directory a command writes to, created; see the module docstring.

    Raises ConfigError (field ``out``) for a file in the way, an unwritable parent, or a
    directory with files in it without ``overwrite``."""
    if out is not None:
        path = Path(out)
        if path.exists() and not path.is_dir():
            raise ConfigError("out", "must be a directory (it is a file)", str(path))
        if path.is_dir() and any(path.iterdir()) and not overwrite:
            raise ConfigError("out", "must be a new or empty directory, or give --overwrite "
                              "(it holds earlier results)", str(path))
        _make(path)
        return path
    root = Path(base)
    if root.exists() and not root.is_dir():
        raise ConfigError("out", "the results folder must be a directory (it is a file)",
                          str(root))
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
    _make(root)
    for n in range(1, _MAX_SAME_SECOND + 1):
        path = root / (f"{prefix}-{stamp}" if n == 1 else f"{prefix}-{stamp}-{n}")
        try:
            path.mkdir()
            return path
        except FileExistsError:
            continue
    raise ConfigError("out", f"at most {_MAX_SAME_SECOND} new directories a second under "
                      "one folder", str(root))


def _make(path: Path) -> None:
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError("out", f"must be a directory that can be created and written "
                          f"({exc.strerror})", str(path)) from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise ConfigError("out", "must be a writable directory", str(path))
