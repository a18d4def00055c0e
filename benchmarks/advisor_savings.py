"""What the schedule advisor saves against the reproduction's E1 schedule (issue 12, item 3).

E1: ``ModelConfig(d, n_informative=500, n_nuisance=10_000, theta=0.25)``, uniform start, the
schedule ``η_k = 0.03 (1 + k/1000)^(−1)`` for 100 000 samples (batch 1). For each ``d``:

1. the effective dynamics of the E1 schedule over 100 000 samples; the **target** is its
   predicted mean ``|ρ|`` at 100 000 samples — what E1 reaches — so the E1 schedule needs
   100 000 samples by construction (the predicted hitting step is printed as a check);
   ``--also-target D:X`` adds prediction-only rows for lower targets ``X``, where the E1
   schedule's samples are its predicted hitting step of ``X``;
2. ``advise_schedule(model, target)`` (timed): ``advice.samples`` (advised power law),
   ``advice.optimal_samples`` (the optimal tabulated schedule), and the ratios to 100 000;
3. a chain-engine simulation of the advised schedule (``--runs`` runs of ``1.1 × advice.samples``
   steps, seed fixed): the simulated mean ``|ρ|`` with its standard error at ``0.85×`` and
   ``1.1×`` ``advice.samples`` and the first sample count at which the simulated mean reaches the
   target (linear interpolation between records). The advice passes when the simulated mean is
   below the target at ``0.85×`` and at or above it at ``1.1×``.

    PYTHONPATH=src nice python benchmarks/advisor_savings.py              # 8 runs at d = 100, 4 at d = 1000
    PYTHONPATH=src nice python benchmarks/advisor_savings.py --quick      # d = 100 only, 4 runs
    PYTHONPATH=src nice python benchmarks/advisor_savings.py --runs 16 --runs-1000 8
    PYTHONPATH=src nice python benchmarks/advisor_savings.py --runs 0 --runs-1000 0 \
        --also-target 100:0.99 --also-target 1000:0.9   # prediction-only rows as well
    PYTHONPATH=src nice python benchmarks/advisor_savings.py --only-extra \
        --also-target 100:0.99 --also-target 1000:0.9   # those rows alone

Timings are wall seconds on the machine of the run (shared: compare them only within a run).
"""

from __future__ import annotations

import argparse
import math
import time
import warnings

import numpy as np

import attnsignal as asg
from attnsignal.theory.advisor import advise_schedule
from attnsignal.theory.effective import effective_dynamics

E1_STEPS = 100_000
E1_STEP = asg.StepSize(eta0=0.03, k0=1000.0, power=1.0)


def e1_model(d: int) -> asg.ModelConfig:
    return asg.ModelConfig(d=d, n_informative=500, n_nuisance=10_000, theta=0.25)


def log_records(steps: int, n: int = 400) -> list[int]:
    ks = np.unique(np.concatenate([[0, steps], np.round(np.geomspace(1, steps, n))]))
    return [int(x) for x in ks]


def first_crossing(steps: np.ndarray, y: np.ndarray, target: float) -> float:
    """First step at which ``y`` reaches ``target`` (linear interpolation between records);
    inf if never."""
    i = np.nonzero(y >= target)[0]
    if i.size == 0:
        return math.inf
    i = int(i[0])
    if i == 0:
        return float(steps[0])
    f = (target - y[i - 1]) / max(y[i] - y[i - 1], 1e-300)
    return float(steps[i - 1] + f * (steps[i] - steps[i - 1]))


def one_dimension(d: int, runs: int, seed: int, extra: list[float] = (),
                  e1_target: bool = True) -> list[dict]:
    """The row of the E1 target (with the chain check) and prediction-only rows of ``extra``
    targets below it (the E1 schedule's predicted samples to them against the advice)."""
    model = e1_model(d)
    t0 = time.perf_counter()
    ed = effective_dynamics(model, E1_STEP, steps=E1_STEPS, record=log_records(E1_STEPS))
    t_e1 = time.perf_counter() - t0
    rows = [one_target(model, ed, float(ed.mean_abs[-1]), runs, seed, t_e1)] if e1_target else []
    for x in extra:
        rows.append(one_target(model, ed, x, 0, seed, t_e1))
    return rows


