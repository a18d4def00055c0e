"""``efficiency``: samples each estimator needs to reach a target ``|ρ|``, measured and
predicted, with ratios to the oracle.

Measured: ``runs`` runs of each method on log-spaced records; the samples to reach a target
are where the mean ``|ρ|`` over runs first reaches it, interpolated linearly in
``(log k, log(1 − E|ρ|))`` between the two records around the crossing (NaN if it is not
reached within the budget). Predicted: the smallest ``k`` at which :func:`baseline_theory`
reaches the target (exact for the means and the oracle, BBP for PCA, mean field for Oja) and,
for attention, the first crossing of the target by the predicted mean ``|ρ|`` of the effective
dynamics (:func:`attnsignal.theory.effective.effective_dynamics`: the law of ``ρ_k`` at finite
step and dimension, from the uniform start) under the same schedule, on 200 log-spaced records
interpolated as the measured curve is — one evolution serves every target.

Attention runs with E1's ``η_k = 0.03 (1 + k/1000)^(−1)`` by default, or with
``attention_step="advise"`` the schedule advisor's (:func:`attention_schedule` is the hook;
the advisor solves the effective dynamics and took over 10 minutes on two busy cores even at
d = 10, so it is not the default).
"""

from __future__ import annotations

import warnings
from typing import Any, Sequence

import numpy as np
import pandas as pd

from ..config import ModelConfig, StepSize
from ..validation import Boolean, Integer, OneOf, Optional, RealArray, validated
from ..validation import Sequence as SequenceOf
from ..seeds import SEED
from .base import MODEL, method_names
from .runner import baseline
from .theory import baseline_theory

__all__ = ["efficiency", "attention_schedule", "samples_to_target", "predicted_samples",
           "E1_SCHEDULE"]

#: E1's schedule: the fallback for attention when no advisor is available.
E1_SCHEDULE = StepSize(eta0=0.03, k0=1000.0, power=1.0)


#: the theory behind each baseline's prediction (:func:`baseline_theory`)
_BASELINE_THEORY = {"mean": "exact", "oracle": "exact", "pca": "BBP", "oja": "mean field"}


def attention_schedule(model: ModelConfig, target: float, advise: bool = False
                       ) -> tuple[Any, str]:
    """The schedule attention runs with in the table, and where it comes from: E1's schedule,
    or with ``advise=True`` the schedule advisor's (:func:`attnsignal.theory.advisor.
    advise_schedule`; it solves the effective dynamics and can take minutes)."""
    if advise:
        from ..theory.advisor import advise_schedule

        return advise_schedule(model, target).step, "advise_schedule"
    return E1_SCHEDULE, "E1 schedule η_k = 0.03 (1 + k/1000)^(−1)"


def samples_to_target(steps: np.ndarray, mean_abs: np.ndarray, target: float) -> float:
    """First crossing of ``target`` by the curve ``mean_abs`` over the records ``steps``,
    interpolated in ``(log k, log(1 − E|ρ|))``; NaN if never reached."""
    steps = np.asarray(steps, dtype=np.float64)
    m = np.asarray(mean_abs, dtype=np.float64)
    hit = np.flatnonzero(m >= target)
    if hit.size == 0:
        return float("nan")
    j = int(hit[0])
    if j == 0:
        return float(steps[0])
    k0, k1 = steps[j - 1], steps[j]
    g0, g1, gt = 1.0 - m[j - 1], 1.0 - m[j], 1.0 - target
    if k0 <= 0 or g0 <= 0 or g1 <= 0 or g0 == g1:
        return float(k1)
    frac = (np.log(gt) - np.log(g0)) / (np.log(g1) - np.log(g0))
    return float(np.exp(np.log(k0) + frac * (np.log(k1) - np.log(k0))))


