"""The reproduction's shared pool: small sweeps first, then the costliest task; and the
frames do not depend on it (same bits as the serial executor)."""

from __future__ import annotations

import math
import os
import threading

import pandas as pd
import pytest

from attnsignal.config import ModelConfig, StepSize
from attnsignal.reproduce.context import sweep_spec
from attnsignal.reproduce.scheduler import SharedPool, task_cost
from attnsignal.sweep import SweepSpec, load_sweep, run_sweep
from attnsignal.sweep.tasks import plan_tasks


def _tasks(tmp_path, name, *, runs, steps, n_nuisance):
    spec = SweepSpec.from_dict(sweep_spec(
        ModelConfig(d=5, n_informative=2, n_nuisance=n_nuisance, theta=1.0), StepSize(0.05),
        seed=1, runs=runs, steps=steps))
    return plan_tasks(spec, tmp_path / name, chunk_runs=1)


def test_small_sweeps_go_first_then_the_costliest_task(tmp_path):
    pool = SharedPool(workers=1, small_sweep_cost=1e4)
    pool._inflight = pool.workers  # hold dispatching: inspect the queue's order only
    big = _tasks(tmp_path, "big", runs=3, steps=1000, n_nuisance=10)
    bigger = _tasks(tmp_path, "bigger", runs=2, steps=1000, n_nuisance=100)
    small = _tasks(tmp_path, "small", runs=2, steps=10, n_nuisance=1)
    assert sum(map(task_cost, small)) <= 1e4 < sum(map(task_cost, big))
    for ts in (big, small, bigger):
        pool.run(ts)
    order = []
    while pool._heap:
        import heapq

        order.append(heapq.heappop(pool._heap)[2])
    assert order[:2] == small
    costs = [task_cost(t) for t in order[2:]]
    assert costs == sorted(costs, reverse=True) and order[2] in bigger
    pool.shutdown()


def test_sweeps_sharing_the_pool_give_the_serial_executors_bits(tmp_path):
    specs = {
        "a": sweep_spec(ModelConfig(d=6, n_informative=3, n_nuisance=20, theta=1.0),
                        StepSize(0.05), seed=3, runs=5, steps=200,
                        grid={"model.theta": [0.5, 1.0]}),
        "b": sweep_spec(ModelConfig(d=4, n_informative=2, n_nuisance=2, theta=2.0),
                        StepSize(0.02), seed=4, runs=7, steps=300, initial_alignment=0.1),
    }
    pool = SharedPool(workers=2)
    try:
        threads = [threading.Thread(target=run_sweep, args=(s, tmp_path / f"pool-{n}"),
                                    kwargs={"executor": pool, "progress": False})
                   for n, s in specs.items()]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    finally:
        pool.shutdown()
    for n, s in specs.items():
        run_sweep(s, tmp_path / f"serial-{n}", executor="serial", progress=False)
        pd.testing.assert_frame_equal(load_sweep(tmp_path / f"pool-{n}"),
                                      load_sweep(tmp_path / f"serial-{n}"))


def test_calls_queue_with_the_small_sweeps_costliest_first(tmp_path):
    """Theory (a Call) is ordered with the sweeps' tasks: in the first group, by its cost."""
    from attnsignal.reproduce.scheduler import Call

    pool = SharedPool(workers=1, small_sweep_cost=1e4)
    pool._inflight = pool.workers  # hold dispatching
    big = _tasks(tmp_path, "big", runs=3, steps=1000, n_nuisance=10)
    pool.run(big)
    cheap = pool.call(math.fsum, [1.0], cost=1.0)
    dear = pool.call(math.fsum, [2.0], cost=1e9)
    order = [item[2] for item in sorted(pool._heap)]  # the order heappop gives
    assert [type(t) for t in order[:2]] == [Call, Call]
    assert [t.cost for t in order[:2]] == [1e9, 1.0] and order[2:] == big
    assert task_cost(order[0]) == 1e9
    pool.shutdown()
    # a call still queued at shutdown gets an error, never hangs
    for fut in (cheap, dear):
        with pytest.raises(RuntimeError, match="shut down"):
            fut.result(timeout=5)


def test_a_call_runs_in_a_worker_and_returns_its_value_or_its_error(tmp_path):
    """...and the worker's warm-up record and kernel locks are in the pool's work_dir (which
    its caller removes), nowhere else."""
    import tempfile

    from attnsignal.reproduce.scheduler import KERNEL_GROUPS

    before = set(os.listdir(tempfile.gettempdir()))
    pool = SharedPool(workers=1, work_dir=tmp_path)
    try:
        ok = pool.call(math.fsum, [0.1] * 10, cost=5.0)
        bad = pool.call(math.sqrt, -1.0)
        assert ok.result(timeout=120) == 1.0
        with pytest.raises(ValueError):
            bad.result(timeout=120)
    finally:
        pool.shutdown()
    names = set(os.listdir(tmp_path))
    assert {f".kernels.{g}" for g in KERNEL_GROUPS} <= names
    assert any(n.startswith("worker-") for n in names)
    assert not [n for n in set(os.listdir(tempfile.gettempdir())) - before if "kernels" in n]


