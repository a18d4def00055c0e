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

``--timing`` measures the advisor itself at E1's size (``d = 100`` and ``1000``; targets
0.9965 and 0.965 — at ``d = 1000`` E1 reaches 0.965, and 0.9965 is refused there: the mean
dynamics stalls below it for every step): each ``advise_schedule(model, target)`` in a fresh subprocess (wall and CPU
seconds; the compiled kernels warmed first by a small advice in the same tree), and with
``--against REF`` the same in the committed tree ``REF`` (unpacked as
``benchmarks/bench_reproduce.py`` does), interleaved, with the ratio of this tree's times to
``REF``'s — the machines here vary in speed from hour to hour, so only a ratio measured in one
run compares two versions:

    PYTHONPATH=src python benchmarks/advisor_savings.py --timing --against 5699068

``--map-check`` checks the advice where the map draws its configurations (``attnsignal
validate``'s box, seed 27): at the first ``--map-configs`` (3) configurations with ``β ≥ 1`` whose
field passes ``|ρ| = 0.9`` and whose chain check (``--map-runs`` runs of ``1.5 ×`` the advised
samples, so that a first reach outside the window is measured too) costs at most
``--map-budget`` token-samples (``runs × steps × B × (L + 32)``, the
chain engine's work), the advised schedule for mean ``|ρ| = 0.9`` is simulated and must first
reach it within ``0.85–1.1 ×`` the predicted samples. With ``--map-ratio-se S`` the runs are
as many as the advice's own predicted law needs for the first reach of their mean to have
standard error ``S`` of the prediction (:func:`predicted_spread`: the law's spread of ``|ρ|``
at the predicted first reach over the mean's slope there; at least ``--map-runs``, within the
budget), fixed before any run; the table gives the runs still below ``|ρ| = 0.5`` at the end
beside the number the law expects:

    PYTHONPATH=src python benchmarks/advisor_savings.py --map-check --map-configs 4 --map-ratio-se 0.05
    PYTHONPATH=src python benchmarks/advisor_savings.py --map-check --map-runs 48
    PYTHONPATH=src python benchmarks/advisor_savings.py --map-check --map-only 3,9,5  # these
"""

from __future__ import annotations

import argparse
import math
import time
import warnings
from pathlib import Path

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


# ------------------------------------------------------------------------------ --timing

_TIMED = """
import json, sys, time, warnings
warnings.simplefilter("ignore")
import attnsignal as asg
from attnsignal.theory.advisor import advise_schedule
small = asg.ModelConfig(d=20, n_informative=5, n_nuisance=10, theta=1.0)
advise_schedule(small, 0.9, n_samples=200, tune=False, search=0)  # compiled kernels warmed
d, target = int(sys.argv[1]), float(sys.argv[2])
m = asg.ModelConfig(d=d, n_informative=500, n_nuisance=10_000, theta=0.25)
t, c = time.perf_counter(), time.process_time()
adv = advise_schedule(m, target)
print(json.dumps({"wall": time.perf_counter() - t, "cpu": time.process_time() - c,
                  "samples": adv.samples, "optimal": adv.optimal_samples,
                  "step": adv.step.describe()}))
"""


def time_advisor(tree_src: str | None, d: int, target: float) -> dict:
    """``advise_schedule`` at E1's size in a subprocess, from the tree at ``tree_src`` (its
    ``src``; None: this tree)."""
    import json
    import os
    import subprocess
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_reproduce import ROOT, tree_env

    env = tree_env(Path(tree_src) if tree_src else ROOT)
    env["OPENBLAS_NUM_THREADS"] = env.get("OPENBLAS_NUM_THREADS", "1")
    p = subprocess.run([sys.executable, "-c", _TIMED, str(d), str(target)], env=env,
                       capture_output=True, text=True, cwd=os.getcwd())
    if p.returncode != 0:
        raise RuntimeError(f"advise_schedule at d = {d} failed in {tree_src or 'this tree'}: "
                           + (p.stderr.strip().splitlines() or ["?"])[-1])
    return json.loads(p.stdout.strip().splitlines()[-1])


def timing(dims: list[int], targets: dict[int, float], against: str | None) -> None:
    import os
    import sys
    import tempfile

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_reproduce import unpack

    trees: list[tuple[str, str | None]] = [("this tree", None)]
    with tempfile.TemporaryDirectory(prefix="advisor-timing-") as tmp:
        if against:
            trees.insert(0, (against, str(unpack(against, Path(tmp) / "ref"))))
        rows = []
        for d in dims:
            for name, src in trees:
                r = time_advisor(src, d, targets[d])
                rows.append((d, name, r))
                print(f"d = {d}, target {targets[d]}, {name}: advise_schedule "
                      f"{r['wall']:.1f} s wall, "
                      f"{r['cpu']:.1f} s CPU; advice {r['samples']:,} samples "
                      f"({r['step']}), optimal {r['optimal']:,}", flush=True)
    print("\n| d | target | tree | wall s | CPU s | advice.samples | optimal_samples |\n"
          "|---|---|---|---|---|---|---|")
    for d, name, r in rows:
        print(f"| {d} | {targets[d]} | {name} | {r['wall']:.1f} | {r['cpu']:.1f} | "
              f"{r['samples']:,} | {r['optimal']:,} |")
    if against:
        for d in dims:
            ref = next(r for dd, n, r in rows if dd == d and n == against)
            new = next(r for dd, n, r in rows if dd == d and n == "this tree")
            print(f"d = {d}: this tree / {against}: wall {new['wall'] / ref['wall']:.3f}, "
                  f"CPU {new['cpu'] / ref['cpu']:.3f}")
    print(f"(load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")


# ------------------------------------------------------------------------------ --map-check


def map_check(n_configs: int, runs: int, budget: float, seed: int, target: float = 0.9,
              draw_seed: int = 27, scan: int = 60, only: list[int] | None = None,
              ratio_se: float | None = None, max_runs: int = 512) -> list[dict]:
    """The advice at map configurations with β ≥ 1 (module docstring), checked by simulation;
    ``only``: these configurations of the draw (by index) instead of the first that qualify;
    ``ratio_se``: the runs (at least ``runs``, at most ``max_runs`` and the budget) are those
    whose mean's first reach the advice's own law gives this standard error in units of the
    prediction (:func:`predicted_spread`), fixed before any run."""
    min_runs = runs
    from attnsignal.theory.finite_step import second_order_coefficient
    from attnsignal.theory.landscape import landscape
    from attnsignal.validate import draw_configs
    from attnsignal.validate.box import draw_config

    rows: list[dict] = []
    configs = ([draw_config(i, draw_seed) for i in only] if only
               else draw_configs(scan, draw_seed))
    if only:
        n_configs = len(only)
    for cfg in configs:
        if len(rows) >= n_configs:
            break
        model = cfg.model
        if cfg.beta < 1.0:
            continue
        rs = np.linspace(0.05, target, 60)
        fld = landscape(model, rs).field
        if not np.all(fld > 0):  # the field must carry |ρ| past 0.9
            print(f"{cfg.label()}: skipped (the field does not carry |rho| to {target})")
            continue
        # a cheap lower bound first: the second-order time-optimal mean path, ∫ 4κ/F² dρ
        kap = second_order_coefficient(model, rs, cfg.batch, cfg.update, n_samples=1000,
                                       seed=seed).value
        k_low = float(np.trapezoid(4.0 * np.maximum(kap, 0.0) / fld ** 2, rs)) * cfg.batch
        if runs * 1.5 * k_low * (cfg.n_tokens + 32) > budget:
            print(f"{cfg.label()}: skipped (its check would cost more than "
                  f"{runs * 1.5 * k_low * (cfg.n_tokens + 32):.2g} > {budget:.2g} "
                  f"token-samples: at least {k_low:,.0f} samples to {target})")
            continue
        t0 = time.perf_counter()
        adv = advise_schedule(model, target, batch=cfg.batch, update=cfg.update)
        t_adv = time.perf_counter() - t0
        # runs to 1.5× the prediction, so a first reach beyond the window is measured too
        n = int(math.ceil(1.5 * adv.samples / cfg.batch))
        work = runs * n * cfg.batch * (cfg.n_tokens + 32)
        if work > budget:
            print(f"{cfg.label()}: skipped (its check costs {work:.2g} token-samples > "
                  f"{budget:.2g}; advice {adv.samples:,} samples)")
            continue
        law = predicted_spread(adv, target, 1.5 * adv.samples)
        if ratio_se is not None:  # runs from the prediction's own spread, before any run
            runs = int(min(max_runs, max(min_runs, math.ceil(
                (law["ratio_sd1"] / ratio_se) ** 2))))
            runs = max(min_runs, min(runs, int(budget // (n * cfg.batch * (cfg.n_tokens + 32)))))
        lo = int(round(0.7 * adv.samples / cfg.batch))
        dense = np.unique(np.round(np.linspace(lo, n, 120)).astype(np.int64))
        rec = sorted(set(log_records(n, 100)) | {int(x) for x in dense})
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = asg.simulate(model, adv.step, steps=n, runs=runs, batch=cfg.batch,
                               update=cfg.update, engine="chain", record=rec, seed=seed)
        t_sim = time.perf_counter() - t0
        a = np.abs(np.asarray(res.alignment, dtype=np.float64))
        mu = a.mean(axis=0)
        ks = np.asarray(res.steps) * cfg.batch
        hit = first_crossing(ks, mu, target)
        # the crossing's standard error: the mean's SE there over the mean's slope
        i = int(np.searchsorted(ks, hit)) if math.isfinite(hit) else len(ks) - 1
        i = min(max(i, 1), len(ks) - 1)
        se = float(a[:, i].std(ddof=1) / math.sqrt(runs))
        slope = float((mu[i] - mu[i - 1]) / max(ks[i] - ks[i - 1], 1))
        hit_se = se / slope if slope > 0 else math.inf
        ratio = hit / adv.samples
        diag = adv.dynamics.diagnostic
        stuck = int(np.sum(a[:, -1] < 0.5))
        row = dict(config=cfg.label(), beta=cfg.beta, L=cfg.n_tokens, samples=adv.samples,
                   step=adv.step.describe(), sim_hit=hit, hit_se=hit_se, ratio=ratio,
                   ratio_se=hit_se / adv.samples, ok=bool(0.85 <= ratio <= 1.1),
                   t_adv=t_adv, t_sim=t_sim, runs=runs, verdict=diag.verdict,
                   evaluations=adv.evaluations, stuck=stuck, **law)
        rows.append(row)
        print(f"{cfg.label()}: advice {adv.step.describe()}, predicted {adv.samples:,} "
              f"± {law['samples_se']:,.0f} samples (diagnostic: {diag.verdict}, predicted "
              f"error {diag.predicted_error:.3g}); the law's spread gives the ratio of "
              f"{runs} runs an SE of {law['ratio_sd1'] / math.sqrt(runs):.3f} and "
              f"P(|rho| < 0.5 at 1.5x) = {law['p_stuck']:.4f}; the runs first reach mean "
              f"|rho| = {target} at {hit:,.0f} ± {hit_se:,.0f} samples = {ratio:.3f} "
              f"± {hit_se / adv.samples:.3f} x ({stuck} run(s) below 0.5 at the end) -> "
              f"{'PASS' if row['ok'] else 'FAIL'} (advise {t_adv:.0f} s, chain {t_sim:.0f} s)",
              flush=True)
    print("\n| configuration | β | L | runs | predicted samples (± SE) | simulated first reach "
          "(± SE) | ratio (± SE) | SE the law predicts | runs below 0.5 at the end "
          "(expected) | in 0.85–1.1 | diagnostic | advise s |\n"
          "|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['config']} | {r['beta']:.2f} | {r['L']} | {r['runs']} | {r['samples']:,} "
              f"± {r['samples_se']:,.0f} | {r['sim_hit']:,.0f} ± {r['hit_se']:,.0f} | "
              f"{r['ratio']:.3f} ± {r['ratio_se']:.3f} | "
              f"{r['ratio_sd1'] / math.sqrt(r['runs']):.3f} | {r['stuck']} "
              f"({r['p_stuck'] * r['runs']:.2f}) | {'yes' if r['ok'] else 'NO'} | "
              f"{r['verdict']} | {r['t_adv']:.0f} |")
    return rows


def predicted_spread(adv, target: float, end_samples: float) -> dict:
    """What the advice's own predicted law says of a check by simulation: ``samples_se`` (the
    predicted first reach's Monte-Carlo SE: the mean's SE there over its slope),
    ``ratio_sd1`` (the standard deviation of one run's ``|ρ|`` at the predicted first reach
    over the mean's slope, in units of the predicted samples: an ``n``-run mean's first reach
    has SE ``ratio_sd1/√n`` of the prediction), and ``p_stuck`` (the probability that a run's
    ``|ρ|`` is below 0.5 at ``end_samples``, the last record before it)."""
    ed = adv.dynamics
    ks = np.asarray(ed.steps, dtype=np.float64) * adv.batch
    mu = np.asarray(ed.mean_abs)
    i = int(np.argmax(mu >= target)) if np.any(mu >= target) else len(mu) - 1
    i = min(max(i, 1), len(mu) - 1)
    slope = float((mu[i] - mu[i - 1]) / max(ks[i] - ks[i - 1], 1.0))
    r = np.abs(ed.rho_grid)
    sd = float(np.sqrt(max(ed.law[i] @ r ** 2 - (ed.law[i] @ r) ** 2, 0.0)))
    se = (float(ed.mean_abs_stderr[i]) if ed.mean_abs_stderr is not None else math.nan)
    j = max(0, int(np.searchsorted(ks, end_samples, side="right")) - 1)
    return {"samples_se": se / slope if slope > 0 else math.inf,
            "ratio_sd1": sd / slope / adv.samples if slope > 0 else math.inf,
            "p_stuck": float(ed.law[j][r < 0.5].sum())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--timing", action="store_true",
                    help="time advise_schedule at E1's size (module docstring)")
    ap.add_argument("--against", default=None, metavar="REF",
                    help="with --timing: also time the committed tree REF, in the same run")
    ap.add_argument("--targets", default="100:0.9965,1000:0.965", metavar="D:T,...",
                    help="with --timing: the target mean |rho| at each d "
                         "(default 100:0.9965,1000:0.965)")
    ap.add_argument("--map-check", action="store_true",
                    help="check the advice at map configurations with beta >= 1")
    ap.add_argument("--map-configs", type=int, default=3)
    ap.add_argument("--map-runs", type=int, default=48)
    ap.add_argument("--map-only", default=None, metavar="I,J,...",
                    help="with --map-check: these configurations of the draw (indices) only")
    ap.add_argument("--map-ratio-se", type=float, default=None, metavar="S",
                    help="with --map-check: as many runs as the advice's predicted law needs "
                         "for a first-reach ratio SE of S (at least --map-runs)")
    ap.add_argument("--map-budget", type=float, default=4e9,
                    help="most chain token-samples of one configuration's check")
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
    if args.timing:
        targets = {int(a): float(b) for a, b in (x.split(":") for x in args.targets.split(","))}
        timing([d for d in dims if d in targets], targets, args.against)
        return
    if args.map_check:
        only = [int(x) for x in args.map_only.split(",")] if args.map_only else None
        map_check(args.map_configs, args.map_runs, args.map_budget, args.seed, only=only,
                  ratio_se=args.map_ratio_se)
        return
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
