"""The one-step gradient moments as exact polynomials in the dimension (``docs/scaling.md``).

At alignment ``ρ`` every per-sample quantity of the reduced sampler (:mod:`.reduced`) depends on
the dimension only through ``γ² ~ χ²_D`` and ``χ' ~ χ²_{D−1}``, ``D = d − 2``. With ``V`` the
vector ``v_i = α_i (c_i − F)`` split by powers of ``γ``,

    v = V⁰ + γ V¹ + γ² V²,   V⁰_i = α_i (s_i A + h_i H − A² − H²),
                             V¹_i = n α_i (Pζ)_i,   V²_i = α_i (α_i − n²),

the gradient's coordinates are ``g_q = 2β Σ_i v_i s_i``, ``g_e = 2β Σ_i v_i h_i`` and
``||u||² = 4β² [(v_a γ + ζ·v_⊥)² + ||v_⊥||² χ']`` (``v_a = v·α̂``, ``v_⊥ = v − v_a α̂``): polynomials
in ``γ`` of degree 2 and 6 (times ``χ'`` up to degree 4) with coefficients that depend on the
``L``-dimensional draw ``(a, b, ζ)`` and on ``ρ``, never on ``d``. A flip ``ζ → −ζ`` (a symmetry of
the law) flips the sign of every odd power of ``γ``, so odd powers have mean zero; the even ones
average with the exact chi-square moments ``E γ² = D``, ``E γ⁴ = D(D + 2)``,
``E γ⁶ = D(D + 2)(D + 4)``, ``E χ' = D − 1``. Hence, for every draw, the conditional means over
``(γ, χ')`` of

    g_e,  g_q  (degree 1 in D),   g_e²,  g_q g_e,  g_q²  (degree 2),   ||u||²  (degree 3)

are polynomials in ``D`` with ``d``-free coefficients; averaging the coefficients over draws
gives every one-step moment at **every** ``d`` from one set of draws. The leading coefficient of
``E||u||²`` is ``4β² E||V²||² = 4β² E Σ_i α_i² (α_i − n²)²``.

The random sign (``ε = ±1`` per sample) is the fixed-sign model seen from ``−ξ``: a sample with
``ε = −1`` at alignment ``ρ`` has ``(g_q, g_e, ||u||²)`` distributed as ``(g_q, −g_e, ||u||²)`` of
the fixed-sign model at ``−ρ``. Its moments are therefore the exact symmetrisations of the
fixed-sign coefficients at ``±ρ`` (computed from the same draws, which also cancels part of the
Monte-Carlo error).

Units: the standardised model (``σ = 1``); a model with noise ``σ`` has gradients ``σ²`` times
these (``ModelConfig.standardized``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numba import njit, prange

from ..config import ModelConfig
from ..limits import check_work
from ._checks import MODEL, N_SAMPLES, RHO, SEED, validated
from .reduced import reduced_chunks

__all__ = ["DimensionMoments", "dimension_moments", "STATISTICS"]

#: The statistics, in the order of :attr:`DimensionMoments.coef`'s second axis.
STATISTICS = ("g_e", "g_q", "g_e2", "g_qg_e", "g_q2", "u2")
_DEG = 4  # power-basis coefficients 1, D, D², D³ of every statistic
#: the dimension the draws are made at (any ``d >= 4``: the coefficients do not depend on it;
#: one fixed value makes them a function of the model's ``L``-dimensional part and the seed)
_DRAW_D = 4


@njit(cache=True, nogil=True)
def _draw_coefficients(rho, a, b, zeta, theta, beta, R, out):  # pragma: no cover
    """Power-basis coefficients in ``D`` (``out``: ``(6, 4)``) of the conditional means over
    ``(γ, χ')`` of the statistics :data:`STATISTICS` for one fixed-sign draw at ``rho``."""
    L = a.shape[0]
    sr = math.sqrt(max(0.0, 1.0 - rho * rho))
    tq = theta * rho
    te = theta * sr
    m = -np.inf
    for j in range(L):
        x = a[j] + (tq if j < R else 0.0)
        if x * beta > m:
            m = x * beta
    alpha = np.empty(L)
    Z = 0.0
    for j in range(L):
        x = a[j] + (tq if j < R else 0.0)
        w = math.exp(beta * x - m)
        alpha[j] = w
        Z += w
    A = 0.0
    H = 0.0
    n2 = 0.0
    sz = 0.0
    for j in range(L):
        al = alpha[j] / Z
        alpha[j] = al
        sj = a[j] + (tq if j < R else 0.0)
        hj = b[j] + (te if j < R else 0.0)
        A += al * sj
        H += al * hj
        n2 += al * al
        sz += al * zeta[j]
    n = math.sqrt(n2)
    az = sz / n  # α̂·ζ
    F0 = A * A + H * H
    q0 = q1 = q2 = 0.0
    e0 = e1 = e2 = 0.0
    a0 = a1 = a2 = 0.0
    z0 = z1 = z2 = 0.0
    G00 = G11 = G22 = G01 = G02 = G12 = 0.0
    for j in range(L):
        al = alpha[j]
        sj = a[j] + (tq if j < R else 0.0)
        hj = b[j] + (te if j < R else 0.0)
        ah = al / n
        pz = zeta[j] - az * ah
        V0 = al * (sj * A + hj * H - F0)
        V1 = n * al * pz
        V2 = al * (al - n2)
        q0 += V0 * sj
        q1 += V1 * sj
        q2 += V2 * sj
        e0 += V0 * hj
        e1 += V1 * hj
        e2 += V2 * hj
        a0 += V0 * ah
        a1 += V1 * ah
        a2 += V2 * ah
        z0 += V0 * zeta[j]
        z1 += V1 * zeta[j]
        z2 += V2 * zeta[j]
        G00 += V0 * V0
        G11 += V1 * V1
        G22 += V2 * V2
        G01 += V0 * V1
        G02 += V0 * V2
        G12 += V1 * V2
    # ζ·v_⊥ = ζ·v − v_a (α̂·ζ);  ||v_⊥||² = ||v||² − v_a²
    z0 -= a0 * az
    z1 -= a1 * az
    z2 -= a2 * az
    P00 = G00 - a0 * a0
    P11 = G11 - a1 * a1
    P22 = G22 - a2 * a2
    P02 = G02 - a0 * a2
    # (v_a γ + ζ·v_⊥) = b0 + b1 γ + b2 γ² + b3 γ³
    b0 = z0
    b1 = a0 + z1
    b2 = a1 + z2
    b3 = a2
    B1 = b1 * b1 + 2.0 * b0 * b2
    B2 = b2 * b2 + 2.0 * b1 * b3
    B3 = b3 * b3
    Q1 = P11 + 2.0 * P02
    k1 = 2.0 * beta
    k2 = k1 * k1
    for i in range(6):
        for j in range(4):
            out[i, j] = 0.0
    # E γ^0 = 1, E γ² = D, E γ⁴ = D² + 2D, E γ⁶ = D³ + 6D² + 8D; E χ' = D − 1
    out[0, 0] = k1 * e0
    out[0, 1] = k1 * e2
    out[1, 0] = k1 * q0
    out[1, 1] = k1 * q2
    m1 = e1 * e1 + 2.0 * e0 * e2
    out[2, 0] = k2 * e0 * e0
    out[2, 1] = k2 * (m1 + 2.0 * e2 * e2)
    out[2, 2] = k2 * e2 * e2
    c1 = q1 * e1 + q0 * e2 + q2 * e0
    out[3, 0] = k2 * q0 * e0
    out[3, 1] = k2 * (c1 + 2.0 * q2 * e2)
    out[3, 2] = k2 * q2 * e2
    r1 = q1 * q1 + 2.0 * q0 * q2
    out[4, 0] = k2 * q0 * q0
    out[4, 1] = k2 * (r1 + 2.0 * q2 * q2)
    out[4, 2] = k2 * q2 * q2
    out[5, 0] = k2 * (b0 * b0 - P00)
    out[5, 1] = k2 * (B1 + 2.0 * B2 + 8.0 * B3 + P00 - Q1 - 2.0 * P22)
    out[5, 2] = k2 * (B2 + 6.0 * B3 + Q1 + P22)
    out[5, 3] = k2 * (B3 + P22)


@njit(cache=True, parallel=True, nogil=True)
def _chunk_coefficients(rhos, a, b, zeta, theta, beta, R, out):  # pragma: no cover
    """``out[r, i]`` (``(n_rho, n, 6, 4)``): :func:`_draw_coefficients` of draw ``i`` at
    ``rhos[r]``."""
    n = a.shape[0]
    for i in prange(n):
        for r in range(rhos.shape[0]):
            _draw_coefficients(rhos[r], a[i], b[i], zeta[i], theta, beta, R, out[r, i])


def _power(D: Any) -> np.ndarray:
    """``(1, D, D², D³)`` along a new last axis."""
    D = np.asarray(D, dtype=np.float64)
    return np.stack([np.ones_like(D), D, D * D, D * D * D], axis=-1)


@dataclass(frozen=True, eq=False)
class DimensionMoments:
    """The one-step gradient moments at the alignments ``rho`` as polynomials in ``D = d − 2``.

    rho : ``(k,)`` alignments
    coef : ``(k, 6, 4)`` power-basis coefficients (``1, D, D², D³``) of the means of
        :data:`STATISTICS` = ``g_e, g_q, g_e², g_q g_e, g_q², ||u||²`` (standardised units)
    cov : ``(k, 24, 24)`` covariance of one draw's coefficients (``coef`` flattened), for the
        standard errors (``cov / n_samples``)
    n_samples : draws of ``(a, b, ζ)`` (shared by all alignments)
    model : the model (its ``d`` is not used: every ``d`` is available)
    """

    rho: np.ndarray
    coef: np.ndarray
    cov: np.ndarray
    n_samples: int
    model: ModelConfig

    def mean(self, stat: str, d: Any) -> np.ndarray:
        """``E[stat]`` at every alignment (rows) and every ``d`` (columns; ``d`` scalar gives
        ``(k,)``); ``stat`` one of :data:`STATISTICS`."""
        i = STATISTICS.index(stat)
        return self.coef[:, i, :] @ _power(np.asarray(d, dtype=np.float64) - 2.0).T

    def stderr(self, stat: str, d: Any) -> np.ndarray:
        """Monte-Carlo standard error of :meth:`mean`."""
        i = STATISTICS.index(stat)
        P = _power(np.atleast_1d(np.asarray(d, dtype=np.float64)) - 2.0)  # (m, 4)
        C = self.cov[:, 4 * i:4 * i + 4, 4 * i:4 * i + 4]  # (k, 4, 4)
        var = np.einsum("md,kde,me->km", P, C, P) / self.n_samples
        se = np.sqrt(np.maximum(var, 0.0))
        return se[:, 0] if np.ndim(d) == 0 else se

    def kappa(self, d: Any, update: str = "projected") -> np.ndarray:
        """The ``O(η²)`` coefficient of the one-step mean, ``E[ρ' − ρ] = η s E g_e − η² κ``:
        ``κ = ρ/2 · E[g_e² + ||u||²] + s E[g_q g_e]`` (projected; riemannian without the last
        term), ``s = √(1 − ρ²)``. Shape as :meth:`mean`."""
        r = self.rho[:, None] if np.ndim(d) else self.rho
        s = np.sqrt(np.maximum(0.0, 1.0 - r * r))
        k = 0.5 * r * (self.mean("g_e2", d) + self.mean("u2", d))
        if update == "projected":
            k = k + s * self.mean("g_qg_e", d)
        return k

    def kappa_coefficients(self, update: str = "projected") -> np.ndarray:
        """``(k, 4)``: the power-basis coefficients of :meth:`kappa` in ``D``, and ``(k, 4)``
        their standard errors (a ``(2, k, 4)`` array)."""
        s = np.sqrt(np.maximum(0.0, 1.0 - self.rho ** 2))
        w = np.zeros((self.rho.size, 6))
        w[:, 2] = w[:, 5] = 0.5 * self.rho
        if update == "projected":
            w[:, 3] = s
        val = np.einsum("ks,ksj->kj", w, self.coef)
        se = np.empty_like(val)
        for j in range(_DEG):
            idx = np.arange(6) * _DEG + j
            C = self.cov[:, idx][:, :, idx]
            se[:, j] = np.sqrt(np.maximum(np.einsum("ks,kst,kt->k", w, C, w), 0.0)
                               / self.n_samples)
        return np.stack([val, se])

    def var_ge(self, d: Any) -> np.ndarray:
        """``Var(g_e) = E g_e² − (E g_e)²``; the alignment noise per unit step squared is
        ``(1 − ρ²) Var(g_e)``."""
        m = self.mean("g_e", d)
        return self.mean("g_e2", d) - m * m


class _Running:
    """Means and co-moments of batches ``X`` (``(groups, n, m)``) pooled over the batches
    (Chan et al.'s pairwise update: exact, stable)."""

    def __init__(self) -> None:
        self.n = 0
        self.mean: np.ndarray | None = None
        self._m2: np.ndarray | None = None

    def add(self, X: np.ndarray) -> None:
        k = X.shape[1]
        bm = X.mean(axis=1)
        dev = X - bm[:, None, :]
        bm2 = np.einsum("gni,gnj->gij", dev, dev)
        if self.mean is None:
            self.n, self.mean, self._m2 = k, bm, bm2
            return
        tot = self.n + k
        delta = bm - self.mean
        self._m2 = self._m2 + bm2 + np.einsum("gi,gj->gij", delta, delta) * (self.n * k / tot)
        self.mean = self.mean + delta * (k / tot)
        self.n = tot

    def covariance(self) -> np.ndarray:
        """The sample covariance (``ddof = 1``) of each group."""
        return self._m2 / max(self.n - 1, 1)


def coefficient_work(model: ModelConfig, n_rho: int, n_samples: int) -> int:
    """Floating-point work of :func:`dimension_moments` (about 40 operations a token)."""
    return 40 * model.n_tokens * n_rho * n_samples


@validated(model=MODEL, rho=RHO, n_samples=N_SAMPLES, seed=SEED)
def dimension_moments(model: ModelConfig, rho: Any, *, n_samples: int = 4000,
                      seed: int = 0) -> DimensionMoments:
    """The moments of :data:`STATISTICS` at the alignments ``rho`` (1-D) as exact polynomials
    in ``D = d − 2`` (module docstring), from ``n_samples`` common draws of ``(a, b, ζ)``.

    The coefficients are unbiased; their Monte-Carlo covariance is returned for standard
    errors. ``model.d`` is not used, neither in the coefficients nor in the draws: the same seed
    gives the same coefficients, bit for bit, at every ``d`` (any ``d >= 3`` is then available);
    ``model.noise_std`` is absorbed (standardised units). Raises ``ConfigError`` for bad input
    or work that cannot finish.
    """
    r = np.atleast_1d(np.asarray(rho, dtype=np.float64)).ravel()
    std = model.standardized()
    random = std.signal_sign == "random"
    grid = np.concatenate([r, -r]) if random else r
    check_work("n_samples", coefficient_work(std, grid.size, n_samples),
               f"n_samples × alignments × L tokens (L = {std.n_tokens})", n_samples)
    # the draws: a, b, ζ of the fixed-sign model (the sign is applied by symmetrisation), at
    # one dimension whatever model.d is: the sampler also draws γ² ~ χ²_D and χ' ~ χ²_{D−1}
    # (unused here) between chunks, and their rejection samplers consume a D-dependent share of
    # the stream, so drawing at model.d would make the coefficients depend on it
    fixed = ModelConfig(d=_DRAW_D, n_informative=std.n_informative,
                        n_nuisance=std.n_nuisance, theta=std.theta, beta=std.beta)
    acc = _Running()
    for draws in reduced_chunks(fixed, n_samples, seed):
        k = draws.a.shape[0]
        out = np.empty((grid.size, k, 6, _DEG))
        _chunk_coefficients(grid, draws.a, draws.b, draws.zeta, float(std.theta),
                            float(std.beta), int(std.n_informative), out)
        if random:
            # ε = −1 at ρ: the fixed-sign sample at −ρ with g_e → −g_e (and g_q g_e → −g_q g_e)
            flip = np.array([-1.0, 1.0, 1.0, -1.0, 1.0, 1.0])[None, None, :, None]
            out = 0.5 * (out[:r.size] + flip * out[r.size:])
        acc.add(out.reshape(r.size, k, 6 * _DEG))
    mean, cov, n_tot = acc.mean, acc.covariance(), acc.n
    return DimensionMoments(rho=r, coef=mean.reshape(r.size, 6, _DEG), cov=cov,
                            n_samples=n_tot, model=model)
