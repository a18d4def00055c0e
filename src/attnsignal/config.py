"""Validated, frozen configuration objects — the one place that rejects bad input.

Every public entry point (Python, the command line, sweep specs) builds these objects, so
every bad value is caught here with one line naming the field, its allowed range and the value
received::

    ConfigError: theta: must be a finite number >= 0; got -1.0

The checks are declared as constraint tables (one row per field; the constraints and the
message template live in :mod:`attnsignal.validation`) and applied in ``__post_init__`` of
frozen dataclasses.

Objects
-------
``ModelConfig``  the data model: ``L = R + N`` tokens in ``R^d``, ``x_i = θ ξ + σ z_i`` for the
                 ``R`` informative tokens, ``x_i = σ z_i`` for the ``N`` nuisance tokens.
``StepSize``     ``η_k = η0 (1 + k/k0)^(−power)`` and the other schedule families (defined in
                 :mod:`attnsignal.schedules`, re-exported here).
``RunConfig``    how a simulation is run: steps, runs, minibatch, engine, update rule, seed...

Variants
--------
The fields of the model and the run that take one of a fixed set of values
(``signal_sign``, ``update``, ...: :func:`variant_fields`) are the axes along which the model
varies. Whatever computes from a model — each engine (``Capabilities.supports``), the theory
layer, the baselines — declares what it covers along them as ``supports``, a mapping
``{field: values}``, and :func:`check_supported` (the one check) refuses anything else before
any work; a field it does not list accepts only its default. So a new variant is a new value
(or field) here and the one engine that implements it: everything else refuses it with one
line, ``noise: must be 'gaussian' for the 'chain' engine; got 'student_t'``.
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields, replace
from typing import Any, Iterable, Mapping

from .records import RECORD, check_records
from .schedules import (
    ConstantStep, NotRobbinsMonroWarning, PiecewiseStep, Schedule, StepSize, TabulatedStep,
    schedule_from_dict,
)
from .validation import (
    Config, ConfigError, Instance, Integer, Name, OneOf, Optional, Real, Sequence,
    validate_fields,
)

__all__ = [
    "ConfigError",
    "NotRobbinsMonroWarning",
    "ModelConfig",
    "StepSize",
    "Schedule",
    "ConstantStep",
    "PiecewiseStep",
    "TabulatedStep",
    "schedule_from_dict",
    "RunConfig",
    "UPDATES",
    "SIGNAL_SIGNS",
    "variant_fields",
    "check_supports",
    "check_supported",
    "SupportedModel",
]

UPDATES = ("projected", "riemannian")
SIGNAL_SIGNS = ("fixed", "random")


# --------------------------------------------------------------------------- ModelConfig


@dataclass(frozen=True)
class ModelConfig(Config):
    """The data model of the paper.

    ``L = R + N`` tokens ``x_i ∈ R^d``; informative tokens (the first ``R``) are
    ``x_i = ε θ ξ + σ z_i``, nuisance tokens ``x_i = σ z_i``, ``z_i ~ N(0, I_d)`` i.i.d.,
    ``ξ`` a unit vector. ``ε = +1`` (``signal_sign="fixed"``) or a fair random sign drawn per
    sample (``"random"``). Attention ``α = softmax(β X q)``.

    Parameters
    ----------
    d : int >= 2             ambient dimension
    n_informative : int >= 1 ``R``
    n_nuisance : int >= 0    ``N``
    theta : float >= 0       signal strength ``θ``
    beta : float > 0         inverse temperature ``β``
    noise_std : float > 0    ``σ``
    signal_sign : "fixed" | "random"

    Raises
    ------
    ConfigError (a ``ValueError``) naming the field, the allowed range and the value.

    Examples
    --------
    >>> m = ModelConfig(d=100, n_informative=500, n_nuisance=10_000, theta=0.25)
    >>> m.n_tokens
    10500
    >>> ModelConfig(d=10, n_informative=5, n_nuisance=20, theta=0.5, noise_std=2.0).standardized()
    ModelConfig(d=10, n_informative=5, n_nuisance=20, theta=0.25, beta=2.0, noise_std=1.0,
                signal_sign='fixed')
    >>> ModelConfig(d=1, n_informative=5, n_nuisance=0, theta=1.0)
    Traceback (most recent call last):
    ...
    attnsignal.validation.ConfigError: d: must be an integer >= 2; got 1
    """

    d: int
    n_informative: int
    n_nuisance: int
    theta: float
    beta: float = 1.0
    noise_std: float = 1.0
    signal_sign: str = "fixed"

    _section = "model"
    _table = {
        "d": Integer(ge=2, doc="ambient dimension d"),
        "n_informative": Integer(ge=1, doc="informative tokens R"),
        "n_nuisance": Integer(ge=0, doc="nuisance tokens N"),
        "theta": Real(ge=0.0, doc="signal strength θ"),
        "beta": Real(gt=0.0, doc="inverse temperature β"),
        "noise_std": Real(gt=0.0, doc="token noise σ"),
        "signal_sign": OneOf(*SIGNAL_SIGNS, doc="sign of the signal: +θξ, or ±θξ drawn per sample"),
    }

    @property
    def n_tokens(self) -> int:
        """``L = R + N``."""
        return self.n_informative + self.n_nuisance

    def standardized(self) -> "ModelConfig":
        """The equivalent model with ``σ = 1``: ``(θ/σ, 1, βσ)``. Its objective is ``J/σ²`` and
        its trajectory with steps ``σ² η_k`` is the original one."""
        s = self.noise_std
        return replace(self, theta=self.theta / s, beta=self.beta * s, noise_std=1.0)


# --------------------------------------------------------------------------- RunConfig


@dataclass(frozen=True)
class RunConfig(Config):
    """How a simulation runs.

    steps : int >= 1               number of SGA updates per run
    runs : int >= 1                independent runs
    batch : int >= 1               minibatch size ``B`` (average of ``B`` per-sample gradients)
    engine : name of a registered engine ("literal" | "projected" | "chain" | ...): checked
                                   here as a name, resolved by :func:`attnsignal.engines.
                                   get_engine` (which refuses an unknown one with the list)
    update : "projected" | "riemannian"
    seed : int >= 0                root of ``numpy.random.SeedSequence``
    spawn_key : tuple of ints >= 0 or None  the runs' key prefix: run ``r`` draws from
                                   ``SeedSequence(seed, spawn_key=(*spawn_key, r))`` (a sweep's
                                   runs from ``(*spawn_key, point, r)``); see
                                   :mod:`attnsignal.seeds`
    record_every : int >= 1 or None  linear records: every this many steps (and the last);
                                   None: ``max(1, steps // 200)``, about 200 records
    initial_alignment : float in [-1, 1] or None  ``ρ0``; None draws ``q0`` uniformly on the
                                   sphere
    record : None | "linear" | "log" | tuple of step indices — see :mod:`attnsignal.records`
                                   (``"linear"`` is stored as None; ``record_every`` stays
                                   None for the others)
    method : "sga" (attention's SGA) or the name of a baseline estimator on the same token
                                   stream (:func:`attnsignal.baselines.method_names`; ``steps``
                                   = samples), resolved where it runs (a sweep checks it
                                   when the spec is read)
    """

    steps: int
    runs: int = 1
    batch: int = 1
    engine: str = "literal"
    update: str = "projected"
    seed: int = 0
    record_every: int | None = None
    initial_alignment: float | None = None
    method: str = "sga"
    record: str | tuple[int, ...] | None = field(default=None, metadata={"omit_if_none": True})
    spawn_key: tuple[int, ...] | None = field(default=None, metadata={"omit_if_none": True})

    _section = "run"
    _table = {
        "steps": Integer(ge=1, doc="SGA updates per run"),
        "runs": Integer(ge=1, doc="independent runs"),
        "batch": Integer(ge=1, doc="minibatch size B"),
        "engine": Name("an engine name", doc="simulation engine"),
        "update": OneOf(*UPDATES, doc="update rule"),
        "seed": Integer(ge=0, doc="root seed"),
        "record_every": Optional(Integer(ge=1), doc="linear records: record every this many "
                                 "steps (default: about 200 records)"),
        "initial_alignment": Optional(Real(ge=-1.0, le=1.0), doc="start with ρ0 = this "
                                      "(default: q0 uniform on the sphere)"),
        "method": Name("a method name", doc="attention's SGA ('sga') or a baseline estimator"),
        "record": RECORD,
        "spawn_key": Optional(Sequence(Integer(ge=0, le=2 ** 64 - 1)),
                              doc="the runs' seeds: SeedSequence(seed, spawn_key=(*this, run))"),
    }

    def __post_init__(self) -> None:
        validate_fields(self, self._table)
        if self.spawn_key == ():  # no prefix: the same config, and the same hashes, as None
            object.__setattr__(self, "spawn_key", None)
        if self.record is None and self.record_every is None:
            object.__setattr__(self, "record_every", max(1, self.steps // 200))
        # a listed step beyond `steps`, or record_every with log records (nothing is built)
        check_records(self.steps, self.record_every if self.record is not None else None,
                      self.record)

    def n_records(self) -> int:
        """How many steps :meth:`record_steps` gives (counted, not built)."""
        from .records import n_records

        return n_records(self.steps, self.record_every if self.record is None else None,
                         self.record)

    def record_steps(self) -> "list[int]":
        """Step indices recorded (:func:`attnsignal.records.record_steps`): 0, ..., ``steps``."""
        from .records import record_steps

        every = self.record_every if self.record is None else None
        if self.record is not None and self.record_every is not None:
            every = self.record_every  # rejected there, naming record_every
        return record_steps(self.steps, every, self.record).tolist()


def int_ge(lo: int) -> tuple[Any, str, Any]:
    """Deprecated: the ``(predicate, description, coerce)`` row of an integer ``>= lo`` from
    before :mod:`attnsignal.validation` (kept so that code written against it still runs; it
    is built from ``validation.Integer(ge=lo)``, the one source of the rule and its words)."""
    c = Integer(ge=lo)
    return (c.accepts, c.describe(), int)


# --------------------------------------------------------------------------- variants


def variant_fields() -> dict[str, tuple[tuple[str, ...], str]]:
    """``{field: (values, default)}`` for every field of :class:`ModelConfig` and
    :class:`RunConfig` whose constraint is a fixed set of values (a ``OneOf``): the axes a
    ``supports`` declaration speaks of (read from the tables, so a new field is one)."""
    out: dict[str, tuple[tuple[str, ...], str]] = {}
    for cls in (ModelConfig, RunConfig):
        defaults = {f.name: f.default for f in fields(cls) if f.default is not MISSING}
        for name, c in cls._table.items():
            if isinstance(c, OneOf) and c.fixed and name in defaults:
                out[name] = (tuple(c.choices), defaults[name])
    return out


def check_supports(supports: Mapping[str, Iterable[str]]) -> dict[str, tuple[str, ...]]:
    """A ``supports`` declaration as a plain dict of tuples. Raises ``TypeError`` (a
    programming error, at declaration) for a key that is not a variant field or a value the
    field does not have."""
    axes = variant_fields()
    out: dict[str, tuple[str, ...]] = {}
    for name, values in dict(supports).items():
        if name not in axes:
            raise TypeError(f"supports: {name!r} is not a variant field of the model or the "
                            f"run ({', '.join(axes)})")
        vals = tuple(values)
        unknown = [v for v in vals if v not in axes[name][0]]
        if unknown:
            raise TypeError(f"supports: {name} has no value {unknown[0]!r} "
                            f"({', '.join(map(repr, axes[name][0]))})")
        out[name] = vals
    return out


def check_supported(who: str, supports: Mapping[str, Iterable[str]], *,
                    model: Any = None, run: Any = None, **values: Any) -> None:
    """Refuse, in one line, a variant that ``who`` does not cover.

    For each variant field (:func:`variant_fields`) of ``model`` and ``run`` (whichever is
    given) and each one passed by name in ``values`` (``update="riemannian"``), the value
    must be one of ``supports[field]``; a field not listed in ``supports`` accepts only its
    default. Raises :class:`ConfigError` naming the field, the values ``who`` covers and the
    value: ``signal_sign: must be 'fixed' for the 'x' engine; got 'random'``."""
    for name, (_, default) in variant_fields().items():
        if name in values:
            value = values[name]
        else:
            owner = next((o for o in (model, run) if o is not None and hasattr(o, name)), None)
            if owner is None:
                continue
            value = getattr(owner, name)
        allowed = tuple(supports.get(name, (default,)))
        if value not in allowed:
            text = (repr(allowed[0]) if len(allowed) == 1
                    else "one of " + ", ".join(map(repr, allowed)))
            raise ConfigError(name, f"must be {text} for {who}", value)


class SupportedModel(Instance):
    """A :class:`ModelConfig` whose variant fields ``who`` covers (``supports``, checked by
    :func:`check_supported`): the model argument of a theory or baseline entry point."""

    def __init__(self, supports: Mapping[str, Iterable[str]], who: str, *, doc: str = ""):
        super().__init__(ModelConfig, doc=doc)
        self.supports, self.who = check_supports(supports), who

    def check(self, field: str, value: Any) -> Any:
        value = super().check(field, value)
        check_supported(self.who, self.supports, model=value)
        return value

