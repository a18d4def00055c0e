"""Test-side entry points into the compiled kernels (they are not part of the package).

Each probe is a small jitted function that calls the package's compiled building blocks
(Philox, the xoshiro stream, the ziggurat, χ², the minibatch complement, ``fast_exp``) so that
tests can check them bit for bit or in law. They are compiled **without** numba's on-disk
cache: a cached probe would not notice edits to :mod:`attnsignal.engines._kernel` (numba keys
a cache on the file that defines the function), and would test stale code.

:class:`BrokenChain` and :class:`BrokenProjected` are the exact engines with a deliberately
wrong kernel variant (``_kernel.DROP_COMPLEMENT`` / ``WRONG_DIMENSION``): the law tests must
reject them, which shows that they have power.
"""

import numpy as np
from numba import njit

from attnsignal.engines import _kernel as K
from attnsignal.engines import _kernel_common as common
from attnsignal.engines.chain import ChainEngine
from attnsignal.engines.projected import ProjectedEngine

_probe = njit(cache=False, error_model="numpy", nogil=True)


@_probe
def draw_normals(k0, k1, step, n, zt):
    """``n`` normals of the stream of update ``step`` under key ``(k0, k1)`` (bulk sampler)."""
    st = np.empty(4, dtype=np.uint64)
    K.seed_stream(st, k0, k1, step)
    out = np.empty(n)
    K.fill_normals(st, zt, out, n)
    return out


@_probe
def draw_normals_scalar(k0, k1, step, n, zt):
    """As :func:`draw_normals` through the scalar ``normal`` (must agree bit for bit)."""
    st = np.empty(4, dtype=np.uint64)
    K.seed_stream(st, k0, k1, step)
    out = np.empty(n)
    for i in range(n):
        out[i] = K.normal(st, zt)
    return out


@_probe
def draw_normals32(k0, k1, step, n, zt):
    """``n`` float32 normals of the stream of update ``step`` (the ``chain32`` sampler)."""
    st = np.empty(4, dtype=np.uint64)
    K.seed_stream(st, k0, k1, step)
    out = np.empty(n, dtype=np.float32)
    K.fill_normals32(st, zt, out, n)
    return out


@_probe
def state_after_fill(k0, k1, step, n, zt, single):
    """The stream's state after ``fill_normals`` (``fill_normals32`` if ``single``) of ``n``
    draws into a buffer of ``max(n, 0)`` (``n <= 0`` must draw nothing)."""
    st = np.empty(4, dtype=np.uint64)
    K.seed_stream(st, k0, k1, step)
    if single:
        K.fill_normals32(st, zt, np.empty(max(n, 0), dtype=np.float32), n)
    else:
        K.fill_normals(st, zt, np.empty(max(n, 0)), n)
    return st


@_probe
def exp32_array(x):
    """``fast_exp32`` elementwise (float32)."""
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = K.fast_exp32(x[i])
    return out


@_probe
def exp_array(x):
    """``fast_exp`` elementwise."""
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = K.fast_exp(x[i])
    return out


@_probe
def draw_chi2(k0, k1, step, n, df, zt):
    st = np.empty(4, dtype=np.uint64)
    K.seed_stream(st, k0, k1, step)
    out = np.empty(n)
    for i in range(n):
        out[i] = K.chi2(st, zt, df)
    return out


@_probe
def draw_u64(k0, k1, step, n):
    st = np.empty(4, dtype=np.uint64)
    K.seed_stream(st, k0, k1, step)
    out = np.empty(n, dtype=np.uint64)
    for i in range(n):
        out[i] = K.next_u64(st)
    return out


@_probe
def philox_block(c0, c1, c2, c3, k0, k1):
    a, b, c, d = K.philox4x64(c0, c1, c2, c3, k0, k1)
    out = np.empty(4, dtype=np.uint64)
    out[0] = a
    out[1] = b
    out[2] = c
    out[3] = d
    return out


@_probe
def complement_sq_norms(k0, k1, n, lengths, D, zt):
    """``n`` draws of ``complement_sq_norm`` for fixed lengths (stream ``i`` for draw ``i``)."""
    st = np.empty(4, dtype=np.uint64)
    B = lengths.shape[0]
    size = B if B <= K.BARTLETT_MAX_B else 1
    T = np.empty((size, size))
    y = np.empty(2 * size + 2)
    out = np.empty(n)
    for i in range(n):
        K.seed_stream(st, k0, k1, i)
        out[i] = K.complement_sq_norm(st, zt, lengths, B, D, T, y)
    return out


class BrokenChain(ChainEngine):
    """The chain with a broken kernel variant (for power checks; never registered)."""

    def __init__(self, variant: int):
        self.variant = variant

    def advance(self, model, run, state, etas):
        p = common.prepare(model, run, state, etas, self.variant)
        rho = state.rho.copy()
        return common.finish(state, rho, None, common.launch(K.chain_advance, rho, p, p.precision), p)


class BrokenProjected(ProjectedEngine):
    """The projected engine with a broken kernel variant (power checks; never registered)."""

    def __init__(self, variant: int):
        self.variant = variant

    def advance(self, model, run, state, etas):
        p = common.prepare(model, run, state, etas, self.variant)
        q = np.array(state.q, dtype=np.float64, order="C", copy=True)
        out = common.launch(K.projected_advance, q, p)
        return common.finish(state, state.rho.copy(), q, out, p)
