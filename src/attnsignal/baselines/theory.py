"""``baseline_theory``: predicted ``E|ρ|`` of each baseline after ``k`` samples.

Notation (σ = 1 after standardising; :mod:`.base`): the per-sample token mean is
``m = ε c ξ + N(0, I/L)``, ``c = Rθ/(Lσ)``, and ``ℓ = c²L = (Rθ/σ)²/L`` is the signal-to-noise
ratio of one sample in the direction ``ξ``.

``mean``, fixed sign — **exact** (every ``k``, ``d``, ``L``). ``√(Lk)·m̄_k`` is
``√(kℓ) ξ + N(0, I)``, so ``ρ² = X/(X + Q)`` with ``X ~ χ'²_1(λ = kℓ)``, ``Q ~ χ²_{d−1}``: a
noncentral Beta. As a Poisson(``λ/2``) mixture of ``Beta(j + 1/2, (d−1)/2)`` and
``E√Beta(α, β) = Γ(α + ½)Γ(α + β)/(Γ(α)Γ(α + β + ½))``:

    E|ρ| = Σ_j Pois(j; λ/2) Γ(j + 1) Γ(j + d/2) / (Γ(j + ½) Γ(j + d/2 + ½)),

and ``1 − E|ρ| ≈ (d − 1)/(2kℓ)`` for ``kℓ ≫ d``.

``mean``, random sign — **exact**: given the sign sum ``S = Σ ε_t`` (``(S + k)/2`` is
Binomial(``k``, ½)), the same with ``λ = ℓ S²/k``; averaged over ``S``. It does not converge:
as ``k → ∞``, ``λ → ℓ Z²`` (``Z ~ N(0,1)``) — the alignment of a random direction drawn from
``N(0, diag(1 + ℓ, 1, …, 1))``, i.e. of a uniform direction when ``ℓ ≪ 1``.

``oracle`` — **exact**: the fixed-sign mean with ``ℓ → Rθ²/σ²`` (both variants).

``pca`` — **asymptotic** (BBP / spiked covariance; ``d, k → ∞`` with ``γ = d/k``): the
uncentred second moment ``E[m mᵀ] = c² ξξᵀ + I/L`` is a spike of strength ``ℓ``, and

    ρ² → (1 − γ/ℓ²)/(1 + γ/ℓ)   for γ < ℓ² (else 0),

the same in both sign variants (the second moment is even in ``ε``). For ``k ≫ d``:
``1 − |ρ| ≈ d(1 + ℓ)/(2kℓ²)``. Below the threshold the finite-``d`` value is ``O(d^{−1/2})``,
not 0; at ``k = 0`` we return the exact value of the initial guess.

``oja`` — **mean-field** recursion for ``x = 1 − ρ²`` (one step of the reduced update of
:mod:`.oja` expanded to ``O(η²)`` and averaged, ``λ1 = c² + 1/L``, ``λ2 = 1/L``, ``g = c²``):

    x_{k+1} = x_k − 2 η_k g x_k (1 − x_k) + η_k² κ(ρ_k),
    κ = ρ²λ1λ2(d−1) + s²λ2²(d+1) − s²[ρ²A4 + s²λ1λ2 + ρ²λ1λ2 + 3s²λ2² + (ρ²λ1 + s²λ2)(d−2)λ2]
        + 4s²[ρ⁴A4 + 6ρ²s²λ1λ2 + 3s⁴λ2²] − 12s²ρ²λ1λ2 − 12s⁴λ2²,

``s² = x``, ``A4 = E a⁴ = c⁴ + 6c²λ2 + 3λ2²``, *less* the fluctuation of ``ρ`` itself,
``E(Δρ)² = η² s²[s²ρ²(A4 − 2λ1λ2 + 3λ2²) + (s² − ρ²)² λ1λ2]``, which is carried instead by
an effective start: the escape from ``ρ ≈ 0`` is linear, ``ρ_{k+1} = (1 + η_k g) ρ_k +
η_k √(λ1λ2) ζ_k``, so its noise is a Gaussian added to the start,
``ρ_eff = ρ0 + N(0, Σ_j η_j² λ1λ2 / G_{j+1}²)``, ``G_j = Π_{i<j}(1 + η_i g)``, with
``ρ0² ~ Beta(1/2, (d−1)/2)``. ``E|ρ_k| ≈ E √(1 − x_k(ρ_eff))`` over :data:`OJA_STARTS`
quantiles of ``|ρ_eff|``. While ``η_k E‖m‖² > 2`` each step essentially resets ``q`` to the
direction of the sample it saw: the recursion starts after those steps, from the alignment of
one token mean. The runs that start near ``ξ^⊥`` are the slow ones (with
``η ∝ 1/k``, ``ρ`` grows like ``ρ_eff k/k0``), and this is what decides ``E|ρ|``. Assumes
``η_k ‖m‖²`` small; checked against simulation in ``tests/baselines/test_theory.py``. With ``η_k = a/(k + k0)``, ``a = 1/g``: ``1 − |ρ| ≈ (d−1)λ1λ2/(2g²k)``, PCA's.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit
from scipy.special import gammaln

from ..config import ModelConfig
from ..theory.escape import uniform_mean_abs
from ..validation import Integer, Predicate, validated
from .base import METHOD, MODEL, BaselineConfig, check_scales

#: Quantiles of the uniform start averaged over in Oja's mean-field prediction.
OJA_STARTS = 64

__all__ = ["baseline_theory", "mean_alignment_exact", "uniform_mean_abs", "pca_bbp"]


def _g(j: np.ndarray, d: int) -> np.ndarray:
    """``E√B`` for ``B ~ Beta(j + 1/2, (d − 1)/2)``."""
    return np.exp(gammaln(j + 1.0) + gammaln(j + d / 2.0) - gammaln(j + 0.5)
                  - gammaln(j + d / 2.0 + 0.5))




def _noncentral_mean_abs(lam: np.ndarray, d: int) -> np.ndarray:
    """``E√B``, ``B ~`` noncentral ``Beta(1/2, (d−1)/2; λ)``, for each ``λ`` (Poisson mixture)."""
    lam = np.atleast_1d(np.asarray(lam, dtype=np.float64))
    big = lam > _LAM_ASYMPTOTIC
    if big.any():  # the Poisson window (~24 √(λ/2) terms) would not fit: the expansion
        out = np.empty(lam.shape)
        out[big] = _noncentral_mean_abs_large(lam[big], d)
        if (~big).any():
            out[~big] = _noncentral_mean_abs(lam[~big], d)
        return out
    mu = lam / 2.0
    jmax = int(mu.max() + 12.0 * np.sqrt(mu.max()) + 41.0) if lam.size else 0
    if lam.size > 1 and lam.size * jmax <= 4_000_000:  # many small λ: one matrix
        j = np.arange(jmax, dtype=np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            logw = -mu[:, None] + j[None, :] * np.log(mu)[:, None] - gammaln(j + 1.0)[None, :]
        logw[mu == 0, :] = -np.inf
        logw[mu == 0, 0] = 0.0
        return np.exp(logw) @ _g(j, d)
    out = np.empty(lam.shape)
    for i, lm in np.ndenumerate(lam):
        mu = lm / 2.0
        w = 12.0 * np.sqrt(mu) + 40.0
        j = np.arange(max(0, int(mu - w)), int(mu + w) + 1, dtype=np.float64)
        logw = -mu + j * np.log(mu) - gammaln(j + 1.0) if mu > 0 else np.where(j == 0, 0.0, -np.inf)
        out[i] = np.sum(np.exp(logw) * _g(j, d))
    return out


#: Above this ``λ`` the mixture's Poisson sum (whose log-weights lose ~1e-8 to rounding
#: there) is replaced by the expansion of :func:`_noncentral_mean_abs_large`.
_LAM_ASYMPTOTIC = 1e7


def _noncentral_mean_abs_large(lam: np.ndarray, d: int) -> np.ndarray:
    """``E√B`` for ``λ > 10^7``: with ``B = X/(X + Y)``, ``X ~ χ²_1(λ)``, ``Y ~ χ²_{d−1}``,
    ``√B = 1 − Y/(2X) + O((Y/X)²)`` and ``E[Y/X] = (d − 1)/λ (1 + O(1/λ))``, so
    ``E√B = 1 − (d − 1)/(2λ)`` to ``O((d/λ)²)``. Refuses (ConfigError naming ``d``) a
    dimension within ``10^{-3} λ``, where that error would exceed ``10^{-6}``."""
    if (d - 1) > 1e-3 * lam.min():
        from ..validation import ConfigError

        raise ConfigError("d", f"must be below 10^-3 λ = {1e-3 * lam.min():.3g} for the "
                          "baselines' theory at this signal-to-noise ratio (λ > 10^7)", d)
    return 1.0 - (d - 1) / (2.0 * lam)


def mean_alignment_exact(d: int, ell: float, k: np.ndarray, random_sign: bool = False
                         ) -> np.ndarray:
    """Exact ``E|ρ|`` of the running token mean after ``k`` samples (see the module)."""
    k = np.atleast_1d(np.asarray(k, dtype=np.int64))
    out = np.empty(k.shape, dtype=np.float64)
    for i, kk in np.ndenumerate(k):
        if kk == 0:
            out[i] = uniform_mean_abs(d)
        elif not random_sign:
            out[i] = _noncentral_mean_abs(np.array([kk * ell]), d)[0]
        else:
            w = 12.0 * np.sqrt(kk) + 10
            b = np.arange(max(0, int(kk / 2 - w / 2)), min(kk, int(kk / 2 + w / 2)) + 1)
            logp = (gammaln(kk + 1.0) - gammaln(b + 1.0) - gammaln(kk - b + 1.0)
                    - kk * np.log(2.0))
            S = 2.0 * b - kk
            lam = ell * S * S / kk
            # many sign sums share a value of λ: evaluate each distinct one once
            ul, inv = np.unique(lam, return_inverse=True)
            out[i] = float(np.sum(np.exp(logp) * _noncentral_mean_abs(ul, d)[inv]))
    return out


def pca_bbp(d: int, ell: float, k: np.ndarray) -> np.ndarray:
    """BBP limit of ``|ρ|`` for the top eigenvector after ``k >= 1`` samples."""
    gam = d / np.asarray(k, dtype=np.float64)
    r2 = (1.0 - gam / ell ** 2) / (1.0 + gam / ell)
    return np.sqrt(np.clip(r2, 0.0, 1.0))


def oja_kappa_coefficients(c: float, lam2: float, d: int) -> tuple[float, float, float, float]:
    """``(p0, p1, p2, p3)`` with ``κ(x) = p0 + p1 x + p2 x² + p3 x³`` (``x = s² = 1 − ρ²``): the
    module's ``κ`` plus ``E(Δρ)²/η²``, expanded in ``x`` with ``g = c²``, ``λ1 = g + λ2``,
    ``A4 = g² + 6gλ2 + 3λ2²`` substituted (the ``x³`` coefficient ``3(A4 − 6λ1λ2 + 3λ2²)`` is
    ``3g²`` exactly, so no cancellation is left to round)."""
    g = c * c
    return ((g + lam2) * lam2 * (d - 1),
            3.0 * g * g + 9.0 * g * lam2 + lam2 * lam2 - d * lam2 * (2.0 * g + lam2),
            -6.0 * g * g - 8.0 * g * lam2 + d * g * lam2,
            3.0 * g * g)


@njit(cache=True)
def _oja_meanfield(etas: np.ndarray, x0: np.ndarray, g: float, p0: float, p1: float, p2: float,
                   p3: float, out_at: np.ndarray) -> np.ndarray:
    """``x_k`` of the recursion ``x ← clip(x − 2ηg x(1 − x) + η² κ(x), 0, 1)`` from every start
    in ``x0`` at once (their updates are independent: the inner loop over starts vectorises),
    recorded at the sorted step counts ``out_at``: an ``(x0.size, out_at.size)`` array."""
    n = x0.size
    out = np.empty((n, out_at.size))
    x = np.empty(n)
    for i in range(n):  # explicit loops, no array expressions: they triple the compile time
        x[i] = x0[i]
    j = 0
    for k in range(etas.size + 1):
        while j < out_at.size and out_at[j] == k:
            for i in range(n):
                out[i, j] = x[i]
            j += 1
        if k == etas.size:
            break
        eta = etas[k]
        a = 2.0 * eta * g
        b = eta * eta
        for i in range(n):
            xi = x[i]
            kap = p0 + xi * (p1 + xi * (p2 + xi * p3))
            xi = xi - a * xi * (1.0 - xi) + b * kap
            x[i] = min(1.0, max(0.0, xi))
    return out


def _quantiles(values: np.ndarray, n: int) -> np.ndarray:
    v = np.sort(values.ravel())
    return v[(np.arange(n) * v.size) // n + v.size // (2 * n)]


def _oja_start(kstar: int, c: float, lam2: float, d: int) -> np.ndarray:
    """:data:`OJA_STARTS` quantiles of ``|ρ|`` where the recursion starts: the uniform start
    (``kstar = 0``), or — after steps so large that each resets ``q`` to the direction of the
    sample it saw — the alignment of one token mean, ``|√ℓ + Z|/√((√ℓ + Z)² + χ²_{d−1})``."""
    from scipy.stats import beta, chi2, norm

    n = OJA_STARTS
    p = (np.arange(n) + 0.5) / n
    if kstar == 0:
        return np.sqrt(beta.ppf(p, 0.5, (d - 1) / 2.0))
    y = np.abs(np.sqrt(c * c / lam2) + norm.ppf(p))
    q = chi2.ppf(p, d - 1)
    return _quantiles(y[:, None] / np.sqrt(y[:, None] ** 2 + q[None, :]), n)


def _oja_effective_start(etas: np.ndarray, r0: np.ndarray, c: float, lam2: float
                         ) -> np.ndarray:
    """Quantiles of ``ρ_eff²``, ``ρ_eff = ρ0 + N(0, v)``: the escape from ``ρ ≈ 0`` is linear,
    ``ρ_{k+1} = (1 + η_k g) ρ_k + η_k √(λ1 λ2) ζ_k``, so its noise acts as a Gaussian
    addition to the start, ``v = Σ_j η_j² λ1 λ2 / G_{j+1}²``, ``G_j = Π_{i<j} (1 + η_i g)``."""
    from scipy.stats import norm

    g, lam1 = c * c, c * c + lam2
    logG = np.cumsum(np.log1p(etas * g))
    v = float(np.sum(etas ** 2 * lam1 * lam2 * np.exp(-2.0 * logG)))
    n = r0.size
    z = norm.ppf((np.arange(n) + 0.5) / n) * np.sqrt(v)
    return np.minimum(_quantiles(np.abs(r0[:, None] + z[None, :]), n), 1.0) ** 2


def _oja_prediction(etas: np.ndarray, c: float, lam2: float, d: int, order: np.ndarray
                    ) -> np.ndarray:
    """Mean-field ``E|ρ_k|`` at the sorted sample counts ``order`` (see the module)."""
    big = etas * (c * c + d * lam2) > 2.0  # η E‖m‖² > 2: far beyond the O(η²) expansion
    kstar = int(np.argmin(big)) if not big.all() else etas.size
    r0 = _oja_start(kstar, c, lam2, d)
    out = np.full(order.size, float(r0.mean()))
    late = order >= kstar
    if late.any():
        tail = etas[kstar:]
        x0 = 1.0 - _oja_effective_start(tail, r0, c, lam2)
        x = _oja_meanfield(tail, x0, c * c, *oja_kappa_coefficients(c, lam2, d),
                           order[late] - kstar)
        out[late] = np.sqrt(1.0 - x).mean(axis=0)
    return out


def _sample_counts(v: Any) -> bool:
    arr = np.asarray(v)
    return arr.size > 0 and all(Integer(ge=0).accepts(x) for x in arr.ravel().tolist())


#: numbers of samples: one integer >= 0 or an array of them
SAMPLES = Predicate(_sample_counts, "must be an integer >= 0 or an array of integers >= 0",
                    examples=(10, [0, 10]), counterexamples=(-1, 1.5, [], "x", [1, -2]))


@validated(model=MODEL, method=METHOD, samples=SAMPLES)
def baseline_theory(model: ModelConfig, method: str, samples: Any, *, step: Any = None
                    ) -> np.ndarray:
    """Predicted ``E|ρ|`` of ``method`` after each number of samples in ``samples``.

    Exact for ``mean`` and ``oracle`` (both sign variants), the BBP limit for ``pca``, a
    mean-field recursion for ``oja`` (with ``step``; None: Oja's default schedule). See the
    module docstring for the formulas and where each holds. Returns an array shaped like
    ``samples``. Raises ``ConfigError`` for a bad method, negative or non-integer samples,
    or a ``step`` for a method other than ``oja``.
    """
    from .runner import _check_step

    ks = np.asarray(samples).astype(np.int64)
    check_scales(model)
    step = _check_step(method, model, step)
    d, L = model.d, model.n_tokens
    c = model.n_informative * model.theta / (L * model.noise_std)
    ell = c * c * L
    if method == "mean":
        out = mean_alignment_exact(d, ell, ks.ravel(), model.signal_sign == "random")
    elif method == "oracle":
        out = mean_alignment_exact(d, model.n_informative * (model.theta / model.noise_std) ** 2,
                                   ks.ravel())
    elif method == "pca":
        flat = ks.ravel()
        out = np.where(flat == 0, uniform_mean_abs(d), pca_bbp(d, ell, np.maximum(flat, 1)))
    else:
        flat = ks.ravel()
        order = np.unique(flat)
        etas = BaselineConfig("oja", step).etas(0, int(order[-1])) * model.noise_std ** 2
        out = _oja_prediction(etas, c, 1.0 / L, d, order)[np.searchsorted(order, flat)]
        out = np.where(flat == 0, uniform_mean_abs(d), out)
    return np.asarray(out, dtype=np.float64).reshape(ks.shape)