def test_compute_without_a_local_pool_runs_in_this_process_and_is_profiled(tmp_path):
    from attnsignal.reproduce import Plan
    from attnsignal.reproduce.context import ExperimentContext, Shared
    from attnsignal.reproduce.e5_tracking import E5

    ctx = ExperimentContext(E5, Plan.quick(), Shared(tmp_path, executor="dask"))
    assert ctx.compute(math.fsum, [1.0, 2.0]).result() == 3.0
    with pytest.raises(ValueError):
        ctx.compute(math.sqrt, -1.0).result()
    assert ctx.timing.theory_tasks == 1 and ctx.timing.tasks == 0


def test_a_stored_call_is_read_back_with_the_same_code_and_computed_again_with_other_code(
        tmp_path, monkeypatch):
    """compute_stored's key holds the package source's digest: the same call on the same code
    reads the stored value (the function is not called again), on changed code it is
    computed again — a resumed reproduction never reports a value computed by older code."""
    from attnsignal.reproduce import Plan, context
    from attnsignal.reproduce.e5_tracking import E5

    calls: list[float] = []

    def fn(x: float) -> float:
        calls.append(x)
        return x + len(calls)

    ctx = context.ExperimentContext(E5, Plan.quick(), context.Shared(tmp_path, executor="dask"))
    assert ctx.compute_stored("p", fn, 1.0).result() == 2.0
    assert ctx.compute_stored("p", fn, 1.0).result() == 2.0 and len(calls) == 1
    assert len(list((tmp_path / "data" / "E5").glob("p-*.json"))) == 1
    monkeypatch.setattr(context, "source_digest", lambda: "changed code")
    assert ctx.compute_stored("p", fn, 1.0).result() == 3.0 and len(calls) == 2
    assert len(list((tmp_path / "data" / "E5").glob("p-*.json"))) == 2


def test_the_source_digest_covers_what_its_patterns_name_less_the_excluded():
    """One file more or less changes the digest; the same arguments give the same digest."""
    from attnsignal.persistence import source_digest

    theory = source_digest(("theory/*.py",))
    assert theory == source_digest(("theory/*.py",))
    assert theory != source_digest(("theory/*.py",), exclude=("theory/advisor.py",))
    assert theory != source_digest(("theory/*.py", "config.py"))
    assert source_digest() != theory


def test_workers_warm_different_kernel_groups_at_once_then_load_the_others(tmp_path):
    """Each group's lock is exclusive: a second worker that finds the first group taken warms
    a free one meanwhile (on a cold cache: compiles it), then waits for the first group until
    its holder lets go (and loads what that one compiled); no path means no lock."""
    import threading
    import time as _time

    from attnsignal.reproduce.scheduler import _in_turns

    path = str(tmp_path / "warm.lock")
    events: list[str] = []
    first_in = threading.Event()

    def first() -> None:
        for name in _in_turns(["chain", "effective"], path):
            events.append(f"first {name} in")
            first_in.set()
            _time.sleep(0.5)
            events.append(f"first {name} out")

    def second() -> None:
        first_in.wait()
        for name in _in_turns(["chain", "effective"], path):
            events.append(f"second {name} in")
            _time.sleep(0.1)
            events.append(f"second {name} out")

    ts = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(10)
    assert events.index("second effective in") < events.index("first chain out")
    assert events.index("first chain out") < events.index("second chain in")
    assert events.index("second effective out") < events.index("first effective in")
    assert sorted(e for e in events if e.startswith("second")) == [
        "second chain in", "second chain out", "second effective in", "second effective out"]
    assert list(_in_turns(["chain", "effective"], None)) == ["chain", "effective"]


_NO_NEW_KERNELS = r"""
import gc
from numba.core.registry import CPUDispatcher
from attnsignal.config import ModelConfig, StepSize
from attnsignal.reproduce.effective_overlay import effective_path
from attnsignal.reproduce.scheduler import warm_kernels
from attnsignal.simulate import simulate

def signatures():
    return {(f.py_func.__module__, f.py_func.__qualname__): len(f.signatures)
            for f in gc.get_objects() if isinstance(f, CPUDispatcher)}

warm_kernels()
before = signatures()
# what the reproduction runs as pool tasks: chain sweeps, the effective dynamics (E1, E5)
step = StepSize(eta0=0.05, k0=100.0, power=1.0)
m = ModelConfig(d=20, n_informative=10, n_nuisance=40, theta=0.5)
simulate(m, step, steps=5, runs=2, seed=1, record_every=5)
effective_path(m, step, steps=50, record_every=10, initial_alignment=None, n_samples=100, seed=2)
effective_path(m, step, steps=50, record_every=10, initial_alignment=0.1, n_samples=100, seed=2)
new = {k: v for k, v in signatures().items() if v != before.get(k, 0)}
print("NEW", new)
"""


