"""``"oracle"``: the running average of the informative tokens, sign-corrected.

The oracle knows which ``R`` tokens are informative (and, in the random-sign variant, the
sign ``ε``): per sample it averages ``ε·(1/R) Σ_{i∈I} x_i = θ ξ + N(0, σ² I/R)`` (``ε`` times
a symmetric noise has the noise's law, so both variants are the same). This is the running
mean of :mod:`.mean` with ``c = θ/σ`` and noise variance ``1/R``: exact in law, ``O(1)`` per
record; ``1 − |ρ| ≈ (d−1)/(2kRθ²/σ²)``. It bounds every estimator that pools tokens.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..config import ModelConfig
from .base import BaselineConfig, BaselineState
from .mean import advance_sum, init_sum

__all__ = ["init", "advance", "pooling_weights"]


def init(model: ModelConfig, config: BaselineConfig,
         seeds: Sequence[np.random.SeedSequence]) -> BaselineState:
    return init_sum(model, seeds)


def advance(model: ModelConfig, config: BaselineConfig, state: BaselineState,
            samples: int) -> BaselineState:
    c = model.theta / model.noise_std
    return advance_sum(model, state, samples, c, 1.0 / model.n_informative, False)


def pooling_weights(model: ModelConfig) -> tuple[float, float]:
    """Weight ``1/R`` on each informative token: informative mass 1, nuisance weight 0."""
    return 1.0, 0.0
