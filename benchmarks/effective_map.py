"""The accuracy map of the effective dynamics (``attnsignal validate``), timed, and with
``--docs`` its section of ``docs/effective-dynamics.md`` regenerated.

``--reverdict`` recomputes a finished map's prediction-dependent columns with the current code,
without new chain runs: each configuration's prediction is made again at its stored schedule,
run length and records (:func:`attnsignal.validate.accuracy_map.repredicted_row`: the same
moment table's settings and seeds; whether the mean ``|ρ|`` came out bit for bit as stored is
reported) and compared with its stored chain runs, read back from ``OUT/chain`` — the gap and
its excess over 3 SE, the band coverage, the verdict, causes and diagnostic, the effective
dynamics' cost. One JSON per configuration (row and prediction) under
``OUT/repredicted-<hash of the prediction's sources>/`` (cheapest first; a stopped call
resumes, a code change recomputes); ``--reverdict cached`` renders those already there and
keeps the stored row of the others (named in the output). With ``--docs`` the table, figure
and summary of the page are regenerated from the recomputed rows.

Runs ``attnsignal validate --out OUT [options]`` (every option after the script's own is the
command's: ``--configs``, ``--seed``, ``--runs``, ``--executor``, ...), measures its wall time
and the CPU seconds of this process and its children (the pool's workers), prints the summary
and the configurations that miss, and with ``--docs`` writes the summary, the misses, the table
and the figure (``docs/figures/effective_map.png``) between the page's markers.

    PYTHONPATH=src python benchmarks/effective_map.py --docs            # the map of the docs
    PYTHONPATH=src python benchmarks/effective_map.py --configs 8 --runs 32 --out /tmp/m
    PYTHONPATH=src python benchmarks/effective_map.py --docs --executor slurm --jobs 8
    PYTHONPATH=src python benchmarks/effective_map.py --out results/effective_map --reverdict --docs

A finished map in OUT is read back (nothing is recomputed); a partial one resumes, so a map
can be grown by prefixes (``--configs 20``, then ``40``, ``60``: configuration ``i`` of a seed
does not depend on the count). Every call appends its wall and CPU seconds and the load average
at its start and end to ``OUT/benchmark_calls.json``; the time reported (and written by
``--docs``) is the sum over the calls that computed part of this map.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "effective-dynamics.md"
FIGURE = ROOT / "docs" / "figures" / "effective_map.png"


def _cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _rows(out: Path) -> int:
    """Configurations finished in ``out`` (their stored rows)."""
    return len(list((out / "rows").glob("*.json")))


def _record_call(out: Path, wall: float, cpu: float, load0: float, configs: int,
                 new_rows: int) -> list[dict]:
    """Append this call to ``out/benchmark_calls.json`` and return the calls that finished
    configurations (a call that only read a finished map back adds nothing)."""
    path = out / "benchmark_calls.json"
    try:
        calls = json.loads(path.read_text())
    except (OSError, ValueError):
        calls = []
    calls.append({"wall": wall, "cpu": cpu, "load_start": load0,
                  "load_end": os.getloadavg()[0], "configs": configs, "new_rows": new_rows,
                  "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
    path.write_text(json.dumps(calls, indent=1) + "\n")
    computed = [c for c in calls if c.get("new_rows", 1) > 0] or calls[-1:]
    return computed


def _stored_prediction(out: Path, index: int, final_pred: float) -> dict:
    """The stored prediction of configuration ``index`` whose last mean ``|ρ|`` is the row's."""
    found = []
    for path in sorted((out / "predictions").glob(f"c{index:03d}-*.json")):
        data = json.loads(path.read_text())
        found.append(data)
        if data["mean_abs"] and data["mean_abs"][-1] == final_pred:
            return data
    if not found:
        raise SystemExit(f"{out}: no stored prediction of configuration {index}")
    return found[-1]


#: the sources a prediction depends on (a recomputed row is cached under their hash, so a code
#: change recomputes it and a stopped call resumes)
_SOURCES = ("theory/*.py", "validate/plan.py", "validate/accuracy_map.py", "one_step.py",
            "model.py", "config.py", "schedules.py", "engines/**/*.py")


def _code_key() -> str:
    from attnsignal.persistence import source_digest

    return source_digest(_SOURCES, exclude=("theory/advisor.py",))[:12]  # advisor: not used


