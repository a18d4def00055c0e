"""Would single precision pay for the chain's per-sample arithmetic? (issue 16, item 4)

A prototype, not the library: the chain driver of :mod:`attnsignal.engines._kernel` with
:func:`reduced_sample` — the per-sample work over the ``L`` tokens, where the time goes — in
float32, including its three ``N(0, I_L)`` draws (two normals per 64-bit word: a 32-bit
ziggurat with the library's tables, 23-bit mantissa; the wedge and tail tests unchanged) and a
float32 ``exp`` (Cody–Waite, degree-6 polynomial, vectorisable). Everything else — the stream
per update, the χ² draws, the complement norm, the update of ρ — is the library's float64 code.

Two measurements, in one run:

1. **speed**: seconds per update (all runs, the same threads) of the library's
   ``chain_advance`` and of the float32 prototype, at a small and at the paper's E1 size;
   the ratio float64 / float32 is the gain.
2. **law**: final ``|ρ|`` of ``--law-runs`` runs at a small configuration, float32 against
   float64 (the library's engine), by a two-sample Kolmogorov–Smirnov test; the same test
   against the DROP_COMPLEMENT variant (a known, small error in the law, used by the law
   tests) shows the test's power at this size.

    python benchmarks/bench_float32.py            # ~2 minutes on 2 cores
    python benchmarks/bench_float32.py --quick    # fewer runs and repeats, noisier

Decision rule (docs/performance.md): an opt-in float32 path only if the law test passes and the
gain is at least 1.3×.
"""

from __future__ import annotations

import argparse
import math
import sys
import time

import numpy as np
from llvmlite import ir
from numba import njit, prange, types
from numba.extending import intrinsic

from attnsignal.config import ModelConfig, RunConfig, StepSize
from attnsignal.engines import get_engine
from attnsignal.engines import _kernel as K
from attnsignal.engines._rng import ziggurat_tables
from attnsignal.engines.base import run_seeds

_FM = {"nsz", "arcp", "contract"}
_jit = njit(cache=False, error_model="numpy", fastmath=_FM, nogil=True)
# the float32 sums are left to LLVM to vectorise (reassociation allowed, 8 lanes), which makes
# this an optimistic prototype: the library's kernel fixes its summation order by hand (4 lanes)
_jit_reassoc = njit(cache=False, error_model="numpy", fastmath=_FM | {"reassoc"}, nogil=True)
_pjit = njit(cache=False, error_model="numpy", fastmath=_FM, parallel=True, nogil=True)

_F = np.float32
_Z = _F(0.0)
_ONE32 = _F(1.0)
_U = np.uint64
_M32 = _U(0xFFFFFFFF)
_S32 = _U(32)
_S11 = _U(11)
_S9 = _U(9)
_FF = _U(0xFF)
_BIT8 = _U(0x100)
_MANT23 = _U(0x7FFFFF)
_ZERO = _U(0)
_ONE = _U(1)


def ziggurat_tables32() -> np.ndarray:
    """The library's tables for a 23-bit mantissa: ``k`` rounded down (a conservative
    rectangle test: a point not accepted at once goes through the exact wedge test),
    ``w`` scaled by 2^29, ``f`` unchanged (float64)."""
    zt = ziggurat_tables(K.ZIGGURAT_R)
    out = zt.copy()
    out[0] = np.floor(zt[0] / 2.0**29)
    out[1] = zt[1] * 2.0**29
    return out


@_jit
def _slow(idx, neg, x, s0, s1, s2, s3, zt):
    """The rare branch of the ziggurat (wedge or tail), in float64 with fresh words:
    (accepted, value, state)."""
    if idx == _ZERO:
        while True:
            u1, s0, s1, s2, s3 = K._xo(s0, s1, s2, s3)
            u2, s0, s1, s2, s3 = K._xo(s0, s1, s2, s3)
            xx = -(1.0 / K.ZIGGURAT_R) * math.log1p(-np.float64(u1 >> _S11) * 2.0**-53)
            yy = -math.log1p(-np.float64(u2 >> _S11) * 2.0**-53)
            if yy + yy > xx * xx:
                v = K.ZIGGURAT_R + xx
                return True, -v if neg else v, s0, s1, s2, s3
    u1, s0, s1, s2, s3 = K._xo(s0, s1, s2, s3)
    fhi = zt[2, idx - _ONE]
    flo = zt[2, idx]
    if (fhi - flo) * (np.float64(u1 >> _S11) * 2.0**-53) + flo < math.exp(-0.5 * x * x):
        return True, x, s0, s1, s2, s3
    return False, 0.0, s0, s1, s2, s3


