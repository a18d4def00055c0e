"""One-step moments of the alignment chain: drift and variance of one update, with their errors.

From a point mass at ``ρ`` one update of step ``η`` (projected or riemannian, minibatch ``B``)
moves ``ρ`` to ``ρ'`` and ``z = artanh ρ`` by ``Δz``. This module estimates, at alignments
``ρ_r`` and steps ``η_j`` at once, ``E[Δz]``, ``Var[Δz]`` (and the same for ``Δρ``), their
Monte-Carlo standard errors and the jump's skewness and excess kurtosis, from the exact reduced
sampler (:mod:`.reduced`): per draw ``(g_q, g_e, ||u||²)``, then the exact update

    ρ' = [ρ(1 + ηḡ_q) + sηḡ_e] / √((1 + ηḡ_q)² + (ηḡ_e)² + η²||ū||²),   s = √(1 − ρ²),

for every draw at every ``(ρ_r, η_j)`` (common random numbers: the same draws at every node).
Derivation, error analysis and measurements: ``docs/effective-dynamics.md``.

Estimators
----------
* **Heavy tails.** At ``β ≳ 1`` and large ``L`` the jump is heavy-tailed (a kurtosis of ~10³
  measured): a token whose score ``a_j`` lies above the typical maximum carries a weight
  ``α_j`` far above the others', and ``||u||² ∝ α_j⁴γ⁴χ'`` then makes ``η²||u||²`` of order 1.
  Such draws are rare (``≈ 10⁻⁴``) yet carry most of ``E[Δz²]``, so a few thousand plain draws
  miss them and the variance comes out low with an error far above ``√(2/n)``. The draws are
  therefore importance-sampled on the largest score (:class:`.reduced.ScoreTilt`): each draw
  carries a likelihood ratio ``w <= 2`` and every moment is a self-normalised weighted mean
  ``Σ w_i f_i / Σ w_i``.
* **Drift.** Two control variates of known mean: ``x = ηḡ_e/s`` (mean ``ηΦ'(ρ)``, the
  first-order drift; ``Δρ``: ``x = ηsḡ_e``, mean ``η(1 − ρ²)Φ'``) and, for the projected
  update, ``x' = ηḡ_q`` (mean ``η·β∂Φ/∂β``: ``ℓ = ||f_q(X)||²`` depends on ``q`` through
  ``βq`` alone, so ``g_q = ⟨∇ℓ, q⟩ = β∂ℓ/∂β``; :func:`_gq_mean_std`). ``ḡ_q`` enters ``Δz``
  at second order (``−η²ḡ_qḡ_e/s``) and through the step's norm, and takes a quarter to a
  half of the residual variance left by ``x`` at small ``L``. ``m = mean_w(Δz − c·(x − E x)
  − c'·(x' − E x'))`` with ``(c, c')`` the weighted regression coefficients (``c'`` = 0 for
  the riemannian update, which has no ``ḡ_q``, and where no exact quadrature gives its mean).
  Three more controls where their means have an exact quadrature (:func:`_power_sum_means_std`):
  the softmax weights' power sums ``Σα_j^k``, ``k = 2, 3, 4`` (of each draw, or a minibatch's
  mean), at the node's ``ρ``. At small steps the residual left by ``x`` and ``x'`` is the
  ``η²`` term, mostly ``−ρη²||ū||²/(2s²)``, and ``||u||²`` follows how concentrated the weights
  are: the power sums take 70–80 % of that residual's variance at ``η = 0.004`` at small ``L``
  (and the regression gives them no weight where they explain nothing, e.g. at large steps).
  ``m`` is the intercept of the weighted regression on all five (:func:`_drift_five`).
* **Variance** ``v = Σ w(Δz − m̄)² / (Σ w − Σ w²/Σ w)`` (unbiased for equal weights).
* **Standard errors** from the influence functions of the self-normalised estimators:
  ``SE(m)² = Σ w²(r − r̄)²/(Σ w)²`` with ``r`` the regression's residual, and
  ``SE(v)² = Σ w²((Δz − m̄)² − v)²/(Σ w)²`` — the fourth moment, not ``v√(2/n)``.
* **Adaptive draws.** With ``rtol`` set, draws are added (the total doubling each round, up to
  ``max_samples``) at every node whose standard errors exceed ``SE(v) <= rtol·v`` and
  ``SE(m) <= rtol·max(|ηΦ'| + |m − ηΦ'|, ⅒ of the largest such scale at that step)`` at any
  step; a node that meets them keeps its draws. ``converged`` says whether every node met
  them; ``draws`` gives the draws each node used. :func:`refine_table` and
  :func:`extend_table` add draws at chosen nodes only (a round of draws costs about the same
  whatever the nodes — the draw, not its evaluation at each node, is the cost — but the nodes
  outside are left at their draws).
* **Replicates.** The draws of each round are split into ``K`` equal groups whose sums are kept
  apart: ``K`` independent replicate estimates (each from ``1/K`` of the draws) beside the
  pooled one, from which the effective dynamics measures the Monte-Carlo error of its
  prediction.

All arithmetic per (node, draw, step) is compiled (:func:`_jump_sums_kernel`) and streamed:
memory is one chunk of draws, not the pool.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Callable

import numpy as np
from numba import njit
from scipy.interpolate import CubicSpline

from ..config import ConfigError, ModelConfig
from ..seeds import stream
from ..validation import Integer, Optional, Real, validated
from ._checks import BATCH, MODEL, SEED, UPDATE
from .exact import MAX_BETA
from .field import dphi_interpolant
from .reduced import _in_threads, fused_pool, score_tilt

__all__ = ["MomentTable", "OneStepMoments", "moment_table", "one_step_moments",
           "check_pool_memory", "NODE_DZ", "Z_CAP"]

#: spacing of the moment nodes in ``z``
NODE_DZ = 0.2
#: the grid never reaches beyond ``|z| = 9`` (``1 − |ρ| ≈ 3e-8``)
Z_CAP = 9.0
#: draws per chunk at most (the per-chunk gradients are ``nodes × chunk × 3`` doubles)
_CHUNK_DRAWS = 4096
#: the relative Monte-Carlo tolerance of the moments by default
DEFAULT_RTOL = 0.03
#: default most draws, as a multiple of the starting ``n_samples``
MAX_SAMPLES_FACTOR = 16
#: the power sums of one weight (``w``, then ``w²``) a (node, step) keeps
_NHALF = 30
_NSTAT = 2 * _NHALF
_LIM = 1.0 - 1e-16


def _dphi_std(model: ModelConfig):
    """``ρ ↦ Φ'(ρ)`` of the standardised model (exact quadrature where it applies)."""
    std = model.standardized()
    method = "exact" if std.beta <= MAX_BETA else "mc"
    return dphi_interpolant(std, method)


@lru_cache(maxsize=16)
def _gq_mean_std(std: ModelConfig) -> Callable[[np.ndarray], np.ndarray] | None:
    """``ρ ↦ E[g_q]`` of the standardised model, the mean of the second control variate (module
    docstring): ``g_q = ⟨∇ℓ, q⟩`` and ``ℓ = ||f_q(X)||²`` depends on ``q`` through ``βq`` alone,
    so ``E[g_q] = β ∂Φ/∂β`` at fixed ``ρ`` — the exact quadrature's central difference at
    ``β(1 ± 10⁻⁴)`` (relative error ~1e-8), as a Chebyshev series in ``ρ`` (degree 16, 32 or
    64: the first whose last four coefficients are below ``10⁻¹⁰`` of the largest). None where the exact
    quadrature does not apply (``β(1 + 10⁻⁴) > MAX_BETA``): the drift then has one control."""
    from numpy.polynomial import Chebyshev

    from .landscape import landscape

    b, h = float(std.beta), 1e-4
    if b * (1.0 + h) > MAX_BETA:
        return None
    lo, hi = std.replace(beta=b * (1.0 - h)), std.replace(beta=b * (1.0 + h))

    def f(x: np.ndarray) -> np.ndarray:
        r = np.clip(x, -1.0, 1.0)
        return (landscape(hi, r, "exact").phi - landscape(lo, r, "exact").phi) / (2.0 * h)

    for deg in (16, 32, 64):
        cheb = Chebyshev.interpolate(f, deg)
        c = np.abs(cheb.coef)
        if c[-4:].max() <= 1e-10 * c.max():
            break
    return lambda r: cheb(np.asarray(r, dtype=np.float64))


