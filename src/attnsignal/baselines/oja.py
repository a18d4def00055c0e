"""``"oja"``: Oja's online rule on the per-sample token means, in its normalised form

    q_{k+1} = (q_k + η_k (m_k·q_k) m_k) / ‖q_k + η_k (m_k·q_k) m_k‖

(Oja's classical rule ``q += η y (m − y q)``, ``y = m·q``, is its first-order expansion in
``η``), started from a uniform ``q0``. Exact reduced form (the argument that makes attention's
alignment a Markov chain, docs/model.md#the-alignment-is-a-markov-chain): rotations fixing
``ξ`` preserve the law of ``m`` and commute with the update, so ``ρ_k`` is a Markov chain. With ``q = ρ ξ + s e`` (``e ⊥ ξ`` unit, ``s = √(1 − ρ²)``) and,
for ``σ = 1``, ``m = a ξ + b e + v_⊥``, ``a ~ N(εc, 1/L)``, ``b ~ N(0, 1/L)``,
``‖v_⊥‖² ~ χ²_{d−2}/L``:

    h = aρ + s b,   ρ̃ = ρ + η h a,   s̃² = (s + η h b)² + η² h² ‖v_⊥‖²,
    ρ' = ρ̃ / √(ρ̃² + s̃²),   s' = s̃ / √(ρ̃² + s̃²).

``O(1)`` per sample (three draws) whatever ``L`` and ``d``; ``s`` is carried alongside ``ρ`` so
that ``1 − |ρ|`` keeps its precision near convergence. The update is even in ``m``, so the
random sign ``ε`` drops out (we draw ``a ~ N(c, 1/L)`` in both variants). For ``σ ≠ 1`` the
step is ``σ² η`` on the standardised model.

Default schedule (:func:`default_step`): ``η_k = 1/(σ² g (k + k0))`` with the eigengap
``g = c²`` of ``E[m mᵀ] = c² ξξᵀ + I/L`` and ``k0 = 1 + (d − 1)/ℓ`` (``ℓ = c²L``; the first
step then moves ``q`` by ``O(1)``): ``a/k`` with ``a = 1/g`` is the asymptotically optimal
rule, whose error ``1 − |ρ| ≈ (d−1)(1 + ℓ)/(2kℓ²)`` equals PCA's.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
from numba import njit

from ..config import ConfigError, ModelConfig, StepSize
from .base import (
    BaselineConfig, BaselineState, generators, new_streams, signal_scale, uniform_alignment,
)
from .mean import pooling_weights

__all__ = ["init", "advance", "pooling_weights", "default_step", "oja_block"]

_BLOCK = 1 << 16


def default_step(model: ModelConfig) -> StepSize:
    """The asymptotically optimal ``a/(k + k0)`` schedule, ``a = 1/(σ² g)`` (see the module)."""
    c, var = signal_scale(model)
    if c == 0:
        raise ConfigError("step", "must be given for method 'oja' when theta = 0 (no eigengap)",
                          None)
    ell = c * c / var
    k0 = 1.0 + (model.d - 1) / ell
    return StepSize(eta0=1.0 / (model.noise_std ** 2 * c * c * k0), k0=k0, power=1.0)


@njit(cache=True)
def oja_block(rho: float, s: float, eta: np.ndarray, a: np.ndarray, b: np.ndarray,
              perp2: np.ndarray) -> tuple[float, float]:
    """Apply ``eta.size`` reduced Oja updates to ``(ρ, s)``; ``perp2 = ‖v_⊥‖²``."""
    for t in range(eta.size):
        h = a[t] * rho + s * b[t]
        u = eta[t] * h
        r1 = rho + u * a[t]
        s1 = s + u * b[t]
        sp = math.sqrt(s1 * s1 + u * u * perp2[t])
        nrm = math.hypot(r1, sp)
        rho = r1 / nrm
        s = sp / nrm
    return rho, s


def init(model: ModelConfig, config: BaselineConfig,
         seeds: Sequence[np.random.SeedSequence]) -> BaselineState:
    n = len(seeds)
    rho = np.empty(n)

    def draw(r: int, g: np.random.Generator) -> None:
        rho[r] = uniform_alignment(g, model.d)

    streams = generators(new_streams(seeds), draw)
    s = np.sqrt(np.maximum(0.0, 1.0 - rho * rho))
    return BaselineState(k=0, rho=rho, stats={"s": s}, streams=streams)


def advance(model: ModelConfig, config: BaselineConfig, state: BaselineState,
            samples: int) -> BaselineState:
    if samples <= 0:
        return state
    c, var = signal_scale(model)
    sd = math.sqrt(var)
    d = model.d
    rho = state.rho.copy()
    s = state.stats["s"].copy()
    etas = config.etas(state.k, state.k + samples) * model.noise_std ** 2

    def draw(r: int, g: np.random.Generator) -> None:
        rr, ss = rho[r], s[r]
        for j in range(0, samples, _BLOCK):
            n = min(_BLOCK, samples - j)
            a = c + sd * g.standard_normal(n)
            b = sd * g.standard_normal(n)
            p2 = var * g.chisquare(d - 2, n) if d > 2 else np.zeros(n)
            if np.isfinite(rr):
                rr, ss = oja_block(rr, ss, etas[j:j + n], a, b, p2)
        rho[r], s[r] = rr, ss

    streams = generators(state.streams, draw)
    return BaselineState(k=state.k + samples, rho=rho, stats={"s": s}, streams=streams)