def test_warm_kernels_leaves_nothing_for_the_pool_tasks_to_compile():
    """A worker's warm-up (taken in turns) loads every compiled function the reproduction's
    pool tasks call, so no task compiles one beside another worker on a cold cache. A fresh
    process: in this one the other tests have compiled them already."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", _NO_NEW_KERNELS], capture_output=True,
                         text=True, timeout=600, env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert out.returncode == 0, out.stderr[-2000:]
    assert "NEW {}" in out.stdout, out.stdout


def test_a_computation_is_timed_in_wall_and_in_cpu_seconds():
    # a pool task's profile row reports the CPU it used, not the wall time it waited: a sleep
    # costs wall time only, a busy loop both
    import time

    from attnsignal.reproduce.context import _timed

    value, wall, cpu = _timed(time.sleep, (0.3,), {})
    assert value is None and wall >= 0.3 and cpu < 0.1

    def spin(seconds):
        end = time.thread_time() + seconds
        while time.thread_time() < end:
            pass
        return "done"

    value, wall, cpu = _timed(spin, (0.2,), {})
    assert value == "done" and cpu >= 0.2 and wall >= cpu - 0.02


def test_reproduction_tasks_are_never_cheaper_than_the_floor_nor_split_finer_than_the_default():
    """``sweep_chunk_runs``: every task of a cheap sweep carries at least ``MIN_TASK_COST``
    (or all of a point's runs), a costly sweep keeps the sweep layer's default, and the
    chunking is a function of the spec (a re-run finds the same shards)."""
    from attnsignal.reproduce.scheduler import MIN_TASK_COST, sweep_chunk_runs
    from attnsignal.sweep.tasks import default_chunk

    step = StepSize(eta0=0.04, k0=100.0, power=0.75)
    cheap = SweepSpec.from_dict(sweep_spec(ModelConfig(d=4, n_informative=20, n_nuisance=20,
                                                       theta=1.5), step, seed=1, runs=200,
                                           steps=300, record_every=30))
    k = sweep_chunk_runs(cheap)
    tasks = plan_tasks(cheap, ".", k)
    assert len(tasks) < len(plan_tasks(cheap, ".", None))  # fewer than the default's 29
    assert all(task_cost(t) >= MIN_TASK_COST or t.runs == 200 for t in tasks[:-1])
    assert sweep_chunk_runs(SweepSpec.from_dict(cheap.to_dict())) == k
    costly = SweepSpec.from_dict(sweep_spec(ModelConfig(d=100, n_informative=500,
                                                        n_nuisance=10_000, theta=0.25),
                                            step, seed=1, runs=30, steps=80_000,
                                            record_every=1000))
    assert sweep_chunk_runs(costly) == default_chunk(30, 1)


def test_the_chunking_leaves_the_sweep_frame_bit_identical(tmp_path):
    """A sweep run with the reproduction's chunking and with the default one: equal frames."""
    from attnsignal.reproduce.scheduler import sweep_chunk_runs

    spec = SweepSpec.from_dict(sweep_spec(ModelConfig(d=4, n_informative=3, n_nuisance=5,
                                                      theta=1.0),
                                          StepSize(eta0=0.05, k0=50.0, power=0.75), seed=3,
                                          runs=12, steps=40, record_every=10))
    k = sweep_chunk_runs(spec)
    assert len(plan_tasks(spec, ".", k)) < len(plan_tasks(spec, ".", None))  # a coarser split
    run_sweep(spec, tmp_path / "a", executor="serial", progress=False)
    run_sweep(spec, tmp_path / "b", executor="serial", chunk_runs=k, progress=False)
    pd.testing.assert_frame_equal(load_sweep(tmp_path / "a"), load_sweep(tmp_path / "b"))


def test_a_store_keeps_its_chunking_and_a_new_one_gets_the_reproductions(tmp_path):
    """``store_chunk_runs``: a new store gets ``sweep_chunk_runs``; a store with a manifest
    keeps its chunking (also the default's ``None``), so the task count reported for a
    resumed sweep is the one it runs; an unreadable manifest falls back to the
    reproduction's."""
    from attnsignal.reproduce.context import store_chunk_runs
    from attnsignal.reproduce.scheduler import sweep_chunk_runs

    spec = SweepSpec.from_dict(sweep_spec(ModelConfig(d=4, n_informative=3, n_nuisance=5,
                                                      theta=1.0),
                                          StepSize(eta0=0.05, k0=50.0, power=0.75), seed=3,
                                          runs=12, steps=40, record_every=10))
    k = sweep_chunk_runs(spec)
    assert store_chunk_runs(spec, tmp_path / "new") == k
    run_sweep(spec, tmp_path / "mine", executor="serial", chunk_runs=k, progress=False)
    assert store_chunk_runs(spec, tmp_path / "mine") == k
    run_sweep(spec, tmp_path / "old", executor="serial", progress=False)
    assert store_chunk_runs(spec, tmp_path / "old") is None
    (tmp_path / "old" / "sweep.json").write_text("{not json")
    assert store_chunk_runs(spec, tmp_path / "old") == k
