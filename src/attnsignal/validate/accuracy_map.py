"""The accuracy map of the effective dynamics: at configurations drawn from the whole box
(:mod:`.box`), its prediction against ``runs`` chain-engine runs.

For each configuration :func:`run_map`

1. computes its schedule, run length and prediction (:func:`.plan.predict`) as one task of the
   executor's workers;
2. runs its chain-engine runs as a sweep (:func:`attnsignal.sweep.run_sweep`: the same
   executors, resumable store and seeds as ``attnsignal sweep``) with exactly those steps and
   records;
3. compares them (:func:`~attnsignal.theory.tracking.path_gap`,
   :func:`~attnsignal.theory.tracking.band_coverage`): the largest ``|gap|`` between the
   predicted and the simulated mean ``|ρ|``, the largest excess of ``|gap|`` over 3 standard
   errors of the simulated mean (``excess``), and the fraction of (run, record) pairs after
   the first 5 % of the records inside the predicted 10–90 % band of ``|ρ|`` (``band``);
   with the effective dynamics' own verdict and both costs.

The configurations run side by side: on the local pool every prediction and every chain task is
one task of one shared process pool (:class:`~attnsignal.reproduce.scheduler.SharedPool`,
costliest first); on Dask or Slurm the predictions are tasks of the cluster and each
configuration's sweep uses its scheduler.

Stored under ``out``: ``predictions/`` (one JSON per configuration), ``chain/c<i>-<hash>/`` (the
sweep stores), ``rows/`` (one JSON row per finished configuration) and, at the end, ``map.parquet``
(the table), ``map.md`` (summary and table) and ``map.png`` (the figure, :mod:`.outputs`). Every
file is written atomically and named by a hash of what determines it, so re-running the same
command resumes: finished rows, predictions and shards are kept, the rest is computed.

Targets (:attr:`MapResult.summary`): ``excess ≤ tolerance`` (0.01) at ≥ 95 % of the
configurations, ``band`` within 80 ± 8 % at ≥ 90 %, and every configuration beyond the
tolerance flagged by the effective dynamics' own diagnostic.
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd

from .._version import __version__
from ..config import ConfigError
from ..persistence import atomic_write
from ..validation import Config, Integer, Optional, Real
from .box import MapConfig
from .plan import Prediction, chain_token_samples, predict

__all__ = ["MapSettings", "MapResult", "MapFailed", "run_map", "TARGETS", "map_row",
           "repredicted_row", "chain_store", "stored_runs"]

#: What the map must show (issue targets, stated in the report beside the measured fractions).
TARGETS = {"excess_fraction": 0.95, "band_fraction": 0.90, "band_centre": 0.80,
           "band_halfwidth": 0.08}
#: work of one chain task of the map (chain token-samples; a few seconds)
MAP_TASK_COST = 1e8
#: configurations in flight at once on Dask or Slurm (each holds a client of the scheduler)
_DASK_CONCURRENT = 8


@dataclass(frozen=True)
class MapSettings(Config):
    """How the map runs each configuration.

    runs : chain-engine runs per configuration (>= 2)
    seed : the map's seed (configurations' chain runs and moment draws derive from it)
    n_samples : reduced draws per moment node of the effective dynamics
    budget : most chain work per configuration, ``runs × steps × B × (L + 32)`` token-samples
    max_steps : most steps of a run
    max_blocks : the effective dynamics' block budget (beyond it, it declines: ``refused``)
    tolerance : the target on ``excess`` (mean ``|ρ|``)
    diffusion_scale : passed to the effective dynamics (1; 0 is the deliberately wrong
        mean-field law that the band must reject)
    """

    runs: int = 128
    seed: int = 27
    n_samples: int = 4000
    budget: float = 6e8
    max_steps: int = 50_000
    max_blocks: int | None = 20_000
    tolerance: float = 0.01
    diffusion_scale: float = 1.0

    _section = "map"
    _table = {
        "runs": Integer(ge=2, doc="chain runs per configuration"),
        "seed": Integer(ge=0, doc="seed of the map"),
        "n_samples": Integer(ge=100, doc="reduced draws per moment node"),
        "budget": Real(gt=0.0, doc="chain token-samples per configuration"),
        "max_steps": Integer(ge=100, doc="most steps of a run"),
        "max_blocks": Optional(Integer(ge=1), doc="the effective dynamics' block budget"),
        "tolerance": Real(gt=0.0, lt=1.0, doc="target on the excess over 3 SE"),
        "diffusion_scale": Real(ge=0.0, doc="the effective dynamics' diffusion scale"),
    }

    def seeds(self, index: int) -> tuple[int, int]:
        """``(chain, moments)`` seeds of configuration ``index``: from
        ``SeedSequence(seed, spawn_key=(index, 1 | 2))``."""
        return tuple(int(np.random.SeedSequence(self.seed, spawn_key=(index, j))
                         .generate_state(1)[0]) for j in (1, 2))  # type: ignore[return-value]


def _key(*parts: Any) -> str:
    text = json.dumps([__version__, *parts], sort_keys=True, separators=(",", ":"),
                      default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _predict_task(cfg: MapConfig, settings: MapSettings) -> tuple[dict[str, Any], float]:
    """What a worker runs: the prediction as a JSON-ready dict, and its CPU seconds. In a Dask
    worker it computes on one thread, as a sweep task does (the local pool's workers already
    do; in this process, ``serial``, nothing is changed)."""
    from ..sweep import tasks

    if tasks._in_dask_worker():
        tasks._single_thread()
    c0 = time.process_time()
    p = predict(cfg, runs=settings.runs, budget=settings.budget, max_steps=settings.max_steps,
                n_samples=settings.n_samples, seed=settings.seeds(cfg.index)[1],
                max_blocks=settings.max_blocks, diffusion_scale=settings.diffusion_scale)
    return p.to_dict(), time.process_time() - c0


def prediction_cost(cfg: MapConfig, settings: MapSettings) -> float:
    """A prediction's cost in the shared pool's units (chain token-samples): the moment table's
    draws (:func:`~attnsignal.reproduce.effective_overlay.effective_cost`) — it goes before the
    chain tasks that wait for it."""
    from ..reproduce.effective_overlay import effective_cost

    return 1e12 + effective_cost(cfg.model, settings.n_samples)


# ----------------------------------------------------------------------------- backends


class _Backend:
    """Where the map's work runs: ``submit`` a prediction, and the ``executor`` /
    ``scheduler`` that the sweeps are given."""

    executor: Any = "serial"
    scheduler: str | None = None
    concurrent: int = 1
    description = "in this process"

    def submit(self, fn: Callable[..., Any], *args: Any, cost: float = 0.0) -> Any:
        fut: Future = Future()
        try:
            fut.set_result(fn(*args))
        except BaseException as exc:  # re-raised by result()
            fut.set_exception(exc)
        return fut

    def worker_cpu(self) -> float | None:
        return None

    def close(self) -> None:
        pass


class _LocalBackend(_Backend):
    def __init__(self, workers: int | None, retries: int, n: int):
        from ..reproduce.scheduler import SharedPool

        self.pool = SharedPool(workers, retries=retries)
        self.executor = self.pool
        self.concurrent = max(1, n)
        self.description = self.pool.description

    def submit(self, fn: Callable[..., Any], *args: Any, cost: float = 0.0) -> Any:
        return self.pool.call(fn, *args, cost=cost)

    def worker_cpu(self) -> float | None:
        return self.pool.worker_cpu_seconds()

    def close(self) -> None:
        self.pool.shutdown()


class _DaskBackend(_Backend):
    def __init__(self, scheduler: str | None, workers: int | None, cluster: Any = None):
        from ..sweep.executors import DaskExecutor

        # the sweep layer's own connection (its errors: one line naming the option)
        self._dask = DaskExecutor(scheduler, workers, cluster=cluster)
        self.client = self._dask.client
        self.scheduler = self.client.scheduler.address
        self.executor = "dask"
        self.concurrent = _DASK_CONCURRENT
        self.description = self._dask.description

    def submit(self, fn: Callable[..., Any], *args: Any, cost: float = 0.0) -> Any:
        return self.client.submit(fn, *args, pure=False, priority=1)

    def close(self) -> None:
        self._dask.close()


# ----------------------------------------------------------------------------- rows


def map_row(pred: Prediction, values: np.ndarray | None, steps: np.ndarray | None,
            chain_seconds: float, settings: MapSettings) -> dict[str, Any]:
    """The table's row of one configuration: the prediction against the runs' ``|ρ|``
    (``values``: ``(runs, n_rec)`` at ``steps``; None when the prediction was refused)."""
    from ..theory.tracking import band_coverage, path_gap

    c = pred.config
    row: dict[str, Any] = {
        "index": c.index, "d": c.d, "R": c.n_informative, "N": c.n_nuisance, "L": c.n_tokens,
        "theta": c.theta, "beta": c.beta, "signal_sign": c.signal_sign, "batch": c.batch,
        "update": c.update, "power": c.power, "eta_max": pred.eta_max,
        "field_escapes": pred.field_escapes, "eta0": pred.eta0, "k0": pred.k0,
        "ode_steps": pred.ode_steps, "cap": pred.cap, "steps": pred.steps,
        "record_every": pred.record_every, "runs": settings.runs,
        "predicted_hit": pred.predicted_hit, "verdict": pred.verdict,
        "causes": "; ".join(pred.causes),
        "flagged": pred.verdict in ("flagged", "refused"),
        "ed_seconds": pred.seconds.get("total", math.nan),
        "ed_moments_seconds": pred.seconds.get("moments", math.nan),
        "ed_evolve_seconds": pred.seconds.get("evolve", math.nan),
        "plan_seconds": pred.plan_seconds, "plan_cpu": pred.plan_cpu,
        "chain_seconds": chain_seconds,
        "chain_token_samples": chain_token_samples(c, settings.runs, pred.steps),
        "n_samples": pred.n_samples, "draws": pred.extra.get("draws", math.nan),
    }
    for k, v in pred.extra.get("diagnostic", {}).items():  # the diagnostic's numbers
        row[f"diag_{k}"] = v
    nan = math.nan
    if values is None:
        row.update(sim_hit=-1, escaped=False, gap=nan, gap_step=-1, gap_se=nan, excess=nan,
                   band=nan, ed_se_max=nan, final_sim=nan, final_pred=nan)
    else:
        if steps is None or not np.array_equal(np.asarray(steps), pred.record_steps):
            raise RuntimeError(f"{c.label()}: the runs' records are not the prediction's")
        mean = values.mean(axis=0)
        hit = np.nonzero(mean >= 0.5)[0]
        g = path_gap(values, pred.record_steps, pred.mean_abs, z=3.0)
        row.update(sim_hit=int(pred.record_steps[hit[0]]) if hit.size else -1,
                   escaped=bool(hit.size), gap=g.gap, gap_step=g.step, gap_se=g.se,
                   excess=g.excess, band=band_coverage(values, pred.q10, pred.q90),
                   ed_se_max=(float(np.max(pred.mean_abs_se)) if pred.mean_abs_se is not None
                              else nan),
                   final_sim=float(mean[-1]), final_pred=float(pred.mean_abs[-1]))
    tol = settings.tolerance
    lo = TARGETS["band_centre"] - TARGETS["band_halfwidth"]
    hi = TARGETS["band_centre"] + TARGETS["band_halfwidth"]
    row["pass_excess"] = bool(row["excess"] <= tol)
    row["pass_band"] = bool(lo <= row["band"] <= hi)
    row["silent_miss"] = bool(not row["flagged"] and not row["excess"] <= tol)
    return row


# ----------------------------------------------------------------------------- the result


@dataclass(frozen=True, eq=False)
class MapResult:
    """The map: ``table`` (one row per configuration, :func:`map_row`), the settings, where it
    ran, its wall seconds and the CPU seconds measured (this process, and the local pool's
    workers where readable)."""

    table: pd.DataFrame
    settings: MapSettings
    out: Path
    executor: str
    seconds: float
    cpu_seconds: dict[str, float | None] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        """The measured fractions against the targets (``TARGETS``)."""
        t = self.table
        n = len(t)
        tol = self.settings.tolerance
        compared = t[~t["verdict"].eq("refused")]
        beyond = t[~(t["excess"] <= tol)]
        return {
            "configs": n,
            "compared": len(compared),
            "refused": int(t["verdict"].eq("refused").sum()),
            "escaped": int(t["escaped"].sum()),
            "predicted_escape": int((t["predicted_hit"] >= 0).sum()),
            "excess_fraction": float(t["pass_excess"].mean()) if n else math.nan,
            "excess_target": TARGETS["excess_fraction"],
            "band_fraction": float(t["pass_band"].mean()) if n else math.nan,
            "band_target": TARGETS["band_fraction"],
            "escaped_excess_fraction": (float(t.loc[t["escaped"], "pass_excess"].mean())
                                        if t["escaped"].any() else math.nan),
            "escaped_band_fraction": (float(t.loc[t["escaped"], "pass_band"].mean())
                                      if t["escaped"].any() else math.nan),
            "beyond_tolerance": len(beyond),
            "beyond_flagged": int(beyond["flagged"].sum()),
            "silent_misses": int(t["silent_miss"].sum()),
            "flagged": int(t["flagged"].sum()),
            "tolerance": tol,
            "ed_seconds": float(np.nansum(t["ed_seconds"])),
            "chain_seconds": float(np.nansum(t["chain_seconds"])),
            "plan_seconds": float(np.nansum(t["plan_seconds"])),
            "wall_seconds": self.seconds,
        }

    @classmethod
    def load(cls, out: str | Path) -> "MapResult":
        """The map written by :func:`run_map` into ``out`` (``map.parquet`` and
        ``map.json``). Raises ``ConfigError`` (field ``out``) when there is none."""
        root = Path(out)
        info = _read_json(root / "map.json")
        if not isinstance(info, dict) or "run" not in info:
            raise ConfigError("out", "must hold a finished accuracy map (map.json, "
                              "map.parquet)", str(out))
        table = pd.read_parquet(root / "map.parquet")
        run = info["run"]
        return cls(table=table, settings=MapSettings.from_dict(info["settings"], prefix=""),
                   out=root, executor=run["executor"], seconds=float(run["seconds"]),
                   cpu_seconds=dict(run["cpu_seconds"]))

    def misses(self) -> pd.DataFrame:
        """The configurations that miss a target (excess beyond the tolerance, or the band
        outside 80 ± 8 %), or that the effective dynamics refused."""
        t = self.table
        return t[~t["pass_excess"] | ~t["pass_band"] | t["verdict"].eq("refused")]


# ----------------------------------------------------------------------------- running


class MapFailed(RuntimeError):
    """Configurations of the map raised (the others' rows are stored: re-running the same
    call computes only what is missing). ``failures``: ``(config, exception)`` pairs."""

    def __init__(self, failures: list[tuple[MapConfig, BaseException]]):
        self.failures = failures
        first = "; ".join(f"{c.label()}: {type(e).__name__}: {e}" for c, e in failures[:2])
        super().__init__(f"{len(failures)} configuration(s) failed ({first}); re-run to retry "
                         "them (finished configurations are kept)".replace("\n", " "))

    def __reduce__(self):
        return (type(self), (self.failures,))



def _chain_chunk(cfg: MapConfig, runs: int, steps: int) -> int:
    """Runs per chain task: about :data:`MAP_TASK_COST` token-samples each, at most ``runs``
    (the results do not depend on it)."""
    per_run = chain_token_samples(cfg, 1, steps)
    return int(min(runs, max(1, math.ceil(MAP_TASK_COST / per_run))))


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _write_json(path: Path, data: Any) -> None:
    text = json.dumps(data, indent=1, allow_nan=True)
    atomic_write(path, lambda p: Path(p).write_text(text + "\n"))


def chain_store(out: Path, pred: Prediction, settings: MapSettings) -> tuple[Any, Path]:
    """The sweep of ``pred``'s chain runs (its schedule, length, records and the map's chain
    seed) and the directory of its store under ``out/chain``."""
    from ..reproduce.context import sweep_spec
    from ..sweep import SweepSpec

    cfg = pred.config
    spec = SweepSpec.from_dict(sweep_spec(
        cfg.model, pred.step, seed=settings.seeds(cfg.index)[0], runs=settings.runs,
        steps=pred.steps, engine="chain", record_every=pred.record_every, batch=cfg.batch,
        update=cfg.update))
    return spec, Path(out) / "chain" / f"c{cfg.index:03d}-{spec.identity()[:12]}"


def stored_runs(store: Path) -> tuple[np.ndarray, np.ndarray]:
    """``(|ρ|, steps)`` of a sweep store's runs: ``(runs, records)`` (runs that diverged left
    out) and the records' steps."""
    from ..sweep import load_sweep

    wide = load_sweep(store).pivot(index="run", columns="step", values="alignment")
    values = np.abs(wide.to_numpy(dtype=np.float64))
    return values[np.all(np.isfinite(values), axis=1)], wide.columns.to_numpy(dtype=np.int64)