def _log_phi0(beta: float, taus: np.ndarray) -> np.ndarray:
    """``log φ₀(τ) = log E exp(−e^{τ + βa})``, ``a ~ N(0, 1)``, at each ``τ``: the trapezoid rule
    in ``a`` on 241 points over ±12 widths about the integrand's mode ``a* = −u/β``,
    ``u = W(β²e^τ)`` (Lambert's W; the log-integrand ``−a²/2 − e^{τ+βa}`` has curvature
    ``1 + u`` there), summed in log space: accurate to rounding where ``φ₀`` is near 1 (where
    it enters the power ``N``) and, relatively, where it is far below."""
    from scipy.special import lambertw, logsumexp

    taus = np.asarray(taus, dtype=np.float64)
    larg = 2.0 * math.log(beta) + taus
    small = larg < -30.0
    u = np.where(small, np.exp(np.minimum(larg, 0.0)),
                 np.real(lambertw(np.exp(np.clip(larg, -30.0, 700.0)))))
    big = larg > 700.0
    if np.any(big):  # W(x) from its logarithm: w + log w = log x (Newton)
        lx = larg[big]
        w = lx - np.log(lx)
        for _ in range(6):
            w = w - (w + np.log(w) - lx) / (1.0 + 1.0 / w)
        u[big] = w
    width = 1.0 / np.sqrt(1.0 + u)
    b = np.linspace(-12.0, 12.0, 241)
    a = (-u / beta)[:, None] + width[:, None] * b[None, :]
    f = -0.5 * a * a - np.exp(np.minimum(taus[:, None] + beta * a, 700.0))
    return logsumexp(f, axis=1) + np.log(0.1 * width) - 0.5 * math.log(2.0 * math.pi)


#: the powers ``k`` of the softmax weights whose sums are the drift's further controls
_POWERS = (2, 3, 4)
#: the step of the ``τ = log t`` grids of :func:`_power_sum_means`
_TAU_STEP = 0.02


@lru_cache(maxsize=16)
def _power_sum_means_std(std: ModelConfig) -> Callable[[np.ndarray], np.ndarray] | None:
    """``ρ ↦ E Σ_j α_j^k`` for ``k = 2, 3, 4`` (``(n_rho, 3)``), the exact means of the drift's
    further control variates, for the standardised model. With ``Z = Σ_j e^{βs_j}`` and
    ``1/Z^k = ∫₀^∞ t^{k−1} e^{−tZ} dt / Γ(k)``, independent tokens (``R`` informative at
    ``s = μ + a``, ``μ = εθρ``; ``N`` nuisance at ``s = a``) give one integral over ``τ = log t``:

        E Σα^k = ∫ e^{kτ}/Γ(k) [R ψ_k(μ) φ(μ)^{R−1} φ(0)^N + N ψ_k(0) φ(μ)^R φ(0)^{N−1}] dτ,

    ``φ(μ) = φ₀(τ + βμ)`` and ``ψ_k(μ) = e^{kβμ + k²β²/2} φ₀(τ + βμ + kβ²)`` (the tilt of a
    Gaussian by ``e^{kβa}``), ``φ₀`` of :func:`_log_phi0` on a grid of step 0.02 in ``τ`` and a
    cubic spline; the trapezoid rule, step 0.08, over ``±40`` about ``−log E Z`` (one grid for
    all the nodes asked, from the extreme ``E Z``); the random sign averages
    ``ε = ±1``. None where the quadrature cannot vouch for itself: ``E Σα`` (the same formula
    at ``k = 1``) off 1 by more than ``10⁻⁸``, or an integrand not negligible (``e^{−30}`` of
    its largest) at the ends of its range."""
    from scipy.special import gammaln, logsumexp

    beta, theta = float(std.beta), float(std.theta)
    R, N = int(std.n_informative), int(std.n_nuisance)
    signs = (1.0, -1.0) if std.signal_sign == "random" else (1.0,)
    span, h = 40.0, _TAU_STEP
    kmax = max(_POWERS)
    lo = -math.log(R * math.exp(beta * theta) + N) - 0.5 * beta * beta - span - beta * theta - 1.0
    hi = (-math.log(R * math.exp(-beta * theta) + N) - 0.5 * beta * beta + span
          + kmax * beta * beta + beta * theta + 1.0)
    grid = np.arange(lo, hi + h, h)
    lphi = CubicSpline(grid, _log_phi0(beta, grid))

    def means(rhos: np.ndarray) -> np.ndarray:
        rh = np.atleast_1d(np.asarray(rhos, dtype=np.float64))
        res = np.zeros((rh.size, len(_POWERS)))
        for eps in signs:
            mu = (eps * theta * rh)[:, None]  # (n_rho, 1)
            t0 = -np.log(R * np.exp(beta * mu) + N) - 0.5 * beta * beta
            tau = np.arange(float(t0.min()) - span, float(t0.max()) + span, 4.0 * h)[None, :]
            lI, lN = lphi(tau + beta * mu), lphi(tau)
            for i, k in enumerate((1,) + _POWERS):
                c = k * tau + 0.5 * k * k * beta * beta - gammaln(k)
                t = (c + math.log(R) + k * beta * mu + lphi(tau + beta * mu + k * beta * beta)
                     + (R - 1) * lI + N * lN)
                if N > 0:
                    t = np.logaddexp(t, c + math.log(N) + lphi(tau + k * beta * beta)
                                     + R * lI + (N - 1) * lN)
                top = t.max(axis=1)
                if np.any(np.maximum(t[:, 0], t[:, -1]) > top - 30.0):
                    raise FloatingPointError("the power sums' integrand is cut at its ends")
                v = np.exp(logsumexp(t, axis=1) + math.log(4.0 * h))
                if k == 1:
                    if np.any(np.abs(v - 1.0) > 1e-8):
                        raise FloatingPointError("the power sums' quadrature misses E Σα = 1")
                else:
                    res[:, i - 1] += v / len(signs)
        return res

    try:
        means(np.array([-1.0, 0.0, 1.0]))
    except FloatingPointError:
        return None
    return means


def check_pool_memory(batch: int, n_samples: int, z_max: float = Z_CAP) -> None:
    """Refuse, before any work, per-chunk arrays that memory cannot hold: a chunk of ``c =
    min(n_samples, 4096)`` draws (at least ``2B`` a replicate group) keeps about ``6·M·c·B +
    2·c·B²`` doubles for minibatches of ``B = batch`` and ``M = 2⌈z_max/0.2⌉ + 1`` moment nodes
    (91 at the largest extent, the default): the gradients' and the softmax weights' power sums'
    per-batch arrays, three of each. Raises ConfigError (field ``batch``)."""
    from ..limits import check_memory

    nodes = 2 * math.ceil(min(z_max, Z_CAP) / NODE_DZ) + 1
    c = float(max(min(n_samples, _CHUNK_DRAWS), 2 * batch))
    b = float(batch)
    check_memory("batch", 8.0 * (6 * nodes * c * b + 2 * c * b * b),
                 f"the one-step moments' minibatches (B = {batch}, chunks of {int(c)} draws)",
                 batch)


# --------------------------------------------------------------------------- draws


def _key(seed: Any, *parts: str | int) -> np.ndarray:
    """The 128-bit key of the draws' counter-based stream :func:`~attnsignal.seeds.stream`
    ``(seed, *parts)`` (``seed`` an int >= 0 or a ``SeedSequence``)."""
    return stream(seed, *parts).generate_state(2, np.uint64)


