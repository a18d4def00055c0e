"""Schedule advisor: which step sizes reach a target alignment in the fewest samples
(docs/theory.md#the-law-of-rho-k), predicted by the effective dynamics (:mod:`.effective`).

Time-optimal mean path
----------------------
In ``z = artanh ρ`` the mean one-step change at step ``η`` is ``m(z, η)`` (exact in ``η``,
:class:`~.effective.MomentTable`); to second order ``m = ηΦ' − η²κ/s² + ...``, largest at
``η*(ρ) = F/(2κ)`` (``F = (1 − ρ²)Φ'``). For the one-dimensional mean dynamics
``dz/dk = m(z, η_k)`` the least number of steps from ``z0`` to ``z1`` over all step sequences is
reached by maximising the speed at every point,

    η*(z) = argmax_η m(z, η),      k_min = ∫_{z0}^{z1} dz / m(z, η*(z))

(a lower bound for the mean path; the second-order version is ``∫ 4κ/F² dρ``). The maximum is
taken on the exact finite-``η`` moments, not on the ``O(η²)`` truncation.

Spread
------
The target is on the *mean* of ``|ρ|`` over runs, and runs that start near ``ρ = 0`` lag: the
mean path is not enough, and the feedback ``η*(z)`` read along the mean path is *not* the
fastest schedule for the mean ``|ρ|`` (at small ``L`` a power law beats it). Every schedule is
judged by the same number: the samples at which the effective dynamics' predicted mean ``|ρ|``
— the law, with its spread — reaches the target. Three kinds of schedule are evaluated:

1. the **feedback schedule**: ``η*(z)`` along the mean path (from ``artanh E|ρ0|`` to
   ``1 − (1 − target)/8``), then a ``1/k`` tail matched in value and slope;
2. the **advised power law** ``η0 (1 + k/k0)^(−power)`` (``1/2 < power ≤ 1``), fitted to the
   feedback schedule (least squares in ``log η`` over the steps to the target) and then tuned
   to the fewest predicted samples (a bounded Nelder–Mead search over ``log η0, log k0,
   power``, at most 24 runs of the effective dynamics);
3. a **searched knot family**: the better of 1 and 2 times ``exp g(log(1 + k))``, ``g``
   piecewise linear on 6 equally spaced knots over ``[0, log(1 + k̂)]`` (``k̂`` that schedule's
   predicted steps; ``g`` held at its last value beyond, so the tail is the base's, rescaled;
   steps capped at the moment table's largest unless the base is above it), ``g = 0`` being
   the base, minimised by Nelder–Mead from ``g = 0`` with at most ``search`` (default 24)
   effective-dynamics runs, each over ``1.3 k̂`` steps.

``optimal`` is the one of these with the fewest predicted samples (a :class:`TabulatedStep`
either way), and ``optimal_samples`` its predicted samples: the least predicted samples among
the schedules searched — an **upper bound** on the true optimum over all step sequences (a
richer search could only lower it), never above ``samples`` (the advised power law is one of
the candidates). ``mean_path_samples`` is the time-optimal mean path alone (no spread). The
search costs at most ``search`` more effective-dynamics runs on the same moment table,
shorter than the tuning's (``1.3 k̂`` steps against ``4×`` the mean path's): about as much
again as the tuning or less (57 s against 34 s without it at ``d = 40``, ``L = 40``; 120 s
against 78 s at E1's size, ``d = 100``, ``L = 10 500``; one loaded 2-core machine).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.interpolate import CubicSpline
from scipy.optimize import minimize
from scipy.special import gammaln

from ..config import ConfigError, ModelConfig, StepSize
from ..schedules import TabulatedStep
from ..validation import Boolean, Integer, Optional, validated
from ._checks import BATCH, MODEL, RHO0, SEED, TARGET, UPDATE
from .effective import (EffectiveDynamics, MomentTable, _z_max, effective_dynamics,
                        moment_table)
from .finite_step import second_order_coefficient
from .landscape import landscape

__all__ = ["Advice", "advise_schedule", "tabulated_step"]

_N_RECORDS = 400


def tabulated_step(etas: np.ndarray, tail: Any) -> TabulatedStep:
    """``TabulatedStep(etas, tail)``: ``η_k = etas[k]``, then the tail shifted to start after
    the table."""
    return TabulatedStep(etas=np.asarray(etas, dtype=np.float64), tail=tail)


@dataclass(frozen=True, eq=False)
class Advice:
    """The advisor's answer.

    step : the advised Robbins–Monro ``StepSize`` ``η0 (1 + k/k0)^(−power)``
    samples : predicted samples (steps × batch) until the mean ``|ρ|`` reaches ``target``
        under ``step`` (effective dynamics)
    optimal : the best schedule found (a ``TabulatedStep``): the one with the fewest predicted
        samples among the feedback ``η*(ρ)`` along the mean path, the advised power law and the
        searched knot corrections of the better of those two (module docstring)
    optimal_samples : predicted samples to the target under ``optimal`` — the least among the
        schedules searched, hence an upper bound on the true optimum over all step sequences,
        and never above ``samples``
    mean_path_samples : ``k_min × batch`` of the time-optimal mean path (no spread) — a lower
        bound for the mean dynamics alone
    rho_path, eta_path : ``ρ`` and ``η*`` along the optimal mean path (model units)
    dynamics, optimal_dynamics : the effective dynamics under ``step`` and ``optimal``
    """

    target: float
    batch: int
    update: str
    initial_alignment: float | None
    step: StepSize
    samples: int
    optimal: TabulatedStep
    optimal_samples: int
    mean_path_samples: int
    rho_path: np.ndarray
    eta_path: np.ndarray
    dynamics: EffectiveDynamics
    optimal_dynamics: EffectiveDynamics

    def describe(self) -> str:
        return (f"advised step: {self.step.describe()}\n"
                f"predicted samples to mean |rho| = {self.target:g}: {self.samples:,}\n"
                f"best schedule searched: {self.optimal_samples:,} samples "
                f"(time-optimal mean path alone: {self.mean_path_samples:,})")


def _hit(ed: EffectiveDynamics, target: float) -> float:
    """Step at which the predicted mean |ρ| first reaches ``target`` (linear interpolation
    between records); inf if never."""
    y = ed.mean_abs
    i = np.nonzero(y >= target)[0]
    if i.size == 0:
        return math.inf
    i = int(i[0])
    if i == 0:
        return float(ed.steps[0])
    k0, k1 = float(ed.steps[i - 1]), float(ed.steps[i])
    f = (target - y[i - 1]) / max(y[i] - y[i - 1], 1e-300)
    return k0 + f * (k1 - k0)


def _records(steps: int) -> list[int]:
    ks = np.unique(np.concatenate([[0, steps], np.round(np.geomspace(1, steps, _N_RECORDS))]))
    return [int(x) for x in ks]


def _start_abs(model: ModelConfig, initial_alignment: float | None) -> float:
    if initial_alignment is not None:
        return abs(float(initial_alignment))
    d = model.d
    return float(math.exp(gammaln(d / 2) - gammaln((d + 1) / 2)) / math.sqrt(math.pi))


@validated(model=MODEL, target=TARGET, batch=BATCH, update=UPDATE,
           initial_alignment=Optional(RHO0), n_samples=Integer(ge=100), seed=SEED,
           tune=Boolean(), search=Integer(ge=0, le=200))
def advise_schedule(model: ModelConfig, target: float, *, batch: int = 1,
                    update: str = "projected", initial_alignment: float | None = None,
                    n_samples: int = 4000, seed: int = 0, tune: bool = True,
                    search: int = 24) -> Advice:
    """Advise a step-size schedule that brings the mean ``|ρ|`` to ``target`` in the fewest
    samples (module docstring).

    Parameters
    ----------
    model : ModelConfig
    target : mean ``|ρ|`` to reach, in (0, 1)
    batch, update : minibatch size and update rule of the runs
    initial_alignment : ``ρ0`` or None (uniform start)
    n_samples, seed : reduced draws per moment node, as :func:`effective_dynamics`
    tune : refine the fitted power-law step by minimising its predicted samples
    search : at most this many effective-dynamics runs for the search of the optimal schedule
        (module docstring; 0: the better of the feedback schedule and the advised power law)

    Returns
    -------
    Advice. Raises ``ConfigError`` for bad input, or (field ``target``) when the mean dynamics
    cannot reach the target (a stable interior fixed point or a repelling end in the way).
    """
    r0 = _start_abs(model, initial_alignment)
    if r0 >= target:
        raise ConfigError("target", f"must exceed the start's mean |rho| = {r0:.4g}", target)
    side = 1.0
    if initial_alignment is not None and initial_alignment < 0:
        side = -1.0
    rho_end = 1.0 - (1.0 - target) / 8.0

    # ---- range of the optimal step from the second-order theory: η* = F/(2κ)
    rs = side * np.linspace(max(r0, 1e-3), rho_end, 24)
    kap = second_order_coefficient(model, rs, batch, update, n_samples=1000, seed=seed).value
    fld = landscape(model, rs).field
    ok = (side * fld > 0) & (side * kap > 0)
    if not np.any(ok):
        raise ConfigError("target", "is not reached by the mean dynamics from the start "
                          "(the field does not point towards it)", target)
    est = (side * fld[ok]) / (2.0 * side * kap[ok])
    eta_hi = float(est.max()) * 3.0
    eta_lo = max(float(est.min()) / 3.0, eta_hi * 1e-4)
    s2 = model.noise_std ** 2
    z_max = max(_z_max(model, eta_lo * s2, batch, None, seed), float(np.arctanh(rho_end)) + 1.0)
    table = moment_table(model, eta_lo, eta_hi, batch=batch, update=update,
                         z_max=min(z_max, 9.0), n_samples=n_samples, seed=seed)

    # ---- time-optimal feedback η*(z) on the moment nodes (standardised steps)
    z_path, eta_star_std, m_star = _optimal_policy(table, side)
    z0 = side * float(np.arctanh(max(r0, 1e-6)))
    z1 = side * float(np.arctanh(rho_end))
    sel = (z_path >= min(z0, z1) - 0.5) & (z_path <= max(z0, z1) + 0.5)
    ms = CubicSpline(z_path, m_star)
    es = CubicSpline(z_path, np.log(eta_star_std))
    zf = np.linspace(z0, z1, 4001)
    speed = side * ms(zf)
    if np.any(speed <= 0):
        bad = float(np.tanh(zf[np.argmax(speed <= 0)]))
        raise ConfigError("target", f"is not reached by the mean dynamics: it stalls near "
                          f"rho = {bad:.4g} for every step size", target)
    dk = np.abs(np.diff(zf)) * 0.5 * (1.0 / speed[1:] + 1.0 / speed[:-1])
    kz = np.concatenate([[0.0], np.cumsum(dk)])
    k_path = int(math.ceil(kz[-1]))
    ks = np.arange(k_path + 1)
    z_at_k = np.interp(ks, kz, zf)
    etas = np.exp(es(z_at_k)) / s2
    del sel
    # tail: η_last (1 + j/k1)^(−1), slope matched over the last 10 % of the table
    n10 = max(2, k_path // 10)
    slope = (math.log(etas[-1]) - math.log(etas[-n10])) / (n10 - 1)
    k1 = float(min(max(-1.0 / slope if slope < 0 else k_path, 1.0), 1e9))
    tail = StepSize(eta0=float(etas[-1]), k0=k1, power=1.0)
    optimal = tabulated_step(etas[:-1], tail)

    def evaluate(step: Any, horizon: int, cut: int | None = None
                 ) -> tuple[float, EffectiveDynamics]:
        # cut: run only to step ``cut`` on the records of ``horizon`` (the same hit if before)
        rec = _records(horizon)
        if cut is not None and cut < horizon:
            rec = [r for r in rec if r < cut] + [cut]
        ed = effective_dynamics(model, step, steps=rec[-1], initial_alignment=initial_alignment,
                                batch=batch, update=update, record=rec,
                                seed=seed, n_samples=n_samples, moments=table)
        return _hit(ed, target), ed

    horizon = max(4 * k_path, 1000)
    k_opt, ed_opt = evaluate(optimal, horizon)
    if not math.isfinite(k_opt):
        horizon *= 4
        k_opt, ed_opt = evaluate(optimal, horizon)

    # ---- the power family: least-squares fit in log η, then tuned on predicted samples
    k_fit = int(min(k_path, k_opt if math.isfinite(k_opt) else k_path))
    kk = np.arange(max(k_fit, 2))
    le = np.log(optimal.eta(kk))

    def resid(p: np.ndarray) -> float:
        l0, lk0, pw = p
        return float(np.mean((le - (l0 - pw * np.log1p(kk / math.exp(lk0)))) ** 2))

    best = min((minimize(resid, [le[0], math.log(max(k_fit, 2) / 10 * f), 0.75],
                         bounds=[(le[0] - 3, le[0] + 3), (0.0, math.log(1e9)), (0.51, 1.0)],
                         method="L-BFGS-B") for f in (0.1, 1.0, 10.0)), key=lambda r: r.fun)
    params = best.x
    cache: dict[tuple, tuple[float, EffectiveDynamics]] = {}

    def cost(p: np.ndarray) -> float:
        l0, lk0, pw = float(p[0]), float(p[1]), float(np.clip(p[2], 0.51, 1.0))
        key = (round(l0, 4), round(lk0, 4), round(pw, 4))
        if key not in cache:
            st = StepSize(eta0=math.exp(l0), k0=math.exp(min(lk0, math.log(1e12))), power=pw)
            cache[key] = evaluate(st, horizon)
        return cache[key][0] if math.isfinite(cache[key][0]) else 10.0 * horizon

    c0 = cost(params)
    if tune:
        res = minimize(cost, params, method="Nelder-Mead",
                       options=dict(maxfev=24, xatol=0.02, fatol=0.01 * min(c0, k_opt),
                                    initial_simplex=[params, params + [0.3, 0, 0],
                                                     params + [0, 0.7, 0],
                                                     params + [0, 0, -0.15 if params[2] > 0.7
                                                               else 0.15]]))
        if res.fun < c0:
            params = res.x
    l0, lk0, pw = float(params[0]), float(params[1]), float(np.clip(params[2], 0.51, 1.0))
    key = (round(l0, 4), round(lk0, 4), round(pw, 4))
    k_adv, ed_adv = cache.get(key) or evaluate(
        StepSize(eta0=math.exp(l0), k0=math.exp(lk0), power=pw), horizon)
    step = StepSize(eta0=math.exp(l0), k0=math.exp(min(lk0, math.log(1e12))), power=pw)

    # ---- the optimal schedule: the best of the feedback, the power law and a searched family
    power_tab = _as_tabulated(step, max(k_path, 1))
    cands = [(k_opt, optimal, ed_opt), (k_adv, power_tab, ed_adv)]
    if search > 0:
        base_k, base, _ = min(cands, key=lambda c: c[0])
        if math.isfinite(base_k):
            found = _search(evaluate, base, base_k, horizon, search, float(table.etas[-1]) / s2)
            if found is not None:
                cands.append(found)
    k_best, optimal, ed_best = min(cands, key=lambda c: c[0])
    if ed_best.steps[-1] < horizon:  # the searched winner: its law over the full horizon
        k_full, ed_full = evaluate(optimal, horizon)  # the same hit (same records before it)
        cands[-1] = (k_full, optimal, ed_full)
        k_best, optimal, ed_best = min(cands, key=lambda c: c[0])

    def samples(k: float) -> int:
        return int(math.ceil(k)) * batch if math.isfinite(k) else -1

    return Advice(target=target, batch=batch, update=update,
                  initial_alignment=initial_alignment, step=step, samples=samples(k_adv),
                  optimal=optimal, optimal_samples=samples(k_best),
                  mean_path_samples=samples(kz[np.searchsorted(np.abs(np.tanh(zf)), target)]
                                            if np.abs(np.tanh(zf[-1])) >= target else math.inf),
                  rho_path=np.tanh(z_at_k), eta_path=etas, dynamics=ed_adv,
                  optimal_dynamics=ed_best)


def _as_tabulated(step: StepSize, n: int) -> TabulatedStep:
    """The power-law ``step`` as a :class:`TabulatedStep` (same ``η_k`` for every ``k``): the
    first ``n`` steps tabulated, then the power law shifted to start at ``n``."""
    return tabulated_step(step.eta(np.arange(n)), step.shifted(n))


def _knot_correction(base: TabulatedStep, k_span: float, n: int, knots: np.ndarray,
                     cap: float) -> TabulatedStep:
    """``η_k = base.η_k · exp(g(log(1 + k)))``, ``g`` piecewise linear through ``knots`` (values
    at ``log(1 + k)`` equally spaced on ``[0, log(1 + k_span)]``, held at the last value
    beyond), capped at ``max(cap, base.η_k)``; tabulated for ``k < n``, then ``base``'s tail
    scaled by ``exp(g_last)``."""
    u = np.linspace(0.0, math.log1p(k_span), knots.size)
    ks = np.arange(n)
    eb = base.eta(ks)
    e = eb * np.exp(np.interp(np.log1p(ks), u, knots))
    e = np.minimum(e, np.maximum(cap, eb))
    nb = len(base.etas)
    tail = base.tail
    if not isinstance(tail, StepSize) or n < nb:
        raise ValueError("the base schedule must have a power-law tail and n >= its table")
    c = math.exp(float(knots[-1]))
    shifted = tail.shifted(n - nb)
    return tabulated_step(e, shifted.replace(eta0=c * shifted.eta0))


_SEARCH_KNOTS = 6


def _search(evaluate: Any, base: TabulatedStep, base_k: float, horizon: int, budget: int,
            cap: float) -> tuple[float, TabulatedStep, EffectiveDynamics] | None:
    """Nelder–Mead over the knot correction ``g`` of :func:`_knot_correction` (``g = 0`` is
    ``base``), at most ``budget`` effective-dynamics runs of ``1.3 × base_k`` steps (the record
    grid of the full ``horizon`` cut there, so a hit before the cut is the same number as over
    the full horizon). Returns the best searched ``(k, schedule, dynamics)``, or None when no
    searched schedule beat ``base``."""
    h_s = int(min(horizon, math.ceil(1.3 * base_k) + 2))
    n = max(h_s, len(base.etas))
    best: list[Any] = [base_k, None, None]
    seen: dict[tuple, float] = {tuple(np.zeros(_SEARCH_KNOTS)): base_k}  # g = 0 is the base
    count = [0]

    def cost(g: np.ndarray) -> float:
        key = tuple(np.round(g, 3))
        if key in seen:
            return seen[key]
        if count[0] >= budget:
            return 10.0 * h_s
        count[0] += 1
        try:
            sched = _knot_correction(base, base_k, n, np.asarray(g, dtype=np.float64), cap)
            k, ed = evaluate(sched, horizon, cut=h_s)
        except (ConfigError, FloatingPointError, ValueError):
            k, ed, sched = math.inf, None, None
        if math.isfinite(k):
            c = k
            if k < best[0]:
                best[:] = [k, sched, ed]
        elif ed is not None and np.isfinite(ed.mean_abs[-1]):
            c = h_s * (1.0 + max(0.0, 1.0 - float(ed.mean_abs[-1])))
        else:
            c = 10.0 * h_s
        seen[key] = c
        return c

    x0 = np.zeros(_SEARCH_KNOTS)
    simplex = [x0] + [x0 + 0.3 * np.eye(_SEARCH_KNOTS)[i] for i in range(_SEARCH_KNOTS)]
    minimize(cost, x0, method="Nelder-Mead",
             options=dict(maxfev=budget, xatol=0.01, fatol=1e-3 * base_k,
                          initial_simplex=np.array(simplex)))
    if best[1] is None:
        return None
    return best[0], best[1], best[2]


def _optimal_policy(table: MomentTable, side: float
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``η*(z) = argmax_η side·m(z, η)`` at the table's ``z`` nodes over 160 log-spaced steps in
    its range (parabolic refinement in ``log η``), and ``m*(z) = m(z, η*)``."""
    le = np.linspace(math.log(table.etas[0]), math.log(table.etas[-1]), 160)
    z = table.z_nodes
    M = np.stack([table.at(float(math.exp(x)))(z)[0] for x in le], axis=1) * side
    j = np.argmax(M, axis=1)
    jj = np.clip(j, 1, le.size - 2)
    y0, y1, y2 = (M[np.arange(z.size), jj - 1], M[np.arange(z.size), jj],
                  M[np.arange(z.size), jj + 1])
    den = y0 - 2 * y1 + y2
    off = np.where((den < 0) & (j == jj), 0.5 * (y0 - y2) / np.where(den < 0, den, -1.0), 0.0)
    h = le[1] - le[0]
    lstar = le[jj] + np.clip(off, -1, 1) * h
    lstar = np.where(j == jj, lstar, le[j])
    eta = np.exp(lstar)
    m = np.array([table.at(float(e))(np.array([zz]))[0][0] for e, zz in zip(eta, z)]) * side
    return z, eta, m * side
