"""``attnsignal run``: simulate, summarise, write the result directory and a figure."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from ..config import NotRobbinsMonroWarning, RunConfig
from ..paths import check_output_dir
from ..simulate import DivergenceWarning, check_simulation, simulate
from ._app import app
from ._common import (
    MODEL_FIELDS, RUN_FIELDS, STEP_FIELDS, build_configs, config_options, console, fmt, out,
    progress_bar,
)

#: Defaults of a bare ``attnsignal run``: about 15 s on 2 cores, and every run ends with
#: |ρ| ≈ 0.95 (strong signal, short context — the weak-signal regime is ``reproduce``'s).
RUN_DEFAULTS = {
    "d": 20,
    "n_informative": 10,
    "n_nuisance": 40,
    "theta": 1.0,
    "beta": 1.0,
    "noise_std": 1.0,
    "signal_sign": "fixed",
    "eta0": 0.02,
    "k0": 2000.0,
    "power": 0.75,
    "steps": 20000,
    "runs": 30,
    "batch": 1,
    "engine": "literal",
    "update": "projected",
    "seed": 0,
    "record_every": None,
    "initial_alignment": None,
    "record": None,
}


@app.command("run")
@config_options(MODEL_FIELDS + STEP_FIELDS + RUN_FIELDS, RUN_DEFAULTS)
def run_cmd(
    flags: dict,
    config: Optional[Path] = typer.Option(None, "--config", help="TOML file with \\[model], \\[step], \\[run] tables; flags override it"),
    out_dir: Path = typer.Option(Path("results/run"), "--out", help="results directory (Parquet, manifest.json, figure)"),
    plot: bool = typer.Option(True, "--plot/--no-plot", help="write alignment.png and alignment.pdf"),
    quiet: bool = typer.Option(False, "--quiet", help="no progress bar"),
) -> None:
    """Simulate projected stochastic gradient ascent of E‖f_q(X)‖² on the sphere.

    Prints a summary (mean ± sd of final |ρ|, fraction of runs at +ξ, mean informative mass)
    and writes the result (OUT/manifest.json naming OUT/result.<hash>.parquet) and OUT/alignment.{png,pdf}.
    """
    model, step, run = build_configs(flags, config, RUN_DEFAULTS)
    check_output_dir(out_dir, "out", create=False)  # a file, read-only...: before simulating
    check_simulation(model, RunConfig(**run))  # sizes and work: before the progress bar
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", NotRobbinsMonroWarning)
        warnings.simplefilter("always", DivergenceWarning)
        with progress_bar(int(run["steps"]), f"{run['engine']} · {run['runs']} runs", not quiet) as adv:
            result = simulate(model, step, progress=adv, **run)
    for w in caught:
        if issubclass(w.category, (NotRobbinsMonroWarning, DivergenceWarning)):
            console.print(f"[yellow]warning:[/] {w.message}")
    result.save(out_dir)
    if plot:
        from ..plots import plot_run

        plot_run(result, out_dir / "alignment")
    s = result.summary()
    table = Table(title=f"attnsignal run — {model.n_tokens} tokens in R^{model.d}, {step.describe()}")
    table.add_column("runs", justify="right")
    table.add_column("final |ρ| (mean ± sd)", justify="right")
    table.add_column("at +ξ", justify="right")
    table.add_column("informative mass", justify="right")
    table.add_column("diverged", justify="right")
    table.add_column("time", justify="right")
    table.add_row(
        str(s["runs"]),
        f"{fmt(s['mean_abs_alignment'])} ± {fmt(s['sd_abs_alignment'])}",
        f"{s['fraction_plus']:.0%}",
        fmt(s["mean_informative_mass"]),
        str(s["diverged"]),
        f"{result.timings['total_s']:.1f} s",
    )
    out.print(table)
    out.print(f"results in {out_dir}/")
