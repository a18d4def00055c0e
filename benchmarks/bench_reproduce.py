"""Quick reproduction, cold and warm, in one run: ``python benchmarks/bench_reproduce.py``.

Cold: an empty Numba cache (``NUMBA_CACHE_DIR``) and an empty bytecode cache
(``PYTHONPYCACHEPREFIX``), as on a fresh clone; warm: the same caches, filled by the cold run.
Each run is ``attnsignal reproduce --quick --profile`` in a fresh output directory, in a
subprocess. Prints wall time, CPU time (the coordinating process and the pool's workers) and
the profile of each, and the targets of issue 16 (quick ≤ 60 s cold, ≤ 40 s warm, never over
90 s on 2 cores). On a busy machine the wall times are inflated; CPU time and the ratio
CPU / (wall × cores) say how much of the machine the run got.

Options: ``--workers N`` (default: the CPU count), ``--keep DIR`` (keep the outputs there),
``--full`` (the full reproduction instead, warm cache only: target ≤ 8 minutes).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_once(out: Path, env: dict[str, str], quick: bool, workers: int | None) -> dict:
    cmd = [sys.executable, "-m", "attnsignal", "reproduce", "--profile", "--quiet",
           "--out", str(out)]
    if quick:
        cmd.append("--quick")
    if workers:
        cmd += ["--workers", str(workers)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1):
        sys.stderr.write(proc.stdout + proc.stderr)
        raise SystemExit(f"reproduce failed with status {proc.returncode}")
    prof = json.loads((out / "profile.json").read_text())
    cpu_main = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall": wall, "cpu_coordinator": cpu_main, "cpu_workers": prof.get("worker_cpu"),
            "claims_failed": proc.returncode == 1, "profile": prof, "stdout": proc.stdout}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--keep", type=Path, default=None)
    ap.add_argument("--full", action="store_true")
    args = ap.parse_args()
    base = Path(tempfile.mkdtemp(prefix="bench-reproduce-"))
    env = dict(os.environ)
    env["NUMBA_CACHE_DIR"] = str(base / "numba-cache")
    env["PYTHONPYCACHEPREFIX"] = str(base / "pycache")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    cores = os.cpu_count() or 1
    runs = []
    try:
        labels = ["warm-up (cold cache)", "full, warm"] if args.full else ["cold", "warm"]
        for label in labels:
            out = base / label.split()[0].strip(",")
            r = run_once(out, env, quick=not args.full, workers=args.workers)
            r["label"] = label
            runs.append(r)
        print(f"python {sys.version.split()[0]}, {cores} CPU core(s), load average "
              f"{os.getloadavg()[0]:.1f} at the end")
        print(f"{'run':22s} {'wall s':>8s} {'CPU s (coord + workers)':>26s} {'CPU/(wall·cores)':>17s}")
        for r in runs:
            cpu = r["cpu_coordinator"] + (r["cpu_workers"] or 0.0)
            print(f"{r['label']:22s} {r['wall']:8.1f} {r['cpu_coordinator']:10.1f} + "
                  f"{(r['cpu_workers'] or 0.0):6.1f} = {cpu:6.1f} {cpu / (r['wall'] * cores):16.0%}")
        for r in runs:
            print(f"\n--- profile, {r['label']} ---")
            tail = r["stdout"].split("where the wall time went", 1)
            print(("where the wall time went" + tail[1]) if len(tail) == 2 else r["stdout"][-3000:])
        if args.full:
            print(f"target: full ≤ 480 s: {runs[-1]['wall']:.0f} s")
        else:
            print(f"targets: cold ≤ 60 s ({runs[0]['wall']:.0f} s), warm ≤ 40 s "
                  f"({runs[1]['wall']:.0f} s), never > 90 s")
        if any(r["claims_failed"] for r in runs):
            print("WARNING: a claim failed in one of the runs")
    finally:
        if args.keep:
            shutil.copytree(base, args.keep, dirs_exist_ok=True)
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
