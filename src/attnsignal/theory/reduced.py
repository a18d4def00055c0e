"""A small vectorised reduced-coordinate sampler of the per-sample gradient (DESIGN §2.1).

Standardised model (``σ = 1``). For a unit ``q`` with alignment ``ρ`` write
``ξ = ρ q + s e`` (``s = √(1 − ρ²)``). Each sample is drawn as (steps 1–6 of §2.1):

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
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator

import numpy as np

from ..config import ModelConfig

__all__ = ["ReducedDraws", "GradientParts", "reduced_chunks", "one_step", "accumulate"]

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
    """One chunk of ``n`` reduced samples: ``a, b, ζ`` ``(n, L)``, ``χ, χ'`` and ``ε`` ``(n,)``."""

    R: int
    theta: float
    beta: float
    a: np.ndarray
    b: np.ndarray
    zeta: np.ndarray
    chi: np.ndarray
    chi_p: np.ndarray
    eps: np.ndarray

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


def reduced_chunks(model: ModelConfig, n_samples: int, seed: int) -> Iterator[ReducedDraws]:
    """Yield chunks of reduced draws for the standardised ``model``, ``n_samples`` in all;
    deterministic given ``seed`` (draw order per chunk: a, b, ζ, χ, χ', ε)."""
    m = model.standardized()
    R, L, D = m.n_informative, m.n_tokens, m.d - 2
    rng = np.random.default_rng(seed)
    per = max(1, min(n_samples, _CHUNK // L))
    left = n_samples
    while left > 0:
        k = min(per, left)
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
        yield ReducedDraws(R=R, theta=m.theta, beta=m.beta, a=a, b=b, zeta=zeta, chi=chi,
                           chi_p=chi_p, eps=eps)


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
        X = np.stack([stats(draws.gradient(float(r)), float(r)) for r in rho], axis=0)
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
