"""The argument constraints of the theory layer, applied with one decorator.

Every public theory function declares its checked arguments with
:func:`attnsignal.validation.validated` and the constraints below, so a bad argument is a
one-line :class:`~attnsignal.validation.ConfigError` (a ``ValueError``) naming it::

    @validated(model=MODEL, rho=RHO, method=METHOD)
    def landscape(model, rho, method="exact", ...): ...

What the theory covers along the variant axes of the model and the run is :data:`SUPPORTS`:
``MODEL``, ``RESULT`` and ``UPDATE`` refuse anything else (a model variant added to the
configs is refused by every entry point, with one line, until the theory is derived for it).
"""

from __future__ import annotations

import numpy as np

from .. import seeds
from ..config import SupportedModel, check_supported, check_supports
from ..schedules import Schedule
from ..validation import (  # noqa: F401  (Integer, OneOf, Optional, Sequence re-exported)
    Boolean, ConfigError, Constraint, Instance, Integer, OneOf, Optional, Real, RealArray,
    Sequence, validated,
)

__all__ = [
    "SUPPORTS", "METHODS", "MODEL", "OPTIONAL_MODEL", "STEP", "OPTIONAL_STEP", "RHO", "RHO0", "METHOD",
    "OPTIONAL_METHOD",
    "UPDATE", "N_SAMPLES", "SEED", "BATCH", "POSITIVE", "OPTIONAL_POSITIVE", "RTOL", "ATOL",
    "TARGET", "TARGETS", "RESULT", "BOOLEAN", "SIDE", "validated", "ConfigError",
]

#: How ``Φ`` and ``Φ'`` are computed (:func:`attnsignal.theory.landscape`).
METHODS = ("exact", "mc", "asymptotic")

#: The variants the theory is derived for (:func:`attnsignal.config.check_supported`): both
#: signal signs (the random sign by the reduction of docs/theory.md), both update rules; a
#: field not listed (a new one) accepts only its default.
SUPPORTS = check_supports({"signal_sign": ("fixed", "random"),
                           "update": ("projected", "riemannian")})
#: who refuses, in the messages
THEORY = "the theory (attnsignal.theory)"

MODEL = SupportedModel(SUPPORTS, THEORY)
OPTIONAL_MODEL = Optional(MODEL)
STEP = Instance(Schedule, "step-size schedule (StepSize, ConstantStep, PiecewiseStep, "
                "TabulatedStep, ...)")
OPTIONAL_STEP = Optional(STEP)
#: Alignments: a number or an array of numbers in [−1, 1] (not bools or strings).
RHO = RealArray(ge=-1.0, le=1.0)
#: One starting alignment.
RHO0 = Real(ge=-1.0, le=1.0)
METHOD = OneOf(*METHODS)
#: A method, or None for the model's default (:func:`attnsignal.theory.fixed_points.resolve_method`).
OPTIONAL_METHOD = Optional(METHOD)
UPDATE = OneOf(*SUPPORTS["update"])
N_SAMPLES = Integer(ge=2)
#: An integer >= 0 or a numpy ``SeedSequence`` (:mod:`attnsignal.seeds`).
SEED = seeds.SEED
BATCH = Integer(ge=1)
POSITIVE = Real(gt=0.0)
OPTIONAL_POSITIVE = Optional(POSITIVE)
#: Relative tolerance of the ODE solver: scipy silently raises anything below 100 ε.
RTOL = Real(ge=100 * float(np.finfo(float).eps), lt=1.0)
ATOL = Real(gt=0.0)
#: A level of |ρ| strictly inside (0, 1).
TARGET = Real(gt=0.0, lt=1.0)
TARGETS = Sequence(TARGET, min_len=1)
BOOLEAN = Boolean()


class _Side(Constraint):
    """``1`` or ``-1`` (the attractor ``±ξ``)."""

    def _accepts(self, v: object) -> bool:
        return isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v in (1, -1)

    def coerce(self, v: object) -> int:
        return int(v)  # type: ignore[arg-type]

    def describe(self) -> str:
        return "must be 1 or -1"

    def examples(self) -> tuple[object, ...]:
        return (1, -1)

    def counterexamples(self) -> tuple[object, ...]:
        return (0, 2, True, 1.0, "1")


SIDE = _Side()


def _result_class() -> type:
    from ..results import Result

    return Result


class _ResultConstraint(Instance):
    """A :class:`~attnsignal.results.Result` of a model and run the theory covers."""

    def __init__(self) -> None:
        super().__init__(object, "Result (from simulate, Result.load or a sweep)")

    def _accepts(self, v: object) -> bool:
        return isinstance(v, _result_class())

    def check(self, field: str, value: object) -> object:
        value = super().check(field, value)
        check_supported(THEORY, SUPPORTS, model=value.model, run=value.run)  # type: ignore[attr-defined]
        return value


RESULT = _ResultConstraint()
