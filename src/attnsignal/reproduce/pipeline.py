"""``reproduce``: every experiment of the paper, the theory beside it, and the claims check.

Writes, under ``out``::

    report.md, report.html     the report (HTML self-contained: figures embedded)
    figures/*.png, *.pdf        every figure
    data/<E>/                   the sweep stores (resumable), data/<E>.parquet their frames
    claims.json                 the claims table, machine-readable
    measurements.json           every figure quoted in the report

Returns the claims; the command exits non-zero when a claim that should hold fails.
"""

from __future__ import annotations

import json
import platform
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from .._version import __version__
from ..claims import (
    CLAIMS_HEADER, ClaimResult, Tolerances, check_claims, claims_failed, claims_table_rows,
)
from ..report import Report
from ..results import atomic_write
from .context import Context
from .e1_headline import run_e1
from .e2_robustness import run_e2
from .e3_filtering import run_e3
from .e4_landscape import run_e4
from .e5_tracking import run_e5
from .plan import Plan

__all__ = ["reproduce", "ReproductionResult"]


class ReproductionResult:
    def __init__(self, claims: list[ClaimResult], measurements: dict[str, Any], out: Path,
                 timings: dict[str, float]):
        self.claims = claims
        self.measurements = measurements
        self.out = out
        self.timings = timings

    @property
    def failed(self) -> list[ClaimResult]:
        return claims_failed(self.claims)


def reproduce(
    out: str | Path = "reproduction",
    *,
    quick: bool = False,
    plan: Plan | None = None,
    executor: str = "local",
    scheduler: str | None = None,
    workers: int | None = None,
    progress: bool = True,
    log=print,
) -> ReproductionResult:
    """Run E1–E5, check the claims and write the report. See the module docstring."""
    from ..sweep.runner import check_executor_options

    # the sweep layer's own validator, before anything is written
    check_executor_options(executor, scheduler, workers)
    plan = plan or (Plan.quick_plan() if quick else Plan.full())
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    ctx = Context(out=out, executor=executor, scheduler=scheduler, workers=workers,
                  progress=progress)
    t_all = time.perf_counter()
    meas: dict[str, Any] = {}
    sections = []

    def stage(name: str, fn, *args):
        log(f"[{name}] running")
        t0 = time.perf_counter()
        value = fn(plan, ctx, *args)
        ctx.timings[name] = time.perf_counter() - t0
        log(f"[{name}] done in {ctx.timings[name]:.1f} s")
        return value

    sec1, m1 = stage("E1", run_e1)
    sec2, m2, e2_models = stage("E2", run_e2)
    sec3, m3 = stage("E3", run_e3)
    # E1's configuration is also a cell of the E2 grid: examine each configuration once
    configs = list(dict.fromkeys([plan.e1_model, *e2_models]))
    sec4, m4 = stage("E4", run_e4, configs)
    sec5, m5 = stage("E5", run_e5)
    for s, m in ((sec1, m1), (sec2, m2), (sec3, m3), (sec4, m4), (sec5, m5)):
        sections.append(s)
        meas.update(m)

    tol = Tolerances.quick() if plan.quick else Tolerances()
    claims = check_claims(meas, tol)
    total = time.perf_counter() - t_all
    ctx.timings["total"] = total

    rep = Report(
        title="attnsignal — reproduction of “Asymptotic Signal Subspace Recovery in Softmax "
              "Attention Models” (arXiv 2606.22406)",
        intro=(f"Mode: **{'quick' if plan.quick else 'full'}** · attnsignal {__version__} · "
               f"seed {plan.seed} · Python {platform.python_version()} · wall time {total:.0f} s. "
               + ("Quick mode uses fewer runs and steps and the looser tolerances shown in the "
                  "claims table; run without --quick for the paper's figures." if plan.quick else "")),
    )
    cs = rep.section("Claims of the paper, checked")
    cs.table(claims_table_rows(claims), header=CLAIMS_HEADER)
    for s in sections:
        rep.sections.append(s)
    tm = rep.section("Timings")
    tm.table([[k, f"{v:.1f} s"] for k, v in ctx.timings.items()], header=["stage", "wall time"])
    rep.write(out)
    atomic_write(out / "claims.json", lambda p: Path(p).write_text(
        json.dumps([asdict(c) | {"failed": c.failed} for c in claims], indent=2, ensure_ascii=False)))
    atomic_write(out / "measurements.json", lambda p: Path(p).write_text(
        json.dumps(_jsonable(meas | {"timings": ctx.timings, "quick": plan.quick}), indent=2)))
    return ReproductionResult(claims, meas, out, dict(ctx.timings))


def _jsonable(x: Any) -> Any:
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, (np.floating, float)):
        v = float(x)
        return v if np.isfinite(v) else None
    if isinstance(x, (np.integer,)):
        return int(x)
    return x
