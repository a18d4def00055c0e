"""The effective dynamics beside a simulation: the overlay that E1 and E5 draw and check.

:func:`effective_path` is the task (run in a pool worker through
:meth:`~attnsignal.reproduce.context.ExperimentContext.compute`): the predicted law of ``ρ_k``
(:func:`attnsignal.theory.effective.effective_dynamics`) reduced to what the reproduction
reads — at the recorded steps, the predicted mean ``E ρ_k``, mean ``E|ρ_k|`` and the 10 % and
90 % quantiles of ``|ρ_k|`` — so only a few arrays travel back from the worker.

:func:`path_gap` compares a prediction with the simulated mean over runs at the same records:

    gap = max_j |mean_r x_rj − pred_j|,        excess(z) = max_j (|mean_r x_rj − pred_j| − z·se_j),

with ``se_j`` the standard error of the simulated mean at record ``j`` (sample standard
deviation over the runs / √runs). ``gap`` is what the reports quote (with the standard error
where it is attained); ``excess`` is what a tolerance "≤ tol + z SE at every record" checks:
it holds iff ``excess ≤ tol``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..config import ModelConfig

__all__ = ["EffectivePath", "PathGap", "effective_cost", "effective_path", "mean_gap", "path_gap"]

#: about this many alignment nodes carry the one-step moments (theory.effective)
_MOMENT_NODES = 65


@dataclass(frozen=True, eq=False)
class EffectivePath:
    """The effective dynamics at the recorded ``steps`` (each array ``(n_rec,)``):
    ``mean_abs`` = E|ρ_k|, ``mean`` = E ρ_k, ``q10``/``q90`` the 10 %/90 % quantiles of |ρ_k|;
    ``seconds`` its wall time (moments and evolution), ``n_samples`` the reduced draws per
    moment node."""

    steps: np.ndarray
    mean_abs: np.ndarray
    mean: np.ndarray
    q10: np.ndarray
    q90: np.ndarray
    seconds: float
    n_samples: int

    def values(self, signed: bool) -> np.ndarray:
        """The predicted mean ρ (``signed``) or mean |ρ|."""
        return self.mean if signed else self.mean_abs

    def at(self, steps: np.ndarray) -> "EffectivePath":
        """The records at ``steps`` (each one of this path's; ``ValueError`` otherwise)."""
        idx = np.searchsorted(self.steps, steps)
        if np.any(idx >= self.steps.size) or not np.array_equal(self.steps[np.minimum(
                idx, self.steps.size - 1)], steps):
            raise ValueError("effective path: the simulation's records are not the prediction's")
        return EffectivePath(self.steps[idx], self.mean_abs[idx], self.mean[idx], self.q10[idx],
                             self.q90[idx], self.seconds, self.n_samples)


def effective_path(model: ModelConfig, step: Any, *, steps: int, record_every: int,
                   initial_alignment: float | None, n_samples: int, seed: int) -> EffectivePath:
    """:func:`~attnsignal.theory.effective.effective_dynamics` with exactly a run's schedule,
    number of steps, records (``record_every``) and initial law (``None``: a uniform start),
    reduced to an :class:`EffectivePath`. ``seed`` seeds the reduced draws behind the
    one-step moments."""
    from ..theory.effective import effective_dynamics

    ed = effective_dynamics(model, step, steps=steps, record_every=record_every,
                            initial_alignment=initial_alignment, n_samples=n_samples, seed=seed)
    q10, q90 = ed.quantile([0.1, 0.9])
    return EffectivePath(steps=ed.steps, mean_abs=ed.mean_abs, mean=ed.mean, q10=q10, q90=q90,
                         seconds=float(ed.timings["total_s"]), n_samples=int(n_samples))


def effective_cost(model: ModelConfig, n_samples: int) -> float:
    """The cost of :func:`effective_path` in the shared pool's units
    (:func:`~attnsignal.reproduce.scheduler.task_cost`: one chain sample of ``L`` tokens costs
    ``L + 32``): its reduced draws, ``n_samples`` of ``L`` tokens at each moment node. Only
    orders it among the pool's tasks."""
    return float(_MOMENT_NODES * n_samples * (model.n_tokens + 32))


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
