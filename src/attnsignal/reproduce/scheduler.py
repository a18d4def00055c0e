"""One task graph for the whole reproduction: a process pool shared by every experiment.

Every simulation of the reproduction is a sweep (:func:`attnsignal.sweep.run_sweep`). The
experiments run side by side in threads of the coordinating process; each hands its sweeps'
tasks to one :class:`SharedPool`, which keeps exactly ``workers`` tasks in flight and always
starts the *costliest* pending task first (longest-processing-time-first list scheduling, the
classical 4/3-approximation of the best makespan). So small tasks fill the gaps that big ones
leave, the pool's workers start (and load or compile the kernels) once instead of once per
sweep, and the coordinator's theory, analysis and figures run while the workers simulate.

Determinism: a task's result does not depend on where or when it runs (run ``r`` of grid point
``p`` draws from ``SeedSequence(seed, spawn_key=(*key, p, r))``), so the schedule changes
timings, never numbers.

The pool implements the sweep layer's ``Executor`` protocol (``run(tasks)`` yields
``(task, outcome or exception)`` as tasks finish; ``close()``), and ``run`` may be called from
several threads at once. Theory that should overlap the simulations on the same workers (the
effective dynamics of E1 and E5) goes in as a :class:`Call` (:meth:`SharedPool.call`), ordered
with the sweeps' tasks by its cost.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import json
import os
import queue
import tempfile
import threading
import time
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from ..config import ModelConfig
from ..sweep.executors import REPRODUCTION_PRELOAD, pool_context
from ..sweep.tasks import Task, TaskOutcome, run_task

__all__ = ["Call", "SharedPool", "chain_cost", "task_cost", "warm_kernels"]


#: sweeps costing at most this much (:func:`task_cost` units; about 1 % of the quick
#: reproduction) run first
SMALL_SWEEP_COST = 2e8

#: what a task gets that the pool will not run (queued at, or after, :meth:`SharedPool.shutdown`)
SHUT_DOWN = "the reproduction's pool was shut down"

#: fixed cost of one chain update (its χ² draws, stream set-up), in tokens' worth
CHAIN_UPDATE_OVERHEAD = 32


@dataclass(frozen=True)
class Call:
    """A computation of the task graph that is not a sweep task: ``fn(*args, **kwargs)`` in a
    pool worker (``fn`` and its arguments picklable). ``cost`` is in :func:`task_cost` units."""

    fn: Callable[..., Any]
    args: tuple = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    cost: float = 0.0


def _execute(item: "Task | Call") -> Any:
    """What a pool worker runs: a sweep task, or a :class:`Call` (on one compute thread)."""
    if not isinstance(item, Call):
        return run_task(item)
    from ..sweep.tasks import _single_thread

    _single_thread()
    return item.fn(*item.args, **item.kwargs)


class _FutureSink:
    """Where the pool puts a :class:`Call`'s ``(call, value or exception)``: its future."""

    def __init__(self, future: Future):
        self.future = future

    def put(self, item: tuple[Any, Any]) -> None:
        res = item[1]
        if isinstance(res, BaseException):
            self.future.set_exception(res)
        else:
            self.future.set_result(res)


def task_cost(task: "Task | Call") -> float:
    """A task's cost in arbitrary units: runs × steps × batch × the cost of one sample — for
    the chain engines (no query vector), ``L + 32`` (it draws O(L) normals per sample, ``d``
    is only a number of degrees of freedom, plus a fixed cost per update); for the other
    engines ``L·d``; a :class:`Call` states its own.

    Only the order of the estimates matters (which task starts first)."""
    if isinstance(task, Call):
        return task.cost
    from ..engines import get_engine

    m = task.model
    chain_like = not get_engine(task.run.engine).capabilities.has_query  # chain, chain32
    if chain_like:
        return chain_cost(m, task.runs, task.run.steps, task.run.batch)
    return float(task.runs) * task.run.steps * task.run.batch * m.n_tokens * m.d


def chain_cost(model: ModelConfig, runs: int, steps: int, batch: int = 1) -> float:
    """:func:`task_cost` of ``runs`` chain runs of ``steps`` updates of ``batch`` samples:
    ``L + CHAIN_UPDATE_OVERHEAD`` per sample (for a :class:`Call` that simulates)."""
    return float(runs) * steps * batch * (model.n_tokens + CHAIN_UPDATE_OVERHEAD)


