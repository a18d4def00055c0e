"""What every engine shares: the explicit state, per-run seeding, initial queries.

An engine is a module with two pure functions of (config, state, random stream):

``init(model, run, seeds) -> EngineState``
    the initial state of ``len(seeds)`` runs; ``seeds[r]`` is run ``r``'s
    ``numpy.random.SeedSequence`` and is the only source of randomness for that run.
``advance(model, run, state, etas) -> (EngineState, StepStats)``
    applies ``len(etas)`` updates with step sizes ``etas`` (update ``k`` uses ``η_k``) and
    returns the new state and the attention statistics of the sample(s) drawn at the last
    update. The input state is not modified.

The random stream of run ``r`` lives in ``state.streams[r]`` (an engine-specific object:
a ``numpy.random.Generator`` for the literal engine, a counter for counter-based engines)
and depends on nothing but that run's seed, so a run is bit-identical whatever the number
of runs simulated beside it.

Divergence: a run whose state becomes non-finite is flagged (``diverged``, with the update
index in ``diverged_step``), its alignment set to NaN, and it is no longer updated; the
other runs go on.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Sequence

import numpy as np

from ..config import ModelConfig, RunConfig

__all__ = ["EngineState", "StepStats", "run_seeds", "initial_query", "initial_rho"]


@dataclass(frozen=True)
class EngineState:
    """Explicit simulation state of a block of runs.

    rho : (runs,) signed alignment ``<q, ξ>``
    q : (runs, d) unit queries, or None for engines that never form ``q`` (the chain)
    k : number of updates applied so far
    diverged : (runs,) bool; diverged_step : (runs,) int, −1 where not diverged
    streams : per-run random streams (engine specific)
    """

    rho: np.ndarray
    q: np.ndarray | None
    k: int
    diverged: np.ndarray
    diverged_step: np.ndarray
    streams: Any = field(default=None, repr=False)

    def replace(self, **changes: Any) -> "EngineState":
        return replace(self, **changes)


@dataclass(frozen=True)
class StepStats:
    """Attention statistics of the samples drawn at one update, averaged over the minibatch.

    informative_mass : (runs,) ``Σ_{i∈I} α_i``;  max_nuisance_weight : (runs,) ``max_{i∉I} α_i``.
    NaN for diverged runs.
    """

    informative_mass: np.ndarray
    max_nuisance_weight: np.ndarray


def run_seeds(
    seed: int, runs: int, first_run: int = 0, spawn_prefix: Sequence[int] = ()
) -> list[np.random.SeedSequence]:
    """Per-run seed sequences ``SeedSequence(seed, spawn_key=(*spawn_prefix, r))`` for
    ``r = first_run, ..., first_run + runs − 1``. With an empty prefix these are exactly
    ``SeedSequence(seed).spawn(n)[r]``."""
    prefix = tuple(int(p) for p in spawn_prefix)
    return [
        np.random.SeedSequence(seed, spawn_key=prefix + (r,))
        for r in range(first_run, first_run + runs)
    ]


def initial_rho(
    rng: np.random.Generator, d: int, initial_alignment: float | None
) -> float:
    """``ρ0``: the given value, or the alignment of a uniform point on ``S^{d−1}``:
    ``ρ0² ~ Beta(1/2, (d−1)/2)`` with a fair sign (exact in law, ``O(1)`` for any ``d``)."""
    if initial_alignment is not None:
        return float(initial_alignment)
    r2 = rng.beta(0.5, (d - 1) / 2.0)
    sign = 1.0 if rng.random() < 0.5 else -1.0
    return sign * float(np.sqrt(r2))


def initial_query(
    rng: np.random.Generator, d: int, xi: np.ndarray, initial_alignment: float | None
) -> np.ndarray:
    """``q0`` uniform on ``S^{d−1}`` (None), or ``ρ0 ξ + √(1−ρ0²) u`` with ``u`` uniform on the
    unit sphere of ``ξ^⊥``."""
    z = rng.standard_normal(d)
    if initial_alignment is None:
        return z / np.linalg.norm(z)
    rho0 = float(initial_alignment)
    u = z - (z @ xi) * xi
    nu = np.linalg.norm(u)
    u = u / nu if nu > 0 else u
    q = rho0 * xi + np.sqrt(max(0.0, 1.0 - rho0 * rho0)) * u
    return q / np.linalg.norm(q)


def mark_diverged(
    rho: np.ndarray, diverged: np.ndarray, diverged_step: np.ndarray, k: int
) -> None:
    """In place: flag runs whose ``rho`` is not finite at update ``k`` (1-based count)."""
    bad = ~np.isfinite(rho) & ~diverged
    if bad.any():
        diverged[bad] = True
        diverged_step[bad] = k
        rho[bad] = np.nan