def repredicted_row(out: str | Path, stored: Prediction, settings: MapSettings,
                    stored_row: dict[str, Any]) -> tuple[dict[str, Any], Prediction]:
    """A finished configuration's row with every prediction-dependent column (the prediction,
    its verdict and diagnostic, ``excess``, ``band``, the effective dynamics' cost) computed
    anew against its stored chain runs (no new runs): the prediction is made again at
    the stored schedule and records (:func:`.plan.predict_at`) and compared with the runs'
    ``|ρ|`` read back from ``out/chain``. The planning's cost (``plan_seconds``, ``plan_cpu``)
    stays the stored row's. Returns ``(row, prediction)``; raises ``ConfigError`` (field
    ``out``) when the runs are not stored."""
    from .plan import predict_at

    pred = predict_at(stored, n_samples=settings.n_samples,
                      seed=settings.seeds(stored.config.index)[1],
                      max_blocks=settings.max_blocks, diffusion_scale=settings.diffusion_scale)
    if pred.refused:
        return map_row(pred, None, None, math.nan, settings), pred
    _spec, store = chain_store(out, pred, settings)
    if not store.is_dir():
        raise ConfigError("out", f"must hold the chain runs of {stored.config.label()}",
                          str(store))
    values, steps = stored_runs(store)
    seconds = _read_json(store.parent / f"{store.name}.seconds.json") or {}
    row = map_row(pred, values, steps, float(sum(seconds.values())), settings)
    for k in ("plan_seconds", "plan_cpu"):
        row[k] = stored_row.get(k, row[k])
    return row, pred


