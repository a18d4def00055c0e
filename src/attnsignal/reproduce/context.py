"""What an experiment's ``run`` gets: its random streams, sweeps on the shared pool, typed
inputs.

Every random stream of an experiment is ``SeedSequence(plan.seed, spawn_key=(experiment,
purpose, ...))`` (:mod:`attnsignal.seeds`): :meth:`ExperimentContext.stream` gives one (for
``simulate``, ``baseline`` and the theory's ``seed``), :meth:`ExperimentContext.spawn_key` the
key of a sweep's runs (``sweep_spec(..., spawn_key=...)``: run ``r`` of grid point ``p`` then
draws from ``(experiment, purpose, ..., p, r)``). The reproduction checks that no two names it
hands out share a code (:class:`~attnsignal.seeds.KeyNames`).

Every simulation of the reproduction is a sweep (:mod:`attnsignal.sweep`) stored under
``OUT/data/<name>-<spec hash>/``, so an interrupted reproduction resumes where it stopped and
can run on a Dask cluster. The frame of each sweep is also written as ``OUT/data/<name>.parquet``.
A sweep's :class:`SweepData` builds each grid point's :class:`~attnsignal.results.Result` from
the point's own validated configs (the seed it ran with included), never from retyped ones.
"""

from __future__ import annotations

import hashlib
import threading
import time
import warnings
from collections import defaultdict
from contextlib import contextmanager
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, TypeVar

import pandas as pd

from ..config import ModelConfig, StepSize
from ..persistence import source_digest
from ..results import Result, atomic_write
from ..seeds import KeyNames

if TYPE_CHECKING:
    from ..sweep import SweepSpec
    from .experiment import Experiment, Measurements
    from .plan import Plan
    from .scheduler import SharedPool

__all__ = ["Shared", "ExperimentContext", "PendingCall", "PendingSweep", "StoredCall", "SweepData",
           "Timing", "sweep_spec", "warning_texts"]

M = TypeVar("M", bound="Measurements")


@contextmanager
def warning_texts(category: type[Warning] = Warning) -> Iterator[list[str]]:
    """Record the warnings of ``category`` that the block raises into the yielded list (each
    text once, in order; filled when the block ends) instead of printing them; others pass
    on. A pool task returns them with its value, since a worker's stderr is nobody's: the
    report says them."""
    texts: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", category)
        yield texts
    for w in caught:
        if not issubclass(w.category, category):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        elif str(w.message) not in texts:
            texts.append(str(w.message))


def sweep_spec(
    model: ModelConfig,
    step: StepSize,
    *,
    seed: int,
    runs: int,
    steps: int,
    engine: str = "chain",
    record_every: int | None = None,
    grid: dict[str, list[Any]] | None = None,
    spawn_key: tuple[int, ...] | None = None,
    **run: Any,
) -> dict[str, Any]:
    """A sweep spec (the TOML shape, as a dict) from configs and grid axes; ``spawn_key``
    prefixes its runs' keys (:meth:`ExperimentContext.spawn_key`)."""
    sweep = {"seed": seed, "runs": runs, "steps": steps, "engine": engine}
    if spawn_key:
        sweep["spawn_key"] = list(spawn_key)
    if record_every is not None:
        sweep["record_every"] = record_every
    sweep.update({k: v for k, v in run.items() if v is not None})
    return {
        "sweep": sweep,
        "model": model.to_dict(),
        "step": step.to_dict(),
        "grid": grid or {},
    }


@dataclass(frozen=True)
class SweepData:
    """A finished sweep: its spec and tidy frame (``point``, the grid axes, ``run``, ``step``,
    ``alignment``, ...)."""

    name: str
    spec: "SweepSpec"
    frame: pd.DataFrame

    def result_at(self, **values: Any) -> Result:
        """The Result of the one grid point whose axis values are ``values`` (axis names with
        ``__`` for ``.``: ``model__d=1000``); no values for a sweep of one point."""
        want = {k.replace("__", "."): v for k, v in values.items()}
        points = [p for p in self.spec.points()
                  if all(p.values.get(k) == v for k, v in want.items())]
        if len(points) != 1:
            raise KeyError(f"{self.name}: {len(points)} grid points match {want}")
        p = points[0]
        return Result.from_frame(self.frame[self.frame["point"] == p.index], p.model, p.step,
                                 p.run)


