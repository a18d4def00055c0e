"""What every baseline estimator shares: its state, per-run random streams, the registry.

A baseline estimator is a module with pure functions of (config, state, random stream)::

    init(model, config, seeds) -> BaselineState       # before any sample (k = 0)
    advance(model, config, state, samples) -> BaselineState   # after ``samples`` more samples

``seeds[r]`` (a ``numpy.random.SeedSequence``) is run ``r``'s only source of randomness. The
state keeps each run's stream as the *state dict* of a ``PCG64`` bit generator; ``advance``
rebuilds a generator from it, draws, and returns the new dict — so calling ``advance`` twice
on one state gives the same answer, and a run is bit-identical whatever runs ride beside it.
Because the estimators draw *sufficient statistics* block by block (one block per gap
between records), a run's realisation depends on its seed **and on the record steps**; its
law does not.

Every estimator sees the per-sample token mean ``m = (1/L) Σ_i x_i`` (the oracle: the mean of
the informative tokens). With ``σ = 1`` (the model is standardised first; alignments do not
depend on ``σ``, Oja's steps scale by ``σ²``) and ``c = Rθ/L``::

    m = ε c ξ + N(0, I_d / L),    ε = +1 (fixed sign) or a fair random sign per sample.

In the coordinates ``(ξ, ξ^⊥)`` the law of ``m`` is invariant under rotations fixing ``ξ``;
each estimator keeps only what that symmetry leaves (see the modules).

Before the first sample every estimator holds a uniformly random unit vector ``q0`` (its
"initial guess"; Oja's rule starts from it), so the record at step 0 is the alignment of a
uniform point of the sphere, as for attention.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Sequence

import numpy as np

from ..config import ConfigError, ModelConfig, StepSize, SupportedModel, check_supports
from ..validation import Name, OneOf, Predicate

__all__ = [
    "BaselineState", "BaselineConfig", "METHODS", "get_estimator", "method_names",
    "RUNNING_AVERAGE", "generators", "signal_scale", "SUPPORTS", "MODEL", "METHOD",
]

#: ``method -> module`` (relative to this package). The attention method ``"sga"`` is not a
#: baseline: it is :func:`attnsignal.simulate`.
METHODS: dict[str, str] = {
    "mean": "mean",
    "pca": "pca",
    "oja": "oja",
    "oracle": "oracle",
}

#: The running average written as stochastic approximation: ``M_{k+1} = M_k + η_k (m − M_k)``
#: with ``η_k = 1/(k + 1) = 1·(1 + k/1)^(−1)``. The mean, the oracle and PCA's second moment
#: all use it; their ``Result.schedule`` is this schedule (so ``ode_time`` is the harmonic number).
RUNNING_AVERAGE = StepSize(eta0=1.0, k0=1.0, power=1.0)


def method_names() -> tuple[str, ...]:
    """The registered baseline methods."""
    return tuple(METHODS)


#: The variants the estimators and their theory are derived for (any σ, both signal signs):
#: a model variant added to the configs is refused until they are.
SUPPORTS = check_supports({"signal_sign": ("fixed", "random")})
#: The model argument of every baseline entry point.
MODEL = SupportedModel(SUPPORTS, "the baselines (attnsignal.baselines)")
#: A registered estimator's name (read from the registry at each check).
METHOD = OneOf(method_names)


def get_estimator(name: str):
    """The estimator module registered as ``name``; ``ConfigError`` for an unknown name."""
    METHOD.check("method", name)
    return importlib.import_module(f"{__package__}.{METHODS[name]}")


def register(name: str, module: str) -> None:
    """Register an estimator module (a dotted path importable from here or absolute)."""
    Predicate(lambda v: Name().accepts(v) and v != "sga", "must be a name other than 'sga' "
              "(attention's method)").check("method", name)
    METHODS[name] = module


@dataclass(frozen=True)
class BaselineConfig:
    """What an estimator needs besides the model: the method and its step sizes.

    method : a registered name;  step : the schedule (Oja's rule only; the others use
    :data:`RUNNING_AVERAGE`), any object with ``eta(k)`` or a :class:`StepSize`.
    """

    method: str
    step: Any = RUNNING_AVERAGE

    def etas(self, k0: int, k1: int) -> np.ndarray:
        """``η_k`` for ``k = k0 .. k1 − 1`` (float64)."""
        return np.asarray(self.step.eta(np.arange(k0, k1, dtype=np.int64)), dtype=np.float64)


@dataclass(frozen=True)
class BaselineState:
    """Explicit state of a block of runs after ``k`` samples.

    rho : (runs,) signed alignment of the current estimate with ``ξ``
    stats : estimator-specific sufficient statistics (a dict of arrays, first axis = run)
    streams : (runs,) PCG64 state dicts, one per run
    """

    k: int
    rho: np.ndarray
    stats: dict[str, np.ndarray]
    streams: tuple[dict, ...] = field(repr=False)

    def replace(self, **changes: Any) -> "BaselineState":
        return replace(self, **changes)


def new_streams(seeds: Sequence[np.random.SeedSequence]) -> tuple[dict, ...]:
    """The initial PCG64 state dict of each run's seed."""
    return tuple(np.random.PCG64(s).state for s in seeds)


