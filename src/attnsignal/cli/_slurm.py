"""The Slurm flags shared by ``attnsignal sweep`` and ``attnsignal reproduce``
(``--executor slurm``): they override the spec's ``[slurm]`` table, field by field."""

from __future__ import annotations

from typing import Any, Optional

import typer

from ._app import UsageFailure

PARTITION = typer.Option(None, "--partition", help="slurm: partition (#SBATCH -p)",
                         rich_help_panel="Slurm (--executor slurm)")
ACCOUNT = typer.Option(None, "--account", help="slurm: account (#SBATCH -A)",
                       rich_help_panel="Slurm (--executor slurm)")
WALLTIME = typer.Option(None, "--walltime", metavar="TIME", help="slurm: time limit of each "
                        "job, e.g. 01:00:00 (default 01:00:00); workers retire just before it "
                        "and are replaced", rich_help_panel="Slurm (--executor slurm)")
MEMORY = typer.Option(None, "--memory", metavar="SIZE", help="slurm: memory per job, e.g. "
                      "4GB (default 4GB)", rich_help_panel="Slurm (--executor slurm)")
CORES = typer.Option(None, "--cores-per-job", metavar="INT", help="slurm: cores per job = "
                     "worker processes per job (default 1)",
                     rich_help_panel="Slurm (--executor slurm)")
JOBS = typer.Option(None, "--jobs", metavar="INT", help="slurm: number of jobs kept running "
                    "(default 1)", rich_help_panel="Slurm (--executor slurm)")
SBATCH = typer.Option(None, "--sbatch", metavar="OPTION", help="slurm: an extra #SBATCH "
                      "directive, e.g. --sbatch=--qos=short (repeatable)",
                      rich_help_panel="Slurm (--executor slurm)")
CONFIG = typer.Option(None, "--slurm-config", metavar="TOML", help="slurm: a TOML file with "
                      "a [slurm] table (every SlurmOptions field: interface, prologue, "
                      "log_directory, ...); the flags override it",
                      rich_help_panel="Slurm (--executor slurm)")
DRY_RUN = typer.Option(False, "--dry-run", help="slurm: print the job script and exit "
                       "(submits nothing)", rich_help_panel="Slurm (--executor slurm)")


def options_file(path: Any) -> Any:
    """The ``[slurm]`` table of the TOML file ``path`` as SlurmOptions (ConfigError naming
    ``--slurm-config`` or ``slurm.<key>``)."""
    from ..config import ConfigError
    from ..paths import read_toml
    from ..sweep.slurm import SlurmOptions

    doc = read_toml(path, "--slurm-config")
    if set(doc) != {"slurm"}:
        raise ConfigError("--slurm-config", "must hold one [slurm] table and nothing else",
                          sorted(doc))
    return SlurmOptions.from_dict(doc["slurm"])


def slurm_options(executor: str, base: Any, *, partition: Optional[str],
                  account: Optional[str], walltime: Optional[str], memory: Optional[str],
                  cores: Optional[int], jobs: Optional[int], sbatch: Optional[list[str]],
                  dry_run: bool) -> Any:
    """The :class:`~attnsignal.sweep.slurm.SlurmOptions` of the command (``base`` — the
    spec's table or the defaults — with the flags given), or None when the executor is not
    ``slurm``. Slurm flags with another executor are a usage error (exit 2)."""
    from ..sweep.slurm import SlurmOptions

    flags = {"--partition": partition, "--account": account, "--walltime": walltime,
             "--memory": memory, "--cores-per-job": cores, "--jobs": jobs,
             "--sbatch": sbatch or None, "--dry-run": dry_run or None}
    if executor != "slurm":
        given = [k for k, v in flags.items() if v is not None]
        if given:
            raise UsageFailure(f"{given[0]}: only with --executor slurm; got --executor "
                               f"{executor}")
        return None
    extra = tuple((base.sbatch if base is not None else ())) + tuple(sbatch or ())
    return (base or SlurmOptions()).merged(
        partition=partition, account=account, walltime=walltime, memory=memory, cores=cores,
        jobs=jobs, sbatch=list(extra) if sbatch else None)