@dataclass
class Timing:
    """Where one experiment's wall time went (seconds)."""

    start: float = 0.0          # since the reproduction started
    end: float = 0.0
    waiting: float = 0.0        # blocked on its sweeps or on experiments it needs
    io: float = 0.0             # loading sweeps and writing their frames
    figures: float = 0.0
    report: float = 0.0
    worker_seconds: float = 0.0  # its tasks' time in the pool's workers
    tasks: int = 0
    theory_seconds: float = 0.0  # its ctx.compute calls' own time (in the pool's workers)
    theory_cpu: float = 0.0      # their CPU time (the thread that ran each)
    theory_tasks: int = 0
    cpu: float = 0.0             # CPU time of its own thread in this process

    @property
    def wall(self) -> float:
        return self.end - self.start

    @property
    def compute(self) -> float:
        """In this process: theory, analysis and in-process simulation."""
        return max(0.0, self.wall - self.waiting - self.io - self.figures - self.report)


@dataclass
class Shared:
    """What every experiment of one reproduction shares: where things go and how sweeps run."""

    out: Path
    executor: str = "local"
    scheduler: str | None = None
    workers: int | None = None
    pool: "SharedPool | None" = None
    on_task: Callable[[int], None] | None = None     # one finished task (progress)
    on_tasks: Callable[[int], None] | None = None    # tasks planned (progress total)
    results: dict[str, Future] = field(default_factory=dict)
    timings: dict[str, Timing] = field(default_factory=lambda: defaultdict(Timing))
    t0: float = field(default_factory=time.perf_counter)
    #: matplotlib's pyplot is not thread-safe: one figure at a time
    figure_lock: threading.Lock = field(default_factory=threading.Lock)
    #: guards timings and progress counters updated from sweep threads
    lock: threading.Lock = field(default_factory=threading.Lock)
    #: (experiment, exception) in the order the experiments failed: the first is the cause,
    #: the later ones are usually its consequences (the shared pool is shut down after it)
    failures: list[tuple[str, BaseException]] = field(default_factory=list)
    #: the names handed out as spawn-key parts (no two may share a code)
    keys: KeyNames = field(default_factory=KeyNames)

    def record_failure(self, name: str, exc: BaseException) -> bool:
        """Note that experiment ``name`` failed with ``exc``; True if it is the first failure."""
        with self.lock:
            self.failures.append((name, exc))
            return len(self.failures) == 1

    @property
    def data(self) -> Path:
        return self.out / "data"

    @property
    def figure_dir(self) -> Path:
        p = self.out / "figures"
        p.mkdir(parents=True, exist_ok=True)
        return p


