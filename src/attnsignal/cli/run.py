"""``attnsignal run``: simulate, summarise, write the result directory and a figure."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any, Optional

import typer
from rich.table import Table

from ..config import NotRobbinsMonroWarning
from ..simulate import DivergenceWarning, simulate
from . import app
from ._common import build_configs, console, field_option, fmt, out, progress_bar

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
}


def _opt(name: str) -> Any:
    return field_option(name, RUN_DEFAULTS[name])


@app.command("run")
def run_cmd(
    d: Optional[str] = _opt("d"),
    n_informative: Optional[str] = _opt("n_informative"),
    n_nuisance: Optional[str] = _opt("n_nuisance"),
    theta: Optional[str] = _opt("theta"),
    beta: Optional[str] = _opt("beta"),
    noise_std: Optional[str] = _opt("noise_std"),
    signal_sign: Optional[str] = _opt("signal_sign"),
    eta0: Optional[str] = _opt("eta0"),
    k0: Optional[str] = _opt("k0"),
    power: Optional[str] = _opt("power"),
    steps: Optional[str] = _opt("steps"),
    runs: Optional[str] = _opt("runs"),
    batch: Optional[str] = _opt("batch"),
    engine: Optional[str] = _opt("engine"),
    update: Optional[str] = _opt("update"),
    seed: Optional[str] = _opt("seed"),
    record_every: Optional[str] = _opt("record_every"),
    initial_alignment: Optional[str] = _opt("initial_alignment"),
    config: Optional[Path] = typer.Option(None, "--config", help="TOML file with \\[model], \\[step], \\[run] tables; flags override it"),
    out_dir: Path = typer.Option(Path("results/run"), "--out", help="results directory (Parquet, manifest.json, figure)"),
    plot: bool = typer.Option(True, "--plot/--no-plot", help="write alignment.png and alignment.pdf"),
    quiet: bool = typer.Option(False, "--quiet", help="no progress bar"),
) -> None:
    """Simulate projected stochastic gradient ascent of E‖f_q(X)‖² on the sphere.

    Prints a summary (mean ± sd of final |ρ|, fraction of runs at +ξ, mean informative mass)
    and writes the result (OUT/manifest.json naming OUT/result.<hash>.parquet) and OUT/alignment.{png,pdf}.
    """
    flags = dict(
        d=d, n_informative=n_informative, n_nuisance=n_nuisance, theta=theta, beta=beta,
        noise_std=noise_std, signal_sign=signal_sign, eta0=eta0, k0=k0, power=power,
        steps=steps, runs=runs, batch=batch, engine=engine, update=update, seed=seed,
        record_every=record_every, initial_alignment=initial_alignment,
    )
    model, step, run = build_configs(flags, config, RUN_DEFAULTS)
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
