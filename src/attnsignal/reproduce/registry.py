"""The experiments of the reproduction, in report order.

Adding an experiment: write its module (see :mod:`attnsignal.reproduce.experiment`) and
append its instance here. An experiment that ``needs`` another must come after it. Everything
that lists experiments — the plan's sections, the pipeline, the claims, the command line's
help and ``--only``, the tests — reads this tuple.
"""

from __future__ import annotations

from typing import Any

from ..validation import OneOf, Sequence
from .e1_headline import E1
from .e2_robustness import E2
from .e3_filtering import E3
from .e4_landscape import E4
from .e5_tracking import E5
from .e6_baselines import E6
from .e7_scaling import E7
from .experiment import Experiment

__all__ = ["EXPERIMENTS", "get_experiment", "experiment_names", "select"]

EXPERIMENTS: tuple[Experiment[Any, Any], ...] = (
    E1,
    E2,
    E3,
    E4,
    E5,
    E6,
    E7,
)


def experiment_names() -> tuple[str, ...]:
    """The registered experiments' names, in report order."""
    return tuple(e.name for e in EXPERIMENTS)


def get_experiment(name: str) -> Experiment[Any, Any]:
    """The registered experiment called ``name`` (ConfigError naming the known ones)."""
    OneOf(experiment_names).check("experiment", name)
    return next(e for e in EXPERIMENTS if e.name == name)


#: ``--only``: a list of registered experiment names
ONLY = Sequence(OneOf(experiment_names), min_len=1, unique=True)


def select(only: Any = None) -> tuple[Experiment[Any, Any], ...]:
    """The experiments named in ``only`` (a list of names, or a comma-separated string) and
    those they need, in registry order; every registered experiment when ``only`` is None.
    Raises ConfigError (``only: …``) for an unknown or repeated name."""
    if only is None:
        return EXPERIMENTS
    names = set(ONLY.check("only", ONLY.parse(only) if isinstance(only, str) else only))
    todo = [get_experiment(n) for n in names]
    while todo:
        for dep in todo.pop().needs:
            if dep.name not in names:
                names.add(dep.name)
                todo.append(dep)
    return tuple(e for e in EXPERIMENTS if e.name in names)
