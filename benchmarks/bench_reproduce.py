"""Quick reproduction, cold and warm, in one run: ``python benchmarks/bench_reproduce.py``.

Cold, as on a fresh clone: the committed tree (``git archive HEAD``) unpacked into an empty
directory — no ``__pycache__`` of the package, so no bytecode and no compiled kernels (Numba
caches beside the sources) — and run from there with ``PYTHONPATH`` pointing at it; the
installed dependencies keep their bytecode, as after ``pip install``. Warm: a second run in the
same tree. Each run is ``attnsignal reproduce --quick --profile`` in a fresh output directory,
in a subprocess. Prints, as markdown ready for docs/performance.md, wall time, CPU time (the
coordinating process and the pool's workers) and the profile of each, and the targets of issue
16 (quick ≤ 60 s cold, ≤ 40 s warm). On a busy machine the wall times are inflated; CPU time
and the ratio CPU / (wall × cores) say how much of the machine the run got.

``--against REF`` measures a second commit the same way in the same run (its cold run, then
ours, then its warm run, then ours) and prints our wall time over its: the machines here vary
in speed by 3× or more from day to day, so a time measured on another day is only comparable
through such a ratio — e.g. ``--against d6ab348``, the tree whose quick reproduction issue 16
measured (97 s cold, 98 s warm).

Options: ``--workers N`` (default: the CPU count), ``--keep DIR`` (keep the outputs there),
``--full`` (a quick run to fill the caches, then the full reproduction warm: target ≤ 8
minutes), ``--against REF``.
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


def unpack(ref: str, dest: Path) -> Path:
    """The committed tree ``ref`` of this repository, unpacked into ``dest`` (no caches)."""
    dest.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", ref],
                             check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest


def tree_env(tree: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("NUMBA_CACHE_DIR", "PYTHONPYCACHEPREFIX")}
    env["PYTHONPATH"] = os.pathsep.join([str(tree / "src"), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def run_once(out: Path, env: dict[str, str], quick: bool, workers: int | None,
             profile: bool = True) -> dict:
    cmd = [sys.executable, "-m", "attnsignal", "reproduce", "--quiet", "--out", str(out)]
    if profile:
        cmd.append("--profile")
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
    prof = json.loads((out / "profile.json").read_text()) if profile else None
    cpu_main = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall": wall, "cpu_coordinator": cpu_main,
            "cpu_workers": prof.get("worker_cpu") if prof else None,
            "claims_failed": proc.returncode == 1, "profile": prof, "stdout": proc.stdout}


def markdown_report(runs: list[dict], cores: int, *, full: bool, against: str | None = None) -> str:
    """The runs as markdown, ready for docs/performance.md: one summary table (wall, CPU of
    the coordinator and the workers, CPU / (wall × cores), the target) and each run's
    profile (:func:`attnsignal.reproduce.pipeline.profile_table`)."""
    from attnsignal.reproduce.pipeline import profile_table

    targets = {"cold": 60, "warm": 40, "full, warm": 480}
    lines = [f"Python {sys.version.split()[0]}, {cores} CPU core(s), load average "
             f"{os.getloadavg()[0]:.1f} at the end; `python benchmarks/bench_reproduce.py"
             f"{' --full' if full else ''}{f' --against {against}' if against else ''}`, "
             "one run.", "",
             "| run | wall s | CPU s, coordinator | CPU s, workers | CPU / (wall × cores) | target |",
             "|---|---|---|---|---|---|"]
    for r in runs:
        cpu = r["cpu_coordinator"] + (r["cpu_workers"] or 0.0)
        target = None if r.get("ref") else targets.get(r["label"])
        verdict = "" if target is None else (f"≤ {target} s: " + ("met" if r["wall"] <= target
                                                                   else "missed"))
        workers = "n/a" if r["cpu_workers"] is None else f"{r['cpu_workers']:.1f}"
        name = f"{r['label']} ({r['ref']})" if r.get("ref") else r["label"]
        lines.append(f"| {name} | {r['wall']:.1f} | {r['cpu_coordinator']:.1f} | "
                     f"{workers} | {cpu / (r['wall'] * cores):.0%} | {verdict} |")
    ours = {r["label"]: r for r in runs if not r.get("ref")}
    ratios = [(r["label"], ours[r["label"]]["wall"] / r["wall"]) for r in runs
              if r.get("ref") and r["label"] in ours]
    if ratios:
        lines += ["", f"Wall time of this tree over {against}'s, measured in this run: "
                  + ", ".join(f"{label} **{q:.2f}**" for label, q in ratios) + "."]
    for r in runs:
        if r["profile"] is None:
            continue
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
    ap.add_argument("--against", default=None, metavar="REF",
                    help="also measure this commit, interleaved, and print the ratio")
    args = ap.parse_args()
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    if dirty:
        print("note: uncommitted changes are not measured (the benchmark runs HEAD's tree)")
    base = Path(tempfile.mkdtemp(prefix="bench-reproduce-"))
    cores = os.cpu_count() or 1
    runs = []
    try:
        trees = [(None, unpack("HEAD", base / "tree-head"))]
        if args.against:
            trees.insert(0, (args.against, unpack(args.against, base / "tree-ref")))
        # --full: a quick run fills the caches (compilation is the same), then the full run
        labels = ["warm-up (quick, cold cache)", "full, warm"] if args.full else ["cold", "warm"]
        for label in labels:
            for ref, tree in trees:
                out = base / f"out-{'ref' if ref else 'head'}-{label.split()[0].strip(',')}"
                quick = not args.full or label.startswith("warm-up")
                r = run_once(out, tree_env(tree), quick=quick, workers=args.workers,
                             profile=ref is None)
                r["label"], r["ref"] = label, ref
                runs.append(r)
        print(markdown_report(runs, cores, full=args.full, against=args.against))
        if any(r["claims_failed"] for r in runs):
            print("WARNING: a claim failed in one of the runs")
    finally:
        if args.keep:
            shutil.copytree(base, args.keep, dirs_exist_ok=True, ignore=shutil.ignore_patterns("tree-*"))
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
