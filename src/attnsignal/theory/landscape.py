"""The population objective on the sphere as a function of the alignment: ``Φ(ρ) = J(q)`` for
unit ``q`` with ``<q, ξ> = ρ`` (docs/model.md#the-population-objective), and ``Φ'(ρ)``.

Three methods (all exact reductions of the same quantity):

``"exact"``       finite ``R, N`` by one-dimensional quadrature (:mod:`.exact`), ~1e-12 relative,
                  about a millisecond per point whatever ``L``;
``"mc"``          Monte Carlo over ``a ~ N(0, I_L)`` with pathwise ``Φ'`` and standard errors,
                  common random numbers across the grid (:mod:`.landscape_mc`);
``"asymptotic"``  the ``R, N → ∞`` closed form ``Φ∞`` (:mod:`.asymptotic`), error ``O(1/L)``.

Two reductions apply to every method:

* ``σ ≠ 1``: with ``x' = x/σ`` the model ``(θ, σ, β)`` has ``J = σ² J'`` for ``(θ/σ, 1, βσ)``, so
  ``Φ = σ² Φ_std`` and ``Φ' = σ² Φ_std'`` (``ρ`` is unchanged).
* range: ``θ/σ`` above :data:`MAX_THETA_OVER_SIGMA` is refused (``Φ`` grows like ``θ²``); a
  value that still comes out non-finite (e.g. the closed form's ``e^{(βσ)²}`` at ``βσ = 30``)
  raises ``ConfigError`` naming a method that works — never a silent inf or NaN.
* random sign (``signal_sign="random"``): a sample with ``ε = −1`` is a sample of the fixed-sign
  model with latent direction ``−ξ``, whose alignment is ``−ρ``. Hence
  ``Φ_rand(ρ) = ½[Φ(ρ) + Φ(−ρ)]`` (even) and ``Φ_rand'(ρ) = ½[Φ'(ρ) − Φ'(−ρ)]`` (odd, zero at 0).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..config import ConfigError, ModelConfig
from ..limits import check_memory, check_work
from ._checks import METHOD, METHODS, MODEL, N_SAMPLES, RHO, SEED, validated
from .asymptotic import phi_asymptotic
from .exact import MAX_BETA, phi_exact
from .landscape_mc import mc_bytes, mc_work, phi_mc

__all__ = ["Landscape", "landscape", "METHODS", "MAX_THETA_OVER_SIGMA", "default_method",
           "check_mc_size", "require_finite"]

#: The theory refuses ``θ/σ`` above this (``Φ ~ θ²`` and its square terms must fit in float64).
MAX_THETA_OVER_SIGMA = 1e100


def default_method(model: ModelConfig) -> str:
    """``"exact"`` where it applies (``βσ <= 12``), else ``"mc"`` — what the ODE, fixed
    points and verdict use when no method is given."""
    return "exact" if model.beta * model.noise_std <= MAX_BETA else "mc"


def _check_range(model: ModelConfig) -> None:
    ratio = model.theta / model.noise_std
    if not ratio <= MAX_THETA_OVER_SIGMA:
        raise ConfigError("theta/noise_std", f"must be <= {MAX_THETA_OVER_SIGMA:g} for the theory "
                          "(Φ grows like θ², and its squares must fit in float64)", ratio)


def check_mc_size(model: ModelConfig, n_samples: int, n_rho: int = 1) -> None:
    """Refuse a Monte-Carlo ``Φ`` that cannot fit in memory or finish: ConfigError with the
    estimate (one draw of ``L`` normals at least; ``n_samples × (L + n_rho)`` operations)."""
    L = model.n_tokens
    check_memory("model.n_nuisance", mc_bytes(L), f"one Monte-Carlo draw of L = {L} token scores", L)
    check_work("n_samples", mc_work(L, n_samples, n_rho),
               f"n_samples × (L + grid) for method 'mc' (L = {L})", n_samples)


def require_finite(model: ModelConfig, method: str, rho: np.ndarray, *arrays: np.ndarray) -> None:
    """Raise ConfigError if any value is not finite, naming ``method`` and what to use."""
    bad = np.zeros(np.shape(rho), dtype=bool)
    for a in arrays:
        bad |= ~np.isfinite(a)
    if not bad.any():
        return
    at = float(np.asarray(rho)[bad].flat[0])
    bs = model.beta * model.noise_std
    if method == "asymptotic":
        other = "use method='exact'" if bs <= MAX_BETA else "use method='mc'"
        why = (f"its e^(βσ)² = e^{bs * bs:.4g} term overflows float64 at ρ = {at:g} (the closed "
               f"form is only valid for L ≫ e^(βσ)² anyway); {other}")
    else:
        why = (f"Φ or Φ' is not finite at ρ = {at:g} (a value beyond float64); no method can "
               "represent it — lower theta/noise_std or beta")
    raise ConfigError("method", f"{method!r} cannot be used here: {why}", method)


@dataclass(frozen=True, eq=False)
class Landscape:
    """``Φ`` and ``Φ'`` on a grid of alignments.

    rho : array (the shape of the input; a scalar gives 0-d arrays)
    phi, dphi : ``Φ(ρ)``, ``Φ'(ρ)``, same shape
    phi_stderr, dphi_stderr : Monte-Carlo standard errors (``"mc"`` only, else None)
    method : "exact" | "mc" | "asymptotic";  model : the ModelConfig;  n_samples : draws (mc)
    """

    rho: np.ndarray
    phi: np.ndarray
    dphi: np.ndarray
    method: str
    model: ModelConfig
    phi_stderr: np.ndarray | None = None
    dphi_stderr: np.ndarray | None = None
    n_samples: int | None = None

    @property
    def field(self) -> np.ndarray:
        """The ODE vector field ``(1 − ρ²) Φ'(ρ)``."""
        return (1.0 - self.rho ** 2) * self.dphi

    def to_frame(self) -> pd.DataFrame:
        """Tidy frame: rho, phi, dphi, field (+ stderr columns for mc), method."""
        cols: dict[str, Any] = {
            "rho": np.ravel(self.rho), "phi": np.ravel(self.phi),
            "dphi": np.ravel(self.dphi), "field": np.ravel(self.field),
        }
        if self.phi_stderr is not None:
            cols["phi_stderr"] = np.ravel(self.phi_stderr)
            cols["dphi_stderr"] = np.ravel(self.dphi_stderr)
        df = pd.DataFrame(cols)
        df["method"] = self.method
        return df


