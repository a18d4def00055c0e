"""``simulate``: run projected stochastic gradient ascent on the sphere with any engine.

Update ``k = 0, 1, ...`` (step size ``η_k``, minibatch of ``B`` fresh samples)::

    g = (1/B) Σ_b ∇_q ||f_q(X_b)||²,   riemannian: g ← g − (q·g) q,
    q ← (q + η_k g) / ||q + η_k g||.

The records are the signed alignment ``ρ_k = <q_k, ξ>`` after ``k`` updates, at the steps of
:func:`attnsignal.records.record_steps` (by default ``k = 0, record_every, 2·record_every, ...,
steps``; ``record="log"`` for log-spaced records), with the ODE time ``t_k = Σ_{j<k} η_j`` and
the attention statistics of the sample(s) drawn at update ``k``.
"""

from __future__ import annotations

import time
import warnings
from typing import Callable, Sequence

import numpy as np

from ._version import __version__
from .config import ConfigError, ModelConfig, RunConfig
from .engines import engines_with, get_engine
from .engines.base import EngineState, StepStats, run_seeds
from .limits import check_memory
from .results import Result
from .schedules import Schedule
from .seeds import SEED, split
from .validation import Boolean, Instance, Integer, Optional
from .validation import Callable as IsCallable, Sequence as SequenceOf


__all__ = ["simulate", "check_simulation", "DivergenceWarning"]


class DivergenceWarning(RuntimeWarning):
    """Some runs became non-finite; they are flagged in ``Result.diverged``."""


_MODEL = Instance(ModelConfig)
_STEP = Instance(Schedule, "step-size schedule (StepSize, ConstantStep, PiecewiseStep, "
                 "TabulatedStep, ...)")
_RECORD_Q = Boolean()
_SPAWN_PREFIX = SequenceOf(Integer(ge=0, le=2 ** 64 - 1), what="a sequence of integers >= 0")
_PROGRESS = Optional(IsCallable("a callable taking the number of updates done"))
#: Most step sizes materialised at once (8 MiB).
_ETA_BLOCK = 1 << 20


def _check_record_memory(run: RunConfig, n_rec: int, d: int) -> None:
    """The records (alignment, two statistics and, with ``record_q``, ``q``) must fit."""
    if n_rec <= run.runs:
        field, value = "runs", run.runs
    elif run.record is None:
        field, value = "record_every", run.record_every
    else:
        field, value = "record", run.record
    # 8 bytes a value, and ~48 for each record's step index (a Python int in a list)
    check_memory(field, 8 * run.runs * n_rec * (3 + d) + 48 * n_rec,
                 f"the records ({run.runs} runs × {n_rec} records × {3 + d} float64)", value)


def check_simulation(model: ModelConfig, run: RunConfig, record_q: bool = False) -> None:
    """Every check :func:`simulate` makes before work starts, for callers that must refuse
    before they draw anything (the command line's progress bar, a sweep's plan): the engine's
    variants and memory (``Engine.check``), ``record_q`` on an engine without a query, the
    records' memory (counted, not built) and one run's work (``Engine.check_work``). Raises
    ConfigError."""
    eng = get_engine(run.engine)
    if record_q and not eng.capabilities.has_query:
        raise ConfigError(
            "record_q",
            f"the {run.engine!r} engine has no query vector; use one of "
            + ", ".join(map(repr, engines_with(has_query=True))) + " to record q",
            record_q,
        )
    eng.check(model, run)
    _check_record_memory(run, run.n_records(), model.d if record_q else 0)
    eng.check_work(model, run)


def _flag_nan_statistics(state: EngineState, stats: StepStats, k: int
                         ) -> tuple[EngineState, StepStats]:
    """A run that is not flagged but whose alignment or statistics are not finite is flagged
    as diverged at record ``k``: an engine failure must never pass as a result."""
    bad = ~state.diverged & ~(np.isfinite(state.rho) & np.isfinite(stats.informative_mass)
                              & np.isfinite(stats.max_nuisance_weight))
    if not bad.any():
        return state, stats
    diverged, dstep, rho = state.diverged.copy(), state.diverged_step.copy(), state.rho.copy()
    diverged[bad], dstep[bad], rho[bad] = True, k, np.nan
    mass, maxw = stats.informative_mass.copy(), stats.max_nuisance_weight.copy()
    mass[bad] = maxw[bad] = np.nan
    return (state.replace(rho=rho, diverged=diverged, diverged_step=dstep),
            StepStats(mass, maxw))


