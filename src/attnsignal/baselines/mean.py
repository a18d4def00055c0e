"""``"mean"``: the running average of the per-sample token means.

After ``k`` samples the estimate is ``m̄_k = (1/k) Σ_t m_t`` with ``m_t = ε_t c ξ + N(0, I/L)``
(``c = Rθ/(Lσ)``, :mod:`.base`); its direction is all that matters, so we keep the sum
``Σ_t m_t = S ξ + W`` through two numbers per run: ``S`` (the ``ξ`` component) and
``‖W‖`` (the norm of the ``ξ^⊥`` part). A block of ``Δ`` more samples adds, exactly in law
(docs/baselines.md),

    S   += c Σ_t ε_t + N(0, Δ/L)        (Σ ε_t = Δ, or 2·Binomial(Δ, 1/2) − Δ)
    ‖W‖² ← (‖W‖ + N(0, Δ/L))² + (Δ/L) χ²_{d−2}

(the increment of ``W`` split along ``W/‖W‖`` and across it), and ``ρ = S/√(S² + ‖W‖²)``.
Cost: ``O(1)`` per record, whatever ``L``, ``d`` and the number of samples between records.
Fixed sign: ``1 − |ρ| ≈ (d−1)/(2kℓ)`` with ``ℓ = c²L = (Rθ/σ)²/L``. Random sign: the ``ξ``
component is ``c Σε/k ~ c/√k``, of the order of the noise, so ``ρ`` never converges.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..config import ModelConfig
from .base import (
    BaselineConfig, BaselineState, chi2, generators, new_streams, signal_scale,
    uniform_alignment,
)

__all__ = ["init", "advance", "pooling_weights", "init_sum", "advance_sum"]


def init_sum(model: ModelConfig, seeds: Sequence[np.random.SeedSequence]) -> BaselineState:
    """No sample yet: ``S = ‖W‖ = 0``; ``rho`` is the alignment of the initial guess."""
    n = len(seeds)
    rho = np.empty(n)

    def draw(r: int, g: np.random.Generator) -> None:
        rho[r] = uniform_alignment(g, model.d)

    streams = generators(new_streams(seeds), draw)
    return BaselineState(k=0, rho=rho, stats={"along": np.zeros(n), "across": np.zeros(n)},
                         streams=streams)


def advance_sum(
    model: ModelConfig, state: BaselineState, samples: int, c: float, var: float,
    random_sign: bool,
) -> BaselineState:
    """Add ``samples`` per-sample vectors ``ε c ξ + N(0, var·I)`` to the running sums."""
    if samples <= 0:
        return state
    along = state.stats["along"].copy()
    across = state.stats["across"].copy()
    d = model.d
    sd = np.sqrt(samples * var)

    def draw(r: int, g: np.random.Generator) -> None:
        signs = (2 * int(g.binomial(samples, 0.5)) - samples) if random_sign else samples
        along[r] += c * signs + sd * g.standard_normal()
        w = across[r] + sd * g.standard_normal()
        across[r] = np.sqrt(w * w + samples * var * chi2(g, d - 2))

    streams = generators(state.streams, draw)
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = along / np.hypot(along, across)
    return BaselineState(k=state.k + samples, rho=rho,
                         stats={"along": along, "across": across}, streams=streams)


def init(model: ModelConfig, config: BaselineConfig,
         seeds: Sequence[np.random.SeedSequence]) -> BaselineState:
    return init_sum(model, seeds)


def advance(model: ModelConfig, config: BaselineConfig, state: BaselineState,
            samples: int) -> BaselineState:
    c, var = signal_scale(model)
    return advance_sum(model, state, samples, c, var, model.signal_sign == "random")


def pooling_weights(model: ModelConfig) -> tuple[float, float]:
    """The pooling weights' analogue of attention's statistics: every token weighs ``1/L``,
    so the informative mass is ``R/L`` and the largest nuisance weight ``1/L`` (0 if N = 0)."""
    L = model.n_tokens
    return model.n_informative / L, (1.0 / L if model.n_nuisance else 0.0)
