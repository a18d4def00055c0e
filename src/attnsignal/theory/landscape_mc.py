"""Monte-Carlo ``Φ(ρ)`` and pathwise ``Φ'(ρ)`` from the exact reduction
(docs/model.md#the-population-objective).

Standardised model (``σ = 1``). For ``a ~ N(0, I_L)``, ``s_i = θρ 1_i + a_i``,
``α = softmax(β s)``:

    Φ(ρ)  = E[A² + θ²(1 − ρ²) m² + (d − 1) n²],   A = α·s, m = Σ_{i∈I} α_i, n² = ||α||²,

and, differentiating at fixed ``a`` (``∂s_i/∂ρ = θ 1_i``, ``∂α_i/∂ρ = βθ α_i (1_i − m)``),

    ∂A  = βθ (A_I − m A) + θ m,       A_I = Σ_{i∈I} α_i s_i,
    ∂m  = βθ m (1 − m),
    ∂n² = 2βθ (n_I² − m n²),          n_I² = Σ_{i∈I} α_i²,
    Φ'(ρ) = E[2A ∂A + θ²(−2ρ m² + 2(1 − ρ²) m ∂m) + (d − 1) ∂n²].

Because the informative scores only shift by ``θρ``, each draw is summarised by
``ρ``-independent statistics of the two token classes (max score, ``Σ e^{β(a−M)}``,
``Σ a e^{β(a−M)}``, ``Σ e^{2β(a−M)}``), so the whole ``ρ`` grid is evaluated on the same draws
(common random numbers) at ``O(L)`` per draw plus ``O(1)`` per ``(draw, ρ)``. Draws are made in
chunks of at most ``2^21`` normals, so ``L`` up to ``10^6`` (and beyond) fits in memory.
Random sign: each draw's integrand is averaged over ``ε = ±1`` (i.e. ``ρ`` and ``−ρ``).
"""

from __future__ import annotations

import numpy as np

__all__ = ["phi_mc", "Moments", "mc_bytes", "mc_work"]

_CHUNK = 1 << 21


def mc_bytes(L: int) -> float:
    """Peak memory of :func:`phi_mc`, bytes: a chunk holds at least one draw of ``L`` normals
    (and its exponentials), else ``2^21`` of them."""
    return 8.0 * 3 * max(L, _CHUNK)


def mc_work(L: int, n_samples: int, n_rho: int) -> float:
    """Elementary operations of :func:`phi_mc`: ``L`` normals per draw, ``O(1)`` per
    (draw, ρ)."""
    return float(n_samples) * (float(L) + 20.0 * n_rho)


class Moments:
    """Running mean and variance of a stream of arrays (Chan's parallel update).

    ``update(x)`` with ``x`` of shape ``(rows, *shape)``; ``mean`` and ``var`` (``ddof=1``)
    have ``shape``; ``n`` counts rows.
    """

    def __init__(self) -> None:
        self.n = 0
        self.mean: np.ndarray | float = 0.0
        self.m2: np.ndarray | float = 0.0

    def update(self, x: np.ndarray) -> None:
        k = x.shape[0]
        if k == 0:
            return
        mx = x.mean(axis=0)
        m2x = ((x - mx) ** 2).sum(axis=0)
        if self.n == 0:
            self.n, self.mean, self.m2 = k, mx, m2x
            return
        n = self.n + k
        delta = mx - self.mean
        self.mean = self.mean + delta * (k / n)
        self.m2 = self.m2 + m2x + delta * delta * (self.n * k / n)
        self.n = n

    @property
    def var(self) -> np.ndarray:
        return np.asarray(self.m2) / max(self.n - 1, 1)

    @property
    def stderr(self) -> np.ndarray:
        return np.sqrt(self.var / max(self.n, 1))


def _class_stats(a: np.ndarray, beta: float) -> tuple[np.ndarray, ...]:
    """Per row: ``M = max a``, ``Σ e^{β(a−M)}``, ``Σ a e^{β(a−M)}``, ``Σ e^{2β(a−M)}``."""
    M = a.max(axis=1)
    e = np.exp(beta * (a - M[:, None]))
    return M, e.sum(axis=1), (e * a).sum(axis=1), (e * e).sum(axis=1)


def _integrand(rho: np.ndarray, stI, stN, d: int, theta: float,
               beta: float) -> tuple[np.ndarray, np.ndarray]:
    """Per-draw integrand and its ρ-derivative, shape ``(rows, n_rho)``."""
    MI, s0I, s1I, qI = (x[:, None] for x in stI)
    r = rho[None, :]
    cI = beta * (theta * r + MI)
    if stN is None:
        c = cI
        eI = np.ones_like(cI)
        WN = s1N_t = qN_t = 0.0
    else:
        MN, s0N, s1N, qN = (x[:, None] for x in stN)
        cN = beta * MN
        c = np.maximum(cI, cN)
        eI = np.exp(cI - c)
        eN = np.exp(cN - c)
        WN = eN * s0N
        s1N_t = eN * s1N
        qN_t = eN * eN * qN
    WI = eI * s0I
    S = WI + WN
    m = WI / S
    AI = eI * (s1I + theta * r * s0I) / S
    A = AI + s1N_t / S
    nI2 = eI * eI * qI / (S * S)
    n2 = nI2 + qN_t / (S * S)
    coef = theta * theta * (1.0 - r * r)
    val = A * A + coef * m * m + (d - 1) * n2
    bt = beta * theta
    dA = bt * (AI - m * A) + theta * m
    dm = bt * m * (1.0 - m)
    dn2 = 2.0 * bt * (nI2 - m * n2)
    dval = (2.0 * A * dA + theta * theta * (-2.0 * r * m * m + 2.0 * (1.0 - r * r) * m * dm)
            + (d - 1) * dn2)
    return val, dval


def phi_mc(R: int, N: int, d: int, theta: float, beta: float, rho: np.ndarray,
           n_samples: int, seed: int, random_sign: bool = False
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(Φ, Φ', se(Φ), se(Φ'))`` on the 1-D grid ``rho`` (standardised model) from
    ``n_samples`` draws of ``a`` shared by every grid point. Deterministic given ``seed``."""
    rho = np.asarray(rho, dtype=np.float64).ravel()
    rng = np.random.default_rng(seed)
    L = R + N
    rows_per_chunk = max(1, min(n_samples, _CHUNK // L))
    acc_v, acc_d = Moments(), Moments()
    left = n_samples
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        _draw_all(rng, R, N, d, theta, beta, rho, left, rows_per_chunk, random_sign, acc_v, acc_d)
    return (np.asarray(acc_v.mean), np.asarray(acc_d.mean), acc_v.stderr, acc_d.stderr)


def _draw_all(rng, R, N, d, theta, beta, rho, left, rows_per_chunk, random_sign,
              acc_v: Moments, acc_d: Moments) -> None:
    while left > 0:
        rows = min(rows_per_chunk, left)
        left -= rows
        stI = _class_stats(rng.standard_normal((rows, R)), beta)
        stN = _class_stats(rng.standard_normal((rows, N)), beta) if N > 0 else None
        val, dval = _integrand(rho, stI, stN, d, theta, beta)
        if random_sign:
            v2, d2 = _integrand(-rho, stI, stN, d, theta, beta)
            val = 0.5 * (val + v2)
            dval = 0.5 * (dval - d2)
        acc_v.update(val)
        acc_d.update(dval)
