"""Helpers shared by the sub-commands: value parsing, TOML configs, progress, tables."""

from __future__ import annotations

import math
import tomllib
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Mapping

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from ..config import ConfigError, ModelConfig, RunConfig, StepSize
from ..engines import engine_names
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


def parse_value(text: str | None) -> Any:
    """A command-line value as the validator should see it: int if it reads as an integer,
    else float if it reads as a number, else the string (so ``--d 2.5`` reaches the validator
    as 2.5 and is rejected there with the field's allowed range)."""
    if text is None:
        return None
    t = text.strip()
    if t.lower() in ("none", "null"):
        return None
    try:
        return int(t)
    except ValueError:
        pass
    try:
        v = float(t)
        return v
    except ValueError:
        return t


def load_toml(path: Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        raise UsageFailure(f"config: file not found; got {str(path)!r}") from None
    except tomllib.TOMLDecodeError as exc:
        raise UsageFailure(f"config: not valid TOML ({exc}); got {str(path)!r}") from None


def build_configs(
    flags: Mapping[str, Any], config_file: Path | None, defaults: Mapping[str, Any]
) -> tuple[ModelConfig, StepSize, dict[str, Any]]:
    """Merge defaults < config file ([model], [step], [run] tables) < flags given on the
    command line; validate through the config classes. Returns (model, step, run kwargs)."""
    sections: dict[str, dict[str, Any]] = {"model": {}, "step": {}, "run": {}}
    keys = {"model": MODEL_KEYS, "step": STEP_KEYS, "run": RUN_KEYS}
    for name, ks in keys.items():
        for k in ks:
            if k in defaults:
                sections[name][k] = defaults[k]
    if config_file is not None:
        data = load_toml(config_file)
        for name, table in data.items():
            if name not in sections or not isinstance(table, dict):
                raise ConfigError(
                    str(name), "unknown table; allowed tables are [model], [step], [run]", table
                )
            for k, v in table.items():
                if k not in keys[name]:
                    raise ConfigError(
                        f"{name}.{k}", "unknown key; allowed keys are " + ", ".join(keys[name]), v
                    )
                sections[name][k] = v
    for name, ks in keys.items():
        for k in ks:
            if flags.get(k) is not None:
                sections[name][k] = parse_value(flags[k]) if isinstance(flags[k], str) else flags[k]
    model = ModelConfig.from_dict(sections["model"], prefix="")
    step = StepSize.from_dict(sections["step"], prefix="")
    RunConfig(**{k: v for k, v in sections["run"].items()})  # validate now, before any work
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
