"""Measured sample complexity: when does the simulated mean ``|ρ|`` reach a target?
(``docs/scaling.md``, "Measuring").

:func:`measure_samples` runs the chain engine (exact in law for ``ρ``, ``O(L)`` per update, no
``d`` in the cost) and reads, on a dense linear grid of records,

* ``samples`` — the first recorded step at which the mean of ``|ρ_k|`` over the runs is at
  least the target, with a percentile bootstrap interval (runs resampled with replacement);
* the per-run hitting steps ``T`` of ``|ρ| >= target`` (first record at or above it) within
  the horizon of ``steps`` updates, and the fraction of runs that reach it by then. A run
  that has not reached it is censored at the horizon ``H = steps``: its ``T`` is only known to
  exceed ``H``. Two statistics of them, each with a bootstrap interval:

  - ``hit_mean``, ``hit_sd`` — the mean and standard deviation of ``T`` over the runs that
    reach the target within the horizon, i.e. of ``T`` **given** ``T <= H``. With censored
    runs they are below the unconditional moments (the slowest runs are left out), and far
    below in the escape regime, whose ``T`` has a long right tail;
  - ``restricted_mean``, ``restricted_sd`` — the mean and standard deviation of ``min(T, H)``
    over all runs (a censored run counts ``H``), the restricted mean of survival analysis.

  Compare each with the law's moments of the same quantity
  (:meth:`~attnsignal.theory.escape.HittingLaw.hit_moments` at ``H``), not with the
  unconditional ones; :func:`compare_law` records both.

A step is read to the resolution of the records (``steps / n_records`` at most; the default
500 records give 0.2 % of the horizon). ``batch = 1``: steps are samples.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from .config import ModelConfig
from .results import Result
from .schedules import Schedule
from .validation import Instance, Integer, OneOf, Real, validated
from .seeds import SEED, stream

__all__ = ["SampleMeasurement", "measure_samples", "compare_law", "hit_statistics",
           "bootstrap_counts", "law_columns"]


@dataclass(frozen=True, eq=False)
class SampleMeasurement:
    """What :func:`measure_samples` measured.

    samples : first recorded step with mean ``|ρ| >= target`` (−1 if not within ``steps``)
    interval : ``(lo, hi)`` bootstrap interval of ``samples`` (``inf`` where a resample does
        not reach the target)
    horizon : ``H``, the steps simulated (the last record)
    hit_mean, hit_sd : mean and standard deviation of the per-run hitting steps ``T`` of the
        runs that reach the target within the horizon — conditional on ``T <= H`` (module
        docstring); ``hit_mean_interval``, ``hit_sd_interval`` their bootstrap intervals
    reached : fraction of runs whose ``|ρ|`` reaches the target within the horizon
    restricted_mean, restricted_sd : mean and standard deviation of ``min(T, H)`` over all
        runs; ``restricted_mean_interval``, ``restricted_sd_interval`` their bootstrap intervals
    steps, mean_abs : the record steps and the mean ``|ρ|`` there
    hits : per-run hitting steps (NaN where not reached)
    hit_quantiles : the 10, 25, 50, 75 and 90 % quantiles of the hitting steps over all runs
        (``inf`` beyond the fraction reached); ``iqr`` = q75 − q25, a spread that a few dozen
        runs estimate far better than the standard deviation (whose estimate is dominated by
        the slowest runs of an escape), with ``iqr_interval`` its bootstrap interval
    result : the simulation (:class:`~attnsignal.results.Result`)
    """

    target: float
    samples: int
    interval: tuple[float, float]
    hit_mean: float
    hit_sd: float
    hit_mean_interval: tuple[float, float]
    hit_sd_interval: tuple[float, float]
    reached: float
    steps: np.ndarray
    mean_abs: np.ndarray
    hits: np.ndarray
    hit_quantiles: np.ndarray
    iqr: float
    iqr_interval: tuple[float, float]
    level: float
    result: Result
    horizon: int
    restricted_mean: float
    restricted_sd: float
    restricted_mean_interval: tuple[float, float]
    restricted_sd_interval: tuple[float, float]


def _first_at_or_above(curves: np.ndarray, steps: np.ndarray, target: float) -> np.ndarray:
    """First step of each row of ``curves`` at or above ``target`` (NaN if none)."""
    above = curves >= target
    j = np.argmax(above, axis=-1)
    ok = np.take_along_axis(above, j[..., None], axis=-1)[..., 0]
    return np.where(ok, steps[j].astype(np.float64), np.nan)


@validated(model=Instance(ModelConfig), step=Instance(Schedule, "step-size schedule"),
           target=Real(gt=0.0, lt=1.0), steps=Integer(ge=1), runs=Integer(ge=2),
           seed=SEED, update=OneOf("projected", "riemannian"),
           n_records=Integer(ge=10), n_boot=Integer(ge=100), level=Real(gt=0.0, lt=1.0))
def measure_samples(model: ModelConfig, step: Schedule, target: float, *, steps: int,
                    runs: int = 64, seed: int | np.random.SeedSequence = 0,
                    update: str = "projected", n_records: int = 500, n_boot: int = 2000,
                    level: float = 0.95) -> SampleMeasurement:
    """Simulate ``runs`` chains of ``steps`` updates and measure when the mean ``|ρ|``
    reaches ``target`` (module docstring). Intervals are percentile bootstrap intervals at
    ``level`` from ``n_boot`` resamples of the runs. The runs are :func:`~attnsignal.simulate`'s
    with ``seed``; the resamples draw from ``seeds.stream(seed, "bootstrap")``. Raises
    ``ConfigError`` for bad input (those of :func:`~attnsignal.simulate` included)."""
    from .simulate import simulate

    every = max(1, steps // n_records)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=UserWarning)  # a constant step is intended
        res = simulate(model, step, steps=steps, runs=runs, engine="chain", update=update,
                       seed=seed, record_every=every)
    A = np.abs(res.alignment)
    ks = np.asarray(res.steps)
    mean = np.nanmean(A, axis=0)
    hits = _first_at_or_above(A, ks, target)
    first = _first_at_or_above(mean[None, :], ks, target)[0]
    idx, counts = bootstrap_counts(np.random.default_rng(stream(seed, "bootstrap")), n_boot,
                                   runs)
    finite = np.where(np.isfinite(A), A, 0.0)
    boot_curves = counts @ finite / runs
    boot = _first_at_or_above(boot_curves, ks, target)
    boot = np.where(np.isnan(boot), np.inf, boot)
    a = 0.5 * (1.0 - level)
    # inverted-CDF quantiles: no interpolation between a finite step and inf
    ci = (float(np.quantile(boot, a, method="inverted_cdf")),
          float(np.quantile(boot, 1.0 - a, method="inverted_cdf")))
    reached = np.isfinite(hits)
    horizon = int(ks[-1])
    moments = hit_statistics(hits, horizon, counts, level)
    hq_all = np.where(reached, hits, np.inf)
    qs = np.quantile(hq_all, [0.1, 0.25, 0.5, 0.75, 0.9], method="inverted_cdf")
    iqr = float(qs[3] - qs[1]) if np.isfinite(qs[3]) else float("inf")
    hb = np.sort(hq_all[idx], axis=1)  # inverted-CDF quantiles of each resample
    q1 = hb[:, max(math.ceil(0.25 * runs) - 1, 0)]
    q3 = hb[:, max(math.ceil(0.75 * runs) - 1, 0)]
    with np.errstate(invalid="ignore"):
        biqr = np.where(np.isfinite(q3), q3 - q1, np.inf)
    iqr_ci = (float(np.quantile(biqr, a, method="inverted_cdf")),
              float(np.quantile(biqr, 1 - a, method="inverted_cdf")))
    return SampleMeasurement(
        target=float(target), samples=int(first) if np.isfinite(first) else -1, interval=ci,
        reached=float(reached.mean()), steps=ks, mean_abs=mean, hits=hits, hit_quantiles=qs,
        iqr=iqr, iqr_interval=iqr_ci, level=float(level), result=res, horizon=horizon,
        **moments)


def bootstrap_counts(rng: np.random.Generator, n_boot: int, runs: int
                     ) -> tuple[np.ndarray, np.ndarray]:
    """``n_boot`` resamples of ``runs`` runs with replacement, drawn from ``rng``: the drawn
    indices ``idx`` (``(n_boot, runs)``, one ``rng.integers(0, runs, (n_boot, runs))`` call)
    and ``counts`` (``(n_boot, runs)``, float: how often each run is drawn), the form in
    which a resample's mean of per-run values ``x`` is ``counts @ x / runs``."""
    idx = rng.integers(0, runs, (n_boot, runs))
    counts = np.zeros((n_boot, runs))
    np.add.at(counts, (np.arange(n_boot)[:, None], idx), 1.0)
    return idx, counts


