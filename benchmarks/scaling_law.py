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
``benchmarks/data/scaling/measured.jsonl``, the committed measurements; a rerun skips the
measurements already there with the same base seed and runs), and the table is printed at the
end, from ``--table-from`` (default: that file) and ``--out``, each point's last row. Rows of
kind "hits_summary" carry a pooled point's hitting-time statistics without its per-run hits
(the hitting-time table shows them as they are, unless the point has rows of kind "hits",
which then replace it); rows with ``"recovered_from"`` were read back from the page's tables
(:func:`recover_rows`) and carry the measurements only, so the table is made from them through
``--repredict``, which adds the law's columns. Usage::

    nice -n 10 python benchmarks/scaling_law.py [--configs A,B,C] [--dims 1e2,1e3,1e4,1e5]
        [--runs 64] [--c C --out FILE] [--critical] [--escape config:sign:d:runs:steps]
        [--out FILE]
    python benchmarks/scaling_law.py --repredict /tmp/table.jsonl --docs docs/scaling.md

``--repredict`` recomputes the law's columns of stored rows with the current law (a row's own
``c``), with the linear-noise law's samples beside them (``predicted_linear``) and the noise
treatment the law took (``law_noise``). ``--c`` (a step constant other than the
configuration's) needs its own ``--out``: the table keys a point by configuration, sign and
``d``, so such a row in the committed file would replace the table's measurement.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import re
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
#: the committed measurements: ``--out`` and ``--table-from`` by default
MEASURED = Path(__file__).resolve().parent / "data" / "scaling" / "measured.jsonl"


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


def run_key(r: dict) -> tuple:
    """The measurement a row records: its point (:func:`row_key`), base seed, runs and, for a
    critical row, the law's draws; ``()`` for a row without a seed (recovered from the page),
    which no rerun matches."""
    if "seed" not in r:
        return ()
    return row_key(r) + (r["seed"][0], r["runs"], r.get("draws"))


def _done(out: Path) -> set:
    """The measurements already in ``out`` (:func:`run_key`): a rerun with the same base seed
    and runs skips them, one with another seed or more runs measures the point again (its row,
    later in the file, replaces the earlier one in the table)."""
    if not out.exists():
        return set()
    keys = {run_key(json.loads(line)) for line in out.read_text().splitlines()}
    return keys - {()}


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


#: what a row recovered from the page lost (:func:`recover_rows`)
RECOVERED_PRECISION = ("as printed: steps and hitting-step statistics to the integer, reached "
                       "to 3 decimals (reached_runs: the k that prints so), c to 4 significant "
                       "figures; hit_mean, hit_sd and c_chain the middle of the range "
                       "('refined') that prints as the page's cells against its law")


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _n(text: str) -> float:
    """A printed number: ``"1,082,715"`` → 1082715.0."""
    return float(text.replace(",", ""))


def _with_ci(text: str) -> tuple[float, float, float]:
    """``"290 [279, 302]"`` → (290, 279, 302); NaN bounds where there is no bracket."""
    m = re.fullmatch(r"(\S+)(?: \[(\S+), (\S+)\])?", text)
    if m is None:
        raise ValueError(f"not a value with an interval: {text!r}")
    v = _n(m[1])
    return (v, _n(m[2]), _n(m[3])) if m[2] else (v, math.nan, math.nan)


def _reached_runs(printed: str, runs: int) -> list[int]:
    """The numbers ``k`` of runs within the horizon with ``f"{k / runs:.3f}" == printed``."""
    return [k for k in range(runs + 1) if f"{k / runs:.3f}" == printed]


def _page_tables(page: str) -> tuple[list[list[str]], ...]:
    """The cells of the samples, critical-c and hitting-time tables between the page's
    markers, one list per line below the header."""
    i, j = page.index(DOCS_BEGIN) + len(DOCS_BEGIN), page.index(DOCS_END)
    blocks = [b.strip().splitlines() for b in page[i:j].strip().split("\n\n")]
    if len(blocks) != 3:
        raise ValueError(f"expected 3 tables between the markers, found {len(blocks)}")
    return tuple([_cells(x) for x in b[2:]] for b in blocks)


def _printed_range(text: str, significant: int | None = None) -> tuple[float, float]:
    """The values that print as ``text``: a number with ``k`` decimals (``"+2.6"``,
    ``"-4.4%"``: a fraction) lies within half a unit of its last digit, a signed zero on its
    side of 0; with ``significant``, a ``g``-format number of that many significant figures."""
    pct = text.endswith("%")
    t = text.rstrip("%").replace(",", "")
    v = float(t)
    if significant is not None and v != 0.0:
        half = 0.5 * 10.0 ** (math.floor(math.log10(abs(v))) - significant + 1)
    else:
        half = 0.5 * 10.0 ** -(len(t.split(".")[1]) if "." in t else 0)
    lo, hi = v - half, v + half
    if v == 0.0:
        lo, hi = (-half, 0.0) if t.startswith("-") else (0.0, half)
    return (lo / 100, hi / 100) if pct else (lo, hi)


def _narrow(value: float, bounds: list[tuple[float, float]]) -> tuple[float, list[float]]:
    """The middle of the intersection of the ranges ``bounds`` and that intersection, or
    ``value`` and ``[]`` where it is empty."""
    lo, hi = max(b[0] for b in bounds), min(b[1] for b in bounds)
    return ((lo + hi) / 2, [lo, hi]) if lo < hi else (value, [])


def refine_rows(rows: list[dict], page: str, with_law: list[dict]) -> list[dict]:
    """The rows of :func:`recover_rows` with the hitting-step means and standard deviations
    and the chain's critical c narrowed by the page's cells that print them against the law:
    ``law / runs − 1`` (0.1 %) and ``z`` (0.1) of the hitting-time table, ``law / chain − 1``
    of the critical table, with the law's columns ``with_law`` (the same rows after
    ``repredict``, with the law the page was made with). Each value becomes the middle of the
    range of values that print as every one of its cells, the range kept under ``refined``
    (a value whose cells admit none is kept as printed, with an empty range). Raises
    ``ValueError`` where the page's law columns are not ``with_law``'s (another law)."""
    import copy

    _, critical_t, hits_t = _page_tables(page)
    law = {row_key(r): r for r in with_law}
    cells = {}
    for c in hits_t:
        kind = "hits_summary" if "(" in c[3] else "samples"
        cells[(kind, c[0], c[1], int(_n(c[2])))] = c
    for c in critical_t:
        cells[("critical", c[0], c[1], int(_n(c[2])), "1" if c[3] == "+ξ" else "-1")] = c
    out = []
    for r in map(copy.deepcopy, rows):
        lw = law[row_key(r)]
        if r["kind"] == "critical":
            for side, v in r["sides"].items():
                c = cells[("critical", r["config"], r["sign"], r["d"], side)]
                cl = lw["sides"][side]["c_law"]
                if c[5] != f"{cl:.4g}":
                    raise ValueError(f"{row_key(r)} {side}: the page's law is {c[5]}, "
                                     f"not {cl:.4g}")
                a, b = _printed_range(c[7])
                v["c_chain"], rng = _narrow(v["c_chain"], [
                    _printed_range(c[6].split(" [")[0], significant=4),
                    (cl / (1 + b), cl / (1 + a))])
                v["refined"] = {"c_chain": rng}
            out.append(r)
            continue
        c = cells[(r["kind"], r["config"], r["sign"], r["d"])]
        n = r["reached"] * r["runs"]
        sdc, kap = lw["hit_sd_conditional"], lw["hit_sd_kurtosis"]
        mc = lw["hit_mean_conditional"]
        if (c[6].split(" / ")[1], c[8].split(" / ")[1]) != (f"{mc:,.0f}", f"{sdc:,.0f}"):
            raise ValueError(f"{row_key(r)}: the page's law given T <= H is not this law's")
        r["refined"] = {}
        for key, law_v, se, cell in (
                ("hit_mean", mc, sdc / math.sqrt(n), c[7]),
                ("hit_sd", sdc, sdc * math.sqrt(max(kap + 2.0, 0.0) / (4.0 * n)), c[9])):
            bounds = [(r[key] - 0.5, r[key] + 0.5)]
            m = re.fullmatch(r"(\S+%) \((\S+)\)", cell)
            if m is not None:
                a, b = _printed_range(m[1])
                za, zb = _printed_range(m[2])
                bounds += [(law_v / (1 + b), law_v / (1 + a)),
                           (law_v + se * za, law_v + se * zb)]
            r[key], r["refined"][key] = _narrow(r[key], bounds)
        out.append(r)
    return out


def recover_rows(page: str) -> list[dict]:
    """The measurements shown in the tables between the page's markers, as rows that the
    table builder reads: a samples row per line of the samples table (measured step, its
    interval, runs, ``L``, the configuration's ``c``, IQR and interval, hitting mean and sd
    given ``T <= H`` with their intervals where printed, and from the hitting-time table's
    line of that point ``H``, ``reached``, the mean and sd of ``min(T, H)``); a row of kind
    "hits_summary" per pooled line of the hitting-time table (its seeds, runs, ``H``, those
    statistics and intervals); a critical row per point of the critical-c table, in its
    order (per branch: the chain's crossing, interval, quarters, steps, and ``c_law_recorded``,
    the law's value the chain's grid of c was centred on: from the page's sentence naming
    them for B and C, the expansion's printed value for A, whose law is the expansion there).
    Numbers are as printed (:func:`refine_rows` narrows those the page also prints against
    the law; :data:`RECOVERED_PRECISION`); ``reached`` is ``k / runs`` for the
    ``k`` nearest ``reached × runs`` among those that print as the page does
    (``reached_runs``; ``reached_runs_range`` where several do). Raises ``ValueError`` where
    the page's tables do not parse."""
    samples_t, critical_t, hits_t = _page_tables(page)
    recorded = re.search(r"C\s+fixed\s+(\d\.\d+),\s+C\s+random\s+(\d\.\d+),\s+B\s+random"
                         r"\s+(\d\.\d+),\s+B\s+fixed\s+(\d\.\d+)", page)
    centre = {} if recorded is None else {
        ("C", "fixed"): float(recorded[1]), ("C", "random"): float(recorded[2]),
        ("B", "random"): float(recorded[3]), ("B", "fixed"): float(recorded[4])}
    tag = {"recovered_from": "docs table", "precision": RECOVERED_PRECISION}

    def hit_stats(c: list[str], runs: int) -> dict:
        H = int(_n(c[4]))
        reached = c[5].split(" / ")[0]
        ks = _reached_runs(reached, runs)
        if not ks:
            raise ValueError(f"no number of {runs} runs prints as reached {reached}")
        k = min(ks, key=lambda k: abs(k - float(reached) * runs))
        mean = _with_ci(c[6].split(" / ")[2])
        sd = _with_ci(c[8].split(" / ")[2])
        rm, rs = (_n(x) for x in c[10].split(" / ")[1].split(", "))
        out = {"horizon_steps": H, "reached": k / runs, "reached_runs": k,
               "hit_mean": mean[0], "hit_sd": sd[0], "restricted_mean": rm,
               "restricted_sd": rs}
        if len(ks) > 1:
            out["reached_runs_range"] = [ks[0], ks[-1]]
        if math.isfinite(mean[1]):
            out.update(hit_mean_lo=mean[1], hit_mean_hi=mean[2], hit_sd_lo=sd[1],
                       hit_sd_hi=sd[2])
        return out

    rows, by_point = [], {}
    for c in hits_t:
        point_ = (c[0], c[1], int(_n(c[2])))
        m = re.fullmatch(r"(\d+)(?: \(([\d+]+)\))?", c[3])
        if m is None:
            raise ValueError(f"runs cell {c[3]!r}")
        runs = int(m[1])
        if m[2]:
            rows.append({"kind": "hits_summary", "config": c[0], "sign": c[1], "d": point_[2],
                         "runs": runs, "seeds": [int(x) for x in m[2].split("+")],
                         **hit_stats(c, runs), **tag})
        else:
            by_point[point_] = (runs, hit_stats(c, runs))
    for c in samples_t:
        name, sign, d = c[0], c[1], int(_n(c[2]))
        runs = int(c[4])
        meas = _with_ci(c[8])
        iqr = _with_ci(c[12].split(" / ")[1])
        hruns, hs = by_point[(name, sign, d)]
        if hruns != runs or hs["hit_mean"] != _n(c[10].split(" / ")[1]) or \
                hs["hit_sd"] != _n(c[11].split(" / ")[1]):
            raise ValueError(f"the tables disagree on {name} {sign} {d}")
        rows.append({"kind": "samples", "config": name, "sign": sign, "d": d, "L": int(_n(c[3])),
                     "runs": runs, "c": CONFIGS[name]["c"][sign], "measured": meas[0],
                     "measured_lo": meas[1], "measured_hi": meas[2], "iqr": iqr[0],
                     "iqr_lo": iqr[1], "iqr_hi": iqr[2], **hs, **tag})
    crit: dict = {}
    for c in critical_t:
        name, sign, d = c[0], c[1], int(_n(c[2]))
        side = "1" if c[3] == "+ξ" else "-1"
        chain = _with_ci(c[6])
        if name != "A" and (name, sign) not in centre:
            raise ValueError(f"the page names no c_law_recorded for {name} {sign}")
        v = {"c_chain": chain[0], "lo": chain[1], "hi": chain[2], "steps": int(_n(c[9])),
             "c_law_recorded": float(c[4]) if name == "A" else centre[(name, sign)]}
        if c[8] != "—":
            v["c_chain_q3"], v["c_chain_q4"] = (float(x) for x in c[8].split(" / "))
        r = crit.setdefault((name, sign, d), {"kind": "critical", "config": name,
                                              "sign": sign, "d": d, "sides": {}, **tag})
        r["sides"][side] = v
    return rows + list(crit.values())


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
            if r["kind"] in ("hits", "hits_summary"):
                r.update(law_columns(law, d, horizon_steps(r)))
            if r["kind"] == "critical":
                for side, v in r["sides"].items():
                    if "c_law_recorded" not in v:
                        v["c_law_recorded"] = v["c_law"]
                    v.update(c_law=law.c_critical_at(d, int(side)),
                             c_law_expansion=law.c_critical_at(d, int(side), method="expansion"))
                    print(r["config"], r["sign"], d, side, v["c_law_recorded"], v["c_law"],
                          flush=True)
            if r["kind"] == "samples":
                for k in LAW_KEYS:  # none in a row recovered from the page
                    old = {"hit_mean_predicted": "hit_mean_pred", "hit_sd_predicted":
                           "hit_sd_pred", "iqr_predicted": "iqr_pred"}.get(k, k)
                    if k in r or old in r:
                        r[k + "_before"] = _get(r, k, old)
                H = horizon_steps(r)
                if "predicted_before" in r:
                    r.setdefault("predicted_measured", r["predicted_before"])
                if "restricted_mean" not in r and math.isfinite(r.get("measured", math.nan)):
                    r["restricted_mean"], r["restricted_sd"] = restricted_from_moments(r, H)
                r.update(law_columns(law, d, H),  # LAW_KEYS among them
                         predicted_expansion=replace(law, method="expansion",
                                                     _laws={}).samples(d),
                         predicted_linear=replace(law, noise="linear", _laws={}).samples(d),
                         law_noise=law.law(d).noise)
                print(r["config"], r["sign"], d, r["law_method"], r.get("predicted_before"),
                      r["predicted"], r["measured"], flush=True)
            f.write(json.dumps(r) + "\n")


def hit_rows(rows: list[dict]) -> list[dict]:
    """One row per point of the hitting-time table: each samples row, and the rows of kind
    "hits" of a point pooled over their seeds — censored at the shortest of their horizons
    ``H`` (a longer run's hit beyond it counts as not reached), with the law's columns of the
    row simulated for ``H`` and the statistics of :func:`attnsignal.measure.hit_statistics`
    (2 000 bootstrap resamples) — or, for a point without such rows, its row of kind
    "hits_summary" (those statistics and intervals as stored, ``seeds`` the pooled base
    seeds)."""
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
    out += [dict(r, source="hits") for r in rows if r["kind"] == "hits_summary"
            and (r["config"], r["sign"], r["d"]) not in groups]
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
    """The page's tables (samples, critical c, hitting step) from the rows of ``files``
    (:func:`read_rows`); every row must carry the law's columns (a recovered row has them
    after ``--repredict``). Raises ``ValueError`` naming the first row without them."""
    rows = read_rows(files)
    for r in rows:
        if ("predicted" not in r and r["kind"] == "samples") or (
                r["kind"] == "hits_summary" and "hit_mean_conditional" not in r) or (
                r["kind"] == "critical" and any("c_law" not in v and "unreachable" not in v
                                                for v in r["sides"].values())):
            raise ValueError(f"row {row_key(r)} has no law's columns (recovered from the "
                             "page?): make the table with --repredict")
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
    ap.add_argument("--out", default=str(MEASURED), help="append the measured rows here "
                    "(default: the committed measurements)")
    ap.add_argument("--table-only", action="store_true")
    ap.add_argument("--critical-only", action="store_true", help="no samples points")
    ap.add_argument("--table-from", default=str(MEASURED), help="FILE,... read for the table "
                    "before --out (a later row of a point replaces an earlier one; default: the "
                    "committed measurements)")
    ap.add_argument("--recover-from-docs", default="", help="PAGE: write the measurements "
                    "shown in PAGE's tables to --out (overwritten) as rows recovered from the "
                    "page (recover_rows, refine_rows with the current law, which must be the "
                    "one PAGE's tables were made with), and nothing else")
    ap.add_argument("--docs", default="", help="write the table into this page between "
                    f"{DOCS_BEGIN} and {DOCS_END}")
    ap.add_argument("--repredict", default="", help="FILE: write the rows of --table-from and "
                    "--out here with the law's columns recomputed by the current law "
                    "(measurements unchanged), and make the table from FILE alone")
    a = ap.parse_args()
    out = Path(a.out)
    if a.c is not None and out.resolve() == MEASURED:
        ap.error(f"--c: needs an --out other than {MEASURED} (the table keys a point by "
                 f"configuration, sign and d); received --c {a.c} with the default --out")
    out.parent.mkdir(parents=True, exist_ok=True)
    if a.recover_from_docs:
        import tempfile

        page = Path(a.recover_from_docs).read_text(encoding="utf-8")
        rows = recover_rows(page)
        with tempfile.TemporaryDirectory() as tmp:
            raw, lawful = Path(tmp) / "raw.jsonl", Path(tmp) / "law.jsonl"
            raw.write_text("".join(json.dumps(r) + "\n" for r in rows))
            repredict([raw], lawful)
            rows = refine_rows(rows, page, read_rows([lawful]))
        out.write_text("".join(json.dumps(r) + "\n" for r in rows))
        print(f"{len(rows)} rows recovered into {out}")
        return
    if a.repredict:
        repredict(_table_files(a.table_from, out), Path(a.repredict))
        a.table_only, a.table_from, out = True, "", Path(a.repredict)
    if not a.table_only:
        done = _done(out)
        dims = [] if a.critical_only or a.escape else [int(float(x)) for x in a.dims.split(",")]
        for d in dims:  # the cheap dimensions of every configuration first
            for name in a.configs.split(","):
                for sign in a.signs.split(","):
                    runs = _runs_at(a.runs_at, a.runs).get(d, a.runs)
                    if ("samples", name, sign, d, a.seed, runs, None) in done:
                        continue
                    row = point(name, sign, _law(name, sign, a.c), d, runs, a.seed, a.horizon)
                    _append(out, row)
                    print(json.dumps(row), flush=True)
        for spec in filter(None, a.escape.split(",")):
            name, sign, d, runs, steps = spec.split(":")
            d = int(float(d))
            if ("hits", name, sign, d, a.seed, a.seed, int(runs), None) in done:
                continue
            row = escape(name, sign, _law(name, sign), d, int(runs), int(float(steps)), a.seed)
            _append(out, row)
            print(json.dumps({k: v for k, v in row.items() if k != "hits"}), flush=True)
        for spec in filter(None, a.critical.split(",")):
            name, sign, d = spec.split(":")
            if ("critical", name, sign, int(float(d)), a.seed, a.critical_runs,
                    a.critical_draws) in done:
                continue
            row = critical(name, sign, _law(name, sign), int(float(d)), a.critical_runs,
                           a.seed, a.critical_min_steps, a.critical_draws)
            _append(out, row)
            print(json.dumps(row), flush=True)
    try:
        text = table(_table_files(a.table_from, out))
    except ValueError as e:  # rows without the law's columns: the measurements are written
        raise SystemExit(str(e)) from None
    print(text)
    if a.docs:
        write_docs(Path(a.docs), text)


def _table_files(table_from: str, out: Path) -> list[Path]:
    """The files of ``--table-from``, then ``--out`` where it exists and is not among them."""
    files = [Path(f) for f in filter(None, table_from.split(","))]
    same = any(f.exists() and out.exists() and f.samefile(out) for f in files)
    return files + ([out] if out.exists() and not same else [])


def write_docs(page: Path, text: str) -> None:
    """Replace the block between the markers of ``page`` with ``text``."""
    src = page.read_text(encoding="utf-8")
    i, j = src.index(DOCS_BEGIN) + len(DOCS_BEGIN), src.index(DOCS_END)
    page.write_text(src[:i] + "\n" + text + "\n" + src[j:], encoding="utf-8")


if __name__ == "__main__":
    main()
