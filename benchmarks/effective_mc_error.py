"""Is the effective dynamics' reported Monte-Carlo error right? Reported against actual, by seeds.

At each configuration and draw count, the effective dynamics is built from ``--seeds``
independent moment seeds with exactly ``n`` draws a node (``rtol=None``, ``tolerance=None``:
the estimator itself, no adaptive stopping). The *actual* Monte-Carlo error of the predicted
mean ``|ρ|`` at each record is the standard deviation of the ``--seeds`` predictions; the
*reported* one is the call's ``mean_abs_stderr`` there, as the root mean square over the
seeds. Printed per (configuration, draws):

* ``rec``: at the record where the actual spread is largest, reported / actual;
* ``max``: the diagnostic's ``stderr`` (the largest over the records, mean over the seeds)
  against the largest actual spread over the records — what the tolerance rule uses;
* ``records``: the median and range of reported / actual over the records whose actual spread
  is at least a fifth of the largest.

The same for the predicted 10 % and 90 % quantiles of ``|ρ|`` (``quantile_stderr``).
A ratio's own sampling error with ``S`` seeds is about ``1/√(2(S − 1))`` (18 % at 16 seeds).
``--tolerance`` instead runs the defaults (``rtol`` 0.03, tolerance 0.01) per seed and prints
the draws they stopped at and the actual spread there against the share of the tolerance the
rule allows (``_MC_SHARE·tolerance / 1.96``).

Configurations: ``small`` (d = 250, L = 430, θ = 0.8, η_k = 0.05(1 + k/300)^−0.75, 8 000
steps), ``e1`` (E1 at d = 1 000: L = 10 500, θ = 0.25, η_k = 0.03(1 + k/1000)^−1, 80 000
steps), ``beta`` (d = 420, L = 1 560, θ = 0.7, β = 1.1, η_k = 0.045(1 + k/250)^−0.75,
12 000 steps).

    PYTHONPATH=src nice -n 10 python benchmarks/effective_mc_error.py [--configs small e1 beta]
        [--draws 4000 16000] [--seeds 16] [--first-seed 1000] [--replicates 8] [--tolerance]
        [--save raw.npz]
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

import attnsignal as asg
from attnsignal.theory.effective import _MC_SHARE, DEFAULT_TOLERANCE, effective_dynamics

#: the quantile levels of ``|ρ|`` whose reported error is measured too
_LEVELS = [0.1, 0.9]

CONFIGS = {
    "small": (asg.ModelConfig(d=250, n_informative=30, n_nuisance=400, theta=0.8),
              asg.StepSize(eta0=0.05, k0=300.0, power=0.75), 8000, 100),
    "e1": (asg.ModelConfig(d=1000, n_informative=500, n_nuisance=10_000, theta=0.25),
           asg.StepSize(eta0=0.03, k0=1000.0, power=1.0), 80_000, 1000),
    "beta": (asg.ModelConfig(d=420, n_informative=60, n_nuisance=1500, theta=0.7, beta=1.1),
             asg.StepSize(eta0=0.045, k0=250.0, power=0.75), 12_000, 200),
}


def _run(name: str, seed: int, **kw):
    model, step, steps, every = CONFIGS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return effective_dynamics(model, step, steps=steps, record_every=every, seed=seed, **kw)


def measure(name: str, n: int, seeds: int, replicates: int, first: int = 1000
            ) -> dict[str, np.ndarray]:
    """The predictions and reported errors of ``seeds`` moment seeds (``first, first + 1, …``)
    at ``n`` draws a node."""
    pred, se, top, reps, q, qse = [], [], [], [], [], []
    for s in range(first, first + seeds):
        ed = _run(name, s, n_samples=n, rtol=None, tolerance=None,
                  replicates=replicates)
        q.append(ed.quantile(_LEVELS))
        qse.append(ed.quantile_stderr(_LEVELS))
        pred.append(ed.mean_abs)
        se.append(ed.mean_abs_stderr)
        top.append(float(np.nanmax(ed.mean_abs_stderr)))
        reps.append(ed.replicate_mean_abs)
    return {"pred": np.array(pred), "se": np.array(se), "top": np.array(top),
            "reps": np.array(reps), "q": np.array(q), "qse": np.array(qse)}


def _worst_and_live(actual: np.ndarray, reported: np.ndarray
                    ) -> tuple[int, np.ndarray]:
    """The record whose actual spread is largest, and the per-record ratio reported / actual
    over the records whose actual spread is a fifth of that or more."""
    i = int(np.argmax(actual))
    live = actual >= 0.2 * actual[i]
    return i, reported[live] / actual[live]


def quantile_ratios(r: dict[str, np.ndarray]) -> list[tuple[float, float, float]]:
    """Per level of :data:`_LEVELS`: ``(actual at the worst record, reported / actual there,
    median reported / actual over the records whose actual spread is a fifth of the
    largest or more)`` of the predicted quantiles of ``|ρ|``."""
    out = []
    for i in range(len(_LEVELS)):
        actual = r["q"][:, i].std(axis=0, ddof=1)
        reported = np.sqrt(np.mean(r["qse"][:, i] ** 2, axis=0))
        j, ratio = _worst_and_live(actual, reported)
        out.append((float(actual[j]), float(reported[j] / actual[j]), float(np.median(ratio))))
    return out


def summarise(r: dict[str, np.ndarray]) -> tuple[float, float, float, float, float, float]:
    """``(actual at the worst record, reported there, max reported / max actual, median,
    low, high of the per-record ratio)``."""
    actual = r["pred"].std(axis=0, ddof=1)
    reported = np.sqrt(np.mean(r["se"] ** 2, axis=0))
    i, ratio = _worst_and_live(actual, reported)
    return (float(actual[i]), float(reported[i]), float(r["top"].mean() / actual.max()),
            float(np.median(ratio)), float(ratio.min()), float(ratio.max()))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    ap.add_argument("--draws", nargs="+", type=int, default=[4000, 16_000])
    ap.add_argument("--seeds", type=int, default=16)
    ap.add_argument("--replicates", type=int, default=8)
    ap.add_argument("--first-seed", type=int, default=1000)
    ap.add_argument("--tolerance", action="store_true")
    ap.add_argument("--save", default=None)
    args = ap.parse_args()
    raw: dict[str, np.ndarray] = {}
    if args.tolerance:
        for name in args.configs:
            t0 = time.perf_counter()
            eds = [_run(name, args.first_seed + s) for s in range(args.seeds)]
            pred = np.array([ed.mean_abs for ed in eds])
            draws = [int(ed.diagnostic.draws) for ed in eds]
            rep = np.array([ed.diagnostic.stderr for ed in eds])
            approx = np.array([ed.diagnostic.approximation_error for ed in eds])
            cpu = [ed.timings["total_s"] for ed in eds]
            allowed = _MC_SHARE * DEFAULT_TOLERANCE / 1.96
            print(f"{name}: tolerance {DEFAULT_TOLERANCE:g}, {args.seeds} seeds: draws {min(draws):,}–"
                  f"{max(draws):,} (median {int(np.median(draws)):,}); actual spread (largest "
                  f"over the records) {pred.std(axis=0, ddof=1).max():.4f} against the "
                  f"allowed {allowed:.4f}; reported SE median {np.median(rep):.4f} "
                  f"[{np.min(rep):.4f}, {np.max(rep):.4f}]; approximation error median "
                  f"{np.median(approx):.4f}; flagged "
                  f"{sum(ed.diagnostic.verdict != 'ok' for ed in eds)} of {len(eds)}; "
                  f"call {np.median(cpu):.2f} s (median) "
                  f"[{time.perf_counter() - t0:.0f} s]", flush=True)
            raw[f"{name}_tol_pred"] = pred
        if args.save:
            np.savez(args.save, **raw)
        return
    print("config | draws | actual (worst record) | reported there | ratio | max reported "
          "/ max actual | per-record ratio median [range]")
    for name in args.configs:
        for n in args.draws:
            t0 = time.perf_counter()
            r = measure(name, n, args.seeds, args.replicates, args.first_seed)
            a, rep, mx, med, lo, hi = summarise(r)
            print(f"{name} | {n:,} | {a:.4f} | {rep:.4f} | {rep / a:.2f} | {mx:.2f} | "
                  f"{med:.2f} [{lo:.2f}, {hi:.2f}]   ({time.perf_counter() - t0:.0f} s, "
                  f"K = {args.replicates}, {args.seeds} seeds)", flush=True)
            for lv, (qa, qr, qm) in zip(_LEVELS, quantile_ratios(r)):
                print(f"    quantile {lv:g} of |ρ|: actual {qa:.4f} at the worst record, "
                      f"reported / actual {qr:.2f} there, median over the records {qm:.2f}",
                      flush=True)
            for k, v in r.items():
                raw[f"{name}_{n}_{k}"] = v
    if args.save:
        np.savez(args.save, **raw)


if __name__ == "__main__":
    main()
