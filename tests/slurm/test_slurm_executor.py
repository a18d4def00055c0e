"""``--executor slurm`` against a real Slurm: same frame as the local executor, and a job
cancelled mid-sweep loses nothing."""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

import pandas as pd
import pytest

from attnsignal.sweep import load_sweep, run_sweep, sweep_status

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "sweep"))
from sweep_helpers import TINY, spec_dict  # noqa: E402

pytestmark = pytest.mark.timeout(120)


def _options(tmp_path: Path, tag: str, **changes) -> dict:
    """One job of 2 workers on this machine; the scheduler on the loopback interface."""
    d = {"interface": "lo", "walltime": "00:05:00", "memory": "1GB", "cores": 2, "jobs": 1,
         "log_directory": str(tmp_path / "slurm-logs"), "sbatch": [f"--comment={tag}"], "poll_seconds": 0.5}
    d.update(changes)
    return d


def _jobs(tag: str, states: str = "all") -> list[str]:
    """Ids of the jobs this test submitted (tagged by their comment)."""
    p = subprocess.run(["squeue", "-h", "-t", states, "-o", "%i %k"], capture_output=True,
                       text=True, check=True, timeout=30)
    return [line.split()[0] for line in p.stdout.splitlines() if line.split()[1:] == [tag]]


def _reference(tmp_path: Path, spec: dict) -> pd.DataFrame:
    out = tmp_path / "serial"
    assert run_sweep(spec, out, executor="serial", progress=False).ok
    return load_sweep(out)


def test_slurm_sweep_gives_the_local_frame(slurm, tmp_path):
    tag = uuid.uuid4().hex
    out = tmp_path / "slurm"
    report = run_sweep(TINY, out, executor="slurm", chunk_runs=2, progress=False,
                       slurm=_options(tmp_path, tag))
    assert report.ok and report.computed == report.tasks == 8
    assert report.executor.startswith("Slurm: 1 job(s) × 2 worker(s)")
    pd.testing.assert_frame_equal(load_sweep(out), _reference(tmp_path, TINY))
    assert list((tmp_path / "slurm-logs").glob("*.err")), "the job ran under Slurm"
    assert _jobs(tag, "PENDING,RUNNING") == [], "the jobs are cancelled when the sweep ends"


@pytest.mark.slow  # two job start-ups and a replacement: ~40 s on 2 busy cores
def test_scancelled_job_is_replaced_and_the_sweep_loses_nothing(slurm, tmp_path):
    # 16 tasks of ~0.1 s on one job of 2 workers; the job is cancelled once the first
    # task is in: its running tasks die with it and must be recomputed by a new job.
    spec = spec_dict(engine="chain", steps=20_000, record_every=5_000)
    spec["model"]["n_nuisance"] = 40
    tag = uuid.uuid4().hex
    cancelled: list[str] = []
    done_before_cancel: list[int] = []

    def cancel_once(task, outcome):
        if not cancelled:
            cancelled.extend(_jobs(tag, "RUNNING"))
            assert cancelled, "a task finished, so a job is running"
            done_before_cancel.append(1)
            subprocess.run(["scancel", *cancelled], check=True, timeout=30)

    out = tmp_path / "slurm"
    report = run_sweep(spec, out, executor="slurm", chunk_runs=1, progress=False,
                       on_task=cancel_once, slurm=_options(tmp_path, tag))
    assert cancelled
    assert report.ok, report.failed
    assert report.computed == report.tasks == 16
    # a new job did the rest
    logs = {p.stem.split("-")[-1] for p in (tmp_path / "slurm-logs").glob("*.err")}
    assert len(logs - set(cancelled)) >= 1, logs
    st = sweep_status(out)
    assert st.complete
    pd.testing.assert_frame_equal(load_sweep(out), _reference(tmp_path, spec))
    # and re-running the same sweep has nothing left to do
    again = run_sweep(spec, out, executor="slurm", progress=False,
                      slurm=_options(tmp_path, tag))
    assert again.computed == 0 and again.skipped == 16
