"""The sample-complexity law against the chain engine, d = 10² … 10⁵ (``docs/scaling.md``).

Three configurations, both signs, 64 runs per point (by default):

``A``  fixed L = 20 (R = 4, N = 16, θ = 2, β = 1), c = 0.02, target 0.5: the saddle regime
       (d_× ≈ 200), n(d) ∝ d ln d;
``B``  fixed L = 5000 (R = 1000, N = 4000, θ = 1.5, β = 1), c = 0.001, target 0.5: the fixed
       sign is drift-dominated at every d ≤ 10⁵ (d_× ≈ 4·10⁶), the random sign escapes;
``C``  proportional, R = d/5, N = 4d/5 (L = d), θ = 1, β = 0.5, c = 0.1 (random) and 0.05
       (fixed), target 0.5: n(d) → a constant.

For every point: the predicted samples (the law at that d), its Monte-Carlo error, the measured
samples (first recorded step at which the mean |ρ| of the runs reaches the target) with its 95 %
bootstrap interval, and the per-run hitting times (mean, standard deviation, interquartile range)
against the law's. Then c_critical against a bisection with the chain (the largest c whose mean
|ρ| reaches the target within 10× the samples predicted at 0.6 c_critical).

Results are appended, one JSON line per point, to ``--out`` (default
``/work/notes/i29/scaling_bench.jsonl``; a rerun skips the points already there), and the table is
printed at the end. Usage::

    nice -n 10 python benchmarks/scaling_law.py [--configs A,B,C] [--dims 1e2,1e3,1e4,1e5]
        [--runs 64] [--critical] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import math
import time
import warnings
from pathlib import Path

import numpy as np

import attnsignal as asg
from attnsignal.measure import measure_samples
from attnsignal.theory.scaling import scaling_law

CONFIGS = {
    "A": dict(model=dict(d=1000, n_informative=4, n_nuisance=16, theta=2.0, beta=1.0),
              path="fixed_L", c={"fixed": 0.02, "random": 0.02}, target=0.5, n_samples=16000),
    "B": dict(model=dict(d=10000, n_informative=1000, n_nuisance=4000, theta=1.5, beta=1.0),
              path="fixed_L", c={"fixed": 0.001, "random": 0.001}, target=0.5, n_samples=4000),
    "C": dict(model=dict(d=1000, n_informative=200, n_nuisance=800, theta=1.0, beta=0.5),
              path="proportional", c={"fixed": 0.05, "random": 0.1}, target=0.5,
              n_samples=4000),
}
#: Simulate this many times the predicted samples; 1.6 where a point would take more than
#: 5·10⁹ token updates (the mean |ρ| crossing is then still measured if the law is within 60 %,
#: and the per-run statistics use the runs that reach the target by then).
HORIZON, HORIZON_LONG, LONG_WORK = 3.0, 1.6, 5e9


def _law(name: str, sign: str):
    cfg = CONFIGS[name]
    m = asg.ModelConfig(signal_sign=sign, **cfg["model"])
    return scaling_law(m, target=cfg["target"], c=cfg["c"][sign], path=cfg["path"],
                       n_samples=cfg["n_samples"], seed=1)


def _done(out: Path) -> set:
    if not out.exists():
        return set()
    keys = set()
    for line in out.read_text().splitlines():
        r = json.loads(line)
        keys.add((r["kind"], r["config"], r["sign"], r["d"]))
    return keys


def _append(out: Path, row: dict) -> None:
    with out.open("a") as f:
        f.write(json.dumps(row) + "\n")


def point(name: str, sign: str, law, d: int, runs: int, seed: int) -> dict:
    t0 = time.perf_counter()
    hl = law.law(d)
    pred = hl.samples
    t_law = time.perf_counter() - t0
    q25, q75 = hl.hitting_quantile([0.25, 0.75])
    row = {"kind": "samples", "config": name, "sign": sign, "d": d,
           "L": law.model_at(d).n_tokens, "c": law.c, "eta": law.step_size(d),
           "tau": law.tau(d), "predicted": pred, "predicted_error": law.samples_error(d),
           "hit_mean_pred": hl.hit_mean, "hit_sd_pred": hl.hit_sd, "iqr_pred": q75 - q25,
           "escape": hl.escape is not None, "law_s": t_law}
    if math.isfinite(pred):
        t1 = time.perf_counter()
        L = law.model_at(d).n_tokens
        hor = HORIZON if pred * L * runs * HORIZON < LONG_WORK else HORIZON_LONG
        row["horizon"] = hor
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ms = measure_samples(law.model_at(d), law.step(d), law.target,
                                 steps=int(hor * pred) + 10, runs=runs, seed=seed)
        row.update(measured=ms.samples, lo=ms.interval[0], hi=ms.interval[1],
                   hit_mean=ms.hit_mean, hit_mean_lo=ms.hit_mean_interval[0],
                   hit_mean_hi=ms.hit_mean_interval[1], hit_sd=ms.hit_sd,
                   hit_sd_lo=ms.hit_sd_interval[0], hit_sd_hi=ms.hit_sd_interval[1],
                   iqr=ms.iqr, iqr_lo=ms.iqr_interval[0], iqr_hi=ms.iqr_interval[1],
                   reached=ms.reached, runs=runs, chain_s=time.perf_counter() - t1)
    return row


def critical(name: str, sign: str, law, d: int, runs: int, seed: int) -> dict:
    """Bisection with the chain on log c between 0.6 and 1.5 × the law's c_critical at d: a c
    passes if the chain's mean |ρ| reaches the target within 10× the samples predicted at
    0.6 c_critical (the hitting time grows without bound as c → c_critical)."""
    t0 = time.perf_counter()
    cc = law.c_critical_at(d)
    horizon = int(10 * law.with_c(0.6 * cc).samples(d)) + 10
    lo, hi = 0.6 * cc, 1.5 * cc
    tests = []

    def passes(c: float) -> bool:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ms = measure_samples(law.model_at(d), law.with_c(c).step(d), law.target,
                                 steps=horizon, runs=runs, seed=seed, n_boot=100)
        tests.append((c, ms.samples))
        return ms.samples >= 0

    assert passes(lo) and not passes(hi), tests
    while hi / lo > 1.01:
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if passes(mid) else (lo, mid)
    return {"kind": "critical", "config": name, "sign": sign, "d": d, "c_law": cc,
            "c_chain_lo": lo, "c_chain_hi": hi, "tests": tests, "runs": runs,
            "horizon": horizon, "seconds": time.perf_counter() - t0}


def table(out: Path) -> str:
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    lines = ["| config | sign | d | L | predicted | measured [95 %] | pred/meas − 1 | "
             "hit mean pred / meas | hit sd pred / meas [95 %] | IQR pred / meas [95 %] |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in sorted((r for r in rows if r["kind"] == "samples"),
                    key=lambda r: (r["config"], r["sign"], r["d"])):
        if "measured" not in r:
            lines.append(f"| {r['config']} | {r['sign']} | {r['d']:,} | {r['L']:,} | "
                         f"{r['predicted']:,.0f} | — | — | — | — | — |")
            continue
        rel = r["predicted"] / r["measured"] - 1 if r["measured"] > 0 else float("nan")
        lines.append(
            f"| {r['config']} | {r['sign']} | {r['d']:,} | {r['L']:,} | "
            f"{r['predicted']:,.0f} ± {r['predicted_error']:,.0f} | "
            f"{r['measured']:,} [{r['lo']:,.0f}, {r['hi']:,.0f}] | {rel:+.1%} | "
            f"{r['hit_mean_pred']:,.0f} / {r['hit_mean']:,.0f} | "
            f"{r['hit_sd_pred']:,.0f} / {r['hit_sd']:,.0f} [{r['hit_sd_lo']:,.0f}, "
            f"{r['hit_sd_hi']:,.0f}] | {r['iqr_pred']:,.0f} / {r['iqr']:,.0f} "
            f"[{r['iqr_lo']:,.0f}, {r['iqr_hi']:,.0f}] |")
    crit = [r for r in rows if r["kind"] == "critical"]
    if crit:
        lines += ["", "| config | sign | d | c_critical (law) | chain bisection | law / chain − 1 |",
                  "| --- | --- | ---: | ---: | ---: | ---: |"]
        for r in crit:
            mid = math.sqrt(r["c_chain_lo"] * r["c_chain_hi"])
            lines.append(f"| {r['config']} | {r['sign']} | {r['d']:,} | {r['c_law']:.4g} | "
                         f"[{r['c_chain_lo']:.4g}, {r['c_chain_hi']:.4g}] | "
                         f"{r['c_law'] / mid - 1:+.1%} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configs", default="A,B,C")
    ap.add_argument("--signs", default="random,fixed")
    ap.add_argument("--dims", default="1e2,1e3,1e4,1e5")
    ap.add_argument("--runs", type=int, default=64)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--critical", default="", help="config:sign:d,... for c_critical bisections")
    ap.add_argument("--critical-runs", type=int, default=32)
    ap.add_argument("--out", default="/work/notes/i29/scaling_bench.jsonl")
    ap.add_argument("--table-only", action="store_true")
    a = ap.parse_args()
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    if not a.table_only:
        done = _done(out)
        dims = [int(float(x)) for x in a.dims.split(",")]
        laws = {}
        for d in dims:  # the cheap dimensions of every configuration first
            for name in a.configs.split(","):
                for sign in a.signs.split(","):
                    if ("samples", name, sign, d) in done:
                        continue
                    if (name, sign) not in laws:
                        laws[name, sign] = _law(name, sign)
                    row = point(name, sign, laws[name, sign], d, a.runs, a.seed)
                    _append(out, row)
                    print(json.dumps(row), flush=True)
        for spec in filter(None, a.critical.split(",")):
            name, sign, d = spec.split(":")
            if ("critical", name, sign, int(float(d))) in done:
                continue
            if (name, sign) not in laws:
                laws[name, sign] = _law(name, sign)
            row = critical(name, sign, laws[name, sign], int(float(d)), a.critical_runs, a.seed)
            _append(out, row)
            print(json.dumps(row), flush=True)
    print(table(out))


if __name__ == "__main__":
    main()