def hit_statistics(hits: np.ndarray, horizon: float, counts: np.ndarray, level: float = 0.95
                   ) -> dict[str, Any]:
    """The hitting-step statistics of :class:`SampleMeasurement` from per-run hitting steps
    ``hits`` (``(runs,)``, NaN: not reached within ``horizon``) and bootstrap resamples given
    as ``counts`` (``(n_boot, runs)``: how often each run is drawn): ``hit_mean``, ``hit_sd``
    of the runs with ``T <= H`` (conditional on reaching; NaN below two such runs),
    ``restricted_mean``, ``restricted_sd`` of ``min(T, H)`` over all runs (``ddof = 1``), and
    their percentile bootstrap intervals at ``level`` (``*_interval``)."""
    hits = np.asarray(hits, dtype=np.float64)
    counts = np.asarray(counts, dtype=np.float64)
    a = 0.5 * (1.0 - level)
    n_boot, runs = counts.shape
    reached = np.isfinite(hits)
    hm = float(np.mean(hits[reached])) if reached.any() else float("nan")
    hs = float(np.std(hits[reached], ddof=1)) if reached.sum() > 1 else float("nan")
    bm, bs = np.full(n_boot, np.nan), np.full(n_boot, np.nan)
    h0 = np.where(reached, hits, 0.0)
    w = counts * reached[None, :]
    nw = w.sum(axis=1)
    ok = nw > 1
    bm[ok] = (w @ h0)[ok] / nw[ok]
    var = (w @ (h0 * h0))[ok] / nw[ok] - bm[ok] ** 2
    bs[ok] = np.sqrt(np.maximum(var, 0.0) * nw[ok] / (nw[ok] - 1))
    hm_ci = tuple(float(x) for x in np.nanquantile(bm, [a, 1 - a])) if ok.any() else (math.nan,) * 2
    hs_ci = tuple(float(x) for x in np.nanquantile(bs, [a, 1 - a])) if ok.any() else (math.nan,) * 2
    capped = np.where(reached, hits, float(horizon))  # min(T, H)
    cm = counts @ capped / runs
    cv = (counts @ (capped * capped) / runs - cm * cm) * runs / (runs - 1)
    cs = np.sqrt(np.maximum(cv, 0.0))
    return dict(hit_mean=hm, hit_sd=hs, hit_mean_interval=hm_ci, hit_sd_interval=hs_ci,
                restricted_mean=float(np.mean(capped)),
                restricted_sd=float(np.std(capped, ddof=1)),
                restricted_mean_interval=(float(np.quantile(cm, a)), float(np.quantile(cm, 1 - a))),
                restricted_sd_interval=(float(np.quantile(cs, a)), float(np.quantile(cs, 1 - a))))


