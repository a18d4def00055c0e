"""Wall time of one sweep with 1 and with 2 local workers, and the speed-up ratio.

    python benchmarks/bench_sweep.py
    python benchmarks/bench_sweep.py --engine literal --steps 4000 --workers 1 2 4

The sweep: a grid of 2 values of θ × ``--runs`` runs per point, split into tasks of
``--chunk-runs`` runs, run by the local process pool (``run_sweep(executor="local")``) into
a fresh directory. The time is the whole ``run_sweep`` call (pool start-up included). The
frames of every worker count are checked to be identical. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

from attnsignal.sweep import SweepSpec, load_sweep, run_sweep


def make_spec(engine: str, steps: int, runs: int, d: int) -> SweepSpec:
    return SweepSpec.from_dict({
        "sweep": {"seed": 5, "runs": runs, "steps": steps, "engine": engine,
                  "record_every": max(1, steps // 50)},
        "model": {"d": d, "n_informative": 10, "n_nuisance": 200, "theta": 0.5},
        "step": {"eta0": 0.05, "k0": 1000, "power": 0.7},
        "grid": {"model.theta": [0.5, 1.0]},
    })


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--engine", default="chain")
    ap.add_argument("--steps", type=int, default=None,
                    help="default: 40000 (chain), 1500 (literal, projected)")
    ap.add_argument("--runs", type=int, default=16, help="runs per grid point")
    ap.add_argument("--chunk-runs", type=int, default=2)
    ap.add_argument("--d", type=int, default=100)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    a = ap.parse_args(argv)
    steps = a.steps or (40000 if a.engine == "chain" else 1500)
    spec = make_spec(a.engine, steps, a.runs, a.d)
    times: dict[int, float] = {}
    frames: dict[int, pd.DataFrame] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for w in a.workers:
            out = Path(tmp) / f"w{w}"
            t0 = time.perf_counter()
            report = run_sweep(spec, out, executor="local", workers=w,
                               chunk_runs=a.chunk_runs, progress=False)
            times[w] = time.perf_counter() - t0
            if not report.ok:
                print(f"sweep failed: {report.failed}", file=sys.stderr)
                return 1
            frames[w] = load_sweep(out)
    first = a.workers[0]
    for w in a.workers[1:]:
        pd.testing.assert_frame_equal(frames[w], frames[first], check_exact=True)
    tasks = 2 * -(-a.runs // a.chunk_runs)
    result = {
        "engine": a.engine, "d": a.d, "R": 10, "N": 200, "steps": steps,
        "points": 2, "runs_per_point": a.runs, "tasks": tasks,
        "wall_s": {str(w): round(t, 3) for w, t in times.items()},
        "speedup_vs_first": {str(w): round(times[first] / t, 3) for w, t in times.items()},
        "identical_frames": True,
        "cpu_count": os.cpu_count(), "python": platform.python_version(),
    }
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
