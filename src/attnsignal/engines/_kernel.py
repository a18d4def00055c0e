"""Compiled core of the exact engines: random streams, the shared reduced-coordinate kernel,
and the two parallel drivers (the chain and the projected engine, derived in
docs/engines.md#the-exact-engines-derived).

Why every jitted function lives in this one file: numba's on-disk cache (``cache=True``) is
invalidated by the modification time of the file that defines a function, not of the files
whose functions it calls (nor of the globals it reads), so a kernel split over several files
could be served a stale cache after an edit to one of its callees. One file means an edit
anywhere in the compiled code recompiles everything that depends on it. For the same reason the
test-side probes of these functions (``tests/engines/kernel_probes.py``) are compiled without
the cache.

Interface: the drivers :func:`chain_advance` and :func:`projected_advance` take one
:class:`KernelParams` (the scalars of a call), the state array, the runs' keys, the step sizes,
the active-run mask, the ziggurat tables and one :class:`KernelOutputs` (per-run statistics,
the divergence step and a completion flag); the chain's also an empty array whose dtype picks
the precision of its per-sample arithmetic (:func:`reduced_sample_as`: float64 for ``chain``,
float32 for ``chain32`` — one compiled driver each, so ``chain``'s holds no float32 code and
compiles in ~20 % less time); :mod:`._kernel_common` builds them. Nothing here
runs on import (the threading layer is chosen by :func:`._kernel_common.launch`).

Reduced coordinates (σ = 1; the engines standardise ``(θ, σ, β, η) → (θ/σ, 1, βσ, σ²η)``)
-------------------------------------------------------------------------------------------
For a unit ``q`` with ``ρ = <q, ξ>`` and ``s = √(1 − ρ²)``, ``ξ = ρ q + s e``. A token is
``x_i = s_i q + h_i e + w_i`` with ``s_i = εθρ 1_i + a_i``, ``h_i = εθs 1_i + b_i`` and ``w_i``
standard Gaussian on the ``D = d − 2`` dimensional complement. With ``α = softmax(β s)``,
``n = ||α||``, ``α̂ = α/n`` and ``γ⃗ = W^T α̂ ~ N(0, I_D)`` (``γ = ||γ⃗||``), one has exactly
``(w_i·ω)_i = n(γ² α̂ + γ Pζ)`` with ``ζ ~ N(0, I_L)`` independent of ``γ⃗`` and
``P = I − α̂α̂^T``. :func:`reduced_sample` draws ``a, b, ζ`` and, given ``γ²``, returns
``g_q = q·g``, ``g_e = e·g``, ``v_a``, ``ζ·v_⊥``, ``||v_⊥||²`` (with ``g = 2β Σ v_i x_i``,
``v = α ∘ (c − F)``), the informative mass and the largest nuisance weight. The complement
part of the gradient is ``u = 2β W^T v``, ``W^T v = (v_a γ + ζ·v_⊥) γ̂ + ||v_⊥|| ν̂ √χ'``,
``χ' ~ χ²_{D−1}``, ``ν̂`` uniform on the complement sphere orthogonal to ``γ̂``. The chain uses
only ``||u||`` (and the Bartlett decomposition of Wishart(``D``, ``I_B``) for the angles between
the ``B`` minibatch directions); the projected engine realises ``γ⃗`` and ``ν`` in ``R^d``.

Random numbers: why this design
-------------------------------
The cost of an exact engine is dominated by the ``3 L`` normal variates a sample consumes, so
the generator must be (i) fast — well under numpy's ``Generator.standard_normal`` — (ii)
callable from compiled code inside ``prange`` without locks or shared state, and (iii)
reproducible per run whatever the number of runs, the thread count, and how the steps are
split into ``advance`` calls. The scheme:

* **Philox4x64-10** (Salmon et al., SC'11; the counter-based generator numpy ships as
  ``numpy.random.Philox``, and we test bit-equality with it) maps ``(run key, update k)`` to
  256 bits. The 128-bit key comes from the run's ``SeedSequence``; the counter is
  ``(k, 1, 0, 0)``. Update ``k`` of run ``r`` therefore has its own stream, a pure function
  of ``(seed_r, k)`` — no sequential state to carry, no dependence on block boundaries.
* Those 256 bits seed **xoshiro256++** (Blackman & Vigna 2019; passes BigCrush, ~1 ns per
  64-bit word, 2^256 − 1 period so the streams of different ``(r, k)`` cannot overlap in
  practice), which produces the update's variates sequentially. Hashing only once per update
  keeps the counter-based guarantees at the cost of ~50 ns per update, instead of ~4 ns per
  word for Philox alone.
* **Normals: 256-layer ziggurat** (Marsaglia & Tsang 2000) in numpy's 52-bit form, with
  independent bits for the layer index, the sign and the mantissa (avoiding the correlation
  Doornik (2005) found in the original) and Marsaglia's exact tail sampler. Exact in law up
  to rounding; 99 % of draws cost one word, a table look-up and a multiply.
* **χ²_k**: ``k = 0`` → 0, ``k = 1`` → ``Z²``, otherwise ``2 Gamma(k/2)`` by Marsaglia–Tsang
  (2000), exact for every shape, with ``log1p`` in the acceptance test so that shapes of
  ``5·10^8`` (``d = 10^9``) stay accurate. Fair signs use the top bit of a word.

Draw order within the stream of one update (it defines the bit-level output, not the law):
chain, per sample: sign (random-sign variant), ``γ² ~ χ²_D``, ``a`` (L), ``b`` (L), ``ζ`` (L),
``χ' ~ χ²_{D−1}``; then, for ``B > 1``, the Bartlett factor (or the ``B`` directions, or for
``B > 64`` the ``B − 1`` pairs ``(z, χ²_{D−1})`` of the sequential form).
Projected, per sample: sign, ``z`` (d), ``a``, ``b``, ``ζ``, ``z'`` (d).

``exp``: the softmax uses :func:`fast_exp` (within 1 ulp of libm, vectorisable); libm's scalar
``exp`` call was a quarter of the kernel time.

Compilation: ``@njit(cache=True, error_model="numpy")`` (IEEE semantics: a division by zero
gives inf/NaN, which the divergence check then catches) and ``fastmath`` limited to
``{"nsz", "arcp", "contract"}``; ``nnan``/``ninf`` stay off because divergence detection relies
on NaN and inf propagating. **No** ``reassoc``: with it LLVM is free to choose the summation
order of each reduction, and it chose differently for the code a process compiles and the code
it loads from numba's on-disk cache — a sweep whose workers loaded the cache differed in the
last bits from the process that had compiled it (caught by the sweep determinism test on a
clean clone). The long reductions (over the ``L`` tokens and the ``d`` coordinates:
:func:`reduced_sample`, :func:`_dot`, :func:`_lane_max`) are instead written in 4 explicit
lanes combined as ``(l0 + l1) + (l2 + l3)``: a fixed order, which LLVM still vectorises, at the
speed the reassociating version had (chain 5.18 against 5.17 µs a sample in ``attnsignal
bench``; 7.7 µs with neither). Float64 throughout; every count (``L``, ``R``, ``d``, ``B``,
step indices) is a 64-bit integer — the engines' ``check`` rejects sizes whose scratch cannot
fit in memory before a call. The two drivers are ``parallel=True`` with ``prange`` over runs
(each run's steps run inside one compiled call); everything else is serial and is inlined by
LLVM.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from llvmlite import ir
from numba import njit, prange, types
from numba.extending import intrinsic, overload

_FASTMATH = {"nsz", "arcp", "contract"}
_jit = njit(cache=True, error_model="numpy", fastmath=_FASTMATH, nogil=True)
_pjit = njit(cache=True, error_model="numpy", fastmath=_FASTMATH, parallel=True, nogil=True)

_U = np.uint64
_M32 = _U(0xFFFFFFFF)
_S32 = _U(32)
_S11 = _U(11)
_S9 = _U(9)
_S17 = _U(17)
_S63 = _U(63)
_FF = _U(0xFF)
_F9 = _U(0x1FF)
_BIT8 = _U(0x100)
_MANT = _U(0x000FFFFFFFFFFFFF)
_ONE = _U(1)
_TWO = _U(2)
_THREE = _U(3)
_FOUR = _U(4)
_ZERO = _U(0)
_PH_M0 = _U(0xD2E7470EE14C6C93)
_PH_M1 = _U(0xCA5A826395121157)
_PH_W0 = _U(0x9E3779B97F4A7C15)
_PH_W1 = _U(0xBB67AE8584CAA73B)
_TWO_M53 = 2.0**-53
ZIGGURAT_R = 3.6541528853610088  # right edge of the base layer of the 256-layer ziggurat
_ZR = ZIGGURAT_R
_ZINV_R = 1.0 / ZIGGURAT_R

# Kernel variants (KernelParams.variant). The engines always run EXACT; the law tests build
# the two broken ones to show that they have power. DROP_COMPLEMENT: the chain drops
# ||v_⊥||²χ', the projected engine drops ν; WRONG_DIMENSION: a complement of dimension d − 1
# (chain: D = d − 1; projected: γ⃗ and ν projected off q only, not off e).
EXACT, DROP_COMPLEMENT, WRONG_DIMENSION = 0, 1, 2


class KernelParams(NamedTuple):
    """The scalar parameters of one driver call (a numba-typed named tuple; σ = 1 units).

    theta, beta : ``θ/σ`` and ``βσ``;  n_informative, n_tokens : ``R`` and ``L``;
    dim : ``d``;  batch : ``B``;  riemannian : drop ``g_q`` (the Riemannian update);
    random_sign : a fair signal sign per sample;  first_step : the 0-based index ``k`` of the
    first update (the stream counter);  variant : :data:`EXACT` (or a broken variant, tests).
    """

    theta: float
    beta: float
    n_informative: int
    n_tokens: int
    dim: int
    batch: int
    riemannian: bool
    random_sign: bool
    first_step: int
    variant: int


class KernelOutputs(NamedTuple):
    """The per-run outputs of a driver call, (runs,) arrays written in place.

    informative_mass, max_nuisance_weight : statistics of the last update (float64);
    diverged_at : the 1-based update count at which the run became non-finite, else left as is
    (int64);  done : set to 1 when the run's updates completed (uint8) — a run left at 0 did
    not run to the end (an allocation failed inside the parallel loop), which the caller must
    report rather than return its stale state.
    """

    informative_mass: np.ndarray
    max_nuisance_weight: np.ndarray
    diverged_at: np.ndarray
    done: np.ndarray


# ============================================================================ random streams


@_jit
def _mulhilo(a, b):
    lo = a * b
    a0 = a & _M32
    a1 = a >> _S32
    b0 = b & _M32
    b1 = b >> _S32
    p00 = a0 * b0
    p01 = a0 * b1
    p10 = a1 * b0
    p11 = a1 * b1
    mid = (p00 >> _S32) + (p01 & _M32) + (p10 & _M32)
    hi = p11 + (p01 >> _S32) + (p10 >> _S32) + (mid >> _S32)
    return hi, lo


@_jit
def philox4x64(c0, c1, c2, c3, k0, k1):
    """Philox4x64-10 of counter ``(c0..c3)`` under key ``(k0, k1)`` (Random123 / numpy)."""
    for i in range(10):
        if i > 0:
            k0 = k0 + _PH_W0
            k1 = k1 + _PH_W1
        hi0, lo0 = _mulhilo(_PH_M0, c0)
        hi1, lo1 = _mulhilo(_PH_M1, c2)
        c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
    return c0, c1, c2, c3


@_jit
def seed_stream(st, k0, k1, step):
    """xoshiro256++ state ``st`` (uint64[4]) for update ``step`` of the run with key (k0, k1)."""
    a, b, c, d = philox4x64(_U(step), _ONE, _ZERO, _ZERO, k0, k1)
    if (a | b | c | d) == _ZERO:  # pragma: no cover - probability 2^-256
        a = _ONE
    st[0] = a
    st[1] = b
    st[2] = c
    st[3] = d


@_jit
def _rotl(x, k):
    return (x << _U(k)) | (x >> _U(64 - k))


@_jit
def next_u64(st):
    """xoshiro256++ (Blackman & Vigna)."""
    s0 = st[0]
    s1 = st[1]
    s2 = st[2]
    s3 = st[3]
    result = _rotl(s0 + s3, 23) + s0
    t = s1 << _S17
    s2 ^= s0
    s3 ^= s1
    s1 ^= s2
    s0 ^= s3
    s2 ^= t
    s3 = _rotl(s3, 45)
    st[0] = s0
    st[1] = s1
    st[2] = s2
    st[3] = s3
    return result


@_jit
def uniform(st):
    """Uniform on [0, 1) with 53 random bits."""
    return np.float64(next_u64(st) >> _S11) * _TWO_M53


@_jit
def fair_sign(st):
    return -1.0 if (next_u64(st) >> _S63) != _ZERO else 1.0


@_jit
def normal(st, zt):
    """Standard normal, 256-layer ziggurat (numpy's 52-bit layout); ``zt`` from
    :func:`._rng.ziggurat_tables`."""
    while True:
        r = next_u64(st)
        idx = r & _FF
        neg = (r & _BIT8) != _ZERO
        m = np.float64((r >> _S9) & _MANT)
        x = m * zt[1, idx]
        if neg:
            x = -x
        if m < zt[0, idx]:
            return x
        if idx == _ZERO:
            # Marsaglia's tail sampler beyond r
            while True:
                xx = -_ZINV_R * math.log1p(-uniform(st))
                yy = -math.log1p(-uniform(st))
                if yy + yy > xx * xx:
                    return -(_ZR + xx) if neg else _ZR + xx
        else:
            fhi = zt[2, idx - _ONE]
            flo = zt[2, idx]
            if (fhi - flo) * uniform(st) + flo < math.exp(-0.5 * x * x):
                return x


@_jit
def _xo(s0, s1, s2, s3):
    """One xoshiro256++ step on a state held in registers: (word, new state)."""
    result = _rotl(s0 + s3, 23) + s0
    t = s1 << _S17
    s2 ^= s0
    s3 ^= s1
    s1 ^= s2
    s0 ^= s3
    s2 ^= t
    s3 = _rotl(s3, 45)
    return result, s0, s1, s2, s3


@_jit
def _ziggurat_rare(idx, neg, x, s0, s1, s2, s3, zt):
    """The rare branch of the bulk ziggurat (:func:`fill_normals`, :func:`fill_normals32`):
    the base strip's tail (Marsaglia's sampler beyond ``r``) or layer ``idx``'s wedge test for
    the point ``x``, in float64 with fresh words of the state held in registers:
    (accepted, value, new state)."""
    if idx == _ZERO:
        while True:
            u1, s0, s1, s2, s3 = _xo(s0, s1, s2, s3)
            u2, s0, s1, s2, s3 = _xo(s0, s1, s2, s3)
            xx = -_ZINV_R * math.log1p(-np.float64(u1 >> _S11) * _TWO_M53)
            yy = -math.log1p(-np.float64(u2 >> _S11) * _TWO_M53)
            if yy + yy > xx * xx:
                return True, (-(_ZR + xx) if neg else _ZR + xx), s0, s1, s2, s3
    u1, s0, s1, s2, s3 = _xo(s0, s1, s2, s3)
    fhi = zt[2, idx - _ONE]
    flo = zt[2, idx]
    if (fhi - flo) * (np.float64(u1 >> _S11) * _TWO_M53) + flo < math.exp(-0.5 * x * x):
        return True, x, s0, s1, s2, s3
    return False, 0.0, s0, s1, s2, s3


@_jit
def fill_normals(st, zt, out, n):
    """``out[:n]`` ← ``n`` standard normals (the same ziggurat as :func:`normal`, with the
    generator state kept in registers for the bulk draws).

    Bit for bit :func:`normal`'s draws, with two savings on the fast path, measured at E1's
    size (3 × 10 500 draws): the layer and the sign are one 9-bit index into the 512-entry
    rows of ``zt`` (:func:`._rng.ziggurat_tables_signed`: ``k``, and ``w`` signed; no sign
    operation: 1.95 → 1.71 ns a draw), and the position ``i`` is unsigned (numba wraps a
    signed index that may be negative, and that select, with the spill it caused, was 6 %
    of the loop)."""
    s0 = st[0]
    s1 = st[1]
    s2 = st[2]
    s3 = st[3]
    i = _ZERO
    nn = _U(n) if n > 0 else _ZERO  # a negative count draws nothing, as before
    while i < nn:
        r, s0, s1, s2, s3 = _xo(s0, s1, s2, s3)
        j = r & _F9
        m = np.float64((r >> _S9) & _MANT)
        x = m * zt[1, j]
        if m < zt[0, j]:
            out[i] = x
            i += _ONE
            continue
        ok, v, s0, s1, s2, s3 = _ziggurat_rare(r & _FF, (r & _BIT8) != _ZERO, x, s0, s1, s2,
                                               s3, zt)
        if ok:
            out[i] = v
            i += _ONE
    st[0] = s0
    st[1] = s1
    st[2] = s2
    st[3] = s3


@_jit
def _normal_regs(s0, s1, s2, s3, zt):
    """:func:`normal` on a state held in registers: (value, new state). The same words, the
    same values (its fast path is :func:`fill_normals`'s, its rare branch
    :func:`_ziggurat_rare`)."""
    while True:
        r, s0, s1, s2, s3 = _xo(s0, s1, s2, s3)
        j = r & _F9
        m = np.float64((r >> _S9) & _MANT)
        x = m * zt[1, j]
        if m < zt[0, j]:
            return x, s0, s1, s2, s3
        ok, v, s0, s1, s2, s3 = _ziggurat_rare(r & _FF, (r & _BIT8) != _ZERO, x, s0, s1, s2,
                                               s3, zt)
        if ok:
            return v, s0, s1, s2, s3


@_jit
def _gamma_ge1_regs(s0, s1, s2, s3, zt, a):
    """Gamma(a, 1) for a >= 1, Marsaglia & Tsang (2000), on a state held in registers:
    (value, new state)."""
    dd = a - 1.0 / 3.0
    c = 1.0 / math.sqrt(9.0 * dd)
    while True:
        x, s0, s1, s2, s3 = _normal_regs(s0, s1, s2, s3, zt)
        t = c * x
        if t <= -1.0:
            continue
        w = t * (3.0 + t * (3.0 + t))  # (1 + t)^3 − 1, without cancellation
        r, s0, s1, s2, s3 = _xo(s0, s1, s2, s3)
        u = np.float64(r >> _S11) * _TWO_M53
        x2 = x * x
        if u < 1.0 - 0.0331 * x2 * x2:
            return dd * (1.0 + w), s0, s1, s2, s3
        if math.log(u) < 0.5 * x2 + dd * (math.log1p(w) - w):
            return dd * (1.0 + w), s0, s1, s2, s3


@_jit
def _gamma_ge1(st, zt, a):
    """Gamma(a, 1) for a >= 1, Marsaglia & Tsang (2000)."""
    g, s0, s1, s2, s3 = _gamma_ge1_regs(st[0], st[1], st[2], st[3], zt, a)
    st[0] = s0
    st[1] = s1
    st[2] = s2
    st[3] = s3
    return g


@_jit
def gamma(st, zt, a):
    """Gamma(a, 1), a > 0 (a < 1 via Gamma(a + 1) U^{1/a})."""
    if a >= 1.0:
        return _gamma_ge1(st, zt, a)
    g = _gamma_ge1(st, zt, a + 1.0)
    return g * math.pow(1.0 - uniform(st), 1.0 / a)


@_jit
def chi2(st, zt, k):
    """χ²_k for an integer k >= 0. For k >= 2 the generator state is read once and written
    once, the draws in between running on registers (:func:`_gamma_ge1_regs`): a call
    through ``st`` per normal and per uniform was half the cost of a χ² draw (65 → 28 ns at
    k = 48, the same draws). It calls :func:`_gamma_ge1_regs` itself: through
    :func:`_gamma_ge1`, the same lines one call deeper, it measured 43–47 ns."""
    if k <= 0:
        return 0.0
    if k == 1:
        z = normal(st, zt)
        return z * z
    g, s0, s1, s2, s3 = _gamma_ge1_regs(st[0], st[1], st[2], st[3], zt, 0.5 * k)
    st[0] = s0
    st[1] = s1
    st[2] = s2
    st[3] = s3
    return 2.0 * g


# ============================================================================ shared kernel


@intrinsic
def _bits_to_f64(typingctx, x):
    """Reinterpret the bits of an int64 as a float64 (no conversion)."""
    sig = types.float64(types.int64)

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())

    return sig, codegen


_LOG2E = 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01  # trailing zeros: n * _LN2_HI is exact for |n| < 2^11
_LN2_LO = 1.90821492927058770002e-10
_E2, _E3, _E4, _E5, _E6, _E7, _E8, _E9, _E10, _E11, _E12, _E13 = (
    1.0 / math.factorial(j) for j in range(2, 14)
)


@njit(cache=True, error_model="numpy", fastmath={"contract"}, nogil=True)
def fast_exp(x):
    """``e^x`` within 1 ulp of ``math.exp`` for ``−708 <= x < 709``, and 0 below −708
    (values < 3.3e-308: the softmax weights they give are far below the float64 resolution
    of any sum they enter). Branch-free apart from selects, so loops calling it vectorise —
    libm's ``exp`` is an opaque scalar call and was a quarter of the kernel time. Cody–Waite range
    reduction, ``|r| <= ln2/2``, degree-13 Taylor polynomial (truncation < 1e-17). Compiled
    without ``reassoc`` so that the range reduction is evaluated as written."""
    if x < -708.0:
        return 0.0
    if not (x < 709.0):
        return np.inf if x >= 709.0 else x  # +inf / NaN
    n = math.floor(x * _LOG2E + 0.5)
    r = (x - n * _LN2_HI) - n * _LN2_LO
    p = _E13
    p = p * r + _E12
    p = p * r + _E11
    p = p * r + _E10
    p = p * r + _E9
    p = p * r + _E8
    p = p * r + _E7
    p = p * r + _E6
    p = p * r + _E5
    p = p * r + _E4
    p = p * r + _E3
    p = p * r + _E2
    p = p * r + 1.0
    p = p * r + 1.0
    return p * _bits_to_f64((np.int64(n) + 1023) << 52)


@_jit
def _lane_max(x, lo, hi):
    """``max(x[lo:hi])`` (−inf when empty; ``0 <= lo``) in 4 lanes, so that it vectorises
    without fastmath; unsigned positions, which numba does not wrap (:func:`fill_normals`)."""
    m0 = m1 = m2 = m3 = -np.inf
    if hi <= lo:
        return m0
    i = _U(lo)
    end = _U(hi)
    n4 = end - (end - i) % _U(4)
    while i < n4:
        m0 = x[i] if x[i] > m0 else m0
        m1 = x[i + _ONE] if x[i + _ONE] > m1 else m1
        m2 = x[i + _TWO] if x[i + _TWO] > m2 else m2
        m3 = x[i + _THREE] if x[i + _THREE] > m3 else m3
        i += _FOUR
    while i < end:
        m0 = x[i] if x[i] > m0 else m0
        i += _ONE
    m0 = m1 if m1 > m0 else m0
    m2 = m3 if m3 > m2 else m2
    return m2 if m2 > m0 else m0


@_jit
def _dot(x, y, lo, hi):
    """``Σ_{lo <= j < hi} x_j y_j`` in 4 explicit lanes (a fixed order that still vectorises)."""
    a0 = a1 = a2 = a3 = 0.0
    n4 = hi - (hi - lo) % 4
    for j in range(lo, n4, 4):
        a0 += x[j] * y[j]
        a1 += x[j + 1] * y[j + 1]
        a2 += x[j + 2] * y[j + 2]
        a3 += x[j + 3] * y[j + 3]
    for j in range(n4, hi):
        a0 += x[j] * y[j]
    return (a0 + a1) + (a2 + a3)


@_jit
def reduced_sample(st, zt, rho, s, theta, beta, R, L, eps, gamma2, q_coord, e_coord, zeta,
                   weight, vbuf):
    """One sample in reduced coordinates, σ = 1
    (docs/engines.md#one-sample-in-reduced-coordinates).

    Draws ``a``, then ``b``, then ``ζ`` (each ``N(0, I_L)``) from ``st``.
    ``gamma2 = γ²`` is supplied by the caller (a χ²_D draw for the chain, ``||γ⃗||²`` of the
    realised vector for the projected engine); ``eps`` is the signal sign.
    Scratch arrays (length >= L): ``q_coord`` receives ``s_i`` (the tokens' coordinates along
    ``q``), ``e_coord`` ``h_i`` (along ``e``), ``zeta`` ``ζ``, ``weight`` the unnormalised
    softmax weights ``exp(β (s_i − max s))`` and ``vbuf`` ``v_i = α_i (c_i − F)``.

    Returns ``(g_q, g_e, v_a, ζ·v_⊥, ||v_⊥||², mass, max_nuisance_weight)``.
    """
    tq = eps * theta * rho
    te = eps * theta * s
    fill_normals(st, zt, q_coord, L)  # a
    fill_normals(st, zt, e_coord, L)  # b
    fill_normals(st, zt, zeta, L)  # ζ
    for i in range(R):
        q_coord[i] += tq
        e_coord[i] += te
    smax = _lane_max(q_coord, 0, L)
    # softmax (shifted) and the α-moments; the sums run in 4 explicit lanes (module docstring)
    for i in range(L):
        weight[i] = fast_exp(beta * (q_coord[i] - smax))
    Z0 = Z1 = Z2 = Z3 = 0.0
    S0 = S1 = S2 = S3 = 0.0
    H0 = H1 = H2 = H3 = 0.0
    W0 = W1 = W2 = W3 = 0.0
    Q0 = Q1 = Q2 = Q3 = 0.0
    L4 = L - L % 4
    for i in range(0, L4, 4):
        w0 = weight[i]
        w1 = weight[i + 1]
        w2 = weight[i + 2]
        w3 = weight[i + 3]
        Z0 += w0
        Z1 += w1
        Z2 += w2
        Z3 += w3
        S0 += w0 * q_coord[i]
        S1 += w1 * q_coord[i + 1]
        S2 += w2 * q_coord[i + 2]
        S3 += w3 * q_coord[i + 3]
        H0 += w0 * e_coord[i]
        H1 += w1 * e_coord[i + 1]
        H2 += w2 * e_coord[i + 2]
        H3 += w3 * e_coord[i + 3]
        W0 += w0 * w0
        W1 += w1 * w1
        W2 += w2 * w2
        W3 += w3 * w3
        Q0 += w0 * zeta[i]
        Q1 += w1 * zeta[i + 1]
        Q2 += w2 * zeta[i + 2]
        Q3 += w3 * zeta[i + 3]
    for i in range(L4, L):
        w0 = weight[i]
        Z0 += w0
        S0 += w0 * q_coord[i]
        H0 += w0 * e_coord[i]
        W0 += w0 * w0
        Q0 += w0 * zeta[i]
    Z = (Z0 + Z1) + (Z2 + Z3)
    Ss = (S0 + S1) + (S2 + S3)
    Sh = (H0 + H1) + (H2 + H3)
    Sww = (W0 + W1) + (W2 + W3)
    Sz = (Q0 + Q1) + (Q2 + Q3)
    Zm = 0.0
    for i in range(R):
        Zm += weight[i]
    wmax = max(_lane_max(weight, R, L), 0.0)
    invZ = 1.0 / Z
    A = Ss * invZ
    H = Sh * invZ
    n2 = Sww * invZ * invZ
    n = math.sqrt(n2)
    az = Sz * invZ / n  # α̂·ζ
    gam = math.sqrt(gamma2)
    F = A * A + H * H + n2 * gamma2
    ka = gamma2 - gam * az  # (w_i·ω) = α_i ka + kz ζ_i
    kz = n * gam
    # v_i = α_i (c_i − F) into vbuf (a map, which LLVM vectorises), then its five sums in
    # 4 lanes: the same products and order as one fused loop, which LLVM left scalar
    # (0.35 ns a token less at L = 10 500)
    for i in range(L):
        a0 = weight[i] * invZ
        vbuf[i] = a0 * (q_coord[i] * A + e_coord[i] * H + a0 * ka + kz * zeta[i] - F)
    G0 = G1 = G2 = G3 = 0.0
    E0 = E1 = E2 = E3 = 0.0
    A0 = A1 = A2 = A3 = 0.0
    V0 = V1 = V2 = V3 = 0.0
    P0 = P1 = P2 = P3 = 0.0
    for i in range(0, L4, 4):
        v0 = vbuf[i]
        v1 = vbuf[i + 1]
        v2 = vbuf[i + 2]
        v3 = vbuf[i + 3]
        G0 += v0 * q_coord[i]
        G1 += v1 * q_coord[i + 1]
        G2 += v2 * q_coord[i + 2]
        G3 += v3 * q_coord[i + 3]
        E0 += v0 * e_coord[i]
        E1 += v1 * e_coord[i + 1]
        E2 += v2 * e_coord[i + 2]
        E3 += v3 * e_coord[i + 3]
        A0 += v0 * (weight[i] * invZ)
        A1 += v1 * (weight[i + 1] * invZ)
        A2 += v2 * (weight[i + 2] * invZ)
        A3 += v3 * (weight[i + 3] * invZ)
        V0 += v0 * zeta[i]
        V1 += v1 * zeta[i + 1]
        V2 += v2 * zeta[i + 2]
        V3 += v3 * zeta[i + 3]
        P0 += v0 * v0
        P1 += v1 * v1
        P2 += v2 * v2
        P3 += v3 * v3
    for i in range(L4, L):
        v0 = vbuf[i]
        G0 += v0 * q_coord[i]
        E0 += v0 * e_coord[i]
        A0 += v0 * (weight[i] * invZ)
        V0 += v0 * zeta[i]
        P0 += v0 * v0
    Gq = (G0 + G1) + (G2 + G3)
    Ge = (E0 + E1) + (E2 + E3)
    Sva = (A0 + A1) + (A2 + A3)
    Svz = (V0 + V1) + (V2 + V3)
    Svv = (P0 + P1) + (P2 + P3)
    va = Sva / n
    zvp = Svz - va * az
    nvp2 = Svv - va * va
    if nvp2 < 0.0:
        nvp2 = 0.0
    two_beta = 2.0 * beta
    return two_beta * Gq, two_beta * Ge, va, zvp, nvp2, Zm * invZ, wmax * invZ


# ============================================================================ single precision
# (the ``chain32`` engine: :func:`reduced_sample32`; benchmarks/bench_float32.py measured it)

_F32_0 = np.float32(0.0)
_F32_1 = np.float32(1.0)
_M23 = _U(0x7FFFFF)


@_jit
def fill_normals32(st, zt, out, n):
    """``out[:n]`` (float32) ← ``n`` standard normals, two per 64-bit word: each 32-bit half
    is a draw of the same 256-layer ziggurat with a 23-bit mantissa (8 bits of layer, 1 of
    sign), on the tables ``zt[3:6]`` (:func:`._rng.ziggurat_tables32`: the rectangle
    thresholds rounded down, so a point not accepted at once goes through the exact wedge
    test — exact in law up to the 2^-23 grid of each layer). The low half first. Layer and
    sign are one 9-bit index into the 512-entry rows, and the position is unsigned, as in
    :func:`fill_normals`."""
    s0 = st[0]
    s1 = st[1]
    s2 = st[2]
    s3 = st[3]
    i = _ZERO
    nn = _U(n) if n > 0 else _ZERO  # a negative count draws nothing, as before
    while i < nn:
        w, s0, s1, s2, s3 = _xo(s0, s1, s2, s3)
        for h in range(2):
            if i >= nn:
                break
            r = (w >> (_S32 * _U(h))) & _M32
            j = r & _F9
            m = np.float64((r >> _S9) & _M23)
            x = m * zt[4, j]
            if m < zt[3, j]:
                out[i] = x
                i += _ONE
                continue
            ok, v, s0, s1, s2, s3 = _ziggurat_rare(r & _FF, (r & _BIT8) != _ZERO, x, s0, s1,
                                                   s2, s3, zt)
            if ok:
                out[i] = v
                i += _ONE
    st[0] = s0
    st[1] = s1
    st[2] = s2
    st[3] = s3


@intrinsic
def _bits_to_f32(typingctx, x):
    """Reinterpret the bits of an int32 as a float32 (no conversion)."""
    sig = types.float32(types.int32)

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.FloatType())

    return sig, codegen


_LOG2E_32 = np.float32(_LOG2E)
_LN2_HI_32 = np.float32(0.693145751953125)  # 12 significant bits: n * hi exact for |n| < 2^11
_LN2_LO_32 = np.float32(math.log(2.0) - 0.693145751953125)
_E2_32, _E3_32, _E4_32, _E5_32, _E6_32 = (np.float32(1.0 / math.factorial(j)) for j in range(2, 7))
_EXP32_MIN = np.float32(-87.0)
_EXP32_MAX = np.float32(88.0)


@njit(cache=True, error_model="numpy", fastmath={"contract"}, nogil=True)
def fast_exp32(x):
    """``e^x`` in float32 for ``−87 <= x < 88`` (the shifted softmax has ``x <= 0``), 0 below
    (weights below float32's normal range), inf above and NaN for NaN: within a few ulp, branch-free apart from selects so
    that loops calling it vectorise. Cody–Waite reduction, ``|r| <= ln2/2``, degree-6
    Taylor polynomial (truncation < 2e-8)."""
    if x < _EXP32_MIN:
        return _F32_0
    if not (x < _EXP32_MAX):
        return np.float32(np.inf) if x >= _EXP32_MAX else x  # +inf / NaN
    n = np.floor(x * _LOG2E_32 + np.float32(0.5))
    r = (x - n * _LN2_HI_32) - n * _LN2_LO_32
    p = _E6_32
    p = p * r + _E5_32
    p = p * r + _E4_32
    p = p * r + _E3_32
    p = p * r + _E2_32
    p = p * r + _F32_1
    p = p * r + _F32_1
    return p * _bits_to_f32((np.int32(n) + np.int32(127)) << np.int32(23))


@_jit
def reduced_sample32(st, zt, rho, s, theta, beta, R, L, eps, gamma2, q_coord, e_coord, zeta,
                     weight):
    """:func:`reduced_sample` in single precision (the ``chain32`` engine): the same draws in
    the same order — two 32-bit ziggurat normals per 64-bit word (:func:`fill_normals32`) —
    and the same per-token arithmetic on float32 scratch arrays with :func:`fast_exp32`; each
    sum is one float32 accumulator in token order (a fixed order, like the 4 lanes of the
    float64 kernel; 4 float32 lanes measured slower here, 1.3× against 1.4× over float64).
    The projections ``v_a``, ``ζ·v_⊥``, ``||v_⊥||²`` are formed in float64 from the float32
    sums. Returns float64 values, as :func:`reduced_sample` does. Rounding: relative 6e-8
    per operation instead of 1.1e-16.
    """
    tq = np.float32(eps * theta * rho)
    te = np.float32(eps * theta * s)
    b32 = np.float32(beta)
    fill_normals32(st, zt, q_coord, L)  # a
    fill_normals32(st, zt, e_coord, L)  # b
    fill_normals32(st, zt, zeta, L)  # ζ
    for i in range(R):
        q_coord[i] += tq
        e_coord[i] += te
    smax = np.float32(_lane_max(q_coord, 0, L))
    for i in range(L):
        weight[i] = fast_exp32(b32 * (q_coord[i] - smax))
    Z = _F32_0
    Ss = _F32_0
    Sh = _F32_0
    Sww = _F32_0
    Sz = _F32_0
    for i in range(L):
        w = weight[i]
        Z += w
        Ss += w * q_coord[i]
        Sh += w * e_coord[i]
        Sww += w * w
        Sz += w * zeta[i]
    Zm = _F32_0
    for i in range(R):
        Zm += weight[i]
    wmax = max(_lane_max(weight, R, L), 0.0)
    invZ = _F32_1 / Z
    A = Ss * invZ
    H = Sh * invZ
    n2 = Sww * invZ * invZ
    n = np.sqrt(n2)
    az = Sz * invZ / n  # α̂·ζ
    g2 = np.float32(gamma2)
    gam = np.sqrt(g2)
    F = A * A + H * H + n2 * g2
    ka = g2 - gam * az  # (w_i·ω) = α_i ka + kz ζ_i
    kz = n * gam
    Gq = _F32_0
    Ge = _F32_0
    Sva = _F32_0
    Svz = _F32_0
    Svv = _F32_0
    for i in range(L):
        a = weight[i] * invZ
        v = a * (q_coord[i] * A + e_coord[i] * H + a * ka + kz * zeta[i] - F)
        Gq += v * q_coord[i]
        Ge += v * e_coord[i]
        Sva += v * a
        Svz += v * zeta[i]
        Svv += v * v
    # the projections onto α̂ and its complement in float64
    va = np.float64(Sva) / np.float64(n)
    zvp = np.float64(Svz) - va * np.float64(az)
    nvp2 = np.float64(Svv) - va * va
    if nvp2 < 0.0:
        nvp2 = 0.0
    two_beta = 2.0 * beta
    return (two_beta * np.float64(Gq), two_beta * np.float64(Ge), va, zvp, nvp2,
            np.float64(Zm * invZ), wmax * np.float64(invZ))


BARTLETT_MAX_B = 64  # above this minibatch size the O(B) sequential form is used


@_jit
def complement_sq_norm(st, zt, r, B, D, T, y):
    """``||Σ_b r_b û_b||²`` for ``B`` independent uniform directions ``û_b`` on the sphere of
    ``R^D`` (exact in law; 0 when ``D = 0``).

    ``B <= BARTLETT_MAX_B``: with ``D >= B`` the Bartlett decomposition of
    Wishart(``D``, ``I_B``) — ``G = T T^T``, ``T_jj² ~ χ²_{D−j}`` (0-based),
    ``T_jk ~ N(0, 1)`` for ``j > k``, result ``c^T G c``, ``c_j = r_j/√G_jj``
    (docs/engines.md#minibatches-the-bartlett-draw);
    with ``D < B`` the ``B`` directions are drawn explicitly. ``B > BARTLETT_MAX_B``: the
    sequential form, ``O(B)`` time and ``O(1)`` memory — with ``S_j = Σ_{b<=j} r_b û_b``,
    ``||S_{j+1}||² = ||S_j||² + r_{j+1}² + 2 r_{j+1} ||S_j|| t_j`` where
    ``t_j = û_{j+1}·S_j/||S_j||`` is independent of the past with the law of one coordinate
    of a uniform point, ``t = z/√(z² + χ²_{D−1})``.
    ``T``: (B, B) scratch and ``y``: (>= 2D) scratch, used only when ``B <= BARTLETT_MAX_B``.
    """
    if D <= 0:
        return 0.0
    if B == 1:
        return r[0] * r[0]
    if B > BARTLETT_MAX_B:
        S2 = r[0] * r[0]
        for b in range(1, B):
            z = normal(st, zt)
            tt = z / math.sqrt(z * z + chi2(st, zt, D - 1))
            S2 = S2 + r[b] * r[b] + 2.0 * r[b] * math.sqrt(S2) * tt
            if S2 < 0.0:
                S2 = 0.0
        return S2
    if D >= B:
        for j in range(B):
            T[j, j] = math.sqrt(chi2(st, zt, D - j))
            for k in range(j):
                T[j, k] = normal(st, zt)
        # c_j = r_j / sqrt(G_jj), G_jj = Σ_{k<=j} T_jk²; the result is ||T^T c||²
        for j in range(B):
            g = 0.0
            for k in range(j + 1):
                g += T[j, k] * T[j, k]
            c = r[j] / math.sqrt(g)
            for k in range(j + 1):
                T[j, k] *= c
        tot = 0.0
        for k in range(B):
            col = 0.0
            for j in range(k, B):
                col += T[j, k]
            tot += col * col
        return tot
    # 1 <= D < B <= BARTLETT_MAX_B: explicit directions (y[:D] accumulates, y[D:2D] draws)
    acc = y[:D]
    acc[:] = 0.0
    for b in range(B):
        nrm2 = 0.0
        for j in range(D):
            val = normal(st, zt)
            y[D + j] = val
            nrm2 += val * val
        c = r[b] / math.sqrt(nrm2)
        for j in range(D):
            acc[j] += c * y[D + j]
    tot = 0.0
    for j in range(D):
        tot += acc[j] * acc[j]
    return tot


@_jit
def _safe_ratio(num_a, num_b, a, b, c):
    """``(num_a a + num_b b) / √(a² + b² + c²)`` without overflow (c >= 0)."""
    m = max(abs(a), abs(b), c)
    if not (m < np.inf):
        return np.nan
    if m == 0.0:
        return np.nan
    a /= m
    b /= m
    c /= m
    return (num_a * a + num_b * b) / math.sqrt(a * a + b * b + c * c)


# ============================================================================ chain driver


def reduced_sample_as(st, zt, rho, s, theta, beta, R, L, eps, gamma2, q_coord, e_coord, zeta,
                      weight, vbuf):  # pragma: no cover - replaced by its overload when compiled
    """:func:`reduced_sample` for float64 scratch, :func:`reduced_sample32` for float32 (which
    does not use ``vbuf``) — chosen when the caller is compiled (:func:`_reduced_sample_as`),
    so a driver compiled for one precision contains the code of that one only."""
    raise NotImplementedError("reduced_sample_as is only callable from compiled code")


@overload(reduced_sample_as, jit_options={"error_model": "numpy", "fastmath": _FASTMATH})
def _reduced_sample_as(st, zt, rho, s, theta, beta, R, L, eps, gamma2, q_coord, e_coord, zeta,
                       weight, vbuf):
    if q_coord.dtype == types.float32:
        def impl32(st, zt, rho, s, theta, beta, R, L, eps, gamma2, q_coord, e_coord, zeta,
                   weight, vbuf):  # pragma: no cover
            return reduced_sample32(st, zt, rho, s, theta, beta, R, L, eps, gamma2, q_coord,
                                    e_coord, zeta, weight)
        return impl32

    def impl64(st, zt, rho, s, theta, beta, R, L, eps, gamma2, q_coord, e_coord, zeta,
               weight, vbuf):  # pragma: no cover
        return reduced_sample(st, zt, rho, s, theta, beta, R, L, eps, gamma2, q_coord, e_coord,
                              zeta, weight, vbuf)
    return impl64


@_pjit
def chain_advance(params, rho, keys, etas, active, zt, outputs, precision):
    """Advance every active run ``len(etas)`` updates of the alignment chain, in place on
    ``rho`` (runs,) and on the :class:`KernelOutputs` ``outputs``; ``keys`` (runs, 2) are the
    runs' Philox keys, ``params`` a :class:`KernelParams`. ``precision``: an empty array whose
    dtype is that of the per-sample arithmetic — float64 (the ``chain`` engine) or float32
    (``chain32``, :func:`reduced_sample32`); each dtype compiles a driver of its own, holding
    that precision's code only. A run that becomes non-finite gets ``rho = NaN`` and
    ``diverged_at`` set to the 1-based update count."""
    # the arrays are taken out of the tuples here, attribute by attribute, before the parallel
    # loop: numba (0.68) drops writes made inside prange through a tuple's array member — and
    # also through arrays unpacked from a tuple a jitted helper returns (the completion flags
    # caught that); the same lines open projected_advance
    mass_out = outputs.informative_mass
    maxw_out = outputs.max_nuisance_weight
    diverged_at = outputs.diverged_at
    done = outputs.done
    theta = params.theta
    beta = params.beta
    R = params.n_informative
    L = params.n_tokens
    B = params.batch
    variant = params.variant
    k_start = params.first_step
    dof = params.dim - 2  # D, the dimension of the complement of span(q, ξ)
    if variant == WRONG_DIMENSION:
        dof += 1
    n_runs = rho.shape[0]
    n_steps = etas.shape[0]
    for r in prange(n_runs):
        if active[r]:
            q_coord = np.empty(L, dtype=precision.dtype)
            e_coord = np.empty(L, dtype=precision.dtype)
            zeta = np.empty(L, dtype=precision.dtype)
            weight = np.empty(L, dtype=precision.dtype)
            vbuf = np.empty(L)  # v_i of reduced_sample (chain32 does not use it)
            st = np.empty(4, dtype=np.uint64)
            lengths = np.empty(B)
            bartlett_size = B if B <= BARTLETT_MAX_B else 1
            T = np.empty((bartlett_size, bartlett_size))
            y = np.empty(2 * bartlett_size + 2)
            x = rho[r]
            msum = np.nan
            wsum = np.nan
            k0 = keys[r, 0]
            k1 = keys[r, 1]
            for t in range(n_steps):
                seed_stream(st, k0, k1, k_start + t)
                eta = etas[t]
                s = math.sqrt(max(0.0, (1.0 - x) * (1.0 + x)))
                Gq = 0.0
                Ge = 0.0
                msum = 0.0
                wsum = 0.0
                for b in range(B):
                    eps = fair_sign(st) if params.random_sign else 1.0
                    g2 = chi2(st, zt, dof)
                    gq, ge, va, zvp, nvp2, mass, maxw = reduced_sample_as(
                        st, zt, x, s, theta, beta, R, L, eps, g2, q_coord, e_coord, zeta, weight,
                        vbuf)
                    if dof >= 1:
                        chi2_rest = chi2(st, zt, dof - 1)
                        if variant == DROP_COMPLEMENT:
                            chi2_rest = 0.0
                        lin = va * math.sqrt(g2) + zvp
                        u2 = lin * lin + nvp2 * chi2_rest
                    else:
                        u2 = 0.0
                    lengths[b] = 2.0 * beta * math.sqrt(u2) / B
                    Gq += gq
                    Ge += ge
                    msum += mass
                    wsum += maxw
                U2 = complement_sq_norm(st, zt, lengths, B, dof, T, y)
                Gq /= B
                Ge /= B
                if params.riemannian:
                    Gq = 0.0
                xn = _safe_ratio(x, s, 1.0 + eta * Gq, eta * Ge, eta * math.sqrt(U2))
                if not (abs(xn) < np.inf):
                    x = np.nan
                    diverged_at[r] = k_start + t + 1
                    msum = np.nan
                    wsum = np.nan
                    break
                if xn > 1.0:
                    xn = 1.0
                elif xn < -1.0:
                    xn = -1.0
                x = xn
            rho[r] = x
            mass_out[r] = msum / B
            maxw_out[r] = wsum / B
            done[r] = 1


# ============================================================================ projected driver


@_pjit
def projected_advance(params, q, keys, etas, active, zt, outputs):
    """Advance every active run ``len(etas)`` updates of the full-vector engine, in place on
    the unit queries ``q`` (runs, d) (with ``ξ = e_1``) and on ``outputs``; arguments as in
    :func:`chain_advance`. Non-finite runs get ``q = NaN`` and ``diverged_at``."""
    mass_out = outputs.informative_mass
    maxw_out = outputs.max_nuisance_weight
    diverged_at = outputs.diverged_at
    done = outputs.done
    theta = params.theta
    beta = params.beta
    R = params.n_informative
    L = params.n_tokens
    B = params.batch
    variant = params.variant
    k_start = params.first_step
    n_runs, d = q.shape
    n_steps = etas.shape[0]
    D = d - 2
    for r in prange(n_runs):
        if active[r]:
            q_coord = np.empty(L)
            e_coord = np.empty(L)
            zeta = np.empty(L)
            weight = np.empty(L)
            vbuf = np.empty(L)
            st = np.empty(4, dtype=np.uint64)
            e = np.empty(d)
            gv = np.empty(d)
            nv = np.empty(d)
            U = np.empty(d)
            x = q[r]
            msum = np.nan
            wsum = np.nan
            k0 = keys[r, 0]
            k1 = keys[r, 1]
            ok = True
            for t in range(n_steps):
                seed_stream(st, k0, k1, k_start + t)
                eta = etas[t]
                rh = x[0]
                s = math.sqrt(_dot(x, x, 1, d))
                if s > 0.0:
                    e[0] = s
                    cf = -rh / s
                    for j in range(1, d):
                        e[j] = cf * x[j]
                else:
                    e[:] = 0.0
                    e[1] = 1.0
                U[:] = 0.0
                Gq = 0.0
                Ge = 0.0
                msum = 0.0
                wsum = 0.0
                for b in range(B):
                    eps = fair_sign(st) if params.random_sign else 1.0
                    g2 = 0.0
                    if D >= 1:
                        # γ⃗: N(0, I_d) projected off span(q, e)
                        fill_normals(st, zt, gv, d)
                        dq = _dot(gv, x, 0, d)
                        de = _dot(gv, e, 0, d)
                        if variant == WRONG_DIMENSION:
                            de = 0.0
                        for j in range(d):
                            gv[j] = gv[j] - dq * x[j] - de * e[j]
                        g2 = _dot(gv, gv, 0, d)
                    gq, ge, va, zvp, nvp2, mass, maxw = reduced_sample(
                        st, zt, rh, s, theta, beta, R, L, eps, g2, q_coord, e_coord, zeta, weight,
                        vbuf)
                    Gq += gq
                    Ge += ge
                    msum += mass
                    wsum += maxw
                    if D >= 1 and g2 > 0.0:
                        gam = math.sqrt(g2)
                        cg = 2.0 * beta * (va + zvp / gam)
                        for j in range(d):
                            U[j] += cg * gv[j]
                        if D >= 2 and variant != DROP_COMPLEMENT:
                            # ν: ||v_⊥|| N(0, I_d) projected off span(q, e, γ⃗)
                            fill_normals(st, zt, nv, d)
                            dq = _dot(nv, x, 0, d)
                            de = _dot(nv, e, 0, d)
                            dg = _dot(nv, gv, 0, d)
                            if variant == WRONG_DIMENSION:
                                de = 0.0
                            dg /= g2
                            cn = 2.0 * beta * math.sqrt(nvp2)
                            for j in range(d):
                                U[j] += cn * (nv[j] - dq * x[j] - de * e[j] - dg * gv[j])
                cq = 0.0 if params.riemannian else eta * Gq / B
                ce = eta * Ge / B
                cu = eta / B
                for j in range(d):
                    nv[j] = x[j] + cq * x[j] + ce * e[j] + cu * U[j]
                nn = _dot(nv, nv, 0, d)
                if not (nn < np.inf) or nn == 0.0:
                    # overflow: rescale before normalising; NaN stays NaN
                    mx = 0.0
                    for j in range(d):
                        mx = max(mx, abs(nv[j]))
                    if mx < np.inf and mx > 0.0:
                        for j in range(d):
                            nv[j] /= mx
                        nn = _dot(nv, nv, 0, d)
                    else:
                        nn = np.nan
                inv = 1.0 / math.sqrt(nn)
                fin = True
                for j in range(d):
                    val = nv[j] * inv
                    x[j] = val
                    if not (abs(val) < np.inf):
                        fin = False
                if not fin:
                    x[:] = np.nan
                    diverged_at[r] = k_start + t + 1
                    ok = False
                    break
            if ok:
                mass_out[r] = msum / B
                maxw_out[r] = wsum / B
            done[r] = 1
