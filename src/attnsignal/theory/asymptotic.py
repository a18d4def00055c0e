"""Large-``R, N`` limit ``Φ∞(ρ)`` in closed form, with its analytic derivative
(docs/model.md#the-population-objective).

Standardised model (``σ = 1``), fixed sign. With ``u = e^{βθρ}`` and ``p = R u/(R u + N)``
(the limiting informative mass),

    Φ∞(ρ)  = (β + pθρ)² + p²θ²(1 − ρ²) + (d − 1) e^{β²} (R u² + N)/(R u + N)²,

    Φ∞'(ρ) = 2(β + pθρ) θ (p + ρ p') + θ² [2 p p'(1 − ρ²) − 2ρ p²]
             + (d − 1) e^{β²} · 2βθ p(1 − p)(u − 1)/(R u + N),      p' = βθ p(1 − p).

Derivation: by the law of large numbers ``S/L``, ``Σ w s/L`` and ``Σ w²/L`` converge to their
means, with ``E e^{βs} = e^{βμ + β²/2}``, ``E s e^{βs} = (μ + β) e^{βμ + β²/2}`` and
``E e^{2βs} = e^{2βμ + 2β²}`` for ``s ~ N(μ, 1)``; so ``A → β + pθρ``, ``m → p`` and
``L·n² → L e^{β²}(R u² + N)/(R u + N)²``. The finite-size error is ``O(1/L)``.

Validity: the ratio ``Σ w²/S²`` concentrates only when ``L ≫ e^{β²}`` (``Var w/(E w)² = e^{β²} − 1``
per token). Against the exact quadrature (d = 10, R = L/10, θ = 0.5, ρ = 0.3) the relative error
is ``≈ c e^{β²}/L`` with ``c`` between 0.6 and 1.9 for ``β ∈ {1.5, 2}``, ``L = 10²…10⁵`` — so at
``β = 3`` the limit needs ``L ≫ 8 100`` and at ``β = 13`` ``L ≫ 10⁷³``.
:func:`asymptotic_reliability` returns ``L e^{−β²}``; below ~10 the closed form is not a good
approximation of the finite-size ``Φ``.
"""

from __future__ import annotations

import numpy as np
from scipy.special import log_expit

__all__ = ["asymptotic_reliability", "phi_asymptotic"]


def phi_asymptotic(R: int, N: int, d: int, theta: float, beta: float,
                   rho: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(Φ∞(ρ), Φ∞'(ρ))`` for the standardised fixed-sign model; arrays of ``rho``'s shape.

    Evaluated without intermediate overflow: with ``x = βθρ``, every ratio of ``u = e^x`` is
    divided by its largest power of ``u`` first (``p``, ``1 − p``, ``(Ru² + N)/(Ru + N)²`` and
    ``(u − 1)/(Ru + N)`` stay finite for any ``x``), and ``e^{β²}`` enters through
    ``exp(β² + log q)``. An entry whose true value exceeds the float64 range comes out as
    ``±inf``; :func:`attnsignal.theory.landscape` turns that into a ``ConfigError``.
    """
    rho = np.asarray(rho, dtype=np.float64)
    bt = beta * theta
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        x = bt * rho
        pos = x > 0
        e1 = np.exp(-np.abs(x))  # e^{−|x|} in (0, 1]
        if N > 0:
            z = x + np.log(R / N)
            log_p, log_omp = log_expit(z), log_expit(-z)  # log p, log(1 − p)
            # (R u² + N)/(R u + N)² and (u − 1)/(R u + N), divided by u² resp. u when x > 0
            q = np.where(pos, (R + N * e1 * e1) / (R + N * e1) ** 2,
                         (R * e1 * e1 + N) / (R * e1 + N) ** 2)
            g = np.where(pos, -np.expm1(-np.abs(x)) / (R + N * e1),
                         np.expm1(-np.abs(x)) / (R * e1 + N))
            absg = np.abs(g)
            # 2βθ p(1 − p) e^{β²} (u − 1)/(Ru + N), all factors multiplied in log space
            last = np.where(absg > 0, np.sign(g) * 2.0 * bt * np.exp(
                log_p + log_omp + beta * beta + np.log(np.where(absg > 0, absg, 1.0))), 0.0)
            p, omp = np.exp(log_p), np.exp(log_omp)
        else:
            p = np.ones_like(rho)
            omp = np.zeros_like(rho)
            q = np.full_like(rho, 1.0 / R)
            last = np.zeros_like(rho)  # p(1 − p) = 0
        A = beta + p * theta * rho
        phi = A * A + p * p * theta * theta * (1.0 - rho * rho) + (d - 1) * np.exp(beta * beta + np.log(q))
        dp = bt * p * omp
        dphi = (2.0 * A * theta * (p + rho * dp)
                + theta * theta * (2.0 * p * dp * (1.0 - rho * rho) - 2.0 * rho * p * p)
                + (d - 1) * last)
    return phi, dphi


def asymptotic_reliability(R: int, N: int, beta: float) -> float:
    """``L e^{−β²}`` (``L = R + N``, ``β`` standardised): how far inside the large-``L`` regime.

    The closed form's relative error is about ``e^{β²}/L``, the reciprocal of this number; values
    below ~10 mean the limit is not a good approximation of the finite-size ``Φ`` (see the module
    docstring).
    """
    return float((R + N) * np.exp(-min(beta * beta, 700.0)))
