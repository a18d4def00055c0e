"""Speed of the baselines' exact samplers against their literal versions, measured in one run.

    python benchmarks/bench_baselines.py             # d = 100, R = 50, N = 1000, ~1 minute
    python benchmarks/bench_baselines.py --quick     # a few seconds, noisier

For each method: seconds per sample of the exact sampler (``attnsignal.baseline``, log-spaced
records) and of the literal one (tokens materialised, ``O(L d)`` per sample), and their ratio.
Also PCA's cost with one BLAS thread against the default (the PCA sampler pins one thread; see
``attnsignal/_blas.py``).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import attnsignal as asg
from attnsignal.baselines.literal import literal_baseline


def _time(fn, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--d", type=int, default=100)
    ap.add_argument("--R", type=int, default=50)
    ap.add_argument("--N", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=8)
    args = ap.parse_args(argv)
    model = asg.ModelConfig(d=args.d, n_informative=args.R, n_nuisance=args.N, theta=0.5)
    exact_samples = 20_000 if args.quick else 200_000
    lit_samples = 20 if args.quick else 200
    repeats = 1 if args.quick else 3
    print(f"d = {args.d}, R = {args.R}, N = {args.N}, {args.runs} runs")
    print(f"{'method':8s} {'exact s/sample':>15s} {'literal s/sample':>17s} {'ratio':>9s}")
    for method in ("mean", "oracle", "pca", "oja"):
        asg.baseline(model, method, samples=10, runs=1)  # compile / warm up
        ex = _time(lambda: asg.baseline(model, method, samples=exact_samples, runs=args.runs,
                                        record="log"), repeats) / (exact_samples * args.runs)
        ks = [0, lit_samples]
        lit = _time(lambda: literal_baseline(model, method, samples=lit_samples, runs=args.runs,
                                             record=ks, step=None if method != "oja" else
                                             asg.baselines.oja.default_step(model)),
                    repeats) / (lit_samples * args.runs)
        print(f"{method:8s} {ex:15.3e} {lit:17.3e} {lit / ex:9.0f}×")
    from attnsignal import _blas

    M = np.random.default_rng(0).standard_normal((args.runs, args.d, args.d))
    M = M @ M.transpose(0, 2, 1)
    from attnsignal.baselines.pca import leading

    default = _time(lambda: leading(M, M[:, 0]), repeats)
    with _blas.single_blas_thread():
        one = _time(lambda: leading(M, M[:, 0]), repeats)
    print(f"PCA eigenvector of {args.runs} {args.d}×{args.d} matrices: default BLAS threads "
          f"{default:.3f} s, one thread {one:.3f} s ({default / one:.1f}×)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
