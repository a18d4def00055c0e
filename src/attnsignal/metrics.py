"""Alignment and attention statistics.

For attention weights ``α ∈ Δ^{L−1}`` (last axis) with the first ``R`` tokens informative:

- informative mass ``m = Σ_{i<R} α_i``;
- largest nuisance weight ``max_{i>=R} α_i`` (0 when there are no nuisance tokens);
- entropy ``H(α) = −Σ α_i log α_i`` (nats, ``0 log 0 = 0``);
- effective number of tokens ``1/||α||²`` (between 1 and ``L``).

The alignment is ``ρ = <q, ξ>`` for unit ``q`` and ``ξ``; it is always kept signed.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "alignment",
    "informative_mass",
    "max_nuisance_weight",
    "attention_entropy",
    "effective_tokens",
]


def alignment(q: np.ndarray, xi: np.ndarray) -> np.ndarray:
    """Signed ``ρ = <q, ξ>/(||q|| ||ξ||)`` along the last axis."""
    q = np.asarray(q, dtype=np.float64)
    return (q @ xi) / (np.linalg.norm(q, axis=-1) * np.linalg.norm(xi))


def informative_mass(alpha: np.ndarray, n_informative: int) -> np.ndarray:
    return alpha[..., :n_informative].sum(axis=-1)


def max_nuisance_weight(alpha: np.ndarray, n_informative: int) -> np.ndarray:
    if alpha.shape[-1] == n_informative:
        return np.zeros(alpha.shape[:-1])
    return alpha[..., n_informative:].max(axis=-1)


def attention_entropy(alpha: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(alpha > 0, alpha * np.log(alpha), 0.0)
    return -t.sum(axis=-1)


def effective_tokens(alpha: np.ndarray) -> np.ndarray:
    return 1.0 / np.einsum("...l,...l->...", alpha, alpha)
