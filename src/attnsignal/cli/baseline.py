"""``attnsignal baseline``: run a simple estimator (token mean, PCA, Oja, oracle) on the
model's token stream, summarise it beside its theory, write the result and a figure."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import numpy as np
import typer
from rich.table import Table

from ..config import ConfigError
from ._app import app
from ._common import (
    MODEL_FIELDS, STEP_FIELDS, build_configs, config_options, fmt, load_toml, out,
)

#: Defaults of a bare ``attnsignal baseline``: the headline model (d = 100, R = 500,
#: N = 10 000, θ = 0.25), 20 000 samples, 30 runs — a second or two for every method.
BASELINE_DEFAULTS = {
    "d": 100,
    "n_informative": 500,
    "n_nuisance": 10_000,
    "theta": 0.25,
    "beta": 1.0,
    "noise_std": 1.0,
    "signal_sign": "fixed",
    "steps": 20_000,
    "runs": 30,
    "seed": 0,
    "record_every": None,
}


@app.command("baseline")
@config_options(MODEL_FIELDS + STEP_FIELDS + ("steps", "runs", "seed", "record_every"),
                BASELINE_DEFAULTS,
                helps={"eta0": "Oja's step η0 (> 0); default: the asymptotically optimal "
                               "1/(g (k + k0))",
                       "k0": "k0 of Oja's schedule (> 0)",
                       "power": "decay power of Oja's schedule (>= 0)",
                       "steps": "samples per run (integer >= 1)"})
def baseline_cmd(
    flags: dict[str, Any],
    method: str = typer.Option("mean", "--method", metavar="NAME",
                               help="'mean', 'pca', 'oja' or 'oracle'"),
    record: Optional[str] = typer.Option(None, "--record", metavar="log|K1,K2,...",
                                         help="log-spaced records, or a comma-separated list "
                                              "of sample counts (overrides --record-every)"),
    config: Optional[Path] = typer.Option(None, "--config", help="TOML file with \\[model], \\[step], \\[run] tables; flags override it"),
    out_dir: Path = typer.Option(Path("results/baseline"), "--out", help="results directory (Parquet, manifest.json, figure)"),
    plot: bool = typer.Option(True, "--plot/--no-plot", help="write alignment.png and alignment.pdf"),
) -> None:
    """Run a baseline estimator on the same token stream as attention.

    Methods: 'mean' (running average of the per-sample token means), 'pca' (top eigenvector
    of their running second moment), 'oja' (Oja's rule on them; --eta0/--k0/--power set its
    schedule), 'oracle' (running average of the informative tokens, sign-corrected). Prints
    the final |ρ| beside the theory's E|ρ| and writes OUT/ (a Result with method set) and
    OUT/alignment.{png,pdf}.
    """
    from ..baselines import baseline, baseline_theory, method_names

    if method not in method_names():
        raise ConfigError("method", "must be one of " + ", ".join(map(repr, method_names())),
                          method)
    from ..paths import check_output_dir

    check_output_dir(out_dir, "out", create=False)  # a file, read-only...: before any work
    from_file = load_toml(config) if config is not None else {}
    step_given = any(flags[n] is not None for n in STEP_FIELDS) or "step" in from_file
    # η0 = 1 stands in for Oja's default step (:func:`attnsignal.baselines.oja.default_step`)
    # while the schedule is not given: it is not used then
    model, step, run = build_configs(flags, config, {**BASELINE_DEFAULTS, "eta0": 1.0})
    if step_given and method != "oja":
        raise ConfigError("step", f"is only used by method 'oja' (got method {method!r})",
                          step.to_dict())
    rec: Any = None
    if record is not None:
        rec = "log" if record.strip() == "log" else _parse_list(record)
    result = baseline(model, method, samples=int(run["steps"]), runs=int(run["runs"]),
                      seed=int(run["seed"]), record_every=run.get("record_every"), record=rec,
                      step=step if (method == "oja" and step_given) else None)
    result.save(out_dir)
    if plot:
        from ..plots import plot_run

        plot_run(result, out_dir / "alignment",
                 title=f"{method} baseline — {model.n_tokens} tokens in R^{model.d}")
    a = np.abs(result.alignment[:, -1])
    th = float(baseline_theory(model, method, [int(result.steps[-1])],
                               step=result.schedule if method == "oja" else None)[0])
    table = Table(title=f"attnsignal baseline — {method}, {model.n_tokens} tokens in "
                        f"R^{model.d}, {model.signal_sign} sign")
    for col in ("runs", "samples", "final |ρ| (mean ± sd)", "theory E|ρ|", "time"):
        table.add_column(col, justify="right")
    table.add_row(str(a.size), str(int(result.steps[-1])),
                  f"{fmt(float(a.mean()))} ± {fmt(float(a.std(ddof=1)) if a.size > 1 else 0.0)}",
                  fmt(th), f"{result.timings['total_s']:.1f} s")
    out.print(table)
    out.print(f"results in {out_dir}/")


def _parse_list(text: str) -> list[int]:
    try:
        return [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise ConfigError("record", "must be 'log' or a comma-separated list of integers",
                          text) from None
