"""The effective dynamics' one-step moments against the chain engine, at random configurations.

For each configuration (the accuracy map's box and draw, :mod:`attnsignal.validate.box`; seed
recorded) and each of 3 alignments × 2 steps, one update of the chain engine from the point mass
(:func:`attnsignal.one_step.chain_one_step`, at least 200 000 runs, more where the jump's
kurtosis needs them for a 1.2 % standard error of the variance, within a token budget) against
the moment table the effective dynamics would use (:func:`attnsignal.theory.moments.moment_table`,
interpolated as :meth:`EffectiveDynamics.drift` / ``diffusion`` do). Checks: the drift within 4
combined standard errors, the variance within 5 % of the chain's. Prints the table (markdown)
and the power of each comparison, and writes ``--json``.

    PYTHONPATH=src python benchmarks/one_step_accuracy.py --docs          # 12 + 3 configurations
    PYTHONPATH=src python benchmarks/one_step_accuracy.py --configs 2 --heavy 0 --runs 200000
    PYTHONPATH=src python benchmarks/one_step_accuracy.py --docs --from-json rows.json
    PYTHONPATH=src python benchmarks/one_step_accuracy.py --docs --from-json rows.json --repredict

``--docs`` writes the table and its summary between the markers ``one-step:begin`` /
``one-step:end`` of ``docs/effective-dynamics.md``; ``--from-json`` renders recorded runs
without running them (``--heavy-only`` measures the extra configurations in a second process,
whose record is rendered together with the first's; ``--first I --configs J --heavy 0``
measures configurations ``I … J−1`` alone, one process each if wanted); with ``--repredict`` the
tables' side is recomputed by the current code against the recorded chain runs (an estimator
change is checked without simulating again). ``--json`` is rewritten
after every configuration (a stopped run keeps what it measured).

The points: ``ρ ∈ {0.15, 0.5, 0.9}`` (on the side the field points to at 0.5) and
``η ∈ {0.05, 0.5} × η_max``, ``η_max`` the largest constant step whose plateau stays above
``|ρ| = 0.5`` (:func:`~attnsignal.theory.finite_step.largest_plateau_step`, the map's cap). The
``--heavy`` extra configurations are the first of the same draw beyond ``--configs`` with
``β ≥ 1`` and ``L ≥ 1000`` (the heavy-tailed corner), and ``--issue`` adds the configuration
where the plain estimator was found off (d = 420, R = 60, N = 1 500, θ = 0.7, β = 1.1).
"""

from __future__ import annotations

import argparse
import json
import math
import time
import warnings

from pathlib import Path
from typing import Any

import numpy as np

from attnsignal.config import ModelConfig
from attnsignal.persistence import atomic_write
from attnsignal.seeds import stream
from attnsignal.one_step import chain_one_step, jump_moments
from attnsignal.theory.finite_step import largest_plateau_step
from attnsignal.theory.landscape import landscape
from attnsignal.theory.moments import moment_table
from attnsignal.validate.box import draw_config

RHOS = (0.15, 0.5, 0.9)
ETA_FRACTIONS = (0.05, 0.5)
SE_VAR_TARGET = 0.012      # the chain's relative SE of the variance we size the runs for
TOKEN_BUDGET = 6e9         # runs × L × B at most per point
PAGE = Path(__file__).resolve().parents[1] / "docs" / "effective-dynamics.md"
BEGIN = "<!-- one-step:begin -->"
END = "<!-- one-step:end -->"


def _seed(seed: int, *parts: str | int) -> int:
    """An integer seed for the chain runs: the named stream ``(seed, *parts)``'s first word."""
    return int(stream(seed, *parts).generate_state(1, np.uint32)[0])


def points(model: ModelConfig, batch: int, update: str) -> tuple[int, float]:
    """The side the field points to at ``|ρ| = 0.5`` and the step cap ``η_max`` there."""
    f = float(landscape(model, 0.5).field)
    side = 1 if f > 0 or model.signal_sign == "random" else -1
    cap = largest_plateau_step(model, 0.5, batch, update, side=side, n_samples=20_000)
    if not (math.isfinite(cap) and cap > 0):
        cap = largest_plateau_step(model, 0.5, batch, update, side=-side, n_samples=20_000)
        side = -side
    return side, float(cap)


def _table(model: ModelConfig, etas: list[float], batch: int, update: str, seed: int,
           rtol: float) -> tuple[Any, float]:
    """The moment table the check compares (as the effective dynamics builds it, to ``rtol``)
    and the seconds it took."""
    t0 = time.perf_counter()
    table = moment_table(model, 0.6 * etas[0], 1.6 * etas[1], batch=batch, update=update,
                         z_max=2.2, n_samples=4000, rtol=rtol, max_samples=1 << 19, seed=seed)
    return table, time.perf_counter() - t0


