"""When an experiment of the reproduction fails, the error raised is that experiment's own
(named), not the shut-down pool's consequences in the experiments that ran beside it."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

from attnsignal.config import ModelConfig, StepSize
from attnsignal.reproduce import ExperimentError, Plan, reproduce
from attnsignal.reproduce.context import sweep_spec
from attnsignal.reproduce.experiment import Experiment, Measurements, PlanSection
from attnsignal.reproduce.scheduler import SHUT_DOWN, SharedPool
from attnsignal.sweep import SweepSpec
from attnsignal.sweep.tasks import plan_tasks


@dataclass(frozen=True)
class _ToyPlan(PlanSection):
    pass


@dataclass(frozen=True)
class _ToyMeasurements(Measurements):
    pass


class _Sweeper(Experiment[_ToyPlan, _ToyMeasurements]):
    """Queues a sweep of several tasks on the shared pool, then waits for it."""

    name, title, Plan = "T1", "T1 — a sweep on the shared pool", _ToyPlan

    def __init__(self, queued: threading.Event):
        self.queued = queued

    def run(self, p, ctx):
        spec = sweep_spec(ModelConfig(d=4, n_informative=2, n_nuisance=3, theta=1.0),
                          StepSize(0.05), seed=ctx.seed, runs=2, steps=200,
                          grid={"model.theta": [0.5, 1.0, 1.5, 2.0]})
        pending = ctx.submit("T1", spec)
        self.queued.set()
        pending.result()
        return _ToyMeasurements()

    def figures(self, p, m, fig_dir):
        return []

    def report_section(self, p, m, fig_dir):
        raise AssertionError("not reached")


class _Failing(Experiment[_ToyPlan, _ToyMeasurements]):
    """Fails with its own error once the other experiment's tasks are queued."""

    name, title, Plan = "T2", "T2 — fails on purpose", _ToyPlan

    def __init__(self, queued: threading.Event):
        self.queued = queued

    def run(self, p, ctx):
        assert self.queued.wait(60)
        raise ZeroDivisionError("T2's own deliberate error")

    def figures(self, p, m, fig_dir):
        return []

    def report_section(self, p, m, fig_dir):
        raise AssertionError("not reached")


def test_the_first_failing_experiment_is_reported_with_its_own_error(monkeypatch, tmp_path):
    import attnsignal.reproduce.pipeline as pipeline
    import attnsignal.reproduce.registry as registry

    queued = threading.Event()
    # the sweeper comes first in the registry: before the fix its "pool was shut down" error
    # was the one raised
    toy = (_Sweeper(queued), _Failing(queued))
    monkeypatch.setattr(registry, "EXPERIMENTS", toy)
    monkeypatch.setattr(pipeline, "EXPERIMENTS", toy)
    logged: list[str] = []
    with pytest.raises(ExperimentError) as info:
        reproduce(tmp_path / "out", plan=Plan(mode="quick", seed=3), workers=1,
                  progress=False, log=logged.append)
    err = info.value
    assert err.experiment == "T2" and isinstance(err.error, ZeroDivisionError)
    assert err.__cause__ is err.error
    msg = str(err)
    assert msg.startswith("experiment T2 failed: ZeroDivisionError: T2's own deliberate error")
    assert SHUT_DOWN not in msg
    # the sweeper stopped after it (its queued tasks were refused), named as secondary
    assert err.secondary == ["T1"]
    assert "[T2] failed: ZeroDivisionError: T2's own deliberate error" in logged
    assert not any(s.startswith("[T1] failed") for s in logged)


def test_cli_exits_3_naming_the_failed_experiment_and_its_error(monkeypatch, tmp_path, capsys):
    import attnsignal.reproduce.pipeline as pipeline
    import attnsignal.reproduce.registry as registry
    from attnsignal.cli import main

    queued = threading.Event()
    toy = (_Sweeper(queued), _Failing(queued))
    monkeypatch.setattr(registry, "EXPERIMENTS", toy)
    monkeypatch.setattr(pipeline, "EXPERIMENTS", toy)
    code = main(["reproduce", "--quick", "--quiet", "--workers", "1", "--out",
                 str(tmp_path / "out")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 3
    assert err[-1].startswith("attnsignal: error: experiment T2 failed: ZeroDivisionError: "
                              "T2's own deliberate error"), err[-1]
    assert "Traceback" in err[0] and "in run" in "\n".join(err)  # T2's own traceback first
    assert not any(SHUT_DOWN in line for line in err)


def test_a_sweep_queued_after_shutdown_fails_at_once_instead_of_hanging(tmp_path):
    spec = SweepSpec.from_dict(sweep_spec(
        ModelConfig(d=4, n_informative=2, n_nuisance=3, theta=1.0), StepSize(0.05),
        seed=1, runs=3, steps=10))
    tasks = plan_tasks(spec, Path(tmp_path) / "s", chunk_runs=1)
    pool = SharedPool(workers=1)
    pool.shutdown()
    outcomes = list(pool.run(tasks))  # before the fix: blocked forever
    assert [t for t, _ in outcomes] == tasks
    assert all(isinstance(o, RuntimeError) and str(o) == SHUT_DOWN for _, o in outcomes)
    assert pool._pool is None  # no worker process was started for them