def _standard(model: ModelConfig) -> tuple[int, int, int, float, float, float]:
    m = model.standardized()
    with np.errstate(over="ignore"):  # σ² = inf for σ > 1e154: the values come out inf and
        s2 = float(np.float64(model.noise_std) ** 2)  # are refused by require_finite
    return (model.n_informative, model.n_nuisance, model.d, m.theta, m.beta, s2)


def _deterministic(fn, model: ModelConfig, rho: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    R, N, d, th, be, s2 = _standard(model)
    with np.errstate(over="ignore", invalid="ignore"):  # non-finite values are reported below
        phi, dphi = fn(R, N, d, th, be, rho)
        if model.signal_sign == "random":
            phm, dphm = fn(R, N, d, th, be, -rho)
            phi, dphi = 0.5 * (phi + phm), 0.5 * (dphi - dphm)
        return s2 * phi, s2 * dphi


@validated(model=MODEL, rho=RHO, method=METHOD, n_samples=N_SAMPLES, seed=SEED)
def landscape(model: ModelConfig, rho: Any, method: str = "exact", *,
              n_samples: int = 100_000, seed: int = 0) -> Landscape:
    """``Φ(ρ)`` and ``Φ'(ρ)`` at the alignments ``rho`` (scalar or array in ``[−1, 1]``).

    Parameters
    ----------
    model : ModelConfig
    rho : number or array of numbers in [−1, 1]
    method : "exact" (default) | "mc" | "asymptotic"
    n_samples : int >= 2, draws of ``a`` for "mc" (shared by all grid points)
    seed : int >= 0, seed of the "mc" draws

    Returns
    -------
    Landscape (for "mc" with ``phi_stderr`` and ``dphi_stderr``).

    Raises
    ------
    ConfigError (ValueError): ``rho`` outside ``[−1, 1]`` or not finite, unknown ``method``,
    bad ``n_samples``/``seed``, ``β σ > 12`` with method "exact", ``θ/σ > 1e100``, a
    Monte-Carlo size that cannot fit in memory or finish (the estimate is in the message), or
    a value that would not be finite (the message names a method that works).

    Examples
    --------
    >>> import numpy as np
    >>> from attnsignal import ModelConfig
    >>> m = ModelConfig(d=20, n_informative=10, n_nuisance=40, theta=1.0)
    >>> ls = landscape(m, [-0.5, 0.0, 0.5])
    >>> bool(np.allclose(ls.field, (1 - ls.rho ** 2) * ls.dphi))   # the ODE's right-hand side
    True
    >>> flat = landscape(m.replace(theta=0.0), [-0.5, 0.5])     # no signal: Φ does not depend on ρ
    >>> bool(np.allclose(flat.phi, flat.phi[0], rtol=1e-12)), bool(np.allclose(flat.dphi, 0))
    (True, True)
    >>> big = landscape(m.replace(n_informative=10_000, n_nuisance=40_000), 0.5)
    >>> asy = landscape(m.replace(n_informative=10_000, n_nuisance=40_000), 0.5, "asymptotic")
    >>> bool(abs(big.phi - asy.phi) < 1e-3 * big.phi)   # the large-R, N limit
    True
    """
    r = rho
    _check_range(model)
    se_phi = se_dphi = None
    used = None
    if method == "asymptotic":
        phi, dphi = _deterministic(phi_asymptotic, model, r)
    elif method == "exact":
        phi, dphi = _deterministic(phi_exact, model, r)
    else:
        used = n_samples
        check_mc_size(model, used, r.size)
        R, N, d, th, be, s2 = _standard(model)
        phi, dphi, se_phi, se_dphi = phi_mc(R, N, d, th, be, r.ravel(), used, seed,
                                            random_sign=model.signal_sign == "random")
        with np.errstate(over="ignore", invalid="ignore"):  # checked by require_finite
            phi, dphi = s2 * phi.reshape(r.shape), s2 * dphi.reshape(r.shape)
            se_phi, se_dphi = s2 * se_phi.reshape(r.shape), s2 * se_dphi.reshape(r.shape)
    require_finite(model, method, r, phi, dphi)
    return Landscape(rho=r, phi=phi, dphi=dphi, method=method, model=model,
                     phi_stderr=se_phi, dphi_stderr=se_dphi, n_samples=used)