def _gradient_pool(model: ModelConfig, rhos: np.ndarray, n_samples: int, seed: Any,
                   tilted: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Per-draw ``(g_q, g_e, ||u||²)`` at every ``ρ`` from one set of reduced draws (common to
    all ``ρ``; :func:`.reduced.fused_pool`): ``(n_rho, n_samples, 3)`` (standardised units),
    and the draws' likelihood ratios ``(n_samples,)`` (all 1 unless ``tilted``)."""
    std = model.standardized()
    tilt = score_tilt(std) if tilted else None
    out, w, _ = fused_pool(std, np.asarray(rhos, dtype=np.float64), n_samples,
                           _key(seed, "reduced draws"), 0, tilt)
    return out, w


def _batches(pool: np.ndarray, batch: int, D: int, seed: Any
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Minibatch means ``ḡ_q, ḡ_e`` and ``||ū||²`` from a pool ``(n_rho, n, 3)`` of ``n`` draws:
    batch ``i`` averages the ``B`` distinct draws ``π(i + o_j mod n)``, ``o_j = j⌊φn⌋ mod n``
    (golden ratio ``φ``: distinct partners, no short cycle — offsets ``j n/B`` would repeat
    every batch ``B`` times); ``||Σ_b u_b/B||² = cᵀGc``, ``c_b = r_b/√G_bb``, ``r_b = ||u_b||``,
    with ``G`` a Bartlett draw of Wishart(``D``, ``I_B``) (direct directions if ``D < B``):
    the complement directions are independent and uniform."""
    gq, ge, u2, _, _ = _weighted_batches(pool, np.ones(pool.shape[1]), batch, D, seed)
    return gq, ge, u2


def _weighted_batches(pool: np.ndarray, w: np.ndarray, batch: int, D: int, seed: Any
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                 np.ndarray | None]:
    """:func:`_batches`, each batch's likelihood ratio (the product of its draws'), and where
    the pool has the softmax weights' power sums (6 columns) their batch means ``(n_rho, n, 3)``
    (else None)."""
    powers = pool.shape[2] >= 6
    if batch == 1:
        return pool[..., 0], pool[..., 1], pool[..., 2], w, (pool[..., 3:6] if powers else None)
    n = pool.shape[1]
    if n < batch:
        raise ConfigError("n_samples", f"must be >= batch = {batch}", n)
    rng = np.random.default_rng(seed if isinstance(seed, np.random.SeedSequence)
                                else stream(seed, "minibatches", batch))
    perm = rng.permutation(n)
    off = np.array([(j * int(0.6180339887498949 * n)) % n for j in range(batch)])
    if np.unique(off).size < batch:
        off = np.arange(batch)
    idx = perm[(np.arange(n)[:, None] + off[None, :]) % n]  # (n, B)
    gq = pool[:, idx, 0].mean(axis=2)
    ge = pool[:, idx, 1].mean(axis=2)
    r = np.sqrt(pool[:, idx, 2])  # (n_rho, n, B)
    if D >= batch:
        T = np.zeros((n, batch, batch))
        for j in range(batch):
            T[:, j, j] = np.sqrt(rng.chisquare(D - j, n))
            if j:
                T[:, j, :j] = rng.standard_normal((n, j))
        G = np.einsum("nij,nkj->nik", T, T)
    elif D > 0:
        Y = rng.standard_normal((n, batch, D))
        G = np.einsum("nid,nkd->nik", Y, Y)
    else:
        G = np.zeros((n, batch, batch))
    diag = np.sqrt(np.maximum(np.einsum("nii->ni", G), 1e-300))
    c = r / diag[None, :, :]
    u2 = np.einsum("rni,nik,rnk->rn", c, G, c) / (batch * batch)
    wb = np.prod(w[idx], axis=1)
    return gq, ge, u2, wb, (pool[:, idx, 3:6].mean(axis=2) if powers else None)


# --------------------------------------------------------------------------- sums


#: the largest ``|z|`` one step can reach: ``artanh(1 − 10⁻¹⁶)``
_Z_LIM = math.atanh(_LIM)


@njit(cache=True, nogil=True, error_model="numpy")
def _z_after(rho, s, a1, eg, c2, num, den):  # pragma: no cover
    """``z' = artanh ρ'`` of the update ``ρ' = num/den``, ``num = ρa₁ + s·e_g``, ``den =
    √(a₁² + e_g² + c₂)`` (module docstring: ``a₁ = 1 + ηḡ_q``, ``e_g = ηḡ_e``, ``c₂ =
    η²||ū||²``), as ``½ log((den + num)/(den − num))`` with the smaller factor from
    ``den² − num² = (s·a₁ − ρ·e_g)² + c₂`` (no cancellation as ``|ρ'| → 1``: ``1 − |ρ'|`` keeps
    its relative precision where ``artanh`` of the rounded ratio would lose it), within
    ``±artanh(1 − 10⁻¹⁶)``; one logarithm, no ``artanh``."""
    t = s * a1 - rho * eg
    dm = t * t + c2
    if num >= 0.0:
        p = den + num
        q = dm / p
    else:
        q = den - num
        p = dm / q
    if q > 0.0 and p > 0.0:
        return min(max(0.5 * math.log(p / q), -_Z_LIM), _Z_LIM)
    return math.atanh(min(max(num / den, -_LIM), _LIM))


@njit(cache=True, nogil=True, error_model="numpy", fastmath={"contract"})
def _power_sum_node_sums(P, xt, xqt, w, B):  # pragma: no cover
    """``B[:15]`` and ``B[15:]`` = the step-free sums of the power-sum controls ``P (n, 3)``
    with weights ``w`` and ``w²``: ``Σ(p_k, p_k x̃, p_k x̃', p₀p₀, p₀p₁, p₀p₂, p₁p₁, p₁p₂,
    p₂p₂)`` with ``x̃ = x/η``, ``x̃' = x'/η`` (both controls are ``η`` times a step-free
    variable), for :func:`_jump_sums_kernel` to scale at each step."""
    n = xt.shape[0]
    for half in range(2):
        a0 = a1 = a2 = c0 = c1 = c2 = d0 = d1 = d2 = 0.0
        e00 = e01 = e02 = e11 = e12 = e22 = 0.0
        for i in range(n):
            wi = w[i] * w[i] if half else w[i]
            p0 = P[i, 0]
            p1 = P[i, 1]
            p2 = P[i, 2]
            q0 = wi * p0
            q1 = wi * p1
            q2 = wi * p2
            a0 += q0
            a1 += q1
            a2 += q2
            c0 += q0 * xt[i]
            c1 += q1 * xt[i]
            c2 += q2 * xt[i]
            d0 += q0 * xqt[i]
            d1 += q1 * xqt[i]
            d2 += q2 * xqt[i]
            e00 += q0 * p0
            e01 += q0 * p1
            e02 += q0 * p2
            e11 += q1 * p1
            e12 += q1 * p2
            e22 += q2 * p2
        o = 15 * half
        B[o] = a0
        B[o + 1] = a1
        B[o + 2] = a2
        B[o + 3] = c0
        B[o + 4] = c1
        B[o + 5] = c2
        B[o + 6] = d0
        B[o + 7] = d1
        B[o + 8] = d2
        B[o + 9] = e00
        B[o + 10] = e01
        B[o + 11] = e02
        B[o + 12] = e11
        B[o + 13] = e12
        B[o + 14] = e22


@njit(cache=True, nogil=True, error_model="numpy", fastmath={"contract"})
def _power_sum_step_sums(P, ys, w, B, eta, out):  # pragma: no cover
    """``out[12:30] +=`` and ``out[42:60] +=`` the power-sum controls' sums of
    :func:`_jump_sums_kernel` at one step ``eta``: ``Σ p_k y`` (the only ones that depend on the
    step through more than a factor) from the draws, the others from the node's step-free
    sums ``B`` (:func:`_power_sum_node_sums`), those with ``x`` and ``x'`` times ``eta``."""
    n = ys.shape[0]
    b0 = b1 = b2 = f0 = f1 = f2 = 0.0
    for i in range(n):
        wi = w[i]
        y = ys[i]
        v0 = P[i, 0] * y
        v1 = P[i, 1] * y
        v2 = P[i, 2] * y
        b0 += wi * v0
        b1 += wi * v1
        b2 += wi * v2
        w2 = wi * wi
        f0 += w2 * v0
        f1 += w2 * v1
        f2 += w2 * v2
    for half in range(2):
        o = 12 + 30 * half
        q = 15 * half
        for k in range(3):
            out[o + k] += B[q + k]
            out[o + 6 + k] += eta * B[q + 3 + k]
            out[o + 9 + k] += eta * B[q + 6 + k]
        for k in range(6):
            out[o + 12 + k] += B[q + 9 + k]
    out[15] += b0
    out[16] += b1
    out[17] += b2
    out[45] += f0
    out[46] += f1
    out[47] += f2


@njit(cache=True, nogil=True, error_model="numpy", fastmath={"contract"})
def _jump_sums_kernel(rhos, gq, ge, u2, P, w, etas, riemannian, coord_z, ex, exq, q_on, p_on,
                      shift, S):  # pragma: no cover
    """``S[r, j, :] +=`` the weighted power sums of ``y = Δ − shift[r, j]`` and the centred
    controls ``x = lin − ex[r, j]``, ``x' = q_on·(ηḡ_q − exq[r, j])`` and, with ``p_on``,
    ``p_k = P[r, i, k]`` (``k = 0, 1, 2``: the softmax weights' centred power sums) over the
    draws ``i`` (weights ``w_i``): ``S[..., :12] += Σw·(1, y, y², y³, y⁴, x, x², xy, x', x'²,
    x'y, xx')``, ``S[..., 12:30] += Σw·(p_k, p_k y, p_k x, p_k x', p₀p₀, p₀p₁, p₀p₂, p₁p₁, p₁p₂,
    p₂p₂)`` (left alone without ``p_on``; those without ``y`` taken once a node,
    :func:`_power_sum_node_sums`), and ``S[..., 30:60]`` the same with ``w²``. ``Δ = Δz``
    with ``lin = ηḡ_e/s`` when ``coord_z``, else ``Δ = Δρ`` with ``lin = ηsḡ_e``;
    ``ḡ_q = 0`` in the update when ``riemannian``. Per (node, step) two passes over the draws:
    ``y, x, x'`` into scratch, then the sums — the logarithm of ``Δz`` is a call, which would
    spill the 24 accumulators were they live across it. Fused multiply-adds
    (``contract``; no reassociation: each sum in draw order)."""
    n_r, n = gq.shape
    n_eta = etas.shape[0]
    ys = np.empty(n)
    xs = np.empty(n)
    xqs = np.empty(n)
    B = np.zeros(30)
    for r in range(n_r):
        rho = rhos[r]
        s = math.sqrt(max(0.0, 1.0 - rho * rho))
        z0 = math.atanh(min(max(rho, -_LIM), _LIM))
        inv_s = 1.0 / max(s, 1e-300)
        if p_on:
            # x / η and x' / η, free of the step (ex and exq are η times their means)
            m0 = ex[r, 0] / etas[0]
            mq = exq[r, 0] / etas[0]
            for i in range(n):
                xs[i] = (ge[r, i] * inv_s if coord_z else ge[r, i] * s) - m0
                xqs[i] = q_on * (gq[r, i] - mq)
            _power_sum_node_sums(P[r], xs, xqs, w, B)
        for j in range(n_eta):
            eta = etas[j]
            sh = shift[r, j]
            e0 = ex[r, j]
            q0 = exq[r, j]
            for i in range(n):
                eq = eta * gq[r, i]
                a1 = 1.0 if riemannian else 1.0 + eq
                eg = eta * ge[r, i]
                num = rho * a1 + s * eg
                c2 = eta * eta * u2[r, i]
                den = math.sqrt(a1 * a1 + eg * eg + c2)
                if coord_z:
                    ys[i] = _z_after(rho, s, a1, eg, c2, num, den) - z0 - sh
                    xs[i] = eg * inv_s - e0
                else:
                    ys[i] = min(max(num / den, -1.0), 1.0) - rho - sh
                    xs[i] = eg * s - e0
                xqs[i] = q_on * (eq - q0)
            s0 = s1 = s2 = s3 = s4 = s5 = s6 = s7 = s8 = s9 = s10 = s11 = 0.0
            t0 = t1 = t2 = t3 = t4 = t5 = t6 = t7 = t8 = t9 = t10 = t11 = 0.0
            for i in range(n):
                y = ys[i]
                x = xs[i]
                xq = xqs[i]
                wi = w[i]
                w2 = wi * wi
                yy = y * y
                f = (1.0, y, yy, yy * y, yy * yy, x, x * x, x * y, xq, xq * xq, xq * y, x * xq)
                s0 += wi * f[0]
                s1 += wi * f[1]
                s2 += wi * f[2]
                s3 += wi * f[3]
                s4 += wi * f[4]
                s5 += wi * f[5]
                s6 += wi * f[6]
                s7 += wi * f[7]
                s8 += wi * f[8]
                s9 += wi * f[9]
                s10 += wi * f[10]
                s11 += wi * f[11]
                t0 += w2 * f[0]
                t1 += w2 * f[1]
                t2 += w2 * f[2]
                t3 += w2 * f[3]
                t4 += w2 * f[4]
                t5 += w2 * f[5]
                t6 += w2 * f[6]
                t7 += w2 * f[7]
                t8 += w2 * f[8]
                t9 += w2 * f[9]
                t10 += w2 * f[10]
                t11 += w2 * f[11]
            S[r, j, 0] += s0
            S[r, j, 1] += s1
            S[r, j, 2] += s2
            S[r, j, 3] += s3
            S[r, j, 4] += s4
            S[r, j, 5] += s5
            S[r, j, 6] += s6
            S[r, j, 7] += s7
            S[r, j, 8] += s8
            S[r, j, 9] += s9
            S[r, j, 10] += s10
            S[r, j, 11] += s11
            S[r, j, 30] += t0
            S[r, j, 31] += t1
            S[r, j, 32] += t2
            S[r, j, 33] += t3
            S[r, j, 34] += t4
            S[r, j, 35] += t5
            S[r, j, 36] += t6
            S[r, j, 37] += t7
            S[r, j, 38] += t8
            S[r, j, 39] += t9
            S[r, j, 40] += t10
            S[r, j, 41] += t11
            if p_on:
                _power_sum_step_sums(P[r], ys, w, B, eta, S[r, j])


def _jump_sums(rhos, gq, ge, u2, P, w, etas, riemannian, coord_z, ex, exq, q_on, p_on, shift,
               S) -> None:
    """:func:`_jump_sums_kernel` with the nodes split over ``compute_threads()`` threads."""
    n_r = rhos.shape[0]
    parts = max(1, min(n_r, 2 * _threads()))
    cuts = np.linspace(0, n_r, parts + 1).astype(np.int64)

    def one(i: int) -> None:
        lo, hi = int(cuts[i]), int(cuts[i + 1])
        if hi > lo:
            _jump_sums_kernel(rhos[lo:hi], gq[lo:hi], ge[lo:hi], u2[lo:hi], P[lo:hi], w, etas,
                              riemannian, coord_z, ex[lo:hi], exq[lo:hi], q_on, p_on,
                              shift[lo:hi], S[lo:hi])

    _in_threads(one, parts)


def _threads() -> int:
    from ..engines.base import compute_threads

    return compute_threads()


@dataclass(frozen=True, eq=False)
class _Jump:
    """Finalised moments of one coordinate, each ``(..., n_rho, n_eta)``."""

    drift: np.ndarray
    stderr_drift: np.ndarray
    var: np.ndarray
    stderr_var: np.ndarray
    skewness: np.ndarray
    excess_kurtosis: np.ndarray


def _finalise(S: np.ndarray, shift: np.ndarray, powers: bool = False) -> _Jump:
    """Moments from the power sums ``S (..., n_rho, n_eta, 60)`` of :func:`_jump_sums_kernel`
    (module docstring); ``shift`` is the reference subtracted from ``Δ`` there; ``powers``: the
    drift regresses on the softmax weights' power sums too (:func:`_drift_five`)."""
    W = S[..., 0]
    W2 = S[..., _NHALF]
    T = S[..., _NHALF:]
    with np.errstate(invalid="ignore", divide="ignore"):
        Wd = np.where(W > 0, W, 1.0)
        my = S[..., 1] / Wd
        m2 = np.maximum(S[..., 2] / Wd - my * my, 0.0)
        m3 = S[..., 3] / Wd - 3.0 * my * S[..., 2] / Wd + 2.0 * my ** 3
        m4 = (S[..., 4] / Wd - 4.0 * my * S[..., 3] / Wd + 6.0 * my * my * S[..., 2] / Wd
              - 3.0 * my ** 4)
        drift, se_m = (_drift_five if powers else _drift_two)(S, shift, Wd, my, W2)
        # Σw²(y − m)^k, from the raw sums about the shift
        q2 = T[..., 2] - 2.0 * my * T[..., 1] + my * my * W2
        q4 = (T[..., 4] - 4.0 * my * T[..., 3] + 6.0 * my * my * T[..., 2]
              - 4.0 * my ** 3 * T[..., 1] + my ** 4 * W2)
        corr = 1.0 - W2 / (Wd * Wd)
        var = m2 / np.where(corr > 0, corr, 1.0)
        se_v = np.sqrt(np.maximum(q4 - 2.0 * m2 * q2 + m2 * m2 * W2, 0.0)) / Wd
        skew = np.where(m2 > 0, m3 / np.where(m2 > 0, m2, 1.0) ** 1.5, 0.0)
        kurt = np.where(m2 > 0, m4 / np.where(m2 > 0, m2, 1.0) ** 2 - 3.0, 0.0)
    return _Jump(drift, se_m, var, se_v, skew, kurt)


def _drift_two(S: np.ndarray, shift: np.ndarray, Wd: np.ndarray, my: np.ndarray,
               W2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The drift and its standard error with the controls ``x`` and ``x'`` (module docstring):
    the regression of ``Δ`` on both; on the first alone where the second is absent (riemannian,
    no exact mean) or collinear with it."""
    T = S[..., _NHALF:]
    m1, m2x = S[..., 5] / Wd, S[..., 8] / Wd
    c11 = S[..., 6] / Wd - m1 * m1
    c22 = S[..., 9] / Wd - m2x * m2x
    c12 = S[..., 11] / Wd - m1 * m2x
    c1y = S[..., 7] / Wd - m1 * my
    c2y = S[..., 10] / Wd - m2x * my
    det = c11 * c22 - c12 * c12
    two = (c22 > 0) & (det > 1e-9 * c11 * c22)
    dd = np.where(two, det, 1.0)
    b1 = np.where(two, (c22 * c1y - c12 * c2y) / dd,
                  np.where(c11 > 0, c1y / np.where(c11 > 0, c11, 1.0), 0.0))
    b2 = np.where(two, (c11 * c2y - c12 * c1y) / dd, 0.0)
    drift = my + shift - b1 * m1 - b2 * m2x
    # Σw² of the centred products, from the raw w² sums
    q2 = T[..., 2] - 2.0 * my * T[..., 1] + my * my * W2
    q11 = T[..., 6] - 2.0 * m1 * T[..., 5] + m1 * m1 * W2
    q22 = T[..., 9] - 2.0 * m2x * T[..., 8] + m2x * m2x * W2
    q1y = T[..., 7] - my * T[..., 5] - m1 * T[..., 1] + m1 * my * W2
    q2y = T[..., 10] - my * T[..., 8] - m2x * T[..., 1] + m2x * my * W2
    q12 = T[..., 11] - m1 * T[..., 8] - m2x * T[..., 5] + m1 * m2x * W2
    qr = (q2 - 2.0 * b1 * q1y - 2.0 * b2 * q2y + b1 * b1 * q11 + b2 * b2 * q22
          + 2.0 * b1 * b2 * q12)
    return drift, np.sqrt(np.maximum(qr, 0.0)) / Wd


#: the five controls' indices in a half of the sums (:func:`_jump_sums_kernel`): their sums,
#: their products with ``y``, and their cross products ``(x, x', p₀, p₁, p₂)``
_C_MEAN = np.array([5, 8, 12, 13, 14])
_C_Y = np.array([7, 10, 15, 16, 17])
_C_CROSS = np.array([[6, 11, 18, 19, 20],
                     [11, 9, 21, 22, 23],
                     [18, 21, 24, 25, 26],
                     [19, 22, 25, 27, 28],
                     [20, 23, 26, 28, 29]])


def _drift_five(S: np.ndarray, shift: np.ndarray, Wd: np.ndarray, my: np.ndarray,
                W2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The drift and its standard error with five controls of known mean 0 — ``x``, ``x'`` and
    the softmax weights' centred power sums ``Σα^k − E Σα^k`` (``k = 2, 3, 4``; exact means
    :func:`_power_sum_means_std`): ``m = ȳ + shift − bᵀc̄`` with ``b = C⁻¹d`` the weighted
    regression coefficients (``C`` the controls' weighted covariance, ``d`` their covariance
    with ``y``; ``C`` scaled to unit diagonal plus ``10⁻⁹`` on it, so that nearly collinear
    controls share a bounded coefficient; a control of zero variance left out), and
    ``SE(m)² = Σw²(r − r̄)²/(Σw)²``, ``r = y − bᵀc``, from the ``w²`` sums."""
    T = S[..., _NHALF:]
    mc = S[..., _C_MEAN] / Wd[..., None]
    C = S[..., _C_CROSS] / Wd[..., None, None] - mc[..., :, None] * mc[..., None, :]
    d = S[..., _C_Y] / Wd[..., None] - mc * my[..., None]
    raw = np.einsum("...ii->...i", S[..., _C_CROSS]) / Wd[..., None]
    var = np.einsum("...ii->...i", C)
    on = var > 1e-12 * np.maximum(raw, 1e-300)
    sd = np.where(on, np.sqrt(np.where(on, var, 1.0)), 1.0)
    Cs = np.where(on[..., :, None] & on[..., None, :], C / (sd[..., :, None] * sd[..., None, :]),
                  0.0)
    ds = np.where(on, d / sd, 0.0)
    b = np.linalg.solve(Cs + 1e-9 * np.eye(5), ds[..., None])[..., 0] / sd
    b = np.where(on, b, 0.0)
    drift = my + shift - np.einsum("...i,...i->...", b, mc)
    # Σw² of the centred products, from the raw w² sums
    tm = T[..., _C_MEAN]
    qyy = T[..., 2] - 2.0 * my * T[..., 1] + my * my * W2
    qcy = (T[..., _C_Y] - my[..., None] * tm - mc * T[..., 1, None]
           + mc * my[..., None] * W2[..., None])
    qcc = (T[..., _C_CROSS] - mc[..., :, None] * tm[..., None, :]
           - mc[..., None, :] * tm[..., :, None]
           + mc[..., :, None] * mc[..., None, :] * W2[..., None, None])
    qr = (qyy - 2.0 * np.einsum("...i,...i->...", b, qcy)
          + np.einsum("...i,...ij,...j->...", b, qcc, b))
    return drift, np.sqrt(np.maximum(qr, 0.0)) / Wd


@dataclass(frozen=True, eq=False)
class _Accumulated:
    """Pooled and per-group moments of one coordinate, and the draws used per node."""

    pooled: _Jump
    groups: _Jump | None      # arrays (K, n_rho, n_eta), or None for K < 2
    draws: np.ndarray         # (n_rho,) draws used at each node
    converged: bool


def _converged(j: _Jump, first: np.ndarray, rtol: float) -> np.ndarray:
    """Per node: ``SE(v) <= rtol·v`` and ``SE(m) <= rtol·max(scale, ⅒ max scale)`` at every
    step, ``scale = |first| + |m − first|`` (``first``: the first-order drift)."""
    scale = np.abs(first) + np.abs(j.drift - first)
    floor = 0.1 * np.max(scale, axis=0, keepdims=True)
    ok_m = j.stderr_drift <= rtol * np.maximum(scale, floor)
    ok_v = j.stderr_var <= rtol * j.var
    return np.all(ok_m & ok_v, axis=1)


class _Accumulator:
    """The streamed power sums of the jumps at ``rhos × etas`` (standardised model and steps;
    ``dphi = Φ'(rhos)``) of ``Δz`` and/or ``Δρ`` (``coords``: True for ``z``), kept per
    replicate group, to which rounds of importance-sampled draws are added (module
    docstring). Round ``r`` draws from the stream ``(seed, "moment draws", r)``, so the sums
    are a deterministic function of the seed and the sequence of :meth:`add` calls."""

    def __init__(self, model: ModelConfig, rhos: np.ndarray, etas: np.ndarray,
                 dphi: np.ndarray, batch: int, update: str, seed: int, groups: int,
                 coords: tuple[bool, ...] = (True,)) -> None:
        self.std = model.standardized()
        self.rhos, self.etas = rhos, etas
        self.batch, self.seed, self.coords = int(batch), seed, coords
        self.riemannian = update == "riemannian"
        self.K = max(int(groups), 1)
        s2 = 1.0 - rhos ** 2
        self.exs = [etas[None, :] * (dphi if cz else s2 * dphi)[:, None] for cz in coords]
        gq_mean = None if self.riemannian else _gq_mean_std(self.std)
        self.q_on = 0.0 if gq_mean is None else 1.0
        self.exq = (np.zeros((rhos.size, etas.size)) if gq_mean is None
                    else etas[None, :] * np.asarray(gq_mean(rhos), dtype=np.float64)[:, None])
        self.tilt = score_tilt(self.std, batch)
        pm = _power_sum_means_std(self.std)
        #: the exact means of the softmax weights' power sums at the nodes (None: no such
        #: controls, where the quadrature cannot vouch for itself)
        self.pmean = None if pm is None else _c(pm(rhos))
        self.S = np.zeros((len(coords), self.K, rhos.size, etas.size, _NSTAT))
        self.shifts: list[np.ndarray] = []
        self.draws = np.zeros(rhos.size, dtype=np.int64)
        self.rounds = 0
        #: the nodes :meth:`refine` brings to ``rtol`` (all unless :func:`refine_table` says)
        self.scope = np.ones(rhos.size, dtype=bool)

    @property
    def min_draws(self) -> int:
        """The fewest draws a round can add: ``2B`` a replicate group."""
        return self.K * 2 * self.batch

    def add(self, n_new: int, nodes: np.ndarray) -> None:
        """Add ``n_new`` draws (rounded up to a multiple of the groups) at the nodes ``nodes``:
        chunks of at most ``_CHUNK_DRAWS`` (:func:`.reduced.fused_pool`, draw ``i`` of the
        round from the stream ``((seed, "moment draws", round), i)``), each cut into ``K``
        equal slices, slice ``g`` to replicate group ``g`` (minibatches form within a
        slice)."""
        K = self.K
        n_new = _round_up(max(int(n_new), self.min_draws), K)
        nodes = np.asarray(nodes, dtype=np.int64)
        rh = _c(self.rhos[nodes])
        rnd = self.rounds
        key = _key(self.seed, "moment draws", rnd)
        per = _round_up(max(_CHUNK_DRAWS, self.min_draws), K)
        start = chunk_no = 0
        while start < n_new:
            m = min(per, n_new - start)
            if 0 < n_new - start - m < self.min_draws:
                m = n_new - start  # a short remainder joins this chunk
            pool, w, _ = fused_pool(self.std, rh, m, key, start, self.tilt,
                                    powers=self.pmean is not None)
            cuts = np.linspace(0, m, K + 1).astype(np.int64)
            for g in range(K):
                lo, hi = int(cuts[g]), int(cuts[g + 1])
                gq, ge, u2, wb, pw = _weighted_batches(
                    pool[:, lo:hi], w[lo:hi], self.batch, self.std.d - 2,
                    stream(self.seed, "minibatches", rnd, chunk_no, g))
                P = (np.zeros((nodes.size, 1, 3)) if pw is None or self.pmean is None
                     else _c(pw - self.pmean[nodes][:, None, :]))
                self._sums(g, nodes, rh, _c(gq), _c(ge), _c(u2), P, _c(wb))
            start += m
            chunk_no += 1
        self.draws[nodes] += n_new
        self.rounds += 1

    def _sums(self, g: int, nodes: np.ndarray, rh: np.ndarray, gq: np.ndarray,
              ge: np.ndarray, u2: np.ndarray, P: np.ndarray, wb: np.ndarray) -> None:
        n_r, n_e = self.rhos.size, self.etas.size
        for ci, cz in enumerate(self.coords):
            ex = self.exs[ci]
            if len(self.shifts) <= ci:
                # the reference subtracted from Δ: the first slice's weighted mean at every
                # node (keeps the raw power sums well conditioned)
                T = np.zeros((nodes.size, n_e, _NSTAT))
                _jump_sums(rh, gq, ge, u2, np.zeros((nodes.size, 1, 3)), wb, self.etas,
                           self.riemannian, cz, _c(ex[nodes]), _c(self.exq[nodes]), self.q_on,
                           False, np.zeros((nodes.size, n_e)), T)
                sh = np.zeros((n_r, n_e))
                sh[nodes] = T[..., 1] / np.maximum(T[..., 0], 1e-300)
                self.shifts.append(sh)
            Sa = np.zeros((nodes.size, n_e, _NSTAT))
            _jump_sums(rh, gq, ge, u2, P, wb, self.etas, self.riemannian, cz, _c(ex[nodes]),
                       _c(self.exq[nodes]), self.q_on, self.pmean is not None,
                       _c(self.shifts[ci][nodes]), Sa)
            self.S[ci, g, nodes] += Sa

    def converged(self, rtol: float) -> np.ndarray:
        """Per node: within ``rtol`` in every coordinate (:func:`_converged`)."""
        ok = np.ones(self.rhos.size, dtype=bool)
        for ci in range(len(self.coords)):
            ok &= _converged(_finalise(self.S[ci].sum(axis=0), self.shifts[ci],
                                       self.pmean is not None), self.exs[ci], rtol)
        return ok

    def refine(self, rtol: float | None, max_samples: int) -> bool:
        """Double the draws at the nodes of :attr:`scope` not within ``rtol`` until all are or
        they hold ``max_samples``; returns whether all are (True for ``rtol`` None)."""
        if rtol is None:
            return True
        while True:
            ok = self.converged(rtol) | ~self.scope
            if np.all(ok):
                return True
            active = np.nonzero(~ok & (self.draws < max_samples))[0]
            if active.size == 0:
                return False
            n_new = int(min(self.draws[active].max(), max_samples - self.draws[active].max()))
            self.add(max(n_new, 1), active)

    def results(self, converged: bool) -> list[_Accumulated]:
        out = []
        for ci in range(len(self.coords)):
            on = self.pmean is not None
            pooled = _finalise(self.S[ci].sum(axis=0), self.shifts[ci], on)
            grp = _finalise(self.S[ci], self.shifts[ci][None], on) if self.K >= 2 else None
            out.append(_Accumulated(pooled, grp, self.draws.copy(), converged))
        return out


def _accumulate(model: ModelConfig, rhos: np.ndarray, etas: np.ndarray, dphi: np.ndarray,
                batch: int, update: str, seed: int, n_samples: int, rtol: float | None,
                max_samples: int, groups: int, coords: tuple[bool, ...] = (True,)
                ) -> list[_Accumulated]:
    """:class:`_Accumulator` with ``n_samples`` draws at every node, refined to ``rtol``."""
    acc = _Accumulator(model, rhos, etas, dphi, batch, update, seed, groups, coords)
    acc.add(n_samples, np.arange(rhos.size))
    return acc.results(acc.refine(rtol, max_samples))


def _c(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x, dtype=np.float64)


def _round_up(n: int, k: int) -> int:
    return int(-(-int(n) // k) * k)


# --------------------------------------------------------------------------- one step


@dataclass(frozen=True, eq=False)
class OneStepMoments:
    """Moments of the one-step change at alignments ``rho`` (shape ``(n_rho,)``) and steps
    ``eta`` (``(n_eta,)``, model units), each ``(n_rho, n_eta)``:

    drift_rho, var_rho : ``E[ρ' − ρ]`` and ``Var[ρ' − ρ]``
    drift_z, var_z : the same for ``Δz = artanh ρ' − artanh ρ``
    stderr_drift_rho, stderr_drift_z, stderr_var_rho, stderr_var_z : their Monte-Carlo
        standard errors (the variances' from the fourth moment)
    skewness_z, excess_kurtosis_z : of ``Δz``
    n_samples : draws used (the most at any node); draws : ``(n_rho,)`` draws per alignment
    converged : every alignment met ``rtol`` (True when ``rtol`` is None)
    """

    rho: np.ndarray
    eta: np.ndarray
    drift_rho: np.ndarray
    var_rho: np.ndarray
    drift_z: np.ndarray
    var_z: np.ndarray
    stderr_drift_rho: np.ndarray
    stderr_drift_z: np.ndarray
    n_samples: int
    stderr_var_rho: np.ndarray | None = None
    stderr_var_z: np.ndarray | None = None
    skewness_z: np.ndarray | None = None
    excess_kurtosis_z: np.ndarray | None = None
    draws: np.ndarray | None = None
    converged: bool = True


@validated(model=MODEL, batch=BATCH, update=UPDATE, n_samples=Integer(ge=2), seed=SEED,
           rtol=Optional(Real(gt=0.0, lt=1.0)), max_samples=Optional(Integer(ge=2)))
def one_step_moments(model: ModelConfig, rho: Any, eta: Any, *, batch: int = 1,
                     update: str = "projected", n_samples: int = 4000, seed: int = 0,
                     rtol: float | None = None, max_samples: int | None = None
                     ) -> OneStepMoments:
    """Mean, variance, skewness and kurtosis of the one-step change of ``ρ`` and of
    ``z = artanh ρ`` at every ``(ρ, η)`` (``η`` in the model's units; ``σ ≠ 1`` uses the
    standardised model with step ``σ²η``), importance-sampled with control variates and
    standard errors (module docstring). ``n_samples`` draws, or with ``rtol`` as many as the
    tolerance needs up to ``max_samples`` (default ``16·n_samples``).

    rho : values in (−1, 1); eta : values > 0. Raises ``ConfigError`` for bad input."""
    rhos = np.atleast_1d(np.asarray(rho, dtype=np.float64)).ravel()
    if rhos.size == 0 or not np.all(np.isfinite(rhos)) or np.any(np.abs(rhos) >= 1.0):
        raise ConfigError("rho", "must be finite numbers in (-1, 1)", rho)
    etas = np.atleast_1d(np.asarray(eta, dtype=np.float64)).ravel()
    if etas.size == 0 or not np.all(np.isfinite(etas)) or np.any(etas <= 0):
        raise ConfigError("eta", "must be finite numbers > 0", eta)
    if n_samples < batch:
        raise ConfigError("n_samples", f"must be >= batch = {batch}", n_samples)
    check_pool_memory(batch, n_samples, float(np.max(np.abs(np.arctanh(rhos)))))
    mx = _max_samples(n_samples, max_samples)
    dphi = np.asarray(_dphi_std(model)(rhos), dtype=np.float64)
    e_std = etas * model.noise_std ** 2
    acc_z, acc_r = _accumulate(model, rhos, e_std, dphi, batch, update, seed, n_samples, rtol,
                               mx, 1, coords=(True, False))
    z, r = acc_z.pooled, acc_r.pooled
    draws = acc_z.draws
    return OneStepMoments(
        rho=rhos, eta=etas, drift_rho=r.drift, var_rho=r.var, drift_z=z.drift, var_z=z.var,
        stderr_drift_rho=r.stderr_drift, stderr_drift_z=z.stderr_drift,
        n_samples=int(draws.max()), stderr_var_rho=r.stderr_var, stderr_var_z=z.stderr_var,
        skewness_z=z.skewness, excess_kurtosis_z=z.excess_kurtosis, draws=draws,
        converged=acc_z.converged)


def _max_samples(n_samples: int, max_samples: int | None) -> int:
    if max_samples is None:
        return MAX_SAMPLES_FACTOR * int(n_samples)
    if max_samples < n_samples:
        raise ConfigError("max_samples", f"must be >= n_samples = {n_samples}", max_samples)
    return int(max_samples)


# --------------------------------------------------------------------------- moment table


@dataclass(frozen=True, eq=False)
class MomentTable:
    """Per-step drift ``m(z, η) = E[Δz]`` and diffusion ``v(z, η) = Var[Δz]`` of
    ``z = artanh ρ`` on ``z_nodes × etas`` (standardised steps ``etas``), stored normalised:
    ``a = (m − ηΦ')s²/η²`` and ``b = v s²/η²`` (``s² = 1 − ρ²``), with ``dphi = Φ'`` at the nodes
    (standardised). :meth:`at` returns the interpolants at one step, :meth:`node_moments` the
    drift and variance at the nodes.

    stderr_a, stderr_b : Monte-Carlo standard errors of ``a`` and ``b`` (same scaling)
    skewness, excess_kurtosis : of the one-step ``Δz`` at each node and step
    replicate_a, replicate_b : ``(K, nodes, etas)`` the same from ``K`` disjoint groups of the
        draws (independent replicates; None when ``K < 2``)
    draws : ``(nodes,)`` draws used at each node; ``n_samples`` the most
    converged : every node met ``rtol`` (True when ``rtol`` is None; after
        :func:`refine_table`, every node it refined); rtol : the tolerance;
    max_samples : the most draws a node may get (:func:`extend_table` stays within it)
    """

    z_nodes: np.ndarray
    etas: np.ndarray
    a: np.ndarray
    b: np.ndarray
    dphi_nodes: np.ndarray
    n_samples: int
    _dphi: Any = field(repr=False, default=None)
    stderr_a: np.ndarray | None = None
    stderr_b: np.ndarray | None = None
    skewness: np.ndarray | None = None
    excess_kurtosis: np.ndarray | None = None
    replicate_a: np.ndarray | None = None
    replicate_b: np.ndarray | None = None
    draws: np.ndarray | None = None
    converged: bool = True
    rtol: float | None = None
    max_samples: int | None = None
    model: ModelConfig | None = None
    _acc: Any = field(repr=False, default=None)

    def __post_init__(self) -> None:
        if self.etas.size >= 4:
            le = np.log(self.etas)
            object.__setattr__(self, "_sa", CubicSpline(le, self.a, axis=1))
            object.__setattr__(self, "_sb", CubicSpline(le, self.b, axis=1))
        zf = np.linspace(self.z_nodes[0], self.z_nodes[-1], 4001)
        object.__setattr__(self, "_zf", zf)
        object.__setattr__(self, "_fp", CubicSpline(zf, np.asarray(self._dphi(np.tanh(zf)))))

    @property
    def replicates(self) -> int:
        """The number of replicate tables (0 when none were kept)."""
        return 0 if self.replicate_a is None else int(self.replicate_a.shape[0])

    def replicate(self, k: int) -> "MomentTable":
        """Replicate ``k`` as a table of its own (same nodes, steps and ``Φ'``)."""
        if self.replicate_a is None or self.replicate_b is None:
            raise ValueError("this moment table keeps no replicates")
        return MomentTable(self.z_nodes, self.etas, self.replicate_a[k], self.replicate_b[k],
                           self.dphi_nodes, int(self.n_samples) // max(self.replicates, 1),
                           self._dphi, rtol=self.rtol, converged=self.converged)

    def _coeffs(self, eta: float | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``a`` and ``b`` at the nodes, ``(nodes,)`` each: at the standardised step ``eta``
        (a float), or node ``i`` at ``eta[i]`` (an array of one step per node) — the table's
        interpolant in ``log η`` (a cubic spline from 4 steps on, linear below; clipped to the
        table's steps), per node the same arithmetic as at a shared step."""
        if self.etas.size == 1:
            return self.a[:, 0], self.b[:, 0]
        le = np.log(self.etas)
        if np.ndim(eta) == 0:
            x = float(np.clip(math.log(eta), le[0], le[-1]))
            if self.etas.size < 4:
                a = np.array([np.interp(x, le, row) for row in self.a])
                b = np.array([np.interp(x, le, row) for row in self.b])
                return a, b
            return self._sa(x), self._sb(x)  # type: ignore[attr-defined]
        xs = np.clip([math.log(e) for e in np.asarray(eta, dtype=np.float64)], le[0], le[-1])
        if xs.shape != self.z_nodes.shape:
            raise ValueError(f"one step per node: {self.z_nodes.size} steps, not {xs.size}")
        if self.etas.size < 4:
            return (np.array([np.interp(x, le, row) for x, row in zip(xs, self.a)]),
                    np.array([np.interp(x, le, row) for x, row in zip(xs, self.b)]))
        return _node_cubic(self._sa, xs), _node_cubic(self._sb, xs)  # type: ignore[attr-defined]

    def node_moments(self, eta: float | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The drift ``m(z_i, η) = E[Δz]`` and variance ``v(z_i, η) = Var[Δz]`` of one update
        at the nodes ``z_i`` (``z_nodes``), ``(nodes,)`` each, in ``z`` per step (``z =
        artanh ρ``): ``m = ηΦ'(z) + η² a cosh² z`` and ``v = max(η² b cosh² z, 0)`` (``Φ'`` of
        the standardised model at ``ρ = tanh z``; ``a`` and ``b`` the table's coefficients,
        interpolated in ``log η`` and clipped to its steps) — what :meth:`at`'s :class:`Local`
        gives at a node, without the splines in ``z``.

        ``eta`` : a standardised step (``η σ²`` in model units, as ``etas``), the same at every
        node, or an array ``(nodes,)``, node ``i`` at step ``eta[i]`` (a step per node, e.g. the
        best step of each node: no ``nodes × nodes`` table is formed). Raises ValueError for an
        array of another length."""
        e = float(eta) if np.ndim(eta) == 0 else np.asarray(eta, dtype=np.float64)
        a, b = self._coeffs(e)
        z = self.z_nodes
        return _drift_variance(e, self._fp(z), a, b, np.cosh(z) ** 2)  # type: ignore[attr-defined]

    def stderr_at(self, eta: float, z: Any) -> tuple[np.ndarray, np.ndarray]:
        """Monte-Carlo standard errors of ``m`` and ``v`` at the standardised step ``eta`` and
        ``z``: those of the nodes, interpolated linearly in ``log η`` and ``z`` (NaN when the
        table keeps none)."""
        z = np.asarray(z, dtype=np.float64)
        if self.stderr_a is None or self.stderr_b is None:
            return np.full(z.shape, np.nan), np.full(z.shape, np.nan)
        le = np.log(self.etas)
        x = float(np.clip(math.log(eta), le[0], le[-1]))
        sa = np.array([np.interp(x, le, row) for row in self.stderr_a])
        sb = np.array([np.interp(x, le, row) for row in self.stderr_b])
        scale = eta * eta * np.cosh(z) ** 2
        return (np.interp(z, self.z_nodes, sa) * scale, np.interp(z, self.z_nodes, sb) * scale)

    def at(self, eta: float) -> "Local":
        """Interpolants of ``m(·, η)``, ``∂_z m`` and ``v(·, η)`` at the standardised step."""
        a, b = self._coeffs(eta)
        return Local(eta, CubicSpline(self.z_nodes, a), CubicSpline(self.z_nodes, b),
                     self._fp, float(self.z_nodes[0]), float(self.z_nodes[-1]))  # type: ignore[attr-defined]


@dataclass(frozen=True, eq=False)
class Local:
    """The drift and diffusion of ``z`` at one standardised step ``eta`` (:meth:`MomentTable.at`)."""

    eta: float
    a: CubicSpline
    b: CubicSpline
    fp: CubicSpline  # z ↦ Φ'(tanh z)
    lo: float
    hi: float

    def __call__(self, z: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``m``, ``∂_z m`` and ``v`` at ``z`` (standardised step)."""
        z = np.clip(z, self.lo, self.hi)
        rho = np.tanh(z)
        c2 = np.cosh(z) ** 2  # 1/s²
        e = self.eta
        a = self.a(z)
        m, v = _drift_variance(e, self.fp(z), a, self.b(z), c2)
        mz = e * self.fp(z, 1) + e * e * (self.a(z, 1) + 2.0 * rho * a) * c2
        return m, mz, v


def _drift_variance(eta: Any, fp: np.ndarray, a: np.ndarray, b: np.ndarray, c2: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray]:
    """``m = ηΦ' + η² a c2`` and ``v = max(η² b c2, 0)`` (``c2 = cosh² z = 1/s²``): the drift and
    variance of ``z`` from the table's normalised coefficients (:class:`MomentTable`)."""
    return eta * fp + eta * eta * a * c2, np.maximum(eta * eta * b * c2, 0.0)


def _node_cubic(spline: CubicSpline, xs: np.ndarray) -> np.ndarray:
    """``spline(xs[i])[i]`` for every ``i`` (a spline in ``log η`` of values ``(nodes,)``, one
    point per node), with the arithmetic of scipy's ``PPoly`` evaluation — the interval ``k``
    with ``x_k <= x < x_{k+1}`` (the last for ``x`` at the end), ``h = x − x_k`` and
    ``c₃ + c₂h + c₁h² + c₀h³`` summed in that order — so each value is the spline's at that
    point to the bit."""
    bp = spline.x
    k = np.clip(np.searchsorted(bp, xs, side="right") - 1, 0, bp.size - 2)
    cols = np.arange(xs.size)
    c = spline.c[:, k, cols]  # (4, nodes)
    h = xs - bp[k]
    h2 = h * h
    return ((0.0 + c[3]) + c[2] * h) + c[1] * h2 + c[0] * (h2 * h)


def eta_nodes(lo: float, hi: float) -> np.ndarray:
    """Log-spaced table steps on ``[lo, hi]`` (ratio at most 1.25, 4 to 24 of them)."""
    if hi / lo < 1.0 + 1e-9:
        return np.array([lo])
    n_eta = int(min(24, max(4, math.ceil(math.log(hi / lo) / math.log(1.25)) + 1)))
    return np.exp(np.linspace(math.log(lo), math.log(hi), n_eta))


@validated(model=MODEL, eta_min=Real(gt=0.0), eta_max=Real(gt=0.0), batch=BATCH,
           update=UPDATE, z_max=Optional(Real(ge=1.0, le=Z_CAP)), n_samples=Integer(ge=100),
           seed=SEED, rtol=Optional(Real(gt=0.0, lt=1.0)), max_samples=Optional(Integer(ge=2)),
           replicates=Integer(ge=0, le=64))
def moment_table(model: ModelConfig, eta_min: float, eta_max: float, *, batch: int = 1,
                 update: str = "projected", z_max: float | None = None, n_samples: int = 4000,
                 seed: int = 0, rtol: float | None = DEFAULT_RTOL,
                 max_samples: int | None = None, replicates: int = 8) -> MomentTable:
    """The one-step moment table of ``z = artanh ρ`` for steps in ``[eta_min, eta_max]``
    (model units), for reuse by several :func:`~.effective.effective_dynamics` calls (the
    schedule advisor). ``z_max`` defaults to 2 above the plateau of ``eta_min``; ``n_samples``
    draws to start, more up to ``max_samples`` (default ``16·n_samples``) until ``rtol`` is met
    (None: exactly ``n_samples``); ``replicates`` disjoint groups of the draws kept apart."""
    if eta_max < eta_min:
        raise ConfigError("eta_max", f"must be >= eta_min = {eta_min:g}", eta_max)
    if n_samples < batch:
        raise ConfigError("n_samples", f"must be >= batch = {batch}", n_samples)
    mx = _max_samples(n_samples, max_samples)
    check_pool_memory(batch, n_samples, Z_CAP if z_max is None else z_max)
    s2 = model.noise_std ** 2
    if z_max is None:
        z_max = grid_top(model, eta_min * s2, batch, None, seed)
    return build_table(model, float(z_max), eta_nodes(eta_min * s2, eta_max * s2), batch,
                       update, n_samples, seed, rtol, mx, replicates)


def build_table(model: ModelConfig, z_max: float, etas_std: np.ndarray, batch: int,
                update: str, n_samples: int, seed: int, rtol: float | None, max_samples: int,
                replicates: int) -> MomentTable:
    """The table on ``2⌈z_max/0.2⌉ + 1`` nodes and the standardised steps ``etas_std``:
    ``n_samples`` draws at every node, then refined to ``rtol`` (:class:`_Accumulator`)."""
    n_nodes = 2 * int(math.ceil(z_max / NODE_DZ)) + 1
    z_nodes = np.linspace(-z_max, z_max, n_nodes)
    rhos = np.tanh(z_nodes)
    dphi_f = _dphi_std(model)
    dphi = np.asarray(dphi_f(rhos), dtype=np.float64)
    acc = _Accumulator(model, rhos, etas_std, dphi, batch, update, seed, replicates)
    acc.add(n_samples, np.arange(n_nodes))
    conv = acc.refine(rtol, max_samples)
    return _table(model, z_nodes, etas_std, dphi, dphi_f, acc, conv, rtol, max_samples)


def extend_table(table: MomentTable, factor: float, nodes: np.ndarray | None = None
                 ) -> MomentTable:
    """``table`` with its draws multiplied by ``factor`` (the same stream continued), within
    its ``max_samples``: at every node, or with ``nodes`` (a boolean mask) at those alone — the
    draws added are ``(factor − 1)`` times the most any of them holds, the same number at each.
    The table itself if it keeps no accumulator, ``nodes`` is empty, or they are at the bound.
    For a caller that knows which nodes its prediction depends on (:func:`~.effective.
    effective_dynamics`: those its law visits): a node the law never reaches does not move
    the prediction, so its draws would be spent for nothing."""
    if table._acc is None or table.max_samples is None:
        return table
    acc: _Accumulator = copy.deepcopy(table._acc)
    idx = (np.arange(acc.rhos.size) if nodes is None
           else np.nonzero(np.asarray(nodes, dtype=bool))[0])
    if idx.size == 0:
        return table
    top = int(acc.draws[idx].max())
    n_new = int(min(math.ceil((factor - 1.0) * top), int(table.max_samples) - top))
    if n_new < acc.min_draws:
        return table
    acc.add(n_new, idx)
    conv = acc.refine(table.rtol, table.max_samples)
    return _table(table.model, table.z_nodes, table.etas, table.dphi_nodes, table._dphi, acc,
                  conv, table.rtol, table.max_samples)


def refine_table(table: MomentTable, nodes: np.ndarray, rtol: float = DEFAULT_RTOL
                 ) -> MomentTable:
    """``table`` (built with ``rtol=None``: its starting draws everywhere) with draws added at
    the nodes ``nodes`` (a boolean mask) until their moments are within ``rtol``, up to its
    ``max_samples`` (:meth:`_Accumulator.refine`, the same stream continued); the others keep
    their draws. ``converged`` then says whether the nodes of ``nodes`` met ``rtol``, and
    :func:`extend_table` refines those alone. For a caller that knows where its laws go (the
    schedule advisor: the nodes its feedback schedule's law visits) — a node the law never
    reaches does not move the prediction, and the ends of the grid are where the draws are
    dearest (heavy-tailed jumps near ``|ρ| = 1``)."""
    if table._acc is None or table.max_samples is None:
        raise ValueError("this moment table keeps no accumulator to refine")
    acc: _Accumulator = copy.deepcopy(table._acc)
    acc.scope = np.asarray(nodes, dtype=bool).copy()
    conv = acc.refine(rtol, table.max_samples)
    return _table(table.model, table.z_nodes, table.etas, table.dphi_nodes, table._dphi, acc,
                  conv, rtol, table.max_samples)


def _table(model: ModelConfig, z_nodes: np.ndarray, etas_std: np.ndarray, dphi: np.ndarray,
           dphi_f: Any, accumulator: _Accumulator, conv: bool, rtol: float | None,
           max_samples: int | None) -> MomentTable:
    acc, = accumulator.results(conv)
    s2 = (1.0 / np.cosh(z_nodes) ** 2)[:, None]
    e = etas_std[None, :]
    first = e * dphi[:, None]
    norm = s2 / (e * e)

    def scaled(j):
        return (j.drift - first) * norm, j.var * norm, j.stderr_drift * norm, j.stderr_var * norm

    a, b, se_a, se_b = scaled(acc.pooled)
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise FloatingPointError("effective_dynamics: non-finite one-step moments")
    ra = rb = None
    if acc.groups is not None:
        ra, rb, _, _ = scaled(acc.groups)
    skew, kurt = acc.pooled.skewness, acc.pooled.excess_kurtosis
    if model.signal_sign == "random":
        # the chain is symmetric under ρ → −ρ: m odd, v even in z — imposed on the Monte-Carlo
        # estimates (the nodes are symmetric about 0)
        a, b = 0.5 * (a - a[::-1]), 0.5 * (b + b[::-1])
        skew, kurt = 0.5 * (skew - skew[::-1]), 0.5 * (kurt + kurt[::-1])
        if ra is not None:
            ra, rb = 0.5 * (ra - ra[:, ::-1]), 0.5 * (rb + rb[:, ::-1])
    return MomentTable(z_nodes, etas_std, a, b, dphi, int(acc.draws.max()), dphi_f,
                       stderr_a=se_a, stderr_b=se_b, skewness=skew, excess_kurtosis=kurt,
                       replicate_a=ra, replicate_b=rb, draws=acc.draws,
                       converged=acc.converged, rtol=rtol, max_samples=max_samples,
                       model=model, _acc=accumulator)


def z_max(model: ModelConfig, eta_min_std: float, batch: int, z_start: float | None,
          seed: int) -> float:
    """Upper end of the grid: 2 above the plateau ``1 − |ρ| ≈ η V_B(1)/(4|Φ'(±1)|)`` of the
    smallest step (``V_B`` the mean squared minibatch gradient at ``ρ = ±1``, from 1 000
    importance-sampled draws), in [3, 9]."""
    std = model.standardized()
    dphi = _dphi_std(model)
    pool, w = _gradient_pool(std, np.array([1.0 - 1e-9, -1.0 + 1e-9]), 1000,
                             stream(seed, "plateau"), tilted=True)
    zs = []
    for i, end in enumerate((1.0, -1.0)):
        fp = float(dphi(np.array(end))) * end
        if fp <= 0:
            continue
        V = float(np.sum(w * (pool[i, :, 1] ** 2 + pool[i, :, 2])) / np.sum(w)) / batch
        gap = max(eta_min_std * V / (4.0 * fp), 1e-16)
        zs.append(0.5 * math.log(2.0 / gap))
    z = max(zs) + 2.0 if zs else 3.0
    if z_start is not None:
        z = max(z, abs(z_start) + 0.5)
    return float(min(max(z, 3.0), Z_CAP))


#: :func:`z_max` under a name that the parameter ``z_max`` of :func:`moment_table` does not shadow
grid_top = z_max