def one_target(model, ed, target: float, runs: int, seed: int, t_e1: float) -> dict:
    d = model.d
    k_e1 = first_crossing(ed.steps, ed.mean_abs, target)

    t0 = time.perf_counter()
    adv = advise_schedule(model, target)
    t_adv = time.perf_counter() - t0

    row = dict(d=d, target=target, e1_samples=k_e1, e1_hit=k_e1, t_e1=t_e1, t_adv=t_adv,
               step=adv.step.describe(), samples=adv.samples, optimal=adv.optimal_samples,
               mean_path=adv.mean_path_samples, runs=runs)
    if runs > 0 and adv.samples > 0:
        n = int(math.ceil(1.1 * adv.samples))
        lo = int(round(0.85 * adv.samples))
        dense = np.unique(np.round(np.linspace(lo, n, 60)).astype(np.int64))
        rec = sorted(set(log_records(n, 100)) | {int(x) for x in dense})
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = asg.simulate(model, adv.step, steps=n, runs=runs, engine="chain",
                               record=rec, seed=seed)
        t_sim = time.perf_counter() - t0
        a = np.abs(np.asarray(res.alignment, dtype=np.float64))
        mu = a.mean(axis=0)
        se = a.std(axis=0, ddof=1) / math.sqrt(runs)
        ks = np.asarray(res.steps)
        i_lo = int(np.searchsorted(ks, lo))
        row.update(t_sim=t_sim, sim_steps=n, sim_lo=float(mu[i_lo]), se_lo=float(se[i_lo]),
                   sim_hi=float(mu[-1]), se_hi=float(se[-1]),
                   sim_hit=first_crossing(ks, mu, target),
                   passed=bool(mu[i_lo] < target <= mu[-1]),
                   pred_lo=float(np.interp(lo, adv.dynamics.steps, adv.dynamics.mean_abs)),
                   pred_hi=float(np.interp(n, adv.dynamics.steps, adv.dynamics.mean_abs)))
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="d = 100 only, 4 runs")
    ap.add_argument("--runs", type=int, default=8, help="chain runs at d = 100 (default 8)")
    ap.add_argument("--runs-1000", type=int, default=4, help="chain runs at d = 1000 (default 4)")
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--dims", default="100,1000", help="comma-separated d (default 100,1000)")
    ap.add_argument("--also-target", action="append", default=[], metavar="D:TARGET",
                    help="a prediction-only row (no chain check) for E1 at d = D and this "
                         "target mean |rho|, e.g. 100:0.99 (repeatable)")
    ap.add_argument("--only-extra", action="store_true",
                    help="only the --also-target rows (not the E1 target)")
    args = ap.parse_args()
    dims = [100] if args.quick else [int(x) for x in args.dims.split(",")]
    runs_of = {100: 4 if args.quick else args.runs, 1000: args.runs_1000}
    extra: dict[int, list[float]] = {}
    for item in args.also_target:
        dd, x = item.split(":")
        extra.setdefault(int(dd), []).append(float(x))
    rows = []
    for d in dims:
        for row in one_dimension(d, runs_of.get(d, args.runs), args.seed, extra.get(d, []),
                                 e1_target=not args.only_extra):
            rows.append(row)
            report(row)
    table(rows)


def report(row: dict) -> None:
    d = row["d"]
    print(f"\nE1 at d = {d}: target mean |rho| = {row['target']:.5f}; the E1 schedule's "
          f"predicted samples to it: {row['e1_hit']:,.0f}")
    print(f"  effective dynamics of E1: {row['t_e1']:.1f} s; advise_schedule: "
          f"{row['t_adv']:.1f} s")
    print(f"  advice: {row['step']}")
    e1 = row["e1_samples"]
    print(f"  advice.samples = {row['samples']:,} ({row['samples'] / e1:.3f} x E1); "
          f"optimal_samples = {row['optimal']:,} ({row['optimal'] / e1:.3f} x E1); "
          f"samples/optimal = {row['samples'] / row['optimal']:.3f}; time-optimal mean "
          f"path {row['mean_path']:,}")
    if "t_sim" in row:
        print(f"  chain check: {row['runs']} runs x {row['sim_steps']:,} steps "
              f"({row['t_sim']:.0f} s): mean |rho| at 0.85x = {row['sim_lo']:.5f} "
              f"± {row['se_lo']:.5f} (predicted {row['pred_lo']:.5f}), at 1.1x = "
              f"{row['sim_hi']:.5f} ± {row['se_hi']:.5f} (predicted {row['pred_hi']:.5f}); "
              f"simulated mean reaches the target at {row['sim_hit']:,.0f} samples = "
              f"{row['sim_hit'] / row['samples']:.3f} x advice.samples -> "
              f"{'PASS' if row['passed'] else 'FAIL'} (window 0.85x-1.1x)")


def table(rows: list[dict]) -> None:
    print("\n| d | target mean abs(rho) | E1 samples (predicted) | advice.samples (ratio) | "
          "optimal_samples (ratio) | advise_schedule time | chain check: runs, hit / advice.samples |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        chk = (f"{r['runs']}, {r['sim_hit'] / r['samples']:.3f}" if "t_sim" in r else "—")
        e1 = r["e1_samples"]
        print(f"| {r['d']} | {r['target']:.4f} | {e1:,.0f} | {r['samples']:,} "
              f"({r['samples'] / e1:.3f}) | {r['optimal']:,} "
              f"({r['optimal'] / e1:.3f}) | {r['t_adv']:.0f} s | {chk} |")


if __name__ == "__main__":
    main()
