"""Cost of the effective dynamics against the chain runs it predicts, as ratios measured in one run.

Two configurations (issue 27, item 5):

* **E1's size** — d = 100 and 1000, R = 500, N = 10 000, θ = 0.25, η_k = 0.03 (1 + k/1000)^−1,
  30 runs × 80 000 steps: target effective dynamics ≤ 5 % of the chain's time. The chain is
  timed on ``--e1-runs`` × ``--e1-steps`` (its cost is linear in runs × steps; a long run on a
  shared machine measures the load more than the engine) and scaled to 30 × 80 000;
* **small L** — d = 250, R = 30, N = 400 (L = 430), θ = 0.8, η_k = 0.05 (1 + k/300)^−0.75,
  8 000 steps from a uniform start: target effective dynamics ≤ the time of 16 chain runs of
  the same length (timed directly, as are 128).

The effective dynamics runs with its defaults (importance-sampled moments to ``rtol`` 0.03,
8 replicate tables, tolerance 0.01 in mean |ρ|) after one warm-up call (compiled kernels cached),
and its own split is printed: moments (draws, grid extent), evolution (pooled and replicate
tables, and any extra draws the tolerance asked for). Times are wall and CPU seconds (all
threads); on a shared machine the CPU ratio is the steadier one. ``--cold`` first times one call in a
subprocess with an empty Numba cache (the compile cost a fresh clone pays once).

``--split`` also prints the small-L call's CPU seconds by part (draws, sums, evolutions);
``--sources`` the small-L prediction's Monte-Carlo error by source (the drift's and the
diffusion's moments, the drift at the smallest steps) and how much of the drift's residual
variance after its first two control variates the softmax weights' power sums (its other three)
leave.

Measured (nine runs, load 1.1–1.6 on 2 cores, a Xeon with AVX-512): small L 0.75–1.04× the
CPU of the 16 runs (median 0.87×) — the tolerance rule stops at 36 024 draws at the visited
nodes there (seed 0), and those draws with their sums cost most of it
(``docs/effective-dynamics.md``, "Cost"); E1 (one run) 0.76 % (d = 100) and 1.43 %
(d = 1000) of the chain.

    PYTHONPATH=src python benchmarks/effective_cost.py [--cold] [--skip-e1] [--split] [--sources]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import attnsignal as asg
from attnsignal.theory.effective import effective_dynamics

E1 = asg.ModelConfig(d=100, n_informative=500, n_nuisance=10_000, theta=0.25)
E1_STEP = asg.StepSize(eta0=0.03, k0=1000.0, power=1.0)
SMALL = asg.ModelConfig(d=250, n_informative=30, n_nuisance=400, theta=0.8)
SMALL_STEP = asg.StepSize(eta0=0.05, k0=300.0, power=0.75)
ROOT = Path(__file__).resolve().parents[1]


def _chain(model, step, steps: int, runs: int, every: int) -> tuple[float, float]:
    """Wall and CPU seconds (all threads) of ``runs`` chain runs."""
    t0, c0 = time.perf_counter(), time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        asg.simulate(model, step, steps=steps, runs=runs, engine="chain", record_every=every,
                     seed=7)
    return time.perf_counter() - t0, time.process_time() - c0


def _effective(model, step, steps: int, every: int, **kw):
    """Wall and CPU seconds of the effective dynamics, and the result."""
    t0, c0 = time.perf_counter(), time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ed = effective_dynamics(model, step, steps=steps, record_every=every, **kw)
    return time.perf_counter() - t0, time.process_time() - c0, ed


def _describe(ed) -> str:
    t = ed.timings
    d = ed.diagnostic
    return (f"moments {t['moments_s']:.1f} s ({int(t['draws']):,} draws a node), evolution "
            f"{t['evolve_s']:.1f} s ({int(t['blocks'])} blocks); verdict {d.verdict}, "
            f"SE of mean |ρ| ≤ {d.stderr:.2g}")


def split() -> None:
    """The small-L call's CPU seconds by part, under ``cProfile`` with a process-time clock (the
    worker threads' time lands in the part that waits on them): the reduced draws
    (``fused_pool``), their power sums at the nodes and steps (``_jump_sums``), the evolutions of
    the pooled and replicate tables (``_evolve_all``), and the rest."""
    import cProfile
    import pstats

    prof = cProfile.Profile(time.process_time)
    c0 = time.process_time()
    prof.enable()
    _effective(SMALL, SMALL_STEP, 8000, 100)
    prof.disable()
    total = time.process_time() - c0
    stats = pstats.Stats(prof).stats  # type: ignore[attr-defined]
    parts = {"draws": "fused_pool", "sums": "_jump_sums", "evolutions": "_evolve_all"}
    got = {k: sum(v[3] for f, v in stats.items() if f[2] == name) for k, name in parts.items()}
    rest = total - sum(got.values())
    print("small L, CPU-s by part: " + ", ".join(f"{k} {v:.2f}" for k, v in got.items())
          + f", rest {rest:.2f}; total {total:.2f}")


def sources() -> None:
    """The small-L prediction's Monte-Carlo error by source, at 16 000 draws a node
    (``rtol=None``, no tolerance): the largest standard error of the mean |ρ| over the records
    from the 8 replicate tables as they are, with the drift's coefficient ``a`` alone varying
    between them (the diffusion's ``b`` pooled in each), with ``b`` alone varying, and with ``a``
    varying at the smallest third of the table's steps alone."""
    import dataclasses

    import numpy as np

    from attnsignal.theory.effective import (_evolve_all, _initial_law, record_schedule,
                                             schedule_etas)

    steps, every = 8000, 100
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ed = effective_dynamics(SMALL, SMALL_STEP, steps=steps, record_every=every,
                                n_samples=16_000, rtol=None, tolerance=None)
    tab = ed.moments
    z = ed.z_grid
    h = float(z[1] - z[0])
    p0 = _initial_law(z, h, SMALL.d, None)
    ks = record_schedule(steps, every)
    eta = schedule_etas(SMALL_STEP, np.arange(steps)) * SMALL.noise_std ** 2

    def se(ra, rb) -> float:
        ev = _evolve_all(dataclasses.replace(tab, replicate_a=ra, replicate_b=rb), p0, z, h,
                         eta, ks, 1.0, None, steps)
        return float(np.nanmax(ev.se_abs))

    ra, rb = tab.replicate_a, tab.replicate_b
    pa = np.broadcast_to(tab.a, ra.shape).copy()
    pb = np.broadcast_to(tab.b, rb.shape).copy()
    low = pa.copy()
    third = max(1, tab.etas.size // 3)
    low[:, :, :third] = ra[:, :, :third]
    print(f"small L, SE of the mean |ρ| at 16 000 draws a node: all {se(ra, rb):.2g}; drift "
          f"alone {se(ra, pb):.2g} (its {third} smallest steps alone {se(low, pb):.2g}); "
          f"diffusion alone {se(pa, rb):.2g}")
    print("  the drift's residual variance after its first two controls that the softmax "
          "weights' power sums Σα², Σα³, Σα⁴ leave (20 000 draws):")
    for z0 in (0.2, 0.4):
        for eta0 in tab.etas[[0, third]]:
            left = _power_sum_share(float(np.tanh(z0)), float(eta0))
            print(f"    z = {z0}, η = {eta0:.4f}: {left:.2f}")


def _power_sum_share(rho: float, eta: float, n: int = 20_000) -> float:
    """At alignment ``rho`` and standardised step ``eta`` of the small-L model: the weighted
    residual variance ``Σw²r²`` of ``Δz`` regressed on the drift's two controls and on the
    draws' ``Σα_j^k`` (``k = 2, 3, 4``, the softmax weights at ``rho``), over that of the two
    controls alone, on ``n`` importance-sampled draws (seed 3) — how much of that variance the
    drift's three further control variates (those sums, with their exact means) leave."""
    import numpy as np

    from attnsignal.theory.moments import _key
    from attnsignal.theory.reduced import fused_pool, score_tilt

    m = SMALL.standardized()
    R = m.n_informative
    pool, w, draws = fused_pool(m, np.array([rho]), n, _key(3, "power sums"), 0,
                                score_tilt(m), keep=True)
    assert draws is not None
    s = np.asarray(draws.a).copy()
    s[:, :R] += m.theta * rho
    x = m.beta * s
    al = np.exp(x - x.max(axis=1, keepdims=True))
    al /= al.sum(axis=1, keepdims=True)
    sums = [np.sum(al ** k, axis=1) for k in (2, 3, 4)]
    gq, ge, u2 = pool[0].T
    sr = np.sqrt(1.0 - rho * rho)
    a1, eg = 1.0 + eta * gq, eta * ge
    y = np.arctanh((rho * a1 + sr * eg) / np.sqrt(a1 * a1 + eg * eg + eta * eta * u2))
    sw = np.sqrt(w)

    def left(cols: list) -> float:
        X = np.column_stack([np.ones(n), eg / sr, eta * gq] + cols)
        coef = np.linalg.lstsq(X * sw[:, None], y * sw, rcond=None)[0]
        return float(np.sum(w * w * (y - X @ coef) ** 2))

    return left(sums) / left([])


def cold() -> None:
    code = ("import time, warnings; t0 = time.perf_counter(); import attnsignal as asg; "
            "from attnsignal.theory.effective import effective_dynamics; "
            "warnings.simplefilter('ignore'); "
            "m = asg.ModelConfig(d=250, n_informative=30, n_nuisance=400, theta=0.8); "
            "effective_dynamics(m, asg.StepSize(0.05, k0=300.0, power=0.75), steps=200, "
            "n_samples=400); print(time.perf_counter() - t0)")
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "NUMBA_CACHE_DIR": tmp, "PYTHONPATH": str(ROOT / "src")}
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, check=True)
    print(f"cold (empty Numba cache, import + compile + a 200-step call): "
          f"{float(out.stdout.strip()):.1f} s")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cold", action="store_true")
    ap.add_argument("--skip-e1", action="store_true")
    ap.add_argument("--split", action="store_true", help="also the small-L call's CPU by part")
    ap.add_argument("--sources", action="store_true",
                    help="also the small-L Monte-Carlo error by source (drift, diffusion)")
    ap.add_argument("--e1-runs", type=int, default=2)
    ap.add_argument("--e1-steps", type=int, default=20_000)
    args = ap.parse_args()
    if args.cold:
        cold()
    _effective(SMALL, SMALL_STEP, 200, 50)  # warm the kernels
    _chain(SMALL, SMALL_STEP, 100, 2, 50)
    t_ed, c_ed, ed = _effective(SMALL, SMALL_STEP, 8000, 100)
    t16, c16 = _chain(SMALL, SMALL_STEP, 8000, 16, 100)
    t128, c128 = _chain(SMALL, SMALL_STEP, 8000, 128, 100)
    print(f"small L (d=250, L=430, 8 000 steps): effective dynamics {t_ed:.2f} s "
          f"({c_ed:.2f} CPU-s) [{_describe(ed)}]; chain 16 runs {t16:.2f} s ({c16:.2f} CPU-s), "
          f"128 runs {t128:.2f} s ({c128:.2f} CPU-s); effective / 16 runs = {t_ed / t16:.2f} "
          f"wall, {c_ed / c16:.2f} CPU (target <= 1)")
    t_n, c_n, ed_n = _effective(SMALL, SMALL_STEP, 8000, 100, tolerance=None)
    print(f"  the same with tolerance=None: {t_n:.2f} s ({c_n:.2f} CPU-s) [{_describe(ed_n)}]; "
          f"/ 16 runs = {t_n / t16:.2f} wall, {c_n / c16:.2f} CPU")
    if args.split:
        split()
    if args.sources:
        sources()
    if args.skip_e1:
        return
    for d in (100, 1000):
        model = E1.replace(d=d)
        t_ed, c_ed, ed = _effective(model, E1_STEP, 80_000, 400)
        tc, cc = _chain(model, E1_STEP, args.e1_steps, args.e1_runs, 400)
        scale = (30 * 80_000) / (args.e1_runs * args.e1_steps)
        print(f"E1 d={d}: effective dynamics {t_ed:.1f} s ({c_ed:.1f} CPU-s) [{_describe(ed)}]; "
              f"chain {args.e1_runs} x {args.e1_steps:,} steps {tc:.1f} s ({cc:.1f} CPU-s) -> "
              f"30 x 80 000 ≈ {tc * scale:.0f} s; effective / chain = "
              f"{100 * t_ed / (tc * scale):.2f} % wall, {100 * c_ed / (cc * scale):.2f} % CPU "
              f"(target <= 5 %)")


if __name__ == "__main__":
    main()
