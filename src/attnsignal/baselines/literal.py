"""The baselines computed literally: materialise every token, ``O(L d)`` per sample.

The reference the exact samplers are tested against (equal in law, two-sample tests). All
runs share one generator and are vectorised; ``ξ`` is a uniformly random unit vector and each
run's initial guess ``q0`` is uniform on the sphere. Per sample and run: tokens
``X = ε θ ξ 1_I + σ Z`` (``Z ~ N(0, I)``, ``L × d``), ``m = X.mean(0)`` and

- mean:   ``S += m``, estimate ``S``;
- oracle: ``O += ε · X[I].mean(0)``, estimate ``O``;
- pca:    ``M += m mᵀ``, estimate the top eigenvector of ``M`` with ``u·q0 >= 0``;
- oja:    ``q ← (q + η_k (m·q) m)/‖·‖``.

Before the first sample the estimate is ``q0``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..config import ModelConfig
from .base import RUNNING_AVERAGE, BaselineConfig

__all__ = ["literal_baseline"]


def literal_baseline(model: ModelConfig, method: str, *, samples: int, runs: int,
                     record: Any, seed: int = 0, step: Any = None) -> np.ndarray:
    """(runs, len(record)) signed alignments at the steps ``record`` (sorted, from 0)."""
    rng = np.random.default_rng(seed)
    d, R, L = model.d, model.n_informative, model.n_tokens
    ks = np.asarray(record, dtype=np.int64)
    cfg = BaselineConfig(method, RUNNING_AVERAGE if step is None else step)
    etas = cfg.etas(0, samples) if method == "oja" else None
    xi = rng.standard_normal(d)
    xi /= np.linalg.norm(xi)
    q0 = rng.standard_normal((runs, d))
    q0 /= np.linalg.norm(q0, axis=1, keepdims=True)
    acc = np.zeros((runs, d)) if method in ("mean", "oracle") else None
    M = np.zeros((runs, d, d)) if method == "pca" else None
    q = q0.copy()
    out = np.full((runs, ks.size), np.nan)

    def estimate(k: int) -> np.ndarray:
        if k == 0 or method == "oja":
            return q
        if method == "pca":
            u = np.linalg.eigh(M)[1][..., -1]
            return u * np.where(np.einsum("rd,rd->r", u, q0) < 0, -1.0, 1.0)[:, None]
        return acc / np.linalg.norm(acc, axis=1, keepdims=True)

    j = 0
    for k in range(samples + 1):
        while j < ks.size and ks[j] == k:
            out[:, j] = estimate(k) @ xi
            j += 1
        if k == samples:
            break
        eps = (np.where(rng.random(runs) < 0.5, -1.0, 1.0) if model.signal_sign == "random"
               else np.ones(runs))
        X = model.noise_std * rng.standard_normal((runs, L, d))
        X[:, :R, :] += (eps * model.theta)[:, None, None] * xi
        m = X.mean(axis=1)
        if method == "mean":
            acc += m
        elif method == "oracle":
            acc += eps[:, None] * X[:, :R, :].mean(axis=1)
        elif method == "pca":
            M += m[:, :, None] * m[:, None, :]
        elif method == "oja":
            y = np.einsum("rd,rd->r", m, q)
            q = q + etas[k] * y[:, None] * m
            q /= np.linalg.norm(q, axis=1, keepdims=True)
        else:
            raise ValueError(f"method: must be one of 'mean', 'pca', 'oja', 'oracle'; got {method!r}")
    return out