@_jit
def fill_normals32(st, zt, out, n):
    """``out[:n]`` (float32) ← standard normals, two 32-bit ziggurat draws per 64-bit word."""
    s0 = st[0]
    s1 = st[1]
    s2 = st[2]
    s3 = st[3]
    i = 0
    while i < n:
        w, s0, s1, s2, s3 = K._xo(s0, s1, s2, s3)
        for h in range(2):
            if i >= n:
                break
            r = (w >> (_S32 * _U(h))) & _M32
            idx = r & _FF
            neg = (r & _BIT8) != _ZERO
            m = np.float64((r >> _S9) & _MANT23)
            x = m * zt[1, idx]
            if neg:
                x = -x
            if m < zt[0, idx]:
                out[i] = x
                i += 1
                continue
            ok, v, s0, s1, s2, s3 = _slow(idx, neg, x, s0, s1, s2, s3, zt)
            if ok:
                out[i] = v
                i += 1
    st[0] = s0
    st[1] = s1
    st[2] = s2
    st[3] = s3


@intrinsic
def _bits_to_f32(typingctx, x):
    """Reinterpret the bits of an int32 as a float32."""
    sig = types.float32(types.int32)

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.FloatType())

    return sig, codegen


_LOG2E32 = _F(1.4426950408889634)
_LN2_HI32 = _F(0.693145751953125)  # 12 significant bits: n * hi exact for |n| < 2^11
_LN2_LO32 = _F(1.428606765330187e-06)
_P = [_F(1.0 / math.factorial(j)) for j in range(7)]
_P2, _P3, _P4, _P5, _P6 = _P[2], _P[3], _P[4], _P[5], _P[6]
_MIN32 = _F(-87.0)


@_jit
def fast_exp32(x):
    """``e^x`` in float32 for ``x <= 0`` (softmax weights), 0 below −87; a few ulp."""
    if x < _MIN32:
        return _Z
    n = np.floor(x * _LOG2E32 + _F(0.5))
    r = (x - n * _LN2_HI32) - n * _LN2_LO32
    p = _P6
    p = p * r + _P5
    p = p * r + _P4
    p = p * r + _P3
    p = p * r + _P2
    p = p * r + _ONE32
    p = p * r + _ONE32
    return p * _bits_to_f32((np.int32(n) + np.int32(127)) << np.int32(23))


def _reduced_sample32(st, zt, rho, s, theta, beta, R, L, eps, gamma2, q_coord, e_coord, zeta,
                     weight):
    """:func:`attnsignal.engines._kernel.reduced_sample` with the per-token work in float32
    (scratch arrays float32); the same returns, as float64."""
    tq = _F(eps * theta * rho)
    te = _F(eps * theta * s)
    b32 = _F(beta)
    fill_normals32(st, zt, q_coord, L)
    fill_normals32(st, zt, e_coord, L)
    fill_normals32(st, zt, zeta, L)
    for i in range(R):
        q_coord[i] += tq
        e_coord[i] += te
    smax = _F(K._lane_max(q_coord, 0, L))
    for i in range(L):
        weight[i] = fast_exp32(b32 * (q_coord[i] - smax))
    Z = Ss = Sh = Sww = Sz = _Z
    for i in range(L):  # (lanes left to LLVM: reassociated float32 sums, 8 wide)
        w0 = weight[i]
        Z += w0
        Ss += w0 * q_coord[i]
        Sh += w0 * e_coord[i]
        Sww += w0 * w0
        Sz += w0 * zeta[i]
    Zm = _Z
    for i in range(R):
        Zm += weight[i]
    wmax = max(np.float64(K._lane_max(weight, R, L)), 0.0)
    invZ = _ONE32 / Z
    A = Ss * invZ
    H = Sh * invZ
    n2 = Sww * invZ * invZ
    n = np.sqrt(n2)
    az = Sz * invZ / n
    g2 = _F(gamma2)
    gam = np.sqrt(g2)
    F = A * A + H * H + n2 * g2
    ka = g2 - gam * az
    kz = n * gam
    Gq = Ge = Sva = Svz = Svv = _Z
    for i in range(L):
        a0 = weight[i] * invZ
        v0 = a0 * (q_coord[i] * A + e_coord[i] * H + a0 * ka + kz * zeta[i] - F)
        Gq += v0 * q_coord[i]
        Ge += v0 * e_coord[i]
        Sva += v0 * a0
        Svz += v0 * zeta[i]
        Svv += v0 * v0
    va = np.float64(Sva) / np.float64(n)
    zvp = np.float64(Svz) - va * np.float64(az)
    nvp2 = np.float64(Svv) - va * va
    if nvp2 < 0.0:
        nvp2 = 0.0
    two_beta = 2.0 * beta
    return (two_beta * np.float64(Gq), two_beta * np.float64(Ge), va, zvp, nvp2,
            np.float64(Zm * invZ), wmax * np.float64(invZ))