def reverdict(result, compute: bool = True, costly_first: bool = False):
    """The map's table with every prediction-dependent column from the current code (module
    docstring); returns ``(table, recomputed indices, bit-identical count, seconds)``."""
    import math

    import numpy as np
    import pandas as pd

    from attnsignal.validate.accuracy_map import repredicted_row
    from attnsignal.validate.plan import Prediction

    out, s = Path(result.out), result.settings
    cache = out / f"repredicted-{_code_key()}"
    cache.mkdir(exist_ok=True)
    table = result.table.copy()
    cost = table["ed_seconds"].fillna(0.0) + table["plan_cpu"].fillna(0.0)
    rows, done, same, seconds, warm = {}, [], 0, 0.0, False
    for i in cost.sort_values(ascending=not costly_first).index:
        old = table.loc[i].to_dict()
        index = int(old["index"])
        path = cache / f"c{index:03d}.json"
        if not path.exists():
            if not compute:
                continue
            stored = _stored_prediction(out, index, float(old["final_pred"]))
            if not warm:  # the first prediction compiles the kernels: not its cost
                repredicted_row(out, Prediction.from_dict(stored), s, old)
                warm = True
            t0 = time.perf_counter()
            row, pred = repredicted_row(out, Prediction.from_dict(stored), s, old)
            rec = {"row": row, "prediction": pred.to_dict(),
                   "identical": bool(np.array_equal(np.asarray(stored["mean_abs"]),
                                                    np.asarray(pred.mean_abs))),
                   "seconds": time.perf_counter() - t0}
            path.write_text(json.dumps(rec, indent=1, allow_nan=True) + "\n")
            print(f"c{index:03d}: {row['verdict']} (was {old['verdict']}), predicted error "
                  f"{row.get('diag_predicted_error', math.nan):.4f}, excess "
                  f"{row['excess']:+.4f} (was {old['excess']:+.4f}), band {row['band']:.3f} "
                  f"(was {old['band']:.3f}), identical {rec['identical']}, "
                  f"{rec['seconds']:.0f} s", flush=True)
        rec = json.loads(path.read_text())
        rows[i] = rec["row"]
        done.append(index)
        same += bool(rec["identical"])
        seconds += float(rec["seconds"])
    new = pd.DataFrame([rows.get(i, table.loc[i].to_dict()) for i in table.index])
    for col in table.columns:  # a column the stored rows had and the new ones lack
        if col not in new.columns:
            new[col] = table[col].to_numpy()
    return new.sort_values("index", ignore_index=True), sorted(done), same, seconds


