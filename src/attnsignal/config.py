"""Validated, frozen configuration objects — the one place that rejects bad input.

Every public entry point (Python, the command line, sweep specs) builds these objects, so
every bad value is caught here with one line naming the field, its allowed range and the value
received::

    ConfigError: theta: must be a finite number >= 0; got -1.0

The checks are declared as constraint tables (one row per field, as scikit-learn does) and
applied in ``__post_init__`` of frozen dataclasses.

Objects
-------
``ModelConfig``  the data model: ``L = R + N`` tokens in ``R^d``, ``x_i = θ ξ + σ z_i`` for the
                 ``R`` informative tokens, ``x_i = σ z_i`` for the ``N`` nuisance tokens.
``StepSize``     ``η_k = η0 (1 + k/k0)^(−power)``.
``RunConfig``    how a simulation is run: steps, runs, minibatch, engine, update rule, seed...
"""

from __future__ import annotations

import math
import numbers
import warnings
from dataclasses import dataclass, fields, replace
from typing import Any, Callable, Mapping

__all__ = [
    "ConfigError",
    "NotRobbinsMonroWarning",
    "ModelConfig",
    "StepSize",
    "RunConfig",
    "UPDATES",
    "SIGNAL_SIGNS",
    "METHODS",
]

UPDATES = ("projected", "riemannian")
SIGNAL_SIGNS = ("fixed", "random")
#: ``"sga"`` (attention, :func:`attnsignal.simulate`) and the baseline estimators
#: (:func:`attnsignal.baseline`; kept equal to ``attnsignal.baselines.method_names()`` by a test).
METHODS = ("sga", "mean", "pca", "oja", "oracle")


class ConfigError(ValueError):
    """A configuration value is outside its allowed range. The message is one line:
    ``field: allowed; got value``."""

    def __init__(self, field: str, allowed: str, value: Any):
        self.field = field
        self.allowed = allowed
        self.value = value
        super().__init__(f"{field}: {allowed}; got {value!r}")


class NotRobbinsMonroWarning(UserWarning):
    """The step-size schedule does not satisfy Σ η = ∞, Σ η² < ∞ (power ∉ (1/2, 1])."""


# --------------------------------------------------------------------------- constraints
# A constraint is (predicate, description, coercer). The coercer turns an accepted value into
# its canonical type (int for counts, float for reals) so that equal configs compare equal.


def _is_int(v: Any) -> bool:
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def _is_real(v: Any) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def int_ge(lo: int) -> tuple[Callable[[Any], bool], str, Callable[[Any], Any]]:
    return (lambda v: _is_int(v) and v >= lo, f"must be an integer >= {lo}", int)


def real_gt(lo: float) -> tuple[Callable[[Any], bool], str, Callable[[Any], Any]]:
    return (
        lambda v: _is_real(v) and math.isfinite(v) and v > lo,
        f"must be a finite number > {lo:g}",
        float,
    )


def real_ge(lo: float) -> tuple[Callable[[Any], bool], str, Callable[[Any], Any]]:
    return (
        lambda v: _is_real(v) and math.isfinite(v) and v >= lo,
        f"must be a finite number >= {lo:g}",
        float,
    )


def real_in(lo: float, hi: float) -> tuple[Callable[[Any], bool], str, Callable[[Any], Any]]:
    return (
        lambda v: _is_real(v) and math.isfinite(v) and lo <= v <= hi,
        f"must be a number in [{lo:g}, {hi:g}]",
        float,
    )


def one_of(*choices: str) -> tuple[Callable[[Any], bool], str, Callable[[Any], Any]]:
    return (
        lambda v: isinstance(v, str) and v in choices,
        "must be one of " + ", ".join(repr(c) for c in choices),
        str,
    )


def _engine_name() -> tuple[Callable[[Any], bool], Any, Callable[[Any], Any]]:
    """A name registered in :mod:`attnsignal.engines` (looked up when checked: the registry
    imports this module)."""

    class _Allowed:
        def __str__(self) -> str:
            from .engines import engine_names

            return "must be one of " + ", ".join(map(repr, engine_names()))

    def pred(v: Any) -> bool:
        from .engines import engine_names

        return isinstance(v, str) and v in engine_names()

    return (pred, _Allowed(), str)


def optional(c: tuple) -> tuple[Callable[[Any], bool], str, Callable[[Any], Any]]:
    pred, desc, coerce = c
    return (
        lambda v: v is None or pred(v),
        desc + " (or None)",
        lambda v: None if v is None else coerce(v),
    )


def _validate(obj: Any, table: Mapping[str, tuple], prefix: str = "") -> None:
    """Check every field of a frozen dataclass against its row in ``table``; coerce types."""
    for f in fields(obj):
        if f.name not in table:
            continue
        pred, desc, coerce = table[f.name]
        value = getattr(obj, f.name)
        if not pred(value):
            raise ConfigError(prefix + f.name, str(desc), value)
        object.__setattr__(obj, f.name, coerce(value))


