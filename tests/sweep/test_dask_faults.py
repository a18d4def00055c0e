"""A Dask worker process killed while it runs a task: the sweep still completes, with the
same frame (Dask reschedules the task; its shard is written once, atomically)."""

from __future__ import annotations

import os
import signal
import threading
import time

import pandas as pd
import pytest

from attnsignal.sweep import load_sweep, run_sweep

from sweep_helpers import TINY, spec_dict

distributed = pytest.importorskip("distributed")

#: 4 tasks of one run each (the literal engine, 3000 steps: ~1 s of CPU a task, five times the
#: 0.2 s the test waits between seeing a task start and killing its worker).
LONG = spec_dict(runs=2, steps=3000, record_every=500)
LONG["model"].update(d=10, n_informative=2, n_nuisance=6)
LONG["grid"] = {"model.theta": [0.5, 1.0]}


def _executing(dask_worker) -> int:
    return len(dask_worker.state.executing)


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_killed_dask_worker_does_not_change_the_result(tmp_path):
    ref_out = tmp_path / "ref"
    assert run_sweep(LONG, ref_out, executor="serial", chunk_runs=2, progress=False).ok
    ref = load_sweep(ref_out)

    out = tmp_path / "dask"
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        reports, errors = [], []

        def sweep() -> None:
            try:
                reports.append(run_sweep(LONG, out, executor="dask", chunk_runs=1,
                                         scheduler=cluster.scheduler_address, progress=False))
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        thread = threading.Thread(target=sweep)
        thread.start()
        victim = None
        deadline = time.monotonic() + 60
        while victim is None:
            assert time.monotonic() < deadline and thread.is_alive(), errors
            busy = [w for w, n in client.run(_executing).items() if n]
            if busy:
                victim = busy[0]
            else:
                time.sleep(0.05)
        time.sleep(0.2)  # well inside the ~1 s task
        assert client.run(_executing, workers=[victim])[victim] == 1
        pid = client.run(os.getpid, workers=[victim])[victim]
        os.kill(pid, signal.SIGKILL)
        thread.join(timeout=120)
        assert not thread.is_alive() and not errors, errors
    report = reports[0]
    assert report.ok and report.computed == 4, report.failed
    pd.testing.assert_frame_equal(load_sweep(out), ref, check_exact=True)


def test_dask_task_failures_are_reported(tmp_path):
    """A task that raises on a Dask worker (after its retries) is listed with its point."""
    from attnsignal.sweep.tasks import plan_tasks
    from attnsignal.sweep import SweepSpec

    out = tmp_path / "s"
    blocked = plan_tasks(SweepSpec.from_dict(TINY), out, 4)[1]
    os.makedirs(blocked.path)
    report = run_sweep(TINY, out, executor="dask", workers=2, chunk_runs=4, retries=1,
                       progress=False)
    assert not report.ok and report.computed == 3
    assert [f.point for f in report.failed] == [1]
    assert "IsADirectoryError" in report.failed[0].error or "directory" in report.failed[0].error
