"""The accuracy map of the effective dynamics (``attnsignal validate``), timed, and with
``--docs`` its section of ``docs/effective-dynamics.md`` regenerated.

Runs ``attnsignal validate --out OUT [options]`` (every option after the script's own is the
command's: ``--configs``, ``--seed``, ``--runs``, ``--executor``, ...), measures its wall time
and the CPU seconds of this process and its children (the pool's workers), prints the summary
and the configurations that miss, and with ``--docs`` writes the summary, the misses, the table
and the figure (``docs/figures/effective_map.png``) between the page's markers.

    PYTHONPATH=src python benchmarks/effective_map.py --docs            # the map of the docs
    PYTHONPATH=src python benchmarks/effective_map.py --configs 8 --runs 32 --out /tmp/m
    PYTHONPATH=src python benchmarks/effective_map.py --docs --executor slurm --jobs 8

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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", action="store_true",
                    help=f"write the map's section into {PAGE.relative_to(ROOT)}")
    ap.add_argument("--out", default="results/effective_map", help="the map's directory")
    args, rest = ap.parse_known_args()
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


if __name__ == "__main__":
    sys.exit(main())
