"""One BLAS thread where the cores are already spoken for.

OpenBLAS's threads spin on small matrices: with two busy cores a batch of 100×100 eigenvector
solves ran 13× to 94× slower on two BLAS threads than on one (17.4 s against 1.3 s for 8 PCA
runs of 20 000 samples at d = 100 under a load of ~6; ``benchmarks/bench_baselines.py``
prints the ratio), and the literal engine's ``(L × d)`` matrix–vector products at E1's size
took 7.2 CPU-s on two threads for 3.6 s of wall against 4.0 CPU-s on one (3.9 s of wall, the
machine otherwise idle). Users:

* the PCA baseline (:mod:`.baselines.pca`), around its eigenvector solves;
* pool and cluster workers (:func:`.sweep.tasks._single_thread`): one compute thread each,
  for the whole process — the other cores are the other workers';
* ``attnsignal reproduce`` in its coordinating process for the whole run: the cores are the
  pool's, and its theory (quadrature, the literal spot check) is small dense algebra.

One thread also makes the summation order of a matrix product independent of the number of
cores, so these computations give the same bits on every machine.

:func:`single_blas_thread` sets every OpenBLAS loaded in the process (numpy's and scipy's
copies) to one thread and restores the previous counts afterwards;
:func:`set_blas_threads` sets them for good. Where no OpenBLAS is found both do nothing.
"""

from __future__ import annotations

import ctypes
from contextlib import contextmanager
from functools import lru_cache
from typing import Iterator

__all__ = ["set_blas_threads", "single_blas_thread"]


@lru_cache(maxsize=1)
def _controls() -> tuple[tuple, ...]:
    import numpy  # noqa: F401  (load the libraries first)
    import scipy.linalg  # noqa: F401

    found = []
    try:
        with open("/proc/self/maps") as fh:
            paths = {ln.split()[-1] for ln in fh if "openblas" in ln.lower() and ".so" in ln}
    except OSError:
        return ()
    for path in sorted(paths):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for get, put in (("openblas_get_num_threads", "openblas_set_num_threads"),
                         ("openblas_get_num_threads64_", "openblas_set_num_threads64_"),
                         ("scipy_openblas_get_num_threads64_", "scipy_openblas_set_num_threads64_"),
                         ("scipy_openblas_get_num_threads", "scipy_openblas_set_num_threads")):
            if hasattr(lib, get) and hasattr(lib, put):
                found.append((getattr(lib, get), getattr(lib, put)))
                break
    return tuple(found)


def set_blas_threads(n: int) -> None:
    """Every OpenBLAS loaded in the process to ``n`` threads, from now on."""
    for _, put in _controls():
        put(int(n))


@contextmanager
def single_blas_thread() -> Iterator[None]:
    """Run the body with one OpenBLAS thread (no-op where OpenBLAS is not found)."""
    ctl = _controls()
    before = [get() for get, _ in ctl]
    for _, put in ctl:
        put(1)
    try:
        yield
    finally:
        for (_, put), n in zip(ctl, before):
            put(n)
