"""``attnsignal sweep``: run a grid sweep (``sweep SPEC --out DIR``) or check one
(``sweep status DIR``).

One command whose first argument is either a spec file or the word ``status`` (a spec file
literally called ``status`` can be given as ``./status``).
"""

from __future__ import annotations

import json
import signal
import sys
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Optional

import typer
from rich.table import Table

from ..config import NotRobbinsMonroWarning
from ._app import UsageFailure, app
from . import _slurm as slurm_flags
from ._common import console, out

_HELP = """Run a sweep over a grid of configurations, or report on one.

\b
attnsignal sweep SPEC --out DIR [--executor local|dask|slurm]
    [--scheduler ADDRESS] [--workers N] [--chunk-runs K]
    [--partition P --account A --walltime T --memory M
     --cores-per-job C --jobs J --sbatch OPT --dry-run]
  Run (or resume) the sweep described by the TOML file SPEC into DIR.
  Tasks are (grid point, chunk of runs); each writes one checksummed
  Parquet shard. Re-running the same command skips finished shards and
  recomputes missing or corrupt ones. Exits 1 if some tasks failed
  (listed with their grid point; re-run to retry them). Stopped with
  SIGTERM (scancel, kill), it stops its workers, keeps the finished
  shards, says how to resume and exits 143.

\b
attnsignal sweep status DIR [--json]
  Verify every shard of the sweep in DIR: done / missing / corrupt.
  Exits 0 when the sweep is complete, 1 when it is not.

\b
SPEC tables: \\[sweep] steps, runs, batch, engine, update, seed,
  record_every, initial_alignment; \\[model] d, n_informative,
  n_nuisance, theta, beta, noise_std, signal_sign; \\[step] eta0, k0,
  power; \\[grid] axes naming any of those fields, e.g.
  "model.theta" = \\[0.5, 1.0] — the product of the axes is swept;
  \\[slurm] partition, account, walltime, memory, cores, jobs, sbatch,
  prologue, interface, log_directory, python (for --executor slurm;
  the Slurm flags override it; --dry-run prints the job script).
"""


@app.command("sweep", help=_HELP, no_args_is_help=True)
def sweep_cmd(
    spec: str = typer.Argument(..., metavar="SPEC|status",
                               help="the TOML sweep spec, or the word 'status'"),
    directory: Optional[Path] = typer.Argument(None, metavar="DIR",
                                               help="with 'status': the sweep directory"),
    out_dir: Optional[Path] = typer.Option(None, "--out", help="sweep directory (created; "
                                           "on a file system every worker sees at this path)"),
    executor: str = typer.Option("local", "--executor",
                                 help="'local' (process pool here), 'dask', 'slurm' (Slurm jobs "
                                 "via dask-jobqueue), or 'serial' (in this process, for "
                                 "debugging)"),
    scheduler: Optional[str] = typer.Option(None, "--scheduler", help="address of a running "
                                            "Dask scheduler, e.g. tcp://10.0.0.5:8786 (with "
                                            "--executor dask; default: a LocalCluster)"),
    workers: Optional[int] = typer.Option(None, "--workers", help="worker processes of the "
                                          "local pool or LocalCluster (default: CPU cores)"),
    chunk_runs: Optional[int] = typer.Option(None, "--chunk-runs", help="runs per task "
                                             "(default: about 32 tasks in all; results do "
                                             "not depend on it)"),
    retries: int = typer.Option(2, "--retries", help="retries of a failed Dask task / "
                                "restarts of a broken local pool"),
    quiet: bool = typer.Option(False, "--quiet", help="no progress bar"),
    as_json: bool = typer.Option(False, "--json", help="status: print JSON"),
    partition: Optional[str] = slurm_flags.PARTITION,
    account: Optional[str] = slurm_flags.ACCOUNT,
    walltime: Optional[str] = slurm_flags.WALLTIME,
    memory: Optional[str] = slurm_flags.MEMORY,
    cores_per_job: Optional[int] = slurm_flags.CORES,
    jobs: Optional[int] = slurm_flags.JOBS,
    sbatch: Optional[list[str]] = slurm_flags.SBATCH,
    dry_run: bool = slurm_flags.DRY_RUN,
) -> None:
    flags = dict(partition=partition, account=account, walltime=walltime, memory=memory,
                 cores=cores_per_job, jobs=jobs, sbatch=sbatch, dry_run=dry_run)
    if spec == "status":
        given = {"--out": out_dir, "--scheduler": scheduler, "--workers": workers,
                 "--chunk-runs": chunk_runs}
        extra = [k for k, v in given.items() if v is not None]
        if executor != "local":
            extra.append("--executor")
        extra += [f"--{k.replace('_', '-')}" for k, v in flags.items() if v]
        if extra:
            raise UsageFailure(f"{extra[0]}: not an option of 'sweep status DIR'; got it")
        if directory is None:
            raise UsageFailure("DIR: 'sweep status' needs the sweep directory; got nothing")
        raise typer.Exit(_status(directory, as_json))
    if directory is not None:
        raise UsageFailure(f"DIR: only 'sweep status DIR' takes a directory; use --out; got "
                           f"{str(directory)!r}")
    if as_json:
        raise UsageFailure("--json: only with 'sweep status DIR'; got it")
    if out_dir is None and not dry_run:
        raise UsageFailure("--out: required (the sweep directory); got nothing")
    raise typer.Exit(_run(Path(spec), out_dir, executor, scheduler, workers, chunk_runs,
                          retries, quiet, flags))


