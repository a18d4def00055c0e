"""Does the simulation track the ODE? Gap to the mean-field solution and stochastic-approximation
diagnostics (the asymptotic-pseudo-trajectory conditions behind the paper's ODE method).

Tracking
--------
For a :class:`~attnsignal.results.Result` with records ``ρ_{r,j}`` (run ``r``, record ``j`` at ODE
time ``t_j = Σ_{k<K_j} η_k``) the ODE solution ``ρ(t; ρ0_r)`` from each run's own start is
computed (one vectorised solve in ``z = artanh ρ``; identical starts are solved once). Mode:

* ``"signed"`` when every run keeps one sign at the start and at the last record used (all
  ``> 0`` or all ``< 0``): compare ``mean_r ρ_{r,j}`` with ``mean_r ρ(t_j; ρ0_r)``;
* ``"abs"`` when runs split signs (e.g. random starts in a symmetric landscape), where the
  signed mean would average ``+ξ`` and ``−ξ`` runs into ~0: compare ``mean_r |ρ_{r,j}|`` with
  ``mean_r |ρ(t_j; ρ0_r)|``.

The band is ``mean ± z·se`` (``se`` = sd over runs / √runs, ``z = 1.96``); ``gap`` is
``max_j |sim_j − ode_j|`` over ``t_j <= T`` and ``excess`` the largest distance of the ODE curve
outside the band. Diverged runs are left out.

Gap to any predicted path
-------------------------
:func:`path_gap` (from the runs) and :func:`mean_gap` (from their mean and its standard error)
compare a predicted path with the simulated mean at the same records,

    gap = max_j |mean_r x_rj − pred_j|,        excess(z) = max_j (|mean_r x_rj − pred_j| − z·se_j),

``se_j`` the standard error of the simulated mean at record ``j`` (sample standard deviation over
the runs / √runs): ``gap`` is what reports quote (with the standard error where it is attained),
``excess`` what a tolerance "≤ tol + z SE at every record" checks (it holds iff
``excess ≤ tol``). Used for the limiting ODE and the effective dynamics alike (the reproduction's
E1/E5, ``attnsignal ode --compare``).

SA diagnostics
--------------
Along the recorded trajectory, with ``F(ρ) = (1 − ρ²)Φ'(ρ)`` and ``V_B`` the gradient variance
of :func:`.finite_step.gradient_variance` (interpolated from a common-random-number grid):

* noise budget ``B_j = Σ_{k<K_j} η_k² V_B(ρ_k)`` (``ρ_k`` piecewise linear between records) and
  the remaining budget ``Σ_{k>=K_j} η_k² V_B(ρ_k)`` (the part after the last record uses
  ``V_B`` at the last record and ``Σ η_k²`` to infinity; infinite if ``power <= 1/2``). The
  martingale part of SGA is square-summable iff the budget is finite; the remaining budget
  bounds the variance of all future noise.
* martingale partial sums ``M_j = Σ_{i<j} [ρ_{i+1} − ρ_i − (t_{i+1} − t_i) ½(F(ρ_i) + F(ρ_{i+1}))
  + Σ_{k in interval i} η_k² κ_B(ρ_k)]`` — the increments ``η_k (Δρ_k/η_k − F(ρ_k))`` summed
  over each record interval, with the drift integrated by the trapezoid rule and (by default)
  the second-order mean change ``−η_k² κ_B`` of :func:`.finite_step.second_order_coefficient`
  removed — and the window maxima
  ``W_j = max_{j' > j, t_{j'} − t_j <= T} |M_{j'} − M_j|``: the APT condition is ``W_j → 0`` as
  ``j`` grows. ``window_sd`` is the predicted scale ``√(Σ_{window} η_k² Var(ξ·ḡ_R)(ρ_k))`` of
  the alignment martingale over the window (:func:`.finite_step.drift_variance`: only the
  ``e`` component of the noise moves ``ρ`` to first order, so this is much smaller than the
  full budget). Windows that run
  past the last record are NaN. Coarse records add an ``O(η)`` discretisation bias.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.interpolate import CubicSpline

from ..config import ModelConfig
from ._checks import (
    BOOLEAN, METHOD, N_SAMPLES, OPTIONAL_MODEL, OPTIONAL_POSITIVE, POSITIVE, RESULT, SEED,
    Integer, validated,
)
from .field import dphi_interpolant
from .finite_step import drift_variance, gradient_variance, second_order_coefficient
from .ode import flow

__all__ = ["Tracking", "tracking", "SADiagnostics", "sa_diagnostics", "PathGap", "path_gap",
           "mean_gap"]


@dataclass(frozen=True, eq=False)
class Tracking:
    """Simulation vs ODE on the records with ``t <= T``.

    t, steps : (n,) ODE time and step index of each record used
    sim_mean, sim_se : (n,) mean and standard error over runs of ρ (``mode="signed"``) or |ρ|
    lower, upper : (n,) the band ``sim_mean ∓ z·sim_se``
    ode : (n,) the ODE prediction (mean over runs of the per-run solutions, same mode)
    gap : max |sim_mean − ode|;  gap_time : the t where it occurs
    excess : max (|sim_mean − ode| − z·sim_se)_+ — how far the ODE leaves the band
    fraction_inside : share of records whose ODE value lies inside the band
    mode : "signed" | "abs";  runs : runs used;  T : horizon used
    """

    t: np.ndarray
    steps: np.ndarray
    sim_mean: np.ndarray
    sim_se: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    ode: np.ndarray
    gap: float
    gap_time: float
    excess: float
    fraction_inside: float
    mode: str
    runs: int
    T: float


def _usable(result, T: float | None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    ok = ~np.asarray(result.diverged, dtype=bool)
    if not ok.any():
        raise ValueError("result: every run diverged, nothing to track; got 0 usable runs")
    t = np.asarray(result.ode_time, dtype=np.float64)
    T_used = float(t[-1]) if T is None else float(T)
    keep = t <= T_used + 1e-12 * max(1.0, T_used)
    return (np.asarray(result.alignment, dtype=np.float64)[ok][:, keep], t[keep],
            np.asarray(result.steps)[keep], np.array([T_used]))


@validated(result=RESULT, model=OPTIONAL_MODEL, T=OPTIONAL_POSITIVE, method=METHOD, z=POSITIVE)
def tracking(result, model: ModelConfig | None = None, T: float | None = None, *,
             method: str = "exact", z: float = 1.96) -> Tracking:
    """Largest gap over ``[0, T]`` between the simulated mean alignment of ``result`` and the ODE
    solution from the same starts, with a ``mean ± z·se`` band (see the module docstring).

    result : a :class:`~attnsignal.results.Result`; model : defaults to ``result.model``;
    T : horizon in ODE time (default: the whole run). Raises ``ConfigError`` for bad input.
    """
    model = result.model if model is None else model
    rho, t, steps, T_arr = _usable(result, T)
    runs = rho.shape[0]
    r0 = rho[:, 0]
    uniq, inv = np.unique(r0, return_inverse=True)
    ode_u = flow(model, uniq, t, method)
    ode = ode_u[inv]
    split = not ((np.all(r0 > 0) and np.all(rho[:, -1] > 0))
                 or (np.all(r0 < 0) and np.all(rho[:, -1] < 0)))
    mode = "abs" if split else "signed"
    if split:
        rho, ode = np.abs(rho), np.abs(ode)
    mean = rho.mean(axis=0)
    se = rho.std(axis=0, ddof=1) / np.sqrt(runs) if runs > 1 else np.zeros_like(mean)
    pred = ode.mean(axis=0)
    diff = np.abs(mean - pred)
    j = int(np.argmax(diff))
    outside = np.maximum(diff - z * se, 0.0)
    return Tracking(t=t, steps=steps, sim_mean=mean, sim_se=se, lower=mean - z * se,
                    upper=mean + z * se, ode=pred, gap=float(diff[j]), gap_time=float(t[j]),
                    excess=float(outside.max()), fraction_inside=float(np.mean(outside == 0)),
                    mode=mode, runs=runs, T=float(T_arr[0]))


@dataclass(frozen=True, eq=False)
class SADiagnostics:
    """Stochastic-approximation diagnostics along a recorded trajectory (module docstring).

    steps, t, eta : (n,) records' step index, ODE time and ``η`` there
    noise_budget, noise_remaining : (n,) mean over runs of ``Σ_{k<K_j} η_k² V_B(ρ_k)`` and of
        ``Σ_{k>=K_j} η_k² V_B(ρ_k)``
    martingale : (runs, n) partial sums ``M_j``
    window_max : (runs, n) ``W_j`` (NaN where the window passes the last record)
    window_max_mean : (n,) mean over runs of ``W_j``;  window_sd : (n,) predicted scale of
        the window's alignment martingale (its standard deviation)
    T : window length in ODE time;  batch, update : as simulated
    """

    steps: np.ndarray
    t: np.ndarray
    eta: np.ndarray
    noise_budget: np.ndarray
    noise_remaining: np.ndarray
    martingale: np.ndarray
    window_max: np.ndarray
    window_max_mean: np.ndarray
    window_sd: np.ndarray
    T: float
    batch: int
    update: str

    def shrinkage(self) -> float:
        """Mean ``W_j`` over the last third of the complete windows divided by that over the
        first third (``< 1`` when the martingale noise dies out)."""
        w = self.window_max_mean
        idx = np.nonzero(np.isfinite(w))[0]
        if idx.size < 3:
            return float("nan")
        k = idx.size // 3
        return float(np.mean(w[idx[-k:]]) / np.mean(w[idx[:k]]))


@validated(result=RESULT, model=OPTIONAL_MODEL, T=POSITIVE, method=METHOD, n_samples=N_SAMPLES,
           seed=SEED, n_grid=Integer(ge=5), second_order=BOOLEAN)
def sa_diagnostics(result, model: ModelConfig | None = None, *, T: float = 1.0,
                   method: str = "exact", n_samples: int = 4000, seed: int = 0,
                   n_grid: int = 41, second_order: bool = True) -> SADiagnostics:
    """Noise budget and windowed martingale maxima of ``result`` (see the module docstring).

    T : window length in ODE time (> 0); n_samples, seed : Monte-Carlo draws for ``V_B`` on a
    grid of ``n_grid`` alignments in [−1, 1] (common random numbers, then a cubic spline);
    second_order : subtract the ``O(η²)`` mean change ``−η_k² κ_B(ρ_k)`` from the increments
    too, so that ``M`` is a martingale up to ``O(η³)`` (otherwise the windows carry a bias of
    order ``η T κ_B``). Raises ``ConfigError`` for bad input.
    """
    model = result.model if model is None else model
    rho, t, steps, _ = _usable(result, None)
    step = result.schedule
    batch = int(result.run.batch)
    update = str(result.run.update)
    dphi = dphi_interpolant(model, method)

    def F(r: np.ndarray) -> np.ndarray:
        return (1.0 - r * r) * dphi(r)

    grid = np.linspace(-1.0, 1.0, n_grid)
    V = gradient_variance(model, grid, batch, update, n_samples=n_samples, seed=seed).value
    Vs = CubicSpline(grid, V)
    Ds = CubicSpline(grid, drift_variance(model, grid, batch, n_samples=n_samples,
                                          seed=seed).value)
    if second_order:
        Ks = CubicSpline(grid, second_order_coefficient(model, grid, batch, update,
                                                        n_samples=n_samples, seed=seed).value)

    K = int(steps[-1])
    eta_all = step.eta(np.arange(max(K, 1)))
    runs, n = rho.shape
    budget = np.zeros((runs, n))
    rbudget = np.zeros((runs, n))
    bias = np.zeros((runs, n - 1))
    for j in range(n - 1):
        k0, k1 = int(steps[j]), int(steps[j + 1])
        ks = np.arange(k0, k1)
        frac = (ks - k0) / max(k1 - k0, 1)
        r_k = rho[:, j, None] * (1 - frac) + rho[:, j + 1, None] * frac  # (runs, m)
        e2 = eta_all[ks] ** 2
        budget[:, j + 1] = budget[:, j] + (np.clip(Vs(r_k), 0.0, None) * e2).sum(1)
        rbudget[:, j + 1] = rbudget[:, j] + (np.clip(Ds(r_k), 0.0, None) * e2).sum(1)
        if second_order:
            bias[:, j] = (Ks(r_k) * e2).sum(1)
    tail = step.tail_sq_sum(K) * np.clip(Vs(rho[:, -1]), 0.0, None)
    remaining = budget[:, -1:] - budget + tail[:, None]

    dt = np.diff(t)
    inc = np.diff(rho, axis=1) - dt * 0.5 * (F(rho[:, :-1]) + F(rho[:, 1:])) + bias
    M = np.concatenate([np.zeros((runs, 1)), np.cumsum(inc, axis=1)], axis=1)
    W = np.full((runs, n), np.nan)
    sd = np.full(n, np.nan)
    mean_budget = budget.mean(axis=0)
    mean_rbudget = rbudget.mean(axis=0)
    for j in range(n - 1):
        if t[j] + T > t[-1]:
            break
        hi = int(np.searchsorted(t, t[j] + T, side="right"))
        hi = max(hi, j + 2)
        W[:, j] = np.max(np.abs(M[:, j + 1:hi] - M[:, j:j + 1]), axis=1)
        sd[j] = np.sqrt(max(mean_rbudget[hi - 1] - mean_rbudget[j], 0.0))
    with np.errstate(invalid="ignore"):
        wmean = np.where(np.all(np.isnan(W), axis=0), np.nan, np.nanmean(np.where(
            np.isnan(W), 0.0, W), axis=0))
    return SADiagnostics(steps=steps, t=t, eta=step.eta(steps), noise_budget=mean_budget,
                         noise_remaining=remaining.mean(axis=0), martingale=M, window_max=W,
                         window_max_mean=wmean, window_sd=sd, T=T, batch=batch, update=update)


@dataclass(frozen=True)
class PathGap:
    """Simulated mean against a prediction over the records (module docstring): ``gap`` the
    largest ``|mean − pred|``, attained at ``step`` where the simulated mean has standard
    error ``se``; ``excess`` the largest ``|mean − pred| − z·se_j`` for the ``z`` given."""

    gap: float
    step: int
    se: float
    excess: float
    z: float


def path_gap(values: np.ndarray, steps: np.ndarray, pred: np.ndarray, z: float = 3.0) -> PathGap:
    """Compare the simulated ``values`` (``(runs, n_rec)``, e.g. ``|ρ|``) at records ``steps``
    with ``pred`` (``(n_rec,)``). NaN or inf anywhere is a ``ValueError`` (never a silent
    maximum over NaN)."""
    x = np.asarray(values, dtype=np.float64)
    pred = np.asarray(pred, dtype=np.float64)
    if x.ndim != 2 or x.shape[1] != pred.size or x.shape[0] < 2:
        raise ValueError(f"path_gap: values {x.shape} and prediction {pred.shape} do not match "
                         "(need runs >= 2 and one prediction per record)")
    return mean_gap(x.mean(axis=0), x.std(axis=0, ddof=1) / math.sqrt(x.shape[0]), steps,
                    pred, z)


def mean_gap(mean: np.ndarray, se: np.ndarray, steps: np.ndarray, pred: np.ndarray,
             z: float = 3.0) -> PathGap:
    """:func:`path_gap` from the simulated mean and its standard error at each record."""
    mean, se, pred = (np.asarray(a, dtype=np.float64) for a in (mean, se, pred))
    if not (mean.shape == se.shape == pred.shape == np.shape(steps)) or mean.size == 0:
        raise ValueError(f"path_gap: mean {mean.shape}, se {se.shape}, prediction "
                         f"{pred.shape} and steps {np.shape(steps)} must match")
    if not (np.all(np.isfinite(mean)) and np.all(np.isfinite(se))
            and np.all(np.isfinite(pred))):
        raise ValueError("path_gap: non-finite simulated values or prediction")
    diff = np.abs(mean - pred)
    j = int(np.argmax(diff))
    return PathGap(gap=float(diff[j]), step=int(np.asarray(steps)[j]), se=float(se[j]),
                   excess=float(np.max(diff - z * se)), z=float(z))
