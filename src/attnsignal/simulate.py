"""``simulate``: run projected stochastic gradient ascent on the sphere with any engine.

Update ``k = 0, 1, ...`` (step size ``η_k``, minibatch of ``B`` fresh samples)::

    g = (1/B) Σ_b ∇_q ||f_q(X_b)||²,   riemannian: g ← g − (q·g) q,
    q ← (q + η_k g) / ||q + η_k g||.

The records are the signed alignment ``ρ_k = <q_k, ξ>`` after ``k`` updates, at
``k = 0, record_every, 2·record_every, ..., steps``, with the ODE time ``t_k = Σ_{j<k} η_j`` and
the attention statistics of the sample(s) drawn at update ``k``.
"""

from __future__ import annotations

import time
import warnings
from typing import Callable, Sequence

import numpy as np

from ._version import __version__
from .config import ModelConfig, RunConfig, StepSize
from .engines import get_engine
from .engines.base import run_seeds
from .results import Result
from .schedules import ode_time, step_sizes

__all__ = ["simulate", "DivergenceWarning"]


class DivergenceWarning(RuntimeWarning):
    """Some runs became non-finite; they are flagged in ``Result.diverged``."""


def simulate(
    model: ModelConfig,
    step: StepSize,
    *,
    steps: int,
    runs: int = 1,
    batch: int = 1,
    engine: str = "literal",
    update: str = "projected",
    seed: int = 0,
    record_every: int | None = None,
    initial_alignment: float | None = None,
    record_q: bool = False,
    first_run: int = 0,
    spawn_prefix: Sequence[int] = (),
    progress: Callable[[int], None] | None = None,
) -> Result:
    """Simulate ``runs`` independent runs of ``steps`` SGA updates.

    Parameters
    ----------
    model, step : the data model and the step-size schedule ``η_k = η0 (1 + k/k0)^(−power)``.
    steps, runs, batch, engine, update, seed, record_every, initial_alignment :
        see :class:`RunConfig` (validated there; bad values raise ``ConfigError``).
        ``engine``: ``"literal"`` (``O(BLd)`` per update), ``"projected"`` (exact in law,
        ``O(B(L+d))``), ``"chain"`` (exact in law for ``ρ``, ``O(BL)``, no ``q``).
    record_q : also keep ``q`` at every record (vector engines only).
    first_run, spawn_prefix : run ``r`` uses ``SeedSequence(seed, spawn_key=(*spawn_prefix, r))``
        for ``r = first_run, ..., first_run + runs − 1`` — so run ``r`` is bit-identical
        whatever ``runs`` is, and a sweep can split runs into chunks.
    progress : called with the number of updates just applied (for progress bars).

    Returns
    -------
    Result. Warns ``NotRobbinsMonroWarning`` for a schedule with ``power ∉ (1/2, 1]`` and
    ``DivergenceWarning`` when runs diverge.
    """
    if not isinstance(model, ModelConfig):
        raise TypeError(f"model: must be a ModelConfig; got {type(model).__name__}")
    if not isinstance(step, StepSize):
        raise TypeError(f"step: must be a StepSize; got {type(step).__name__}")
    run = RunConfig(
        steps=steps,
        runs=runs,
        batch=batch,
        engine=engine,
        update=update,
        seed=seed,
        record_every=record_every,
        initial_alignment=initial_alignment,
    )
    if record_q and run.engine == "chain":
        raise ValueError(
            "record_q: the 'chain' engine has no query vector; use engine='projected' or "
            "'literal'; got record_q=True"
        )
    if not isinstance(first_run, (int, np.integer)) or first_run < 0:
        raise ValueError(f"first_run: must be an integer >= 0; got {first_run!r}")
    step.warn_if_not_robbins_monro()

    eng = get_engine(run.engine)
    t0 = time.perf_counter()
    seeds = run_seeds(run.seed, run.runs, int(first_run), spawn_prefix)
    state = eng.init(model, run, seeds)
    ks = run.record_steps()
    n_rec = len(ks)
    align = np.full((run.runs, n_rec), np.nan)
    mass = np.full((run.runs, n_rec), np.nan)
    maxw = np.full((run.runs, n_rec), np.nan)
    q_rec = None
    if record_q:
        q_rec = np.full((run.runs, n_rec, model.d), np.nan)
        q_rec[:, 0] = state.q
    align[:, 0] = state.rho
    t_init = time.perf_counter() - t0
    for j in range(1, n_rec):
        etas = step_sizes(step, np.arange(ks[j - 1], ks[j]))
        state, stats = eng.advance(model, run, state, etas)
        align[:, j] = state.rho
        mass[:, j] = stats.informative_mass
        maxw[:, j] = stats.max_nuisance_weight
        if q_rec is not None:
            q_rec[:, j] = state.q
        if progress is not None:
            progress(ks[j] - ks[j - 1])
    elapsed = time.perf_counter() - t0
    if state.diverged.any():
        warnings.warn(
            f"{int(state.diverged.sum())} of {run.runs} runs diverged (non-finite query); "
            "see Result.diverged and Result.diverged_step",
            DivergenceWarning,
            stacklevel=2,
        )
    samples = run.runs * run.steps * run.batch
    return Result(
        model=model,
        schedule=step,
        run=run,
        steps=np.asarray(ks, dtype=np.int64),
        ode_time=ode_time(step, ks),
        alignment=align,
        informative_mass=mass,
        max_nuisance_weight=maxw,
        diverged=state.diverged.copy(),
        diverged_step=state.diverged_step.copy(),
        run_ids=np.arange(first_run, first_run + run.runs, dtype=np.int64),
        q_final=None if state.q is None else state.q.copy(),
        q_records=q_rec,
        timings={
            "init_s": t_init,
            "total_s": elapsed,
            "seconds_per_sample": elapsed / samples,
        },
        version=__version__,
    )
