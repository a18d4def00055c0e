"""Does single precision pay for the chain's per-sample arithmetic? (issue 16, item 4)

The ``chain32`` engine against ``chain``: the same driver of :mod:`attnsignal.engines._kernel`
with :func:`~attnsignal.engines._kernel.reduced_sample32` — the per-sample work over the ``L``
tokens, where the time goes — in float32: the three ``N(0, I_L)`` draws two per 64-bit word
(a 32-bit ziggurat on the same tables, 23-bit mantissa, the wedge and tail tests unchanged),
a float32 ``exp``, float32 scratch and sums. Everything else — the stream per update, the χ²
draws, the complement norm, the update of ρ — is float64 in both.

Two measurements, in one run:

1. **speed**: seconds per update (all runs, the same threads, interleaved best of 4) of both
   at a small and at the paper's E1 size; ``chain / chain32`` is the gain.
2. **law**: final ``|ρ|`` of ``--law-runs`` runs, ``chain32`` against ``chain``, by a
   two-sample Kolmogorov–Smirnov test, at d = 20 and at d = 10⁶ (γ² ≈ d, where float32
   cancellation would show); the same test against the DROP_COMPLEMENT variant (a known,
   small error in the law, used by the law tests) shows the test's power at this size.

    python benchmarks/bench_float32.py            # ~30 s on 2 cores
    python benchmarks/bench_float32.py --quick    # fewer runs and repeats, noisier

Decision rule (docs/performance.md): an opt-in float32 path only if the law test passes and the
gain is at least 1.3× — both held (first on a prototype in this script), hence the opt-in
``chain32`` engine; ``chain`` stays the default.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from attnsignal.config import ModelConfig, RunConfig, StepSize
from attnsignal.engines import get_engine
from attnsignal.engines import _kernel as K
from attnsignal.engines.base import run_seeds

def _final_abs_rho(model, step, runs, steps, seed, precision, variant=K.EXACT, rho0=None):
    """Final |ρ| of ``runs`` runs (B = 1) from the engine's initial states, through the
    library's driver in float64 (``precision="64"``) or float32 (``"chain32"``).
    Returns (values, seconds in the driver)."""
    from attnsignal.engines import _kernel_common as C

    eng = get_engine("chain")
    run = RunConfig(steps=steps, runs=runs, engine="chain", initial_alignment=rho0)
    state = eng.init(model, run, run_seeds(seed, runs))
    p = C.prepare(model, run, state, step.eta(np.arange(steps)), variant=variant,
                  single=precision == "chain32")
    rho = state.rho.copy()
    out = K.KernelOutputs(np.full(runs, np.nan), np.full(runs, np.nan),
                          np.full(runs, -1, dtype=np.int64), np.zeros(runs, dtype=np.uint8))
    C.use_forksafe_threading()
    t0 = time.perf_counter()
    K.chain_advance(p.params, rho, p.keys, p.etas, p.active, C.ZT, out, p.precision)
    sec = time.perf_counter() - t0
    assert out.done.all()
    return np.abs(rho), sec


PRECISIONS = ("64", "chain32")


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
    print("| configuration | runs | chain (float64) s/update | chain32 s/update | chain / chain32 |")
    print("|---|---|---|---|---|")
    configs = [
        ("d = 20, R = 10, N = 200", ModelConfig(d=20, n_informative=10, n_nuisance=200, theta=0.25), 8, 400),
        ("E1 full: d = 100, R = 500, N = 10 000", ModelConfig(d=100, n_informative=500, n_nuisance=10_000, theta=0.25), 4, 40),
    ]
    for name, m, runs, steps in configs:
        steps = steps // 2 if a.quick else steps
        b = speed(m, runs, steps, repeats)
        print(f"| {name} | {runs} | {b['64']:.3g} | "
              + " | ".join(f"{b[p]:.3g} | {b['64'] / b[p]:.2f}" for p in PRECISIONS[1:]) + " |")

    runs = a.law_runs // 2 if a.quick else a.law_runs
    steps = 300
    for label, m, st, rho0 in LAW_CASES:
        def final(seed, precision, variant=K.EXACT):
            return _final_abs_rho(m, st, runs, steps, seed, precision, variant, rho0)[0]

        r64 = final(11, "64")
        rows = (("chain32 engine vs chain", final(12, "chain32"), r64),
                ("chain vs chain (another seed)", final(13, "64"), r64),
                ("DROP_COMPLEMENT vs chain (power check)", final(14, "64", K.DROP_COMPLEMENT),
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
