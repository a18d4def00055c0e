"""``attnsignal validate``: the accuracy map of the effective dynamics
(:mod:`attnsignal.validate`) — configurations drawn at random from the whole box, each
predicted and simulated with the chain engine, on the sweep executors.

Writes ``OUT/map.parquet``, ``OUT/map.md`` and ``OUT/map.png``; re-running the same command
resumes (finished configurations, predictions and chain shards are kept). Exits 1 when a target
is missed (excess, band, or a configuration beyond the tolerance that the effective dynamics did
not flag), 2 on bad input.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ..validation import Integer, Real
from ._app import UsageFailure, app
from ._slurm import SlurmFlags, slurm_flags
from ._common import console, option, option_value, out

_RUNS = Integer(ge=2, le=100_000, doc="chain runs per configuration")
_CONFIGS = Integer(ge=1, le=100_000, doc="configurations drawn from the box (each a sweep point of --runs chain runs)")


@app.command("validate")
@slurm_flags
def validate_cmd(
    configs: Optional[str] = option("--configs", _CONFIGS, 60),
    seed: Optional[str] = option("--seed", Integer(ge=0), 27, "seed of the draw, the runs and "
                                 "the moment draws (integer >= 0)"),
    runs: Optional[str] = option("--runs", _RUNS, 128, "chain runs per configuration "
                                 "(integer in [2, 100000])"),
    n_samples: Optional[str] = option("--n-samples", Integer(ge=100), 4000, "reduced draws per "
                                      "moment node of the effective dynamics (integer >= 100)"),
    budget: Optional[str] = option("--budget", Real(gt=0.0), "6e8", "most chain work per "
                                   "configuration, runs × steps × batch × (L + 32) "
                                   "token-samples (> 0)"),
    out_dir: Path = typer.Option(Path("results/validate"), "--out",
                                 help="output directory (map.parquet, map.md, map.png; the "
                                 "sweep stores under chain/)"),
    executor: str = typer.Option("local", "--executor", help="'local' (one process pool for "
                                 "predictions and runs), 'dask', 'slurm' or 'serial'"),
    scheduler: Optional[str] = typer.Option(None, "--scheduler", help="address of a running "
                                            "Dask scheduler (with --executor dask)"),
    workers: Optional[int] = typer.Option(None, "--workers", help="worker processes of the "
                                          "local pool or LocalCluster (default: CPU cores)"),
    retries: int = typer.Option(2, "--retries", help="restarts of a broken local pool / "
                                "retries of a Dask task"),
    quiet: bool = typer.Option(False, "--quiet", help="no progress bar"),
    *,
    slurm: SlurmFlags,
) -> None:
    """Check the effective dynamics against chain-engine runs at configurations drawn at random
    from d ∈ [20, 5000], R ∈ [5, 500], N/R ∈ [1, 40], θ ∈ [0.1, 1.5], β ∈ [0.3, 2.5], both
    signal signs, batch 1 and 8, both updates, and Robbins–Monro schedules scaled by the
    constant-step plateau. Per configuration: the largest excess of the gap in mean alignment
    over 3 standard errors of the simulated mean, the fraction of (run, record) pairs inside
    the predicted 10–90 % band, the effective dynamics' own verdict and both costs; then the
    fractions against the targets.
    """
    from ..paths import check_output_dir
    from ..sweep.runner import check_executor_options
    from ..validate import MapSettings, draw_configs, run_map
    from ..validate.accuracy_map import MapFailed

    n = option_value(configs, "configs", _CONFIGS, 60)
    defaults = MapSettings()
    settings = MapSettings(
        runs=option_value(runs, "runs", _RUNS, defaults.runs),
        seed=option_value(seed, "seed", Integer(ge=0), defaults.seed),
        n_samples=option_value(n_samples, "n_samples", Integer(ge=100), defaults.n_samples),
        budget=option_value(budget, "budget", Real(gt=0.0), defaults.budget))
    flags, slurm = slurm, slurm.options(executor)
    check_executor_options(executor, scheduler, workers, None, retries)
    if slurm is not None and flags.dry_run:
        from ..sweep.slurm import slurm_job_script

        out.print(slurm_job_script(slurm), markup=False, highlight=False, soft_wrap=True)
        return
    check_output_dir(out_dir, "out", create=False)  # a file, read-only...: before any work
    cfgs = draw_configs(n, settings.seed)
    try:
        result = run_map(cfgs, out_dir, settings, executor=executor, scheduler=scheduler,
                         workers=workers, retries=retries, slurm=slurm, progress=not quiet,
                         log=lambda s: None)
    except _store_errors() as exc:
        raise UsageFailure(str(exc)) from None
    except MapFailed as exc:
        from rich.markup import escape

        console.print(f"[red]error:[/] {escape(str(exc))}", highlight=False, soft_wrap=True)
        raise typer.Exit(1) from None
    from ..validate.outputs import summary_lines

    for line in summary_lines(result):
        out.print(line.replace("**", ""), soft_wrap=True, markup=False, highlight=False)
    s = result.summary()
    out.print(f"table: {out_dir / 'map.parquet'} (and map.md, map.png)", soft_wrap=True)
    failed = [name for name, bad in (
        ("excess", not s["excess_fraction"] >= s["excess_target"]),
        ("band", not s["band_fraction"] >= s["band_target"]),
        ("no silent miss", s["silent_misses"] > 0)) if bad]
    if failed:
        console.print(f"[red]target(s) missed:[/] {', '.join(failed)}")
        raise typer.Exit(1)


def _store_errors() -> tuple[type[BaseException], ...]:
    from ..sweep import SweepStoreError

    return (SweepStoreError,)