def _make_driver(reassoc: bool):
    """The library's :func:`chain_advance` (B = 1, exact variant) with the per-sample work in
    float32, its sums vectorised by LLVM (``reassoc``: optimistic, the summation order left to
    the compiler) or in source order (strict, as the library's cache-stable kernel requires,
    here without hand-written 8-lane sums: pessimistic)."""
    reduced_sample32 = (_jit_reassoc if reassoc else _jit)(_reduced_sample32)

    @_pjit
    def chain_advance32(params, rho, keys, etas, active, zt, zt32, outputs):
        mass_out = outputs.informative_mass
        maxw_out = outputs.max_nuisance_weight
        diverged_at = outputs.diverged_at
        done = outputs.done
        theta = params.theta
        beta = params.beta
        R = params.n_informative
        L = params.n_tokens
        k_start = params.first_step
        dof = params.dim - 2
        n_runs = rho.shape[0]
        n_steps = etas.shape[0]
        for r in prange(n_runs):
            if active[r]:
                q_coord = np.empty(L, dtype=np.float32)
                e_coord = np.empty(L, dtype=np.float32)
                zeta = np.empty(L, dtype=np.float32)
                weight = np.empty(L, dtype=np.float32)
                st = np.empty(4, dtype=np.uint64)
                x = rho[r]
                msum = np.nan
                wsum = np.nan
                for t in range(n_steps):
                    K.seed_stream(st, keys[r, 0], keys[r, 1], k_start + t)
                    eta = etas[t]
                    s = math.sqrt(max(0.0, (1.0 - x) * (1.0 + x)))
                    eps = K.fair_sign(st) if params.random_sign else 1.0
                    g2 = K.chi2(st, zt, dof)
                    gq, ge, va, zvp, nvp2, msum, wsum = reduced_sample32(
                        st, zt32, x, s, theta, beta, R, L, eps, g2, q_coord, e_coord, zeta, weight)
                    u2 = 0.0
                    if dof >= 1:
                        lin = va * math.sqrt(g2) + zvp
                        u2 = lin * lin + nvp2 * K.chi2(st, zt, dof - 1)
                    U2 = 4.0 * beta * beta * u2
                    if params.riemannian:
                        gq = 0.0
                    xn = K._safe_ratio(x, s, 1.0 + eta * gq, eta * ge, eta * math.sqrt(U2))
                    if not (abs(xn) < np.inf):
                        x = np.nan
                        diverged_at[r] = k_start + t + 1
                        break
                    x = min(1.0, max(-1.0, xn))
                rho[r] = x
                mass_out[r] = msum
                maxw_out[r] = wsum
                done[r] = 1

    return chain_advance32


DRIVERS = {"32": _make_driver(True), "32strict": _make_driver(False)}


