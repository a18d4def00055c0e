"""The limiting ODE ``dρ/dt = (1 − ρ²) Φ'(ρ)`` (docs/model.md#the-population-objective) and
its solution.

The ODE is integrated in ``z = artanh ρ``, where it reads ``dz/dt = Φ'(tanh z)``: the approach
to ``±1`` (which the ``ρ`` variable makes exponentially slow and ill-conditioned) becomes linear
growth of ``|z|`` at rate ``|Φ'(±1)|``. ``Φ'`` comes from :func:`.field.dphi_interpolant`
(``"exact"`` by default). Integration uses scipy's ``DOP853`` with dense output, ``rtol = 1e-10``,
``atol = 1e-12``; hitting times of ``|ρ| = target`` are located by event functions
``|z| − artanh(target)``. With a step-size schedule (any family), ODE times are mapped to the
step index ``k`` with ``t_k = Σ_{j<k} η_j ≥ t`` (:meth:`attnsignal.schedules.Schedule.step_at_time`).

Every integration is bounded: a flat landscape (``Φ'`` zero up to round-off) is stationary
without integrating; the solver also stops once ``Φ'`` vanishes at an interior attractor (the
solution is constant from there on); and it may evaluate the field at most
:data:`MAX_FIELD_EVALUATIONS` times, after which ``ConfigError`` says how far it got.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
from scipy.integrate import solve_ivp

from ..config import ConfigError, ModelConfig
from ..schedules import Schedule
from ._checks import (
    ATOL, MODEL, N_SAMPLES, OPTIONAL_METHOD, OPTIONAL_POSITIVE, OPTIONAL_STEP, RHO, RHO0, RTOL,
    SEED, TARGETS, validated,
)
from .field import dphi_interpolant
from .fixed_points import is_flat, phi_scale, resolve_method

__all__ = ["OdeSolution", "solve_ode", "flow", "DEFAULT_TARGETS", "MAX_FIELD_EVALUATIONS"]

DEFAULT_TARGETS = (0.9, 0.99, 0.9965)
_Z_STOP = float(np.arctanh(1.0 - 1e-12))
#: An integration that needs more evaluations of Φ' than this stops with ConfigError
#: (a solution to ±1 or to an interior attractor takes a few hundred).
MAX_FIELD_EVALUATIONS = 200_000
#: smallest rtol scipy honours (it silently raises smaller ones to 100·eps)


class _OutOfBudget(Exception):
    def __init__(self, t: float):
        self.t = t


def _bounded(fun):
    """``fun`` that raises _OutOfBudget(t) on its ``MAX_FIELD_EVALUATIONS + 1``-th call."""
    calls = [0]
    limit = MAX_FIELD_EVALUATIONS

    def wrapped(t: float, z: np.ndarray) -> np.ndarray:
        calls[0] += 1
        if calls[0] > limit:
            raise _OutOfBudget(float(t))
        return fun(t, z)

    return wrapped


def _solve_ivp_bounded(rhs, t_span: tuple[float, float], z0, **kwargs):
    """``solve_ivp`` with at most MAX_FIELD_EVALUATIONS calls of ``rhs``; ConfigError when the
    budget is spent or the solver fails."""
    try:
        res = solve_ivp(_bounded(rhs), t_span, z0, **kwargs)
    except _OutOfBudget as exc:
        raise ConfigError(
            "t_max", f"must be reached within {MAX_FIELD_EVALUATIONS} evaluations of the field "
                     f"(the solver got to t = {exc.t:.4g}; loosen rtol/atol or lower t_max)",
            t_span[1]) from None
    if res.status == -1:
        raise ConfigError("rtol", f"the ODE solver failed ({res.message}); loosen rtol/atol",
                          kwargs.get("rtol"))
    return res


@dataclass(frozen=True, eq=False)
class OdeSolution:
    """Solution of ``dρ/dt = (1 − ρ²) Φ'(ρ)`` from ``rho0``.

    t, rho : (n,) the solver's time points and ``ρ`` there (``rho[0] = rho0``)
    hitting_times : {target: first t with |ρ(t)| >= target, NaN if not reached by t_end}
    hitting_steps : {target: step index k with t_k >= hitting time} when ``step`` was given
        (−1 where the target is not reached), else None
    t_end : last time integrated (the solver stops early once |ρ| >= 1 − 1e-12)
    Call the object, ``sol(t)``, for the dense solution ``ρ(t)`` at any ``t >= 0`` (beyond
    ``t_end`` it is continued with the linearisation ``z' = Φ'(±1)``).
    """

    model: ModelConfig
    rho0: float
    method: str
    t: np.ndarray
    rho: np.ndarray
    hitting_times: dict[float, float]
    t_end: float
    step: Schedule | None = None
    hitting_steps: dict[float, int] | None = None
    _dense: Any = field(default=None, repr=False)
    _dphi_end: float = field(default=0.0, repr=False)

    def __call__(self, t: Any) -> np.ndarray:
        t = np.asarray(t, dtype=np.float64)
        if self._dense is None:  # stationary start
            return np.full(t.shape, self.rho0)
        tc = np.clip(t, 0.0, self.t_end)
        z = np.asarray(self._dense(tc)).reshape(t.shape)
        beyond = t > self.t_end
        if np.any(beyond):
            z_end = float(np.asarray(self._dense(self.t_end)).ravel()[0])
            z = np.where(beyond, z_end + self._dphi_end * (t - self.t_end), z)
        return np.tanh(z)

    def steps_at(self, t: Any) -> np.ndarray:
        """Step index ``k`` with ``t_k >= t`` under ``self.step`` (requires ``step``)."""
        if self.step is None:
            raise ConfigError("step", "solve_ode was called without a schedule", None)
        return self.step.step_at_time(t)


@validated(model=MODEL, rho0=RHO0, t_max=OPTIONAL_POSITIVE, step=OPTIONAL_STEP,
           method=OPTIONAL_METHOD, targets=TARGETS, rtol=RTOL, atol=ATOL, n_samples=N_SAMPLES,
           seed=SEED)
def solve_ode(model: ModelConfig, rho0: float, t_max: float | None = None,
              step: Schedule | None = None, *, method: str | None = None,
              targets: Sequence[float] = DEFAULT_TARGETS, rtol: float = 1e-10,
              atol: float = 1e-12, n_samples: int = 20_000, seed: int = 0) -> OdeSolution:
    """Solve ``dρ/dt = (1 − ρ²) Φ'(ρ)``, ``ρ(0) = rho0``, on ``[0, t_max]``.

    Parameters
    ----------
    model : ModelConfig
    rho0 : float in [−1, 1] (``±1`` are stationary)
    t_max : float > 0, or None for ``10^4 / max|Φ'|`` (the solver stops earlier once
        ``|ρ| >= 1 − 1e-12``)
    step : optional schedule (any family); then ``hitting_steps`` maps hitting times to step indices
    method : "exact" | "mc" | "asymptotic" — how ``Φ'`` is computed; None (default):
        "exact" where it applies (``βσ <= 12``), else "mc"
    targets : levels of ``|ρ|`` in (0, 1) whose hitting times are reported
    rtol, atol : solver tolerances (in ``z = artanh ρ``): ``1e-13 <= rtol < 1``, ``atol > 0``

    Returns
    -------
    OdeSolution. Raises ``ConfigError`` for ``rho0`` outside ``[−1, 1]``, ``t_max <= 0``,
    a bad method, target, step or tolerance, and when the solution needs more than
    :data:`MAX_FIELD_EVALUATIONS` evaluations of the field.
    """
    r0 = rho0
    method = resolve_method(model, method)
    tg = targets
    dphi = dphi_interpolant(model, method, n_samples=n_samples, seed=seed)
    scale = _dphi_scale(dphi)
    flat = is_flat(dphi(np.linspace(-1.0, 1.0, 201)), phi_scale(model, method))
    if t_max is None:
        t_max = 1e4 / max(scale, 1e-300) if not flat else 1.0

    hits: dict[float, float] = {}
    if flat or abs(r0) == 1.0 or _stationary(dphi, np.array([r0]), scale)[0]:
        # ±1, or an exact zero of Φ' (e.g. ρ0 = 0 in the even, random-sign landscape): the
        # solution stays put; round-off must not push it off the fixed point
        hits = {x: (0.0 if abs(r0) >= x else float("nan")) for x in tg}
        sol = OdeSolution(model=model, rho0=r0, method=method, t=np.array([0.0, t_max]),
                          rho=np.array([r0, r0]), hitting_times=hits, t_end=t_max)
    else:
        z0 = float(np.arctanh(r0))

        def rhs(t: float, z: np.ndarray) -> np.ndarray:
            return dphi(np.tanh(z))

        events = []
        for x in tg:
            zx = float(np.arctanh(x))
            ev = (lambda t, z, zx=zx: abs(z[0]) - zx)
            ev.direction = 1.0
            events.append(ev)
        stop = lambda t, z: abs(z[0]) - _Z_STOP  # noqa: E731
        stop.terminal = True
        stop.direction = 1.0
        events.append(stop)
        # at an interior attractor Φ' decays to round-off: the solution is constant from there
        settle_tol = _STATIONARY_RTOL * scale
        settle = lambda t, z: abs(float(dphi(np.tanh(z[0])))) - settle_tol  # noqa: E731
        settle.terminal = True
        settle.direction = -1.0
        events.append(settle)
        res = _solve_ivp_bounded(rhs, (0.0, t_max), [z0], method="DOP853", dense_output=True,
                                 rtol=rtol, atol=atol, events=events)
        settled = res.status == 1 and res.t_events[-1].size > 0
        for i, x in enumerate(tg):
            if abs(r0) >= x:
                hits[x] = 0.0
            elif res.t_events[i].size:
                hits[x] = float(res.t_events[i][0])
            else:
                hits[x] = float("nan")
        t_end = float(res.t[-1])
        sign = 1.0 if res.y[0, -1] >= 0 else -1.0
        sol = OdeSolution(model=model, rho0=r0, method=method, t=res.t,
                          rho=np.tanh(res.y[0]), hitting_times=hits, t_end=t_end,
                          _dense=res.sol,
                          _dphi_end=0.0 if settled else float(dphi(np.array(sign))))
    if step is not None:
        ks = {x: (int(step.step_at_time(h)) if np.isfinite(h) else -1) for x, h in hits.items()}
        sol = OdeSolution(**{**sol.__dict__, "step": step, "hitting_steps": ks})
    return sol


_STATIONARY_RTOL = 1e-12


def _dphi_scale(dphi) -> float:
    """``max |Φ'|`` over ``[−1, 1]`` (201 points): the scale of the field."""
    return float(np.max(np.abs(dphi(np.linspace(-1.0, 1.0, 201)))))


