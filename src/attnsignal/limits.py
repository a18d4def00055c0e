"""Limits checked before work starts: memory and amount of work.

Every check raises :class:`~attnsignal.config.ConfigError` (one line ``field: allowed; got
value``, exit status 2 on the command line) *before* anything is computed or written, with
the estimate in the message:

* :func:`check_memory` — an allocation that cannot fit: more than :func:`memory_limit`
  (the physical memory, or ``ulimit -v`` when lower; the engines' checks use it too);
* :func:`check_work` — more elementary operations than :data:`MAX_WORK` (about 10⁴ s of
  compute at 10⁸ operations a second): work that could not finish in any sensible time.

Paths (output directories, input files) are checked by :mod:`attnsignal.paths`.
"""

from __future__ import annotations

import os
from typing import Any

from .validation import ConfigError

__all__ = [
    "MAX_EXACT_BETA_SIGMA",
    "MAX_WORK",
    "OPS_PER_SECOND",
    "BLAS_FLOPS_PER_SECOND",
    "memory_limit",
    "check_memory",
    "check_work",
    "format_bytes",
    "format_seconds",
]

#: The largest ``βσ`` at which the landscape's exact quadrature (``theory.exact``, which
#: re-exports it as ``MAX_BETA``) is used; above it the theory computes ``Φ'`` by Monte Carlo.
#: Here, outside the theory package, so that the command line's help can state it without
#: importing the theory.
MAX_EXACT_BETA_SIGMA = 12.0
#: Refuse work above this many elementary operations (~10⁴ s at :data:`OPS_PER_SECOND`).
MAX_WORK = 1e12
#: Rough rate used to turn a count of operations into the time quoted in messages.
OPS_PER_SECOND = 1e8
#: Floating-point operations per second of dense LAPACK/BLAS work (a d×d Cholesky, product or
#: eigen-decomposition) on one core, deliberately low: measured here ≈ 8e10 (PCA at d = 1000,
#: 57 records of a 4·d³ count each, in 2.9 s on a slow day). Work done by such calls counts
#: ``flops × OPS_PER_SECOND / BLAS_FLOPS_PER_SECOND`` elementary operations.
BLAS_FLOPS_PER_SECOND = 1e10


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
