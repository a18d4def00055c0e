"""Exact finite-size ``Φ(ρ)`` and ``Φ'(ρ)`` by one-dimensional quadrature (no sampling).

Standardised model (``σ = 1``, fixed sign). With ``a ~ N(0, I_L)``, ``s_i = θρ 1_i + a_i``,
``w_i = e^{β s_i}``, ``S = Σ_i w_i`` and ``α = w/S`` (docs/theory.md#exact-finite-size),

    Φ(ρ) = E[A² + c m² + (d − 1) n²],   A = α·s,  m = Σ_{i∈I} α_i,  n² = ||α||²,
    c = θ²(1 − ρ²).

Every term is ``E[P/S²]`` with ``P`` a sum over one or two tokens. The identity
``1/S² = ∫_0^∞ t e^{−tS} dt`` and the independence of the tokens factorise it: with, for each
token class ``κ`` (informative ``I``: ``s ~ N(θρ, 1)``; nuisance ``N``: ``s ~ N(0, 1)``),

    φ_κ(t) = E[e^{−t w}],   r_κ^g(t) = E[g(s) e^{−t w}] / φ_κ(t),

    Φ(ρ) = ∫_0^∞ t φ_I(t)^R φ_N(t)^N K(t) dt,
    K = R r_I^{w²s²} + N r_N^{w²s²} + (R r_I^{ws} + N r_N^{ws})² − R (r_I^{ws})² − N (r_N^{ws})²
        + c [R r_I^{w²} + R(R−1) (r_I^{w})²] + (d − 1) [R r_I^{w²} + N r_N^{w²}].

``Φ'(ρ)`` differentiates the integrand at fixed ``t``: ``∂/∂μ E_{s~N(μ,1)}[G(s)] = E[(s−μ)G(s)]``
for the informative class (``μ = θρ``, ``dμ/dρ = θ``) plus ``dc/dρ = −2θ²ρ`` — analytic, no finite
differences.

Numerics
--------
* inner integrals: trapezoid rule in ``y = s − μ`` on ``[−12, 2β + 12]`` with step
  ``0.2/max(1, β)``. The integrands are entire and Gaussian-decaying; ``e^{−t e^{βy}}`` is bounded
  in the strip ``|Im y| < π/(2β)``, so the rule's error is ``≈ e^{−π²/(βh)} ≈ 10^{−21}``;
* ``1 − φ`` is computed with ``expm1`` (``φ ≈ 1 − t E w`` for the small ``t`` that matter when
  ``L`` is large, and ``φ^L`` amplifies any error in ``log φ`` by ``L``); ``φ'`` likewise;
* outer integral: ``t = τ / Ŝ`` with ``Ŝ = E S``, trapezoid rule in ``u = log τ`` (the integrand
  is smooth in ``u`` and negligible at both ends; step 0.1), on a range found by a coarse scan
  that keeps every point above ``10^{−19}`` of the peak;
* everything is multiplied in log space (``R log φ_I + N log φ_N``).

The cost is independent of ``L``: about 1–2 ms per ``ρ`` for ``β ≲ 2``, 5 ms at ``β = 3``,
0.1 s at ``β = 12`` (the inner grid scales with ``β²``). Measured accuracy: ``2e-14`` relative
against tensor Gauss–Hermite quadrature for ``L <= 3``; refining either grid changes ``Φ`` by
``< 1e-15`` relative for ``R, N`` up to ``10^6`` (see tests/theory). Supported for ``β ≤ 12`` (standardised);
beyond that the tilted moments ``E e^{2βs}`` overflow, and for ``θ ≤ 10⁸`` (standardised: beyond,
float64 cannot resolve the scores ``θρ + y`` on the inner grid); ``ConfigError`` is raised
outside.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from ..config import ConfigError
from ..limits import MAX_EXACT_BETA_SIGMA

__all__ = ["phi_exact", "MAX_BETA"]

MAX_BETA = MAX_EXACT_BETA_SIGMA
#: the largest standardised ``θ``: the scores ``θρ + y`` must resolve the inner grid's step
#: (``≥ 0.017``) in float64 (``θ·2⁻⁵² ≤ 2·10⁻⁸``)
MAX_THETA = 1e8
_Y_PAD = 12.0
_H_U = 0.1
_U_LO, _U_HI, _H_COARSE = -24.0, 90.0, 0.5
_REL_CUT = 1e-19


@lru_cache(maxsize=32)
def _y_grid(beta: float) -> tuple[np.ndarray, np.ndarray]:
    """Nodes ``y`` and trapezoid weights × standard normal density."""
    h = 0.2 / max(1.0, beta)
    y = np.arange(-_Y_PAD, 2.0 * beta + _Y_PAD + h / 2, h)
    wts = h * np.exp(-0.5 * y * y) / math.sqrt(2.0 * math.pi)
    return y, wts


class _Class:
    """Per-token-class integrals at an array of ``t``: ``φ``, ``log φ`` and the tilted ratios
    ``r^g`` for ``g ∈ {w, w², ws, w²s²}``; with ``deriv`` also ``λ = φ'/φ`` and ``∂_μ r^g``."""

    def __init__(self, t: np.ndarray, mu: float, beta: float, deriv: bool, shift: float = 0.0):
        y, wts = _y_grid(beta)
        s = mu + y
        ly = beta * (s - shift)  # log w, every weight divided by e^{β·shift}
        tw = t[:, None] * np.exp(ly)[None, :]
        with np.errstate(over="ignore"):
            E = np.exp(-tw)  # (n_t, n_y)
            X = -np.expm1(-tw)  # 1 − e^{−tw}
        one_minus = X @ wts
        direct = E @ wts
        small = one_minus < 0.5
        with np.errstate(divide="ignore"):
            self.logphi = np.where(small, np.log1p(-np.minimum(one_minus, 0.5)),
                                   np.log(np.maximum(direct, 1e-300)))
            self.logphi = np.where(~small & (direct <= 0), -np.inf, self.logphi)
        phi = np.where(small, 1.0 - one_minus, direct)
        lw = np.log(wts)
        cols = [np.exp(ly + lw), np.exp(2 * ly + lw), s * np.exp(ly + lw), s * s * np.exp(2 * ly + lw)]
        C = np.stack(cols, axis=1)
        psi = E @ C  # (n_t, 4): w, w², ws, w²s²
        ok = phi > 0
        safe = np.where(ok, phi, 1.0)
        r = np.where(ok[:, None], psi / safe[:, None], 0.0)
        self.r_w, self.r_w2, self.r_ws, self.r_w2s2 = r.T
        if deriv:
            dphi = -(X @ (y * wts))  # E[y e^{−tw}] = −E[y (1 − e^{−tw})]
            lam = np.where(ok, dphi / safe, 0.0)
            dpsi = E @ (y[:, None] * C)
            dr = np.where(ok[:, None], dpsi / safe[:, None], 0.0) - r * lam[:, None]
            self.lam = lam
            self.d_w, self.d_w2, self.d_ws, self.d_w2s2 = dr.T


