"""Resuming: a killed sweep, corrupted shards, a lost manifest, failing tasks."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from attnsignal.cli import main
from attnsignal.sweep import (
    SweepSpec, SweepStoreError, load_sweep, run_sweep, sweep_status,
)
from attnsignal.sweep.tasks import plan_tasks

from sweep_helpers import TINY, spec_dict

#: 12 tasks of one run each (the literal engine, ~0.4 s of CPU a task): long enough to be
#: killed part-way, short enough that the killed, resumed and reference sweeps stay cheap.
KILL_TOML = """\
[sweep]
seed = 3
runs = 6
steps = 1000
engine = "literal"
record_every = 250
[model]
d = 10
n_informative = 2
n_nuisance = 6
theta = 1.0
[step]
eta0 = 0.05
k0 = 100
power = 0.7
[grid]
"model.theta" = [0.5, 1.0]
"""


def _shards(out: Path) -> list[Path]:
    return sorted((out / "shards").glob("*.parquet"))


@pytest.mark.timeout(180)
def test_sigkilled_sweep_resumes_to_the_uninterrupted_frame(tmp_path):
    spec_path = tmp_path / "kill.toml"
    spec_path.write_text(KILL_TOML)
    out = tmp_path / "killed"
    cmd = [sys.executable, "-m", "attnsignal", "sweep", str(spec_path), "--out", str(out),
           "--workers", "1", "--chunk-runs", "1", "--quiet"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while len(list((out / "shards").glob("*.sha256"))) < 3:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the sweep did not start"
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL
    st = sweep_status(out)
    assert 3 <= len(st.done) < 12 and not st.complete
    with pytest.raises(SweepStoreError, match="incomplete"):
        load_sweep(out)

    report = run_sweep(spec_path, out, executor="serial", progress=False)
    assert report.ok and report.skipped >= 3 and report.computed >= 1
    assert report.skipped + report.computed == 12
    assert sweep_status(out).complete
    resumed = load_sweep(out)

    ref_out = tmp_path / "ref"
    assert run_sweep(spec_path, ref_out, executor="serial", chunk_runs=3, progress=False).ok
    ref = load_sweep(ref_out)
    pd.testing.assert_frame_equal(resumed, ref, check_exact=True)
    assert not resumed.duplicated(["point", "run", "step"]).any()
    assert len(resumed) == 2 * 6 * 5
    assert len(_shards(out)) == 12 and not list(out.rglob("*.tmp"))


def test_corrupt_shards_are_detected_and_recomputed(tmp_path, tiny_reference, capsys):
    out = tmp_path / "s"
    assert run_sweep(TINY, out, executor="serial", chunk_runs=1, progress=False).ok
    files = _shards(out)
    data = files[0].read_bytes()
    files[0].write_bytes(data[: len(data) // 2])  # truncated
    data = bytearray(files[5].read_bytes())
    data[len(data) // 2] ^= 0xFF  # altered
    files[5].write_bytes(bytes(data))
    Path(str(files[9]) + ".sha256").unlink()  # unverifiable (sidecar lost)
    data = bytearray(files[12].read_bytes())  # altered, sidecar "fixed": the manifest knows
    data[100] ^= 0x01
    files[12].write_bytes(bytes(data))
    Path(str(files[12]) + ".sha256").write_text(__import__("hashlib").sha256(data).hexdigest())

    st = sweep_status(out)
    assert sorted(s.file for s in st.corrupt) == sorted(
        str(f.relative_to(out)) for f in (files[0], files[5], files[9], files[12]))
    assert len(st.done) == 12 and not st.missing
    assert main(["sweep", "status", str(out)]) == 1
    text = capsys.readouterr().out
    assert "corrupt" in text and "incomplete" in text
    with pytest.raises(SweepStoreError):
        load_sweep(out)

    report = run_sweep(TINY, out, executor="serial", progress=False)  # chunk_runs remembered
    assert report.ok and report.corrupt == 4 and report.computed == 4 and report.skipped == 12
    assert main(["sweep", "status", str(out)]) == 0
    pd.testing.assert_frame_equal(load_sweep(out), tiny_reference, check_exact=True)


def test_a_lost_manifest_is_rebuilt_and_shards_recovered_from_sidecars(tmp_path, tiny_reference):
    out = tmp_path / "s"
    assert run_sweep(TINY, out, executor="serial", chunk_runs=2, progress=False).ok
    (out / "sweep.json").unlink()
    (_shards(out)[3]).unlink()
    report = run_sweep(TINY, out, executor="serial", chunk_runs=2, progress=False)
    assert report.ok and report.recovered == 7 and report.computed == 1
    pd.testing.assert_frame_equal(load_sweep(out), tiny_reference, check_exact=True)


def test_a_shard_filed_under_another_points_name_is_detected_and_recomputed(tmp_path,
                                                                           tiny_reference):
    """Issue 15.7: a valid shard of point 3 (with its own, matching sidecar) copied over the
    shard of point 0 with the same run range, after sweep.json is deleted, is not recovered
    under the wrong name: it is found misfiled, recomputed, and the frame is the reference."""
    out = tmp_path / "s"
    assert run_sweep(TINY, out, executor="serial", chunk_runs=2, progress=False).ok
    man = json.loads((out / "sweep.json").read_text())
    by = {(e["point"], e["first_run"]): out / e["file"] for e in man["shards"]}
    victim, donor = by[(0, 0)], by[(3, 0)]
    for suffix in ("", ".sha256"):
        Path(str(victim) + suffix).write_bytes(Path(str(donor) + suffix).read_bytes())
    (out / "sweep.json").unlink()

    report = run_sweep(TINY, out, executor="serial", chunk_runs=2, progress=False)
    assert report.ok and report.corrupt == 1 and report.computed == 1
    assert report.recovered == 7
    frame = load_sweep(out)
    assert not frame.duplicated(["point", "run", "step"]).any()
    pd.testing.assert_frame_equal(frame, tiny_reference, check_exact=True)


def test_load_sweep_refuses_a_misfiled_shard_that_the_manifest_trusts(tmp_path):
    """The same copy with the manifest kept and its checksum updated: status says corrupt
    (misfiled) and load_sweep refuses rather than label point 3's rows point 0."""
    out = tmp_path / "s"
    assert run_sweep(TINY, out, executor="serial", chunk_runs=2, progress=False).ok
    man = json.loads((out / "sweep.json").read_text())
    by = {(e["point"], e["first_run"]): e for e in man["shards"]}
    victim, donor = by[(0, 2)], by[(3, 2)]
    for suffix in ("", ".sha256"):
        (out / (victim["file"] + suffix)).write_bytes((out / (donor["file"] + suffix)).read_bytes())
    victim["sha256"] = donor["sha256"]
    (out / "sweep.json").write_text(json.dumps(man))
    st = sweep_status(out)
    assert [s.file for s in st.corrupt] == [victim["file"]]
    assert "misfiled" in st.corrupt[0].detail and "point 3" in st.corrupt[0].detail
    with pytest.raises(SweepStoreError, match="1 corrupt"):
        load_sweep(out)


