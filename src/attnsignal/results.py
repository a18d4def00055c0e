"""The ``Result`` of a simulation: arrays, configs and a tidy frame.

The data object only; its files (Parquet frame + JSON manifest, written as one atomic unit)
are :mod:`attnsignal.persistence`. ``atomic_write`` is re-exported here for old callers.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .config import ConfigError, ModelConfig, RunConfig, StepSize
from .persistence import ResultFileError, atomic_write, read_result_files, write_result_files

__all__ = ["Result", "atomic_write", "FRAME_COLUMNS"]

FRAME_COLUMNS = [
    "method",
    "run",
    "step",
    "ode_time",
    "alignment",
    "abs_alignment",
    "informative_mass",
    "max_nuisance_weight",
    "diverged",
]


@dataclass
class Result:
    """Outcome of :func:`attnsignal.simulate`.

    alignment : (runs, records) signed ``ρ = <q, ξ>`` after ``steps[j]`` updates (NaN once a
        run has diverged)
    steps : (records,) step index of each record (0 = the start)
    ode_time : (records,) ``t_k = Σ_{j<k} η_j``
    informative_mass, max_nuisance_weight : (runs, records) of the sample(s) drawn at update
        ``steps[j]`` (mean over the minibatch); NaN at step 0, where no sample is drawn
    diverged : (runs,) bool;  diverged_step : (runs,) update at which it happened, −1 if not
    run_ids : (runs,) global run indices (``first_run`` ...)
    q_final : (runs, d) final unit queries (vector engines), else None
    q_records : (runs, records, d) queries at the records when asked for, else None
    schedule : the step-size schedule ``η_k`` (``Result.step`` is an old name for it)
    method : ``"sga"`` (attention's stochastic gradient ascent) or the baseline estimator
        (``"mean"``, ``"pca"``, ``"oja"``, ``"oracle"``, see :func:`attnsignal.baseline`)
    """

    model: ModelConfig
    schedule: StepSize
    run: RunConfig
    steps: np.ndarray
    ode_time: np.ndarray
    alignment: np.ndarray
    informative_mass: np.ndarray
    max_nuisance_weight: np.ndarray
    diverged: np.ndarray
    diverged_step: np.ndarray
    run_ids: np.ndarray
    q_final: np.ndarray | None = None
    q_records: np.ndarray | None = None
    timings: dict[str, float] = field(default_factory=dict)
    version: str = ""
    method: str = "sga"

    # -------------------------------------------------------------- convenience
    @property
    def step(self) -> StepSize:
        """The step-size schedule (old name of :attr:`schedule`; not to be confused with
        :attr:`steps`, the step index of each record)."""
        return self.schedule

    @property
    def seed(self) -> int:
        return self.run.seed

    @property
    def engine(self) -> str:
        return self.run.engine

    @property
    def update(self) -> str:
        return self.run.update

    @property
    def robbins_monro(self) -> bool:
        return self.schedule.robbins_monro

    @property
    def final_alignment(self) -> np.ndarray:
        """(runs,) signed alignment at the last record."""
        return self.alignment[:, -1]

    @property
    def q(self) -> np.ndarray:
        """Final queries; ``AttributeError`` for an engine without a query vector
        (``capabilities.has_query`` False, e.g. the chain)."""
        if self.q_final is None:
            from .engines import engines_with

            raise AttributeError(
                f"the {self.engine!r} engine does not form the query vector q; use one of "
                + ", ".join(map(repr, engines_with(has_query=True))) + " to get q"
            )
        return self.q_final

    def summary(self) -> dict[str, float]:
        """Mean ± sd of final |ρ|, fraction at +ξ, mean final informative mass, diverged."""
        ok = ~self.diverged
        fin = self.final_alignment[ok]
        a = np.abs(fin)
        mass = self.informative_mass[ok, -1]
        return {
            "runs": int(self.diverged.size),
            "diverged": int(self.diverged.sum()),
            "mean_abs_alignment": float(a.mean()) if a.size else float("nan"),
            "sd_abs_alignment": float(a.std(ddof=1)) if a.size > 1 else 0.0,
            "fraction_plus": float((fin > 0).mean()) if fin.size else float("nan"),
            "mean_informative_mass": float(mass.mean()) if mass.size else float("nan"),
        }

    # -------------------------------------------------------------- frame
    def to_frame(self) -> pd.DataFrame:
        """Tidy frame, one row per (run, record), columns ``FRAME_COLUMNS``."""
        runs, recs = self.alignment.shape
        return pd.DataFrame(
            {
                "method": [self.method] * (runs * recs),
                "run": np.repeat(self.run_ids.astype(np.int64), recs),
                "step": np.tile(self.steps.astype(np.int64), runs),
                "ode_time": np.tile(self.ode_time, runs),
                "alignment": self.alignment.ravel(),
                "abs_alignment": np.abs(self.alignment.ravel()),
                "informative_mass": self.informative_mass.ravel(),
                "max_nuisance_weight": self.max_nuisance_weight.ravel(),
                "diverged": np.repeat(self.diverged, recs),
            }
        )

    def manifest(self) -> dict[str, Any]:
        return {
            "format": "attnsignal.result/1",
            "version": self.version,
            "method": self.method,
            "model": self.model.to_dict(),
            "step": self.schedule.to_dict(),
            "run": self.run.to_dict(),
            "seed": self.run.seed,
            "engine": self.run.engine,
            "update": self.run.update,
            "robbins_monro": self.schedule.robbins_monro,
            "schedule": self.schedule.describe(),
            "timings": self.timings,
            "run_ids": [int(r) for r in self.run_ids],
            "diverged_step": [int(s) for s in self.diverged_step],
            "has_q_final": self.q_final is not None,
            "has_q_records": self.q_records is not None,
        }

    # -------------------------------------------------------------- I/O
    def save(self, path: str | os.PathLike) -> Path:
        """Write the result directory ``path`` as one atomic unit: killed at any moment, the
        directory holds the previous result or this one, never a mixture; temporaries of an
        earlier killed save are removed (layout: :mod:`attnsignal.persistence`).

        Raises ``ConfigError`` when ``path`` cannot be a writable directory (a file, read-only,
        a name too long; checked before anything is written)."""
        arrays = {"q_final": self.q_final, "q_records": self.q_records}
        return write_result_files(path, self.manifest(), self.to_frame(), arrays)

    @classmethod
    def from_frame(
        cls, frame: pd.DataFrame, model: ModelConfig, step: StepSize, run: RunConfig,
        version: str = "",
    ) -> "Result":
        """Rebuild a Result from a tidy frame (``FRAME_COLUMNS``; extra columns are ignored),
        e.g. one grid point of a sweep. Queries are not part of a frame (``q_final=None``)."""
        frame = frame.sort_values(["run", "step"], kind="stable")
        run_ids = np.unique(frame["run"].to_numpy())
        steps = np.unique(frame["step"].to_numpy())
        runs, recs = run_ids.size, steps.size
        if len(frame) != runs * recs:
            raise ValueError(
                f"frame: must hold every (run, step) pair exactly once; got {len(frame)} rows "
                f"for {runs} runs × {recs} steps"
            )

        def grid(col: str) -> np.ndarray:
            return frame[col].to_numpy().reshape(runs, recs)

        align = grid("alignment")
        method = str(frame["method"].iloc[0]) if "method" in frame and len(frame) else "sga"
        diverged = grid("diverged")[:, 0].astype(bool)
        dstep = np.full(runs, -1, dtype=np.int64)
        for i in np.flatnonzero(diverged):
            bad = np.flatnonzero(~np.isfinite(align[i]))
            dstep[i] = int(steps[bad[0]]) if bad.size else -1
        return cls(
            model=model, schedule=step, run=run.replace(runs=int(runs)),
            steps=steps.astype(np.int64), ode_time=grid("ode_time")[0].copy(),
            alignment=align, informative_mass=grid("informative_mass"),
            max_nuisance_weight=grid("max_nuisance_weight"), diverged=diverged,
            diverged_step=dstep, run_ids=run_ids.astype(np.int64), version=version,
            method=method,
        )

    @classmethod
    def load(cls, path: str | os.PathLike) -> "Result":
        """Read a directory written by :meth:`save`; the round trip is exact.

        Checks the manifest's format, every data file's checksum and that the frame holds
        exactly the runs and records the manifest names. Raises ``ResultMissingError`` (also a
        ``FileNotFoundError``) without a manifest, else ``ResultFileError`` (a ``ConfigError``)
        with one line naming the damaged file."""
        man, mpath, frame, arrays = read_result_files(path)
        for key in ("model", "step", "run", "run_ids", "diverged_step"):
            if key not in man:
                raise ResultFileError(mpath, f"manifest lacks the key {key!r}")
        try:
            model = ModelConfig.from_dict(man["model"])
            step = _schedule_from_dict(man["step"])
            run = RunConfig.from_dict(man["run"])
            run_ids = np.asarray(man["run_ids"], dtype=np.int64).reshape(-1)
            dstep = np.asarray(man["diverged_step"], dtype=np.int64).reshape(-1)
            timings = _optional_entry(man, "timings", dict, {})
            version = _optional_entry(man, "version", str, "")
            method = _optional_entry(man, "method", str, "sga")  # before baselines: attention
        except (ConfigError, TypeError, ValueError, AttributeError, OverflowError) as exc:
            raise ResultFileError(mpath, f"manifest holds an invalid entry ({exc})") from None
        fpath = Path(path) / (man.get("files", {}).get("frame", {}).get("name", "result.parquet"))
        missing = [c for c in FRAME_COLUMNS if c not in frame.columns]
        if missing:
            raise ResultFileError(fpath, f"frame lacks the columns {missing}")
        runs, recs = _check_rows(frame, run_ids, dstep, mpath, fpath.name)
        _check_queries(arrays, (runs, recs, model.d), mpath)

        def arr(col: str) -> np.ndarray:  # rows are run-major in run_ids order (checked)
            return frame[col].to_numpy().reshape(runs, recs)

        steps = frame["step"].to_numpy()[:recs]
        return cls(
            model=model,
            schedule=step,
            run=run,
            steps=steps.astype(np.int64),
            ode_time=arr("ode_time")[0].copy(),
            alignment=arr("alignment"),
            informative_mass=arr("informative_mass"),
            max_nuisance_weight=arr("max_nuisance_weight"),
            diverged=arr("diverged")[:, 0].astype(bool),
            diverged_step=dstep,
            run_ids=run_ids,
            q_final=arrays["q_final"],
            q_records=arrays["q_records"],
            timings=dict(timings),
            version=version,
            method=method,
        )


def _check_rows(frame: pd.DataFrame, run_ids: np.ndarray, dstep: np.ndarray, mpath: Path,
                data: str) -> tuple[int, int]:
    """``(runs, records)`` of a saved frame that is exactly what :meth:`Result.to_frame`
    writes for the manifest's ``run_ids``: run-major, runs in ``run_ids`` order, the same
    increasing steps in each. Anything else (rows lost or added, ``run_ids`` edited or
    reordered: the rows would be relabelled) is a ResultFileError naming the manifest."""
    runs = run_ids.size
    if dstep.size != runs:
        raise ResultFileError(mpath, f"diverged_step has {dstep.size} entries for the "
                                     f"{runs} run_ids")
    if runs == 0 or len(frame) % runs:
        raise ResultFileError(mpath, f"run_ids name {runs} runs; {data} holds {len(frame)} "
                                     "rows, not a whole number of records per run")
    recs = len(frame) // runs
    run_col = frame["run"].to_numpy()
    step_col = frame["step"].to_numpy().reshape(runs, recs)
    stored = run_col[::recs] if recs else run_col
    if recs == 0 or not (np.array_equal(run_col, np.repeat(run_ids, recs))
                         and np.all(step_col == step_col[0]) and np.all(np.diff(step_col[0]) > 0)):
        head = stored[:6].tolist()
        raise ResultFileError(
            mpath, f"run_ids {_head(run_ids)} do not match {data}, which holds {len(frame)} "
                   f"rows of runs {head}{'…' if stored.size > 6 else ''} in that order "
                   "(edited or not this result's manifest)")
    return runs, recs


def _head(a: np.ndarray, n: int = 6) -> str:
    items = a[:n].tolist()
    return str(items)[:-1] + (", …]" if a.size > n else "]")


def _check_queries(arrays: dict[str, np.ndarray | None], shape: tuple[int, int, int],
                   mpath: Path) -> None:
    """The saved queries have the shapes of the manifest's runs, records and ``d``."""
    runs, recs, d = shape
    want = {"q_final": (runs, d), "q_records": (runs, recs, d)}
    for key, arr in arrays.items():
        if arr is not None and tuple(arr.shape) != want[key]:
            raise ResultFileError(mpath, f"{key} has shape {tuple(arr.shape)}; the manifest's "
                                         f"runs and model need {want[key]}")


def _optional_entry(man: dict, key: str, kind: type, default: Any) -> Any:
    """A manifest entry that older manifests may lack: ``default`` when absent, else it must be
    a ``kind``; raises ``TypeError`` naming the key otherwise (``load`` turns it into one line)."""
    if key not in man:
        return default
    value = man[key]
    if not isinstance(value, kind):
        raise TypeError(f"{key!r} must be a {kind.__name__}, got {value!r}")
    return value


def _schedule_from_dict(d: Any) -> StepSize:
    """The step-size schedule of a manifest (any schedule family once there are several)."""
    try:
        from .schedules import schedule_from_dict  # type: ignore[attr-defined]
    except ImportError:
        return StepSize.from_dict(d)
    return schedule_from_dict(d)