#: the measured hitting-time columns of a :func:`compare_law` row beside ``hit_mean``, ``hit_sd``
_MEASURED_MOMENTS = ("hit_mean_lo", "hit_mean_hi", "hit_sd_lo", "hit_sd_hi", "restricted_mean",
                     "restricted_sd", "restricted_mean_lo", "restricted_mean_hi",
                     "restricted_sd_lo", "restricted_sd_hi")


def compare_law(law: Any, dims: Sequence[int], *, runs: int,
                seed: int | np.random.SeedSequence = 0, horizon: float = 3.0) -> list[dict]:
    """The law of a :class:`~attnsignal.theory.scaling.ScalingLaw` against the chain at each
    dimension of ``dims``: one row per dimension with the step, ``τ``, the prediction and its
    Monte-Carlo error, the predicted hitting-time law, which mean step the law used
    (``law_method``: "expansion" or "exact") and — with ``runs >= 2`` — the measurement
    (:func:`measure_samples` over ``horizon_steps = ⌈horizon × predicted⌉ + 10`` steps) with
    its bootstrap intervals. A dimension where the target is not reached (prediction ``inf``)
    is not simulated. The runs at ``d`` draw from ``seeds.stream(seed, "d", d)``: independent
    between dimensions, so that the points' errors do not move together.

    The hitting step ``T`` of a run is seen through the horizon ``H = horizon_steps``, and the
    row compares like with like (:meth:`~attnsignal.theory.escape.HittingLaw.hit_moments`):

    * ``hit_mean``, ``hit_sd`` (runs with ``T <= H``) against ``hit_mean_conditional``,
      ``hit_sd_conditional`` (the law given ``T <= H``; ``hit_sd_kurtosis`` its excess
      kurtosis, which sets the standard error of a measured standard deviation);
    * ``restricted_mean``, ``restricted_sd`` (``min(T, H)`` over all runs) against
      ``restricted_mean_predicted``, ``restricted_sd_predicted``;
    * ``reached`` against ``reached_predicted`` (``P(T <= H)``);
    * ``iqr`` against ``iqr_predicted`` (quantiles over all runs: unaffected by censoring
      while the 75 % quantile lies within the horizon).

    ``hit_mean_predicted``, ``hit_sd_predicted`` are the law's moments with no horizon; a
    censored simulation does not estimate them."""
    rows = []
    for d in dims:
        m = law.model_at(int(d))
        pred = law.law(int(d)).samples
        H = int(math.ceil(horizon * pred)) + 10 if math.isfinite(pred) else 0
        row = {"sign": m.signal_sign, "d": int(d), "n_informative": m.n_informative,
               "n_nuisance": m.n_nuisance, "L": m.n_tokens, "c": law.c,
               "eta": float(law.step_size(int(d))), "tau": law.tau(int(d)),
               **law_columns(law, int(d), H),
               "measured": math.nan, "measured_lo": math.nan, "measured_hi": math.nan,
               "hit_mean": math.nan, "hit_sd": math.nan, "iqr": math.nan, "iqr_lo": math.nan,
               "iqr_hi": math.nan, "reached": math.nan, "runs": 0,
               **dict.fromkeys(_MEASURED_MOMENTS, math.nan)}
        if runs >= 2 and math.isfinite(pred):
            ms = measure_samples(m, law.step(int(d)), law.target, steps=H, runs=runs,
                                 seed=stream(seed, "d", int(d)), update=law.update)
            row.update(measured=float(ms.samples) if ms.samples >= 0 else math.nan,
                       measured_lo=ms.interval[0], measured_hi=ms.interval[1],
                       hit_mean=ms.hit_mean, hit_sd=ms.hit_sd, iqr=ms.iqr,
                       iqr_lo=ms.iqr_interval[0], iqr_hi=ms.iqr_interval[1],
                       reached=ms.reached, runs=runs,
                       hit_mean_lo=ms.hit_mean_interval[0], hit_mean_hi=ms.hit_mean_interval[1],
                       hit_sd_lo=ms.hit_sd_interval[0], hit_sd_hi=ms.hit_sd_interval[1],
                       restricted_mean=ms.restricted_mean, restricted_sd=ms.restricted_sd,
                       restricted_mean_lo=ms.restricted_mean_interval[0],
                       restricted_mean_hi=ms.restricted_mean_interval[1],
                       restricted_sd_lo=ms.restricted_sd_interval[0],
                       restricted_sd_hi=ms.restricted_sd_interval[1])
        rows.append(row)
    return rows


