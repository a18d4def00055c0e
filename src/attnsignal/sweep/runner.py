"""``run_sweep``: plan the tasks of a spec, skip the finished shards, run the rest.

The coordinating process (the one calling :func:`run_sweep`) is the only writer of the
manifest; workers write shards and checksum sidecars and return the path and checksum.
Re-running the same call resumes: finished shards are verified and skipped, missing, partial
and corrupted ones are recomputed, and no row is ever stored twice (a shard's name is a hash
of its content's determinants, and :func:`load_sweep` reads exactly the planned shards).
"""

from __future__ import annotations

import os
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from ..config import ConfigError, NotRobbinsMonroWarning
from ..engines import get_engine
from ..limits import check_memory, format_bytes
from ..paths import check_output_dir
from ..validation import Integer, OneOf, Optional
from .executors import EXECUTORS, Executor, make_executor
from .slurm import SlurmOptions
from .spec import SweepSpec
from .store import (
    MANIFEST, ManifestWriter, SweepStoreError, check_shard, discard_shard, locked,
    new_manifest, read_manifest, remove_stale_temporaries,
)
from .tasks import Task, TaskOutcome, plan_tasks

__all__ = ["run_sweep", "SweepReport", "TaskFailure"]


_WORKERS = Optional(Integer(ge=1))
_CHUNK_RUNS = Optional(Integer(ge=1))
_RETRIES = Integer(ge=0)


@dataclass(frozen=True)
class TaskFailure:
    """A task that raised: its grid point, run range and the error (one line)."""

    point: int
    first_run: int
    runs: int
    values: Mapping[str, Any]
    error: str

    def __str__(self) -> str:
        vals = ", ".join(f"{k}={v!r}" for k, v in self.values.items())
        where = f"point {self.point}" + (f" ({vals})" if vals else "")
        return f"{where}, runs {self.first_run}–{self.first_run + self.runs - 1}: {self.error}"

    def to_dict(self) -> dict[str, Any]:
        return {"point": self.point, "first_run": self.first_run, "runs": self.runs,
                "values": dict(self.values), "error": self.error}


@dataclass(frozen=True)
class SweepReport:
    """What :func:`run_sweep` did.

    tasks : shards in the plan;  skipped : already done (verified) before this call
    recovered : of those, shards the manifest had lost, recovered from their sidecars
    corrupt : shards found corrupt and recomputed;  computed : tasks finished by this call
    failed : tasks that raised (their shards stay missing; re-running retries them)
    diverged : runs that diverged among the computed tasks
    """

    out: Path
    points: int
    tasks: int
    skipped: int
    recovered: int
    corrupt: int
    computed: int
    failed: list[TaskFailure] = field(default_factory=list)
    diverged: int = 0
    seconds: float = 0.0
    executor: str = ""

    @property
    def ok(self) -> bool:
        """Every shard is done."""
        return not self.failed and self.skipped + self.computed == self.tasks

    def failed_points(self) -> list[int]:
        return sorted({f.point for f in self.failed})

    def summary(self) -> str:
        s = (f"{self.tasks} shard(s) over {self.points} point(s): {self.computed} computed, "
             f"{self.skipped} already done")
        if self.recovered:
            s += f" ({self.recovered} recovered from sidecars)"
        if self.corrupt:
            s += f", {self.corrupt} corrupt recomputed"
        if self.failed:
            s += f", {len(self.failed)} FAILED (points {self.failed_points()})"
        return s + f" — {self.seconds:.1f} s"


#: Memory one worker process needs before it computes anything (interpreter + libraries).
WORKER_BYTES = 200 * 2**20


def check_executor_options(executor: str, scheduler: str | None = None,
                           workers: int | None = None, chunk_runs: int | None = None,
                           retries: int = 0) -> None:
    """Validate how a sweep is to be run; :class:`~attnsignal.config.ConfigError` (one line
    naming the option) on a bad combination. Used by :func:`run_sweep` and by callers that
    must fail before writing anything (``attnsignal reproduce``)."""
    OneOf(*EXECUTORS).check("executor", executor)
    if scheduler is not None:
        if executor != "dask":
            raise ConfigError("scheduler", "only with executor 'dask'", scheduler)
        if not isinstance(scheduler, str) or not scheduler:
            raise ConfigError("scheduler", "must be an address such as 'tcp://host:8786'",
                              scheduler)
    if _WORKERS.check("workers", workers) is not None:
        # each worker is a process with numpy, pandas and numba loaded
        check_memory("workers", float(workers) * WORKER_BYTES,
                     f"{workers} worker processes (≈ {format_bytes(WORKER_BYTES)} each)", workers)
        if scheduler is not None or executor in ("serial", "slurm"):
            raise ConfigError("workers", "only for executor 'local', or 'dask' without a "
                              "scheduler address (a running cluster has its own workers; "
                              "on Slurm use slurm.jobs and slurm.cores)", workers)
    _CHUNK_RUNS.check("chunk_runs", chunk_runs)
    _RETRIES.check("retries", retries)


