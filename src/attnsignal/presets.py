r"""Named model presets, one set of defaults for every command.

A :class:`Preset` is a model, a step-size schedule and a run budget that belong together:

* ``paper`` — the paper's headline experiment (the reproduction's E1): $d = 100$,
  $R = 500$, $N = 10\,000$ ($20\times$ the informative tokens), $\theta = 0.25$,
  $\eta_k = 0.03\,(1 + k/1000)^{-1}$, 80 000 samples, 30 runs (minutes per command);
* ``toy`` — a strong signal in a short context that aligns in seconds: $d = 20$, $R = 10$,
  $N = 40$, $\theta = 1$, $\eta_k = 0.02\,(1 + k/2000)^{-0.75}$, 20 000 samples, 30 runs.

``preset(name)`` returns one; ``PRESETS`` lists them. Commands start from a preset and let
flags override single fields, so that ``run``, ``baseline``, ``advise`` and ``ode`` given the
same preset describe the same model. (Prepared for the command line; not yet used by it.)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .config import ModelConfig
from .schedules import StepSize
from .validation import ConfigError

__all__ = ["Preset", "PRESETS", "DEFAULT_PRESET", "preset"]


@dataclass(frozen=True)
class Preset:
    """A model, its schedule and a run budget (``steps`` samples per run, ``runs`` runs)."""

    name: str
    description: str
    model: ModelConfig
    step: StepSize
    steps: int
    runs: int

    def to_dict(self) -> dict[str, Any]:
        """The preset's fields as flags would name them (model, step, ``steps``, ``runs``)."""
        return {**self.model.to_dict(), **self.step.to_dict(), "steps": self.steps,
                "runs": self.runs}


PRESETS: dict[str, Preset] = {
    "paper": Preset(
        "paper", "the paper's headline experiment (E1): weak signal, 20x nuisance tokens",
        ModelConfig(d=100, n_informative=500, n_nuisance=10_000, theta=0.25),
        StepSize(eta0=0.03, k0=1000.0, power=1.0), steps=80_000, runs=30),
    "toy": Preset(
        "toy", "strong signal, short context: aligns in seconds",
        ModelConfig(d=20, n_informative=10, n_nuisance=40, theta=1.0),
        StepSize(eta0=0.02, k0=2000.0, power=0.75), steps=20_000, runs=30),
}

#: the preset a command starts from when none is named
DEFAULT_PRESET = "toy"


def preset(name: str) -> Preset:
    """The preset called ``name``; ConfigError naming the allowed names otherwise."""
    try:
        return PRESETS[name]
    except (KeyError, TypeError):
        raise ConfigError("preset", f"must be one of {', '.join(sorted(PRESETS))}",
                          name) from None
