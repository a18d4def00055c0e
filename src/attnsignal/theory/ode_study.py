"""The limiting ODE from one start, beside a simulation and the effective dynamics: the
analysis behind ``attnsignal ode`` (which parses its options and prints what is computed here).

* :func:`ode_study` solves ``dρ/dt = (1 − ρ²) Φ'(ρ)`` from ``ρ0`` (docs/theory.md) with the
  fixed points and the verdict of :func:`~attnsignal.theory.landscape_verdict`, and chooses the
  window of ODE time to show: ``t_max`` when given, else 1.25 × the last hitting time, else (a
  stationary start, or no target reached) 20 time units of the field. An exact interior fixed
  point (``ρ0 = 0`` with a random sign, where ``Φ'`` is odd) is held fixed: the numerical
  solution would leave it through round-off in ``Φ'`` (~1e-17) and report meaningless hitting
  times.
* :func:`window_steps` is the number of steps the schedule needs to reach the window's end.
* :func:`simulation_comparison` is the simulated mean (and its 10–90 % band) beside the ODE
  (:func:`~attnsignal.theory.tracking.tracking`).
* :func:`check_effective`, :func:`effective_prediction`, :func:`effective_frame` and
  :func:`effective_comparison`: the effective dynamics (docs/effective-dynamics.md) over the
  same records, and the gaps of both theories to the simulated mean ``|ρ|``
  (:func:`~attnsignal.theory.tracking.mean_gap`).

Bad input is a ``ConfigError`` (one line naming the field), raised before any work.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import pandas as pd

from ..config import ConfigError, ModelConfig, RunConfig
from ..validation import NOTHING

__all__ = ["OdeStudy", "ode_study", "window_steps", "simulation_comparison", "check_effective",
           "effective_prediction", "effective_frame", "effective_comparison",
           "EFFECTIVE_DRAWS", "UNREACHABLE_STEP", "MAX_WINDOW_STEPS"]

#: a step index beyond this is "never" (``step_at_time`` returns ``k_max + 1`` when the
#: schedule's ``Σ η_k`` never reaches ``t``)
UNREACHABLE_STEP = 10 ** 12
#: the most steps :func:`window_steps` chooses (more must be asked for)
MAX_WINDOW_STEPS = 5_000_000
#: reduced draws per moment node of the effective dynamics (its default ``n_samples``)
EFFECTIVE_DRAWS = 4000


@dataclass(frozen=True)
class OdeStudy:
    """The limiting ODE from ``rho0``: ``solution``, the fixed points and verdict ``basins``
    (``Φ'`` by ``method``), whether ``rho0`` is an exact interior fixed point held fixed
    (``stationary``), and the window ``[0, t_window]`` of ODE time to show."""

    model: ModelConfig
    rho0: float
    method: str
    basins: Any
    solution: Any
    stationary: bool
    t_window: float

    def at(self, t: Any) -> np.ndarray:
        """``ρ(t)`` on the ODE (``rho0`` everywhere when stationary)."""
        if self.stationary:
            return np.full(np.shape(t), self.rho0)
        return np.asarray(self.solution(t), dtype=np.float64)


def ode_study(model: ModelConfig, rho0: float, step: Any, t_max: float | None = None,
              targets: tuple[float, ...] | None = None) -> OdeStudy:
    """The limiting ODE from ``rho0`` under ``step``, with its fixed points and the window to
    show (see the module's docstring). ``Φ'`` by exact quadrature, or by Monte Carlo beyond
    its ``βσ`` limit (:func:`~attnsignal.theory.landscape.default_method`)."""
    from .field import vector_field
    from .fixed_points import landscape_verdict
    from .landscape import default_method
    from .ode import DEFAULT_TARGETS, OdeSolution, solve_ode

    targets = DEFAULT_TARGETS if targets is None else tuple(targets)
    method = default_method(model)
    basins = landscape_verdict(model, method)
    stationary = any(abs(p.rho) < 1.0 and abs(p.rho - rho0) <= 1e-12
                     for p in basins.fixed_points)
    if stationary:
        t_end = t_max if t_max is not None else 1.0
        sol = OdeSolution(model=model, rho0=rho0, method=method, t=np.array([0.0, t_end]),
                          rho=np.array([rho0, rho0]),
                          hitting_times={x: math.nan for x in targets}, t_end=t_end,
                          step=step, hitting_steps={x: -1 for x in targets})
    else:
        sol = solve_ode(model, rho0, t_max, step=step, targets=targets, method=method)
    finite = [h for h in sol.hitting_times.values() if math.isfinite(h)]
    if t_max is not None:
        t_win = t_max
    elif finite and max(finite) > 0:
        t_win = 1.25 * max(finite)
    else:  # stationary start or no target reached: 20 time units of the field
        scale = float(np.max(np.abs(vector_field(model, np.linspace(-1, 1, 201), method))))
        t_win = 20.0 / max(scale, 1e-300)
        t_win = t_win if stationary else min(sol.t_end, t_win)
    return OdeStudy(model, float(rho0), method, basins, sol, stationary, float(t_win))


def window_steps(step: Any, t_window: float) -> int:
    """The steps the schedule takes to reach ODE time ``t_window`` (at least 1); a
    ``ConfigError`` (field ``steps``: give them) when that is never, or more than
    :data:`MAX_WINDOW_STEPS`."""
    k = int(step.step_at_time(t_window))
    if k > UNREACHABLE_STEP:
        raise ConfigError(
            "steps", f"must be given: the schedule does not reach ODE time t = {t_window:.4g} "
            f"within {UNREACHABLE_STEP:.0e} steps (Σ η_k converges below it, or the field is "
            "so weak that t is huge); or choose a smaller t_max", step.describe())
    if k > MAX_WINDOW_STEPS:
        raise ConfigError(
            "steps", f"must be given: the schedule needs {k:,} steps to reach t = "
            f"{t_window:.4g} (more than {MAX_WINDOW_STEPS:,}); or choose a smaller t_max",
            NOTHING)
    return max(k, 1)


def simulation_comparison(result: Any, model: ModelConfig, t_window: float
                          ) -> tuple[Any, pd.DataFrame, np.ndarray]:
    """The simulation beside the ODE up to ``min(t_window, its last record)``: the
    :class:`~attnsignal.theory.tracking.Tracking`, its frame (``t``, ``step``, ``sim_mean``,
    ``sim_se``, ``sim_q10``, ``sim_q90``, ``ode``, ``mode``: in ``|ρ|`` when the runs split
    signs) and the mask of the records used. A ``ConfigError`` (field ``runs``) when every run
    diverged."""
    from .tracking import tracking

    diverged = np.asarray(result.diverged, dtype=bool)
    if bool(np.all(diverged)):
        raise ConfigError("runs", "must not all diverge to be compared (try a smaller step)",
                          f"{int(diverged.size)} diverged runs")
    T = min(t_window, float(result.ode_time[-1]))
    tr = tracking(result, model, T)
    keep = np.asarray(result.ode_time) <= tr.T + 1e-12 * max(1.0, tr.T)
    vals = np.asarray(result.alignment, dtype=np.float64)[~diverged][:, keep]
    if tr.mode == "abs":
        vals = np.abs(vals)
    frame = pd.DataFrame({"t": tr.t, "step": tr.steps, "sim_mean": tr.sim_mean,
                          "sim_se": tr.sim_se, "sim_q10": np.quantile(vals, 0.1, axis=0),
                          "sim_q90": np.quantile(vals, 0.9, axis=0), "ode": tr.ode})
    frame["mode"] = tr.mode
    return tr, frame, keep


def check_effective(model: ModelConfig, step: Any, rc: RunConfig,
                    n_samples: int = EFFECTIVE_DRAWS) -> None:
    """Refuse, before any work, what the effective dynamics cannot do for ``rc``: a baseline
    method, more steps than it integrates, steps ``σ²η_k`` above ``MAX_STD_STEP`` (its one-step
    moments are normalised by ``η²``, which must stay finite — beyond it the drift is NaN and
    the law would silently stand still), minibatches larger than its draws or than memory
    holds (:func:`~attnsignal.theory.effective.check_pool_memory`), more records × grid
    nodes than it keeps (at most :func:`~attnsignal.theory.effective.max_grid_nodes` nodes),
    more steps × grid nodes than its work bound, or a model it cannot evolve
    (:func:`~attnsignal.theory.effective.check_effective_model`)."""
    from .effective import (MAX_NODE_BLOCKS, MAX_STD_STEP, _MAX_LAW, _MAX_STEPS,
                            check_effective_model, check_pool_memory, max_grid_nodes)

    check_effective_model(model)
    if rc.method != "sga":
        raise ConfigError("method", "must be 'sga' with --effective (the effective dynamics "
                          "predicts attention's SGA)", rc.method)
    if rc.steps > _MAX_STEPS:
        raise ConfigError("steps", f"must be <= {_MAX_STEPS:,} with --effective", rc.steps)
    eta_max = float(np.max(step.eta(np.arange(rc.steps, dtype=np.int64)))) * model.noise_std ** 2
    if not eta_max <= MAX_STD_STEP:
        raise ConfigError("step", f"must keep σ²η_k <= {MAX_STD_STEP:g} with --effective (its "
                          f"one-step moments are normalised by η²); largest σ²η_k = "
                          f"{eta_max:.3g}", step.describe())
    if rc.batch > n_samples:
        raise ConfigError("batch", f"must be <= {n_samples} with --effective (the one-step "
                          "moments draw that many samples per node)", rc.batch)
    check_pool_memory(rc.batch, n_samples)
    grid = max_grid_nodes(model.d)
    if rc.steps * grid > MAX_NODE_BLOCKS:
        raise ConfigError("steps", f"must be <= {int(MAX_NODE_BLOCKS // grid):,} with "
                          f"--effective at d = {model.d} (at most one evolution block a step on "
                          f"up to {grid:,} grid nodes: {MAX_NODE_BLOCKS:.0e} nodes × blocks)",
                          rc.steps)
    n_rec = rc.n_records()
    if n_rec * grid > _MAX_LAW:
        raise ConfigError("record", f"must give at most {_MAX_LAW // grid:,} records with "
                          f"--effective (it keeps the law on {grid:,} grid nodes at every "
                          "record)", f"{n_rec:,} records")


def effective_prediction(model: ModelConfig, step: Any, rc: RunConfig, rho0: float) -> Any:
    """The effective dynamics over ``rc.steps`` updates from ``rho0`` at ``rc``'s records (the
    same records as a simulation of ``rc``), batch, update rule and seed. A ``ConfigError``
    (field ``step``) when its law does not stay finite (steps too large for its one-step
    moments)."""
    from .effective import effective_dynamics

    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)  # reported below, one line
            ed = effective_dynamics(
                model, step, steps=rc.steps, initial_alignment=rho0, batch=rc.batch,
                update=rc.update, record_every=rc.record_every if rc.record is None else None,
                record=rc.record, seed=rc.seed)
            finite = bool(np.all(np.isfinite(ed.law)) and np.all(np.isfinite(ed.mean_abs)))
    except FloatingPointError as exc:
        raise ConfigError("step", f"must keep the effective dynamics finite ({exc}); try a "
                          "smaller eta0", step.describe()) from None
    if not finite:
        raise ConfigError("step", "must keep the effective dynamics finite (its law became NaN "
                          "or infinite: the steps are too large for its one-step moments); "
                          "try a smaller eta0", step.describe())
    return ed


def effective_frame(ed: Any, ode_at: Callable[[Any], Any]) -> pd.DataFrame:
    """One row per record of the effective dynamics ``ed``, with the ODE ``ode_at(t)``."""
    q10, q50, q90 = ed.quantile([0.1, 0.5, 0.9])
    ode = np.asarray(ode_at(ed.ode_time), dtype=np.float64)
    return pd.DataFrame({
        "step": ed.steps, "t": ed.ode_time, "ode_rho": ode, "ode_abs_rho": np.abs(ode),
        "effective_mean_abs_rho": ed.mean_abs, "effective_mean_rho": ed.mean,
        "effective_q10_abs_rho": q10, "effective_q50_abs_rho": q50,
        "effective_q90_abs_rho": q90})


def _gap(sim: np.ndarray, se: np.ndarray, pred: np.ndarray, steps: np.ndarray,
         t: np.ndarray) -> dict:
    """Largest ``|sim − pred|`` over the records, where it occurs (step and ODE time), the
    simulation's standard error there, and the largest ``|sim − pred| − 3 se``
    (:func:`~attnsignal.theory.tracking.mean_gap`)."""
    from .tracking import mean_gap

    g = mean_gap(sim, se, steps, pred, z=3.0)
    j = int(np.flatnonzero(np.asarray(steps) == g.step)[0])
    return {"gap": g.gap, "step": g.step, "t": float(t[j]), "se": g.se, "excess_3se": g.excess}


def effective_comparison(frame: pd.DataFrame, result: Any, ed: Any,
                         ode_at: Callable[[Any], Any], keep: np.ndarray
                         ) -> tuple[pd.DataFrame, dict]:
    """The comparison ``frame`` (:func:`simulation_comparison`) with ``|ρ|`` columns of the
    simulation, the ODE and the effective dynamics on the simulation's records (``keep``),
    and the gaps of both theories to the simulated mean ``|ρ|`` (``"ode"``, ``"effective"``:
    gap, step, t, se, excess_3se) with the share of (run, record) pairs after the first 5 % of
    the records inside the effective 10–90 % band (``"band"``)."""
    steps = np.asarray(result.steps)
    if not np.array_equal(steps, ed.steps):  # same RunConfig: a bug if they differ
        raise RuntimeError("the simulation's and the effective dynamics' records differ")
    ok = ~np.asarray(result.diverged, dtype=bool)
    vals = np.abs(np.asarray(result.alignment, dtype=np.float64)[ok][:, keep])
    runs = vals.shape[0]
    mean = vals.mean(axis=0)
    se = vals.std(axis=0, ddof=1) / math.sqrt(runs) if runs > 1 else np.zeros_like(mean)
    t = np.asarray(result.ode_time, dtype=np.float64)[keep]
    ode_abs = np.abs(np.asarray(ode_at(t), dtype=np.float64))
    eq10, eq90 = (q[keep] for q in ed.quantile([0.1, 0.9]))
    frame = frame.copy()
    frame["sim_mean_abs_rho"] = mean
    frame["sim_se_abs_rho"] = se
    frame["sim_q10_abs_rho"] = np.quantile(vals, 0.1, axis=0)
    frame["sim_q90_abs_rho"] = np.quantile(vals, 0.9, axis=0)
    frame["ode_abs_rho"] = ode_abs
    frame["effective_mean_abs_rho"] = ed.mean_abs[keep]
    frame["effective_q10_abs_rho"] = eq10
    frame["effective_q90_abs_rho"] = eq90
    first = int(math.ceil(0.05 * t.size))
    inside = (vals >= eq10) & (vals <= eq90)
    gaps = {"ode": _gap(mean, se, ode_abs, steps[keep], t),
            "effective": _gap(mean, se, ed.mean_abs[keep], steps[keep], t),
            "band": float(inside[:, first:].mean()) if first < t.size else math.nan}
    return frame, gaps
