"""Quick reproduction, cold and warm, in one run: ``python benchmarks/bench_reproduce.py``.

Cold: an empty Numba cache (``NUMBA_CACHE_DIR``) and an empty bytecode cache
(``PYTHONPYCACHEPREFIX``), as on a fresh clone; warm: the same caches, filled by the cold run.
Each run is ``attnsignal reproduce --quick --profile`` in a fresh output directory, in a
subprocess. Prints, as markdown ready for docs/performance.md, wall time, CPU time (the
coordinating process and the pool's workers) and the profile of each, and the targets of issue 16 (quick ≤ 60 s cold, ≤ 40 s warm, never over
90 s on 2 cores). On a busy machine the wall times are inflated; CPU time and the ratio
CPU / (wall × cores) say how much of the machine the run got.

Options: ``--workers N`` (default: the CPU count), ``--keep DIR`` (keep the outputs there),
``--full`` (a quick run to fill the caches, then the full reproduction warm: target ≤ 8
minutes).
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
    if proc.returncode not in (0, 1):  # 2: bad input, 3: an experiment failed
        sys.stderr.write(proc.stdout[-3000:] + proc.stderr[-6000:])
        raise SystemExit(f"reproduce failed with status {proc.returncode}")
    prof = json.loads((out / "profile.json").read_text())
    cpu_main = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall": wall, "cpu_coordinator": cpu_main, "cpu_workers": prof.get("worker_cpu"),
            "claims_failed": proc.returncode == 1, "profile": prof, "stdout": proc.stdout}


def markdown_report(runs: list[dict], cores: int, *, full: bool) -> str:
    """The runs as markdown, ready for docs/performance.md: one summary table (wall, CPU of
    the coordinator and the workers, CPU / (wall × cores), the target) and each run's
    profile (:func:`attnsignal.reproduce.pipeline.profile_table`)."""
    from attnsignal.reproduce.pipeline import profile_table

    targets = {"cold": 60, "warm": 40, "full, warm": 480}
    lines = [f"Python {sys.version.split()[0]}, {cores} CPU core(s), load average "
             f"{os.getloadavg()[0]:.1f} at the end; `python benchmarks/bench_reproduce.py"
             f"{' --full' if full else ''}`, one run.", "",
             "| run | wall s | CPU s, coordinator | CPU s, workers | CPU / (wall × cores) | target |",
             "|---|---|---|---|---|---|"]
    for r in runs:
        cpu = r["cpu_coordinator"] + (r["cpu_workers"] or 0.0)
        target = targets.get(r["label"])
        verdict = "" if target is None else (f"≤ {target} s: " + ("met" if r["wall"] <= target
                                                                   else "missed"))
        workers = "n/a" if r["cpu_workers"] is None else f"{r['cpu_workers']:.1f}"
        lines.append(f"| {r['label']} | {r['wall']:.1f} | {r['cpu_coordinator']:.1f} | "
                     f"{workers} | {cpu / (r['wall'] * cores):.0%} | {verdict} |")
    for r in runs:
        lines += ["", f"Where the wall time went, {r['label']} (`--profile`):", "",
                  "| phase | wall s | CPU s | note |", "|---|---|---|---|"]
        lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |"
                  for row in profile_table(r["profile"])]
    return "\n".join(lines)


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
        # --full: a quick run fills the caches (compilation is the same), then the full run
        labels = ["warm-up (quick, cold cache)", "full, warm"] if args.full else ["cold", "warm"]
        for label in labels:
            out = base / label.split()[0].strip(",")
            quick = not args.full or label.startswith("warm-up")
            r = run_once(out, env, quick=quick, workers=args.workers)
            r["label"] = label
            runs.append(r)
        print(markdown_report(runs, cores, full=args.full))
        if any(r["claims_failed"] for r in runs):
            print("WARNING: a claim failed in one of the runs")
    finally:
        if args.keep:
            shutil.copytree(base, args.keep, dirs_exist_ok=True)
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
