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
bootstrap interval, and the per-run hitting times T (mean, standard deviation, interquartile range)
against the law's — the law seen through the runs' horizon H (T given T ≤ H, and min(T, H)),
as the runs see it. ``--escape`` measures the hitting times alone over a horizon of the
caller's choice and stores them per run (rows of kind "hits", pooled over seeds in the
hitting-time table). Then c_critical against the chain (:func:`critical`: where the chain's
stationary mean |ρ| crosses the target, per branch).

Results are appended, one JSON line per point, to ``--out`` (default
``/work/notes/i29/scaling_bench.jsonl``; a rerun skips the points already there), and the table is
printed at the end. Usage::

    nice -n 10 python benchmarks/scaling_law.py [--configs A,B,C] [--dims 1e2,1e3,1e4,1e5]
        [--runs 64] [--c C] [--critical] [--escape config:sign:d:runs:steps] [--out FILE]

``--repredict`` recomputes the law's columns of stored rows with the current law (a row's own
``c``), with the linear-noise law's samples beside them (``predicted_linear``) and the noise
treatment the law took (``law_noise``).
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import time
import warnings
from pathlib import Path

import numpy as np

import attnsignal as asg
from attnsignal.measure import bootstrap_counts, compare_law, law_columns
from attnsignal.seeds import stream
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
#: the markers of the measured table in ``docs/scaling.md`` (``--docs``)
DOCS_BEGIN, DOCS_END = "<!-- scaling-table:begin -->", "<!-- scaling-table:end -->"


@functools.lru_cache(maxsize=None)
def _law(name: str, sign: str, c: float | None = None):
    """The law of a configuration and sign (with the step constant ``c``, default the
    configuration's), made once per process (its moments are cached inside it and shared with
    the other ``c``)."""
    cfg = CONFIGS[name]
    if c is not None and c != cfg["c"][sign]:
        return _law(name, sign).with_c(c)
    m = asg.ModelConfig(signal_sign=sign, **cfg["model"])
    return scaling_law(m, target=cfg["target"], c=cfg["c"][sign], path=cfg["path"],
                       n_samples=cfg["n_samples"], seed=1)


def point_seed(base: int, *parts: str | int) -> np.random.SeedSequence:
    """The stream of one point: ``seeds.stream(base, "scaling_law", *parts)``; ``compare_law``
    adds the dimension to the key, so every point's runs are independent (runs that shared
    their starts' draws across dimensions would make the points' errors move together)."""
    return stream(base, "scaling_law", *parts)


def _runs_at(spec: str, default: int) -> dict:
    """``"1e2:512,1e4:256"`` → ``{100: 512, 10000: 256}``."""
    out = {}
    for part in filter(None, spec.split(",")):
        d, r = part.split(":")
        out[int(float(d))] = int(r)
    return out


def row_key(r: dict) -> tuple:
    """The point a row measures: ``(kind, config, sign, d)``, and for a row of kind "hits"
    (whose seeds pool) also its base seed."""
    key = (r["kind"], r["config"], r["sign"], r["d"])
    return key + ((r["seed"][0],) if r["kind"] == "hits" else ())


def _done(out: Path) -> set:
    if not out.exists():
        return set()
    return {row_key(json.loads(line)) for line in out.read_text().splitlines()}


def _append(out: Path, row: dict) -> None:
    with out.open("a") as f:
        f.write(json.dumps(row) + "\n")


def point(name: str, sign: str, law, d: int, runs: int, base: int,
          horizon: float | None = None) -> dict:
    t0 = time.perf_counter()
    pred = law.samples(d)
    L = law.model_at(d).n_tokens
    hor = HORIZON if pred * L * runs * HORIZON < LONG_WORK else HORIZON_LONG
    hor = hor if horizon is None else horizon
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        row = compare_law(law, [d], runs=runs if math.isfinite(pred) else 0,
                          seed=point_seed(base, name, sign),
                          horizon=hor)[0]
    row.update(kind="samples", config=name, horizon=hor, escape=law.law(d).escape is not None,
               seed=[base, "scaling_law", name, sign, "d", d],
               seconds=time.perf_counter() - t0)
    return row


