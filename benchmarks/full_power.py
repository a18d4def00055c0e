"""How far the full reproduction's E1 and E2 claims pass, at the full plan's sizes (issue 16).

The full plan's E1 runs 80 000 samples (100 000 before 2026-12-04) and E2 15 000 per cell
(30 000 before); their tolerances were set against these numbers. The schedules do not depend
on the number of steps, so one set of longer runs, recorded every 1 000 samples, gives the
mean |ρ| at every shorter budget:

* ``e1``: ``runs`` chain runs at E1's d = 100 configuration and full schedule to 80 000
  samples; the mean, sd and smallest |ρ| at 60 000, 70 000 and 80 000 (the claim is on the
  mean of 30 runs: its standard error is sd/√30).
* ``e2``: for each seed, E2's 12 runs at its weak-signal cell (θ = 0.25, N/R = 20) and its
  slowest cell (θ = 0.25, N/R = 1) to 20 000 samples; each cell's mean |ρ| at 10 000, 15 000
  and 20 000 and the standard error of that mean.

The runs use the chain engine with seeds of their own (the same law as the reproduction's
runs, other draws).

    PYTHONPATH=src python benchmarks/full_power.py e1 --runs 16 --seed 777    # ~9 CPU-min
    PYTHONPATH=src python benchmarks/full_power.py e2 --seed 501 502 503      # ~3 CPU-min a seed
"""

from __future__ import annotations

import argparse

import numpy as np

from attnsignal.reproduce.e1_headline import E1
from attnsignal.reproduce.e2_robustness import E2
from attnsignal.reproduce.plan import Plan
from attnsignal.simulate import simulate


def e1(runs: int, seed: int) -> None:
    p = Plan.full().section(E1)
    r = simulate(p.model, p.step, steps=80_000, runs=runs, seed=seed, engine="chain",
                 record_every=1000)
    a = np.abs(r.alignment)
    for k in (60_000, 70_000, 80_000):
        x = a[:, np.searchsorted(r.steps, k)]
        print(f"E1 seed {seed}, {runs} runs, k = {k}: mean {x.mean():.5f} sd {x.std(ddof=1):.5f} "
              f"min {x.min():.5f}; SE of a mean of {p.runs}: {x.std(ddof=1) / np.sqrt(p.runs):.5f} "
              f"(tolerances: mean ≥ {p.mean_final_abs:g}, min ≥ {p.min_final_abs:g})", flush=True)


def e2(seed: int) -> None:
    p = Plan.full().section(E2)
    cell = {(m.theta, m.n_nuisance // p.R): m for m in p.models()}
    for ratio in (max(p.ratios), min(p.ratios)):
        m = cell[min(p.thetas), ratio]
        r = simulate(m, p.step, steps=20_000, runs=p.runs, seed=seed * 10 + ratio,
                     engine="chain", record_every=1000)
        a = np.abs(r.alignment)
        cells = []
        for k in (10_000, 15_000, 20_000):
            x = a[:, np.searchsorted(r.steps, k)]
            cells.append(f"k = {k}: {x.mean():.5f} (SE {x.std(ddof=1) / np.sqrt(x.size):.5f})")
        tol = p.weak_mean_final_abs if ratio == max(p.ratios) else p.grid_mean_final_abs
        print(f"E2 seed {seed}, θ = {m.theta:g}, N/R = {ratio}, {p.runs} runs: "
              + "; ".join(cells) + f" (tolerance at {p.steps}: {tol:g})", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("experiment", choices=("e1", "e2"))
    ap.add_argument("--seed", type=int, nargs="+", default=[777])
    ap.add_argument("--runs", type=int, default=16)
    args = ap.parse_args()
    for seed in args.seed:
        if args.experiment == "e1":
            e1(args.runs, seed)
        else:
            e2(seed)


if __name__ == "__main__":
    main()
