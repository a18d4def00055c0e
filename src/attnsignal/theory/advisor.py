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
   power``, at most 10 runs of the effective dynamics);
3. a **searched knot family**: the better of 1 and 2 times ``exp g(log(1 + k))``, ``g``
   piecewise linear on 6 equally spaced knots over ``[0, log(1 + k̂)]`` (``k̂`` that schedule's
   predicted steps; ``g`` held at its last value beyond, so the tail is the base's, rescaled;
   steps capped at the moment table's largest unless the base is above it), ``g = 0`` being
   the base, minimised by Nelder–Mead from ``g = 0`` with at most ``search`` (default 8)
   effective-dynamics runs, each over ``1.3 k̂`` steps.

``optimal`` is the one of these with the fewest predicted samples (a :class:`TabulatedStep`
either way), and ``optimal_samples`` its predicted samples: the least predicted samples among
the schedules searched — an **upper bound** on the true optimum over all step sequences (a
richer search could only lower it), never above ``samples`` (the advised power law is one of
the candidates). ``mean_path_samples`` is the time-optimal mean path alone (no spread).

Cost and bounds
---------------
One moment table serves every run. It starts with ``n_samples`` draws at every node and is
refined to the moments' ``rtol`` (:func:`~.moments.refine_table`) only at the nodes that the
feedback schedule's law on those draws visits (mass above ``1e-6``, with two nodes' margin,
over the runs' horizon: ``4 k_path`` steps, or 4× that law's first hit of the target where
that comes first): a node the laws never reach does not move a prediction, and the
far ends of the grid, near ``|ρ| = 1``, are where the heavy-tailed jumps ask for the most
draws. The candidates (the tuning's and the search's) evolve its pooled moments only
(:func:`~.effective.pooled_law`: no replicate tables, no diagnostic) — they are compared,
not reported — on about 110 records (log-spaced over
the horizon, dense around the expected hit, where the hit is read by linear interpolation),
and stop at 1.5× the best predicted steps so far (the tuning) or 1.3× (the search): a hit
before the cut is the same number as over the full horizon. The advice and the optimal schedule
are then evolved once more over the full horizon with the full table, so ``dynamics`` and
``optimal_dynamics`` carry the replicates' standard errors and the diagnostic (a warning when
the predicted error exceeds 0.01); the table gets more draws while the advice's Monte-Carlo
error takes more than half of that tolerance (the advice's run then repeated on it, and the
optimal schedule's made on it; the candidates were compared on the refined table), as
:func:`~.effective.effective_dynamics` does for a table of its own. ``max_evaluations``
(default 40) bounds the runs in all: the tuning and the search get what the final runs leave,
and ``Advice.notes`` says in one line when it cut them short; fewer than
:data:`MIN_EVALUATIONS` is refused before any work.
``max_blocks`` bounds each run's evolution (a candidate that needs more is discarded).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
from scipy.interpolate import CubicSpline
from scipy.optimize import minimize

from ..config import ConfigError, ModelConfig, StepSize
from ..schedules import TabulatedStep, tabulated_eta
from ..validation import Boolean, Integer, Optional, Real, validated
from ._checks import BATCH, MODEL, RHO0, SEED, TARGET, UPDATE
from .moments import refine_table
from .effective import (DEFAULT_TOLERANCE, BlockBudgetExceeded, EffectiveDynamics, MomentTable,
                        check_effective_model, effective_dynamics, last_pass_warnings,
                        moment_table, pooled_law, visited_nodes, within_tolerance, z_max)
from .escape import uniform_mean_abs
from .finite_step import second_order_coefficient
from .landscape import landscape

__all__ = ["Advice", "advise_schedule", "tabulated_step", "MIN_EVALUATIONS"]

#: the tuning's and the search's largest number of evaluations by default
_TUNE_EVALUATIONS = 10
_SEARCH = 8
#: candidates run to this many times the best predicted steps so far (the records of the full
#: horizon cut there: a hit before the cut is the same number as over the full horizon)
_CUT = 1.5
#: the runs' horizon at most this many times the feedback schedule's first hit of the target
_HORIZON = 4.0
#: records of an evaluation: log-spaced over the horizon, and dense around the expected hit
_LOG_RECORDS = 60
_DENSE_RECORDS = 50
#: the fewest evaluations an advice needs: the fitted power law, one candidate of the
#: search, and the final runs of the advice and of the optimal schedule
MIN_EVALUATIONS = 4



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
    dynamics, optimal_dynamics : the effective dynamics under ``step`` and ``optimal`` (with
        their standard errors and diagnostic: the advice is as good as these predictions)
    evaluations : effective-dynamics runs that compared and reported schedules (at most
        ``max_evaluations``); calibration : those outside that budget (the feedback
        schedule's pooled run that sets where the candidates look, and the advice's final run
        repeated on a table with more draws)
    notes : one line each, e.g. that the search ended at the evaluation budget
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
    evaluations: int = 0
    notes: tuple[str, ...] = ()
    calibration: int = 0

    def describe(self) -> str:
        lines = [f"advised step: {self.step.describe()}",
                 f"predicted samples to mean |rho| = {self.target:g}: {self.samples:,}",
                 f"best schedule searched: {self.optimal_samples:,} samples "
                 f"(time-optimal mean path alone: {self.mean_path_samples:,}; "
                 f"{self.evaluations + self.calibration} effective-dynamics runs)"]
        return "\n".join([*lines, *self.notes])


def _hit(ed: EffectiveDynamics | _Pooled, target: float) -> float:
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


@dataclass(frozen=True, eq=False)
class _Pooled:
    """A candidate's prediction: the records and the mean ``|ρ|`` there, on the pooled
    moments (:func:`~.effective.pooled_law`)."""

    steps: np.ndarray
    mean_abs: np.ndarray


def _records(steps: int, focus: float | None = None) -> list[int]:
    """Records of an evaluation over ``steps``: log-spaced, and dense around ``focus``."""
    parts = [[0, steps], np.round(np.geomspace(1, steps, _LOG_RECORDS))]
    if focus is not None and math.isfinite(focus):
        parts.append(np.round(np.linspace(0.7 * focus, min(1.4 * focus, steps),
                                          _DENSE_RECORDS)))
    ks = np.unique(np.concatenate(parts))
    return [int(x) for x in ks if 0 <= x <= steps]


def _start_abs(model: ModelConfig, initial_alignment: float | None) -> float:
    """``|ρ0|`` of a start at ``initial_alignment``, or the uniform start's mean ``E|ρ0|``."""
    if initial_alignment is not None:
        return abs(float(initial_alignment))
    return uniform_mean_abs(model.d)


@validated(model=MODEL, target=TARGET, batch=BATCH, update=UPDATE,
           initial_alignment=Optional(RHO0), n_samples=Integer(ge=100), seed=SEED,
           tune=Boolean(), search=Integer(ge=0, le=200),
           max_evaluations=Integer(ge=MIN_EVALUATIONS, le=1000),
           max_blocks=Optional(Integer(ge=1)), tolerance=Optional(Real(gt=0.0, lt=1.0)))
def advise_schedule(model: ModelConfig, target: float, *, batch: int = 1,
                    update: str = "projected", initial_alignment: float | None = None,
                    n_samples: int = 4000, seed: int = 0, tune: bool = True,
                    search: int = _SEARCH, max_evaluations: int = 40,
                    max_blocks: int | None = 200_000, tolerance: float | None = DEFAULT_TOLERANCE,
                    progress: Callable[[int, int], None] | None = None) -> Advice:
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
    max_evaluations : at most this many effective-dynamics runs compare and report schedules
        (>= 4: the fitted power law, the tuning's and the search's candidates, and the two
        final runs); the tuning and the search stop when it is used up (``Advice.notes`` says
        so). On top of them: the feedback schedule's pooled run on the starting draws (which
        chooses the nodes to refine and the horizon) and, counted in ``Advice.calibration``,
        its pooled run on the refined table (which sets where the candidates look; one retry
        over a longer horizon) and the advice's final run once more per extension of the
        table (at most four, to ``16 × n_samples``) (module docstring)
    max_blocks : each run's block budget (a candidate or a feedback run that needs more is
        discarded; the final runs needing more raise
        :class:`~attnsignal.theory.effective.BlockBudgetExceeded`, one line)
    tolerance : the predictions' tolerance on the mean ``|ρ|`` (as :func:`effective_dynamics`):
        the moment table gets more draws while the Monte-Carlo error of the advice's
        prediction takes more than half of it, and the final runs warn when their predicted
        error exceeds it (None: neither)
    progress : called as ``progress(done, max_evaluations)`` after each run

    Returns
    -------
    Advice. Raises ``ConfigError`` for bad input, or (field ``target``) when the mean dynamics
    cannot reach the target (a stable interior fixed point or a repelling end in the way).
    """
    check_effective_model(model)
    if batch > n_samples:
        raise ConfigError("batch", f"must be <= n_samples = {n_samples} (the one-step moments "
                          "draw that many samples a node)", batch)
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
    z_top = max(z_max(model, eta_lo * s2, batch, None, seed), float(np.arctanh(rho_end)) + 1.0)
    # the table with its starting draws everywhere, refined to the moments' tolerance at the
    # nodes that the feedback schedule's law (on those draws) visits, with a margin
    table = moment_table(model, eta_lo, eta_hi, batch=batch, update=update,
                         z_max=min(z_top, 9.0), n_samples=n_samples, seed=seed, rtol=None)
    z0 = side * float(np.arctanh(max(r0, 1e-6)))
    z1 = side * float(np.arctanh(rho_end))
    try:
        optimal, k_path, *_ = _feedback_schedule(table, side, z0, z1, s2, target)
        scope, k_hit = _visited(model, optimal, table, max(4 * k_path, 1000), target,
                                initial_alignment, max_blocks)
    except (ConfigError, FloatingPointError):  # the starting draws' noise: refine everywhere
        scope, k_hit = np.ones(table.z_nodes.size, dtype=bool), math.inf
    table = refine_table(table, scope)
    optimal, k_path, zf, kz, z_at_k, etas = _feedback_schedule(table, side, z0, z1, s2, target)

    ev = _Evaluator(model, target, table, initial_alignment=initial_alignment, batch=batch,
                    update=update, seed=seed, n_samples=n_samples, budget=max_evaluations,
                    max_blocks=max_blocks, progress=progress, tolerance=tolerance)
    # the runs' horizon: 4× the mean path's steps, or 4× the feedback schedule's first hit of
    # the target (on the starting draws) where that comes first
    horizon = max(min(4 * k_path, int(math.ceil(_HORIZON * k_hit)) if math.isfinite(k_hit)
                      else 4 * k_path), 1000)
    focus = float(k_path)

    # the feedback schedule's hit (pooled moments), over a horizon 4× longer if it misses
    k_opt, _ = ev(optimal, horizon, focus, counted=False)
    if not math.isfinite(k_opt):
        horizon *= 4
        k_opt, _ = ev(optimal, horizon, focus, counted=False)
    if math.isfinite(k_opt):
        focus = k_opt
    cut = int(math.ceil(_CUT * focus)) + 2 if math.isfinite(k_opt) else None

    # ---- the power family: least-squares fit in log η, then tuned on predicted samples
    k_fit = int(min(k_path, k_opt if math.isfinite(k_opt) else k_path))
    kk = np.arange(max(k_fit, 2))
    le = np.log(optimal.eta(kk))

    def resid(p: np.ndarray) -> tuple[float, np.ndarray]:
        # the mean squared residual and its gradient (one pass over the steps a call)
        l0, lk0, pw = p
        u = kk / math.exp(lk0)
        g = np.log1p(u)
        r = le - l0 + pw * g
        grad = [-2.0 * np.mean(r), -2.0 * pw * np.mean(r * u / (1.0 + u)), 2.0 * np.mean(r * g)]
        return float(np.mean(r * r)), np.array(grad)

    best = min((minimize(resid, [le[0], math.log(max(k_fit, 2) / 10 * f), 0.75], jac=True,
                         bounds=[(le[0] - 3, le[0] + 3), (0.0, math.log(1e9)), (0.51, 1.0)],
                         method="L-BFGS-B") for f in (0.1, 1.0, 10.0)), key=lambda r: r.fun)
    params = best.x
    cache: dict[tuple, tuple[float, Any]] = {}

    def power(p: np.ndarray) -> StepSize:
        return StepSize(eta0=math.exp(float(p[0])), k0=math.exp(min(float(p[1]),
                                                                    math.log(1e12))),
                        power=float(np.clip(p[2], 0.51, 1.0)))

    def cost(p: np.ndarray) -> float:
        st = power(p)
        key = (round(math.log(st.eta0), 4), round(math.log(st.k0), 4), round(st.power, 4))
        if key not in cache:
            if not ev.left():
                return math.inf
            cache[key] = ev(st, horizon, focus, cut)
        return ev.score(*cache[key], cut or horizon)

    c0 = cost(params)
    if tune and math.isfinite(c0):
        # the tuning may use what the final evaluations and half the search leave
        n_tune = min(_TUNE_EVALUATIONS, max(0, ev.remaining() - 2 - min(search, _SEARCH) // 2))
        if n_tune < _TUNE_EVALUATIONS:
            ev.cut_short("tuning", n_tune, _TUNE_EVALUATIONS)
        if n_tune > 0:
            res = minimize(cost, params, method="Nelder-Mead",
                           options=dict(maxfev=n_tune, xatol=0.02, fatol=0.01 * min(c0, focus),
                                        initial_simplex=[params, params + [0.3, 0, 0],
                                                         params + [0, 0.7, 0],
                                                         params + [0, 0, -0.15 if params[2] > 0.7
                                                                   else 0.15]]))
            if res.fun < c0:
                params = res.x
    step = power(params)

    # ---- the optimal schedule: the best of the feedback, the power law and a searched family
    k_adv = cost(params)
    power_tab = _as_tabulated(step, max(k_path, 1))
    cands: list[tuple[float, Any]] = [(k_opt, optimal), (k_adv, power_tab)]
    if search > 0:
        base_k, base = min(cands, key=lambda c: c[0])
        n_search = min(search, max(0, ev.remaining() - 2))
        if n_search < search:
            ev.cut_short("search", n_search, search)
        if math.isfinite(base_k) and n_search > 0:
            found = _search(ev, base, base_k, horizon, n_search, float(table.etas[-1]) / s2)
            if found is not None:
                cands.append(found)

    # ---- the advice and the optimal schedule over the full horizon, with the full table
    # (replicate standard errors and the diagnostic); the table gets more draws while the
    # advice's Monte-Carlo error takes more than half the tolerance, as effective_dynamics does
    # for a table of its own (a repeated run is not counted against the budget)
    # (a run that a table extension supersedes keeps its warnings to itself: the reported
    # run's are the ones raised)
    finals = iter([True])

    def final_advice(t: MomentTable) -> EffectiveDynamics:
        ev.use(t)
        return ev(step, horizon, focus, final=True, counted=next(finals, False))[1]

    recorded, raised = last_pass_warnings(final_advice)
    ed_adv, _ = within_tolerance(recorded, ev.table, tolerance)
    for w in raised:
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    k_adv = _hit(ed_adv, target)
    k_best, optimal = min(cands, key=lambda c: c[0])
    if optimal is power_tab or not k_best < k_adv:
        k_best, optimal, ed_best = k_adv, power_tab, ed_adv
    else:
        k_best, ed_best = ev(optimal, horizon, focus, final=True)
        if not k_best < k_adv:  # the records of the full horizon decide a near tie
            k_best, optimal, ed_best = k_adv, power_tab, ed_adv

    def samples(k: float) -> int:
        return int(math.ceil(k)) * batch if math.isfinite(k) else -1

    return Advice(target=target, batch=batch, update=update,
                  initial_alignment=initial_alignment, step=step, samples=samples(k_adv),
                  optimal=optimal, optimal_samples=samples(k_best),
                  mean_path_samples=samples(kz[np.searchsorted(np.abs(np.tanh(zf)), target)]
                                            if np.abs(np.tanh(zf[-1])) >= target else math.inf),
                  rho_path=np.tanh(z_at_k), eta_path=etas, dynamics=ed_adv,
                  optimal_dynamics=ed_best, evaluations=ev.count, notes=tuple(ev.notes),
                  calibration=ev.calibration)




def _feedback_schedule(table: MomentTable, side: float, z0: float, z1: float, s2: float,
                       target: float) -> tuple[TabulatedStep, int, np.ndarray, np.ndarray,
                                               np.ndarray, np.ndarray]:
    """The time-optimal feedback ``η*(z)`` on the table's nodes along the mean path from ``z0``
    to ``z1`` (module docstring), tabulated with its ``1/k`` tail: ``(schedule, steps of the
    path, z along it, steps to each z, z at each step, η at each step)``. Raises ConfigError
    (field ``target``) when the mean dynamics stalls on the way."""
    z_path, eta_star_std, m_star = _optimal_policy(table, side)
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
    # tail: η_last (1 + j/k1)^(−1), slope matched over the last 10 % of the table
    n10 = max(2, k_path // 10)
    slope = (math.log(etas[-1]) - math.log(etas[-n10])) / (n10 - 1)
    k1 = float(min(max(-1.0 / slope if slope < 0 else k_path, 1.0), 1e9))
    tail = StepSize(eta0=float(etas[-1]), k0=k1, power=1.0)
    optimal = tabulated_step(etas[:-1], tail)
    return optimal, k_path, zf, kz, z_at_k, etas


def _visited(model: ModelConfig, schedule: Any, table: MomentTable, horizon: int,
             target: float, initial_alignment: float | None, max_blocks: int | None
             ) -> tuple[np.ndarray, float]:
    """The moment nodes that the law under ``schedule`` (the pooled moments of ``table``,
    :data:`_LOG_RECORDS` log-spaced records) visits up to the horizon of the runs —
    ``horizon`` steps, or :data:`_HORIZON` × the first hit of ``target`` if that comes first —
    by the effective dynamics' own rule (:func:`~attnsignal.theory.effective.visited_nodes`:
    more than ``10⁻⁴`` of the mass within ``±NODE_DZ/2`` at some record), and that hit (inf if
    none): the nodes whose moments shape the advisor's predictions (every node if that
    evolution exceeds ``max_blocks`` or visits none)."""
    everywhere = np.ones(table.z_nodes.size, dtype=bool)
    try:
        ks, z, law, mean_abs = pooled_law(model, schedule, table, _records(horizon),
                                          initial_alignment=initial_alignment,
                                          max_blocks=max_blocks)
    except BlockBudgetExceeded:
        return everywhere, math.inf
    k_hit = _hit(_Pooled(ks, mean_abs), target)
    if math.isfinite(k_hit):
        law = law[np.asarray(ks) <= _HORIZON * k_hit]
    visited = visited_nodes(table, law, z)
    return (visited if np.any(visited) else everywhere), k_hit


class _Evaluator:
    """The effective dynamics of candidate schedules on one moment table, counted against the
    evaluation budget. Candidates evolve the pooled table alone (no replicates, no diagnostic:
    they are only compared); the final evaluations (``final=True``) the full table, with the
    replicates' standard errors and the diagnostic. Records: :data:`_LOG_RECORDS` log-spaced over
    the horizon and :data:`_DENSE_RECORDS` linearly spaced over ``[0.7, 1.4] × focus`` (the
    expected hit), where the hit is read by linear interpolation."""

    def __init__(self, model: ModelConfig, target: float, table: MomentTable, *,
                 initial_alignment: float | None, batch: int, update: str, seed: int,
                 n_samples: int, budget: int, max_blocks: int | None, progress: Any,
                 tolerance: float | None):
        self.model, self.target, self.tolerance = model, target, tolerance
        self.use(table)
        self.kw = dict(initial_alignment=initial_alignment, batch=batch, update=update,
                       seed=seed, n_samples=n_samples, max_blocks=max_blocks)
        self.budget, self.progress = budget, progress
        self.count = self.calibration = 0
        self.notes: list[str] = []

    def use(self, table: MomentTable) -> None:
        """Evaluate on ``table`` from now on (its pooled moments for the candidates)."""
        self.table = table

    def remaining(self) -> int:
        return self.budget - self.count

    def left(self) -> bool:
        """Whether a candidate may still be evaluated; notes once when the budget is used up."""
        if self.count < self.budget:
            return True
        self._note(f"the search ended at the evaluation budget ({self.budget} "
                   "effective-dynamics runs, max_evaluations)")
        return False

    def cut_short(self, what: str, runs: int, wanted: int) -> None:
        """Note that the evaluation budget left ``what`` ``runs`` of its ``wanted``."""
        self._note(f"the {what} was cut to {runs} of its {wanted} effective-dynamics runs by "
                   f"the evaluation budget (max_evaluations = {self.budget})")

    def _note(self, note: str) -> None:
        if note not in self.notes:
            self.notes.append(note)

    def __call__(self, step: Any, horizon: int, focus: float, cut: int | None = None,
                 final: bool = False, counted: bool = True) -> tuple[float, Any]:
        rec = _records(horizon, focus)
        if cut is not None and cut < horizon:
            rec = [r for r in rec if r < cut] + [cut]
        self.count += counted
        self.calibration += not counted
        try:
            if final:
                ed = effective_dynamics(self.model, step, steps=rec[-1], record=rec,
                                        moments=self.table, tolerance=self.tolerance,
                                        **self.kw)
            else:  # compared, not reported: the pooled moments alone, no diagnostic
                ks, _, _, mean_abs = pooled_law(
                    self.model, step, self.table, rec,
                    initial_alignment=self.kw["initial_alignment"],
                    max_blocks=self.kw["max_blocks"])
                ed = _Pooled(ks, mean_abs)
        except BlockBudgetExceeded:
            if final:
                raise
            return math.inf, None
        finally:
            if self.progress is not None and counted:
                self.progress(self.count, self.budget)
        return _hit(ed, self.target), ed

    @staticmethod
    def score(k: float, ed: Any, span: int) -> float:
        """What the searches minimise: the hit, or beyond the span ``span·(2 − mean|ρ|)`` at its
        end (how far it got), or ``10·span`` where nothing was evolved."""
        if math.isfinite(k):
            return k
        if ed is not None and np.isfinite(ed.mean_abs[-1]):
            return span * (1.0 + max(0.0, 1.0 - float(ed.mean_abs[-1])))
        return 10.0 * span


def _as_tabulated(step: StepSize, n: int) -> TabulatedStep:
    """The power-law ``step`` as a :class:`TabulatedStep` (same ``η_k`` for every ``k``): the
    first ``n`` steps tabulated, then the power law shifted to start at ``n``."""
    return tabulated_step(step.eta(np.arange(n)), step.shifted(n))


class _Candidate:
    """A searched schedule before validation: ``η_k = etas[k]`` for ``k < n``, then ``tail``
    shifted to start at ``n`` — :class:`~attnsignal.schedules.TabulatedStep`'s steps, to the
    bit, without building one (its validation converts the table to a tuple and back: most of a
    candidate's cost beside its evolution). :meth:`schedule` builds it for the winner."""

    def __init__(self, etas: np.ndarray, tail: StepSize):
        self.etas, self.tail = etas, tail

    def eta(self, k: Any) -> np.ndarray:
        return tabulated_eta(self.etas, self.tail, k)

    def schedule(self) -> TabulatedStep:
        return tabulated_step(self.etas, self.tail)


def _knot_correction(base: TabulatedStep, k_span: float, n: int, knots: np.ndarray,
                     cap: float) -> _Candidate:
    """``η_k = base.η_k · exp(g(log(1 + k)))``, ``g`` piecewise linear through ``knots`` (values
    at ``log(1 + k)`` equally spaced on ``[0, log(1 + k_span)]``, held at the last value
    beyond), capped at ``max(cap, base.η_k)``; tabulated for ``k < n``, then ``base``'s tail
    scaled by ``exp(g_last)`` (a :class:`_Candidate`)."""
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
    return _Candidate(e, shifted.replace(eta0=c * shifted.eta0))


_SEARCH_KNOTS = 6


def _search(ev: "_Evaluator", base: TabulatedStep, base_k: float, horizon: int, budget: int,
            cap: float) -> tuple[float, TabulatedStep] | None:
    """Nelder–Mead over the knot correction ``g`` of :func:`_knot_correction` (``g = 0`` is
    ``base``), at most ``budget`` effective-dynamics runs of ``1.3 × base_k`` steps (the record
    grid of the full ``horizon`` cut there, so a hit before the cut is the same number as over
    the full horizon). Returns the best searched ``(k, schedule)``, or None when no searched
    schedule beat ``base``."""
    h_s = int(min(horizon, math.ceil(1.3 * base_k) + 2))
    n = max(h_s, len(base.etas))
    best: list[Any] = [base_k, None]
    seen: dict[tuple, float] = {tuple(np.zeros(_SEARCH_KNOTS)): base_k}  # g = 0 is the base
    count = [0]

    def cost(g: np.ndarray) -> float:
        key = tuple(np.round(g, 3))
        if key in seen:
            return seen[key]
        if count[0] >= budget or not ev.left():
            return 10.0 * h_s
        count[0] += 1
        try:
            sched = _knot_correction(base, base_k, n, np.asarray(g, dtype=np.float64), cap)
            k, ed = ev(sched, horizon, base_k, cut=h_s)
        except (ConfigError, FloatingPointError, ValueError):
            k, ed, sched = math.inf, None, None
        if math.isfinite(k) and k < best[0]:
            best[:] = [k, sched]
        seen[key] = c = ev.score(k, ed, h_s)
        return c

    x0 = np.zeros(_SEARCH_KNOTS)
    simplex = [x0] + [x0 + 0.3 * np.eye(_SEARCH_KNOTS)[i] for i in range(_SEARCH_KNOTS)]
    minimize(cost, x0, method="Nelder-Mead",
             options=dict(maxfev=budget, xatol=0.01, fatol=1e-3 * base_k,
                          initial_simplex=np.array(simplex)))
    if best[1] is None:
        return None
    return best[0], best[1].schedule()


def _optimal_policy(table: MomentTable, side: float
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``η*(z) = argmax_η side·m(z, η)`` at the table's ``z`` nodes over 160 log-spaced steps in
    its range (parabolic refinement in ``log η``), and ``m*(z) = m(z, η*)``. At a node the
    interpolant of :meth:`~.moments.MomentTable.at` is the node's value, so ``m`` is read there
    directly (:meth:`~.moments.MomentTable.node_moments`; ``m*`` with each node at its own
    ``η*``)."""
    le = np.linspace(math.log(table.etas[0]), math.log(table.etas[-1]), 160)
    z = table.z_nodes
    # m(z_i, η_j), shape (nodes, steps)
    M = np.stack([table.node_moments(float(e))[0] for e in np.exp(le)], axis=1) * side
    rows = np.arange(z.size)
    j = np.argmax(M, axis=1)
    jj = np.clip(j, 1, le.size - 2)
    y0, y1, y2 = M[rows, jj - 1], M[rows, jj], M[rows, jj + 1]
    den = y0 - 2 * y1 + y2
    off = np.where((den < 0) & (j == jj), 0.5 * (y0 - y2) / np.where(den < 0, den, -1.0), 0.0)
    h = le[1] - le[0]
    lstar = le[jj] + np.clip(off, -1, 1) * h
    lstar = np.where(j == jj, lstar, le[j])
    eta = np.exp(lstar)
    return z, eta, table.node_moments(eta)[0]