def generators(
    streams: Sequence[dict], draw: Callable[[int, np.random.Generator], None]
) -> tuple[dict, ...]:
    """Call ``draw(r, generator_r)`` for each run with a fresh generator rebuilt from
    ``streams[r]`` (the input is not consumed) and return the streams' new states."""
    out = []
    for r, st in enumerate(streams):
        bg = np.random.PCG64()
        bg.state = st
        draw(r, np.random.Generator(bg))
        out.append(bg.state)
    return tuple(out)


def signal_scale(model: ModelConfig) -> tuple[float, float]:
    """``(c, 1/L)`` for the standardised model: the per-sample token mean is
    ``ε c ξ + N(0, I/L)`` with ``c = Rθ/(Lσ)``."""
    L = model.n_tokens
    return model.n_informative * model.theta / (L * model.noise_std), 1.0 / L


def check_scales(model: ModelConfig) -> None:
    """Refuse (ConfigError naming ``theta`` or ``noise_std``, whichever is further from 1) a
    model whose baseline scales leave float64: the signal-to-noise ratios ``c² L`` (``c =
    Rθ/(Lσ)``) and ``R (θ/σ)²``, and ``σ²`` (Oja's steps are ``η σ²``), must be finite, and
    nonzero where ``θ > 0`` — an overflow would end in ``inf`` arithmetic or a division by
    zero, not in an answer."""
    R, L = float(model.n_informative), float(model.n_tokens)
    theta, sigma = float(model.theta), float(model.noise_std)
    with np.errstate(all="ignore"):
        c = np.float64(R) * theta / (np.float64(L) * sigma)
        scales = np.array([c * c * L, R * (np.float64(theta) / sigma) ** 2,
                           np.float64(sigma) ** 2, 1.0 / np.float64(sigma) ** 2])
    ok = np.isfinite(scales).all() and scales[2] > 0 and (theta == 0 or scales[:2].min() > 0)
    if not ok:
        far = abs(np.log10(theta)) if theta > 0 else 0.0
        field, value = ("theta", theta) if far > abs(np.log10(sigma)) else ("noise_std", sigma)
        raise ConfigError(field, "must keep the baselines' signal-to-noise ratios "
                          "c²L = (Rθ/σ)²/L and R(θ/σ)² and σ² within float64 "
                          f"(θ = {theta:.3g}, σ = {sigma:.3g})", value)


def uniform_alignment(rng: np.random.Generator, d: int) -> float:
    """Alignment of a uniform point of ``S^{d−1}`` with ``ξ``: ``ρ² ~ Beta(1/2, (d−1)/2)``,
    a fair sign (exact, ``O(1)``)."""
    r2 = rng.beta(0.5, (d - 1) / 2.0)
    return float(np.sqrt(r2)) * (1.0 if rng.random() < 0.5 else -1.0)


def chi2(rng: np.random.Generator, df: float) -> float:
    """A ``χ²_df`` draw, 0 for ``df = 0``."""
    return float(rng.chisquare(df)) if df > 0 else 0.0
