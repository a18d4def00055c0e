"""Shared machinery of the reproduction: where things go and how sweeps are run.

Every simulation of the reproduction is a sweep (:mod:`attnsignal.sweep`) stored under
``OUT/data/<name>-<spec hash>/``, so an interrupted reproduction resumes where it stopped and can run on
a Dask cluster. The frame of each experiment is also written as ``OUT/data/<name>.parquet``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ..config import ModelConfig, RunConfig, StepSize
from ..results import Result, atomic_write

__all__ = ["Context", "sweep_spec"]


def sweep_spec(
    model: ModelConfig,
    step: StepSize,
    *,
    seed: int,
    runs: int,
    steps: int,
    engine: str = "chain",
    record_every: int | None = None,
    grid: dict[str, list[Any]] | None = None,
    **run: Any,
) -> dict[str, Any]:
    """A sweep spec (the TOML shape, as a dict) from configs and grid axes."""
    sweep = {"seed": seed, "runs": runs, "steps": steps, "engine": engine}
    if record_every is not None:
        sweep["record_every"] = record_every
    sweep.update({k: v for k, v in run.items() if v is not None})
    return {
        "sweep": sweep,
        "model": model.to_dict(),
        "step": step.to_dict(),
        "grid": grid or {},
    }


@dataclass
class Context:
    out: Path
    executor: str = "local"
    scheduler: str | None = None
    workers: int | None = None
    progress: bool = True
    timings: dict[str, float] = field(default_factory=dict)
    cache: dict[str, Any] = field(default_factory=dict)

    @property
    def data(self) -> Path:
        return self.out / "data"

    @property
    def figures(self) -> Path:
        p = self.out / "figures"
        p.mkdir(parents=True, exist_ok=True)
        return p

    def sweep(self, name: str, spec: dict[str, Any], *, small: bool = False) -> pd.DataFrame:
        """Run (or resume) the sweep ``spec`` under ``data/name`` and return its tidy frame.

        ``small``: a sweep of a few seconds of work, run in this process when the executor is
        ``local`` (a process pool costs more to start than the work); results are identical
        whatever the executor.
        """
        from ..sweep import SweepSpec, load_sweep, run_sweep

        sp = SweepSpec.from_dict(spec)
        # one store per distinct spec: a changed plan never collides with an old store, and
        # the same plan resumes where it stopped
        store = self.data / f"{name}-{sp.identity()[:12]}"
        executor = "serial" if small and self.executor == "local" else self.executor
        extra = {"chunk_runs": int(spec["sweep"]["runs"])} if executor == "serial" else {}
        # the serial executor has no workers to size
        workers = None if executor == "serial" else self.workers
        report = run_sweep(sp, store, executor=executor, scheduler=self.scheduler, **extra,
                           workers=workers, progress=self.progress)
        if getattr(report, "failed", None):
            raise RuntimeError(f"sweep {name}: {len(report.failed)} task(s) failed: {report.failed}")
        frame = load_sweep(store)
        atomic_write(self.data / f"{name}.parquet", lambda p: frame.to_parquet(p, index=False))
        return frame


def result_of(frame: pd.DataFrame, model: ModelConfig, step: StepSize, run: RunConfig) -> Result:
    """The Result of one grid point's rows."""
    return Result.from_frame(frame, model, step, run)
