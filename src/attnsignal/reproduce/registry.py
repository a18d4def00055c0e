"""The experiments of the reproduction, in report order.

Adding an experiment: write its module (see :mod:`attnsignal.reproduce.experiment`) and
append its instance here. An experiment that ``needs`` another must come after it.
"""

from __future__ import annotations

from typing import Any

from .e1_headline import E1
from .e2_robustness import E2
from .e3_filtering import E3
from .e4_landscape import E4
from .e5_tracking import E5
from .e6_baselines import E6
from .experiment import Experiment

__all__ = ["EXPERIMENTS", "get_experiment"]

EXPERIMENTS: tuple[Experiment[Any, Any], ...] = (
    E1,
    E2,
    E3,
    E4,
    E5,
    E6,
)


def get_experiment(name: str) -> Experiment[Any, Any]:
    """The registered experiment called ``name`` (KeyError naming the known ones)."""
    for e in EXPERIMENTS:
        if e.name == name:
            return e
    raise KeyError(f"experiment: must be one of {', '.join(e.name for e in EXPERIMENTS)}; "
                   f"got {name!r}")
