"""The token model, attention pooling, the objective and its exact per-sample gradient.

Shapes: a sample is ``X ∈ R^{L×d}`` (rows are tokens; the first ``R`` are informative);
batched arrays carry leading axes, ``X ∈ R^{...×L×d}``, ``q ∈ R^{...×d}``.

- ``α(q, X) = softmax(β X q)`` — always shifted by the max score (log-sum-exp), so scores up
  to ``10^4`` and beyond are finite;
- ``f_q(X) = X^T α = Σ_i α_i x_i``;
- ``J(q) = E ||f_q(X)||²``;
- ``∂f/∂q = β (X^T diag(α) X − f f^T)``, hence the per-sample gradient
  ``g = ∇_q ||f||² = 2β (Σ_i α_i c_i x_i − ||f||² f)``, ``c = X f`` — three mat-vecs, ``O(L d)``.
"""

from __future__ import annotations

import numpy as np

from .config import ModelConfig

__all__ = [
    "latent_direction",
    "sample_tokens",
    "attention_weights",
    "pool",
    "sq_norm_and_gradient",
    "objective_mc",
]


def latent_direction(d: int) -> np.ndarray:
    """The latent direction used throughout: ``ξ = e_1`` (the law of every statistic of the
    alignment is rotation invariant, so the choice is without loss of generality)."""
    xi = np.zeros(d)
    xi[0] = 1.0
    return xi


def sample_tokens(
    model: ModelConfig,
    rng: np.random.Generator,
    size: tuple[int, ...] = (),
    xi: np.ndarray | None = None,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """Draw ``X`` of shape ``size + (L, d)``: ``x_i = ε θ ξ + σ z_i`` for ``i < R`` and
    ``x_i = σ z_i`` otherwise, ``z ~ N(0, I)``. ``ε = +1``, or for ``signal_sign="random"`` a
    fair sign per sample (one per leading index). Draw order: ``z`` then ``ε``.
    ``out``: a C-contiguous float64 array of that shape to fill instead of allocating."""
    d, R, L = model.d, model.n_informative, model.n_tokens
    xi = latent_direction(d) if xi is None else np.asarray(xi, dtype=np.float64)
    if out is None:
        X = rng.standard_normal(size + (L, d))
    else:
        X = rng.standard_normal(size + (L, d), out=out)
    if model.noise_std != 1.0:
        X *= model.noise_std
    shift = model.theta * xi
    if model.signal_sign == "random":
        eps = rng.choice(np.array([-1.0, 1.0]), size=size)
        X[..., :R, :] += eps[..., None, None] * shift
    else:
        X[..., :R, :] += shift
    return X


def attention_weights(X: np.ndarray, q: np.ndarray, beta: float = 1.0) -> np.ndarray:
    """``α = softmax(β X q)`` over the token axis, shifted by the max score.

    X : (..., L, d), q : (..., d) broadcastable → α : (..., L), rows sum to 1.
    """
    scores = beta * (X @ q[..., None])[..., 0]
    scores -= scores.max(axis=-1, keepdims=True)
    w = np.exp(scores)
    w /= w.sum(axis=-1, keepdims=True)
    return w


def pool(X: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """``f = X^T α``: (..., L, d), (..., L) → (..., d)."""
    return (alpha[..., None, :] @ X)[..., 0, :]


def sq_norm_and_gradient(
    X: np.ndarray, q: np.ndarray, beta: float = 1.0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-sample ``F = ||f_q(X)||²``, its exact gradient ``g = ∇_q F`` and the weights ``α``.

    ``g = 2β (X^T (α ∘ c) − F f)`` with ``c = X f`` (equivalently ``2β X^T (α ∘ (c − F))``).
    X : (..., L, d), q : (..., d) → F : (...), g : (..., d), α : (..., L). Treats ``q`` as a free
    vector in ``R^d`` (no normalisation), so ``g`` is the Euclidean gradient.
    """
    alpha = attention_weights(X, q, beta)
    f = pool(X, alpha)
    F = np.einsum("...d,...d->...", f, f)
    c = (X @ f[..., None])[..., 0]
    v = alpha * (c - F[..., None])
    g = 2.0 * beta * (v[..., None, :] @ X)[..., 0, :]
    return F, g, alpha


def objective_mc(
    model: ModelConfig,
    q: np.ndarray,
    n_samples: int,
    rng: np.random.Generator,
    xi: np.ndarray | None = None,
    chunk: int = 256,
) -> tuple[float, float]:
    """Monte-Carlo ``J(q) = E ||f_q(X)||²`` with its standard error, from ``n_samples``
    independent samples. ``q`` is used as given (pass a unit vector for ``J`` on the sphere).
    Returns ``(estimate, standard_error)``."""
    if n_samples < 2:
        raise ValueError(f"n_samples: must be an integer >= 2; got {n_samples!r}")
    q = np.asarray(q, dtype=np.float64)
    vals = []
    left = n_samples
    while left > 0:
        m = min(chunk, left)
        X = sample_tokens(model, rng, (m,), xi)
        f = pool(X, attention_weights(X, q, model.beta))
        vals.append(np.einsum("nd,nd->n", f, f))
        left -= m
    v = np.concatenate(vals)
    return float(v.mean()), float(v.std(ddof=1) / np.sqrt(v.size))
