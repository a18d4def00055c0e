"""``attnsignal run``: simulate, summarise, write the result directory and a figure with the
theory beside the simulation."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from ..config import RunConfig
from ..engines import fastest_engine
from ..simulate import check_simulation, simulate
from ._app import app
from ._common import (
    MODEL_FIELDS, RUN_FIELDS, STEP_FIELDS, build_configs, config_options, console, fmt, out,
    out_option, output_dir, overwrite_option, preset_defaults, preset_option, preset_values,
    progress_bar, quiet_option, reported_warnings,
)

#: Run settings of ``attnsignal run`` beside its preset (the model, schedule, ``steps`` and
#: ``runs`` come from ``--preset``, :mod:`attnsignal.presets`). No ``engine``: the fastest
#: exact engine that accepts the configuration (:func:`attnsignal.engines.fastest_engine`).
RUN_DEFAULTS = {
    "batch": 1,
    "update": "projected",
    "seed": 0,
    "record_every": None,
    "initial_alignment": None,
    "record": None,
}
_SHOWN = {**RUN_DEFAULTS, "engine": "the fastest exact engine that accepts the configuration "
          "(by the engines' declared cost per update: 'chain' unless a variant needs another)"}


@app.command("run")
@config_options(MODEL_FIELDS + STEP_FIELDS + RUN_FIELDS,
                preset_defaults(MODEL_FIELDS + STEP_FIELDS + RUN_FIELDS, _SHOWN))
def run_cmd(
    flags: dict,
    preset: Optional[str] = preset_option(),
    config: Optional[Path] = typer.Option(None, "--config", metavar="FILE", help="TOML file with \\[model], \\[step], \\[run] tables; they override the preset, flags override them"),
    out_dir: Optional[Path] = out_option("run", "manifest.json, result.<checksum>.parquet, alignment.png, alignment.pdf"),
    overwrite: bool = overwrite_option(),
    plot: bool = typer.Option(True, "--plot/--no-plot", help="write alignment.png and alignment.pdf"),
    theory: bool = typer.Option(True, "--theory/--no-theory", help="draw the limiting ODE beside the runs"),
    effective: bool = typer.Option(False, "--effective", help="also draw the effective dynamics (mean and 10–90 % band of |ρ_k|; seconds to minutes, left out with a note where its steps are too large against the law)"),
    quiet: bool = quiet_option(),
) -> None:
    """Simulate projected stochastic gradient ascent of E‖f_q(X)‖² on the sphere.

    Prints a summary (mean ± sd of final |ρ|, fraction of runs at +ξ, mean informative mass)
    and writes the result (OUT/manifest.json naming OUT/result.<checksum>.parquet) and
    OUT/alignment.{png,pdf}: the runs, their mean and 10–90 % band and the limiting ODE (with
    --effective also the effective dynamics' mean and band).
    """
    model, step, run = build_configs(flags, config, {**preset_values(preset), **RUN_DEFAULTS})
    if "engine" not in run:  # neither a flag nor the file names one
        run["engine"] = fastest_engine(model, RunConfig(**run))
    check_simulation(model, RunConfig(**run))  # sizes and work: before the progress bar
    out_dir = output_dir(out_dir, overwrite, "run")
    with reported_warnings(), progress_bar(int(run["steps"]),
                                           f"{run['engine']} · {run['runs']} runs",
                                           not quiet) as adv:
        result = simulate(model, step, progress=adv, **run)
    result.save(out_dir)
    if plot:
        from ..plots import draw_theory, plot_run

        overlay = None
        if theory:
            from ._beside import theory_lines

            with progress_bar(1, "theory", not quiet) as adv:
                lines = theory_lines(result, effective=effective)
                adv(1)
            for note in lines.notes:
                console.print(f"note: {note}", markup=False, highlight=False, soft_wrap=True)

            def overlay(ax):
                draw_theory(ax, result.steps, lines)

        plot_run(result, out_dir / "alignment", overlay=overlay)
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
    out.print(f"results in {out_dir}/ ({run['engine']} engine)", soft_wrap=True)