def predicted_samples(model: ModelConfig, method: str, target: float, budget: int,
                      step: Any = None) -> float:
    """Smallest ``k <= budget`` with predicted ``E|ρ_k| >= target`` (NaN if none)."""
    if method == "oja":  # recursions over log grids of doubling length, then interpolate
        top = min(budget, 1000)
        while True:
            ks = np.unique(np.round(np.geomspace(1, top, 200)).astype(np.int64))
            pred = baseline_theory(model, "oja", ks, step=step)
            if pred[-1] >= target or top >= budget:
                return samples_to_target(ks, pred, target)
            top = min(budget, 4 * top)
    if baseline_theory(model, method, [budget])[0] < target:
        return float("nan")
    lo, hi = 0, budget  # E|ρ_k| is increasing in k for the means, the oracle and BBP
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if baseline_theory(model, method, [mid])[0] >= target:
            hi = mid
        else:
            lo = mid
    return float(hi)


@validated(model=MODEL, target=RealArray(gt=0.0, lt=1.0),
           methods=SequenceOf(OneOf(lambda: ("sga", *method_names())), min_len=1),
           samples=Optional(Integer(ge=1)), runs=Integer(ge=1), seed=SEED,
           records=Integer(ge=2), theory=Boolean(), attention_theory=Boolean(),
           theory_samples=Integer(ge=100), simulate=Boolean())
def efficiency(
    model: ModelConfig,
    target: float | Sequence[float],
    *,
    methods: Sequence[str] = ("sga", "mean", "pca", "oja", "oracle"),
    samples: int | None = None,
    runs: int = 16,
    seed: int = 0,
    attention_step: Any = None,
    oja_step: Any = None,
    records: int = 80,
    theory: bool = True,
    attention_theory: bool = True,
    theory_samples: int = 4000,
    results: dict[str, Any] | None = None,
    simulate: bool = True,
) -> pd.DataFrame:
    """The sample-efficiency table: one row per (method, target).

    Parameters
    ----------
    model : the data model; target : one ``|ρ|`` in (0, 1) or several.
    methods : ``"sga"`` (attention, :func:`attnsignal.simulate` with the chain engine) and
        baseline names. samples : per-run budget (None: twice the largest prediction, at
        least 1 000, at most 2 000 000). runs, seed : of every method's simulation.
    attention_step : attention's schedule (None: E1's; ``"advise"``: the schedule advisor's,
        which can take minutes — see :func:`attention_schedule`).
    oja_step : Oja's schedule (None: its default). records : log-spaced records per run.
    theory : also predict. attention_theory : include attention's prediction (the effective
        dynamics, ``theory_samples`` reduced draws per moment node: seconds at E1's size).
    results : precomputed ``Result`` per method (e.g. E1's attention runs), used instead of
        simulating; their records decide the resolution of the measured crossing.
    simulate : False: methods without a precomputed result get only their prediction
        (measured NaN).

    Returns
    -------
    pandas DataFrame with columns ``method, target, samples, predicted, ratio, ratio_predicted,
    theory, schedule`` — ``theory`` names the prediction's theory (attention: the effective
    dynamics, or the limiting ODE where that law is too costly; see :func:`_predict_attention`);
    ``ratio`` is ``samples / oracle's samples`` at the same target (measured;
    ``ratio_predicted`` from the predictions); NaN where a method does not reach the target
    within the budget (e.g. the token mean in the random-sign variant).
    """
    targets = np.atleast_1d(target)
    results = dict(results or {})
    tmax = float(targets.max())
    if (attention_step is None or attention_step == "advise") and "sga" in methods \
            and "sga" not in results:
        attention_step, source = attention_schedule(model, tmax, attention_step == "advise")
    else:
        source = "given" if attention_step is not None else "precomputed runs"

    pred_budget = int(samples) if samples is not None else 2_000_000
    predicted: dict[tuple[str, float], float] = {}
    theories = {m: _BASELINE_THEORY.get(m, "") for m in methods} if theory else {}
    if theory:
        for m in methods:
            if m == "sga":
                if attention_theory and attention_step is not None:
                    values, used = _predict_attention(model, targets, pred_budget,
                                                      attention_step, theory_samples, seed)
                    predicted.update(((m, t), v) for t, v in zip(targets, values))
                    theories[m] = used
                continue
            for t in targets:
                predicted[m, t] = predicted_samples(model, m, float(t), pred_budget,
                                                    step=oja_step if m == "oja" else None)
    if samples is None:
        finite = [v for v in predicted.values() if np.isfinite(v)]
        samples = int(min(2_000_000, max(1000, 2 * max(finite)))) if finite else 100_000

    rows = []
    for m in methods:
        res = results.get(m)
        if res is None and simulate:
            res = _simulate(model, m, int(samples), runs, seed, records, attention_step,
                            oja_step)
        mean_abs = None if res is None else np.nanmean(np.abs(res.alignment), axis=0)
        sched = ("" if m not in ("sga", "oja") or res is None else
                 getattr(res.schedule, "describe", lambda: str(res.schedule))())
        for t in targets:
            rows.append({
                "method": m, "target": float(t),
                "samples": (float("nan") if res is None else
                            samples_to_target(res.steps, mean_abs, float(t))),
                "predicted": predicted.get((m, t), float("nan")),
                "theory": theories.get(m, ""),
                "schedule": sched + (f" ({source})" if m == "sga" else ""),
            })
    frame = pd.DataFrame(rows)
    for col, out in (("samples", "ratio"), ("predicted", "ratio_predicted")):
        ref = frame[frame["method"] == "oracle"].set_index("target")[col]
        frame[out] = frame[col] / frame["target"].map(ref) if len(ref) else np.nan
    return frame[["method", "target", "samples", "predicted", "ratio", "ratio_predicted",
                  "theory", "schedule"]]


