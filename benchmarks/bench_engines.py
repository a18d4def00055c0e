"""Speed of every registered engine at one configuration, ratios measured in one run.

    python benchmarks/bench_engines.py            # reference configuration, ~1 minute
    python benchmarks/bench_engines.py --quick    # a few seconds, noisier
    python benchmarks/bench_engines.py --d 100 --runs 8 --check

Targets (d = 1000, R = 50, N = 1000, 30 runs, B = 1): chain ≥ 250× and projected ≥ 20×
faster per sample than literal; a chain update (all runs) ≤ 0.5× the time numpy's default
Generator takes to draw the 3·L·runs normals it consumes. ``--check`` exits with status 1
when a target is missed. The compiled engines use NUMBA_NUM_THREADS threads.
"""

from __future__ import annotations

import argparse
import json
import sys

from attnsignal.bench import format_bench, run_bench


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer steps and repeats")
    ap.add_argument("--d", type=int, default=1000)
    ap.add_argument("--R", type=int, default=50)
    ap.add_argument("--N", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    ap.add_argument("--check", action="store_true", help="exit 1 if a target is missed")
    a = ap.parse_args(argv)
    rows = run_bench(a.quick, d=a.d, n_informative=a.R, n_nuisance=a.N, runs=a.runs,
                     batch=a.batch)
    print(json.dumps(rows, indent=2) if a.json else format_bench(rows))
    missed = [r["name"] for r in rows if r["ok"] is False]
    return 1 if (a.check and missed) else 0


if __name__ == "__main__":
    sys.exit(main())
