"""Alignment and attention statistics.

For attention weights ``α ∈ Δ^{L−1}`` (last axis) with the first ``R`` tokens informative:

- informative mass ``m = Σ_{i<R} α_i``;
- largest nuisance weight ``max_{i>=R} α_i`` (0 when there are no nuisance tokens).

The alignment is ``ρ = <q, ξ>`` for unit ``q`` and ``ξ``; it is always kept signed.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "alignment",
    "informative_mass",
    "max_nuisance_weight",
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

