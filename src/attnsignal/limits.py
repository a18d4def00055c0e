"""Limits checked before work starts: memory, amount of work, and output paths.

Every check raises :class:`~attnsignal.config.ConfigError` (one line ``field: allowed; got
value``, exit status 2 on the command line) *before* anything is computed or written, with
the estimate in the message:

* :func:`check_memory` — an allocation that cannot fit: more than :func:`memory_limit`
  (the physical memory, or ``ulimit -v`` when lower; the engines' checks use it too);
* :func:`check_work` — more elementary operations than :data:`MAX_WORK` (about 10⁴ s of
  compute at 10⁸ operations a second): work that could not finish in any sensible time;
* :func:`check_output_dir` / :func:`check_output_file` — where results will be written must
  be (or can be created as) a writable directory, resp. a file in one.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

from .config import ConfigError

__all__ = [
    "MAX_WORK",
    "OPS_PER_SECOND",
    "memory_limit",
    "check_memory",
    "check_work",
    "check_output_dir",
    "check_output_file",
    "format_bytes",
    "format_seconds",
]

#: Refuse work above this many elementary operations (~10⁴ s at :data:`OPS_PER_SECOND`).
MAX_WORK = 1e12
#: Rough rate used to turn a count of operations into the time quoted in messages.
OPS_PER_SECOND = 1e8


def format_bytes(n: float) -> str:
    """``n`` bytes in binary units, e.g. ``'7.28 TiB'``."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"):
        if n < 1024 or unit == "EiB":
            return f"{n:.3g} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024
    return f"{n:.3g} EiB"  # pragma: no cover


def format_seconds(s: float) -> str:
    """A duration in the largest sensible unit, e.g. ``'3.2 h'``, ``'4e+12 years'``."""
    for unit, size in (("years", 3.15e7), ("days", 86400.0), ("h", 3600.0), ("min", 60.0)):
        if s >= size:
            return f"{s / size:.3g} {unit}"
    return f"{s:.3g} s"


def memory_limit() -> int:
    """Bytes one computation may plan to use: the physical memory, or the address-space limit
    (``ulimit -v``) when that is lower."""
    try:
        phys = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - non-POSIX
        phys = 1 << 40
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
        if soft != resource.RLIM_INFINITY and soft > 0:
            phys = min(phys, soft)
    except (ImportError, ValueError, OSError):  # pragma: no cover - non-POSIX
        pass
    return int(phys)


def check_memory(field: str, nbytes: float, what: str, value: Any) -> None:
    """Raise ConfigError when ``nbytes`` (an estimate of ``what``) exceeds the budget."""
    limit = memory_limit()
    if not nbytes <= limit:  # also catches NaN
        raise ConfigError(
            field, f"must keep {what} within memory: needs ≈ {format_bytes(nbytes)}, this "
                   f"machine allows {format_bytes(limit)}", value)


def check_work(field: str, ops: float, what: str, value: Any, limit: float = MAX_WORK) -> None:
    """Raise ConfigError when ``ops`` elementary operations (``what``) exceed ``limit``."""
    if not ops <= limit:
        raise ConfigError(
            field, f"must keep {what} below {limit:.0e} operations: ≈ {ops:.3g} "
                   f"(~{format_seconds(ops / OPS_PER_SECOND)})", value)


def _describe_os_error(exc: OSError) -> str:
    if exc.errno == errno.ENAMETOOLONG:
        return "a name too long for the file system"
    if exc.errno == errno.ELOOP:
        return "a symbolic-link loop"
    return exc.strerror or type(exc).__name__


def check_output_dir(path: Any, field: str = "out") -> Path:
    """``path`` as a directory that results can be written into; created (with parents) if
    missing. Refuses, with one line naming ``field``: an empty path, an existing file or
    device (``/dev/null``), a path under a file, a name too long, a read-only or otherwise
    unwritable directory. Returns the path."""
    if path is None or str(path) == "":
        raise ConfigError(field, "must name a directory to write into", "" if path is None else str(path))
    p = Path(path)
    text = str(path)
    try:
        if p.exists() and not p.is_dir():
            raise ConfigError(field, "must be a directory (or not exist yet), not a file", text)
        p.mkdir(parents=True, exist_ok=True)
    except ConfigError:
        raise
    except FileExistsError:
        raise ConfigError(field, "must be a directory (or not exist yet); a file is in the way",
                          text) from None
    except NotADirectoryError:
        raise ConfigError(field, "must be a directory; a part of the path is a file", text) from None
    except OSError as exc:
        raise ConfigError(field, f"must be a directory that can be created ({_describe_os_error(exc)})",
                          text) from None
    if not os.access(p, os.W_OK | os.X_OK):
        raise ConfigError(field, "must be a writable directory (permission denied)", text)
    # access() trusts mode bits; a read-only mount or an ACL can still refuse: try a file
    probe = p / f".attnsignal-write-test-{os.getpid()}"
    try:
        with open(probe, "wb"):
            pass
        os.unlink(probe)
    except OSError as exc:
        raise ConfigError(field, f"must be a writable directory ({_describe_os_error(exc)})",
                          text) from None
    return p


def check_output_file(path: Any, field: str = "out") -> Path:
    """``path`` as a file that can be (re)written: its directory passes
    :func:`check_output_dir` and the path itself is not a directory or device; its name is
    not too long. Returns the path."""
    if path is None or str(path) == "":
        raise ConfigError(field, "must name a file to write", "" if path is None else str(path))
    p = Path(path)
    text = str(path)
    if p.exists() and not p.is_file():
        raise ConfigError(field, "must be a regular file (or not exist yet)", text)
    check_output_dir(p.parent if str(p.parent) else Path("."), field)
    try:
        max_name = os.pathconf(p.parent if str(p.parent) else ".", "PC_NAME_MAX")
    except (OSError, ValueError):
        max_name = 255
    if len(os.fsencode(p.name)) + 16 > max_name:  # room for the temporary's prefix/suffix
        raise ConfigError(field, f"must have a file name of at most {max_name - 16} bytes", text)
    return p