def _as_spec(spec: Any) -> SweepSpec:
    if isinstance(spec, SweepSpec):
        return spec
    if isinstance(spec, (str, os.PathLike)):
        return SweepSpec.from_toml(spec)
    if isinstance(spec, Mapping):
        return SweepSpec.from_dict(spec)
    raise ConfigError("spec", "must be a SweepSpec, a TOML path or a dict", type(spec).__name__)


def _warn_schedules(spec: SweepSpec) -> None:
    seen = set()
    for p in spec.points():
        if p.step not in seen and not p.step.robbins_monro:
            seen.add(p.step)
            warnings.warn(f"{p.label()}: the schedule is not Robbins–Monro "
                          f"({p.step.not_robbins_monro_reason()})", NotRobbinsMonroWarning,
                          stacklevel=3)


class _Bar:
    """A rich progress bar over tasks (with ETA) on stderr, or nothing."""

    def __init__(self, enabled: bool, total: int, done: int, description: str):
        self.prog = None
        if not enabled:
            return
        from rich.console import Console
        from rich.progress import (
            BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self.prog = Progress(
            TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
            TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn(),
            console=Console(stderr=True),
        )
        self.prog.start()
        self.task = self.prog.add_task(description, total=total, completed=done)

    def advance(self) -> None:
        if self.prog is not None:
            self.prog.advance(self.task, 1)

    def log(self, text: str) -> None:
        if self.prog is not None:
            self.prog.console.print(text, markup=False, highlight=False)

    def close(self) -> None:
        if self.prog is not None:
            self.prog.stop()


def run_sweep(
    spec: SweepSpec | str | os.PathLike[str] | Mapping[str, Any],
    out: str | os.PathLike[str],
    executor: str | Executor = "local",
    scheduler: str | None = None,
    workers: int | None = None,
    chunk_runs: int | None = None,
    progress: bool = True,
    retries: int = 2,
    on_task: Callable[[Task, TaskOutcome | BaseException], None] | None = None,
    slurm: SlurmOptions | Mapping[str, Any] | None = None,
) -> SweepReport:
    """Run (or resume) a sweep into directory ``out``.

    Parameters
    ----------
    spec : a :class:`SweepSpec`, the path of a TOML spec, or the spec as a dict.
    out : the sweep directory (created; must be visible at the same path to every worker).
    executor : ``"local"`` (process pool here, default), ``"dask"``, ``"slurm"`` (Slurm jobs
        through dask-jobqueue) or ``"serial"`` (this process), or a running
        :class:`~attnsignal.sweep.executors.Executor` that several sweeps share (its ``close``
        is called after the sweep; a shared one keeps it open).
    scheduler : with ``"dask"``, the address of a running scheduler; None starts a
        ``LocalCluster`` of ``workers`` processes with one thread each.
    workers : worker processes for ``"local"`` and the ``LocalCluster`` (default
        ``os.cpu_count()``).
    chunk_runs : runs per task (None: what the directory's previous run used, else about 32
        tasks in all). The results do not depend on it.
    progress : a progress bar over tasks on stderr; failures are printed as they happen.
    retries : Dask retries per task / restarts of a broken local pool.
    on_task : called in this process with each finished task and its outcome or exception.
    slurm : with ``"slurm"``, the jobs to request (:class:`~attnsignal.sweep.slurm.SlurmOptions`
        or a ``[slurm]``-shaped dict); None: the spec's ``[slurm]`` table, else the defaults.

    Returns
    -------
    SweepReport. A task that raises does not stop the others; it is listed in
    ``report.failed`` (and in the manifest) and its shard stays missing.

    Raises
    ------
    ConfigError : a bad spec or option, or an ``out`` that cannot be a writable directory
        (before anything is written), or an unreachable scheduler.
    SweepStoreError : ``out`` holds a different sweep, is not a directory, or another sweep
        is running in it.
    """
    t0 = time.perf_counter()
    spec = _as_spec(spec)
    given = None if isinstance(executor, str) else executor
    check_executor_options("local" if given is not None else executor, scheduler, workers,
                           chunk_runs, retries)
    if slurm is not None and executor != "slurm":
        raise ConfigError("slurm", "only with executor 'slurm'", executor)
    if executor == "slurm" and not isinstance(slurm, SlurmOptions):
        slurm = SlurmOptions.from_dict(slurm) if slurm is not None else spec.slurm_options()
    root = check_output_dir(out, "out", create=False)  # a file, unwritable...: nothing runs
    old: dict[str, Any] | None = None
    if (root / MANIFEST).exists():
        try:
            old = read_manifest(root)
        except SweepStoreError:
            old = None  # rebuilt from the spec; shards are recovered from their sidecars
        if old is not None and old.get("identity") != spec.identity():
            raise SweepStoreError(
                f"out: holds a different sweep (its {MANIFEST} records another spec); use "
                f"another directory; got {str(out)!r}"
            )
    if chunk_runs is None and old is not None:
        chunk_runs = old.get("chunk_runs")
    tasks = plan_tasks(spec, root, chunk_runs)
    for p in spec.points():  # variants, sizes and work the engine cannot do, before any work
        get_engine(p.run.engine).check(p.model, p.run)
        get_engine(p.run.engine).check_work(p.model, p.run)
    _warn_schedules(spec)
    values = {p.index: dict(p.values) for p in spec.points()}
    known = {}
    if old is not None:
        known = {s["file"]: s["sha256"] for s in old.get("shards", []) if s.get("sha256")}

    def start() -> Executor:
        if given is not None:
            return given
        return make_executor(executor, scheduler=scheduler, workers=workers, retries=retries,
                             slurm=slurm if isinstance(slurm, SlurmOptions) else None)

    # A new directory is created only once the executor is up (an unreachable scheduler
    # writes nothing); an existing one is locked and verified first (maybe nothing to do).
    ex = start() if not root.exists() else None
    failures: list[TaskFailure] = []
    computed = diverged = 0
    try:
        root.mkdir(parents=True, exist_ok=True)
        with locked(root):
            writer = ManifestWriter(root, new_manifest(spec, tasks, chunk_runs, known))
            todo, skipped, recovered, corrupt = _verify(root, tasks, writer, known)
            writer.flush(complete=not todo)
            if todo:
                ex = ex or start()
                bar = _Bar(progress, len(tasks), skipped, f"sweep · {spec.n_points} points")
                try:
                    computed, diverged = _execute(ex, todo, writer, bar, values, failures,
                                                  on_task)
                finally:
                    bar.close()
                    writer.set_failed([f.to_dict() for f in failures])
                    writer.flush(complete=not failures and skipped + computed == len(tasks))
            remove_stale_temporaries(root)
    finally:
        if ex is not None:
            ex.close()
    return SweepReport(
        out=root, points=spec.n_points, tasks=len(tasks), skipped=skipped,
        recovered=recovered, corrupt=corrupt, computed=computed, failed=failures,
        diverged=diverged, seconds=time.perf_counter() - t0,
        executor=ex.description if ex is not None else "nothing to do",
    )


def _verify(root: Path, tasks: list[Task], writer: ManifestWriter,
            known: Mapping[str, str]) -> tuple[list[Task], int, int, int]:
    """Check every planned shard; discard corrupt ones. Returns (to do, done, of which
    recovered from sidecars, corrupt)."""
    todo: list[Task] = []
    skipped = recovered = corrupt = 0
    for t, entry in zip(tasks, writer.manifest["shards"]):
        state, info = check_shard(root, entry)
        if state == "done":
            skipped += 1
            recovered += t.file not in known
            writer.set_checksum(t.file, info)
            continue
        if state == "corrupt":
            corrupt += 1
            discard_shard(root, entry)
        writer.set_checksum(t.file, None)
        todo.append(t)
    return todo, skipped, recovered, corrupt


def _execute(ex: Executor, todo: list[Task], writer: ManifestWriter, bar: _Bar,
             values: Mapping[int, Mapping[str, Any]], failures: list[TaskFailure],
             on_task: Callable[[Task, TaskOutcome | BaseException], None] | None,
             ) -> tuple[int, int]:
    """Run ``todo`` on ``ex``, record outcomes, append failures. Returns (computed,
    diverged runs)."""
    computed = diverged = 0
    finished = ex.run(todo)
    try:
        computed, diverged = _record(finished, writer, bar, values, failures, on_task)
    finally:  # stopped part-way (a signal): the executor stops its workers now
        close = getattr(finished, "close", None)
        if close is not None:
            close()
    return computed, diverged


def _record(finished: Iterator[tuple[Task, TaskOutcome | BaseException]],
            writer: ManifestWriter, bar: _Bar, values: Mapping[int, Mapping[str, Any]],
            failures: list[TaskFailure],
            on_task: Callable[[Task, TaskOutcome | BaseException], None] | None,
            ) -> tuple[int, int]:
    computed = diverged = 0
    for t, res in finished:
        if isinstance(res, TaskOutcome) and not os.path.exists(t.path):
            res = RuntimeError(
                f"the worker {res.worker} wrote {t.path}, which this machine does not see: "
                "the sweep directory must be on a file system shared by every worker, at the "
                "same path")
        if isinstance(res, TaskOutcome):
            writer.record(res)
            computed += 1
            diverged += res.diverged
        else:
            msg = f"{type(res).__name__}: {res}".replace("\n", " ")
            f = TaskFailure(t.point, t.first_run, t.runs, values[t.point], msg)
            failures.append(f)
            bar.log(f"failed: {f}")
        if on_task is not None:
            on_task(t, res)
        bar.advance()
    return computed, diverged
