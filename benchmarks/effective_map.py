"""The accuracy map of the effective dynamics (``attnsignal validate``), timed, and with
``--docs`` its section of ``docs/effective-dynamics.md`` regenerated.

``--reverdict`` re-evaluates a finished map's verdicts with the current diagnostic, without its
chain runs: each configuration's prediction is made again (:func:`attnsignal.validate.plan.
predict`, same settings and seeds: the same schedule, moment table and mean ``|ρ|``, checked
bit for bit against the stored prediction) and its verdict, causes and diagnostic replace the
row's; ``silent_miss`` is recomputed. One JSON per configuration under ``OUT/reverdict/``
(cheapest first; a stopped call resumes); ``--reverdict cached`` renders those already there
and keeps the stored verdict of the others (named in the output).

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


def reverdict(result, compute: bool = True, costly_first: bool = False):
    """The map's table with each configuration's verdict, causes and diagnostic from the current
    code (module docstring); returns ``(table, recomputed indices, bit-identical count)``."""
    import math

    import numpy as np

    from attnsignal.validate.accuracy_map import map_row  # noqa: F401  (the row's fields)
    from attnsignal.validate.plan import Prediction, predict

    out, s = Path(result.out), result.settings
    (out / "reverdict").mkdir(exist_ok=True)
    table = result.table.copy()
    cost = table["ed_seconds"].fillna(0.0) + table["plan_cpu"].fillna(0.0)
    done, same = [], 0
    for i in cost.sort_values(ascending=not costly_first).index:
        row = table.loc[i]
        index = int(row["index"])
        path = out / "reverdict" / f"c{index:03d}.json"
        if not path.exists():
            if not compute:
                continue
            stored = _stored_prediction(out, index, float(row["final_pred"]))
            cfg = Prediction.from_dict(stored).config
            t0 = time.perf_counter()
            p = predict(cfg, runs=s.runs, budget=s.budget, max_steps=s.max_steps,
                        n_samples=s.n_samples, seed=s.seeds(index)[1],
                        max_blocks=s.max_blocks, diffusion_scale=s.diffusion_scale)
            rec = {"index": index, "verdict": p.verdict, "causes": "; ".join(p.causes),
                   "diagnostic": p.extra.get("diagnostic", {}),
                   "identical": bool(np.array_equal(np.asarray(stored["mean_abs"]),
                                                    np.asarray(p.mean_abs))),
                   "seconds": time.perf_counter() - t0}
            path.write_text(json.dumps(rec, indent=1) + "\n")
            print(f"c{index:03d}: {rec['verdict']} (was {row['verdict']}), predicted error "
                  f"{rec['diagnostic'].get('predicted_error', math.nan):.4f}, excess "
                  f"{row['excess']:+.4f}, identical {rec['identical']}, "
                  f"{rec['seconds']:.0f} s", flush=True)
        rec = json.loads(path.read_text())
        table.loc[i, "verdict"] = rec["verdict"]
        table.loc[i, "causes"] = rec["causes"]
        table.loc[i, "flagged"] = rec["verdict"] in ("flagged", "refused")
        for k, v in rec["diagnostic"].items():
            if f"diag_{k}" in table.columns or isinstance(v, (int, float)):
                table.loc[i, f"diag_{k}"] = v
        done.append(index)
        same += bool(rec["identical"])
    tol = s.tolerance
    table["silent_miss"] = [bool(not f and not e <= tol)
                            for f, e in zip(table["flagged"], table["excess"])]
    return table, sorted(done), same


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", action="store_true",
                    help=f"write the map's section into {PAGE.relative_to(ROOT)}")
    ap.add_argument("--out", default="results/effective_map", help="the map's directory")
    ap.add_argument("--reverdict", nargs="?", const="all", choices=("all", "cached"),
                    help="the finished map's verdicts from the current diagnostic (no chain "
                         "runs): 'all' computes what is missing, 'cached' renders what is there")
    ap.add_argument("--costly-first", action="store_true",
                    help="with --reverdict: the costliest configurations first (a second "
                         "process from the other end)")
    args, rest = ap.parse_known_args()
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
    from attnsignal.validate.outputs import docs_section, plot_map, update_docs

    result = MapResult.load(args.out)
    table, done, same = reverdict(result, compute=args.reverdict == "all",
                                  costly_first=args.costly_first)
    result = dataclasses.replace(result, table=table)
    s = result.summary()
    left = sorted(set(int(i) for i in table["index"]) - set(done))
    print(f"re-verdicted {len(done)} of {len(table)} configurations ({same} with a bit-identical "
          f"mean |rho|); flagged {s['flagged']}; beyond {s['tolerance']:g}: "
          f"{s['beyond_tolerance']}, flagged {s['beyond_flagged']}, silent misses "
          f"{s['silent_misses']}" + (f"; stored verdicts kept: {left}" if left else ""))
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
        note = (f"\n\nVerdicts: the current diagnostic's, re-evaluated from the stored "
                f"configurations by `python benchmarks/effective_map.py --reverdict --docs` "
                f"({len(done)} of {len(table)} configurations, {same} of them with the stored "
                f"mean $|\\rho|$ reproduced bit for bit"
                + (f"; the earlier rule's verdict kept at {', '.join(f'c{i:03d}' for i in left)}"
                   if left else "") + "). "
                f"{s['flagged']} configurations are flagged; {s['beyond_tolerance']} lie "
                f"beyond {s['tolerance']:g} + 3 SE"
                + (f", {s['beyond_flagged']} of them flagged" if s['beyond_tolerance'] else
                   " (so no silent miss is possible)") + ".\n")
        plot_map(result, Path(args.out) / "map_reverdict.png")
        from attnsignal.validate.outputs import END
        section = section.replace("\n" + END, note + "\n" + END)
        update_docs(PAGE, section, Path(args.out) / "map_reverdict.png", FIGURE)
        print(f"wrote the section of {PAGE.relative_to(ROOT)} and {FIGURE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