def _predicted(table: Any, model: ModelConfig, r: float, eta: float
               ) -> tuple[float, float, float, float, float]:
    """The table's E[Δz], its SE, Var Δz, its SE and the first-order drift ηΦ'(ρ) of ``z``
    at alignment ``r`` and step ``eta`` (interpolated as ``EffectiveDynamics`` does)."""
    s2 = model.noise_std ** 2
    z = math.atanh(r)
    loc = table.at(eta * s2)
    m, _, v = (float(x[0]) for x in loc(np.array([z])))
    first = float(eta * s2 * loc.fp(z))
    se_m, se_v = (float(x[0]) for x in table.stderr_at(eta * s2, np.array([z])))
    return m, se_m, v, se_v, first


def _compare(row: dict, table: Any, t_table: float, m: float, se_m: float, v: float,
             se_v: float, first: float) -> None:
    """Fill ``row``'s prediction columns and verdicts from the table's values against the
    row's chain columns."""
    se_d = math.hypot(row["chain_se"], se_m)
    zsc = (m - row["chain_mean"]) / se_d
    ratio = v / row["chain_var"]
    row.update(pred_mean=m, pred_se=se_m, z=zsc, first_order=first,
               z_first=(first - row["chain_mean"]) / row["chain_se"],  # the check's power
               pred_var=v, pred_var_se=se_v, var_ratio=ratio,
               ratio_se=math.hypot(row["chain_var_se"] / row["chain_var"], se_v / v),
               draws=int(table.n_samples), converged=bool(table.converged), table_s=t_table,
               drift_ok=abs(zsc) <= 4.0, var_ok=abs(ratio - 1.0) <= 0.05)


def repredict(rows: list[dict], seed: int, rtol: float) -> list[dict]:
    """The recorded rows with their prediction columns recomputed by the current code (the
    same configurations, steps and table seeds; the chain columns are the recorded runs')."""
    out = []
    for name in sorted({r["config"] for r in rows}, key=[r["config"] for r in rows].index):
        mine = [dict(r) for r in rows if r["config"] == name]
        if name.startswith("issue"):
            model, batch, update, tseed = (ModelConfig(d=420, n_informative=60,
                                                       n_nuisance=1500, theta=0.7, beta=1.1),
                                           1, "projected", 79)
        else:
            c = draw_config(int(name[1:4]), seed)
            if c.label() != name:
                raise SystemExit(f"{name}: the draw with seed {seed} gives {c.label()}")
            model, batch, update, tseed = c.model, c.batch, c.update, int(_seed(seed, c.index))
        etas = sorted({r["eta"] for r in mine})
        table, t_table = _table(model, etas, batch, update, tseed, rtol)
        for r in mine:
            _compare(r, table, t_table, *_predicted(table, model, r["rho"], r["eta"]))
            out.append(r)
        print(f"{name}: {sum(r['drift_ok'] and r['var_ok'] for r in mine)} of {len(mine)} "
              f"points pass ({table.n_samples:,} draws, {t_table:.0f} s)", flush=True)
    return out


