"""Sweep tasks: a grid point and a chunk of its runs, computed into one Parquet shard.

A task runs ``simulate(model, step, first_run=r0, runs=k, spawn_prefix=(*key, point), ...)``
(``key`` the ``[sweep]`` table's ``spawn_key``, empty by default), so run ``r`` of point ``p``
always uses ``SeedSequence(seed, spawn_key=(*key, p, r))`` and is bit-identical whatever the
executor, the number of workers or the chunk size.

The shard is named by a content hash of everything that determines it (the configs, seed,
engine, update, point index, run range, package version); the same identity is stored inside
the shard (Parquet key-value metadata :data:`SHARD_META`: the key, point and run range), so a
shard copied or renamed onto another task's name is detected by :func:`shard_identity_problem`
even when its checksum sidecar travelled with it. :func:`run_task` writes the shard
atomically, then its checksum sidecar ``<shard>.sha256``, and returns the path and checksum.
Only the coordinating process writes the sweep manifest.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

from .._version import __version__
from ..config import ModelConfig, RunConfig, StepSize
from .spec import GridPoint, SweepSpec

__all__ = [
    "Task", "TaskOutcome", "plan_tasks", "default_chunk", "run_task", "sha256_bytes",
    "SHARD_FORMAT", "SHARD_DIR", "SHARD_META", "shard_parquet_bytes", "shard_identity_problem",
]

#: format 2: the shard carries its identity in its Parquet metadata
SHARD_FORMAT = "attnsignal.sweep-shard/2"
#: Parquet key-value metadata key holding ``{"key", "point", "first_run", "runs"}`` (JSON)
SHARD_META = b"attnsignal.shard"
SHARD_DIR = "shards"
#: The default chunking aims at this many tasks per sweep (at most ``runs`` per point).
TARGET_TASKS = 32


@dataclass(frozen=True)
class Task:
    """One unit of work: runs ``first_run .. first_run + runs − 1`` of grid point ``point``.

    ``file`` is the shard's path relative to the sweep directory, ``path`` its absolute path
    (what a worker writes; workers must see the sweep directory at that path).
    """

    point: int
    first_run: int
    runs: int
    key: str
    file: str
    path: str
    model: ModelConfig
    step: StepSize
    run: RunConfig
    version: str = __version__

    @property
    def sidecar(self) -> str:
        return self.path + ".sha256"

    def label(self) -> str:
        last = self.first_run + self.runs - 1
        return f"point {self.point}, runs {self.first_run}–{last}"


@dataclass(frozen=True)
class TaskOutcome:
    """What a worker reports back for a finished task."""

    key: str
    file: str
    sha256: str
    rows: int
    seconds: float
    diverged: int
    worker: str


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def default_chunk(runs: int, n_points: int) -> int:
    """Runs per task when none is given: about :data:`TARGET_TASKS` tasks in all (a sweep
    with fewer points splits each point's runs), depending on the spec only, so that a
    re-run finds the same shards whatever the number of workers."""
    chunks_per_point = max(1, math.ceil(TARGET_TASKS / max(1, n_points)))
    return max(1, math.ceil(runs / chunks_per_point))


def shard_key(p: GridPoint, first_run: int, runs: int) -> str:
    """sha256 of everything that determines a shard's content."""
    run = p.run.to_dict()
    run.pop("runs")  # the chunk's own range below is what matters
    if run.get("method") == "sga":  # attention: the same key as before baselines existed
        run.pop("method")
    body = {
        "format": SHARD_FORMAT,
        "version": __version__,
        "point": p.index,
        "first_run": first_run,
        "runs": runs,
        "model": p.model.to_dict(),
        "step": p.step.to_dict(),
        "run": run,
    }
    text = json.dumps(body, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def plan_tasks(spec: SweepSpec, out: str | os.PathLike[str], chunk_runs: int | None) -> list[Task]:
    """Every task of ``spec`` in (point, first run) order; ``chunk_runs`` runs per task
    (None: :func:`default_chunk`)."""
    root = Path(out).absolute()
    tasks = []
    for p in spec.points():
        k = chunk_runs if chunk_runs is not None else default_chunk(p.run.runs, spec.n_points)
        for r0 in range(0, p.run.runs, k):
            n = min(k, p.run.runs - r0)
            key = shard_key(p, r0, n)
            file = f"{SHARD_DIR}/p{p.index:05d}-r{r0:07d}-{key[:24]}.parquet"
            tasks.append(Task(point=p.index, first_run=r0, runs=n, key=key, file=file,
                              path=str(root / file), model=p.model, step=p.step, run=p.run,
                              version=__version__))
    return tasks


# ---------------------------------------------------------------------- worker side

_IN_WORKER = False


def mark_worker_process() -> None:
    """Called in pool / cluster worker processes: one compute thread per worker."""
    global _IN_WORKER
    _IN_WORKER = True


def _single_thread() -> None:
    """One numba thread and one BLAS thread in this worker (:mod:`attnsignal._blas`).

    numba reads ``NUMBA_NUM_THREADS`` again at every compilation and refuses a value other
    than the one its threads were launched with. So the environment says 1 only while the
    threads are not launched yet (then they launch with 1); a worker whose threads were
    launched already (a forkserver's preload, an earlier task) keeps their count in the
    environment and runs on one of them (``set_num_threads(1)``), and
    :func:`~attnsignal.engines.base.compute_threads` says 1 either way."""
    from .._blas import set_blas_threads
    from ..engines.base import limit_compute_threads

    set_blas_threads(1)
    limit_compute_threads(1)
    if "numba" not in sys.modules:
        os.environ["NUMBA_NUM_THREADS"] = "1"  # for the numba imported later
        return
    import numba
    from numba.core import config
    from numba.np.ufunc import parallel

    if not parallel._is_initialized:
        os.environ["NUMBA_NUM_THREADS"] = "1"
        config.reload_config()
    else:
        os.environ["NUMBA_NUM_THREADS"] = str(config.NUMBA_NUM_THREADS)
    numba.set_num_threads(1)


def run_task(task: Task) -> TaskOutcome:
    """Compute ``task``, write its shard atomically, then its ``.sha256`` sidecar.

    Raises whatever the simulation or the file system raises (the coordinator reports it
    with the task's grid point), and RuntimeError when the worker's package version is not
    the coordinator's (the shard name would lie about its content).
    """
    from ..persistence import atomic_write
    from ..simulate import simulate

    if task.version != __version__:
        raise RuntimeError(
            f"worker has attnsignal {__version__}, the sweep was planned with {task.version}; "
            "install the same version on every worker"
        )
    if _IN_WORKER or _in_dask_worker():
        _single_thread()
    t0 = time.perf_counter()
    kwargs = task.run.to_dict()
    kwargs["runs"] = task.runs
    method = kwargs.pop("method", "sga")
    prefix = (*(kwargs.pop("spawn_key", None) or ()), task.point)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the coordinator reports schedule warnings once
        if method == "sga":
            res = simulate(task.model, task.step, first_run=task.first_run,
                           spawn_prefix=prefix, **kwargs)
        else:  # a baseline on the same token stream: steps are samples, [step] is Oja's
            from ..baselines import baseline

            res = baseline(task.model, method, samples=kwargs["steps"], runs=task.runs,
                           seed=kwargs["seed"], record_every=kwargs["record_every"],
                           record=kwargs.get("record"),
                           step=task.step if method == "oja" else None,
                           first_run=task.first_run, spawn_prefix=prefix)
    frame = res.to_frame()
    data = shard_parquet_bytes(frame, task)
    digest = sha256_bytes(data)
    atomic_write(task.path, lambda p: Path(p).write_bytes(data))
    atomic_write(task.sidecar, lambda p: Path(p).write_text(digest + "\n"))
    return TaskOutcome(
        key=task.key, file=task.file, sha256=digest, rows=len(frame),
        seconds=time.perf_counter() - t0, diverged=int(res.diverged.sum()),
        worker=f"{os.uname().nodename}:{os.getpid()}",
    )


def _identity(task: Task) -> dict[str, object]:
    return {"key": task.key, "point": task.point, "first_run": task.first_run, "runs": task.runs}


def shard_parquet_bytes(frame, task: Task) -> bytes:
    """The shard of ``task``: ``frame`` as Parquet with the task's identity in its metadata."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(frame, preserve_index=False)
    meta = dict(table.schema.metadata or {})
    meta[SHARD_META] = json.dumps(_identity(task), sort_keys=True).encode()
    table = table.replace_schema_metadata(meta)
    buf = io.BytesIO()
    pq.write_table(table, buf)
    return buf.getvalue()


def shard_identity_problem(data: bytes, entry: dict) -> str | None:
    """Why the shard bytes ``data`` are not the shard of manifest ``entry`` (its ``key``,
    ``point``, ``first_run``, ``runs``), or None when they are: the identity stored in the
    shard must be the entry's, and its ``run`` column must hold exactly the entry's runs."""
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(io.BytesIO(data))
        meta = (pf.schema_arrow.metadata or {}).get(SHARD_META)
        ident = json.loads(meta) if meta is not None else None
    except Exception as exc:  # pyarrow raises several types
        return f"not a readable Parquet file ({type(exc).__name__})"
    if not isinstance(ident, dict):
        return "carries no shard identity (not written by this version)"
    want = {k: entry.get(k) for k in ("key", "point", "first_run", "runs")}
    if ident != want:
        return (f"holds point {ident.get('point')}, runs from {ident.get('first_run')} "
                f"(x{ident.get('runs')}), not the point {want['point']}, runs from "
                f"{want['first_run']} (x{want['runs']}) it is filed under")
    try:
        runs = pf.read(columns=["run"]).column("run").to_numpy()
    except Exception as exc:
        return f"has no readable run column ({type(exc).__name__})"
    lo, n = int(want["first_run"]), int(want["runs"])
    got = set(int(r) for r in runs.tolist())
    if got != set(range(lo, lo + n)):
        return f"holds runs {sorted(got)[:5]}…, not {lo}–{lo + n - 1}"
    return None


def _in_dask_worker() -> bool:
    if "distributed" not in sys.modules:
        return False
    try:
        from distributed import get_worker

        get_worker()
        return True
    except Exception:
        return False
