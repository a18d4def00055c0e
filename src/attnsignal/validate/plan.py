"""One configuration of the accuracy map: its schedule and run length from the theory, and the
effective dynamics' prediction at exactly the runs' records (:func:`predict`, a pool task).

Schedule
--------
``η_max`` is the largest constant step whose plateau stays above ``|ρ| = 0.5``
(:func:`~attnsignal.theory.finite_step.largest_plateau_step`: ``(1 − ρ²)Φ'(ρ)/κ_B(ρ)`` at
``ρ = ±0.5``, the smaller over the ends that attract; for the fixed sign both ``±ξ`` may).
Where no end's field points outwards at ``|ρ| = 0.5`` (an interior stable point below it) the
mean dynamics cannot pass 0.5 at any step; ``η_max`` is then ``|F(0.5)|/|κ_B(0.5)|`` at the
smaller end, a step of the size where the finite-step term is as large as the field, and the
configuration is marked ``field_escapes = False``. Then ``η0 = f_η η_max`` and
``k0 = f_k t_{0.5}/η0`` (:mod:`.box`), ``t_{0.5}`` the limiting ODE's time from the uniform
start's mean ``|ρ0|`` to ``0.5`` (``k0 = f_k × the step cap`` where the ODE never reaches it).

Run length
----------
The runs are long enough to pass mean ``|ρ| = 0.5`` where the configuration escapes: twice the
effective dynamics' predicted hitting step of mean ``|ρ| = 0.5`` (at least 100 steps), capped by
the cost the map allows one configuration — ``runs × steps × B × (L + 32) ≤ budget`` chain
token-samples (the chain engine's cost is ``O(L)`` per sample and does not depend on ``d``) and
``steps ≤ max_steps``. The prediction is first run over ``4×`` the ODE's hitting step (the
effective dynamics is slower than the ODE at finite step), lengthened up to the cap while it
does not reach 0.5. A configuration whose predicted mean never reaches 0.5 within the cap runs
to the cap (``predicted_hit = −1``); whether the runs escaped is read from the runs themselves.

Prediction
----------
One moment table (:func:`~attnsignal.theory.effective.moment_table`: adaptive draws and
replicate tables, so the prediction carries its Monte-Carlo standard error) over the schedule's
steps up to the cap serves every evolution. The runs are recorded every ``E ≈ S/100`` steps of
their length ``S``; the prediction is evolved over exactly those steps and records (once more
unless the planning evolution was that one), so its diagnostic
(:class:`~attnsignal.theory.effective.Diagnostic`) speaks of what is compared. ``seconds``
holds the moment table's and that evolution's wall time (what a user pays for the prediction)
and ``plan_seconds`` all of this task's (the cap, the ODE, the planning evolutions).
:func:`predict_at` makes the prediction again at a stored prediction's schedule and records
without planning them (the same table and evolution): what brings a finished map up to date
with the code against its stored chain runs.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

from ..config import ConfigError, StepSize
from .box import MapConfig, config_from_dict

__all__ = ["Prediction", "predict", "predict_at", "step_cap", "chain_token_samples", "LEVEL"]

#: the level of mean ``|ρ|`` the runs must pass
LEVEL = 0.5
#: records of the runs (about; every ``⌊steps/RECORDS⌋`` steps and the last)
RECORDS = 100
#: records of a planning evolution
PLAN_RECORDS = 400
#: fewest steps of a run
MIN_STEPS = 100
#: the tolerance on the predicted mean ``|ρ|`` the prediction is held to (its draws grow while
#: its Monte-Carlo error takes more than half of it; its diagnostic checks it)
TOLERANCE = 0.01
#: fixed cost of one chain update in tokens' worth (as the reproduction's scheduler counts it)
CHAIN_OVERHEAD = 32


def chain_token_samples(cfg: MapConfig, runs: int, steps: int) -> float:
    """The chain engine's work for ``runs`` runs of ``steps`` updates at ``cfg``:
    ``runs × steps × B × (L + 32)`` (token-samples; about 10–30 ns each)."""
    return float(runs) * steps * cfg.batch * (cfg.n_tokens + CHAIN_OVERHEAD)


def step_cap(cfg: MapConfig, runs: int, budget: float, max_steps: int) -> int:
    """The most steps ``cfg``'s runs may take: ``runs × steps × B × (L + 32) ≤ budget`` and
    ``steps ≤ max_steps``, at least :data:`MIN_STEPS`."""
    per_step = chain_token_samples(cfg, runs, 1)
    return int(max(MIN_STEPS, min(max_steps, math.floor(budget / per_step))))


@dataclass(frozen=True, eq=False)
class Prediction:
    """A configuration's schedule, run length and predicted law at the runs' records.

    eta_max, field_escapes : the plateau's cap on ``η0`` and whether the field passes 0.5
    eta0, k0 : the schedule ``η0 (1 + k/k0)^(−p)`` (``p = config.power``)
    ode_time, ode_steps : the limiting ODE's time to mean ``|ρ| = 0.5`` and the step it maps to
        under the schedule (NaN / −1 when never)
    cap : the most steps the cost allows;  steps, record_every : the runs' length and records
    predicted_hit : the effective dynamics' first record with mean ``|ρ| ≥ 0.5`` (−1: none)
    record_steps, mean_abs, q10, q90 : the prediction at the runs' records
    mean_abs_se : its Monte-Carlo standard error per record where the effective dynamics
        reports one (else None)
    verdict, causes : the effective dynamics' own validity diagnostic (``"ok"``, ``"flagged"``;
        ``"refused"`` when it declined to evolve, e.g. its block budget) and its one-line
        causes (other warnings it raised included)
    seconds : wall seconds of the prediction (``moments``, ``evolve``, ``total``)
    plan_seconds, plan_cpu : this task's wall and CPU seconds in all
    extra : ``diagnostic`` (the diagnostic's numbers, ``Diagnostic.as_dict``) and ``draws``
        (reduced draws per moment node used)
    """

    config: MapConfig
    eta_max: float
    field_escapes: bool
    eta0: float
    k0: float
    ode_time: float
    ode_steps: int
    cap: int
    steps: int
    record_every: int
    predicted_hit: int
    record_steps: np.ndarray
    mean_abs: np.ndarray
    q10: np.ndarray
    q90: np.ndarray
    mean_abs_se: np.ndarray | None
    verdict: str
    causes: tuple[str, ...]
    seconds: dict[str, float]
    plan_seconds: float
    plan_cpu: float
    n_samples: int
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def step(self) -> StepSize:
        return StepSize(eta0=self.eta0, k0=self.k0, power=self.config.power)

    @property
    def refused(self) -> bool:
        return self.verdict == "refused"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (arrays as lists)."""
        d = asdict(self)
        d["config"] = self.config.to_dict()
        for k in ("record_steps", "mean_abs", "q10", "q90", "mean_abs_se"):
            v = getattr(self, k)
            d[k] = None if v is None else np.asarray(v).tolist()
        d["causes"] = list(self.causes)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Prediction":
        d = dict(d)
        d["config"] = config_from_dict(d["config"])
        d["record_steps"] = np.asarray(d["record_steps"], dtype=np.int64)
        for k in ("mean_abs", "q10", "q90"):
            d[k] = np.asarray(d[k], dtype=np.float64)
        if d.get("mean_abs_se") is not None:
            d["mean_abs_se"] = np.asarray(d["mean_abs_se"], dtype=np.float64)
        d["causes"] = tuple(d["causes"])
        return cls(**d)


def _cap_and_sides(cfg: MapConfig, n_samples: int, seed: int) -> tuple[float, bool]:
    """``(η_max, field_escapes)`` of the module docstring."""
    from ..theory.finite_step import largest_plateau_step, second_order_coefficient
    from ..theory.landscape import landscape

    model = cfg.model
    sides = (1,) if model.signal_sign == "random" else (1, -1)  # random: the law is even
    caps = [largest_plateau_step(model, LEVEL, cfg.batch, cfg.update, side=s,
                                 n_samples=n_samples, seed=seed) for s in sides]
    good = [c for c in caps if c > 0]
    if good:
        return float(min(good)), True
    rs = np.array([s * LEVEL for s in sides])
    kap = np.abs(second_order_coefficient(model, rs, cfg.batch, cfg.update,
                                          n_samples=n_samples, seed=seed).value)
    fld = np.abs(landscape(model, rs).field)
    ratio = fld / np.where(kap > 0, kap, np.inf)
    ok = ratio[ratio > 0]
    if ok.size == 0:
        raise ConfigError("config", "has neither a field nor a finite-step term at |rho| = "
                          f"{LEVEL} to scale its schedule by", cfg.label())
    return float(ok.min()), False


def _ode_time(cfg: MapConfig) -> float:
    """The limiting ODE's time from ``±`` the uniform start's mean ``|ρ0|`` to ``|ρ| = 0.5``
    (the sooner of the two signs; NaN if neither gets there)."""
    from ..theory.escape import uniform_mean_abs
    from ..theory.ode import solve_ode

    model = cfg.model
    r0 = uniform_mean_abs(model.d)
    signs = (1.0,) if model.signal_sign == "random" else (1.0, -1.0)
    times = [solve_ode(model, s * r0, targets=(LEVEL,)).hitting_times[LEVEL] for s in signs]
    finite = [t for t in times if math.isfinite(t)]
    return float(min(finite)) if finite else float("nan")


def _diagnostic(ed: Any, caught: list) -> tuple[str, tuple[str, ...], np.ndarray | None,
                                                dict[str, Any]]:
    """The effective dynamics' own verdict, causes, standard error of the mean |ρ| per record
    and the diagnostic's numbers (:class:`~attnsignal.theory.effective.Diagnostic`); other
    warnings it raised count as causes."""
    from ..theory.effective import EffectiveDynamicsAccuracyWarning

    diag = ed.diagnostic
    others = [str(w.message).replace("\n", " ") for w in caught
              if not issubclass(w.category, EffectiveDynamicsAccuracyWarning)]
    causes = tuple(dict.fromkeys([*diag.causes, *others]))
    verdict = "flagged" if (diag.verdict != "ok" or others) else "ok"
    numbers = {k: v for k, v in diag.as_dict().items() if k not in ("verdict", "causes")}
    return verdict, causes, np.asarray(ed.mean_abs_stderr, dtype=np.float64), numbers


class _Evolver:
    """The effective dynamics of ``cfg`` under ``step`` on a given moment table, the warnings
    of its last evolution kept in ``caught``
    (:func:`~attnsignal.theory.effective.last_pass_warnings`)."""

    def __init__(self, cfg: MapConfig, step: StepSize, *, seed: int, n_samples: int,
                 max_blocks: int | None, diffusion_scale: float):
        from ..theory.effective import last_pass_warnings

        self.cfg, self.step, self.seed, self.n_samples = cfg, step, seed, n_samples
        self.max_blocks, self.diffusion_scale = max_blocks, diffusion_scale
        self._recorded, self.caught = last_pass_warnings(self._evolve)

    def __call__(self, n: int, every: int, moments: Any) -> Any:
        return self._recorded(n, every, moments)

    def _evolve(self, n: int, every: int, moments: Any) -> Any:
        from ..theory.effective import effective_dynamics

        c = self.cfg
        return effective_dynamics(c.model, self.step, steps=n, batch=c.batch, update=c.update,
                                  record_every=every, seed=self.seed, n_samples=self.n_samples,
                                  moments=moments, max_blocks=self.max_blocks,
                                  diffusion_scale=self.diffusion_scale)


def _at_records(evolve: _Evolver, table: Any, steps: int, every: int,
                planned: Any = None) -> tuple[Any, Any, float]:
    """The prediction over ``steps`` steps recorded every ``every`` on ``table``, with more
    draws while its Monte-Carlo error takes more than half of :data:`TOLERANCE` (as
    ``effective_dynamics`` does for a table of its own); ``planned``: an evolution already made
    at exactly these records on ``table``. Returns ``(effective dynamics, final table, seconds
    of the added draws beyond the last evolution)``."""
    from ..theory.effective import within_tolerance

    evolved: list[float] = []

    def runs_prediction(t: Any) -> Any:
        if t is table and planned is not None:
            return planned
        e = evolve(steps, every, t)
        evolved.append(float(e.timings["evolve_s"]))
        return e

    t0 = time.perf_counter()
    ed, final = within_tolerance(runs_prediction, table, TOLERANCE)
    return ed, final, max(0.0, time.perf_counter() - t0 - (evolved[-1] if evolved else 0.0))


def _finish(pred_fields: dict[str, Any], ed: Any, final: Any, evolve: _Evolver,
            t_moments: float) -> dict[str, Any]:
    """The prediction's fields from its evolution at the runs' records."""
    q10, q90 = ed.quantile([0.1, 0.9])
    verdict, causes, se, numbers = _diagnostic(ed, evolve.caught)
    t_ev = float(ed.timings["evolve_s"])
    return dict(pred_fields, record_steps=np.asarray(ed.steps, dtype=np.int64),
                mean_abs=ed.mean_abs, q10=q10, q90=q90, mean_abs_se=se, verdict=verdict,
                causes=causes, seconds={"moments": t_moments, "evolve": t_ev,
                                        "total": t_moments + t_ev},
                extra={"diagnostic": numbers, "draws": float(final.n_samples)})


def _on_table(cfg: MapConfig, step: StepSize, cap: int, *, n_samples: int, seed: int,
              max_blocks: int | None, diffusion_scale: float) -> tuple[Any, _Evolver, float]:
    """The moment table that serves every evolution of ``cfg``'s prediction under ``step``
    (its steps ``[η(cap − 1), η0]``, ``n_samples`` draws to start, ``seed``), the evolver on
    it, and the table's wall seconds."""
    from ..theory.effective import moment_table

    t0 = time.perf_counter()
    table = moment_table(cfg.model, float(step.eta(cap - 1)), step.eta0, batch=cfg.batch,
                         update=cfg.update, n_samples=n_samples, seed=seed)
    t_moments = time.perf_counter() - t0
    evolve = _Evolver(cfg, step, seed=seed, n_samples=n_samples, max_blocks=max_blocks,
                      diffusion_scale=diffusion_scale)
    return table, evolve, t_moments


def _refused(exc: Exception, t_moments: float) -> dict[str, Any]:
    """The prediction's fields where the effective dynamics declined to evolve (its block
    budget): no records, the verdict ``"refused"`` with the reason as its cause."""
    empty = np.zeros(0)
    return dict(predicted_hit=-1, record_steps=np.zeros(0, dtype=np.int64), mean_abs=empty,
                q10=empty, q90=empty, mean_abs_se=None, verdict="refused", causes=(str(exc),),
                seconds={"moments": t_moments, "evolve": float("nan"), "total": float("nan")},
                extra={})


def predict_at(pred: Prediction, *, n_samples: int, seed: int, max_blocks: int | None,
               diffusion_scale: float = 1.0) -> Prediction:
    """The prediction of ``pred``'s configuration at exactly ``pred``'s schedule, run length
    and records — those of the chain runs stored against it — without planning them again: the
    same moment table (its step range ``[η(cap − 1), η0]``, ``n_samples`` and ``seed``) and the
    same evolution and tolerance loop as :func:`predict`, so that with the code that made
    ``pred`` it reproduces ``pred`` bit for bit. ``predicted_hit`` is read at the runs' records; ``plan_seconds`` and
    ``plan_cpu`` are ``pred``'s (nothing is planned)."""
    from ..theory.effective import BlockBudgetExceeded

    cfg = pred.config
    table, evolve, t_moments = _on_table(cfg, pred.step, pred.cap, n_samples=n_samples,
                                         seed=seed, max_blocks=max_blocks,
                                         diffusion_scale=diffusion_scale)
    try:
        ed, final, t_more = _at_records(evolve, table, pred.steps, pred.record_every)
    except BlockBudgetExceeded as exc:
        return replace(pred, n_samples=n_samples, **_refused(exc, t_moments))
    fields = _finish({"predicted_hit": int(ed.hitting_step(LEVEL)), "n_samples": n_samples},
                     ed, final, evolve, t_moments + t_more)
    return replace(pred, **fields)


def predict(cfg: MapConfig, *, runs: int, budget: float, max_steps: int, n_samples: int,
            seed: int, max_blocks: int | None, diffusion_scale: float = 1.0) -> Prediction:
    """The schedule, run length and prediction of ``cfg`` (module docstring). ``seed`` seeds
    the reduced draws (``κ_B`` and the one-step moments); ``diffusion_scale`` is passed to the
    effective dynamics (1: the real one; 0: a deliberately wrong law for tests)."""
    from ..theory.effective import BlockBudgetExceeded

    t_start, c_start = time.perf_counter(), time.process_time()
    eta_max, escapes = _cap_and_sides(cfg, min(n_samples, 4000), seed)
    t_half = _ode_time(cfg)
    cap = step_cap(cfg, runs, budget, max_steps)
    eta0 = cfg.eta_fraction * eta_max
    k0 = cfg.k0_factor * (t_half / eta0 if math.isfinite(t_half) else cap)
    step = StepSize(eta0=eta0, k0=float(min(max(k0, 1e-6), 1e15)), power=cfg.power)
    k_ode = int(step.step_at_time(t_half)) if math.isfinite(t_half) else -1
    if k_ode > 10 * cap:
        k_ode = -1

    table, evolve, t_moments = _on_table(cfg, step, cap, n_samples=n_samples, seed=seed,
                                         max_blocks=max_blocks,
                                         diffusion_scale=diffusion_scale)

    def base(**kw: Any) -> Prediction:
        return Prediction(config=cfg, eta_max=eta_max, field_escapes=escapes, eta0=eta0,
                          k0=step.k0, ode_time=t_half, ode_steps=k_ode, cap=cap,
                          n_samples=n_samples, plan_seconds=time.perf_counter() - t_start,
                          plan_cpu=time.process_time() - c_start, **kw)

    horizon = min(cap, max(MIN_STEPS, 4 * k_ode)) if k_ode > 0 else cap
    every = max(1, horizon // PLAN_RECORDS)
    try:
        while True:
            every = max(1, horizon // PLAN_RECORDS)
            ed = evolve(horizon, every, table)
            hit = ed.hitting_step(LEVEL)
            if horizon >= cap or (hit >= 0 and 2 * hit <= horizon):
                break
            horizon = min(cap, max(4 * horizon, 2 * hit) if hit >= 0 else 8 * horizon)
        # the runs' length and records, and the prediction at exactly those
        if hit >= 0:
            steps = min(horizon, every * math.ceil(max(2 * hit, MIN_STEPS) / every))
        else:
            steps = horizon
        rec_every = every * max(1, steps // (RECORDS * every))
        planned = ed if (steps, rec_every) == (horizon, every) else None
        ed, final, t_more = _at_records(evolve, table, steps, rec_every, planned)
    except BlockBudgetExceeded as exc:
        return base(steps=horizon, record_every=every, **_refused(exc, t_moments))
    return base(steps=steps, record_every=rec_every,
                **_finish({"predicted_hit": hit}, ed, final, evolve, t_moments + t_more))
