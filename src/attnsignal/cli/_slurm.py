"""The Slurm flags of ``attnsignal sweep`` and ``attnsignal reproduce`` (``--executor slurm``),
declared once: :func:`slurm_flags` adds them to a command, which receives them as one
:class:`SlurmFlags` (``slurm=``). They override the spec's ``[slurm]`` table (or the
``--slurm-config`` file's), field by field."""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Callable, Optional

import typer

from ._app import UsageFailure

__all__ = ["SlurmFlags", "slurm_flags", "options_file"]

_PANEL = "Slurm (--executor slurm)"


@dataclass(frozen=True)
class SlurmFlags:
    """The Slurm flags a command was given (None / False where not given)."""

    partition: Optional[str] = None
    account: Optional[str] = None
    walltime: Optional[str] = None
    memory: Optional[str] = None
    cores_per_job: Optional[int] = None
    jobs: Optional[int] = None
    sbatch: Optional[list[str]] = None
    slurm_config: Optional[Path] = None
    dry_run: bool = False

    def given(self) -> list[str]:
        """The flags given, as written on the command line (``--partition``, ...)."""
        return [_FLAGS[f.name] for f in fields(self) if getattr(self, f.name)]

    def options(self, executor: str, base: Any = None) -> Any:
        """The :class:`~attnsignal.sweep.slurm.SlurmOptions` of the command — ``base`` (the
        spec's table), replaced by the ``--slurm-config`` file's when given, with the flags
        given on top — or None when the executor is not ``slurm``. Slurm flags with another
        executor are a usage error (exit 2)."""
        from ..sweep.slurm import SlurmOptions
        from ._common import check_not_empty

        for f in fields(self):  # '' would read as "not given"
            value = getattr(self, f.name)
            for text in (value if isinstance(value, list) else [value]):
                check_not_empty(f"slurm.{f.name}", text if isinstance(text, str) else None)
        if executor != "slurm":
            given = self.given()
            if given:
                raise UsageFailure(f"{given[0]}: only with --executor slurm; got --executor "
                                   f"{executor}")
            return None
        if self.slurm_config is not None:
            base = options_file(self.slurm_config)
        extra = tuple(base.sbatch if base is not None else ()) + tuple(self.sbatch or ())
        return (base or SlurmOptions()).merged(
            partition=self.partition, account=self.account, walltime=self.walltime,
            memory=self.memory, cores=self.cores_per_job, jobs=self.jobs,
            sbatch=list(extra) if self.sbatch else None)


#: each flag: (annotation, the typer option)
_OPTIONS: dict[str, tuple[Any, Any]] = {
    "partition": (Optional[str], typer.Option(None, "--partition", rich_help_panel=_PANEL,
                                              help="slurm: partition (#SBATCH -p)")),
    "account": (Optional[str], typer.Option(None, "--account", rich_help_panel=_PANEL,
                                            help="slurm: account (#SBATCH -A)")),
    "walltime": (Optional[str], typer.Option(
        None, "--walltime", metavar="TIME", rich_help_panel=_PANEL,
        help="slurm: time limit of each job, e.g. 01:00:00 (default 01:00:00); workers retire "
             "just before it and are replaced")),
    "memory": (Optional[str], typer.Option(None, "--memory", metavar="SIZE",
                                           rich_help_panel=_PANEL,
                                           help="slurm: memory per job, e.g. 4GB (default 4GB)")),
    "cores_per_job": (Optional[int], typer.Option(
        None, "--cores-per-job", metavar="INT", rich_help_panel=_PANEL,
        help="slurm: cores per job = worker processes per job (default 1)")),
    "jobs": (Optional[int], typer.Option(None, "--jobs", metavar="INT", rich_help_panel=_PANEL,
                                         help="slurm: number of jobs kept running (default 1)")),
    "sbatch": (Optional[list[str]], typer.Option(
        None, "--sbatch", metavar="OPTION", rich_help_panel=_PANEL,
        help="slurm: an extra #SBATCH directive, e.g. --sbatch=--qos=short (repeatable)")),
    "slurm_config": (Optional[Path], typer.Option(
        None, "--slurm-config", metavar="TOML", rich_help_panel=_PANEL,
        help="slurm: a TOML file with a \\[slurm] table (every SlurmOptions field: interface, "
             "prologue, log_directory, ...); the flags override it")),
    "dry_run": (bool, typer.Option(False, "--dry-run", rich_help_panel=_PANEL,
                                   help="slurm: print the job script and exit (submits nothing)")),
}
_FLAGS = {name: opt.param_decls[0] for name, (_, opt) in _OPTIONS.items()}
assert set(_OPTIONS) == {f.name for f in fields(SlurmFlags)}


def slurm_flags(fn: Callable) -> Callable:
    """Decorator of a command ``fn(..., slurm: SlurmFlags)``: adds the Slurm flags after the
    command's own options and passes them as ``slurm``."""
    own = [p for p in inspect.signature(fn, eval_str=True).parameters.values()
           if p.name != "slurm"]
    gen = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=ann, default=opt)
           for name, (ann, opt) in _OPTIONS.items()]

    @functools.wraps(fn)
    def command(*args: Any, **kwargs: Any) -> Any:
        given = SlurmFlags(**{name: kwargs.pop(name) for name in _OPTIONS})
        return fn(*args, slurm=given, **kwargs)

    params = own + gen
    command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in params}
    del command.__wrapped__  # typer must see the generated signature
    return command


def options_file(path: Any) -> Any:
    """The ``[slurm]`` table of the TOML file ``path`` as SlurmOptions (ConfigError naming
    ``--slurm-config`` or ``slurm.<key>``)."""
    from ..paths import read_toml
    from ..sweep.slurm import SlurmOptions
    from ..validation import check_keys

    doc = read_toml(path, "--slurm-config")
    check_keys(doc, ["slurm"], prefix="--slurm-config.", required=["slurm"], what="table")
    return SlurmOptions.from_dict(doc["slurm"])
