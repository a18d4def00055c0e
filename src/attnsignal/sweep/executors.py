"""Executors: where sweep tasks run. Each yields ``(task, outcome or exception)`` as tasks
finish, in completion order; the coordinator records outcomes in the manifest.

``serial``  in this process, one task after the other (debugging, tiny sweeps).
``local``   a process pool on this machine (``concurrent.futures.ProcessPoolExecutor``,
            ``forkserver`` start method where available — its server imports what the
            workers need once, :func:`pool_context` — else ``spawn``), ``workers`` processes
            (default ``os.cpu_count()``). A worker process that dies breaks the pool; the
            unfinished tasks are resubmitted to a fresh pool up to ``retries`` times.
``dask``    a Dask cluster: with ``scheduler`` an address (``tcp://host:8786``) the running
            scheduler is used via ``distributed.Client(address)``; without, a ``LocalCluster``
            of ``workers`` processes with one thread each. Tasks are submitted with
            ``retries``; a task whose worker dies is rescheduled by Dask.
``slurm``   a Dask cluster whose workers are Slurm jobs (dask-jobqueue's ``SLURMCluster``,
            see :mod:`attnsignal.sweep.slurm`): ``jobs`` jobs of ``cores`` worker processes,
            kept alive as jobs reach their walltime or are cancelled; their jobs are
            cancelled when the sweep ends.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import threading
import time
import uuid
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from typing import Iterator, Protocol

from ..config import ConfigError
from .slurm import SlurmOptions, slurm_cluster
from .tasks import Task, TaskOutcome, mark_worker_process, run_task

__all__ = ["Executor", "SerialExecutor", "LocalExecutor", "DaskExecutor", "SlurmExecutor",
           "make_executor",
           "EXECUTORS"]

EXECUTORS = ("local", "dask", "slurm", "serial")

Finished = tuple[Task, "TaskOutcome | BaseException"]

#: what a pool worker imports before its first task (the task runner, the engines, the
#: effective dynamics): the forkserver imports it once and forks every worker from itself
WORKER_PRELOAD = ("attnsignal.sweep.tasks", "attnsignal.simulate", "attnsignal.theory.effective")
#: the reproduction's shared pool also starts each worker with
#: ``attnsignal.reproduce.scheduler._init_worker`` (which imports the reproduction package)
REPRODUCTION_PRELOAD = (*WORKER_PRELOAD, "attnsignal.reproduce.scheduler")


def pool_context(preload: tuple[str, ...] = WORKER_PRELOAD) -> mp.context.BaseContext:
    """The start method of the local pools: ``forkserver`` where available, its server
    importing ``preload`` before it forks any worker — each worker then starts with those
    modules loaded instead of importing them again (about 1.3 CPU-s a worker for the
    reproduction's, measured with two workers); else ``spawn``. The server is one per
    process, started by the first pool: a later call's ``preload`` applies only if none has
    started yet."""
    if "forkserver" not in mp.get_all_start_methods():
        return mp.get_context("spawn")
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(list(preload))
    return ctx


def start_pool_server(preload: tuple[str, ...] = WORKER_PRELOAD) -> None:
    """Start the forkserver of :func:`pool_context` now, so that it imports ``preload`` while
    this process goes on with its own start-up (the reproduction calls it before importing
    its experiments: the workers of its first tasks are then forked at once). Nothing
    happens where there is no forkserver or one already runs."""
    if pool_context(preload).get_start_method() == "forkserver":
        from multiprocessing import forkserver

        forkserver.ensure_running()


class Executor(Protocol):
    description: str

    def run(self, tasks: list[Task]) -> Iterator[Finished]: ...

    def close(self) -> None: ...


class SerialExecutor:
    """Run tasks in this process."""

    description = "in this process"

    def run(self, tasks: list[Task]) -> Iterator[Finished]:
        for t in tasks:
            try:
                yield t, run_task(t)
            except Exception as exc:  # reported with the task's grid point
                yield t, exc

    def close(self) -> None:
        pass


# ---------------------------------------------------------------------- local pool


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a killed coordinator not yet reaped by its parent is a zombie
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rpartition(")")[2].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def _watch_coordinator(pid: int) -> None:
    while True:
        time.sleep(0.5)
        if not _alive(pid):  # killed: do not finish queued tasks nobody will record
            os._exit(1)


def _init_worker(coordinator: int) -> None:
    mark_worker_process()
    # numba's threading layer makes a process lock from the default context when it starts
    # (a worker's first task). Under 'forkserver' that is a named semaphore registered with
    # the resource tracker, and a worker terminated mid-task (a sweep stopped by SIGTERM)
    # leaves it to a "leaked semaphore" warning at exit; under 'fork' it is unlinked at once
    # and never tracked. It guards this process only, and a worker starts no processes.
    if mp.get_start_method(allow_none=True) == "forkserver":
        mp.set_start_method("fork", force=True)
    threading.Thread(target=_watch_coordinator, args=(coordinator,), daemon=True).start()


def _terminate_workers(pool: ProcessPoolExecutor) -> None:
    """SIGTERM the pool's worker processes, so that its shutdown does not wait for their
    running tasks (whose shards a later run recomputes). The pool's own process table is
    the only list of them (``ProcessPoolExecutor`` has no public way before Python 3.14)."""
    for proc in list((getattr(pool, "_processes", None) or {}).values()):
        try:
            proc.terminate()
        except (OSError, ValueError, AttributeError):  # gone already
            pass


class LocalExecutor:
    """A process pool on this machine. Stopped part-way (an exception in the caller while
    it iterates, e.g. a signal, or the iterator closed), it terminates its workers and
    shuts the pool down before the exception goes on: no worker outlives it, and the
    pool's semaphores are released (no "leaked semaphore" warning at exit)."""

    def __init__(self, workers: int | None = None, retries: int = 2):
        self.workers = workers or os.cpu_count() or 1
        self.retries = retries
        self.context = pool_context()
        self.description = f"local process pool, {self.workers} worker(s)"

    def _pool(self) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(max_workers=self.workers, mp_context=self.context,
                                   initializer=_init_worker, initargs=(os.getpid(),))

    def run(self, tasks: list[Task]) -> Iterator[Finished]:
        remaining = list(tasks)
        restarts = 0
        while remaining:
            pool = self._pool()
            finished: set[str] = set()
            broken: BaseException | None = None
            try:
                futures = {pool.submit(run_task, t): t for t in remaining}
                for fut in as_completed(futures):
                    t = futures[fut]
                    try:
                        res: TaskOutcome | BaseException = fut.result()
                    except BrokenProcessPool as exc:
                        broken = exc
                        continue
                    except Exception as exc:
                        res = exc
                    finished.add(t.key)
                    yield t, res
            except BaseException:  # stopped (a signal, the caller closing us): stop now
                _terminate_workers(pool)
                raise
            finally:
                pool.shutdown(wait=True, cancel_futures=True)
            remaining = [t for t in remaining if t.key not in finished]
            if broken is None:
                break
            restarts += 1
            if restarts > self.retries:
                for t in remaining:
                    yield t, RuntimeError(f"a worker process died ({broken}); gave up after "
                                          f"{self.retries} pool restart(s)")
                break

    def close(self) -> None:
        pass


# ---------------------------------------------------------------------- dask


class DaskExecutor:
    """Tasks on a Dask cluster (an existing scheduler, or a LocalCluster started here).

    Raises ConfigError when ``distributed`` is not installed or the scheduler cannot be
    reached."""

    def __init__(self, scheduler: str | None = None, workers: int | None = None,
                 retries: int = 2, cluster: object | None = None):
        try:
            import distributed
        except ImportError:
            raise ConfigError(
                "executor", "'dask' needs the cluster extra: pip install 'attnsignal[cluster]'",
                "dask",
            ) from None
        self.retries = retries
        self.cluster = None
        if cluster is not None:  # a cluster started by a subclass; closed by it
            self.client = distributed.Client(cluster)
            self.description = f"Dask cluster {type(cluster).__name__}"
        elif scheduler:
            try:
                self.client = distributed.Client(scheduler, timeout="20s")
            except (OSError, TimeoutError) as exc:
                raise ConfigError("scheduler", f"cannot connect ({exc}); is `dask scheduler` "
                                  "running there", scheduler) from None
            n = len(self.client.scheduler_info().get("workers", {}))
            self.description = f"Dask scheduler {scheduler} ({n} worker(s) now)"
        else:
            n = workers or os.cpu_count() or 1
            self.cluster = distributed.LocalCluster(
                n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None,
            )
            self.client = distributed.Client(self.cluster)
            self.description = f"Dask LocalCluster, {n} worker process(es)"

    def run(self, tasks: list[Task]) -> Iterator[Finished]:
        from distributed import as_completed as dask_completed

        tag = uuid.uuid4().hex[:8]
        futures = {}
        for t in tasks:
            fut = self.client.submit(run_task, t, key=f"attnsignal-sweep-{tag}-{t.key[:16]}",
                                     pure=False, retries=self.retries)
            futures[fut.key] = (fut, t)
        try:
            for fut, res in dask_completed([f for f, _ in futures.values()], with_results=True,
                                           raise_errors=False):
                if fut.status == "error":
                    res = res[1] if isinstance(res, tuple) and len(res) == 3 else fut.exception()
                elif fut.status == "cancelled" and not isinstance(res, BaseException):
                    res = RuntimeError("the task was cancelled by the scheduler")
                yield futures[fut.key][1], res
        finally:
            for fut, _ in futures.values():
                fut.release()

    def close(self) -> None:
        try:
            self.client.close()
        finally:
            if self.cluster is not None:
                self.cluster.close()


class SlurmExecutor(DaskExecutor):
    """Tasks on Slurm jobs through dask-jobqueue (see :mod:`attnsignal.sweep.slurm`).

    Raises ConfigError when dask-jobqueue or Slurm's ``sbatch`` is missing."""

    def __init__(self, options: SlurmOptions, retries: int = 2):
        self._jobs = slurm_cluster(options)
        cluster = self._jobs.__enter__()
        try:
            super().__init__(retries=retries, cluster=cluster)
        except BaseException:
            self._jobs.__exit__(None, None, None)
            raise
        where = f"partition {options.partition}" if options.partition else "default partition"
        self.description = (f"Slurm: {options.jobs} job(s) × {options.cores} worker(s), "
                            f"{where}, walltime {options.walltime}")

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._jobs.__exit__(None, None, None)


def make_executor(name: str, *, scheduler: str | None, workers: int | None,
                  retries: int, slurm: SlurmOptions | None = None) -> Executor:
    """The executor called ``name`` (one of :data:`EXECUTORS`); ``slurm`` configures the
    ``"slurm"`` one (default ``SlurmOptions()``)."""
    if name == "serial":
        return SerialExecutor()
    if name == "local":
        return LocalExecutor(workers, retries)
    if name == "dask":
        return DaskExecutor(scheduler, workers, retries)
    if name == "slurm":
        return SlurmExecutor(slurm or SlurmOptions(), retries)
    raise ConfigError("executor", "must be one of " + ", ".join(map(repr, EXECUTORS)), name)