def _integrand(u: np.ndarray, S_hat: float, R: int, N: int, d: int, theta: float, beta: float,
               rho: float, deriv: bool, shift: float = 0.0) -> tuple[np.ndarray, np.ndarray | None]:
    """``dΦ/du`` (and ``d(dΦ/dρ)/du``) at ``u = log(t Ŝ)``; weights ``w = e^{β(s − shift)}``."""
    t = np.exp(u) / S_hat
    mu = theta * rho
    ci = _Class(t, mu, beta, deriv, shift)
    cn = _Class(t, 0.0, beta, False, shift) if N > 0 else None
    ell = R * ci.logphi + (N * cn.logphi if cn is not None else 0.0)
    c = theta * theta * (1.0 - rho * rho)
    zero = np.zeros_like(t)
    n_w2s2 = cn.r_w2s2 if cn is not None else zero
    n_ws = cn.r_ws if cn is not None else zero
    n_w2 = cn.r_w2 if cn is not None else zero
    tot_ws = R * ci.r_ws + N * n_ws
    mterm = R * ci.r_w2 + R * (R - 1) * ci.r_w ** 2
    K = (R * ci.r_w2s2 + N * n_w2s2 + tot_ws ** 2 - R * ci.r_ws ** 2 - N * n_ws ** 2
         + c * mterm + (d - 1) * (R * ci.r_w2 + N * n_w2))
    with np.errstate(under="ignore"):
        weight = np.where(np.isfinite(ell), t * t * np.exp(np.maximum(ell, -745.0)), 0.0)
    f = weight * K
    if not deriv:
        return f, None
    dK = (R * ci.d_w2s2 + 2.0 * tot_ws * R * ci.d_ws - 2.0 * R * ci.r_ws * ci.d_ws
          + c * (R * ci.d_w2 + 2.0 * R * (R - 1) * ci.r_w * ci.d_w)
          + (d - 1) * R * ci.d_w2)
    dmu = weight * (R * ci.lam * K + dK)
    df = theta * dmu - 2.0 * theta * theta * rho * weight * mterm
    return f, df


