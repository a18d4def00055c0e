"""Accuracy and cost of the effective dynamics (issue 12) against the chain engine.

For each configuration: the largest gap between the predicted and the simulated mean |ρ| over
the records (and that gap minus 3 standard errors of the simulated mean), the fraction of
(run, record) pairs after the first 5 % of the run inside the predicted 10–90 % band of |ρ|,
and the wall time of the effective dynamics beside the chain engine's (one run of this script,
same machine). Targets (issue 12): E1 gap ≤ 0.005 + 3 SE; escaping configurations ≤ 0.01 + 3 SE;
band 80 ± 8 %; effective dynamics ≤ 5 % of the chain's time for E1.

    PYTHONPATH=src python benchmarks/effective_accuracy.py            # E1 at full size (slow)
    PYTHONPATH=src python benchmarks/effective_accuracy.py --quick    # fewer runs and steps
    PYTHONPATH=src python benchmarks/effective_accuracy.py --case quick-step --runs 96 \
        --steps 8000 --seed 7     # E1 at d = 1000 with the quick reproduction's step
    PYTHONPATH=src python benchmarks/effective_accuracy.py --case random-riemannian \
        --runs 1600 --steps 1000 --seed 6   # random sign, riemannian, B = 4, d = 30

The chain's cost is linear in runs × steps, so ``--quick`` also prints the chain time scaled to
the full E1 (30 runs × 100 000 steps) beside the measured one.
"""

from __future__ import annotations

import argparse
import math
import time
import warnings

import numpy as np

import attnsignal as asg
from attnsignal.theory.effective import effective_dynamics

E1 = asg.ModelConfig(d=100, n_informative=500, n_nuisance=10_000, theta=0.25)
E1_STEP = asg.StepSize(eta0=0.03, k0=1000.0, power=1.0)
ESCAPE = asg.ModelConfig(d=600, n_informative=150, n_nuisance=2400, theta=0.4)
ESCAPE_STEP = asg.StepSize(eta0=0.04, k0=300.0, power=0.85)
#: single cases of docs/effective-dynamics.md, "Where it degrades": (model, step, batch, update)
CASES = {
    "quick-step": (E1.replace(d=1000), asg.StepSize(eta0=0.05, k0=1000.0, power=1.0), 1,
                   "projected"),
    "random-riemannian": (asg.ModelConfig(d=30, n_informative=10, n_nuisance=30, theta=0.8,
                                          signal_sign="random"),
                          asg.StepSize(eta0=0.05, k0=300.0, power=0.75), 4, "riemannian"),
}


def compare(name: str, model, step, steps: int, runs: int, records: int, tol: float,
            seed: int = 3, full_runs: int | None = None, full_steps: int | None = None,
            batch: int = 1, update: str = "projected") -> None:
    every = max(1, steps // records)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ed = effective_dynamics(model, step, steps=steps, record_every=every, batch=batch,
                                update=update)
    t_eff = time.perf_counter() - t0
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = asg.simulate(model, step, steps=steps, runs=runs, engine="chain",
                           record_every=every, seed=seed, batch=batch, update=update)
    t_sim = time.perf_counter() - t0
    a = np.abs(res.alignment)
    mu = a.mean(axis=0)
    se = a.std(axis=0, ddof=1) / math.sqrt(runs)
    gap = np.abs(ed.mean_abs - mu)
    q10, q90 = ed.quantile([0.1, 0.9])
    first = int(math.ceil(0.05 * ed.steps.size))
    cover = float(((a >= q10) & (a <= q90))[:, first:].mean())
    worst = int(np.argmax(gap - 3 * se))
    print(f"\n{name}: d={model.d} R={model.n_informative} N={model.n_nuisance} "
          f"theta={model.theta} {step.describe()}; {runs} runs x {steps} steps")
    print(f"  max |gap| = {gap.max():.4f}; max(|gap| - 3 SE) = {np.max(gap - 3 * se):+.4f} "
          f"(target <= {tol}) at k = {ed.steps[worst]} "
          f"(pred {ed.mean_abs[worst]:.4f}, sim {mu[worst]:.4f} ± {se[worst]:.4f})")
    print(f"  diagnostic: {ed.diagnostic.message}")
    print(f"  10-90 % band holds {100 * cover:.1f} % of (run, record) pairs after 5 % "
          f"(target 80 ± 8 %)")
    print(f"  effective dynamics {t_eff:.1f} s ({ed.timings['moments_s']:.1f} s moments, "
          f"{ed.timings['evolve_s']:.1f} s evolution); chain {t_sim:.1f} s")
    if full_runs is not None and full_steps is not None:
        scale = (full_runs * full_steps) / (runs * steps)
        print(f"  chain scaled to {full_runs} runs x {full_steps} steps: {t_sim * scale:.0f} s; "
              f"effective/chain = {100 * t_eff / (t_sim * scale):.2f} %")
    else:
        print(f"  effective/chain = {100 * t_eff / t_sim:.2f} %")
    for k in np.unique(np.linspace(0, ed.steps.size - 1, 7).astype(int)):
        print(f"    k={ed.steps[k]:>7d}  pred {ed.mean_abs[k]:.4f}  sim {mu[k]:.4f} ± {se[k]:.4f}"
              f"  band [{q10[k]:.4f}, {q90[k]:.4f}]")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--case", choices=sorted(CASES), default=None)
    ap.add_argument("--runs", type=int, default=96)
    ap.add_argument("--steps", type=int, default=8000)
    ap.add_argument("--seed", type=int, default=3)
    args = ap.parse_args()
    if args.case:
        model, step, batch, update = CASES[args.case]
        compare(args.case, model, step, args.steps, args.runs, 80 if args.steps > 2000 else 20,
                0.01, seed=args.seed, batch=batch, update=update)
    elif args.quick:
        compare("E1 d=100 (quick)", E1, E1_STEP, 20_000, 16, 20, 0.005,
                full_runs=30, full_steps=100_000)
        compare("E1 d=1000 (quick)", E1.replace(d=1000), E1_STEP, 20_000, 16, 20, 0.005,
                full_runs=30, full_steps=100_000)
        compare("escaping", ESCAPE, ESCAPE_STEP, 8000, 64, 20, 0.01)
    else:
        compare("E1 d=100", E1, E1_STEP, 100_000, 30, 150, 0.005)
        compare("E1 d=1000", E1.replace(d=1000), E1_STEP, 100_000, 30, 150, 0.005)
        compare("escaping", ESCAPE, ESCAPE_STEP, 20_000, 128, 40, 0.01)


if __name__ == "__main__":
    main()
