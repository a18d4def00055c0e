"""A small vectorised reduced-coordinate sampler of the per-sample gradient
(docs/engines.md#one-sample-in-reduced-coordinates).

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

Two evaluations of steps 2–6 on the same draws: :meth:`ReducedDraws.gradient`, vectorised
numpy at one ``ρ`` (the literal transcription, kept as the reference), and
:meth:`ReducedDraws.gradients`, compiled (:func:`_pool_kernel`) at many ``ρ`` at once — the
exponentials once per draw, the nuisance tokens through their ρ-free moments — which the
statistics (:func:`accumulate`) and the effective dynamics use. They agree to rounding
(``tests/theory/test_effective.py``, draw by draw).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator

import math

import numpy as np
from numba import njit, prange

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

    def gradients(self, rhos: np.ndarray) -> np.ndarray:
        """Steps 2–6 at every alignment of the 1-D array ``rhos``, compiled
        (:func:`_pool_kernel`): ``(n_rho, n, 3)`` of ``(g_q, g_e, ||u||²)`` — what
        :meth:`gradient` gives at each ``ρ``, up to rounding."""
        rh = np.ascontiguousarray(rhos, dtype=np.float64).ravel()
        out = np.empty((rh.size, self.a.shape[0], 3))
        _pool_kernel(rh, self.a, self.b, self.zeta, self.chi, self.chi_p, self.eps,
                     float(self.theta), float(self.beta), int(self.R), out, 0)
        return out


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


def reduced_chunks(model: ModelConfig, n_samples: int, seed: int) -> Iterator[ReducedDraws]:
    """Yield chunks of reduced draws for the standardised ``model``, ``n_samples`` in all;
    deterministic given ``seed`` (draw order per chunk: a, b, ζ, χ, χ', ε)."""
    check_draw_memory(model)
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


@njit(cache=True, nogil=True)
def _nuisance_moments(e, a, b, zeta, R, M):  # pragma: no cover
    """The ρ-free sums over the nuisance tokens ``j ≥ R`` (``x = a_j``, ``y = b_j``,
    ``z = ζ_j``, weights ``e = e_j``) into ``M`` (``_NM``,): ``Σe·(1, x, y, z, x², xy, y², xz,
    yz, z²)``, ``Σe²·(1, x, y, z, x², xy, y², xz, yz, z²)``, ``Σe³·(1, x, y, z)``, ``Σe⁴``."""
    # scalar accumulators (kept in registers; M is written once)
    s0 = 0.0
    sx = 0.0
    sy = 0.0
    sz = 0.0
    sxx = 0.0
    sxy = 0.0
    syy = 0.0
    sxz = 0.0
    syz = 0.0
    szz = 0.0
    t0 = 0.0
    tx = 0.0
    ty = 0.0
    tz = 0.0
    txx = 0.0
    txy = 0.0
    tyy = 0.0
    txz = 0.0
    tyz = 0.0
    tzz = 0.0
    u0 = 0.0
    ux = 0.0
    uy = 0.0
    uz = 0.0
    v0 = 0.0
    for j in range(R, e.shape[0]):
        x = a[j]
        y = b[j]
        z = zeta[j]
        w1 = e[j]
        w2 = w1 * w1
        w3 = w2 * w1
        xx = x * x
        xy = x * y
        yy = y * y
        xz = x * z
        yz = y * z
        zz = z * z
        s0 += w1
        sx += w1 * x
        sy += w1 * y
        sz += w1 * z
        sxx += w1 * xx
        sxy += w1 * xy
        syy += w1 * yy
        sxz += w1 * xz
        syz += w1 * yz
        szz += w1 * zz
        t0 += w2
        tx += w2 * x
        ty += w2 * y
        tz += w2 * z
        txx += w2 * xx
        txy += w2 * xy
        tyy += w2 * yy
        txz += w2 * xz
        tyz += w2 * yz
        tzz += w2 * zz
        u0 += w3
        ux += w3 * x
        uy += w3 * y
        uz += w3 * z
        v0 += w2 * w2
    M[0] = s0
    M[1] = sx
    M[2] = sy
    M[3] = sz
    M[4] = sxx
    M[5] = sxy
    M[6] = syy
    M[7] = sxz
    M[8] = syz
    M[9] = szz
    M[10] = t0
    M[11] = tx
    M[12] = ty
    M[13] = tz
    M[14] = txx
    M[15] = txy
    M[16] = tyy
    M[17] = txz
    M[18] = tyz
    M[19] = tzz
    M[20] = u0
    M[21] = ux
    M[22] = uy
    M[23] = uz
    M[24] = v0


@njit(cache=True, parallel=True, nogil=True)
def _pool_kernel(rhos, a, b, zeta, chi, chi_p, eps, theta, beta, R, out, pos):  # pragma: no cover
    """One sample in reduced coordinates (docs/engines.md#one-sample-in-reduced-coordinates)
    for every draw ``i`` and alignment ``rhos[r]``:
    ``out[r, pos + i] = (g_q, g_e, ||u||²)``. The softmax weights factor as
    ``e^{βa_j}`` times ``e^{βεθρ}`` on the informative tokens, so the exponentials are taken
    once per draw (shifted per token class) and reused at every ``ρ``.

    The nuisance tokens (``j ≥ R``) do not move with ``ρ``: their weight is ``α_j = c_N e_j``
    and ``v_j = c_N e_j (A x_j + H y_j + k_z z_j + c_N k_a e_j − F)`` (``x = a``, ``y = b``,
    ``z = ζ``; ``A, H, F, k_a, k_z, c_N`` scalars of the draw at that ρ), so every sum over them
    — ``Z, Σα s, Σα h, Σα², Σα ζ`` and ``Σ v s, Σ v h, Σ v α, Σ v ζ``, ``Σ v²`` (a quadratic
    form) — is a combination of ``_NM`` ρ-free moments (:func:`_nuisance_moments`), taken once
    per draw: ``O(R)`` work per ρ instead of ``O(L)``. Where the quadratic form would cancel
    (``Σ v²`` below ``_NUISANCE_COND`` of its terms' scale: the weights concentrated on a
    token whose ``v`` vanishes) the nuisance tokens are summed one by one instead."""
    n, L = a.shape
    has_n = L > R
    for i in prange(n):
        e = np.empty(L)
        mI = -np.inf
        mN = -np.inf
        for j in range(L):
            x = beta * a[i, j]
            if j < R:
                mI = max(mI, x)
            else:
                mN = max(mN, x)
        for j in range(L):
            e[j] = math.exp(beta * a[i, j] - (mI if j < R else mN))
        M = np.empty(_NM)
        if has_n:
            _nuisance_moments(e, a[i], b[i], zeta[i], R, M)
        else:
            M[:] = 0.0
        gam2 = chi[i]
        gam = math.sqrt(gam2)
        for r in range(rhos.shape[0]):
            rho = rhos[r]
            sr = math.sqrt(max(0.0, 1.0 - rho * rho))
            tq = eps[i] * theta * rho
            te = eps[i] * theta * sr
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
                sj = a[i, j] + tq
                hj = b[i, j] + te
                Z += w
                Ss += w * sj
                Sh += w * hj
                Sww += w * w
                Sz += w * zeta[i, j]
            Z += fN * M[0]
            Ss += fN * M[1]
            Sh += fN * M[2]
            Sww += fN * fN * M[10]
            Sz += fN * M[3]
            invZ = 1.0 / Z
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
                sj = a[i, j] + tq
                hj = b[i, j] + te
                v = al * (sj * A + hj * H + al * ka + kz * zeta[i, j] - F)
                Gq += v * sj
                Ge += v * hj
                Sva += v * al
                Svz += v * zeta[i, j]
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
                        sj = a[i, j]
                        hj = b[i, j]
                        v = al * (sj * A + hj * H + al * ka + kz * zeta[i, j] - F)
                        Gq += v * sj
                        Ge += v * hj
                        Sva += v * al
                        Svz += v * zeta[i, j]
                        Svv += v * v
            va = Sva / nn
            zvp = Svz - va * az
            nvp2 = max(Svv - va * va, 0.0)
            lin = va * gam + zvp
            out[r, pos + i, 0] = 2.0 * beta * Gq
            out[r, pos + i, 1] = 2.0 * beta * Ge
            out[r, pos + i, 2] = 4.0 * beta * beta * (lin * lin + nvp2 * chi_p[i])