def _one(R: int, N: int, d: int, theta: float, beta: float, rho: float,
         deriv: bool) -> tuple[float, float]:
    # Φ = E[P/S²] is unchanged when every weight is divided by one constant e^{β·shift}; the
    # shift max(θρ, 0) keeps the largest typical weight near e^{β²/2} for any θρ (without it
    # S overflows once βθρ > 709). Φ' is taken at fixed shift, so its formula is unchanged.
    shift = max(theta * rho, 0.0)
    S_hat = (R * math.exp(beta * (theta * rho - shift) + 0.5 * beta * beta)
             + N * math.exp(-beta * shift + 0.5 * beta * beta))
    uc = np.arange(_U_LO, _U_HI + _H_COARSE / 2, _H_COARSE)
    fc, _ = _integrand(uc, S_hat, R, N, d, theta, beta, rho, False, shift)
    mag = np.abs(fc)
    top = float(mag.max()) if mag.size else 0.0
    if not (np.isfinite(top) and top > 0.0):
        raise ConfigError("method", "'exact' cannot evaluate Φ for this model (its quadrature "
                          f"found no finite mass at ρ = {rho:g}); use method='mc'", "exact")
    keep = np.nonzero(mag > _REL_CUT * top)[0]
    lo = uc[max(keep[0] - 2, 0)]
    hi = uc[min(keep[-1] + 2, uc.size - 1)]
    n = int(math.ceil((hi - lo) / _H_U)) + 1
    u = np.linspace(lo, hi, n)
    h = u[1] - u[0]
    f, df = _integrand(u, S_hat, R, N, d, theta, beta, rho, deriv, shift)
    # trapezoid: the ends are below 1e-19 of the peak
    phi = h * (f.sum() - 0.5 * (f[0] + f[-1]))
    dphi = h * (df.sum() - 0.5 * (df[0] + df[-1])) if deriv else float("nan")
    return float(phi), float(dphi)


def phi_exact(R: int, N: int, d: int, theta: float, beta: float, rho: np.ndarray,
              derivative: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """``Φ(ρ)`` and ``Φ'(ρ)`` of the standardised, fixed-sign model at every entry of ``rho``.

    R >= 1, N >= 0 token counts, d >= 2, theta >= 0, 0 < beta <= MAX_BETA; rho: array in
    [−1, 1] (any shape). Returns two arrays of ``rho``'s shape (``Φ'`` is NaN when
    ``derivative`` is False). Raises ``ConfigError`` for ``beta > MAX_BETA`` or
    ``theta > MAX_THETA``.
    """
    if beta > MAX_BETA:
        raise ConfigError("beta", f"method 'exact' needs beta*noise_std <= {MAX_BETA:g} "
                          "(use method='mc')", beta)
    if not theta <= MAX_THETA:
        raise ConfigError("theta/noise_std", f"must be <= {MAX_THETA:.0e} for method 'exact' "
                          "(its quadrature must resolve the scores θρ + σa in float64)", theta)
    rho = np.asarray(rho, dtype=np.float64)
    phi = np.empty(rho.shape)
    dphi = np.empty(rho.shape)
    for idx, r in np.ndenumerate(rho):
        phi[idx], dphi[idx] = _one(int(R), int(N), int(d), float(theta), float(beta), float(r),
                                   derivative)
    return phi, dphi
