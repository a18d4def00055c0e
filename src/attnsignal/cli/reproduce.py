"""``attnsignal reproduce``: every experiment of the paper, with the claims checked."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.table import Table
from typer.core import TyperCommand

from ..config import ConfigError
from ._app import app
from . import _slurm as slurm_flags
from ._common import console, out


#: exit status when an experiment of the reproduction fails (1: a claim failed; 2: bad input)
EXIT_EXPERIMENT_FAILED = 3


class _ReproduceCommand(TyperCommand):
    """The command whose help lists the registered experiments, read from the registry when
    the help is shown (importing the experiments takes seconds: ``attnsignal --help`` shows
    the short help only)."""

    @property  # type: ignore[override]
    def help(self) -> str | None:
        text = self._help
        if text and "{experiments}" in text:
            from ..reproduce.registry import EXPERIMENTS

            text = text.replace("{experiments}", "\n".join(
                "  " + e.title for e in EXPERIMENTS))
        return text

    @help.setter
    def help(self, value: str | None) -> None:
        self._help = value


@app.command("reproduce", cls=_ReproduceCommand,
             short_help="Reproduce the paper: every experiment and the claims table "
                        "(PASS / FAIL / \"holds only when …\").")
def reproduce_cmd(
    quick: bool = typer.Option(False, "--quick", help="a smoke test: every experiment at reduced size (under a minute on 2 cores); each claim checked as a proxy at its own, looser tolerance"),
    out_dir: Path = typer.Option(Path("reproduction"), "--out", help="output directory (report.md, report.html, figures/, data/)"),
    executor: str = typer.Option("local", "--executor", help="'local' (process pool), 'dask' or 'slurm' (Slurm jobs via dask-jobqueue)"),
    scheduler: Optional[str] = typer.Option(None, "--scheduler", help="address of a running Dask scheduler (with --executor dask)"),
    workers: Optional[int] = typer.Option(None, "--workers", help="worker processes (default: the number of CPU cores)"),
    seed: int = typer.Option(2606, "--seed", help="root seed of every experiment"),
    only: Optional[str] = typer.Option(None, "--only", metavar="E1,E3", help="run only these experiments (comma-separated names) and those they need; the report and the claims table hold those"),
    quiet: bool = typer.Option(False, "--quiet", help="no progress bars"),
    profile: bool = typer.Option(False, "--profile", help="print where the wall time went (kernel compilation, each experiment's simulation, theory, figures, I/O); also written to OUT/profile.json"),
    partition: Optional[str] = slurm_flags.PARTITION,
    account: Optional[str] = slurm_flags.ACCOUNT,
    walltime: Optional[str] = slurm_flags.WALLTIME,
    memory: Optional[str] = slurm_flags.MEMORY,
    cores_per_job: Optional[int] = slurm_flags.CORES,
    jobs: Optional[int] = slurm_flags.JOBS,
    sbatch: Optional[list[str]] = slurm_flags.SBATCH,
    slurm_config: Optional[Path] = slurm_flags.CONFIG,
    dry_run: bool = slurm_flags.DRY_RUN,
) -> None:
    """Reproduce the paper: every experiment, and a claims table (PASS / FAIL / "holds only
    when …"; in quick mode each row a proxy at its own tolerance).

    \b
    {experiments}

    Resumes after an interruption (every simulation is a sweep stored under OUT/data), and
    deletes the temporary files an interrupted run left. One reproduction per OUT at a time.
    Exits with status 1 when a claim that should hold fails, 3 when an experiment fails
    (the first failing experiment's error is printed, then one line naming it), 2 on bad
    input or when another reproduction is writing to OUT.
    """
    from ..paths import REPRODUCTION_LOCK, check_output_free

    # a directory another reproduction is writing to: refused before the slow start-up below
    check_output_free(out_dir, REPRODUCTION_LOCK, "attnsignal reproduce")
    if executor == "local":
        # the pool's forkserver imports the workers' modules while this process imports the
        # experiments (about a second on two cores that one core would otherwise wait for)
        from ..sweep.executors import REPRODUCTION_PRELOAD, start_pool_server

        start_pool_server(REPRODUCTION_PRELOAD)
    from ..claims import CLAIMS_HEADER, claims_table_rows, plain_math
    from ..reproduce import ExperimentError, Plan, reproduce, select
    from ..reproduce.pipeline import profile_table
    from ..validation import Integer, OneOf

    from ..paths import check_output_dir

    OneOf("local", "dask", "slurm").check("executor", executor)
    Integer(ge=0).check("seed", seed)
    experiments = select(only)
    if slurm_config is not None and executor != "slurm":
        raise ConfigError("--slurm-config", "only with --executor slurm", str(slurm_config))
    base = slurm_flags.options_file(slurm_config) if slurm_config is not None else None
    slurm = slurm_flags.slurm_options(
        executor, base, partition=partition, account=account, walltime=walltime, memory=memory,
        cores=cores_per_job, jobs=jobs, sbatch=sbatch, dry_run=dry_run)
    from ..sweep.runner import check_executor_options

    check_executor_options(executor, scheduler, workers)  # before OUT is created
    if slurm is not None:
        from ..sweep.slurm import slurm_job_script

        if dry_run:
            out.print(slurm_job_script(slurm), markup=False, highlight=False, soft_wrap=True)
            return
    check_output_dir(out_dir, "out", create=False)  # a file, read-only...: before any work
    plan = Plan.quick(seed) if quick else Plan.full(seed)

    def run(executor: str, scheduler: str | None):
        return reproduce(out_dir, plan=plan, only=[e.name for e in experiments],
                         executor=executor, scheduler=scheduler,
                         workers=workers, progress=not quiet,
                         log=(lambda s: None) if quiet else console.print)

    try:
        if slurm is None:
            res = run(executor, scheduler)
        else:  # one set of Slurm jobs for every experiment: their sweeps use its scheduler
            from ..sweep.slurm import slurm_cluster

            with slurm_cluster(slurm) as cluster:
                res = run("dask", cluster.scheduler_address)
    except ExperimentError as exc:  # the first failure's own traceback, then one line
        import sys
        import traceback

        traceback.print_exception(exc.error, file=sys.stderr)
        print(f"attnsignal: error: {exc}".replace("\n", " "), file=sys.stderr)
        raise typer.Exit(EXIT_EXPERIMENT_FAILED) from None
    title = ("claims (quick mode: smoke-test proxies at reduced size, each at its own tolerance "
             "— run without --quick to check the paper's claims)" if quick else
             "claims (full mode)")
    table = Table(title=title, show_lines=True)
    for col in CLAIMS_HEADER:
        table.add_column(col, overflow="fold")
    for c, cells in zip(res.claims, claims_table_rows(res.claims, quick=quick)):
        style = "red" if c.verdict == "FAIL" else ("green" if c.verdict == "PASS" else "yellow")
        table.add_row(*(plain_math(x) for x in cells[:-1]), f"[{style}]{cells[-1]}[/]")
    out.print(table)
    out.print(f"report: {out_dir / 'report.html'} (and report.md); wall time {res.timings['total']:.0f} s")
    if profile:
        pt = Table(title="where the wall time went (seconds)")
        for col in ("phase", "wall", "CPU", "note"):
            pt.add_column(col, overflow="fold")
        for row in profile_table(res.profile):
            pt.add_row(*row)
        out.print(pt)
    if res.failed:
        console.print(f"[red]{len(res.failed)} claim(s) that should hold failed[/]")
        raise typer.Exit(1)
