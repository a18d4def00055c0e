"""Monte-Carlo drift, gradient variance and the finite-step correction
(docs/theory.md#the-second-order-term).

All estimates come from the reduced sampler of :mod:`.reduced`, independent of
the quadrature behind :func:`landscape`. Per sample at alignment ``ρ`` (``s = √(1 − ρ²)``):
``g = g_q q + g_e e + u``, ``g_R = g_e e + u`` and ``ξ·g_R = s g_e``.

Drift:      ``E[ξ·g_R] = s E[g_e]``, which must equal ``(1 − ρ²) Φ'(ρ)``.

Variance:   ``V(ρ) = E||g_R||² = E[g_e² + ||u||²]`` (riemannian), ``E||g||²`` adds ``g_q²``
            (projected). A minibatch of ``B`` averages ``B`` independent gradients; since
            ``E u = 0`` and the ``u_b`` have independent uniform directions,
            ``V_B = |E g|² + (V − |E g|²)/B``.

One step:   expanding the exact update ``ρ' = [ρ(1 + ηḡ_q) + sηḡ_e]/√((1 + ηḡ_q)² + η²||ḡ_R||²)``
            to second order in ``η``,

                riemannian (``ḡ_q = 0``):  E[ρ' − ρ] = η(1 − ρ²)Φ'(ρ) − (η²/2) ρ V_B(ρ) + O(η³),
                projected:                 E[ρ' − ρ] = η(1 − ρ²)Φ'(ρ) − η² [ρ V_B(ρ)/2 + s E(ḡ_q ḡ_e)] + O(η³),

            ``V_B`` the tangent (riemannian) variance in both lines. Write the ``η²``
            coefficient as ``κ_B(ρ)``.

Plateau:    with a constant step, ``|ρ|`` settles where ``(1 − ρ²)Φ'(ρ) = η κ_B(ρ)``
            (riemannian: ``= (η/2) ρ V_B(ρ)``), short of 1 by about ``η V_B(1)/(4Φ'(1))``.

``σ ≠ 1``: ``g = σ² g'`` for the standardised model, so drifts scale by ``σ²`` and variances by
``σ⁴``; with steps ``η`` every formula above holds in the original units.

Alignment noise: ``Var(ξ·ḡ_R) = (1 − ρ²) Var(g_e)/B`` — the variance of the first-order
            change of ``ρ`` per unit step (the complement part ``u`` moves ``q`` but not ``ρ`` to
            first order).

Standard errors use the delta method on the sample means of
``(g_q, g_e, g_e² + ||u||², g_q², g_q g_e, g_e²)``; the same draws are used at every ``ρ`` (common random
numbers), so estimates are smooth in ``ρ`` for a fixed seed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.optimize import brentq

from ..config import ModelConfig
from ..schedules import Schedule
from ._checks import (
    BATCH, BOOLEAN, METHOD, MODEL, N_SAMPLES, POSITIVE, RHO, SEED, SIDE, STEP, TARGET, UPDATE,
    Optional, RHO0, validated,
)
from .field import dphi_interpolant
from .landscape import landscape
from .ode import solve_ode
from .reduced import GradientParts, accumulate

__all__ = [
    "MonteCarloEstimate",
    "drift_mc",
    "drift_variance",
    "gradient_variance",
    "second_order_coefficient",
    "corrected_drift",
    "constant_step_plateau",
    "SamplesToReach",
    "samples_to_reach",
]

_CACHE_DOUBLES = 1 << 24


@dataclass(frozen=True, eq=False)
class MonteCarloEstimate:
    """A Monte-Carlo estimate on a grid: ``rho``, ``value`` and ``stderr`` (shape of the input
    ``rho``), from ``n_samples`` draws shared by all grid points."""

    rho: np.ndarray
    value: np.ndarray
    stderr: np.ndarray
    n_samples: int


def _stats(p: GradientParts) -> np.ndarray:
    return np.stack([p.g_q, p.g_e, p.g_e ** 2 + p.u2, p.g_q ** 2, p.g_q * p.g_e, p.g_e ** 2],
                    axis=1)


def _moments(model: ModelConfig, rhos: np.ndarray, n_samples: int, seed: int
             ) -> tuple[np.ndarray, np.ndarray]:
    """Means ``(k, 6)`` and covariances ``(k, 6, 6)`` of ``_stats`` at the ``k`` alignments
    ``rhos`` from one pass over ``n_samples`` common draws (standardised units)."""
    mu, cov, _ = accumulate(model, np.atleast_1d(rhos), n_samples, seed,
                            lambda p, _r: _stats(p))
    return mu, cov


def _quantities(mu: np.ndarray, cov: np.ndarray, n: int, rho: float, B: int, what: str
                ) -> tuple[float, float]:
    """Value and delta-method standard error of a smooth function of the 5 means."""
    s = np.sqrt(max(0.0, 1.0 - rho * rho))
    f = 1.0 - 1.0 / B
    g0, g1, v, gq2, cqe, ge2 = mu
    vr_grad = np.array([0, 2 * f * g1, 1 / B, 0, 0, 0])
    if what == "drift":
        val, grad = s * g1, np.array([0, s, 0, 0, 0, 0])
    elif what == "drift_var":
        val = s * s * (ge2 - g1 * g1) / B
        grad = s * s / B * np.array([0, -2 * g1, 0, 0, 0, 1])
    elif what == "V_riemannian":
        val, grad = f * g1 * g1 + v / B, vr_grad
    elif what == "V_projected":
        val = f * (g0 * g0 + g1 * g1) + (v + gq2) / B
        grad = np.array([2 * f * g0, 2 * f * g1, 1 / B, 1 / B, 0, 0])
    elif what == "kappa_riemannian":
        val, grad = 0.5 * rho * (f * g1 * g1 + v / B), 0.5 * rho * vr_grad
    elif what == "kappa_projected":
        val = 0.5 * rho * (f * g1 * g1 + v / B) + s * (f * g0 * g1 + cqe / B)
        grad = 0.5 * rho * vr_grad + s * np.array([f * g1, f * g0, 0, 0, 1 / B, 0])
    else:  # pragma: no cover
        raise AssertionError(what)
    grad = np.asarray(grad, dtype=float)
    se = float(np.sqrt(max(grad @ cov @ grad, 0.0) / n))
    return float(val), se


def _estimate(model: ModelConfig, rho: Any, what: str, batch: int, n_samples: int,
              seed: int, power: int) -> MonteCarloEstimate:
    r = rho
    mu, cov = _moments(model, r.ravel(), n_samples, seed)
    val = np.empty(r.size)
    se = np.empty(r.size)
    for i, x in enumerate(r.ravel()):
        val[i], se[i] = _quantities(mu[i], cov[i], n_samples, float(x), batch, what)
    val, se = val.reshape(r.shape), se.reshape(r.shape)
    scale = model.noise_std ** (2 * power)
    return MonteCarloEstimate(r, scale * val, scale * se, n_samples)


@validated(model=MODEL, rho=RHO, n_samples=N_SAMPLES, seed=SEED)
def drift_mc(model: ModelConfig, rho: Any, n_samples: int = 100_000,
             seed: int = 0) -> MonteCarloEstimate:
    """Monte-Carlo ``E[ξ·g_R] = s E[g_e]`` at ``rho`` from the reduced sampler — an estimate of
    the vector field ``(1 − ρ²)Φ'(ρ)`` independent of :func:`landscape`. Raises ``ConfigError``
    for ``rho`` outside [−1, 1] or bad counts."""
    return _estimate(model, rho, "drift", 1, n_samples, seed, 1)


@validated(model=MODEL, rho=RHO, batch=BATCH, n_samples=N_SAMPLES, seed=SEED)
def drift_variance(model: ModelConfig, rho: Any, batch: int = 1, *, n_samples: int = 20_000,
                   seed: int = 0) -> MonteCarloEstimate:
    """``Var(ξ·ḡ_R) = (1 − ρ²) Var(g_e)/B``: the variance of the alignment increment per unit
    step (first order in ``η``). Raises ``ConfigError`` for bad input."""
    return _estimate(model, rho, "drift_var", batch, n_samples, seed, 2)


@validated(model=MODEL, rho=RHO, batch=BATCH, update=UPDATE, n_samples=N_SAMPLES, seed=SEED)
def gradient_variance(model: ModelConfig, rho: Any, batch: int = 1, update: str = "riemannian",
                      *, n_samples: int = 20_000, seed: int = 0) -> MonteCarloEstimate:
    """``V_B(ρ)``: mean squared norm of the minibatch gradient used by the update —
    ``E||ḡ_R||²`` for ``"riemannian"``, ``E||ḡ||²`` for ``"projected"`` — with
    ``V_B = |E g|² + (V − |E g|²)/B``. Raises ``ConfigError`` for bad input."""
    return _estimate(model, rho, "V_" + update, batch, n_samples, seed, 2)


@validated(model=MODEL, rho=RHO, batch=BATCH, update=UPDATE, n_samples=N_SAMPLES, seed=SEED)
def second_order_coefficient(model: ModelConfig, rho: Any, batch: int = 1,
                             update: str = "riemannian", *, n_samples: int = 20_000,
                             seed: int = 0) -> MonteCarloEstimate:
    """``κ_B(ρ)`` with ``E[ρ' − ρ] = η(1 − ρ²)Φ'(ρ) − η² κ_B(ρ) + O(η³)``:
    ``ρ V_B/2`` (riemannian), ``ρ V_B/2 + s E[ḡ_q ḡ_e]`` (projected; ``V_B`` tangent)."""
    return _estimate(model, rho, "kappa_" + update, batch, n_samples, seed, 2)


@validated(model=MODEL, rho=RHO, eta=POSITIVE, batch=BATCH, update=UPDATE, method=METHOD,
           n_samples=N_SAMPLES, seed=SEED)
def corrected_drift(model: ModelConfig, rho: Any, eta: float, batch: int = 1,
                    update: str = "riemannian", *, method: str = "exact",
                    n_samples: int = 20_000, seed: int = 0) -> MonteCarloEstimate:
    """Second-order mean one-step change ``E[ρ' − ρ] ≈ η(1 − ρ²)Φ'(ρ) − η² κ_B(ρ)``
    (riemannian: ``η(1 − ρ²)Φ'(ρ) − (η²/2)ρV_B(ρ)``). ``Φ'`` by ``method``; the standard error
    is that of the Monte-Carlo ``κ_B`` term."""
    kap = second_order_coefficient(model, rho, batch, update, n_samples=n_samples, seed=seed)
    field = landscape(model, kap.rho, method).field
    return MonteCarloEstimate(kap.rho, eta * field - eta * eta * kap.value,
                              eta * eta * kap.stderr, kap.n_samples)


@validated(model=MODEL, eta=POSITIVE, batch=BATCH, update=UPDATE, side=SIDE, method=METHOD,
           n_samples=N_SAMPLES, seed=SEED)
def constant_step_plateau(model: ModelConfig, eta: float, batch: int = 1,
                          update: str = "riemannian", *, side: int = 1, method: str = "exact",
                          n_samples: int = 20_000, seed: int = 0) -> float:
    """``|ρ|`` at which a constant step ``eta`` stalls near ``side·ξ`` (``side = ±1``): the root
    closest to ``side`` of ``(1 − ρ²)Φ'(ρ) = η κ_B(ρ)`` (riemannian:
    ``(1 − ρ²)Φ'(ρ) = (η/2) ρ V_B(ρ)``), found by ``brentq`` on common-random-number estimates.

    Returns NaN when ``side·ξ`` does not attract (``side·Φ'(side) <= 0``) or when no root is
    found before the nearest interior fixed point (step too large for the second-order
    theory). Raises ``ConfigError`` for bad input.
    """
    dphi = dphi_interpolant(model, method)
    end = float(side)
    d_end = float(landscape(model, end, method).dphi)
    if side * d_end <= 0:
        return float("nan")
    s4 = model.noise_std ** 4
    what = "kappa_" + update

    def kappas(rs: np.ndarray) -> np.ndarray:
        mu, cov = _moments(model, rs, n_samples, seed)
        return np.array([_quantities(mu[i], cov[i], n_samples, float(x), batch, what)[0]
                         for i, x in enumerate(rs)]) * s4

    # search region: from the end to the nearest point where the field stops pointing to it
    grid = side * np.linspace(1.0, -1.0, 2001)
    bad = np.nonzero(side * dphi(grid) <= 0)[0]
    limit = float(grid[bad[0]]) if bad.size else -end
    k_end = float(kappas(np.array([end]))[0])
    if side * k_end <= 0:
        return float("nan")
    # first order: (1 − ρ²) ≈ 2δ, so 2δ|Φ'(end)| = η|κ(end)|
    width = 4.0 * eta * abs(k_end) / (2.0 * abs(d_end))
    while True:
        width = min(width, abs(end - limit))
        far = end - side * width
        # κ is smooth: a Chebyshev interpolant through 6 common-random-number values
        n_nodes = 6 if width <= 0.1 else 12
        nodes = np.polynomial.chebyshev.chebpts2(n_nodes)
        rs = end - side * width * 0.5 * (1.0 - nodes)
        cheb = np.polynomial.Chebyshev.fit(rs, kappas(rs), n_nodes - 1,
                                           domain=sorted([far, end]))

        def G(r: float) -> float:  # side·[F(ρ) − η κ(ρ)]: < 0 at the end, > 0 inside
            return side * ((1.0 - r * r) * float(dphi(np.array(r))) - eta * float(cheb(r)))

        if G(far) > 0:
            return abs(float(brentq(G, far, end, xtol=1e-13)))
        if width >= abs(end - limit):
            return float("nan")
        width *= 4.0


@dataclass(frozen=True)
class SamplesToReach:
    """Prediction of how long SGA takes to reach ``|ρ| = target`` from ``rho0``.

    ode_time : ODE hitting time of ``|ρ| = target`` (NaN if never reached)
    ode_steps : step index ``k`` with ``t_k >= ode_time`` under the schedule
    eta_at_hit : ``η_k`` at that step
    eta_max : largest constant step whose plateau reaches the target,
        ``(1 − ρ_t²)Φ'(ρ_t) / κ_B(ρ_t)`` at ``ρ_t = ±target``
    plateau_at_hit : :func:`constant_step_plateau` for ``η = eta_at_hit``
    reachable_at_hit : ``eta_at_hit <= eta_max`` — the step at the ODE hitting time is small
        enough for the finite-step plateau to exceed the target
    steps : ``max(ode_steps, first k with η_k <= eta_max)`` (−1 if never)
    samples : ``steps × batch`` per run
    """

    target: float
    rho0: float
    batch: int
    ode_time: float
    ode_steps: int
    eta_at_hit: float
    eta_max: float
    plateau_at_hit: float
    reachable_at_hit: bool
    steps: int
    samples: int


@validated(model=MODEL, step=STEP, target=TARGET, batch=BATCH, rho0=Optional(RHO0),
           update=UPDATE, method=METHOD, n_samples=N_SAMPLES, seed=SEED, plateau=BOOLEAN)
def samples_to_reach(model: ModelConfig, step: Schedule, target: float = 0.9965,
                     batch: int = 1, *, rho0: float | None = None,
                     update: str = "riemannian", method: str = "exact",
                     n_samples: int = 4000, seed: int = 0,
                     plateau: bool = True) -> SamplesToReach:
    """Predicted number of samples per run to reach ``|ρ| >= target`` under ``step``.

    ``rho0`` defaults to ``1/√d`` (the root-mean-square alignment of a uniform start). The ODE
    hitting time is mapped to a step index; that is enough only if the step there is small
    enough that the constant-step plateau exceeds the target — otherwise the run must wait
    until ``η_k`` has fallen to ``eta_max``. See :class:`SamplesToReach`.

    ``plateau=False`` skips :func:`constant_step_plateau` (the costly part: a Chebyshev fit of
    ``κ_B`` over the approach to ``±ξ``); ``plateau_at_hit`` is then NaN and nothing else
    changes. ``n_samples`` common draws estimate ``κ_B`` at the target.
    """
    r0 = float(1.0 / np.sqrt(model.d)) if rho0 is None else float(rho0)
    sol = solve_ode(model, r0, step=step, targets=(target,), method=method)
    t_hit = sol.hitting_times[target]
    if not np.isfinite(t_hit):
        return SamplesToReach(target, r0, batch, float("nan"), -1, float("nan"), float("nan"),
                              float("nan"), False, -1, -1)
    k_ode = int(step.step_at_time(t_hit))
    eta_k = float(step.eta(k_ode))
    side = 1 if sol(t_hit) > 0 else -1
    rt = side * target
    kap = second_order_coefficient(model, rt, batch, update, n_samples=n_samples, seed=seed)
    fld = float(landscape(model, rt, method).field)
    kv = float(kap.value)
    if side * fld <= 0:
        eta_max = 0.0
    elif side * kv <= 0:
        eta_max = float("inf")
    else:
        eta_max = fld / kv
    plateau_value = (constant_step_plateau(model, eta_k, batch, update, side=side, method=method,
                                           n_samples=n_samples, seed=seed)
                     if plateau else float("nan"))
    if eta_k <= eta_max:
        k_eta = 0
    else:
        k_eta = step.first_step_at_most(eta_max)
    steps = -1 if k_eta < 0 else max(k_ode, k_eta)
    return SamplesToReach(target, r0, batch, float(t_hit), k_ode, eta_k, float(eta_max),
                          float(plateau_value), bool(eta_k <= eta_max), steps,
                          -1 if steps < 0 else steps * batch)