def simulate(
    model: ModelConfig,
    step: Schedule,
    *,
    steps: int,
    runs: int = 1,
    batch: int = 1,
    engine: str = "literal",
    update: str = "projected",
    seed: int | np.random.SeedSequence = 0,
    record_every: int | None = None,
    initial_alignment: float | None = None,
    record: str | Sequence[int] | None = None,
    record_q: bool = False,
    first_run: int = 0,
    spawn_prefix: Sequence[int] = (),
    progress: Callable[[int], None] | None = None,
) -> Result:
    """Simulate ``runs`` independent runs of ``steps`` SGA updates.

    Parameters
    ----------
    model, step : the data model and the step-size schedule (any :class:`~attnsignal.schedules.
        Schedule`: ``StepSize`` ``η_k = η0 (1 + k/k0)^(−power)``, ``ConstantStep``, ...).
    steps, runs, batch, engine, update, seed, record_every, initial_alignment, record :
        see :class:`RunConfig` (validated there; bad values raise ``ConfigError``).
        ``engine``: a name in :func:`attnsignal.engines.engine_names` — ``"literal"``
        (``O(BLd)`` per update), ``"projected"`` (exact in law, ``O(B(L+d))``), ``"chain"``
        (exact in law for ``ρ``, ``O(BL)``, no ``q``). The engine's ``check`` runs before any
        work (unsupported variants, sizes that cannot fit in memory: ``ConfigError``).
        ``record``: None/"linear", "log" or a list of steps (:mod:`attnsignal.records`).
    record_q : also keep ``q`` at every record (engines with ``capabilities.has_query``).
    seed, first_run, spawn_prefix : run ``r`` uses
        ``SeedSequence(seed, spawn_key=(*spawn_prefix, r))`` for ``r = first_run, ...,
        first_run + runs − 1`` — so run ``r`` is bit-identical whatever ``runs`` is, and a
        sweep can split runs into chunks. ``seed`` may be a ``SeedSequence(root,
        spawn_key=key)`` (:func:`attnsignal.seeds.stream`): the same as ``seed=root`` with
        ``key`` before ``spawn_prefix``. The result's ``run`` records ``seed`` and the whole
        prefix (``RunConfig.spawn_key``).
    progress : called with the number of updates just applied (for progress bars).

    Returns
    -------
    Result. Warns ``NotRobbinsMonroWarning`` for a schedule that is not Robbins–Monro and
    ``DivergenceWarning`` when runs diverge. A run whose state stays finite but whose attention
    statistics come back NaN (an engine failure, never expected) is flagged as diverged at that
    record as well, so that no NaN is returned unflagged.

    Raises
    ------
    ConfigError (a ``ValueError``), one line naming the argument, for any bad argument.

    Examples
    --------
    >>> import attnsignal as asg, numpy as np
    >>> model = asg.ModelConfig(d=8, n_informative=4, n_nuisance=8, theta=1.0)
    >>> step = asg.StepSize(eta0=0.05, k0=100, power=0.75)
    >>> res = asg.simulate(model, step, steps=200, runs=3, seed=1, record_every=50)
    >>> res.alignment.shape, res.steps.tolist()          # runs × records, signed ρ
    ((3, 5), [0, 50, 100, 150, 200])
    >>> again = asg.simulate(model, step, steps=200, runs=1, first_run=2, seed=1,
    ...                      record_every=50)
    >>> np.array_equal(again.alignment[0], res.alignment[2])   # run 2 alone: the same bits
    True
    """
    _MODEL.check("model", model)
    _STEP.check("step", step)
    spawn_prefix = _SPAWN_PREFIX.check("spawn_prefix", spawn_prefix)
    root, key = split(SEED.check("seed", seed))
    run = RunConfig(
        steps=steps,
        runs=runs,
        batch=batch,
        engine=engine,
        update=update,
        seed=root,
        record_every=record_every,
        initial_alignment=initial_alignment,
        record=record,
        spawn_key=(*key, *spawn_prefix),
    )
    record_q = _RECORD_Q.check("record_q", record_q)
    Integer(ge=0, le=2 ** 63 - 1 - run.runs).check("first_run", first_run)
    first_run = int(first_run)
    progress = _PROGRESS.check("progress", progress)
    eng = get_engine(run.engine)
    check_simulation(model, run, record_q)
    ks = run.record_steps()
    n_rec = len(ks)
    step.warn_if_not_robbins_monro()

    t0 = time.perf_counter()
    seeds = run_seeds(run.seed, run.runs, int(first_run), run.spawn_key or ())
    state = eng.init(model, run, seeds)
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
        # at most _ETA_BLOCK step sizes in memory at once: the engines give the same bits
        # however the updates are split into advance calls
        for lo in range(ks[j - 1], ks[j], _ETA_BLOCK):
            hi = min(lo + _ETA_BLOCK, ks[j])
            state, stats = eng.advance(model, run, state, step.eta(np.arange(lo, hi)))
            if progress is not None:
                progress(hi - lo)
        state, stats = _flag_nan_statistics(state, stats, ks[j])
        align[:, j] = state.rho
        mass[:, j] = stats.informative_mass
        maxw[:, j] = stats.max_nuisance_weight
        if q_rec is not None:
            q_rec[:, j] = state.q
    elapsed = time.perf_counter() - t0
    if state.diverged.any():
        warnings.warn(
            f"{int(state.diverged.sum())} of {run.runs} runs diverged (non-finite query or "
            "statistics); see Result.diverged and Result.diverged_step",
            DivergenceWarning,
            stacklevel=2,
        )
    samples = run.runs * run.steps * run.batch
    return Result(
        model=model,
        schedule=step,
        run=run,
        steps=np.asarray(ks, dtype=np.int64),
        ode_time=step.ode_time(ks),
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
