"""Slurm options and the Slurm-backed Dask cluster of ``--executor slurm``.

A sweep (or the reproduction) on Slurm runs on a Dask cluster whose workers are Slurm batch
jobs, started by dask-jobqueue's ``SLURMCluster`` from the machine that runs the command (a
login node): ``jobs`` jobs, each with ``cores`` worker processes of one thread and ``memory``
in all, in ``partition`` under ``account`` for ``walltime``. The scheduler lives in the
coordinating process; the sweep directory must be on a file system the compute nodes see at
the same path.

Walltime: every worker retires by itself a margin before the job's walltime (dask's
``--lifetime``, the margin is a tenth of the walltime, at most 5 minutes) and the cluster
keeps ``jobs`` jobs alive (a job that leaves the queue is replaced within ``poll_seconds``), so a long
sweep runs through many generations of jobs. A task running on a job that dies (walltime,
``scancel``, preemption, node failure) is re-run on another worker; a task that keeps
killing its workers is reported as failed and its shard stays missing. In every case the
finished shards stay on disk and re-running the same command computes only what is missing.
A task must therefore take well under the walltime: choose ``--chunk-runs`` accordingly.

The options come from a ``[slurm]`` table of the sweep spec, from keyword arguments, or from
command-line flags (which override the table); they are validated by the same constraint
tables as every configuration (:class:`~attnsignal.config.ConfigError`, one line).
"""

from __future__ import annotations

import math
import re
import sys
from contextlib import contextmanager
from dataclasses import asdict, dataclass, fields
from typing import Any, Callable, Iterator, Mapping

from ..config import ConfigError
from ..validation import Integer, Optional, Predicate, Real, check_keys, validate_fields

__all__ = ["SlurmOptions", "slurm_cluster", "slurm_job_script", "walltime_seconds",
           "memory_bytes"]

