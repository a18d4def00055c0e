"""A small vectorised reduced-coordinate sampler of the per-sample gradient
(docs/engines.md#one-sample-in-reduced-coordinates).

Standardised model (``σ = 1``). For a unit ``q`` with alignment ``ρ`` write
``ξ = ρ q + s e`` (``s = √(1 − ρ²)``). Each sample is drawn as follows (the steps of
docs/engines.md#one-sample-in-reduced-coordinates):

1. ``a, b, ζ ~ N(0, I_L)``, ``χ ~ χ²_D``, ``χ' ~ χ²_{D−1}`` (``D = d − 2``), ``γ = √χ``;
   random sign: ``ε = ±1``, the signal ``θ`` becomes ``εθ``;
2. ``s_i = εθρ 1_i + a_i``, ``h_i = εθ s 1_i + b_i``; ``α = softmax(βs)``, ``A = α·s``,
   ``H = α·h``, ``n = ||α||``, ``α̂ = α/n``, ``Pζ = ζ − (α̂·ζ) α̂``;
3. ``(w_i·ω)_i = n (γ² α̂ + γ Pζ)``;
4. ``F = A² + H² + n²γ²``, ``c_i = s_i A + h_i H + (w_i·ω)``;
5. ``g_q = 2β(Σ α_i c_i s_i − F A)``, ``g_e = 2β(Σ α_i c_i h_i − F H)``;
6. ``v_i = α_i (c_i − F)``, ``v_a = v·α̂``, ``v_⊥ = v − v_a α̂``, and the complement part of
   the gradient ``u = 2β W^T v`` has ``||u||² = 4β² [(v_a γ + ζ·v_⊥)² + ||v_⊥||² χ']``.

Then ``g = g_q q + g_e e + u`` exactly in law, the Riemannian gradient is
``g_R = g_e e + u`` and ``ξ·g_R = s g_e``. The draws are kept fixed while ``ρ`` varies
(common random numbers), so every statistic is a smooth function of ``ρ`` for a fixed seed.
Memory: ``3 n L`` doubles for ``n`` samples per chunk (chunks hold at most ``2^20`` per array).

Two evaluations of steps 2–6 on the same draws: :meth:`ReducedDraws.gradient`, vectorised
numpy at one ``ρ`` (the literal transcription, kept as the reference), and
:meth:`ReducedDraws.gradients`, compiled (:func:`_pool_draw`) at many ``ρ`` at once — the
exponentials once per draw, the nuisance tokens through their ρ-free moments — which the
statistics (:func:`accumulate`) and the effective dynamics use. They agree to rounding
(``tests/theory/test_effective.py``, draw by draw).

Importance sampling of the largest score (:class:`ScoreTilt`). Statistics such as
``E[Δz²]`` of one finite step are dominated, at ``β ≳ 1`` and large ``L``, by rare draws in
which one token's score ``a_j`` lies well above the typical maximum ``√(2 ln L)``: its weight
``α_j`` is then far above the others', and terms like ``γ²α_j`` in ``c_j`` make ``g_q``,
``g_e`` and above all ``||u||² ∝ α_j⁴ γ⁴ χ'`` large. With ``tilt`` set, :func:`reduced_chunks`
draws from the defensive mixture ``q = λ₀ φ + (1 − λ₀) φ_tilt``: with probability ``1 − λ₀`` one
token ``j`` (of either class with probability ½, uniform within it) gets
``a_j ~ N(μ_k, 1)`` restricted to ``a_j > c``, ``μ_k`` uniform on the grid
:attr:`ScoreTilt.shifts` (``c`` one below the lowest). Each draw carries its likelihood ratio

    w(a) = φ(a)/q(a) = 1 / (λ₀ + (1 − λ₀) T(a)),
    T(a) = (1/K) Σ_k Σ_c (p_c/|c|) Σ_{j ∈ c, a_j > c} e^{μ_k a_j − μ_k²/2} / Φ̄(c − μ_k)

(``Φ̄`` the normal tail), so ``E_φ[f] = E_q[w f]`` for every statistic ``f``, and
``w <= 1/λ₀`` (a defensive mixture never does much worse than plain sampling). Only the
scores above ``c`` (a few per cent) enter ``T``, which depends on ``a`` only: one weight per
draw serves every ``ρ`` and every step.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import math
import os
import threading

import numpy as np
from numba import njit
from scipy.special import ndtr, ndtri

from ..config import ModelConfig
from ..engines._kernel import (_lane_max, chi2, fair_sign, fast_exp, fill_normals, normal,
                               seed_stream, uniform)

__all__ = ["ReducedDraws", "GradientParts", "ScoreTilt", "reduced_chunks", "one_step",
           "accumulate", "score_tilt"]

_CHUNK = 1 << 20


@dataclass(frozen=True, eq=False)
class GradientParts:
    """Per-sample gradient coordinates at one ``ρ`` (standardised units), each ``(n,)``:
    ``g_q`` (along ``q``), ``g_e`` (along ``e``), ``u2 = ||u||²`` (complement)."""

    g_q: np.ndarray
    g_e: np.ndarray
    u2: np.ndarray


@dataclass(frozen=True, eq=False)
class ReducedDraws:
    """One chunk of ``n`` reduced samples: ``a, b, ζ`` ``(n, L)``, ``χ, χ'`` and ``ε`` ``(n,)``;
    ``weight`` ``(n,)``: each draw's likelihood ratio ``w(a)`` (all 1 without a tilt)."""

    R: int
    theta: float
    beta: float
    a: np.ndarray
    b: np.ndarray
    zeta: np.ndarray
    chi: np.ndarray
    chi_p: np.ndarray
    eps: np.ndarray
    weight: np.ndarray | None = None

    def gradient(self, rho: float) -> GradientParts:
        """Steps 2–6 at alignment ``rho`` (``|rho| <= 1``)."""
        R, beta = self.R, self.beta
        s_ = np.sqrt(max(0.0, 1.0 - rho * rho))
        th = (self.theta * self.eps)[:, None]
        s = self.a.copy()
        s[:, :R] += th * rho
        h = self.b.copy()
        h[:, :R] += th * s_
        z = beta * s
        z -= z.max(axis=1, keepdims=True)
        alpha = np.exp(z)
        alpha /= alpha.sum(axis=1, keepdims=True)
        A = np.einsum("ij,ij->i", alpha, s)
        H = np.einsum("ij,ij->i", alpha, h)
        n2 = np.einsum("ij,ij->i", alpha, alpha)
        n = np.sqrt(n2)
        ahat = alpha / n[:, None]
        gam = np.sqrt(self.chi)
        az = np.einsum("ij,ij->i", ahat, self.zeta)
        Pz = self.zeta - az[:, None] * ahat
        wom = (gam * gam)[:, None] * alpha + (n * gam)[:, None] * Pz
        F = A * A + H * H + n2 * gam * gam
        c = s * A[:, None] + h * H[:, None] + wom
        ac = alpha * c
        g_q = 2.0 * beta * (np.einsum("ij,ij->i", ac, s) - F * A)
        g_e = 2.0 * beta * (np.einsum("ij,ij->i", ac, h) - F * H)
        v = ac - alpha * F[:, None]
        va = np.einsum("ij,ij->i", v, ahat)
        zv = np.einsum("ij,ij->i", self.zeta, v) - va * az
        vperp2 = np.maximum(np.einsum("ij,ij->i", v, v) - va * va, 0.0)
        u2 = 4.0 * beta * beta * ((va * gam + zv) ** 2 + vperp2 * self.chi_p)
        return GradientParts(g_q=g_q, g_e=g_e, u2=u2)

    def gradients(self, rhos: np.ndarray) -> np.ndarray:
        """Steps 2–6 at every alignment of the 1-D array ``rhos``, compiled
        (:func:`_pool_draw`, the draws split over the compute threads): ``(n_rho, n, 3)`` of
        ``(g_q, g_e, ||u||²)`` — what :meth:`gradient` gives at each ``ρ``, up to rounding."""
        rh = np.ascontiguousarray(rhos, dtype=np.float64).ravel()
        n = self.a.shape[0]
        out = np.empty((rh.size, n, 3))
        cuts = _cuts(n)

        def one(p: int) -> None:
            lo, hi = int(cuts[p]), int(cuts[p + 1])
            if hi > lo:
                _pool_rows(rh, self.a[lo:hi], self.b[lo:hi], self.zeta[lo:hi],
                           self.chi[lo:hi], self.chi_p[lo:hi], self.eps[lo:hi],
                           float(self.theta), float(self.beta), int(self.R), out, lo)

        _in_threads(one, cuts.size - 1)
        return out