#: evolution blocks the effective dynamics may use for attention's prediction (E1's sizes need
#: ~200 for 10⁶ samples; small L with a large step needs ~1 per step)
ATTENTION_MAX_BLOCKS = 600
EFFECTIVE = "effective dynamics"
LIMITING = "limiting ODE + finite-step plateau"


def _predict_attention(model: ModelConfig, targets: np.ndarray, budget: int, step: Any,
                       n_samples: int, seed: int) -> tuple[list[float], str]:
    """Predicted samples to each target for attention's SGA under ``step``, and the theory
    used: the first crossing of the effective dynamics' mean ``|ρ|`` (uniform start, 200
    log-spaced records up to ``budget``, interpolated as :func:`samples_to_target` does);
    where that law needs more than :data:`ATTENTION_MAX_BLOCKS` evolution blocks (small
    ``L``, large ``η``: minutes to hours), :func:`attnsignal.theory.samples_to_reach` — the
    limiting ODE's hitting time moved on by the finite-step plateau. NaN if not within
    ``budget``."""
    from ..theory import samples_to_reach
    from ..theory.effective import BlockBudgetExceeded, effective_dynamics

    ks = np.unique(np.round(np.geomspace(1, budget, 200)).astype(np.int64))
    try:
        ed = effective_dynamics(model, step, steps=int(budget), record=[0, *ks.tolist()],
                                n_samples=n_samples, seed=seed,
                                max_blocks=ATTENTION_MAX_BLOCKS)
    except BlockBudgetExceeded:
        out = []
        for t in targets:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                got = samples_to_reach(model, step, float(t), plateau=False,
                                       n_samples=n_samples)
            out.append(float(got.samples) if 0 <= got.samples <= budget else float("nan"))
        return out, LIMITING
    return [samples_to_target(ed.steps, ed.mean_abs, float(t)) for t in targets], EFFECTIVE


def _simulate(model: ModelConfig, method: str, samples: int, runs: int, seed: int,
              records: int, attention_step: Any, oja_step: Any):
    ks = np.unique(np.round(np.geomspace(1, samples, records)).astype(np.int64))
    if method != "sga":
        return baseline(model, method, samples=samples, runs=runs, seed=seed,
                        record=list(ks), step=oja_step if method == "oja" else None)
    from ..simulate import simulate

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return simulate(model, attention_step, steps=samples, runs=runs, seed=seed,
                        engine="chain", record=list(ks))