def _stationary(dphi, r0: np.ndarray, scale: float) -> np.ndarray:
    """Starts at an exact zero of ``Φ'``: ``|Φ'(ρ0)| <= 1e-12 · max |Φ'|`` (round-off level)."""
    return np.abs(dphi(r0)) <= _STATIONARY_RTOL * max(scale, 1e-300)


@validated(model=MODEL, rho0=RHO, method=OPTIONAL_METHOD, rtol=RTOL, atol=ATOL)
def flow(model: ModelConfig, rho0: np.ndarray, t: np.ndarray, method: str | None = None,
         rtol: float = 1e-9, atol: float = 1e-11) -> np.ndarray:
    """ODE solutions from many starts at once: ``ρ(t_j; ρ0_i)``, shape ``(len(rho0), len(t))``.

    ``t`` must be non-decreasing and ``>= 0``. One vectorised ``solve_ivp`` call in
    ``z = artanh ρ`` (starts at ``±1`` stay there; a flat landscape is stationary). ``method``
    as in :func:`solve_ode`. Raises ``ConfigError`` as :func:`solve_ode`.
    """
    method = resolve_method(model, method)
    r0 = np.atleast_1d(rho0).astype(np.float64)
    t = np.asarray(t, dtype=np.float64)
    if t.size and not np.all(np.isfinite(t)):
        raise ConfigError("t", "must be finite times >= 0", float(t[~np.isfinite(t)].flat[0]))
    out = np.empty((r0.size, t.size))
    dphi = dphi_interpolant(model, method)
    scale = _dphi_scale(dphi)
    flat = is_flat(dphi(np.linspace(-1.0, 1.0, 201)), phi_scale(model, method))
    edge = (np.abs(r0) == 1.0) | _stationary(dphi, r0, scale) | flat
    out[edge] = r0[edge, None]
    inner = ~edge
    if not inner.any() or t.size == 0:
        return out
    z0 = np.arctanh(r0[inner])
    t_hi = float(t.max())
    if t_hi <= 0.0:
        out[inner] = r0[inner, None]
        return out
    res = _solve_ivp_bounded(lambda _t, z: dphi(np.tanh(z)), (0.0, t_hi), z0, method="DOP853",
                             t_eval=np.clip(t, 0.0, t_hi), rtol=rtol, atol=atol,
                             vectorized=False)
    out[inner] = np.tanh(res.y)
    return out