def test_a_manifest_that_lost_checksums_recovers_them(tmp_path, tiny_reference):
    out = tmp_path / "s"
    assert run_sweep(TINY, out, executor="serial", chunk_runs=2, progress=False).ok
    man = json.loads((out / "sweep.json").read_text())
    for s in man["shards"]:
        s["sha256"] = None  # as if the coordinator was killed before writing them down
    (out / "sweep.json").write_text(json.dumps(man))
    report = run_sweep(TINY, out, executor="serial", progress=False)
    assert report.ok and report.computed == 0 and report.recovered == 8
    assert all(s["sha256"] for s in json.loads((out / "sweep.json").read_text())["shards"])


def test_failed_tasks_are_reported_with_their_point_and_retried(tmp_path, tiny_reference,
                                                               tiny_toml, capsys):
    out = tmp_path / "s"
    spec = SweepSpec.from_dict(TINY)
    tasks = plan_tasks(spec, out, 2)
    blocked = [t for t in tasks if t.point == 2][0]
    Path(blocked.path).mkdir(parents=True)  # the shard cannot be written there
    rc = main(["sweep", str(tiny_toml), "--out", str(out), "--workers", "2",
               "--chunk-runs", "2", "--quiet"])
    err = capsys.readouterr().err
    assert rc == 1
    assert "1 task(s) failed" in err and "point 2 (model.theta=1.0, model.n_nuisance=4)" in err
    st = sweep_status(out)
    not_done = [s for s in st.shards if s.state != "done"]
    assert len(st.done) == 7 and [s.point for s in not_done] == [2]
    assert st.failed and st.failed[0]["point"] == 2

    os.rmdir(blocked.path)
    rc = main(["sweep", str(tiny_toml), "--out", str(out), "--quiet"])
    assert rc == 0
    assert "1 computed, 7 already done" in capsys.readouterr().out
    pd.testing.assert_frame_equal(load_sweep(out), tiny_reference, check_exact=True)
    assert sweep_status(out).failed == []


