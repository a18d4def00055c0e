"""Helpers shared by the sub-commands: value parsing, TOML configs, progress, tables."""

from __future__ import annotations

import math
import tomllib
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from ..config import ConfigError, ModelConfig, RunConfig
from ..engines import engine_names
from ..schedules import SCHEDULES, Schedule, StepSize, schedule_from_dict
from ..validation import check_keys, parse_text
from . import UsageFailure

console = Console(stderr=True)
out = Console()

MODEL_KEYS = ("d", "n_informative", "n_nuisance", "theta", "beta", "noise_std", "signal_sign")
STEP_KEYS = ("eta0", "k0", "power")
RUN_KEYS = ("steps", "runs", "batch", "engine", "update", "seed", "record_every", "initial_alignment")

#: Help of every model, step and run flag (named after its field), shared by the sub-commands.
FIELD_HELP = {
    "d": "ambient dimension d (integer >= 2)",
    "n_informative": "informative tokens R (integer >= 1)",
    "n_nuisance": "nuisance tokens N (integer >= 0)",
    "theta": "signal strength θ (>= 0)",
    "beta": "inverse temperature β (> 0)",
    "noise_std": "token noise σ (> 0)",
    "signal_sign": "'fixed' (+θξ) or 'random' (±θξ per sample)",
    "eta0": "step size η0 in η_k = η0 (1 + k/k0)^(−power) (> 0)",
    "k0": "k0 of the schedule (> 0)",
    "power": "decay power (>= 0; Robbins–Monro iff in (1/2, 1])",
    "steps": "SGA updates per run (integer >= 1)",
    "runs": "independent runs (integer >= 1)",
    "batch": "minibatch size B (integer >= 1)",
    "engine": ", ".join(f"'{n}'" for n in engine_names()[:-1]) + f" or '{engine_names()[-1]}'",
    "update": "'projected' or 'riemannian'",
    "seed": "root seed (integer >= 0)",
    "record_every": "record every this many steps (integer >= 1; default: about 200 records)",
    "initial_alignment": "start with ρ0 = this (in [−1, 1]); default: q0 uniform on the sphere",
}


def field_option(name: str, default: Any, help_: str | None = None) -> Any:
    """The ``--name`` option of a config field: text (so that the configs' validator, not click,
    words every rejection) with a metavar saying what the text must be, and ``default`` in the
    help unless it is None (then the help says what happens)."""
    import typer

    help_ = help_ or FIELD_HELP[name]
    metavar = ("INT" if "integer" in help_ else
               "NAME" if isinstance(default, str) else "NUMBER")
    text = help_ if default is None else f"{help_} (default: {default})"
    return typer.Option(None, f"--{name.replace('_', '-')}", help=text, metavar=metavar,
                        show_default=False)


#: A command-line value as the validator should see it (see :func:`attnsignal.validation.parse_text`).
parse_value = parse_text


def load_toml(path: Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        raise UsageFailure(f"config: file not found; got {str(path)!r}") from None
    except tomllib.TOMLDecodeError as exc:
        raise UsageFailure(f"config: not valid TOML ({exc}); got {str(path)!r}") from None


def build_configs(
    flags: Mapping[str, Any], config_file: Path | None, defaults: Mapping[str, Any],
    tables: Sequence[str] = ("model", "step", "run"),
) -> tuple[ModelConfig, Schedule, dict[str, Any]]:
    """Merge defaults < config file (``[model]``, ``[step]``, ``[run]`` tables) < flags given on
    the command line; validate through the config classes. Returns (model, step, run kwargs).

    Every value in the file is checked on its own first (``model.theta: must be …``), so a bad
    value is rejected even when a flag overrides it. ``[step]`` may name any schedule family
    with ``kind``; the power family's defaults apply only to the power family. ``tables``
    lists the tables the command reads (others are rejected)."""
    data = load_toml(config_file) if config_file is not None else {}
    check_keys(data, tables, what="table")
    for name, table in data.items():
        if not isinstance(table, dict):
            raise ConfigError(str(name), "must be a table", table)
    file_step = data.get("step", {})
    kind_given = file_step.get("kind", "power")
    if not isinstance(kind_given, str) or kind_given not in SCHEDULES:
        raise ConfigError("step.kind", "must be one of " + ", ".join(map(repr, SCHEDULES)),
                          kind_given)
    classes = {"model": ModelConfig, "step": SCHEDULES[kind_given], "run": RunConfig}
    sections: dict[str, dict[str, Any]] = {}
    for name, cls in classes.items():
        table = data.get(name, {})
        known = cls.field_names() + (["kind"] if name == "step" else [])
        check_keys(table, known, prefix=f"{name}.")
        for k, v in table.items():  # each file value valid on its own, overridden or not
            if k in cls._table:
                cls._table[k].check(f"{name}.{k}", v)
        fill = {k: defaults[k] for k in cls.field_names() if k in defaults}
        if name == "step" and kind_given != "power":
            fill = {}
        sections[name] = {**fill, **table}
        for k in cls.field_names():
            if flags.get(k) is not None:
                v = flags[k]
                sections[name][k] = cls._table[k].parse(v) if isinstance(v, str) else v
    for k in StepSize.field_names():
        if flags.get(k) is not None and k not in classes["step"].field_names():
            raise ConfigError(f"step.{k}", f"not a field of the {kind_given!r} schedule of the "
                              "config file", flags[k])
    model = ModelConfig.from_dict(sections["model"], prefix="")
    step = schedule_from_dict(sections["step"], prefix="")
    RunConfig(**{"steps": 1, **sections["run"]})  # validate now, before any work
    return model, step, sections["run"]


@contextmanager
def progress_bar(total: int, description: str, enabled: bool = True) -> Iterator[Any]:
    """A rich progress bar on stderr; yields ``advance(n)``."""
    if not enabled:
        yield lambda n=1: None
        return
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
        console=console,
        transient=False,
    ) as prog:
        task = prog.add_task(description, total=total)
        yield lambda n=1: prog.advance(task, n)


def fmt(x: float, digits: int = 4) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "—"
    if x != 0 and not 1e-3 <= abs(x) < 1e6:  # fixed point would be unreadable
        return f"{x:.{digits}e}"
    return f"{x:.{digits}f}"