@dataclass(frozen=True, eq=False)
class ScoreTilt:
    """The defensive mixture proposal of the largest score (module docstring).

    share : ``1 − λ₀``, the probability that a draw has a tilted token (in (0, 1))
    shifts : ``(K,)`` the means ``μ_k = μ₀ + k`` of the tilted token's score
    floor : ``c``, below which the tilted score is not drawn (``μ₀ − 1``)
    informative_share : ``p_I``, the probability that the tilted token is informative (the
        rest go to the nuisance tokens; 1 when there are none)
    """

    share: float
    shifts: np.ndarray
    floor: float
    informative_share: float

    def weights(self, a: np.ndarray, R: int) -> np.ndarray:
        """``w(a) = 1/(λ₀ + (1 − λ₀) T(a))`` for the rows of ``a`` ``(n, L)`` (compiled
        :func:`_tilt_kernel`)."""
        a = np.ascontiguousarray(a, dtype=np.float64)
        T = np.empty(a.shape[0])
        mu = np.ascontiguousarray(self.shifts, dtype=np.float64)
        inv = 1.0 / ndtr(mu - self.floor)  # 1/Φ̄(c − μ_k)
        _tilt_kernel(a, int(R), mu, inv, float(self.floor), float(self.informative_share), T)
        return 1.0 / ((1.0 - self.share) + self.share * T)

    def draw(self, rng: np.random.Generator, k: int) -> np.ndarray:
        """``k`` tilted scores: ``μ`` uniform on the grid, then ``N(μ, 1)`` beyond the floor,
        ``a = μ − Φ⁻¹(U Φ̄(c − μ))`` with ``U`` uniform."""
        mu = self.shifts[rng.integers(0, self.shifts.size, k)]
        return mu - ndtri(rng.random(k) * ndtr(mu - self.floor))