def edgeworth_check(result, zs=(1.0, 2.0, 3.0), floor: float = 0.002, more_runs: int = 0,
                    more_seed: int = 4242, more_budget: float = 1e9) -> list[dict]:
    """The diagnostic's approximation error against the part of each configuration's gap that
    Monte-Carlo error does not explain (from the recomputed rows: ``--reverdict`` first).

    At record ``r`` the gap ``g_r`` (predicted minus simulated mean ``|ρ|``) has standard error
    ``σ_r = √(s_r² + p_r²)`` (the runs' and the prediction's own); its part beyond Monte-Carlo
    error at ``z`` standard errors is ``D_z = max_r (|g_r| − z σ_r)₊``. The diagnostic covers the
    configuration at ``z`` when ``D_z ≤ approximation_error`` (which holds the factor
    ``_EDGEWORTH_FACTOR`` on the dropped cumulants' estimate, and the step's discreteness).
    Prints the fractions covered, over all configurations and over those whose approximation
    error is at least ``floor`` (where the factor decides a verdict), and returns one dict per
    configuration. With ``more_runs``, the configurations where the factor matters — an
    approximation error of at least ``floor``, or single steps in more than 10 % of the blocks
    — are compared with ``more_runs`` fresh chain runs (seed ``more_seed``; fewer where they
    would cost more than ``more_budget`` chain token-samples, never fewer than the stored runs)
    instead of the stored ones."""
    import math

    import numpy as np

    from attnsignal.validate.accuracy_map import chain_store, stored_runs
    from attnsignal.validate.plan import Prediction

    out, s = Path(result.out), result.settings
    cache = out / f"repredicted-{_code_key()}"
    if not any(cache.glob("c*.json")):
        raise SystemExit(f"{out}: no recomputed rows for the current code (run --reverdict first)")
    rows = []
    for path in sorted(cache.glob("c*.json")):
        rec = json.loads(path.read_text())
        pred = Prediction.from_dict(rec["prediction"])
        if pred.refused:
            continue
        d = pred.extra.get("diagnostic", {})
        approx = float(d.get("approximation_error", 0.0))
        single = int(d.get("single_step_blocks", 0)) > 0.1 * max(int(d.get("blocks", 1)), 1)
        if more_runs and (approx >= floor or single):
            import warnings

            import attnsignal as asg

            c = pred.config
            n_runs = int(max(s.runs, min(more_runs, more_budget // (
                pred.steps * c.batch * (c.n_tokens + 32)))))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = asg.simulate(c.model, pred.step, steps=pred.steps, runs=n_runs,
                                   batch=c.batch, update=c.update, engine="chain",
                                   seed=more_seed, record_every=pred.record_every)
            if not np.array_equal(np.asarray(res.steps), pred.record_steps):
                raise SystemExit(f"c{c.index:03d}: the fresh runs' records are not the "
                                 "prediction's")
            values = np.abs(np.asarray(res.alignment, dtype=np.float64))
        else:
            values, _steps = stored_runs(chain_store(out, pred, s)[1])
        g = np.abs(values.mean(axis=0) - pred.mean_abs)
        sim_se = values.std(axis=0, ddof=1) / math.sqrt(values.shape[0])
        pse = (np.nan_to_num(pred.mean_abs_se) if pred.mean_abs_se is not None
               else np.zeros_like(g))
        sig = np.sqrt(sim_se ** 2 + pse ** 2)
        row = {"index": pred.config.index, "approx": approx,
               "disc": float(d.get("discreteness_error", 0.0)), "runs": values.shape[0],
               "single": int(d.get("single_step_blocks", 0)), "blocks": int(d.get("blocks", 0)),
               "verdict": pred.verdict, "gap": float(g.max())}
        for z in zs:
            row[f"D{z:g}"] = float(np.max(np.maximum(g - z * sig, 0.0)))
        rows.append(row)
    big = [r for r in rows if r["approx"] >= floor]
    print(f"{len(rows)} configurations recomputed; {len(big)} with approximation error "
          f">= {floor:g}")
    for z in zs:
        cov = sum(r[f"D{z:g}"] <= r["approx"] for r in rows)
        cov_big = sum(r[f"D{z:g}"] <= r["approx"] for r in big)
        print(f"z = {z:g}: approximation error >= D_z at {cov} of {len(rows)} "
              f"({cov / max(len(rows), 1):.0%}); at {cov_big} of {len(big)} of those >= {floor:g}")
    print("\n| # | runs | blocks of one step | approximation error | of it discreteness | "
          "largest gap | D_1 | D_2 | D_3 | verdict |\n|---|---|---|---|---|---|---|---|---|---|")
    for r in sorted(rows, key=lambda r: (-r["approx"], -r.get("D2", 0))):
        if r["approx"] >= floor or r.get("D2", 0) > r["approx"]:
            print(f"| {r['index']} | {r['runs']} | {r['single']} of {r['blocks']} | "
                  f"{r['approx']:.4f} | {r['disc']:.4f} | {r['gap']:.4f} | "
                  + " | ".join(f"{r[f'D{z:g}']:.4f}" for z in zs) + f" | {r['verdict']} |")
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", action="store_true",
                    help=f"write the map's section into {PAGE.relative_to(ROOT)}")
    ap.add_argument("--out", default="results/effective_map", help="the map's directory")
    ap.add_argument("--reverdict", nargs="?", const="all", choices=("all", "cached"),
                    help="the finished map's prediction-dependent columns from the current "
                         "code against its stored chain runs (no new runs): 'all' computes "
                         "what is missing, 'cached' renders what is there")
    ap.add_argument("--costly-first", action="store_true",
                    help="with --reverdict: the costliest configurations first (a second "
                         "process from the other end)")
    ap.add_argument("--edgeworth-check", action="store_true",
                    help="after --reverdict: the diagnostic's approximation error against "
                         "each gap's part beyond Monte-Carlo error")
    ap.add_argument("--more-runs", type=int, default=0,
                    help="with --edgeworth-check: fresh chain runs (seed 4242) where the "
                         "approximation error matters")
    args, rest = ap.parse_known_args()
    if args.edgeworth_check:
        from attnsignal.validate import MapResult

        edgeworth_check(MapResult.load(args.out), more_runs=args.more_runs)
        return 0
    if args.reverdict:
        return _reverdict_main(args)
    from attnsignal.cli import main as cli
    from attnsignal.validate import BOX, MapResult
    from attnsignal.validate.outputs import docs_section, update_docs

    load0, rows0 = os.getloadavg()[0], _rows(Path(args.out))
    t0, c0 = time.perf_counter(), _cpu()
    code = cli(["validate", "--out", args.out, *rest])
    wall, cpu = time.perf_counter() - t0, _cpu() - c0
    if code not in (0, 1):  # 1: a target missed — still a map to report
        return code
    result = MapResult.load(args.out)
    workers = result.cpu_seconds.get("workers")
    if workers is not None:  # the pool's workers are not this process's children
        cpu = max(cpu, float(workers) + float(result.cpu_seconds.get("coordinator") or 0.0))
    calls = _record_call(Path(args.out), wall, cpu, load0, len(result.table),
                         _rows(Path(args.out)) - rows0)
    wall, cpu = sum(c["wall"] for c in calls), sum(c["cpu"] for c in calls)
    loads = [x for c in calls for x in (c["load_start"], c["load_end"])]
    print(f"\nwall {wall:.0f} s, CPU {cpu:.0f} s (this process and its workers; {len(calls)} "
          f"call(s)) on {os.cpu_count()} cores; load average {min(loads):.1f}–{max(loads):.1f}")
    misses = result.misses()
    print(f"{len(misses)} configuration(s) miss a target")
    if args.docs:
        command = "python benchmarks/effective_map.py --docs" + "".join(
            f" {shlex.quote(a)}" for a in rest)
        section = docs_section(result, figure="figures/effective_map.png", command=command,
                               box=BOX.describe(),
                               timing=(wall, cpu, os.cpu_count(), (min(loads), max(loads))))
        update_docs(PAGE, section, result.out / "map.png", FIGURE)
        print(f"wrote the section of {PAGE.relative_to(ROOT)} and {FIGURE.relative_to(ROOT)}")
    return 0