def check(name: str, model: ModelConfig, batch: int, update: str, seed: int, runs_min: int,
          rtol: float) -> list[dict]:
    side, cap = points(model, batch, update)
    if not (math.isfinite(cap) and cap > 0):
        print(f"{name}: no step cap (η_max = {cap}); skipped")
        return []
    etas = [f * cap for f in ETA_FRACTIONS]
    table, t_table = _table(model, etas, batch, update, seed, rtol)
    rows = []
    for i_pt, (rho, eta) in enumerate([(x, y) for x in RHOS for y in etas]):
        r = side * rho
        m, se_m, v, se_v, first = _predicted(table, model, r, eta)
        # size the chain: a pilot of 20 000 runs estimates the kurtosis
        pilot = jump_moments(chain_one_step(model, r, eta, runs=20_000, batch=batch,
                                            update=update, seed=_seed(seed, "pilot", i_pt)), r)
        want = (max(pilot.kurtosis, 3.0) - 1.0) / SE_VAR_TARGET ** 2
        cap_runs = int(TOKEN_BUDGET / (model.n_tokens * batch))
        runs = int(min(max(runs_min, want), max(cap_runs, runs_min), 8_000_000))
        t1 = time.perf_counter()
        jm = jump_moments(chain_one_step(model, r, eta, runs=runs, batch=batch,
                                         update=update, seed=_seed(seed, "chain", i_pt)), r)
        t_chain = time.perf_counter() - t1
        row = dict(config=name, d=model.d, L=model.n_tokens, theta=model.theta,
                   beta=model.beta, sign=model.signal_sign, batch=batch, update=update,
                   rho=r, eta=eta, eta_max=cap, runs=runs, chain_mean=jm.mean,
                   chain_se=jm.stderr_mean, chain_var=jm.var, chain_var_se=jm.stderr_var,
                   kurtosis=jm.kurtosis, chain_s=t_chain)
        _compare(row, table, t_table, m, se_m, v, se_v, first)
        rows.append(row)
        zsc, z1, ratio, se_ratio = row["z"], row["z_first"], row["var_ratio"], row["ratio_se"]
        print(f"| {name} | {r:+.2f} | {eta:.3g} | {runs:,} | {jm.mean:+.4e} ± {jm.stderr_mean:.1e}"
              f" | {m:+.4e} ± {se_m:.1e} | {zsc:+.1f} | {z1:+.1f} | {ratio:.3f} ± {se_ratio:.3f} | "
              f"{jm.kurtosis:.0f} | {'ok' if row['drift_ok'] and row['var_ok'] else 'MISS'} |",
              flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=2727)
    ap.add_argument("--configs", type=int, default=12)
    ap.add_argument("--heavy", type=int, default=3)
    ap.add_argument("--issue", action="store_true")
    ap.add_argument("--runs", type=int, default=200_000)
    ap.add_argument("--rtol", type=float, default=0.01)
    ap.add_argument("--json", default=None)
    ap.add_argument("--docs", action="store_true", help=f"write the table into {PAGE.name}")
    ap.add_argument("--from-json", nargs="+", default=None,
                    help="render recorded runs (no measuring; several are concatenated)")
    ap.add_argument("--repredict", action="store_true",
                    help="with --from-json: recompute the tables' side with the current code")
    ap.add_argument("--first", type=int, default=0,
                    help="first index of the map's draw to measure (a second process)")
    ap.add_argument("--heavy-only", action="store_true",
                    help="measure only the --heavy configurations (a second process)")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    if args.from_json:
        recs = []
        for path in args.from_json:
            with open(path) as fh:
                recs.append(json.load(fh))
        seen: set = set()
        rows = []
        for r in (r for x in recs for r in x["rows"]):  # a point measured twice: the first
            if (r["config"], r["rho"], r["eta"]) not in seen:
                seen.add((r["config"], r["rho"], r["eta"]))
                rows.append(r)
        rows.sort(key=lambda r: r["config"])
        rec = dict(recs[0], rows=rows,
                   heavy=max(x["heavy"] for x in recs),
                   configs=max(x["configs"] for x in recs),
                   seconds=sum(x["seconds"] for x in recs))
        if args.repredict:
            rec["rows"] = repredict(rows, rec["seed"], rec["rtol"])
            rec["repredicted"] = True
            if args.json:
                atomic_write(args.json, lambda p: Path(p).write_text(json.dumps(rec, indent=1)))
        print(summary(rec["rows"]))
        if args.docs:
            write_docs(rec)
        return
    cfgs = [] if args.heavy_only else [draw_config(i, args.seed)
                                       for i in range(args.first, args.configs)]
    i = args.configs
    extra = []
    while len(extra) < args.heavy and i < args.configs + 500:
        c = draw_config(i, args.seed)
        if c.beta >= 1.0 and c.n_tokens >= 1000:
            extra.append(c)
        i += 1
    print(f"seed {args.seed}: configurations {args.configs} of the map's draw + {len(extra)} "
          f"(β ≥ 1, L ≥ 1000); table rtol {args.rtol}; chain runs ≥ {args.runs:,}\n")
    print("| configuration | ρ | η | chain runs | chain E[Δz] | table E[Δz] | z | z of ηΦ' | "
          "var ratio (table/chain) | kurtosis | |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    rows = []
    t0 = time.perf_counter()
    rec = dict(seed=args.seed, configs=args.configs, heavy=len(extra), runs_min=args.runs,
               rtol=args.rtol, rows=rows, seconds=0.0)

    def save() -> None:
        rec["seconds"] = time.perf_counter() - t0
        if args.json:
            atomic_write(args.json, lambda p: Path(p).write_text(json.dumps(rec, indent=1)))

    for c in cfgs + extra:
        rows += check(c.label(), c.model, c.batch, c.update, int(_seed(args.seed, c.index)),
                      args.runs, args.rtol)
        save()
    if args.issue:
        m = ModelConfig(d=420, n_informative=60, n_nuisance=1500, theta=0.7, beta=1.1)
        rows += check("issue (d=420, L=1560, θ=0.7, β=1.1)", m, 1, "projected", 79, args.runs,
                      args.rtol)
    save()
    print()
    print(summary(rows))
    if args.docs:
        write_docs(rec)
    n = len(rows)
    nd = sum(r["drift_ok"] for r in rows)
    nv = sum(r["var_ok"] for r in rows)
    worst_se = max((r["ratio_se"] for r in rows), default=math.nan)
    print(f"\n{n} points: drift within 4 SE at {nd}, variance within 5 % at {nv}; "
          f"{time.perf_counter() - t0:.0f} s")
    # power of the variance check: P(|N(δ, s)| > 5 %) for a true error δ, at each point's s
    for delta in (0.0, 0.10):
        p = [0.5 * math.erfc((0.05 - delta) / (r["ratio_se"] * math.sqrt(2)))
             + 0.5 * math.erfc((0.05 + delta) / (r["ratio_se"] * math.sqrt(2))) for r in rows]
        print(f"variance check: P(outside 5 %) for a true error of {delta:.0%}: mean "
              f"{np.mean(p):.3f}, min {np.min(p):.3f}, max {np.max(p):.3f} "
              f"(largest combined SE of the ratio {worst_se:.3f})")


def summary(rows: list[dict]) -> str:
    """One paragraph: the pass fractions (points and configurations) and the misses."""
    n = len(rows)
    if not n:
        return "no points measured"
    nd = sum(r["drift_ok"] for r in rows)
    nv = sum(r["var_ok"] for r in rows)
    nb = sum(r["drift_ok"] and r["var_ok"] for r in rows)
    cfg = sorted({r["config"] for r in rows}, key=[r["config"] for r in rows].index)
    good = [c for c in cfg if all(r["drift_ok"] and r["var_ok"] for r in rows
                                  if r["config"] == c)]
    heavy = [r for r in rows if r["beta"] >= 1.0 and r["L"] >= 1000]
    out = (f"{n} points at {len(cfg)} configurations: drift within 4 SE at {nd} "
           f"({nd / n:.0%}), variance within 5 % at {nv} ({nv / n:.0%}), both at {nb} "
           f"({nb / n:.0%}); every point of {len(good)} of {len(cfg)} configurations passes.")
    if heavy:
        nh = sum(r["drift_ok"] and r["var_ok"] for r in heavy)
        out += f" With β ≥ 1 and L ≥ 1000: {nh} of {len(heavy)} points pass."
    ratios = np.array([r["var_ratio"] for r in rows])
    zs = np.array([r["z"] for r in rows])
    out += (f" Variance ratio (table/chain): median {np.median(ratios):.3f}, range "
            f"{ratios.min():.3f}–{ratios.max():.3f}; drift z: RMS {np.sqrt(np.mean(zs ** 2)):.2f}.")
    return out


def _label(r: dict) -> str:
    return (f"d={r['d']}, L={r['L']}, θ={r['theta']:.2f}, β={r['beta']:.2f}, {r['sign']}, "
            f"B={r['batch']}, {r['update']}")


def write_docs(rec: dict) -> None:
    """The table and summary between the page's markers."""
    rows = rec["rows"]
    lines = [BEGIN, "",
             f"Seed {rec['seed']}: of the first {rec['configs']} configurations of the map's "
             f"draw and {rec['heavy']} more with $\\beta \\ge 1$, $L \\ge 1000$, those measured "
             f"({len({r['config'] for r in rows})}; the summary below counts them); moment table "
             f"`rtol = {rec['rtol']:g}`; at least {rec['runs_min']:,} chain runs a point "
             f"({rec['seconds'] / 60:.0f} minutes, the measuring processes' wall times summed, "
             "on 2 shared cores" + ("; the tables' side recomputed by the current code "
                                   "against these runs, `--repredict`" if rec.get("repredicted")
                                   else "") + "). Drift: table minus chain over "
             "their combined standard error ($z$); $z$ of $\\eta\\Phi'$: the same for the "
             "first-order drift (the check's power to see a finite-step error). Variance: "
             "table over chain, with the combined standard error of the ratio.", "",
             "| configuration | $\\rho$ | $\\eta$ | chain runs | draws | drift $z$ | "
             "$z$ of $\\eta\\Phi'$ | variance ratio | kurtosis | |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        ok = "ok" if r["drift_ok"] and r["var_ok"] else "**miss**"
        lines.append(f"| {r['config'].split(' ')[0]} ({_label(r)}) | {r['rho']:+.2f} | "
                     f"{r['eta']:.3g} | {r['runs']:,} | {r['draws']:,} | {r['z']:+.1f} | "
                     f"{r['z_first']:+.1f} | {r['var_ratio']:.3f} ± {r['ratio_se']:.3f} | "
                     f"{r['kurtosis']:.0f} | {ok} |")
    lines += ["", summary(rows), "", END]
    text = PAGE.read_text(encoding="utf-8")
    i, j = text.find(BEGIN), text.find(END)
    if not (i >= 0 and j > i):
        raise SystemExit(f"{PAGE}: markers {BEGIN} / {END} not found")
    text = text[:i] + "\n".join(lines) + text[j + len(END):]
    atomic_write(PAGE, lambda p: Path(p).write_text(text, encoding="utf-8"))
    print(f"wrote {PAGE}")


if __name__ == "__main__":
    main()