def score_tilt(model: ModelConfig, batch: int = 1) -> ScoreTilt:
    """The tilt the effective dynamics uses: shifts 1 apart from ``√(2 ln L) − 1`` (one below
    the typical largest of ``L`` scores) to ``min(a*, √(2 ln L) + 4)`` (at least 5 of them),
    where ``a* = (ln L + β²/2)/β`` is the score at which one token's weight ``e^{βa}`` matches
    the typical partition sum ``L e^{β²/2}`` — the range over which a single token's weight
    rises from the typical largest to most of the mass, where the heavy tail of a step lives;
    half of the tilted tokens informative; ``1 − λ₀ = 1/(2B)`` per draw for minibatches of
    ``B`` — so a minibatch holds about ½ tilted draw whatever ``B``, and its weight, the
    product of ``B`` draws' weights, stays below ``(1 − 1/(2B))^{−B} <= 2``."""
    L = max(model.n_tokens, 2)
    beta = max(float(model.beta), 1e-6)
    centre = math.sqrt(2.0 * math.log(L))
    a_star = (math.log(L) + 0.5 * beta * beta) / beta
    k = max(5, int(math.floor(min(a_star, centre + 4.0) - (centre - 1.0))) + 1)
    shifts = centre - 1.0 + np.arange(float(k))
    p_i = 0.5 if model.n_nuisance > 0 else 1.0
    return ScoreTilt(share=0.5 / max(int(batch), 1), shifts=shifts, floor=centre - 2.0,
                     informative_share=p_i)


def check_draw_memory(model: ModelConfig) -> None:
    """Refuse (ConfigError naming ``n_nuisance`` or ``n_informative``, whichever makes ``L``
    large) a model one reduced draw of which cannot fit: a chunk holds at least one draw of
    ``3 L`` doubles, and the gradients over it about as many again (``8 L`` doubles in all).
    Every Monte-Carlo estimate built on :func:`reduced_chunks` checks it before drawing."""
    from ..limits import check_memory

    L = model.n_tokens
    field, value = (("n_nuisance", model.n_nuisance) if model.n_nuisance >= model.n_informative
                    else ("n_informative", model.n_informative))
    check_memory(field, 64.0 * L, f"one Monte-Carlo draw of L = {L} tokens (8 L float64)", value)


