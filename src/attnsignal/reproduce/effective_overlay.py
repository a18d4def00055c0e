"""The effective dynamics beside a simulation: the overlay that E1 and E5 draw and check.

:func:`effective_path` is the task (run in a pool worker through
:meth:`~attnsignal.reproduce.context.ExperimentContext.compute`): the predicted law of ``ρ_k``
(:func:`attnsignal.theory.effective.effective_dynamics`) reduced to what the reproduction
reads — at the recorded steps, the predicted mean ``E ρ_k``, mean ``E|ρ_k|`` and the 10 % and
90 % quantiles of ``|ρ_k|`` — so only a few arrays travel back from the worker, with the
accuracy warnings the prediction raised (the report prints them beside its gaps, rather than
the worker's stderr).

:func:`~attnsignal.theory.tracking.path_gap` and :func:`~attnsignal.theory.tracking.mean_gap`
(re-exported here) compare a prediction with the simulated mean over runs at the same records.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..config import ModelConfig
from ..theory.tracking import PathGap, mean_gap, path_gap
from .context import warning_texts
from .scheduler import CHAIN_UPDATE_OVERHEAD

__all__ = ["EffectivePath", "PathGap", "effective_cost", "effective_path", "mean_gap", "path_gap"]

#: about this many alignment nodes carry the one-step moments (theory.effective)
_MOMENT_NODES = 65


@dataclass(frozen=True, eq=False)
class EffectivePath:
    """The effective dynamics at the recorded ``steps`` (each array ``(n_rec,)``):
    ``mean_abs`` = E|ρ_k|, ``mean`` = E ρ_k, ``q10``/``q90`` the 10 %/90 % quantiles of |ρ_k|;
    ``seconds`` its wall time (moments and evolution), ``n_samples`` the reduced draws per
    moment node, ``warnings`` the text of each
    :class:`~attnsignal.theory.effective.EffectiveDynamicsAccuracyWarning` it raised."""

    steps: np.ndarray
    mean_abs: np.ndarray
    mean: np.ndarray
    q10: np.ndarray
    q90: np.ndarray
    seconds: float
    n_samples: int
    warnings: tuple[str, ...] = ()

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
                             self.q90[idx], self.seconds, self.n_samples, self.warnings)


def effective_path(model: ModelConfig, step: Any, *, steps: int, record_every: int,
                   initial_alignment: float | None, n_samples: int, seed: int) -> EffectivePath:
    """:func:`~attnsignal.theory.effective.effective_dynamics` with exactly a run's schedule,
    number of steps, records (``record_every``) and initial law (``None``: a uniform start),
    reduced to an :class:`EffectivePath`. ``seed`` seeds the reduced draws behind the
    one-step moments. Its accuracy warnings are caught and returned as text (each once)."""
    from ..theory.effective import EffectiveDynamicsAccuracyWarning, effective_dynamics

    with warning_texts(EffectiveDynamicsAccuracyWarning) as said:
        ed = effective_dynamics(model, step, steps=steps, record_every=record_every,
                                initial_alignment=initial_alignment, n_samples=n_samples,
                                seed=seed)
    q10, q90 = ed.quantile([0.1, 0.9])
    return EffectivePath(steps=ed.steps, mean_abs=ed.mean_abs, mean=ed.mean, q10=q10, q90=q90,
                         seconds=float(ed.timings["total_s"]), n_samples=int(n_samples),
                         warnings=tuple(said))


def effective_cost(model: ModelConfig, n_samples: int) -> float:
    """The cost of :func:`effective_path` in the shared pool's units
    (:func:`~attnsignal.reproduce.scheduler.task_cost`: one chain sample of ``L`` tokens costs
    ``L + CHAIN_UPDATE_OVERHEAD``): per reduced draw about ``4L`` (its ``3L`` normals, the
    weights and the nuisance tokens' moments, once) and, at each moment node, the informative
    tokens twice plus a fixed cost (``theory.reduced._pool_draw``). At E1's size that is
    about 10 000 chain samples per 1 000 draws, as measured. Only orders it among the pool's
    tasks."""
    per_node = 2 * model.n_informative + CHAIN_UPDATE_OVERHEAD
    return float(n_samples * (4 * model.n_tokens + _MOMENT_NODES * per_node))


def accuracy_notes(paths: dict[str, EffectivePath]) -> str | None:
    """One report paragraph with the accuracy warnings of each labelled prediction
    (``None`` when none warned): the diagnostic's own words, so that a prediction it does not
    vouch for is said beside the gaps the report measures."""
    said = [f"{label}: {text}" for label, path in paths.items() for text in path.warnings]
    if not said:
        return None
    return ("The effective dynamics' own diagnostic (its accuracy warnings; the measured gaps "
            "above are what decides the check): " + "; ".join(said) + ".")