class _Runner:
    """One map run: the backend, the output directory, progress."""

    def __init__(self, out: Path, settings: MapSettings, backend: _Backend, bar: Any,
                 log: Callable[[str], None]):
        self.out, self.settings, self.backend, self.bar, self.log = (out, settings, backend,
                                                                      bar, log)
        self.lock = threading.Lock()

    def prediction(self, cfg: MapConfig) -> Prediction:
        s = self.settings
        path = (self.out / "predictions" /
                f"c{cfg.index:03d}-{_key('prediction', cfg.to_dict(), s.to_dict())}.json")
        cached = _read_json(path)
        if cached is not None:
            try:
                return Prediction.from_dict(cached)
            except (ConfigError, KeyError, TypeError, ValueError):
                pass  # unreadable: computed again
        fut = self.backend.submit(_predict_task, cfg, s, cost=prediction_cost(cfg, s))
        data, _cpu = fut.result()
        _write_json(path, data)
        return Prediction.from_dict(data)

    def chain(self, pred: Prediction) -> tuple[np.ndarray, np.ndarray, float]:
        """The runs of ``pred``'s configuration as a sweep: ``(|ρ|, steps, seconds)``."""
        from ..sweep import run_sweep

        cfg, s = pred.config, self.settings
        spec, store = chain_store(self.out, pred, s)
        costs_path = store.parent / f"{store.name}.seconds.json"
        seconds: dict[str, float] = _read_json(costs_path) or {}

        def on_task(task: Any, outcome: Any) -> None:
            if hasattr(outcome, "seconds"):
                seconds[task.file] = float(outcome.seconds)
                _write_json(costs_path, seconds)

        report = run_sweep(spec, store, executor=self.backend.executor,
                           scheduler=self.backend.scheduler, workers=None,
                           chunk_runs=_chain_chunk(cfg, s.runs, pred.steps), progress=False,
                           retries=0, on_task=on_task)
        if report.failed:
            raise RuntimeError(f"{cfg.label()}: {len(report.failed)} chain task(s) failed: "
                               + "; ".join(map(str, report.failed[:2])))
        values, steps = stored_runs(store)
        return values, steps, float(sum(seconds.values()))

    def one(self, cfg: MapConfig) -> dict[str, Any]:
        s = self.settings
        path = self.out / "rows" / f"c{cfg.index:03d}-{_key('row', cfg.to_dict(), s.to_dict())}.json"
        row = _read_json(path)
        if row is None:
            pred = self.prediction(cfg)
            if pred.refused:
                row = map_row(pred, None, None, math.nan, s)
            else:
                values, steps, secs = self.chain(pred)
                row = map_row(pred, values, steps, secs, s)
            _write_json(path, row)
        with self.lock:
            self.bar.advance()
            if not row["pass_excess"] and row["verdict"] != "refused":
                self.log(f"{cfg.label()}: excess {row['excess']:+.4f} over 3 SE "
                         f"({'flagged' if row['flagged'] else 'NOT flagged'})")
        return row