class _Config:
    """Shared behaviour: ``to_dict``, ``from_dict`` (rejecting unknown keys), ``replace``."""

    _table: dict = {}
    _section: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}  # type: ignore[arg-type]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], prefix: str | None = None):
        prefix = cls._section + "." if prefix is None and cls._section else (prefix or "")
        known = {f.name for f in fields(cls)}  # type: ignore[arg-type]
        for key in data:
            if key not in known:
                raise ConfigError(
                    prefix + str(key), "unknown key; allowed keys are " + ", ".join(sorted(known)),
                    data[key],
                )
        try:
            return cls(**dict(data))
        except ConfigError as exc:
            if prefix and not exc.field.startswith(prefix):
                raise ConfigError(prefix + exc.field, exc.allowed, exc.value) from None
            raise

    def replace(self, **changes: Any):
        return replace(self, **changes)  # type: ignore[type-var]


# --------------------------------------------------------------------------- ModelConfig


@dataclass(frozen=True)
class ModelConfig(_Config):
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
        "d": int_ge(2),
        "n_informative": int_ge(1),
        "n_nuisance": int_ge(0),
        "theta": real_ge(0.0),
        "beta": real_gt(0.0),
        "noise_std": real_gt(0.0),
        "signal_sign": one_of(*SIGNAL_SIGNS),
    }

    def __post_init__(self) -> None:
        _validate(self, self._table)

    @property
    def n_tokens(self) -> int:
        """``L = R + N``."""
        return self.n_informative + self.n_nuisance

    def standardized(self) -> "ModelConfig":
        """The equivalent model with ``σ = 1``: ``(θ/σ, 1, βσ)``. Its objective is ``J/σ²`` and
        its trajectory with steps ``σ² η_k`` is the original one."""
        s = self.noise_std
        return replace(self, theta=self.theta / s, beta=self.beta * s, noise_std=1.0)


# --------------------------------------------------------------------------- StepSize


@dataclass(frozen=True)
class StepSize(_Config):
    """Step sizes ``η_k = η0 (1 + k/k0)^(−power)``, ``k = 0, 1, 2, ...``.

    Robbins–Monro (``Σ η_k = ∞``, ``Σ η_k² < ∞``) holds iff ``1/2 < power ≤ 1``.
    ``power = 0`` is a constant step: allowed, but not Robbins–Monro. A schedule that is not
    Robbins–Monro issues a :class:`NotRobbinsMonroWarning` when used by :func:`simulate`.
    """

    eta0: float
    k0: float = 1000.0
    power: float = 0.75

    _section = "step"
    _table = {
        "eta0": real_gt(0.0),
        "k0": real_gt(0.0),
        "power": real_ge(0.0),
    }

    def __post_init__(self) -> None:
        _validate(self, self._table)

    @property
    def robbins_monro(self) -> bool:
        return 0.5 < self.power <= 1.0

    def describe(self) -> str:
        kind = "Robbins–Monro" if self.robbins_monro else (
            "constant step (not Robbins–Monro)" if self.power == 0 else "not Robbins–Monro"
        )
        return f"η_k = {self.eta0:g}·(1 + k/{self.k0:g})^(−{self.power:g}) — {kind}"

    def warn_if_not_robbins_monro(self) -> None:
        if not self.robbins_monro:
            warnings.warn(
                f"step.power = {self.power:g} is outside (1/2, 1]: the schedule is not "
                "Robbins–Monro (Σ η = ∞ and Σ η² < ∞ do not both hold)",
                NotRobbinsMonroWarning,
                stacklevel=3,
            )


# --------------------------------------------------------------------------- RunConfig


@dataclass(frozen=True)
class RunConfig(_Config):
    """How a simulation runs.

    steps : int >= 1               number of SGA updates per run
    runs : int >= 1                independent runs
    batch : int >= 1               minibatch size ``B`` (average of ``B`` per-sample gradients)
    engine : "literal" | "projected" | "chain"
    update : "projected" | "riemannian"
    seed : int >= 0                root of ``numpy.random.SeedSequence``
    record_every : int >= 1 or None  record every this many steps (and the last); None: a
                                   choice giving about 200 records
    initial_alignment : float in [-1, 1] or None  ``ρ0``; None draws ``q0`` uniformly on the
                                   sphere
    method : "sga" | "mean" | "pca" | "oja" | "oracle"   attention's SGA, or a baseline
                                   estimator on the same token stream (``steps`` = samples)
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

    _section = "run"
    _table = {
        "steps": int_ge(1),
        "runs": int_ge(1),
        "batch": int_ge(1),
        "engine": _engine_name(),
        "update": one_of(*UPDATES),
        "seed": int_ge(0),
        "record_every": optional(int_ge(1)),
        "initial_alignment": optional(real_in(-1.0, 1.0)),
        "method": one_of(*METHODS),
    }

    def __post_init__(self) -> None:
        _validate(self, self._table)
        if self.record_every is None:
            object.__setattr__(self, "record_every", max(1, self.steps // 200))

    def record_steps(self) -> "list[int]":
        """Step indices recorded: 0, ``record_every``, ``2·record_every``, ..., and ``steps``."""
        every = int(self.record_every)  # type: ignore[arg-type]
        ks = list(range(0, self.steps + 1, every))
        if ks[-1] != self.steps:
            ks.append(self.steps)
        return ks