def law_columns(law: Any, d: int, horizon_steps: int) -> dict[str, Any]:
    """The law's columns of a :func:`compare_law` row at ``d``: the prediction
    (``predicted``, its Monte-Carlo error ``predicted_error``, ``law_method``), the hitting
    step with no horizon (``hit_mean_predicted``, ``hit_sd_predicted``, ``iqr_predicted``) and
    through ``H = horizon_steps`` steps (``horizon_steps``, and
    :meth:`~attnsignal.theory.escape.HittingLaw.hit_moments` ``(H)`` as
    ``reached_predicted``, ``hit_mean_conditional``, ``hit_sd_conditional``,
    ``hit_sd_kurtosis``, ``restricted_mean_predicted``, ``restricted_sd_predicted``; NaN with
    ``H = 0``: nothing simulated). ``law`` is a
    :class:`~attnsignal.theory.scaling.ScalingLaw`."""
    hl = law.law(int(d))
    q25, q75 = hl.hitting_quantile([0.25, 0.75])
    H = int(horizon_steps)
    hm = hl.hit_moments(H) if H > 0 else None
    return {"predicted": hl.samples, "predicted_error": law.samples_error(int(d)),
            "hit_mean_predicted": hl.hit_mean, "hit_sd_predicted": hl.hit_sd,
            "iqr_predicted": float(q75 - q25), "law_method": law.law_method(int(d)),
            "horizon_steps": H, "reached_predicted": hm.reached if hm else math.nan,
            "hit_mean_conditional": hm.mean if hm else math.nan,
            "hit_sd_conditional": hm.sd if hm else math.nan,
            "hit_sd_kurtosis": hm.kurtosis if hm else math.nan,
            "restricted_mean_predicted": hm.restricted_mean if hm else math.nan,
            "restricted_sd_predicted": hm.restricted_sd if hm else math.nan}
