"""What the reproduction runs: the root seed and one validated section per experiment.

``Plan.full()`` follows the paper (30 runs, θ = 0.25, R = 500, N = 10 000, d = 100);
``Plan.quick()`` keeps every experiment, figure and claim with fewer runs and steps and the
looser tolerances each section states. The sections come from the experiment registry
(:mod:`attnsignal.reproduce.registry`), so a new experiment brings its own::

    plan = Plan.quick(seed=7)
    plan = plan.with_section(E1, plan.section(E1).replace(runs=4))
    plan.section(E1).runs            # typed: E1Plan
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Mapping, TypeVar

from ..validation import ConfigError, Integer, OneOf

if TYPE_CHECKING:
    from .experiment import Experiment, PlanSection

__all__ = ["Plan"]

S = TypeVar("S", bound="PlanSection")


@dataclass(frozen=True)
class Plan:
    """``mode`` ("full" or "quick"), the root seed and ``sections[name]`` for every registered
    experiment (a section not given is that experiment's ``full()`` or ``quick()``).

    Raises ConfigError for a bad mode or seed, an unknown or mistyped section."""

    mode: str = "full"
    seed: int = 2606
    sections: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        from .registry import EXPERIMENTS
        from .experiment import check_section

        OneOf("full", "quick").check("plan.mode", self.mode)
        seed = Integer(ge=0).check("plan.seed", self.seed)
        names = [e.name for e in EXPERIMENTS]
        for key in self.sections:
            if key not in names:
                raise ConfigError(f"plan.{key}", "unknown experiment; known are "
                                  + ", ".join(names), key)
        full = dict(self.sections)
        for exp in EXPERIMENTS:
            sec = full.get(exp.name)
            if sec is None:
                sec = exp.Plan.quick() if self.is_quick else exp.Plan.full()
            check_section(exp, sec)
            full[exp.name] = sec
        object.__setattr__(self, "seed", seed)
        object.__setattr__(self, "sections", MappingProxyType(full))
        for exp in EXPERIMENTS:  # what the experiments would refuse later, refused now
            exp.check_plan(self)

    @classmethod
    def full(cls, seed: int = 2606) -> "Plan":
        """The paper's sizes."""
        return cls(mode="full", seed=seed)

    @classmethod
    def quick(cls, seed: int = 2606) -> "Plan":
        """Every experiment and claim, reduced (``attnsignal reproduce --quick``)."""
        return cls(mode="quick", seed=seed)

    @property
    def is_quick(self) -> bool:
        return self.mode == "quick"

    def section(self, exp: "Experiment[S, Any]") -> S:
        """The typed section of experiment ``exp``."""
        return self.sections[exp.name]

    def with_section(self, exp: "Experiment[S, Any]", section: S) -> "Plan":
        """A copy with ``exp``'s section replaced (validated)."""
        return Plan(mode=self.mode, seed=self.seed,
                    sections={**self.sections, exp.name: section})

    def to_dict(self) -> dict[str, Any]:
        return {"mode": self.mode, "seed": self.seed,
                **{k: v.to_dict() for k, v in self.sections.items()}}