def _final_abs_rho(model, step, runs, steps, seed, precision, variant=K.EXACT, rho0=None):
    """Final |ρ| of ``runs`` runs (B = 1) from the library's initial states: float64 through the
    library's driver, float32 through the prototype. Returns (values, seconds in the driver)."""
    from attnsignal.engines import _kernel_common as C

    eng = get_engine("chain")
    run = RunConfig(steps=steps, runs=runs, engine="chain", initial_alignment=rho0)
    state = eng.init(model, run, run_seeds(seed, runs))
    p = C.prepare(model, run, state, step.eta(np.arange(steps)), variant=variant)
    rho = state.rho.copy()
    zt32 = ziggurat_tables32()
    out = K.KernelOutputs(np.full(runs, np.nan), np.full(runs, np.nan),
                          np.full(runs, -1, dtype=np.int64), np.zeros(runs, dtype=np.uint8))
    C.use_forksafe_threading()
    t0 = time.perf_counter()
    if precision == "64":
        K.chain_advance(p.params, rho, p.keys, p.etas, p.active, C.ZT, out)
    else:
        DRIVERS[precision](p.params, rho, p.keys, p.etas, p.active, C.ZT, zt32, out)
    sec = time.perf_counter() - t0
    assert out.done.all()
    return np.abs(rho), sec


PRECISIONS = ("64", "32", "32strict")


def speed(model, runs, steps, repeats):
    """Best-of-``repeats`` seconds per update (all runs) of each precision, interleaved."""
    st = StepSize(0.01, 1000, 0.75)
    for p in PRECISIONS:  # compile / warm
        _final_abs_rho(model, st, runs, 2, 0, p)
    best = {p: np.inf for p in PRECISIONS}
    for rep in range(repeats):
        for p in PRECISIONS:
            _, sec = _final_abs_rho(model, st, runs, steps, rep + 1, p)
            best[p] = min(best[p], sec / steps)
    return best


LAW_CASES = [
    # (label, model, step, initial alignment): runs still spread out at the end
    ("d = 20, R = 5, N = 60, θ = 0.5", ModelConfig(d=20, n_informative=5, n_nuisance=60, theta=0.5),
     StepSize(0.05, 100, 0.75), None),
    ("d = 10^6, R = 5, N = 60, θ = 1, ρ0 = 0.3 (γ² ≈ 10^6: float32 cancellation)",
     ModelConfig(d=10**6, n_informative=5, n_nuisance=60, theta=1.0),
     StepSize(2e-9, 100, 0.75), 0.3),
]


def main(argv: list[str] | None = None) -> int:
    from scipy.stats import ks_2samp

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--law-runs", type=int, default=600)
    a = ap.parse_args(argv)
    repeats = 2 if a.quick else 4
    print("Speed (best of %d, the same threads; one run of this script):" % repeats)
    print("| configuration | runs | float64 s/update | float32 s/update (LLVM-vectorised sums) "
          "| float64 / float32 | float32, sums in source order | float64 / that |")
    print("|---|---|---|---|---|---|---|")
    configs = [
        ("d = 20, R = 10, N = 200", ModelConfig(d=20, n_informative=10, n_nuisance=200, theta=0.25), 8, 400),
        ("E1 full: d = 100, R = 500, N = 10 000", ModelConfig(d=100, n_informative=500, n_nuisance=10_000, theta=0.25), 4, 40),
    ]
    for name, m, runs, steps in configs:
        steps = steps // 2 if a.quick else steps
        b = speed(m, runs, steps, repeats)
        print(f"| {name} | {runs} | {b['64']:.3g} | {b['32']:.3g} | {b['64'] / b['32']:.2f} | "
              f"{b['32strict']:.3g} | {b['64'] / b['32strict']:.2f} |")

    runs = a.law_runs // 2 if a.quick else a.law_runs
    steps = 300
    for label, m, st, rho0 in LAW_CASES:
        def final(seed, precision, variant=K.EXACT):
            return _final_abs_rho(m, st, runs, steps, seed, precision, variant, rho0)[0]

        r64 = final(11, "64")
        rows = (("float32 vs float64", final(12, "32"), r64),
                ("float64 vs float64 (another seed)", final(13, "64"), r64),
                ("DROP_COMPLEMENT vs float64 (power check)", final(14, "64", K.DROP_COMPLEMENT),
                 r64))
        print()
        print(f"Law of the final |ρ|, {label}, {steps} steps, {runs} runs per sample "
              "(independent seeds), two-sample KS:")
        print("| comparison | mean final abs(rho) | KS statistic | p-value |")
        print("|---|---|---|---|")
        for lab, x, y in rows:
            ks = ks_2samp(x, y)
            print(f"| {lab} | {x.mean():.4f} vs {y.mean():.4f} | {ks.statistic:.3f} | "
                  f"{ks.pvalue:.3g} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