def reduced_chunks(model: ModelConfig, n_samples: int, seed: Any,
                   tilt: ScoreTilt | None = None, chunk: int | None = None,
                   min_chunk: int = 1) -> Iterator[ReducedDraws]:
    """Yield chunks of reduced draws for the standardised ``model``, ``n_samples`` in all;
    deterministic given ``seed`` (anything ``numpy.random.default_rng`` takes; draw order per
    chunk: a, b, ζ, χ, χ', ε, then the tilt's choices). With ``tilt`` the draws come from its
    mixture proposal and carry their likelihood ratios (``weight``). Chunks hold ``chunk``
    draws (default ``2^20 / L``: ``3 n L`` doubles), a remainder below ``min_chunk`` joining
    the chunk before it."""
    check_draw_memory(model)
    m = model.standardized()
    R, L, D = m.n_informative, m.n_tokens, m.d - 2
    N = L - R
    rng = np.random.default_rng(seed)
    per = max(1, min(n_samples, _CHUNK // L) if chunk is None else int(chunk))
    left = n_samples
    while left > 0:
        k = min(per, left)
        if 0 < left - k < min_chunk:
            k = left
        left -= k
        a = rng.standard_normal((k, L))
        b = rng.standard_normal((k, L))
        zeta = rng.standard_normal((k, L))
        chi = rng.chisquare(D, k) if D > 0 else np.zeros(k)
        chi_p = rng.chisquare(D - 1, k) if D > 1 else np.zeros(k)
        if m.signal_sign == "random":
            eps = np.where(rng.random(k) < 0.5, -1.0, 1.0)
        else:
            eps = np.ones(k)
        weight = None
        if tilt is not None:
            on = rng.random(k) < tilt.share
            informative = (rng.random(k) < tilt.informative_share) | (N == 0)
            tok = np.where(informative, rng.integers(0, R, k), R + rng.integers(0, max(N, 1), k))
            value = tilt.draw(rng, k)
            rows = np.nonzero(on)[0]
            a[rows, tok[rows]] = value[rows]
            weight = tilt.weights(a, R)
        yield ReducedDraws(R=R, theta=m.theta, beta=m.beta, a=a, b=b, zeta=zeta, chi=chi,
                           chi_p=chi_p, eps=eps, weight=weight)


def one_step(parts: GradientParts, rho: float, eta: float, update: str) -> np.ndarray:
    """Exact next alignment for ``B = 1`` (standardised step ``eta``):
    ``ρ' = [ρ(1 + η g_q) + s η g_e] / √((1 + η g_q)² + (η g_e)² + η² ||u||²)``;
    ``update="riemannian"`` sets ``g_q = 0``."""
    gq = 0.0 if update == "riemannian" else parts.g_q
    s = np.sqrt(max(0.0, 1.0 - rho * rho))
    num = rho * (1.0 + eta * gq) + s * eta * parts.g_e
    den = np.sqrt((1.0 + eta * gq) ** 2 + (eta * parts.g_e) ** 2 + eta * eta * parts.u2)
    return num / den


def accumulate(model: ModelConfig, rho: np.ndarray, n_samples: int, seed: int,
               stats: Callable[[GradientParts, float], np.ndarray]) -> tuple[np.ndarray, np.ndarray, int]:
    """Mean and covariance over samples of ``stats(parts, ρ)`` (a ``(n, k)`` array) at each
    ``ρ`` of the 1-D array ``rho``, with common draws. Returns ``mean (n_rho, k)``,
    ``cov (n_rho, k, k)`` (``ddof=1``) and the sample count."""
    rho = np.asarray(rho, dtype=np.float64).ravel()
    n_tot = 0
    mean = None
    comom = None
    for draws in reduced_chunks(model, n_samples, seed):
        parts = draws.gradients(rho)
        X = np.stack([stats(GradientParts(p[:, 0], p[:, 1], p[:, 2]), float(r))
                      for p, r in zip(parts, rho)], axis=0)
        cnt = X.shape[1]
        mx = X.mean(axis=1)
        dev = X - mx[:, None, :]
        cx = np.einsum("rni,rnj->rij", dev, dev)
        if mean is None:
            mean, comom, n_tot = mx, cx, cnt
            continue
        n_new = n_tot + cnt
        delta = mx - mean
        mean = mean + delta * (cnt / n_new)
        comom = comom + cx + np.einsum("ri,rj->rij", delta, delta) * (n_tot * cnt / n_new)
        n_tot = n_new
    cov = comom / max(n_tot - 1, 1)
    return mean, cov, n_tot


# --------------------------------------------------------------------------- compiled


#: the nuisance tokens' ρ-free moments (:func:`_nuisance_moments`), in this order
_NM = 25
#: the quadratic form of ``Σ v_j²`` over the nuisance tokens is used when it keeps this share
#: of its terms' scale (at most ~6 of 16 digits lost); below it, the tokens are summed one by one
_NUISANCE_COND = 1e-6


@njit(cache=True, nogil=True, fastmath={"contract"})
def _weighted_monomials(e, a, b, zeta, R, square, M, at):  # pragma: no cover
    """``M[at:at + 10] = Σ_{j ≥ R} w_j·(1, x, y, z, x², xy, y², xz, yz, z²)`` with ``w = e``,
    or ``e²`` when ``square`` (:func:`_nuisance_moments`)."""
    s0 = sx = sy = sz = sxx = sxy = syy = sxz = syz = szz = 0.0
    for j in range(R, e.shape[0]):
        x = a[j]
        y = b[j]
        z = zeta[j]
        w = e[j] * e[j] if square else e[j]
        s0 += w
        sx += w * x
        sy += w * y
        sz += w * z
        sxx += w * (x * x)
        sxy += w * (x * y)
        syy += w * (y * y)
        sxz += w * (x * z)
        syz += w * (y * z)
        szz += w * (z * z)
    M[at] = s0
    M[at + 1] = sx
    M[at + 2] = sy
    M[at + 3] = sz
    M[at + 4] = sxx
    M[at + 5] = sxy
    M[at + 6] = syy
    M[at + 7] = sxz
    M[at + 8] = syz
    M[at + 9] = szz


@njit(cache=True, nogil=True, fastmath={"contract"})
def _nuisance_moments(e, a, b, zeta, R, M):  # pragma: no cover
    """The ρ-free sums over the nuisance tokens ``j ≥ R`` (``x = a_j``, ``y = b_j``,
    ``z = ζ_j``, weights ``e = e_j``) into ``M`` (``_NM``,): ``Σe·(1, x, y, z, x², xy, y², xz,
    yz, z²)``, ``Σe²·(1, x, y, z, x², xy, y², xz, yz, z²)``, ``Σe³·(1, x, y, z)``, ``Σe⁴``.

    One pass over the tokens per power of ``e`` (at most ten accumulators in a loop, which
    stay in registers where twenty-five did not), each sum in token order, with fused
    multiply-adds (``contract``: no reassociation, so the order is the one written): 4.9 →
    3.5 µs a draw at ``L = 430``."""
    _weighted_monomials(e, a, b, zeta, R, False, M, 0)
    _weighted_monomials(e, a, b, zeta, R, True, M, 10)
    u0 = ux = uy = uz = v0 = 0.0
    for j in range(R, e.shape[0]):
        w2 = e[j] * e[j]
        w3 = w2 * e[j]
        u0 += w3
        ux += w3 * a[j]
        uy += w3 * b[j]
        uz += w3 * zeta[j]
        v0 += w2 * w2
    M[20] = u0
    M[21] = ux
    M[22] = uy
    M[23] = uz
    M[24] = v0


@njit(cache=True, nogil=True)
def _pool_draw(a, b, zeta, chi, chi_p, eps, theta, beta, R, rhos, e, M, out, col
               ):  # pragma: no cover
    """Steps 2–6 of the sampler for one draw (``a, b, ζ`` ``(L,)``, scalars ``χ, χ', ε``) at
    every alignment ``rhos[r]``: ``out[r, col] = (g_q, g_e, ||u||²)``, and where ``out`` has 6
    columns also the softmax weights' power sums ``(Σα_j², Σα_j³, Σα_j⁴)``; ``e`` ``(L,)`` and
    ``M`` ``(_NM,)`` are scratch. The softmax weights factor as
    ``e^{βa_j}`` times ``e^{βεθρ}`` on the informative tokens, so the exponentials are taken
    once per draw (shifted per token class) and reused at every ``ρ`` — by
    :func:`~attnsignal.engines._kernel.fast_exp` (within 1 ulp of ``math.exp``), one loop per
    class with no branch, which vectorises where libm's scalar ``exp`` was a quarter of a
    draw's time at ``L = 430``; the per-class maxima in four lanes
    (:func:`~attnsignal.engines._kernel._lane_max`).

    The nuisance tokens (``j ≥ R``) do not move with ``ρ``: their weight is ``α_j = c_N e_j``
    and ``v_j = c_N e_j (A x_j + H y_j + k_z z_j + c_N k_a e_j − F)`` (``x = a``, ``y = b``,
    ``z = ζ``; ``A, H, F, k_a, k_z, c_N`` scalars of the draw at that ρ), so every sum over them
    — ``Z, Σα s, Σα h, Σα², Σα ζ`` and ``Σ v s, Σ v h, Σ v α, Σ v ζ``, ``Σ v²`` (a quadratic
    form) — is a combination of ``_NM`` ρ-free moments (:func:`_nuisance_moments`), taken once
    per draw: ``O(R)`` work per ρ instead of ``O(L)``. Where the quadratic form would cancel
    (``Σ v²`` below ``_NUISANCE_COND`` of its terms' scale: the weights concentrated on a
    token whose ``v`` vanishes) the nuisance tokens are summed one by one instead."""
    L = a.shape[0]
    has_n = L > R
    powers = out.shape[2] >= 6
    mI = beta * _lane_max(a, 0, R)  # β > 0: max β a_j = β max a_j, to the bit
    mN = beta * _lane_max(a, R, L)
    for j in range(R):
        e[j] = fast_exp(beta * a[j] - mI)
    for j in range(R, L):
        e[j] = fast_exp(beta * a[j] - mN)
    if has_n:
        _nuisance_moments(e, a, b, zeta, R, M)
    else:
        M[:] = 0.0
    gam2 = chi
    gam = math.sqrt(gam2)
    for r in range(rhos.shape[0]):
        rho = rhos[r]
        sr = math.sqrt(max(0.0, 1.0 - rho * rho))
        tq = eps * theta * rho
        te = eps * theta * sr
        lI = mI + beta * tq
        M_ = max(lI, mN) if has_n else lI
        fI = math.exp(lI - M_)
        fN = math.exp(mN - M_) if has_n else 0.0
        Z = 0.0
        Ss = 0.0
        Sh = 0.0
        Sww = 0.0
        Sz = 0.0
        for j in range(R):
            w = e[j] * fI
            sj = a[j] + tq
            hj = b[j] + te
            Z += w
            Ss += w * sj
            Sh += w * hj
            Sww += w * w
            Sz += w * zeta[j]
        Z += fN * M[0]
        Ss += fN * M[1]
        Sh += fN * M[2]
        Sww += fN * fN * M[10]
        Sz += fN * M[3]
        invZ = 1.0 / Z
        if powers:
            # Σα³ and Σα⁴ (Σα² is n² below): the drift's further control variates
            S3 = 0.0
            S4 = 0.0
            for j in range(R):
                w = e[j] * fI
                w2 = w * w
                S3 += w2 * w
                S4 += w2 * w2
            fN2 = fN * fN
            S3 += fN2 * fN * M[20]
            S4 += fN2 * fN2 * M[24]
            iz2 = invZ * invZ
            out[r, col, 4] = S3 * iz2 * invZ
            out[r, col, 5] = S4 * iz2 * iz2
        A = Ss * invZ
        H = Sh * invZ
        n2 = Sww * invZ * invZ
        nn = math.sqrt(n2)
        az = Sz * invZ / nn
        F = A * A + H * H + n2 * gam2
        ka = gam2 - gam * az
        kz = nn * gam
        Gq = 0.0
        Ge = 0.0
        Sva = 0.0
        Svz = 0.0
        Svv = 0.0
        cI = fI * invZ
        cN = fN * invZ
        for j in range(R):
            al = e[j] * cI
            sj = a[j] + tq
            hj = b[j] + te
            v = al * (sj * A + hj * H + al * ka + kz * zeta[j] - F)
            Gq += v * sj
            Ge += v * hj
            Sva += v * al
            Svz += v * zeta[j]
            Svv += v * v
        if has_n:
            # v_j = c_N e_j (w · (x, y, z, e, 1)) with w = (A, H, k_z, κ, −F)
            kap = cN * ka
            nF = -F
            # the diagonal terms (each ≥ 0: the scale the cancellation is judged against),
            # then the cross terms
            scale = (A * A * M[14] + H * H * M[16] + kz * kz * M[19] + kap * kap * M[24]
                     + F * F * M[10])
            qv = scale + 2.0 * (A * H * M[15] + A * kz * M[17] + A * kap * M[21]
                                + A * nF * M[11] + H * kz * M[18] + H * kap * M[22]
                                + H * nF * M[12] + kz * kap * M[23] + kz * nF * M[13]
                                + kap * nF * M[20])
            if qv >= _NUISANCE_COND * scale:
                Gq += cN * (A * M[4] + H * M[5] + kz * M[7] + kap * M[11] + nF * M[1])
                Ge += cN * (A * M[5] + H * M[6] + kz * M[8] + kap * M[12] + nF * M[2])
                Sva += cN * cN * (A * M[11] + H * M[12] + kz * M[13] + kap * M[20]
                                  + nF * M[10])
                Svz += cN * (A * M[7] + H * M[8] + kz * M[9] + kap * M[13] + nF * M[3])
                Svv += cN * cN * qv
            else:
                for j in range(R, L):
                    al = e[j] * cN
                    sj = a[j]
                    hj = b[j]
                    v = al * (sj * A + hj * H + al * ka + kz * zeta[j] - F)
                    Gq += v * sj
                    Ge += v * hj
                    Sva += v * al
                    Svz += v * zeta[j]
                    Svv += v * v
        va = Sva / nn
        zvp = Svz - va * az
        nvp2 = max(Svv - va * va, 0.0)
        lin = va * gam + zvp
        out[r, col, 0] = 2.0 * beta * Gq
        out[r, col, 1] = 2.0 * beta * Ge
        out[r, col, 2] = 4.0 * beta * beta * (lin * lin + nvp2 * chi_p)
        if powers:
            out[r, col, 3] = n2


@njit(cache=True, nogil=True)
def _pool_rows(rhos, a, b, zeta, chi, chi_p, eps, theta, beta, R, out, pos):  # pragma: no cover
    """:func:`_pool_draw` for every row ``i`` of the draws: ``out[r, pos + i]``."""
    L = a.shape[1]
    e = np.empty(L)
    M = np.empty(_NM)
    for i in range(a.shape[0]):
        _pool_draw(a[i], b[i], zeta[i], chi[i], chi_p[i], eps[i], theta, beta, R, rhos, e, M,
                   out, pos + i)


@njit(cache=True, nogil=True, error_model="numpy")
def _fused_rows(k0, k1, first, n, L, rhos, theta, beta, R, D, random_sign, zt, share, p_i, mu,
                inv, floor, out, w, col, keep, keep_s):  # pragma: no cover
    """Draw ``out.shape[1]`` reduced samples and evaluate each at every alignment without
    storing them: draw ``i`` from the chain engine's stream ``(key, first + i)`` — ``a, b, ζ``
    (ziggurat), ``χ``, ``χ'``, the sign, then with ``share > 0`` the tilt of
    :class:`ScoreTilt` (uniforms for the choices; the tilted score ``μ_k + Z``, ``Z`` a
    normal beyond ``c − μ_k`` by rejection) and the weight ``w[i]`` — then
    :func:`_pool_draw` into ``out[:, col + i]`` and ``w[col + i]``. ``keep`` ``(3, ·, L)`` and
    ``keep_s`` ``(·, 3)`` (or empty) receive the draws at the same columns, for tests."""
    st = np.empty(4, dtype=np.uint64)
    a = np.empty(L)
    b = np.empty(L)
    zeta = np.empty(L)
    e = np.empty(L)
    M = np.empty(_NM)
    K = mu.shape[0]
    N = L - R
    p_n = 1.0 - p_i if N > 0 else 0.0
    c_i = p_i / R
    c_n = p_n / N if N > 0 else 0.0
    for i in range(n):
        seed_stream(st, k0, k1, first + np.uint64(i))
        fill_normals(st, zt, a, L)
        fill_normals(st, zt, b, L)
        fill_normals(st, zt, zeta, L)
        chi = chi2(st, zt, D) if D > 0 else 0.0
        chi_p = chi2(st, zt, D - 1) if D > 1 else 0.0
        eps = fair_sign(st) if random_sign else 1.0
        wi = 1.0
        if share > 0.0:
            if uniform(st) < share:
                if N == 0 or uniform(st) < p_i:
                    tok = min(int(uniform(st) * R), R - 1)
                else:
                    tok = R + min(int(uniform(st) * N), N - 1)
                mk = mu[min(int(uniform(st) * K), K - 1)]
                z = normal(st, zt)
                while mk + z <= floor:
                    z = normal(st, zt)
                a[tok] = mk + z
            wi = 1.0 / ((1.0 - share) + share * _tilt_row(a, R, mu, inv, floor, c_i, c_n))
        w[col + i] = wi
        if keep.shape[1] > 0:
            keep[0, col + i] = a
            keep[1, col + i] = b
            keep[2, col + i] = zeta
            keep_s[col + i, 0] = chi
            keep_s[col + i, 1] = chi_p
            keep_s[col + i, 2] = eps
        _pool_draw(a, b, zeta, chi, chi_p, eps, theta, beta, R, rhos, e, M, out, col + i)


@njit(cache=True, nogil=True, error_model="numpy")
def _tilt_kernel(a, R, mu, inv, floor, p_i, out):  # pragma: no cover
    """``out[i] = T(a_i)`` of :class:`ScoreTilt` for the shifts ``μ_k = μ₀ + k`` (``inv_k =
    1/Φ̄(c − μ_k)``, ``c = floor``): only scores above the floor count, each with
    ``e^{μ_k x − μ_k²/2} = e^{μ₀x − μ₀²/2} · Π_{l<k} e^{x − μ₀ − l − 1/2}`` (two exponentials)."""
    n, L = a.shape
    N = L - R
    p_n = 1.0 - p_i if N > 0 else 0.0
    c_i = p_i / R
    c_n = p_n / N if N > 0 else 0.0
    for i in range(n):
        out[i] = _tilt_row(a[i], R, mu, inv, floor, c_i, c_n)


@njit(cache=True, nogil=True, error_model="numpy")
def _tilt_row(a, R, mu, inv, floor, c_i, c_n):  # pragma: no cover
    """``T(a)`` of one draw's scores ``a`` ``(L,)`` (:func:`_tilt_kernel`); ``c_i``, ``c_n``:
    the probability of tilting a given informative / nuisance token."""
    K = mu.shape[0]
    mu0 = mu[0]
    tot = 0.0
    for j in range(a.shape[0]):
        x = a[j]
        if x > floor:
            e = math.exp(mu0 * x - 0.5 * mu0 * mu0)
            ex = math.exp(x - mu0 - 0.5)
            acc = 0.0
            for k in range(K):
                acc += e * inv[k]
                e *= ex
                ex *= 0.36787944117144233  # e^{−1}: the next factor is e^{x − μ₀ − k − 3/2}
            tot += acc * (c_i if j < R else c_n)
    return tot / K


def _cuts(n: int) -> np.ndarray:
    """Row boundaries splitting ``n`` draws over twice the compute threads."""
    from ..engines.base import compute_threads

    parts = max(1, min(n, 2 * compute_threads()))
    return np.linspace(0, n, parts + 1).astype(np.int64)


#: the persistent compute pools, one per (process, number of threads): :func:`_in_threads`
#: runs hundreds of short parallel sections per call of the effective dynamics, and a pool
#: made per section paid its threads' start and join each time
_POOLS: dict[tuple[int, int], ThreadPoolExecutor] = {}
_POOLS_LOCK = threading.Lock()
_WORKER = threading.local()


def _mark_worker() -> None:
    _WORKER.inside = True


def _compute_pool(workers: int) -> ThreadPoolExecutor:
    """The process's pool of ``workers`` threads, made on first use (a forked child, whose
    copy of its parent's pool has no threads, makes its own)."""
    key = (os.getpid(), workers)
    with _POOLS_LOCK:
        pool = _POOLS.get(key)
        if pool is None:
            pool = ThreadPoolExecutor(max_workers=workers, initializer=_mark_worker,
                                      thread_name_prefix="attnsignal-compute")
            _POOLS[key] = pool
        return pool


def _in_threads(fn: Callable[[int], None], n: int) -> None:
    """``fn(0), …, fn(n − 1)`` on up to ``compute_threads()`` threads of a persistent pool
    (the compiled kernels release the GIL); every call has finished when it returns, and the
    first exception then propagates. Called from one of the pool's own threads, it runs the
    calls there in turn (a worker that waited on its own pool could wait for ever)."""
    from ..engines.base import compute_threads

    threads = max(1, compute_threads())
    if min(n, threads) == 1 or getattr(_WORKER, "inside", False):
        for i in range(n):
            fn(i)
        return
    futures = [_compute_pool(threads).submit(fn, i) for i in range(n)]
    wait(futures)
    for f in futures:
        f.result()


def fused_pool(model: ModelConfig, rhos: np.ndarray, n: int, key: np.ndarray, first: int,
               tilt: ScoreTilt | None = None, keep: bool = False, powers: bool = False
               ) -> tuple[np.ndarray, np.ndarray, ReducedDraws | None]:
    """``n`` reduced draws of the standardised ``model`` evaluated at every ``ρ`` of ``rhos``
    without storing them (:func:`_fused_rows`, on the compute threads): ``(n_rho, n, 3)`` of
    ``(g_q, g_e, ||u||²)`` and the weights ``(n,)`` (all 1 without ``tilt``). Draw ``i`` comes
    from the chain engine's counter-based stream ``(key, first + i)``, so the draws do not
    depend on how they are split. ``keep``: also return the draws as :class:`ReducedDraws`
    (tests); ``powers``: ``(n_rho, n, 6)``, the softmax weights' ``(Σα², Σα³, Σα⁴)`` after
    the gradient."""
    from ..engines._kernel_common import ZT

    m = model.standardized()
    R, L, D = m.n_informative, m.n_tokens, m.d - 2
    rh = np.ascontiguousarray(rhos, dtype=np.float64).ravel()
    out = np.empty((rh.size, n, 6 if powers else 3))
    w = np.empty(n)
    if tilt is None:
        share, p_i, mu, inv, floor = 0.0, 1.0, np.zeros(1), np.ones(1), 0.0
    else:
        share, p_i, floor = float(tilt.share), float(tilt.informative_share), float(tilt.floor)
        mu = np.ascontiguousarray(tilt.shifts, dtype=np.float64)
        inv = 1.0 / ndtr(mu - floor)
    kept = np.empty((3, n, L)) if keep else np.empty((3, 0, 0))
    kept_s = np.empty((n, 3)) if keep else np.empty((0, 3))
    cuts = _cuts(n)

    def one(p: int) -> None:
        lo, hi = int(cuts[p]), int(cuts[p + 1])
        if hi > lo:
            _fused_rows(key[0], key[1], np.uint64(first + lo), hi - lo, L, rh, float(m.theta),
                        float(m.beta), R, D, m.signal_sign == "random", ZT, share, p_i, mu,
                        inv, floor, out, w, lo, kept, kept_s)

    _in_threads(one, cuts.size - 1)
    draws = None
    if keep:
        draws = ReducedDraws(R=R, theta=m.theta, beta=m.beta, a=kept[0], b=kept[1],
                             zeta=kept[2], chi=kept_s[:, 0], chi_p=kept_s[:, 1],
                             eps=kept_s[:, 2], weight=w)
    return out, w, draws