def _run(spec_path: Path, out_dir: Path | None, executor: str, scheduler: str | None,
         workers: int | None, chunk_runs: int | None, retries: int, quiet: bool,
         flags: dict) -> int:
    from ..sweep import SweepSpec, SweepStoreError, run_sweep
    from ..sweep.runner import check_executor_options

    spec = SweepSpec.from_toml(spec_path)  # ConfigError → one line, exit 2, nothing written
    check_executor_options(executor, scheduler, workers, chunk_runs, retries)
    slurm = slurm_flags.slurm_options(executor, spec.slurm_options(), **flags)
    if flags["dry_run"]:
        from ..sweep.slurm import slurm_job_script

        out.print(slurm_job_script(slurm), markup=False, highlight=False, soft_wrap=True)
        return 0
    assert out_dir is not None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", NotRobbinsMonroWarning)
        try:
            with _stopped_by_sigterm():
                report = run_sweep(spec, out_dir, executor=executor, scheduler=scheduler,
                                   workers=workers, chunk_runs=chunk_runs,
                                   progress=not quiet, retries=retries, slurm=slurm)
        except SweepStoreError as exc:
            raise UsageFailure(str(exc)) from None
        except _Stopped as exc:
            print(f"attnsignal: sweep stopped by {exc.signame}; finished shards are kept in "
                  f"{out_dir}/ — run the same command again to resume", file=sys.stderr)
            return 128 + exc.signum
    for w in caught:
        if issubclass(w.category, NotRobbinsMonroWarning):
            console.print(f"[yellow]warning:[/] {w.message}")
    out.print(report.summary())
    if report.diverged:
        console.print(f"[yellow]warning:[/] {report.diverged} run(s) diverged (see the "
                      "'diverged' column)")
    if report.failed:
        console.print(f"[red]{len(report.failed)} task(s) failed[/] at points "
                      f"{report.failed_points()}:")
        for f in report.failed:
            console.print(f"  {f}", markup=False, highlight=False)
        console.print(f"re-run the same command to retry them; finished shards are kept in "
                      f"{out_dir}/")
        return 1
    out.print(f"sweep in {out_dir}/ — load it with attnsignal.sweep.load_sweep({str(out_dir)!r})")
    return 0


class _Stopped(BaseException):
    """A signal asked the sweep to stop. A ``BaseException`` (like ``KeyboardInterrupt``), so
    that no ``except Exception`` on the way mistakes it for a failed task."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum
        self.signame = signal.Signals(signum).name


@contextmanager
def _stopped_by_sigterm() -> Iterator[None]:
    """While the block runs, SIGTERM raises :class:`_Stopped` in this (the main) thread: the
    sweep then stops its workers, writes its manifest and closes its pool on the way out (the
    default action would end the process at once and leave the pool's semaphores to the
    resource tracker's "leaked semaphore" warning). A second SIGTERM during that clean-up
    ends the process the default way."""

    def stop(signum: int, frame: object) -> None:
        signal.signal(signum, signal.SIG_DFL)
        raise _Stopped(signum)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _status(directory: Path, as_json: bool) -> int:
    from ..sweep import SweepStoreError, sweep_status

    try:
        st = sweep_status(directory)
    except SweepStoreError as exc:
        raise UsageFailure(str(exc)) from None
    if as_json:
        out.print_json(json.dumps(st.to_dict()))
        return 0 if st.complete else 1
    c = st.counts()
    table = Table(title=f"sweep {directory} — {len(st.points)} point(s), axes "
                        f"{', '.join(st.axes) or '(none)'}")
    for col in ("shards", "done", "missing", "corrupt"):
        table.add_column(col, justify="right")
    table.add_row(str(c["shards"]), str(c["done"]), str(c["missing"]), str(c["corrupt"]))
    out.print(table)
    values = {p["index"]: p["values"] for p in st.points}
    bad = [s for s in st.shards if s.state != "done"]
    for s in bad[:20]:
        vals = ", ".join(f"{k}={v!r}" for k, v in values[s.point].items())
        out.print(f"  {s.state:8s} point {s.point} ({vals}) runs {s.first_run}–"
                  f"{s.first_run + s.runs - 1}: {s.detail}", markup=False, highlight=False)
    if len(bad) > 20:
        out.print(f"  ... and {len(bad) - 20} more")
    if st.failed:
        out.print(f"the last run reported {len(st.failed)} failed task(s)")
    out.print("complete" if st.complete else "incomplete — re-run the sweep to finish it")
    return 0 if st.complete else 1