def test_a_different_spec_is_refused_in_the_same_directory(tmp_path, tiny_toml, capsys):
    out = tmp_path / "s"
    assert run_sweep(TINY, out, executor="serial", progress=False).ok
    with pytest.raises(SweepStoreError, match="different sweep"):
        run_sweep(spec_dict(seed=8), out, executor="serial", progress=False)
    other = tmp_path / "other.toml"
    other.write_text(tiny_toml.read_text().replace("seed = 7", "seed = 8"))
    assert main(["sweep", str(other), "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "different sweep" in err[0]


def test_rerunning_a_finished_sweep_does_nothing(tmp_path):
    out = tmp_path / "s"
    assert run_sweep(TINY, out, executor="serial", chunk_runs=4, progress=False).ok
    before = {p: p.stat().st_mtime_ns for p in out.rglob("*.parquet")}
    report = run_sweep(TINY, out, executor="local", workers=2, progress=False)
    assert report.ok and report.computed == 0 and report.skipped == 4
    assert {p: p.stat().st_mtime_ns for p in out.rglob("*.parquet")} == before


def test_a_killed_local_pool_worker_breaks_the_pool_and_the_tasks_are_resubmitted(tmp_path):
    spec_path = tmp_path / "kill.toml"
    spec_path.write_text(KILL_TOML)
    killed: list[int] = []

    def kill_first_worker(task, outcome) -> None:
        if not killed:
            pid = int(outcome.worker.rpartition(":")[2])
            killed.append(pid)
            os.kill(pid, signal.SIGKILL)

    out = tmp_path / "s"
    report = run_sweep(spec_path, out, executor="local", workers=2, chunk_runs=1,
                       progress=False, on_task=kill_first_worker)
    assert killed and report.ok and report.computed == 12, report.failed
    ref_out = tmp_path / "ref"
    assert run_sweep(spec_path, ref_out, executor="serial", chunk_runs=6, progress=False).ok
    pd.testing.assert_frame_equal(load_sweep(out), load_sweep(ref_out), check_exact=True)


def test_two_sweeps_cannot_run_in_one_directory(tmp_path):
    from attnsignal.sweep.store import locked

    out = tmp_path / "s"
    out.mkdir()
    with locked(out):
        with pytest.raises(SweepStoreError, match="another sweep is running"):
            run_sweep(TINY, out, executor="serial", progress=False)
    assert run_sweep(TINY, out, executor="serial", progress=False).ok


@pytest.mark.timeout(300)
def test_sigterm_stops_the_sweep_with_one_line_saying_how_to_resume(tmp_path):
    """SIGTERM (scancel, kill) part-way: the workers are stopped, the finished shards kept, one
    line on stderr says so and how to resume (no traceback, no multiprocessing "leaked
    semaphore" warning), exit status 128 + 15; the same command then finishes the sweep."""
    spec_path = tmp_path / "term.toml"
    spec_path.write_text(KILL_TOML.replace("runs = 6", "runs = 8"))  # 16 tasks
    out = tmp_path / "stopped"
    cmd = [sys.executable, "-m", "attnsignal", "sweep", str(spec_path), "--out", str(out),
           "--workers", "2", "--chunk-runs", "1", "--quiet"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while len(list((out / "shards").glob("*.sha256"))) < 2:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the sweep did not start"
        time.sleep(0.01)
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=120)  # also waits for the resource tracker
    assert proc.returncode == 128 + signal.SIGTERM, stderr
    assert stderr.splitlines() == [
        f"attnsignal: sweep stopped by SIGTERM; finished shards are kept in {out}/ — run the "
        "same command again to resume"], stderr
    st = sweep_status(out)
    assert 2 <= len(st.done) < 16 and not st.complete
    assert json.loads((out / "sweep.json").read_text())["complete"] is False

    report = run_sweep(spec_path, out, executor="serial", progress=False)  # the resume
    assert report.ok and report.skipped == len(st.done) and report.computed == 16 - report.skipped
    assert sweep_status(out).complete and not list(out.rglob("*.tmp"))
    assert len(load_sweep(out)) == 2 * 8 * 5


def test_sweep_store_errors_are_value_errors_like_every_input_error(tmp_path):
    for call in (load_sweep, sweep_status):
        with pytest.raises(ValueError, match="not a sweep directory") as info:
            call(tmp_path / "nothing here")
        assert isinstance(info.value, SweepStoreError)


def test_a_new_package_version_names_new_shards_and_recomputes_them(tmp_path, monkeypatch):
    import attnsignal.sweep.tasks as tasks_mod

    out = tmp_path / "s"
    assert run_sweep(TINY, out, executor="serial", chunk_runs=4, progress=False).ok
    old = {p.name for p in _shards(out)}
    before = load_sweep(out)
    monkeypatch.setattr(tasks_mod, "__version__", "999.0")  # the shard key hashes the version
    report = run_sweep(TINY, out, executor="serial", chunk_runs=4, progress=False)
    assert report.ok and report.computed == 4 and report.skipped == 0
    new = {p.name for p in _shards(out)} - old
    assert len(new) == 4
    pd.testing.assert_frame_equal(load_sweep(out), before, check_exact=True)  # no duplicates


def test_a_worker_of_another_version_refuses_the_task(tmp_path):
    import dataclasses

    from attnsignal.sweep.tasks import run_task

    task = plan_tasks(SweepSpec.from_dict(TINY), tmp_path / "s", chunk_runs=4)[0]
    with pytest.raises(RuntimeError, match="planned with 0.0.1"):
        run_task(dataclasses.replace(task, version="0.0.1"))
    assert not Path(task.path).exists()


def test_the_progress_bar_counts_tasks_with_an_eta(tmp_path, capsys):
    assert run_sweep(TINY, tmp_path / "s", executor="serial", chunk_runs=4, progress=True).ok
    err = capsys.readouterr().err
    assert "4/4" in err and "eta" in err, err