def _backend(executor: str, scheduler: str | None, workers: int | None, retries: int,
             slurm: Any, n: int) -> tuple[_Backend, Any]:
    """The backend and, for Slurm, the context manager of its jobs (closed by the caller)."""
    if executor == "serial":
        return _Backend(), None
    if executor == "local":
        return _LocalBackend(workers, retries, n), None
    if executor == "dask":
        return _DaskBackend(scheduler, workers), None
    from ..sweep.slurm import SlurmOptions, slurm_cluster

    jobs = slurm_cluster(slurm if isinstance(slurm, SlurmOptions)
                         else SlurmOptions.from_dict(dict(slurm or {})))
    cluster = jobs.__enter__()
    try:
        return _DaskBackend(None, None, cluster=cluster), jobs
    except BaseException:
        jobs.__exit__(None, None, None)
        raise


def run_map(configs: Sequence[MapConfig], out: str | Path, settings: MapSettings | None = None,
            *, executor: str = "local", scheduler: str | None = None,
            workers: int | None = None, retries: int = 2, slurm: Any = None,
            progress: bool = True, log: Callable[[str], None] = lambda s: None) -> MapResult:
    """Run (or resume) the accuracy map of ``configs`` into ``out`` (module docstring).

    executor, scheduler, workers, retries, slurm : as :func:`attnsignal.sweep.run_sweep`
        (``"local"``: one process pool shared by the predictions and the chain tasks)
    progress : a progress bar over configurations on stderr; ``log`` gets one line per
        configuration beyond the tolerance

    Returns the :class:`MapResult` and writes ``map.parquet``, ``map.md`` and ``map.png``.
    Raises ``ConfigError`` for bad input or an unusable ``out`` (before any work).
    """
    from ..paths import check_output_dir
    from ..sweep.runner import _Bar, check_executor_options
    from .outputs import write_outputs

    settings = settings or MapSettings()
    if not configs:
        raise ConfigError("configs", "must hold at least one configuration", list(configs))
    check_executor_options(executor, scheduler, workers, None, retries)
    if slurm is not None and executor != "slurm":
        raise ConfigError("slurm", "only with executor 'slurm'", executor)
    root = check_output_dir(out, "out", create=False)
    t0, c0 = time.perf_counter(), time.process_time()
    backend, jobs = _backend(executor, scheduler, workers, retries, slurm, len(configs))
    root.mkdir(parents=True, exist_ok=True)
    info: dict[str, Any] = {"format": "attnsignal.map/1", "version": __version__,
                            "settings": settings.to_dict(),
                            "configs": [c.to_dict() for c in configs]}
    _write_json(root / "map.json", info)
    bar = _Bar(progress, len(configs), 0, f"accuracy map · {len(configs)} configurations")
    runner = _Runner(root, settings, backend, bar, lambda s: (bar.log(s), log(s)))
    try:
        with ThreadPoolExecutor(max_workers=min(backend.concurrent, len(configs)),
                                thread_name_prefix="map") as threads:
            futures = [threads.submit(runner.one, c) for c in configs]
        failed = [(c, f.exception()) for c, f in zip(configs, futures) if f.exception()]
        if failed:
            raise MapFailed(failed)
        rows = [f.result() for f in futures]
        worker_cpu = backend.worker_cpu()
    finally:
        bar.close()
        backend.close()
        if jobs is not None:
            jobs.__exit__(None, None, None)
    table = pd.DataFrame(rows).sort_values("index", ignore_index=True)
    result = MapResult(table=table, settings=settings, out=root,
                       executor=backend.description, seconds=time.perf_counter() - t0,
                       cpu_seconds={"coordinator": time.process_time() - c0,
                                    "workers": worker_cpu})
    write_outputs(result)
    _write_json(root / "map.json", {**info, "run": {
        "executor": result.executor, "seconds": result.seconds,
        "cpu_seconds": result.cpu_seconds}})
    return result