class ExperimentContext:
    """The ``ctx`` of :meth:`Experiment.run`: :meth:`stream`, :meth:`spawn_key`,
    :meth:`sweep`, :meth:`needed`."""

    def __init__(self, exp: "Experiment[Any, Any]", plan: "Plan", shared: Shared):
        self.exp = exp
        #: the whole plan (other experiments' sections are read-only inputs)
        self.plan = plan
        #: the plan's root seed (every stream is keyed by this experiment and a purpose)
        self.seed = plan.seed
        self.shared = shared
        self.timing = shared.timings[exp.name]

    def spawn_key(self, purpose: str, *more: str | int) -> tuple[int, ...]:
        """The spawn key ``(experiment, purpose, *more)`` (names as their codes, checked
        against every name the reproduction handed out)."""
        with self.shared.lock:
            return self.shared.keys.key(self.exp.name, purpose, *more)

    def stream(self, purpose: str, *more: str | int) -> Any:
        """``SeedSequence(plan.seed, spawn_key=(experiment, purpose, *more))``: the ``seed`` of
        a simulation, a baseline or a theory function of this experiment."""
        import numpy as np

        return np.random.SeedSequence(self.seed, spawn_key=self.spawn_key(purpose, *more))

    def needed(self, other: "Experiment[Any, M]") -> M:
        """The measurements of ``other`` (one of this experiment's ``needs``), waiting for
        them if it is still running."""
        if other not in self.exp.needs:
            raise RuntimeError(f"{self.exp.name} reads {other.name} but does not list it in needs")
        t = time.perf_counter()
        value = self.shared.results[other.name].result()
        self.timing.waiting += time.perf_counter() - t
        return value

    def submit(self, name: str, spec: dict[str, Any]) -> "PendingSweep":
        """Start the sweep ``spec`` (see :meth:`sweep`) and return once its tasks are queued;
        the returned object's ``result()`` waits for it. Lets an experiment compute its theory
        while the pool simulates."""
        fut: Future = Future()
        queued = threading.Event()

        def work() -> None:
            try:
                fut.set_result(self._run_sweep(name, spec, queued))
            except BaseException as exc:  # re-raised by result()
                fut.set_exception(exc)
            finally:
                queued.set()

        threading.Thread(target=work, name=f"sweep-{name}", daemon=True).start()
        queued.wait()
        return PendingSweep(fut, self.timing)

    def compute(self, fn: Callable[..., Any], /, *args: Any, cost: float = 0.0,
                simulation: bool = False, **kwargs: Any) -> "PendingCall":
        """Start ``fn(*args, **kwargs)`` (theory, e.g. the effective dynamics, or with
        ``simulation`` a small simulation outside a sweep) as a task of the shared pool,
        beside the sweeps' tasks (``cost`` in :func:`~attnsignal.reproduce.scheduler.task_cost`
        units orders it); without a local pool (Dask, Slurm, serial) in a thread of this
        process. ``fn`` and its arguments must be picklable and its value must not depend on
        where it runs. The returned object's ``result()`` waits for the value (profiled: as a
        theory task, or with ``simulation`` as a simulation task) and re-raises its
        exception."""
        sh = self.shared
        if sh.pool is not None:
            fut = sh.pool.call(_timed, fn, args, kwargs, cost=cost)
        else:
            fut = Future()

            def work() -> None:
                try:
                    fut.set_result(_timed(fn, args, kwargs))
                except BaseException as exc:  # re-raised by result()
                    fut.set_exception(exc)

            threading.Thread(target=work, name=f"compute-{self.exp.name}", daemon=True).start()
        return PendingCall(fut, self.timing, sh.lock, simulation)

    def compute_stored(self, name: str, fn: Callable[..., Any], /, *args: Any,
                       cost: float = 0.0, simulation: bool = False,
                       **kwargs: Any) -> "PendingCall | StoredCall":
        """:meth:`compute`, resumable: the value (JSON-able) is stored as
        ``OUT/data/<experiment>/<name>-<key>.json`` once computed, ``key`` a hash of the call
        (``fn``'s name and every argument's ``repr``, seeds included) and of the package's
        source (:func:`~attnsignal.persistence.source_digest`), and a later run of the same
        call with the same code reads it instead of computing it again — so an interrupted
        reproduction loses only the calls that were running, as with a sweep's tasks, while a
        resumed one on changed code (a corrected law, say) computes the value again rather than
        reporting the old one."""
        import json

        call = repr((fn.__module__, fn.__qualname__, args, sorted(kwargs.items()),
                     source_digest()))
        key = hashlib.sha256(call.encode()).hexdigest()[:16]
        path = self.shared.data / self.exp.name / f"{name}-{key}.json"
        try:
            return StoredCall(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            pass
        pending = self.compute(fn, *args, cost=cost, simulation=simulation, **kwargs)

        def store(value: Any) -> None:
            path.parent.mkdir(parents=True, exist_ok=True)
            text = json.dumps(value, default=_json_scalar)
            atomic_write(path, lambda p: Path(p).write_text(text, encoding="utf-8"))

        pending.on_value = store
        return pending

    def write_frame(self, name: str, frame: Any) -> Path:
        """Write ``frame`` (a pandas DataFrame) as ``OUT/data/<name>.parquet``, atomically, its
        time profiled as I/O (every sweep's frame, and the data of measurements that do not come
        from a sweep)."""
        t = time.perf_counter()
        path = self.shared.data / f"{name}.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, lambda p: frame.to_parquet(p, index=False))
        with self.shared.lock:
            self.timing.io += time.perf_counter() - t
        return path

    def sweep(self, name: str, spec: dict[str, Any]) -> SweepData:
        """Run (or resume) the sweep ``spec`` under ``data/<name>-<hash>`` and return it.

        With the ``local`` executor its tasks go to the reproduction's shared pool; results
        are identical whatever the executor."""
        return self.submit(name, spec).result()

    def _run_sweep(self, name: str, spec: dict[str, Any], queued: threading.Event) -> SweepData:
        from ..sweep import SweepSpec, load_sweep, run_sweep
        from ..sweep.tasks import plan_tasks

        sp = SweepSpec.from_dict(spec)
        sh = self.shared
        # one store per distinct spec: a changed plan never collides with an old store, and
        # the same plan resumes where it stopped
        store = sh.data / f"{name}-{sp.identity()[:12]}"
        chunk = store_chunk_runs(sp, store)
        if sh.on_tasks is not None:
            sh.on_tasks(len(plan_tasks(sp, store, chunk)))

        def on_task(task: Any, outcome: Any) -> None:
            with sh.lock:
                self.timing.worker_seconds += getattr(outcome, "seconds", 0.0)
                self.timing.tasks += 1
                if sh.on_task is not None:
                    sh.on_task(1)

        executor: Any = _Queued(sh.pool, queued) if sh.pool is not None else sh.executor
        if sh.pool is None:
            queued.set()
        workers = None if sh.pool is not None or sh.executor == "serial" else sh.workers
        report = run_sweep(sp, store, executor=executor, scheduler=sh.scheduler,
                           workers=workers, chunk_runs=chunk, progress=False, on_task=on_task)
        if sh.on_task is not None and report.skipped:
            sh.on_task(report.skipped)
        if report.failed:
            raise RuntimeError(f"sweep {name}: {len(report.failed)} task(s) failed: "
                               + "; ".join(map(str, report.failed[:3])))
        t = time.perf_counter()
        frame = load_sweep(store)
        with self.shared.lock:
            self.timing.io += time.perf_counter() - t
        self.write_frame(name, frame)
        return SweepData(name, sp, frame)


def store_chunk_runs(spec: Any, store: Path) -> int | None:
    """Runs per task for the reproduction's sweep ``spec`` in ``store``: those of the store's
    manifest where one is readable (a store begun before keeps its chunking, ``None`` being
    the sweep layer's default), else :func:`~attnsignal.reproduce.scheduler.sweep_chunk_runs`
    (tasks of at least ``MIN_TASK_COST``; an unreadable manifest's shards are recovered from
    their sidecars under it). The task count it gives is the one the sweep will run."""
    from ..sweep.store import MANIFEST, SweepStoreError, read_manifest
    from .scheduler import sweep_chunk_runs

    if (store / MANIFEST).exists():
        try:
            return read_manifest(store).get("chunk_runs")
        except SweepStoreError:
            pass
    return sweep_chunk_runs(spec)


class _Queued:
    """The shared pool, as one sweep sees it: sets ``queued`` once the sweep's tasks are in
    the pool's queue."""

    def __init__(self, pool: "SharedPool", queued: threading.Event):
        self.pool, self.queued = pool, queued
        self.description = getattr(pool, "description", "a shared pool")

    def run(self, tasks: list[Any]) -> Any:
        results = self.pool.run(tasks)
        self.queued.set()
        return results

    def close(self) -> None:
        pass


def _timed(fn: Callable[..., Any], args: tuple, kwargs: dict[str, Any]
           ) -> tuple[Any, float, float]:
    """``fn(*args, **kwargs)``, the seconds it took and the CPU seconds of the thread that ran
    it (where it ran: a pool worker computes on one thread; a worker sharing a core with
    others takes longer in wall time, not in CPU time)."""
    t, c = time.perf_counter(), time.thread_time()
    value = fn(*args, **kwargs)
    return value, time.perf_counter() - t, time.thread_time() - c


def _json_scalar(x: Any) -> Any:
    """numpy scalars as Python numbers (``json.dumps``'s ``default``)."""
    import numpy as np

    if isinstance(x, np.generic):
        return x.item()
    raise TypeError(f"not JSON-able: {type(x).__name__}")


class StoredCall:
    """The stored value of a call (:meth:`ExperimentContext.compute_stored`)."""

    def __init__(self, value: Any):
        self._value = value

    def result(self) -> Any:
        return self._value


class PendingCall:
    """A computation started by :meth:`ExperimentContext.compute`; ``on_value`` (if set) is
    called once with its value."""

    def __init__(self, future: Future, timing: Timing, lock: threading.Lock,
                 simulation: bool = False):
        self._future = future
        self._timing = timing
        self._lock = lock
        self._simulation = simulation
        self._counted = False
        self.on_value: Callable[[Any], None] | None = None

    def result(self) -> Any:
        """Wait for the value (the wait is profiled, and the call's own time counted as
        theory-task or simulation-task time); re-raises the call's exception."""
        t = time.perf_counter()
        try:
            value, seconds, cpu = self._future.result()
        finally:
            self._timing.waiting += time.perf_counter() - t
        with self._lock:
            if not self._counted:
                if self._simulation:
                    self._timing.worker_seconds += seconds
                    self._timing.tasks += 1
                else:
                    self._timing.theory_seconds += seconds
                    self._timing.theory_cpu += cpu
                    self._timing.theory_tasks += 1
                self._counted = True
                first = True
            else:
                first = False
        if first and self.on_value is not None:
            self.on_value(value)
        return value


class PendingSweep:
    """A sweep started by :meth:`ExperimentContext.submit`."""

    def __init__(self, future: Future, timing: Timing):
        self._future = future
        self._timing = timing

    def result(self) -> SweepData:
        """Wait for the sweep (the wait is profiled) and return it; re-raises its error."""
        t = time.perf_counter()
        try:
            return self._future.result()
        finally:
            self._timing.waiting += time.perf_counter() - t
