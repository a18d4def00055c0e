"""The ``Experiment`` interface: one experiment of the reproduction, one module.

An experiment is four separate functions of typed values::

    run(p, ctx)              -> M                 computation (simulations, theory, analysis)
    figures(p, m, fig_dir)   -> list[Path]        matplotlib only: writes figures/<stem>.png|pdf
    report_section(p, m, fig_dir) -> Section      prose and tables only
    claims(p, m)             -> list[ClaimResult]  the claims it checks, with stated tolerances

``p`` is the experiment's section of the :class:`~attnsignal.reproduce.plan.Plan` (a frozen,
validated :class:`PlanSection`, with ``full()`` and ``quick()``), ``m`` its typed measurements
(a frozen :class:`Measurements` dataclass). An experiment that uses another one's results
names it in ``needs`` and receives its typed measurements through ``ctx.needed(E1)`` — never
through a string-keyed cache.

How to add an experiment (one module plus one line)
---------------------------------------------------
1. Write ``attnsignal/reproduce/e6_baselines.py``::

       @dataclass(frozen=True)
       class E6Plan(PlanSection):
           runs: int = 30
           _table = {"runs": Integer(ge=1)}      # attnsignal.validation constraints
           @classmethod
           def quick(cls) -> "E6Plan": return cls(runs=8)

       @dataclass(frozen=True)
       class E6Measurements(Measurements):
           gap: float                            # numbers go to measurements.json
           result: Result = data_field()         # arrays / objects: figures and prose only

       class E6Baselines(Experiment[E6Plan, E6Measurements]):
           name, title = "E6", "E6 — attention against simple estimators"
           Plan = E6Plan
           needs = (E1,)                         # optional: typed inputs from E1
           def run(self, p, ctx): ...            # ctx.sweep(...), ctx.stream(...), ctx.needed(E1)
           def figures(self, p, m, fig_dir): ...
           def report_section(self, p, m, fig_dir): ...
           def claims(self, p, m): ...
           def example_measurements(self, p): ...   # numbers under which the claims hold

2. Append ``E6Baselines()`` to ``EXPERIMENTS`` in :mod:`attnsignal.reproduce.registry`.

The plan (full and quick), the task graph, ``measurements.json``, the claims table, the report
and ``--profile`` pick it up from the registry. Sweeps go through ``ctx.sweep`` so they share
the pool; every random stream is keyed by the experiment and a purpose —
``ctx.stream("literal")`` for a simulation's or a theory function's ``seed``,
``sweep_spec(..., seed=ctx.seed, spawn_key=ctx.spawn_key("runs"))`` for a sweep — so no two
streams of the reproduction meet (:mod:`attnsignal.seeds`).
An overlay on an existing experiment (effective dynamics on E1/E5) is a new field of its
measurements computed in its ``run`` and drawn in its ``figures``.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Mapping, TypeVar

import numpy as np

from ..config import ModelConfig
from ..schedules import Schedule, StepSize
from ..validation import ConfigError, Constraint, Instance, validate_fields

if TYPE_CHECKING:
    from ..claims import ClaimResult
    from ..report import Section
    from .context import ExperimentContext

__all__ = ["Experiment", "PlanSection", "Measurements", "data_field", "MODEL", "STEP", "POWER_STEP"]


# ------------------------------------------------------------------------------ plan sections


#: constraint rows for plan sections' configs (validated on their own construction)
MODEL = Instance(ModelConfig, "ModelConfig")
STEP = Instance(Schedule, "step-size schedule (attnsignal.schedules.Schedule)")
POWER_STEP = Instance(StepSize, "StepSize (the power family, whose eta0 is varied)")


@dataclass(frozen=True)
class PlanSection:
    """One experiment's part of the plan: frozen, validated on construction against ``_table``
    (one :mod:`attnsignal.validation` constraint per field, the project's one message
    template: ``e1.runs: must be an integer >= 2; got 0``), with a paper-size ``full()`` (the
    defaults) and a reduced ``quick()``."""

    _table: ClassVar[Mapping[str, Constraint]] = {}

    def __post_init__(self) -> None:
        validate_fields(self, self._table, prefix=f"{self._prefix()}.")
        self.check()

    def check(self) -> None:
        """Relations between fields (raise :class:`ConfigError`); none by default."""

    @classmethod
    def _prefix(cls) -> str:
        return cls.__name__.removesuffix("Plan").lower()

    @classmethod
    def full(cls):
        return cls()

    @classmethod
    def quick(cls):
        return cls()

    def replace(self, **changes: Any):
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields(self):
            v = getattr(self, f.name)
            out[f.name] = v.to_dict() if hasattr(v, "to_dict") else (
                list(v) if isinstance(v, tuple) else v)
        return out


# ------------------------------------------------------------------------------ measurements


def data_field(**kw: Any) -> Any:
    """A measurements field that holds data for figures and prose (arrays, results), not a
    number of ``measurements.json``."""
    return field(metadata={"data": True}, **kw)


@dataclass(frozen=True)
class Measurements:
    """Typed measurements of one experiment. Fields declared with :func:`data_field` are kept
    out of :meth:`to_json` (arrays, ``Result`` objects); the others are the numbers quoted."""

    def to_json(self) -> dict[str, Any]:
        return {f.name: _jsonable(getattr(self, f.name)) for f in fields(self)
                if not f.metadata.get("data")}

    @classmethod
    def of(cls, **values: Any):
        """Measurements with the given values; the data fields not given are None (the claims
        read numbers only: :meth:`Experiment.example_measurements`)."""
        data = {f.name: None for f in fields(cls) if f.metadata.get("data")}
        return cls(**{**data, **values})


def _jsonable(x: Any) -> Any:
    if isinstance(x, Mapping):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple, np.ndarray)):
        return [_jsonable(v) for v in x]
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        v = float(x)
        return v if math.isfinite(v) else None
    return x


# ------------------------------------------------------------------------------ experiments

P = TypeVar("P", bound=PlanSection)
M = TypeVar("M", bound=Measurements)


class Experiment(ABC, Generic[P, M]):
    """One experiment of the reproduction (see the module docstring)."""

    #: short name ("E1"): the plan's key, the stores' prefix, the report's and profile's label
    name: ClassVar[str]
    #: the report section's title
    title: ClassVar[str]
    #: the plan section class (``full()`` and ``quick()``)
    Plan: ClassVar[type[PlanSection]]
    #: experiments whose measurements ``run`` reads via ``ctx.needed`` (earlier in the registry)
    needs: ClassVar[tuple["Experiment[Any, Any]", ...]] = ()

    @abstractmethod
    def run(self, p: P, ctx: "ExperimentContext") -> M:
        """Simulations, theory and analysis; no figure, no prose."""

    @abstractmethod
    def figures(self, p: P, m: M, fig_dir: Path) -> list[Path]:
        """Write the figures (``fig_dir/<stem>.png`` and ``.pdf``); return the PNG paths."""

    @abstractmethod
    def report_section(self, p: P, m: M, fig_dir: Path) -> "Section":
        """The report's section: prose, tables and the figures' captions."""

    def check_plan(self, plan: Any) -> None:
        """Refuse, when the :class:`~attnsignal.reproduce.plan.Plan` is built — before any
        experiment starts — what this experiment's calls would refuse only once it runs
        (sizes they check before their own work, read from any section of ``plan``). Raises
        ConfigError; nothing by default."""

    def claims(self, p: P, m: M) -> list["ClaimResult"]:
        """The claims this experiment checks (none by default)."""
        return []

    def example_measurements(self, p: P) -> M:
        """Measurements (numbers only, :meth:`Measurements.of`) under which every claim of
        this experiment holds with plan section ``p``'s tolerances, in both modes. The claims
        tests start from them for every registered experiment, and move one number at a time
        to show that each claim can fail: a registered experiment must give them."""
        raise NotImplementedError(f"{self.name}: example_measurements is not implemented")

    def __repr__(self) -> str:
        return f"<experiment {self.name}>"


def check_section(exp: Experiment[Any, Any], section: Any) -> None:
    """``ConfigError`` unless ``section`` is an instance of ``exp.Plan``."""
    if not isinstance(section, exp.Plan):
        raise ConfigError(f"plan.{exp.name}", f"must be a {exp.Plan.__name__}",
                          type(section).__name__)
