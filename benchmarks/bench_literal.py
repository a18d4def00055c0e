"""The literal engine's cost per sample against the naive code a user would write.

    python benchmarks/bench_literal.py
    python benchmarks/bench_literal.py --d 100 --N 200 --runs 30

The naive reference (:func:`attnsignal.bench.naive_literal`) loops in Python over runs,
steps and samples, draws ``X`` with one ``numpy`` call per sample and takes the gradient with
three mat-vecs. Both are timed in the same process; the printed ratio is naive / literal
(above 1: the engine is faster than the naive loop).
"""

from __future__ import annotations

import argparse
import sys

from attnsignal.bench import format_bench, literal_vs_naive


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--d", type=int, default=1000)
    ap.add_argument("--R", type=int, default=50)
    ap.add_argument("--N", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--steps", type=int, default=None,
                    help="steps per measurement (default: 2 at d >= 500, else 20)")
    a = ap.parse_args(argv)
    configs = [(a.d, a.R, a.N)]
    if argv is None and len(sys.argv) == 1:  # default: also a small-d configuration
        configs.append((50, 5, 45))
    for d, R, N in configs:
        rows = literal_vs_naive(d=d, n_informative=R, n_nuisance=N, runs=a.runs,
                                batch=a.batch,
                                steps=a.steps if a.steps is not None else (2 if d >= 500 else 20))
        print(format_bench(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
