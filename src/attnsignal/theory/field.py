"""The mean-field vector field ``E[ξ·g_R] = (1 − ρ²) Φ'(ρ)`` and a fast interpolant of ``Φ'``.

:func:`vector_field` evaluates the field directly from :func:`~.landscape.landscape`.
:func:`dphi_interpolant` gives a callable ``Φ'`` for ODE solvers: the closed form for
``"asymptotic"``; for ``"exact"`` (and ``"mc"`` with common random numbers, which makes the
estimate a smooth function of ``ρ``) a Chebyshev interpolant on ``[−1, 1]`` whose degree is raised
(64, 128, 256, 512) until the last coefficients fall below ``1e-13`` of the largest — ``Φ'`` is
analytic in ``ρ``, so this reproduces the direct evaluation to ~1e-13 relative. Cached per
``(model, method, n_samples, seed)``.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Callable

import numpy as np
from numpy.polynomial import Chebyshev

from ..config import ModelConfig
from ._checks import METHOD, MODEL, N_SAMPLES, SEED, validated
from .landscape import landscape

__all__ = ["vector_field", "dphi_interpolant"]


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
def _interp(model: ModelConfig, method: str, n_samples: int, seed: int) -> Callable[[np.ndarray], np.ndarray]:
    if method == "asymptotic":
        return lambda r: landscape(model, r, "asymptotic").dphi

    def f(x: np.ndarray) -> np.ndarray:
        return landscape(model, np.clip(x, -1.0, 1.0), method, n_samples=n_samples,
                         seed=seed).dphi

    degs = (64,) if method == "mc" else (64, 128, 256, 512)
    # a flat landscape (Φ' at round-off, e.g. θ = 0) has noise for coefficients: the tail is
    # also converged when it is at the round-off of Φ' (1e-14 |Φ|), whatever the largest is
    phi_scale = float(np.max(np.abs(landscape(model, np.array([-1.0, 1.0]), method,
                                              n_samples=n_samples, seed=seed).phi)))
    for deg in degs:
        cheb = Chebyshev.interpolate(f, deg)
        c = np.abs(cheb.coef)
        if c[-8:].max() <= max(1e-13 * c.max(), 1e-14 * phi_scale, 1e-300):
            break
    return lambda r: cheb(np.asarray(r, dtype=np.float64))


@validated(model=MODEL, method=METHOD, n_samples=N_SAMPLES, seed=SEED)
def dphi_interpolant(model: ModelConfig, method: str = "exact", *, n_samples: int = 20_000,
                     seed: int = 0) -> Callable[[np.ndarray], np.ndarray]:
    """A vectorised callable ``ρ ↦ Φ'(ρ)`` on ``[−1, 1]`` (see the module docstring)."""
    return _interp(model, method, int(n_samples), int(seed))
