"""How far the quick reproduction's E1 and E2 claims pass, seed by seed (issue 16).

The quick plan's sizes were chosen against these numbers: for each seed, E1's runs at d = 100
(mean, standard deviation and smallest final |ρ|, against ``min_final_abs`` and
``mean_final_abs``), E1's runs at d = ``big_d`` against the effective dynamics (the largest gap,
the standard error there, and max over records of |gap| − ``effective_se`` SE, against
``effective_tol``), and E2's grid (each cell's mean final |ρ| ± sd, against
``weak_mean_final_abs`` and ``grid_mean_final_abs``). The runs use the chain engine with the
plan's own sizes, steps and records, drawn from ``seed`` (not the reproduction's sweep seeds:
the same law, other runs), so a margin that holds over several seeds is one a user's
``--seed`` will meet.

    PYTHONPATH=src python benchmarks/quick_power.py e1 2606 1 7 42 2027 31337   # ~35 s a seed
    PYTHONPATH=src python benchmarks/quick_power.py e2 2606 7 42                # ~15 s a seed
"""

from __future__ import annotations

import argparse

import numpy as np

from attnsignal.reproduce.e1_headline import E1
from attnsignal.reproduce.e2_robustness import E2
from attnsignal.reproduce.effective_overlay import effective_path
from attnsignal.reproduce.plan import Plan
from attnsignal.simulate import simulate
from attnsignal.theory.tracking import path_gap


def e1(seed: int) -> str:
    p = Plan.quick().section(E1)
    every = p.record_every
    r = simulate(p.model, p.step, steps=p.steps, runs=p.runs, seed=seed, engine="chain",
                 record_every=every)
    fin = np.abs(r.alignment[:, -1])
    big = p.model.replace(d=p.big_d)
    rb = simulate(big, p.step, steps=p.steps, runs=p.big_runs, seed=seed + 1, engine="chain",
                  record_every=every)
    pred = effective_path(big, p.step, steps=p.steps, record_every=every, initial_alignment=None,
                          n_samples=p.effective_samples, seed=seed + 3)
    g = path_gap(np.abs(rb.alignment), rb.steps, pred.at(rb.steps).mean_abs, z=p.effective_se)
    ok = (fin.min() >= p.min_final_abs and fin.mean() >= p.mean_final_abs
          and g.excess <= p.effective_tol)
    return (f"E1 seed {seed}: d={p.model.d} {p.runs} runs: mean {fin.mean():.4f} sd "
            f"{fin.std(ddof=1):.4f} min {fin.min():.4f} (tolerances {p.mean_final_abs:g}, "
            f"{p.min_final_abs:g}) | d={p.big_d} {p.big_runs} runs: gap {g.gap:.4f} at k = "
            f"{g.step} (SE {g.se:.4f}), excess {g.excess:.4f} (tolerance {p.effective_tol:g}) | "
            + ("pass" if ok else "FAIL"))


def e2(seed: int) -> str:
    p = Plan.quick().section(E2)
    means: dict[tuple[float, int], float] = {}
    cells = []
    for i, model in enumerate(p.models()):
        r = simulate(model, p.step, steps=p.steps, runs=p.runs, seed=seed * 100 + i,
                     engine="chain", record_every=p.steps)  # the claims need the final |ρ| only
        fin = np.abs(r.alignment[:, -1])
        ratio = model.n_nuisance // p.R
        means[model.theta, ratio] = fin.mean()
        cells.append(f"{model.theta:g}/{ratio}: {fin.mean():.4f}±{fin.std(ddof=1):.4f}")
    weak = means[min(p.thetas), max(p.ratios)]
    smallest = min(means.values())
    ok = weak >= p.weak_mean_final_abs and smallest >= p.grid_mean_final_abs
    return (f"E2 seed {seed} (θ/(N/R): mean±sd of {p.runs} runs): " + "  ".join(cells)
            + f" | weak {weak:.4f} (tolerance {p.weak_mean_final_abs:g}), smallest "
            f"{smallest:.4f} (tolerance {p.grid_mean_final_abs:g}) | "
            + ("pass" if ok else "FAIL"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("experiment", choices=("e1", "e2"))
    ap.add_argument("seeds", nargs="+", type=int)
    args = ap.parse_args()
    for seed in args.seeds:
        print((e1 if args.experiment == "e1" else e2)(seed), flush=True)


if __name__ == "__main__":
    main()
