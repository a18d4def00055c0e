"""The mean-field vector field ``E[ξ·g_R] = (1 − ρ²) Φ'(ρ)`` and fast interpolants of ``Φ'``, ``Φ``.

:func:`vector_field` evaluates the field directly from :func:`~.landscape.landscape`.
:func:`dphi_interpolant` gives a callable ``Φ'`` for ODE solvers: the closed form for
``"asymptotic"``; for ``"exact"`` (and ``"mc"`` with common random numbers, which makes the
estimate a smooth function of ``ρ``) a Chebyshev interpolant on ``[−1, 1]`` whose degree is raised
(64, 128, 256, 512) until the last coefficients fall below ``1e-13`` of the largest — ``Φ'`` is
analytic in ``ρ``, so this reproduces the direct evaluation to ~1e-13 relative. Cached per
``(model, method, n_samples, seed)``.

:func:`phi_interpolant` gives ``Φ`` from the same interpolant, with no further quadrature:
``Φ(ρ) = Φ(−1) + ∫_{−1}^{ρ} Φ'(r) dr``, the integral taken exactly on the Chebyshev series (its
antiderivative is again one), ``Φ(−1)`` evaluated directly. Its error is at most ``2 ×`` the
interpolant's, times the interval's length: ~1e-13 of ``max |Φ'|``.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Callable

import numpy as np
from numpy.polynomial import Chebyshev

from ..config import ModelConfig
from ._checks import METHOD, MODEL, N_SAMPLES, SEED, validated
from .landscape import landscape

__all__ = ["vector_field", "dphi_interpolant", "phi_interpolant"]


@validated(model=MODEL, method=METHOD)
def vector_field(model: ModelConfig, rho: Any, method: str = "exact", *,
                 n_samples: int = 100_000, seed: int = 0) -> np.ndarray:
    """``(1 − ρ²) Φ'(ρ)`` at ``rho`` (scalar or array in [−1, 1]); an array of ``rho``'s shape.

    This is the mean drift ``E[ξ·g_R]`` of one SGA step per unit step size, and the right-hand
    side of the limiting ODE ``dρ/dt = (1 − ρ²) Φ'(ρ)``. Raises ``ConfigError`` as
    :func:`landscape`.
    """
    return landscape(model, rho, method, n_samples=n_samples, seed=seed).field


@lru_cache(maxsize=64)
def _chebyshev(model: ModelConfig, method: str, n_samples: int, seed: int) -> tuple[Chebyshev, float]:
    """The Chebyshev interpolant of ``Φ'`` on ``[−1, 1]`` and ``Φ(−1)`` (``"exact"``, ``"mc"``)."""

    def f(x: np.ndarray) -> np.ndarray:
        return landscape(model, np.clip(x, -1.0, 1.0), method, n_samples=n_samples,
                         seed=seed).dphi

    degs = (64,) if method == "mc" else (64, 128, 256, 512)
    # a flat landscape (Φ' at round-off, e.g. θ = 0) has noise for coefficients: the tail is
    # also converged when it is at the round-off of Φ' (1e-14 |Φ|), whatever the largest is
    ends = landscape(model, np.array([-1.0, 1.0]), method, n_samples=n_samples, seed=seed).phi
    phi_scale = float(np.max(np.abs(ends)))
    for deg in degs:
        cheb = Chebyshev.interpolate(f, deg)
        c = np.abs(cheb.coef)
        if c[-8:].max() <= max(1e-13 * c.max(), 1e-14 * phi_scale, 1e-300):
            break
    return cheb, float(ends[0])


@validated(model=MODEL, method=METHOD, n_samples=N_SAMPLES, seed=SEED)
def dphi_interpolant(model: ModelConfig, method: str = "exact", *, n_samples: int = 20_000,
                     seed: int = 0) -> Callable[[np.ndarray], np.ndarray]:
    """A vectorised callable ``ρ ↦ Φ'(ρ)`` on ``[−1, 1]`` (see the module docstring)."""
    if method == "asymptotic":
        return lambda r: landscape(model, r, "asymptotic").dphi
    cheb, _ = _chebyshev(model, method, int(n_samples), seed)
    return lambda r: cheb(np.asarray(r, dtype=np.float64))


@validated(model=MODEL, method=METHOD, n_samples=N_SAMPLES, seed=SEED)
def phi_interpolant(model: ModelConfig, method: str = "exact", *, n_samples: int = 20_000,
                    seed: int = 0) -> Callable[[np.ndarray], np.ndarray]:
    """A vectorised callable ``ρ ↦ Φ(ρ)`` on ``[−1, 1]``: ``Φ(−1) + ∫_{−1}^{ρ} Φ'``, the
    integral of :func:`dphi_interpolant`'s Chebyshev series taken exactly (the closed form for
    ``"asymptotic"``). Raises ``ConfigError`` as :func:`~.landscape.landscape`."""
    if method == "asymptotic":
        return lambda r: landscape(model, r, "asymptotic").phi
    cheb, phi_lo = _chebyshev(model, method, int(n_samples), seed)
    prim = cheb.integ(lbnd=-1.0, k=phi_lo)
    return lambda r: prim(np.asarray(r, dtype=np.float64))