def escape(name: str, sign: str, law, d: int, runs: int, steps: int, base: int) -> dict:
    """The per-run hitting steps of one point over ``steps`` (a horizon chosen by the caller,
    long enough that few runs are censored), 2 000 records: a row of kind "hits" with the
    hits (NaN: not reached within ``steps``) and the law's hitting-time columns. Rows of the
    same point with other seeds pool in the hitting-time table (:func:`hit_rows`)."""
    from attnsignal.measure import measure_samples

    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ms = measure_samples(law.model_at(d), law.step(d), law.target, steps=steps, runs=runs,
                             seed=stream(base, "scaling_law", "escape" + name, d),
                             update=law.update, n_records=2000)
    row = {"kind": "hits", "config": name, "sign": sign, "d": d, "runs": runs,
           "horizon_steps": ms.horizon, "seed": [base, "scaling_law", "escape" + name, d],
           "hits": [float(x) for x in ms.hits], "reached": ms.reached,
           "measured": float(ms.samples), "measured_lo": ms.interval[0],
           "measured_hi": ms.interval[1]}
    row.update(law_columns(law, d, ms.horizon), seconds=time.perf_counter() - t0)
    return row


def critical(name: str, sign: str, law, d: int, runs: int, base: int,
             min_steps: int = 0, draws: int | None = None) -> dict:
    """c_critical at d against the chain, per branch (the runs that go to +ξ, and for the fixed
    sign also those that go to −ξ): the law's largest c whose long-run mean |ρ| on the branch
    reaches the target (``c_critical_at(d, side)``, its "auto" method; the expansion's value
    beside it), and the c at which the chain's stationary mean |ρ| crosses the target — runs
    started at ±0.9 (above the plateau: no escape to wait for), the run-mean |ρ| time-averaged
    over the second half of max(1.5× the samples predicted at 0.6 c_critical, ``min_steps``)
    steps, at five c from 0.94 to 1.06 × the law's value, a straight line through them solved
    for the target; its interval from 400 bootstrap resamples of the runs. Stationarity: the
    same crossing from the window's third and fourth quarters separately
    (``c_chain_q3``, ``c_chain_q4``)."""
    t0 = time.perf_counter()
    seed = point_seed(base, "critical", name, sign, d)
    out = {"kind": "critical", "config": name, "sign": sign, "d": d, "runs": runs,
           "sides": {}, "seed": [base, "scaling_law", "critical", name, sign, d],
           "draws": draws}
    m = law.model_at(d)
    sides = (1,) if sign == "random" else (1, -1)
    ccs = {side: law.c_critical_at(d, side, n_samples=draws) for side in sides}
    cexp = {side: law.c_critical_at(d, side, method="expansion") for side in sides}
    finite = [cc for cc in cexp.values() if 0.0 < cc < math.inf]
    # the time scale: the samples at 0.6 × the smallest critical c (reachable on every branch);
    # a target the law never reaches (no finite positive c_critical, or infinite samples) is
    # reported in the row, not simulated
    n_ref = law.with_c(0.6 * min(finite)).samples(d) if finite else math.inf
    if not math.isfinite(n_ref):
        out["unreachable"] = (f"the law's samples at 0.6 c_critical are {n_ref} "
                              f"(c_critical per branch {ccs})")
        out["seconds"] = time.perf_counter() - t0
        return out
    steps = max(int(1.5 * n_ref) + 10, min_steps)
    for side in sides:
        cc = ccs[side]
        if not 0.0 < cc < math.inf:
            out["sides"][str(side)] = {"c_law": cc, "unreachable": "no c reaches the target "
                                       "on this branch" if cc == 0.0 else "every c reaches it"}
            continue
        branch = "plus" if side > 0 else "minus"
        cs = cc * np.array([0.94, 0.97, 1.0, 1.03, 1.06])
        curves, q3, q4 = [], [], []
        for j, c in enumerate(cs):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = asg.simulate(m, law.with_c(float(c)).step(d), steps=steps, runs=runs,
                                   engine="chain", initial_alignment=0.9 * side,
                                   seed=stream(seed, branch, j), record_every=max(1, steps // 200))
            a = np.abs(res.alignment)
            n = a.shape[1]
            curves.append(a[:, n // 2:].mean(axis=1))  # per-run time average
            q3.append(a[:, n // 2:(3 * n) // 4].mean(axis=1))
            q4.append(a[:, (3 * n) // 4:].mean(axis=1))
        per_run = np.array(curves)  # (5, runs)
        rng = np.random.default_rng(stream(seed, branch, "bootstrap"))

        def crossing(idx: np.ndarray, data: np.ndarray = per_run) -> float:
            y = data[:, idx].mean(axis=1)
            b, a0 = np.polyfit(cs / cc - 1.0, y, 1)
            return float(cc * (1.0 + (law.target - a0) / b))

        every = np.arange(runs)
        c_chain = crossing(every)
        boot = [crossing(rng.integers(0, runs, runs)) for _ in range(400)]
        out["sides"][str(side)] = {
            "c_law": cc, "c_law_expansion": cexp[side], "c_chain": c_chain,
            "lo": float(np.quantile(boot, 0.025)), "hi": float(np.quantile(boot, 0.975)),
            "c_chain_q3": crossing(every, np.array(q3)),
            "c_chain_q4": crossing(every, np.array(q4)), "cs": cs.tolist(),
            "stationary_mean": per_run.mean(axis=1).tolist(),
            "stationary_mean_q3": np.array(q3).mean(axis=1).tolist(),
            "stationary_mean_q4": np.array(q4).mean(axis=1).tolist(),
            "law_settled_expansion": [law.settled_mean(d, float(c), side) for c in cs],
            "steps": steps}
    out["seconds"] = time.perf_counter() - t0
    return out


def _get(r: dict, key: str, old: str) -> float:
    return r[key] if key in r else r[old]


def read_rows(files: list[Path]) -> list[dict]:
    """The rows of ``files``; a point measured again in a later file (the same kind,
    configuration, sign and d) replaces the earlier row."""
    by_key: dict = {}
    for f in files:
        for x in f.read_text().splitlines():
            r = json.loads(x)
            if r["kind"] == "critical" and "sides" not in r:
                continue  # an earlier format without the per-branch comparison
            by_key[row_key(r)] = r
    return list(by_key.values())


#: the law's columns of a samples row (``repredict`` recomputes them)
LAW_KEYS = ("predicted", "predicted_error", "hit_mean_predicted", "hit_sd_predicted",
            "iqr_predicted")


def horizon_steps(r: dict) -> int:
    """The steps a samples row's runs were simulated for: recorded, or ``⌈horizon ×
    predicted⌉ + 10`` with the prediction the runs were measured with (``compare_law``)."""
    if "horizon_steps" in r:
        return int(r["horizon_steps"])
    return int(math.ceil(r["horizon"] * r.get("predicted_measured", r["predicted"]))) + 10


def restricted_from_moments(r: dict, H: int) -> tuple[float, float]:
    """The mean and standard deviation (``ddof = 1``) of ``min(T, H)`` over a row's runs from
    its stored ``reached``, ``hit_mean``, ``hit_sd`` (``ddof = 1``, over the runs that reach
    the target): exact, for rows measured before the restricted moments were recorded."""
    n = int(r["runs"])
    k = int(round(r["reached"] * n))
    if k == 0:
        return float(H), 0.0
    hm, hs = r["hit_mean"], (r["hit_sd"] if k > 1 else 0.0)
    s1 = k * hm + (n - k) * H
    s2 = (k - 1) * hs * hs + k * hm * hm + (n - k) * H * H
    mean = s1 / n
    return mean, math.sqrt(max(s2 - n * mean * mean, 0.0) / (n - 1))


def repredict(files: list[Path], out: Path) -> None:
    """Every row of ``files`` into ``out``, the law's columns recomputed with the current law
    and its defaults (``method="auto"``; the measurements are unchanged): the samples rows'
    with the law's columns as measured kept under ``*_before``, the expansion's samples
    (``predicted_expansion``) and the method the law picked (``law_method``); the hits rows'
    at their horizon; the critical rows' ``c_law`` per branch (``c_critical_at(d, side)``:
    "auto", four times the law's draws) and ``c_law_expansion``, with the value the chain's
    grid of ``c`` was centred on kept as ``c_law_recorded``."""
    from dataclasses import replace

    rows = read_rows(files)
    with out.open("w") as f:
        for r in rows:
            law, d = _law(r["config"], r["sign"], r.get("c")), int(r["d"])
            if r["kind"] == "hits":
                r.update(law_columns(law, d, horizon_steps(r)))
            if r["kind"] == "critical":
                for side, v in r["sides"].items():
                    v.setdefault("c_law_recorded", v["c_law"])
                    v.update(c_law=law.c_critical_at(d, int(side)),
                             c_law_expansion=law.c_critical_at(d, int(side), method="expansion"))
                    print(r["config"], r["sign"], d, side, v["c_law_recorded"], v["c_law"],
                          flush=True)
            if r["kind"] == "samples":
                for k in LAW_KEYS:
                    r[k + "_before"] = _get(r, k, {"hit_mean_predicted": "hit_mean_pred",
                                                   "hit_sd_predicted": "hit_sd_pred",
                                                   "iqr_predicted": "iqr_pred"}.get(k, k))
                H = horizon_steps(r)
                r.setdefault("predicted_measured", r["predicted_before"])
                if "restricted_mean" not in r and math.isfinite(r.get("measured", math.nan)):
                    r["restricted_mean"], r["restricted_sd"] = restricted_from_moments(r, H)
                r.update(law_columns(law, d, H),  # LAW_KEYS among them
                         predicted_expansion=replace(law, method="expansion",
                                                     _laws={}).samples(d),
                         predicted_linear=replace(law, noise="linear", _laws={}).samples(d),
                         law_noise=law.law(d).noise)
                print(r["config"], r["sign"], d, r["law_method"], r["predicted_before"],
                      r["predicted"], r["measured"], flush=True)
            f.write(json.dumps(r) + "\n")


def hit_rows(rows: list[dict]) -> list[dict]:
    """One row per point of the hitting-time table: each samples row, and the rows of kind
    "hits" of a point pooled over their seeds — censored at the shortest of their horizons
    ``H`` (a longer run's hit beyond it counts as not reached), with the law's columns of the
    row simulated for ``H`` and the statistics of :func:`attnsignal.measure.hit_statistics`
    (2 000 bootstrap resamples)."""
    from attnsignal.measure import hit_statistics

    out = [dict(r, source="samples") for r in rows
           if r["kind"] == "samples" and np.isfinite(r.get("measured", np.nan))]
    groups: dict = {}
    for r in rows:
        if r["kind"] == "hits":
            groups.setdefault((r["config"], r["sign"], r["d"]), []).append(r)
    for (name, sign, d), rs in groups.items():
        ref = min(rs, key=lambda r: r["horizon_steps"])
        H = ref["horizon_steps"]
        hits = np.concatenate([np.asarray(r["hits"], dtype=np.float64) for r in rs])
        hits = np.where(hits <= H, hits, np.nan)
        _, counts = bootstrap_counts(np.random.default_rng(stream(0, "hit_table", name, sign, d)),
                                     2000, hits.size)
        st = hit_statistics(hits, H, counts)
        row = {k: v for k, v in ref.items() if k not in ("hits", "seed")}
        row.update(source="hits", runs=int(hits.size), reached=float(np.isfinite(hits).mean()),
                   seeds=[r["seed"][0] for r in rs], hit_mean=st["hit_mean"],
                   hit_sd=st["hit_sd"], restricted_mean=st["restricted_mean"],
                   restricted_sd=st["restricted_sd"])
        for k in ("hit_mean", "hit_sd", "restricted_mean", "restricted_sd"):
            row[k + "_lo"], row[k + "_hi"] = st[k + "_interval"]
        out.append(row)
    return sorted(out, key=lambda r: (r["config"], r["sign"], r["d"], r["source"]))


def _z(meas: float, law: float, se: float) -> str:
    return f"{law / meas - 1:+.1%} ({(meas - law) / se:+.1f})" if se > 0 else "—"


def hit_table(rows: list[dict]) -> str:
    """The hitting step ``T`` through the horizon ``H``: the law with no horizon, the law given
    ``T <= H`` and the runs that reach the target within ``H``; the law's error against the
    runs with, in brackets, the runs' difference from the law in standard errors under the
    law (``sd_c/√n`` for the mean, ``sd_c √((κ + 2)/(4n))`` for the standard deviation, ``n``
    the runs within ``H``, ``κ`` the conditional law's excess kurtosis)."""
    lines = ["| config | sign | d | runs | H | reached (runs / law) | mean: law / law, T ≤ H / "
             "runs [95 %] | law, T ≤ H / runs − 1 (z) | sd: law / law, T ≤ H / runs [95 %] | "
             "law, T ≤ H / runs − 1 (z) | mean, sd of min(T, H): law / runs |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]

    def ci(r: dict, k: str) -> str:
        lo, hi = r.get(k + "_lo", math.nan), r.get(k + "_hi", math.nan)
        return f" [{lo:,.0f}, {hi:,.0f}]" if np.isfinite(lo) and np.isfinite(hi) else ""

    for r in hit_rows(rows):
        if "hit_mean_conditional" not in r:
            continue
        n = r["reached"] * r["runs"]
        sdc, kap = r["hit_sd_conditional"], r["hit_sd_kurtosis"]
        se_m = sdc / math.sqrt(n)
        se_s = sdc * math.sqrt(max(kap + 2.0, 0.0) / (4.0 * n))
        src = f"{r['runs']} ({'+'.join(str(x) for x in r['seeds'])})" if r["source"] == "hits" \
            else f"{r['runs']}"
        lines.append(
            f"| {r['config']} | {r['sign']} | {r['d']:,} | {src} | {r['horizon_steps']:,} | "
            f"{r['reached']:.3f} / {r['reached_predicted']:.3f} | "
            f"{r['hit_mean_predicted']:,.0f} / {r['hit_mean_conditional']:,.0f} / "
            f"{r['hit_mean']:,.0f}{ci(r, 'hit_mean')} | "
            f"{_z(r['hit_mean'], r['hit_mean_conditional'], se_m)} | "
            f"{r['hit_sd_predicted']:,.0f} / {sdc:,.0f} / {r['hit_sd']:,.0f}{ci(r, 'hit_sd')} | "
            f"{_z(r['hit_sd'], sdc, se_s)} | "
            f"{r['restricted_mean_predicted']:,.0f}, {r['restricted_sd_predicted']:,.0f} / "
            f"{r['restricted_mean']:,.0f}, {r['restricted_sd']:,.0f} |")
    return "\n".join(lines)


def table(files: list[Path]) -> str:
    rows = read_rows(files)
    lines = ["| config | sign | d | L | runs | law's step | predicted | expansion | "
             "measured [95 %] | pred/meas − 1 | "
             "hit mean pred / meas (T ≤ H) | hit sd pred / meas (T ≤ H) | "
             "IQR pred / meas [95 %] |",
             "| --- | --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: "
             "| ---: |"]
    for r in sorted((r for r in rows if r["kind"] == "samples"),
                    key=lambda r: (r["config"], r["sign"], r["d"])):
        how = r.get("law_method", "expansion")
        exp = r.get("predicted_expansion", r["predicted"])
        if not np.isfinite(r.get("measured", np.nan)):
            lines.append(f"| {r['config']} | {r['sign']} | {r['d']:,} | {r['L']:,} | 0 | "
                         f"{how} | {r['predicted']:,.0f} | {exp:,.0f} | — | — | — | — | — |")
            continue
        rel = r["predicted"] / r["measured"] - 1 if r["measured"] > 0 else float("nan")
        lines.append(
            f"| {r['config']} | {r['sign']} | {r['d']:,} | {r['L']:,} | {r['runs']} | {how} | "
            f"{r['predicted']:,.0f} ± {r['predicted_error']:,.0f} | {exp:,.0f} | "
            f"{r['measured']:,.0f} [{_get(r, 'measured_lo', 'lo'):,.0f}, "
            f"{_get(r, 'measured_hi', 'hi'):,.0f}] | {rel:+.1%} | "
            f"{r.get('hit_mean_conditional', math.nan):,.0f} / {r['hit_mean']:,.0f} | "
            f"{r.get('hit_sd_conditional', math.nan):,.0f} / {r['hit_sd']:,.0f} | "
            f"{_get(r, 'iqr_predicted', 'iqr_pred'):,.0f} / {r['iqr']:,.0f} "
            f"[{r['iqr_lo']:,.0f}, {r['iqr_hi']:,.0f}] |")
    crit = [r for r in rows if r["kind"] == "critical" and "sides" in r]
    if crit:
        lines += ["", "| config | sign | d | branch | c_critical (law: expansion) | "
                  "c_critical (law) | chain [95 %] | law / chain − 1 | "
                  "chain, 3rd / 4th quarter | steps |",
                  "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for r in crit:
            if "unreachable" in r:
                lines.append(f"| {r['config']} | {r['sign']} | {r['d']:,} | — | — | — | "
                             f"not run: {r['unreachable']} | — | — | — |")
            laws = {v.get("c_law") for v in r["sides"].values()}
            one_basin = r["sign"] == "fixed" and len(r["sides"]) == 2 and len(laws) == 1
            for side, v in r["sides"].items():
                # equal laws on both sides: the drift has one stable root and the runs from
                # −0.9 cross to it — a start, not a branch
                label = "+ξ" if side == "1" else ("−0.9 start, one root" if one_basin else "−ξ")
                if "unreachable" in v:
                    lines.append(f"| {r['config']} | {r['sign']} | {r['d']:,} | "
                                 f"{label} | — | {v['c_law']:.4g} | "
                                 f"not run: {v['unreachable']} | — | — | — |")
                    continue
                exp = v.get("c_law_expansion", v["c_law"])
                q = (f"{v['c_chain_q3']:.4g} / {v['c_chain_q4']:.4g}" if "c_chain_q3" in v
                     else "—")
                lines.append(f"| {r['config']} | {r['sign']} | {r['d']:,} | "
                             f"{label} | {exp:.4g} | {v['c_law']:.4g} | "
                             f"{v['c_chain']:.4g} [{v['lo']:.4g}, {v['hi']:.4g}] | "
                             f"{v['c_law'] / v['c_chain'] - 1:+.1%} | {q} | {v['steps']:,} |")
    if any("hit_mean_conditional" in r for r in rows):
        lines += ["", hit_table(rows)]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configs", default="A,B,C")
    ap.add_argument("--signs", default="random,fixed")
    ap.add_argument("--dims", default="1e2,1e3,1e4,1e5")
    ap.add_argument("--runs", type=int, default=64)
    ap.add_argument("--runs-at", default="", help="d:runs,... overriding --runs at some d")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--c", type=float, default=None,
                    help="the step constant of every samples point (default: the "
                         "configuration's); use another --out per c (rows key by point)")
    ap.add_argument("--horizon", type=float, default=None,
                    help="simulate this many times the predicted samples (default: 3, or 1.6 "
                         "for points above 5e9 token updates); the per-run hitting-time "
                         "statistics use the runs that reach the target within it")
    ap.add_argument("--critical", default="", help="config:sign:d,... for c_critical bisections")
    ap.add_argument("--critical-runs", type=int, default=32)
    ap.add_argument("--escape", default="", help="config:sign:d:runs:steps,... per-run hitting "
                    "steps over a long horizon (rows of kind 'hits'; seeds pool in the "
                    "hitting-time table)")
    ap.add_argument("--critical-min-steps", type=int, default=0,
                    help="at least this many steps per critical run (where the target is "
                         "reached in a few dozen steps the default window is too short)")
    ap.add_argument("--critical-draws", type=int, default=None,
                    help="draws of the exact one-step moments of the law's critical c "
                         "(default: the configuration's n_samples)")
    ap.add_argument("--out", default="/work/notes/i29/scaling_bench.jsonl")
    ap.add_argument("--table-only", action="store_true")
    ap.add_argument("--critical-only", action="store_true", help="no samples points")
    ap.add_argument("--table-from", default="", help="FILE,... read for the table before --out "
                    "(a later file's point replaces an earlier one's)")
    ap.add_argument("--docs", default="", help="write the table into this page between "
                    f"{DOCS_BEGIN} and {DOCS_END}")
    ap.add_argument("--repredict", default="", help="FILE: write the rows of --table-from and "
                    "--out here with the law's columns recomputed by the current law "
                    "(measurements unchanged), and make the table from FILE alone")
    a = ap.parse_args()
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    if a.repredict:
        files = [Path(f) for f in filter(None, a.table_from.split(","))] + \
            ([out] if out.exists() else [])
        repredict(files, Path(a.repredict))
        a.table_only, a.table_from, out = True, "", Path(a.repredict)
    if not a.table_only:
        done = _done(out)
        dims = [] if a.critical_only or a.escape else [int(float(x)) for x in a.dims.split(",")]
        for d in dims:  # the cheap dimensions of every configuration first
            for name in a.configs.split(","):
                for sign in a.signs.split(","):
                    if ("samples", name, sign, d) in done:
                        continue
                    runs = _runs_at(a.runs_at, a.runs).get(d, a.runs)
                    row = point(name, sign, _law(name, sign, a.c), d, runs, a.seed, a.horizon)
                    _append(out, row)
                    print(json.dumps(row), flush=True)
        for spec in filter(None, a.escape.split(",")):
            name, sign, d, runs, steps = spec.split(":")
            d = int(float(d))
            if ("hits", name, sign, d, a.seed) in done:
                continue
            row = escape(name, sign, _law(name, sign), d, int(runs), int(float(steps)), a.seed)
            _append(out, row)
            print(json.dumps({k: v for k, v in row.items() if k != "hits"}), flush=True)
        for spec in filter(None, a.critical.split(",")):
            name, sign, d = spec.split(":")
            if ("critical", name, sign, int(float(d))) in done:
                continue
            row = critical(name, sign, _law(name, sign), int(float(d)), a.critical_runs,
                           a.seed, a.critical_min_steps, a.critical_draws)
            _append(out, row)
            print(json.dumps(row), flush=True)
    files = [Path(f) for f in filter(None, a.table_from.split(","))] + \
        ([out] if out.exists() else [])
    text = table(files)
    print(text)
    if a.docs:
        write_docs(Path(a.docs), text)


def write_docs(page: Path, text: str) -> None:
    """Replace the block between the markers of ``page`` with ``text``."""
    src = page.read_text(encoding="utf-8")
    i, j = src.index(DOCS_BEGIN) + len(DOCS_BEGIN), src.index(DOCS_END)
    page.write_text(src[:i] + "\n" + text + "\n" + src[j:], encoding="utf-8")


if __name__ == "__main__":
    main()