#: The least work of one task of the reproduction's sweeps, in :func:`task_cost` units (about
#: 10 ns each for the chain on these machines, so ≈ 0.2 s): beside its simulation a task costs
#: its own ≈ 20 ms (the spec shipped to a worker, the engine set up, the shard encoded,
#: checksummed and written, the manifest updated), which the sweeps' default of about 32
#: tasks each made most of E5's and E3's pool time.
MIN_TASK_COST = 2e7


def sweep_chunk_runs(spec: Any) -> int:
    """Runs per task for a reproduction sweep of ``spec`` (one number for all its points):
    the sweep layer's default (:func:`~attnsignal.sweep.tasks.default_chunk`, about 32
    tasks), raised until the tasks of the point with the costliest run cost at least
    :data:`MIN_TASK_COST` — never above a point's runs. A cheaper point's tasks may cost less
    (in the reproduction's sweeps of several points, E2 and E3, the points differ by up to
    10× per run). A function of the spec only, so a re-run finds the same shards; the
    results do not depend on it (run ``r`` of point ``p`` draws from its own stream)."""
    import math

    from ..sweep.tasks import default_chunk, plan_tasks

    per_run = max(task_cost(t) / t.runs for t in plan_tasks(spec, ".", None))
    most = max(p.run.runs for p in spec.points())
    k = default_chunk(most, spec.n_points)  # at least every point's default chunk
    if per_run > 0:
        k = max(k, math.ceil(MIN_TASK_COST / per_run))
    return min(k, most)


#: The groups of compiled kernels a pool worker loads before its first task, each compiled
#: (cold cache) or loaded (warm) by :func:`warm_kernels`; they share no compiled function.
KERNEL_GROUPS = ("chain", "effective")


