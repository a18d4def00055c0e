"""One update of many runs from a point mass: the reference the one-step theory is checked against.

:func:`chain_one_step` runs one update of the alignment chain (the ``chain`` engine's compiled
kernel, exact in law) from ``ρ`` for ``runs`` independent runs at once — without the per-run
Python set-up of :func:`attnsignal.simulate`, which dominates when every run is one update —
and :func:`jump_moments` summarises the jumps ``Δz = artanh ρ' − artanh ρ``: mean, variance and
their standard errors, the variance's from the fourth moment,

    SE(v) = √((m₄ − v²)/n),

which is what a heavy-tailed jump needs (for a kurtosis ``κ`` it is ``v√((κ − 1)/n)``, not
``v√(2/n)``). ``docs/effective-dynamics.md`` compares the effective dynamics' moment table with
these.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .config import UPDATES, ConfigError, ModelConfig, RunConfig
from .validation import Integer, OneOf, Real, validated

__all__ = ["JumpMoments", "chain_one_step", "jump_moments"]

_UPDATES = OneOf(*UPDATES)


@validated(rho=Real(gt=-1.0, lt=1.0), eta=Real(gt=0.0), runs=Integer(ge=2),
           batch=Integer(ge=1), update=_UPDATES, seed=Integer(ge=0))
def chain_one_step(model: ModelConfig, rho: float, eta: float, *, runs: int, batch: int = 1,
                   update: str = "projected", seed: int = 0) -> np.ndarray:
    """``(runs,)`` alignments ``ρ'`` after one update of step ``eta`` (model units) from ``ρ``,
    each run with its own 128-bit stream key drawn from ``seed``; deterministic given ``seed``.
    Raises ``ConfigError`` for bad input (as the chain engine checks it)."""
    from .engines.base import EngineState
    from .engines.registry import get_engine

    engine = get_engine("chain")
    run = RunConfig(steps=1, runs=runs, batch=batch, engine="chain", update=update, seed=seed,
                    initial_alignment=float(rho))
    engine.check(model, run)
    keys = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(91,))).integers(
        0, np.iinfo(np.uint64).max, size=(runs, 2), dtype=np.uint64, endpoint=True)
    state = EngineState.start(np.full(runs, float(rho)), None, keys)
    new, _ = engine.advance(model, run, state, np.array([float(eta)]))
    out = np.asarray(new.rho, dtype=np.float64)
    if not np.all(np.isfinite(out)):
        raise ConfigError("eta", "must keep one update finite", eta)
    return out


@dataclass(frozen=True)
class JumpMoments:
    """Moments of ``n`` jumps ``Δz``: ``mean`` ± ``stderr_mean``, ``var`` ± ``stderr_var``
    (fourth moment), ``kurtosis`` (``m₄/v²``, 3 for a Gaussian)."""

    n: int
    mean: float
    stderr_mean: float
    var: float
    stderr_var: float
    kurtosis: float


def jump_moments(rho_next: np.ndarray, rho: float) -> JumpMoments:
    """:class:`JumpMoments` of ``Δz = artanh ρ' − artanh ρ`` over the runs ``rho_next``."""
    lim = 1.0 - 1e-16
    dz = np.arctanh(np.clip(rho_next, -lim, lim)) - math.atanh(min(max(rho, -lim), lim))
    n = dz.size
    m = float(dz.mean())
    c = dz - m
    v = float(np.mean(c * c)) * n / (n - 1)
    m4 = float(np.mean(c ** 4))
    return JumpMoments(n=n, mean=m, stderr_mean=math.sqrt(v / n), var=v,
                       stderr_var=math.sqrt(max(m4 - v * v, 0.0) / n),
                       kurtosis=m4 / (v * v) if v > 0 else math.nan)
