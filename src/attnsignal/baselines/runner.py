"""``baseline``: run a simple estimator on the model's token stream and return a ``Result``."""

from __future__ import annotations

import time
from typing import Any, Sequence

import numpy as np

from .._version import __version__
from ..config import ConfigError, ModelConfig, RunConfig, StepSize
from ..validation import Integer, Sequence as SequenceOf, validated
from ..engines.base import run_seeds
from ..results import Result
from ..seeds import SEED, split
from ..engines.base import MAX_STEPS
from .base import METHOD, MODEL, RUNNING_AVERAGE, BaselineConfig, check_scales, get_estimator

__all__ = ["baseline"]

#: Memory for the estimators' state of one chunk of runs (PCA holds ``d²`` floats per run).
_CHUNK_BYTES = 64 << 20


def _check_step(method: str, model: ModelConfig, step: Any) -> Any:
    if method != "oja":
        if step is not None:
            raise ConfigError("step", f"is only used by method 'oja' (method {method!r} is a "
                              "running average)", step)
        return RUNNING_AVERAGE
    if step is None:
        from .oja import default_step

        return default_step(model)
    if not (isinstance(step, StepSize) or hasattr(step, "eta")):
        raise ConfigError("step", "must be a StepSize or a Schedule", step)
    return step


@validated(model=MODEL, method=METHOD, samples=Integer(ge=1, le=MAX_STEPS), runs=Integer(ge=1),
           seed=SEED, first_run=Integer(ge=0),
           spawn_prefix=SequenceOf(Integer(ge=0, le=2 ** 64 - 1),
                                   what="a sequence of integers >= 0"))
def baseline(
    model: ModelConfig,
    method: str,
    *,
    samples: int,
    runs: int = 1,
    seed: int = 0,
    record_every: int | None = None,
    record: Any = None,
    step: Any = None,
    first_run: int = 0,
    spawn_prefix: Sequence[int] = (),
) -> Result:
    """Run ``runs`` independent runs of a simple estimator for ``samples`` samples each.

    Parameters
    ----------
    model : the data model (both sign variants).
    method : ``"mean"`` (running average of the per-sample token means), ``"pca"`` (leading
        eigenvector of their running second moment), ``"oja"`` (Oja's online rule on them,
        with ``step``), ``"oracle"`` (running average of the informative tokens,
        sign-corrected). See :mod:`attnsignal.baselines` for the exact samplers and costs.
    samples : int >= 1, samples (token sets ``X``) per run — the analogue of SGA's steps.
    runs, seed, first_run, spawn_prefix : run ``r`` draws from
        ``SeedSequence(seed, spawn_key=(*spawn_prefix, r))`` and is bit-identical whatever
        runs ride beside it (for the same record steps).
    record_every, record : the record steps, as for :func:`attnsignal.simulate`
        (``record="log"`` log-spaced, or a list of steps; 0 and ``samples`` always recorded).
    step : Oja's schedule (a ``StepSize`` or any ``Schedule``; None: the asymptotically
        optimal ``1/(g(k + k0))`` of :func:`attnsignal.baselines.oja.default_step`). Other
        methods are running averages and reject a ``step``.

    Returns
    -------
    Result with ``method`` set; ``alignment`` is the signed ``ρ`` of the estimate (PCA's
    eigenvector is oriented towards the run's random initial guess), ``step`` is Oja's
    schedule or :data:`RUNNING_AVERAGE` (``η_k = 1/(k+1)``), ``ode_time`` its ``Σ_{j<k} η_j``.
    ``informative_mass`` / ``max_nuisance_weight`` hold the pooling weights' analogue —
    ``R/L`` and ``1/L`` for the token mean (PCA and Oja pool the same way), 1 and 0 for the
    oracle — from step 1 on (NaN at step 0, as for attention). Raises ``ConfigError``.
    """
    root, key = split(seed)
    run = RunConfig(steps=samples, runs=runs, seed=root, record_every=record_every,
                    record=record, method=method, spawn_key=(*key, *spawn_prefix))
    check_scales(model)
    step = _check_step(method, model, step)
    est = get_estimator(method)
    config = BaselineConfig(method=method, step=step)
    _check_size(model, method, est, int(samples), int(runs), run.n_records(),
                "record_every" if run.record is None else "record")
    ks = np.asarray(run.record_steps(), dtype=np.int64)

    t0 = time.perf_counter()
    seeds = run_seeds(run.seed, int(runs), int(first_run), run.spawn_key or ())
    per_run = est.bytes_per_run(model) if hasattr(est, "bytes_per_run") else 64
    chunk = max(1, _CHUNK_BYTES // per_run)
    align = np.full((runs, ks.size), np.nan)
    for lo in range(0, runs, chunk):
        hi = min(runs, lo + chunk)
        state = est.init(model, config, seeds[lo:hi])
        align[lo:hi, 0] = state.rho
        for j in range(1, ks.size):
            state = est.advance(model, config, state, int(ks[j] - ks[j - 1]))
            align[lo:hi, j] = state.rho
    elapsed = time.perf_counter() - t0

    mass_w, nuis_w = est.pooling_weights(model)
    mass = np.full((runs, ks.size), float(mass_w))
    maxw = np.full((runs, ks.size), float(nuis_w))
    mass[:, 0] = maxw[:, 0] = np.nan
    bad = ~np.isfinite(align)
    diverged = bad.any(axis=1)
    dstep = np.where(diverged, ks[np.argmax(bad, axis=1)], -1).astype(np.int64)
    return Result(
        model=model, schedule=step, run=run, steps=ks, ode_time=_ode_time(step, ks),
        alignment=align, informative_mass=mass, max_nuisance_weight=maxw,
        diverged=diverged, diverged_step=dstep,
        run_ids=np.arange(first_run, first_run + runs, dtype=np.int64),
        timings={"total_s": elapsed, "seconds_per_sample": elapsed / (runs * samples)},
        version=__version__, method=method,
    )


def check_baseline_size(model: ModelConfig, method: str, *, samples: int, runs: int,
                        records: int) -> None:
    """What :func:`baseline` checks before any work — memory and time for ``runs`` runs of
    ``samples`` samples with ``records`` records — without running it (e.g. a plan checked
    before anything starts). Raises ConfigError."""
    _check_size(model, method, get_estimator(method), int(samples), int(runs), int(records),
                "record")


def _check_size(model: ModelConfig, method: str, est: Any, samples: int, runs: int,
                records: int, record_field: str) -> None:
    """Refuse, before any work, what cannot fit in memory or would not finish."""
    from ..limits import BLAS_FLOPS_PER_SECOND, OPS_PER_SECOND, check_memory, check_work

    if hasattr(est, "bytes_per_run"):  # PCA: d² per run, twice more for a block's Wishart
        check_memory("model.d", 3 * est.bytes_per_run(model), f"{method}'s d×d matrices",
                     model.d)
    check_memory(record_field, 8.0 * records * 4, "the record steps", records)
    check_memory("runs", 8.0 * runs * records * 3, "the records", runs)
    if method == "pca":  # ≈ 4 d³ flops of LAPACK/BLAS per record (Wishart block, eigenvector)
        ops = 4.0 * runs * records * float(model.d) ** 3 * OPS_PER_SECOND / BLAS_FLOPS_PER_SECOND
    elif method == "oja":
        ops = 40.0 * runs * samples
    else:
        ops = 50.0 * runs * records
    check_work("samples", ops, f"the {method} baseline", samples)


def _ode_time(step: Any, ks: np.ndarray) -> np.ndarray:
    return np.asarray(step.ode_time(ks), dtype=np.float64)