def _reverdict_main(args) -> int:
    import dataclasses

    from attnsignal.validate import BOX, MapResult
    from attnsignal.validate.outputs import END, docs_section, plot_map, update_docs

    result = MapResult.load(args.out)
    table, done, same, seconds = reverdict(result, compute=args.reverdict == "all",
                                           costly_first=args.costly_first)
    result = dataclasses.replace(result, table=table)
    s = result.summary()
    left = sorted(set(int(i) for i in table["index"]) - set(done))
    print(f"recomputed {len(done)} of {len(table)} configurations ({same} with a bit-identical "
          f"mean |rho|; {seconds:.0f} s summed); excess <= {s['tolerance']:g}: "
          f"{s['excess_fraction']:.1%}; band 80 +- 8 %: {s['band_fraction']:.1%}; flagged "
          f"{s['flagged']}; beyond {s['tolerance']:g}: {s['beyond_tolerance']}, flagged "
          f"{s['beyond_flagged']}, silent misses {s['silent_misses']}"
          + (f"; stored rows kept: {left}" if left else ""))
    for _, r in result.misses().iterrows():
        print(f"  miss c{int(r['index']):03d}: excess {r['excess']:+.4f}, band {r['band']:.3f}, "
              f"{r['verdict']}: {r['causes']}")
    if args.docs:
        calls = json.loads((Path(args.out) / "benchmark_calls.json").read_text())
        computed = [c for c in calls if c.get("new_rows", 1) > 0] or calls[-1:]
        wall, cpu = sum(c["wall"] for c in computed), sum(c["cpu"] for c in computed)
        loads = [x for c in computed for x in (c["load_start"], c["load_end"])]
        section = docs_section(result, figure="figures/effective_map.png",
                               command=("python benchmarks/effective_map.py --docs "
                                        f"--configs {len(table)} --seed {result.settings.seed} "
                                        f"--runs {result.settings.runs} "
                                        f"--budget {result.settings.budget:g}"),
                               box=BOX.describe(),
                               timing=(wall, cpu, os.cpu_count(), (min(loads), max(loads))))
        note = (f"\n\nEvery prediction-dependent column above (the prediction, its verdict and "
                f"diagnostic, the excess, the band, the effective dynamics' cost) is the current "
                f"code's, recomputed against the stored chain runs without new ones by\n\n"
                "```bash\npython benchmarks/effective_map.py --out DIR --reverdict --docs\n```\n\n"
                f"({len(done)} of {len(table)} configurations, {seconds / 60:.0f} minutes of wall "
                f"time summed over them; {same} predictions came out bit for bit as stored"
                + (f"; the stored row kept at {', '.join(f'c{i:03d}' for i in left)}"
                   if left else "") + "). The chain runs' cost and the time above are the "
                "map's first computation's.\n")
        plot_map(result, Path(args.out) / "map_reverdict.png")
        section = section.replace("\n" + END, note + "\n" + END)
        update_docs(PAGE, section, Path(args.out) / "map_reverdict.png", FIGURE)
        print(f"wrote the section of {PAGE.relative_to(ROOT)} and {FIGURE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