_WALLTIME = re.compile(r"^(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?$")
_MEMORY = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(B|kB|KB|MB|GB|TB|KiB|MiB|GiB|TiB|K|M|G|T)\s*$")
_UNITS = {"B": 1, "kB": 10**3, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
          "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40,
          "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
#: The longest time limit Slurm stores: minutes in 32 bits, less its two reserved values.
MAX_WALLTIME_MINUTES = 2**32 - 3
#: Slurm's --mem counts whole MiB; the largest size is capped at 1 EiB (no node comes near).
MIN_MEMORY, MAX_MEMORY = 2**20, 2**60
#: A partition or account name: letters, digits, '_', '.', '-' (not leading), as slurm.conf
#: and sacctmgr accept them; a partition may be a comma-separated list of such names.
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*$")
_TIME_TEXT = ("a Slurm time: MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS with minutes "
              "and seconds < 60 and hours < 24 after a day count, positive, at most "
              f"{MAX_WALLTIME_MINUTES} minutes (e.g. '01:30:00', '90', '2-00:00:00')")
_SIZE_TEXT = ("a positive size with a unit, 1 MiB to 1 EiB, such as '4GB', '500MB' or '2GiB' "
              "(K, M, G, T are Slurm's binary units)")


def walltime_seconds(text: str) -> int:
    """Seconds of a Slurm time limit, read as ``sbatch --time`` reads it: ``MM``, ``MM:SS``,
    ``HH:MM:SS``, ``D-HH``, ``D-HH:MM``, ``D-HH:MM:SS``; a field after the leading one is
    below 60 (minutes, seconds) or 24 (hours after ``D-``). Raises ConfigError (field
    ``slurm.walltime``) for anything else, a zero time, or more than
    :data:`MAX_WALLTIME_MINUTES` minutes."""
    m = _WALLTIME.match(text.strip()) if isinstance(text, str) else None
    if m is None:
        raise ConfigError("slurm.walltime", f"must be {_TIME_TEXT}", text)
    days, a, b, c = m.groups()
    parts = [int(x) for x in (a, b, c) if x is not None]
    if days is not None:  # D-HH[:MM[:SS]]
        h, mi, s = (parts + [0, 0])[:3]
        bounded = [(h, 24), (mi, 60), (s, 60)]
        total = int(days) * 86400 + h * 3600 + mi * 60 + s
    elif len(parts) == 1:  # MM
        bounded, total = [], parts[0] * 60
    elif len(parts) == 2:  # MM:SS
        bounded, total = [(parts[1], 60)], parts[0] * 60 + parts[1]
    else:  # HH:MM:SS
        bounded = [(parts[1], 60), (parts[2], 60)]
        total = parts[0] * 3600 + parts[1] * 60 + parts[2]
    if any(v >= limit for v, limit in bounded) or not 0 < total <= 60 * MAX_WALLTIME_MINUTES:
        raise ConfigError("slurm.walltime", f"must be {_TIME_TEXT}", text)
    return total


def memory_bytes(text: str) -> int:
    """Bytes of a memory size such as ``"4GB"``, ``"500MB"``, ``"2GiB"`` (``"4G"`` is
    Slurm's GiB), between :data:`MIN_MEMORY` and :data:`MAX_MEMORY`. Raises ConfigError
    (field ``slurm.memory``)."""
    m = _MEMORY.match(text) if isinstance(text, str) else None
    n = float(m.group(1)) * _UNITS[m.group(2)] if m is not None else math.nan
    if not MIN_MEMORY <= n <= MAX_MEMORY:
        raise ConfigError("slurm.memory", f"must be {_SIZE_TEXT}", text)
    return int(n)


def _is_time(v: Any) -> bool:
    try:
        walltime_seconds(v)
    except ConfigError:
        return False
    return True


def _is_size(v: Any) -> bool:
    try:
        memory_bytes(v)
    except ConfigError:
        return False
    return True


def _is_name(v: Any) -> bool:
    return isinstance(v, str) and bool(_NAME.match(v))


def _is_partition(v: Any) -> bool:
    return isinstance(v, str) and all(_NAME.match(p) for p in v.split(","))


def _is_path(v: Any) -> bool:
    return isinstance(v, str) and bool(v.strip()) and "\n" not in v


def _is_lines(v: Any, item: Callable[[str], bool] = lambda s: True) -> bool:
    return (isinstance(v, (list, tuple))
            and all(isinstance(x, str) and x.strip() and "\n" not in x and "\r" not in x
                    and item(x.strip()) for x in v))


def _directive(v: str) -> str:
    v = v.strip()
    return v[len("#SBATCH"):].strip() if v.startswith("#SBATCH") else v


def _lines(coerce: Callable[[str], str] = str.strip) -> Callable[[Any], tuple[str, ...]]:
    return lambda v: tuple(coerce(x) for x in v)


#: One constraint per field (:mod:`attnsignal.validation`).
_TABLE = {
    "partition": Optional(Predicate(
        _is_partition, "must be a partition name, or a comma-separated list of them (letters, "
        "digits, '_', '.', '-')", str, examples=("short", "short,long"),
        counterexamples=("a b", "", 3, "$(id)", "a;b", "part#1", "a,b,"))),
    "account": Optional(Predicate(
        _is_name, "must be an account name (letters, digits, '_', '.', '-')", str,
        examples=("lab",), counterexamples=("a b", "", 3, "$(id)", "a;b", "a,b"))),
    "walltime": Predicate(_is_time, f"must be {_TIME_TEXT}", str, examples=("01:00:00",),
                          counterexamples=("soon", "0", "1:2:3:4", 60, "99:99:99", "1:60",
                                           "1-24:00:00")),
    "memory": Predicate(_is_size, f"must be {_SIZE_TEXT}", str, examples=("4GB",),
                        counterexamples=("4", "0GB", "lots", 4, "99999999999",
                                         "0.0000001GB")),
    "cores": Integer(ge=1, le=4096),
    "jobs": Integer(ge=1, le=100_000),
    "sbatch": Predicate(lambda v: _is_lines(v, lambda s: _directive(s).startswith("-")),
                        "must be a list of sbatch options such as '--qos=short' (the '#SBATCH ' "
                        "prefix is added)", _lines(_directive), examples=(("--qos=short",),),
                        counterexamples=("--qos=short", ("qos",), ("a\nb",))),
    "prologue": Predicate(_is_lines, "must be a list of one-line shell commands", _lines(),
                          examples=(("module load python",),),
                          counterexamples=("ls", ("",), ("a\nb",))),
    "interface": Optional(Predicate(_is_name, "must be a network interface name such as 'ib0'",
                                    str, examples=("ib0",), counterexamples=("i b", ""))),
    "log_directory": Optional(Predicate(_is_path, "must be a directory path", str,
                                        examples=("logs",), counterexamples=("", "a\nb", 3))),
    "python": Optional(Predicate(_is_path, "must be the path of a Python executable", str,
                                 examples=("python3",), counterexamples=("", "a\nb", 3))),
    "poll_seconds": Real(ge=0.1, le=3600),
}


@dataclass(frozen=True)
class SlurmOptions:
    """How the Slurm jobs of ``--executor slurm`` are requested.

    partition : ``#SBATCH -p`` (None: the cluster's default partition)
    account : ``#SBATCH -A`` (None: your default account)
    walltime : the time limit of each job, ``HH:MM:SS`` (or any Slurm time format)
    memory : memory per job, e.g. ``"4GB"`` (shared by the job's worker processes)
    cores : CPU cores per job = worker processes per job (one thread each), >= 1
    jobs : number of jobs kept running (the cluster has ``jobs × cores`` workers), >= 1
    sbatch : extra ``#SBATCH`` directives, e.g. ``["--qos=short", "--constraint=skylake"]``
    prologue : shell lines run before the worker starts, e.g. ``["module load python"]``
    interface : the network interface workers and scheduler talk on (``"ib0"``, ``"lo"``
        for a single machine); None: the default route's
    log_directory : where Slurm writes the jobs' output (None: the working directory)
    python : the Python of the workers (None: this interpreter, ``sys.executable``)
    poll_seconds : how often ``squeue`` is asked which jobs left the queue (to replace them)

    Raises ConfigError (``slurm.<field>: allowed; got value``) on a bad value.
    """

    partition: str | None = None
    account: str | None = None
    walltime: str = "01:00:00"
    memory: str = "4GB"
    cores: int = 1
    jobs: int = 1
    sbatch: tuple[str, ...] = ()
    prologue: tuple[str, ...] = ()
    interface: str | None = None
    log_directory: str | None = None
    python: str | None = None
    poll_seconds: float = 30.0

    def __post_init__(self) -> None:
        validate_fields(self, _TABLE, prefix="slurm.")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None, prefix: str = "slurm") -> "SlurmOptions":
        """From a ``[slurm]`` table; an unknown key raises ConfigError naming it."""
        if data is None:
            return cls()
        if not isinstance(data, Mapping):
            raise ConfigError(prefix, "must be a table", data)
        check_keys(data, [f.name for f in fields(cls)], prefix=f"{prefix}.")
        return cls(**dict(data))

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["sbatch"], d["prologue"] = list(self.sbatch), list(self.prologue)
        return d

    def merged(self, **overrides: Any) -> "SlurmOptions":
        """These options with the given ones (those not None) replacing them."""
        d = self.to_dict()
        d.update({k: v for k, v in overrides.items() if v is not None})
        return SlurmOptions(**d)

    @property
    def lifetime_seconds(self) -> int:
        """When a worker retires by itself: the walltime less a tenth (at most 5 min)."""
        w = walltime_seconds(self.walltime)
        return max(w - min(300, w // 10), 1)

    def cluster_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of ``dask_jobqueue.SLURMCluster``."""
        life = self.lifetime_seconds
        stagger = max(min(60, life // 20), 0)
        kw: dict[str, Any] = dict(
            queue=self.partition, account=self.account, walltime=self.walltime,
            memory=self.memory, cores=self.cores, processes=self.cores,
            job_extra_directives=list(self.sbatch), job_script_prologue=list(self.prologue),
            interface=self.interface, log_directory=self.log_directory,
            python=self.python or sys.executable, job_name="attnsignal",
            worker_extra_args=["--lifetime", f"{life}s", "--lifetime-stagger", f"{stagger}s"],
            scheduler_options={"dashboard_address": ":0"},
        )
        return kw


def _require_jobqueue() -> Any:
    try:
        import dask_jobqueue
    except ImportError:
        raise ConfigError("executor", "'slurm' needs dask-jobqueue: pip install "
                          "'attnsignal[cluster]'", "slurm") from None
    return dask_jobqueue


def slurm_job_script(options: SlurmOptions) -> str:
    """The batch script each Slurm job runs (what ``--dry-run`` prints). Submits nothing."""
    jq = _require_jobqueue()
    cluster = jq.SLURMCluster(**options.cluster_kwargs())
    try:
        return cluster.job_script()
    finally:
        cluster.close()


_LIVE_STATES = "PENDING,RUNNING,CONFIGURING,COMPLETING,SUSPENDED,REQUEUED,RESIZING"


def _queued_job_ids() -> set[str] | None:
    """This user's live Slurm job ids (None when ``squeue`` fails: nothing is concluded)."""
    import getpass
    import subprocess

    try:
        p = subprocess.run(["squeue", "-h", "-u", getpass.getuser(), "-t", _LIVE_STATES,
                            "-o", "%i"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if p.returncode != 0:
        return None
    return {line.strip() for line in p.stdout.split() if line.strip()}


async def _replace_jobs(cluster: Any, gone: list[str]) -> None:
    """On the cluster's event loop: forget the jobs in ``gone`` and submit one new job (under
    a new name) for each."""
    for name in gone:
        if name in cluster.workers and name in cluster.worker_spec:
            del cluster.workers[name]
            del cluster.worker_spec[name]
            new = cluster.new_worker_spec()
            while name in new:  # a fresh name: distributed's late clean-up of the lost
                cluster._i += 1  # worker (lost-worker-timeout) must not hit the new job
                new = cluster.new_worker_spec()
            cluster.worker_spec.update(new)
    await cluster._correct_state()


def _keep_jobs_alive(cluster: Any, stop: Any, poll: float) -> None:
    """Every ``poll`` seconds, replace the cluster's jobs that have left the Slurm queue
    (walltime, scancel, preemption, node failure). dask-jobqueue replaces a lost job only
    after ``lost-worker-timeout`` and not at all when a job runs several worker processes,
    so the executor does it itself."""
    while not stop.wait(poll):
        jobs = {name: getattr(job, "job_id", None) for name, job in list(cluster.workers.items())}
        alive = _queued_job_ids()
        if alive is None:
            continue
        gone = [name for name, jid in jobs.items() if jid and jid not in alive]
        if gone:
            try:
                cluster.loop.add_callback(_replace_jobs, cluster, gone)
            except RuntimeError:  # the loop is closing
                return


@contextmanager
def slurm_cluster(options: SlurmOptions) -> Iterator[Any]:
    """A ``SLURMCluster`` of ``options.jobs`` jobs, each replaced when it leaves the queue
    (checked every ``options.poll_seconds``); every job is cancelled on exit.

    Raises ConfigError when dask-jobqueue is missing or ``sbatch`` is not on the PATH."""
    import shutil
    import threading

    poll = options.poll_seconds
    jq = _require_jobqueue()
    if shutil.which("sbatch") is None:
        raise ConfigError("executor", "'slurm' needs Slurm's sbatch on the PATH (run on a "
                          "login node of the cluster)", "slurm")
    cluster = jq.SLURMCluster(**options.cluster_kwargs())
    stop = threading.Event()
    keeper = threading.Thread(target=_keep_jobs_alive, args=(cluster, stop, poll),
                              name="attnsignal-slurm-jobs", daemon=True)
    try:
        cluster.scale(jobs=options.jobs)
        keeper.start()
        yield cluster
    finally:
        stop.set()
        if keeper.is_alive():
            keeper.join(timeout=poll + 35)
        cluster.close()
