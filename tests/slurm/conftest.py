"""The Slurm tests run against a real single-node Slurm (``.ci/start-slurm``).

``.ci/run`` starts it before the suite; when it is not running, this fixture tries the same
script without installing anything (root only) and stops the daemons it started at the end
(unless jobs of another session are still queued).
When Slurm cannot run, every test that needs it is skipped with the reason.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / ".ci" / "start-slurm"


def _up() -> bool:
    if shutil.which("sinfo") is None:
        return False
    try:
        p = subprocess.run(["sinfo", "-h", "-N", "-o", "%T"], capture_output=True, text=True,
                           timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return p.returncode == 0 and p.stdout.split()[:1] != [] and p.stdout.split()[0].rstrip(
        "*~#$@+-^!%") in ("idle", "mixed", "allocated", "completing")


@pytest.fixture(scope="session")
def slurm() -> str:
    """A running Slurm; the reason it is not otherwise (the test is skipped)."""
    pytest.importorskip("dask_jobqueue", reason="dask-jobqueue is not installed")
    started = False
    if not _up():
        if os.geteuid() != 0 or shutil.which("slurmctld") is None:
            pytest.skip("no running Slurm, and slurm-wlm is not installed or this is not "
                        "root: run .ci/start-slurm (as root) to start a single-node Slurm")
        p = subprocess.run([str(SCRIPT), "--no-install"], capture_output=True, text=True,
                           timeout=60)
        if p.returncode != 0 or not _up():
            pytest.skip(f"Slurm could not be started: {p.stderr.strip()[-300:]}")
        started = True
    yield "up"
    if started:  # stop what this session started, unless someone else's jobs are queued
        q = subprocess.run(["squeue", "-h", "-o", "%i"], capture_output=True, text=True,
                           timeout=30)
        if q.returncode == 0 and not q.stdout.strip():
            subprocess.run([str(SCRIPT), "--stop"], capture_output=True, timeout=30)