def warm_kernels(groups: tuple[str, ...] = KERNEL_GROUPS, lock_path: str | None = None
                 ) -> float:
    """Load (or compile, on a cold cache) the compiled kernels of ``groups`` — an engine's name
    (run on a toy model) or ``"effective"``, the effective dynamics
    (:func:`~attnsignal.theory.effective.effective_dynamics`, which E1 and E5 run as pool
    tasks); returns the seconds it took.

    With ``lock_path``, each group is warmed holding its own lock (:func:`_in_turns`): two
    workers on a cold cache compile different groups at the same time, and each then loads
    the group the other compiled instead of compiling it again."""
    import warnings

    from ..config import ModelConfig, StepSize
    from ..simulate import simulate

    t0 = time.perf_counter()
    m = ModelConfig(d=3, n_informative=2, n_nuisance=2, theta=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for group in _in_turns(list(groups), lock_path):
            if group == "effective":
                from ..theory.effective import effective_dynamics

                effective_dynamics(m, StepSize(0.05), steps=2, n_samples=100)
            else:
                simulate(m, StepSize(0.05), steps=2, runs=1, engine=group, seed=0)
    return time.perf_counter() - t0


def _init_worker(coordinator: int, profile_dir: str | None, lock_path: str | None = None
                 ) -> None:
    """Pool worker start-up: one compute thread, exit with the coordinator, load the
    kernels before the first task (recorded under ``profile_dir`` when given). The workers
    take turns per kernel group (an exclusive ``flock`` on ``lock_path.<group>``): on a cold
    cache the first worker compiles the chain while the second compiles the effective
    dynamics' kernels, and each then loads what the other wrote — instead of the second
    waiting idle for the first to compile everything, or both compiling the same kernels at
    the same time (which cost a core for the whole compilation on two cores)."""
    from ..sweep.executors import _init_worker as sweep_init

    sweep_init(coordinator)
    t_cpu = time.process_time()
    seconds = warm_kernels(lock_path=lock_path)
    if profile_dir:
        rec = {"pid": os.getpid(), "warm_seconds": seconds,
               "warm_cpu_seconds": time.process_time() - t_cpu}
        Path(profile_dir, f"worker-{os.getpid()}.json").write_text(json.dumps(rec))


def _in_turns(names: list[str], lock_path: str | None) -> Iterator[str]:
    """Yield each of ``names`` once, holding an exclusive ``flock`` on ``lock_path.<name>``
    while the caller works on it: first any name whose lock is free at once (so that two
    processes take different names), then — waiting — the rest in order (so the later
    process finds what the first left, e.g. a compiled cache). No path: the names in order,
    no lock."""
    pending = list(names)
    while pending:
        name, fh = pending[0], None
        if lock_path:
            free = next(((n, h) for n in pending
                         if (h := _try_lock(f"{lock_path}.{n}", blocking=False)) is not None),
                        None)
            if free is not None:
                name, fh = free
            else:
                fh = _try_lock(f"{lock_path}.{name}", blocking=True)
        pending.remove(name)
        try:
            yield name
        finally:
            if fh is not None:
                fh.close()  # releases the lock (as the process's death would)


def _try_lock(path: str, blocking: bool) -> Any:
    """An open file holding an exclusive ``flock`` on ``path``, or None when it is held
    elsewhere (``blocking`` False) or cannot be taken here (no ``fcntl``, an unopenable path:
    the caller then goes on without it)."""
    try:
        import fcntl

        fh = open(path, "a")  # noqa: SIM115 (returned open; the caller closes it)
    except (ImportError, OSError):
        return None
    try:
        fcntl.flock(fh, fcntl.LOCK_EX if blocking else fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        fh.close()
        return None
    return fh


class SharedPool:
    """A process pool that several sweeps share, costliest pending task first.

    Parameters
    ----------
    workers : worker processes (default ``os.cpu_count()``).
    profile_dir : where each worker records its kernel warm-up time (``--profile``).
    retries : fresh pools started after a worker process dies (its unfinished tasks are
        resubmitted; the sweep layer records them as failed after that).
    small_sweep_cost : a sweep whose tasks cost at most this much in all (:func:`task_cost`
        units) goes before the others.
    """

    def __init__(self, workers: int | None = None, profile_dir: str | Path | None = None,
                 retries: int = 2, small_sweep_cost: float = SMALL_SWEEP_COST):
        self.small_sweep_cost = small_sweep_cost
        self.workers = workers or os.cpu_count() or 1
        self.retries = retries
        self.profile_dir = str(profile_dir) if profile_dir is not None else None
        # the forkserver imports the workers' modules (and this one, for _init_worker) once
        self._ctx = pool_context(REPRODUCTION_PRELOAD)
        self.description = f"shared local process pool, {self.workers} worker(s)"
        self._lock = threading.Lock()
        self._heap: list[tuple[tuple[int, float], int, Task, queue.Queue]] = []
        self._seq = itertools.count()
        self._inflight = 0
        self._restarts = 0
        self._closed = False
        self._shutdown_lock = threading.Lock()
        self._pool_shut = False
        self._pool: ProcessPoolExecutor | None = None  # started by the first task
        # the workers load (or compile) the kernel groups in turns (_init_worker): one lock file
        # per group, `<this path>.<group>`, removed at shutdown
        self._warm_lock = os.path.join(tempfile.gettempdir(),
                                       f"attnsignal-kernels-{os.getpid()}-{id(self):x}.lock")

    def _new_pool(self) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(max_workers=self.workers, mp_context=self._ctx,
                                   initializer=_init_worker,
                                   initargs=(os.getpid(), self.profile_dir, self._warm_lock))

    # -- the Executor protocol -------------------------------------------------------------

    def run(self, tasks: list[Task]) -> Iterator[tuple[Task, TaskOutcome | BaseException]]:
        """Queue ``tasks`` now (costliest first among everything pending) and return an
        iterator over ``(task, outcome or exception)`` in completion order."""
        done: queue.Queue = queue.Queue()
        small = int(sum(task_cost(t) for t in tasks) > self.small_sweep_cost)
        self._enqueue([((small, -task_cost(t)), t) for t in tasks], done)
        return (done.get() for _ in range(len(tasks)))

    def call(self, fn: Callable[..., Any], /, *args: Any, cost: float = 0.0,
             **kwargs: Any) -> Future:
        """Queue ``fn(*args, **kwargs)`` as one task of the pool (with the small sweeps, the
        costliest first) and return its future (the value, or the exception it raised)."""
        fut: Future = Future()
        self._enqueue([((0, -float(cost)), Call(fn, args, dict(kwargs), float(cost)))],
                      _FutureSink(fut))
        return fut

    def _enqueue(self, items: list[tuple[tuple[int, float], "Task | Call"]], done: Any) -> None:
        """Push ``(priority, item)`` pairs whose results go to ``done`` (``put((item, result
        or exception))``) and dispatch; once the pool is shut down nothing would ever run
        them, so each fails at once instead of a hang."""
        with self._lock:
            closed = self._closed
            if not closed:
                for prio, item in items:
                    heapq.heappush(self._heap, (prio, next(self._seq), item, done))
                self._dispatch()
        if closed:
            for _, item in items:
                done.put((item, RuntimeError(SHUT_DOWN)))

    def close(self) -> None:
        """Kept open: the pool outlives each sweep; :meth:`shutdown` ends it."""

    def worker_cpu_seconds(self) -> float | None:
        """CPU seconds (user + system) the live workers have used so far, from
        ``/proc/<pid>/stat``; None where that is not readable (not Linux)."""
        total = 0.0
        tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
        if self._pool is None:
            return 0.0
        for pid in list(getattr(self._pool, "_processes", {}) or {}):
            try:
                with open(f"/proc/{pid}/stat") as fh:
                    f = fh.read().rpartition(")")[2].split()
                total += (int(f[11]) + int(f[12])) / tick
            except (OSError, IndexError, ValueError):
                return None
        return total

    def shutdown(self) -> None:
        with self._lock:
            self._closed = True
            pending, self._heap = self._heap, []
        for _, _, t, done in pending:
            done.put((t, RuntimeError(SHUT_DOWN)))
        # several threads may call this at once (the failing experiment, the others, the
        # pipeline's finally): the process pool is shut down once — a second concurrent
        # ProcessPoolExecutor.shutdown closes its queues twice (OSError: bad file descriptor)
        with self._shutdown_lock:
            if self._pool is not None and not self._pool_shut:
                self._pool.shutdown(wait=True, cancel_futures=True)
                self._pool_shut = True
            for group in KERNEL_GROUPS:
                with contextlib.suppress(OSError):
                    os.remove(f"{self._warm_lock}.{group}")

    # -- dispatching -----------------------------------------------------------------------

    def _dispatch(self) -> None:
        """Start pending tasks until ``workers`` are in flight (call with the lock held)."""
        while self._heap and self._inflight < self.workers and not self._closed:
            _, _, t, done = heapq.heappop(self._heap)
            self._inflight += 1
            if self._pool is None:
                self._pool = self._new_pool()
            try:
                fut = self._pool.submit(_execute, t)
            except (BrokenProcessPool, RuntimeError) as exc:
                self._inflight -= 1
                self._broken(t, done, exc)
                continue
            fut.add_done_callback(lambda f, t=t, done=done: self._finished(f, t, done))

    def _finished(self, fut: Future, t: Task, done: queue.Queue) -> None:
        try:
            res: Any = fut.result()
        except BrokenProcessPool as exc:
            with self._lock:
                self._inflight -= 1
                self._broken(t, done, exc)
                self._dispatch()
            return
        except BaseException as exc:  # reported with the task's grid point
            res = exc
        done.put((t, res))
        with self._lock:
            self._inflight -= 1
            self._dispatch()

    def _broken(self, t: Task, done: queue.Queue, exc: BaseException) -> None:
        """A worker died: retry ``t`` on a fresh pool, up to ``retries`` fresh pools."""
        if self._closed or self._restarts >= self.retries:
            done.put((t, RuntimeError(f"a worker process died ({exc}); gave up after "
                                      f"{self.retries} pool restart(s)")))
            return
        if getattr(self._pool, "_broken", False):
            self._restarts += 1
            old, self._pool = self._pool, self._new_pool()
            threading.Thread(target=old.shutdown, kwargs={"wait": False}, daemon=True).start()
        heapq.heappush(self._heap, ((0, -task_cost(t)), next(self._seq), t, done))
