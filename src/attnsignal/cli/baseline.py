"""``attnsignal baseline``: run a simple estimator (token mean, PCA, Oja, oracle) on the
model's token stream, summarise it beside its theory, write the result and a figure."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import numpy as np
import typer
from rich.table import Table

from ..config import ConfigError
from ..records import RECORD
from ._app import app
from ._common import (
    MODEL_FIELDS, STEP_FIELDS, build_configs, check_not_empty, config_options, fmt, load_toml,
    out, out_option, output_dir, overwrite_option, preset_defaults, preset_option, preset_values,
    progress_bar, quiet_option,
)

#: Settings of ``attnsignal baseline`` beside its preset (the model, ``steps`` and ``runs``
#: come from ``--preset``, the same model ``attnsignal run`` simulates).
BASELINE_DEFAULTS = {"seed": 0, "record_every": None}
_FIELDS = ("steps", "runs", "seed", "record_every")


@app.command("baseline")
@config_options(MODEL_FIELDS + STEP_FIELDS + _FIELDS,
                preset_defaults(MODEL_FIELDS + _FIELDS, BASELINE_DEFAULTS),
                helps={"eta0": "Oja's step η0 (> 0); default: the asymptotically optimal "
                               "1/(g (k + k0))",
                       "k0": "k0 of Oja's schedule (> 0)",
                       "power": "decay power of Oja's schedule (>= 0)",
                       "steps": "samples per run (integer >= 1)"})
def baseline_cmd(
    flags: dict[str, Any],
    preset: Optional[str] = preset_option(),
    method: str = typer.Option("mean", "--method", metavar="NAME",
                               help="'mean', 'pca', 'oja' or 'oracle'"),
    record: Optional[str] = typer.Option(None, "--record", metavar="log|K1,K2,...",
                                         help="log-spaced records, or a comma-separated list "
                                              "of sample counts (overrides --record-every)"),
    config: Optional[Path] = typer.Option(None, "--config", metavar="FILE", help="TOML file with \\[model], \\[step], \\[run] tables; they override the preset, flags override them"),
    out_dir: Optional[Path] = out_option("baseline", "manifest.json, result.<checksum>.parquet, alignment.png, alignment.pdf"),
    overwrite: bool = overwrite_option(),
    plot: bool = typer.Option(True, "--plot/--no-plot", help="write alignment.png and alignment.pdf"),
    attention: bool = typer.Option(True, "--attention/--no-attention", help="also simulate attention (SGA, the preset's schedule, the fastest exact engine) on the same model and draw it beside the estimator"),
    quiet: bool = quiet_option(),
) -> None:
    """Run a baseline estimator on the same token stream as attention.

    Methods: 'mean' (running average of the per-sample token means), 'pca' (top eigenvector
    of their running second moment), 'oja' (Oja's rule on them; --eta0/--k0/--power set its
    schedule), 'oracle' (running average of the informative tokens, sign-corrected). Prints
    the final |ρ| beside the theory's E|ρ| and writes OUT/ (a Result with method set) and
    OUT/alignment.{png,pdf}: the estimator's runs with its theory E|ρ| and, beside them,
    attention's runs (SGA with the preset's schedule over as many samples) and its limiting
    ODE.
    """
    from ..baselines import baseline, baseline_theory
    from ..baselines.base import METHOD, check_scales

    METHOD.check("method", method)
    from_file = load_toml(config) if config is not None else {}
    step_given = any(flags[n] is not None for n in STEP_FIELDS) or "step" in from_file
    # η0 = 1 stands in for Oja's default step (:func:`attnsignal.baselines.oja.default_step`)
    # while the schedule is not given: it is not used then
    defaults = {k: v for k, v in preset_values(preset).items() if k not in ("eta0", "k0", "power")}
    model, step, run = build_configs(flags, config, {**defaults, **BASELINE_DEFAULTS, "eta0": 1.0})
    if step_given and method != "oja":
        raise ConfigError("step", f"is only used by method 'oja' (got method {method!r})",
                          step.to_dict())
    check_not_empty("record", record)
    rec = RECORD.check("record", RECORD.parse(record))
    check_scales(model)  # before the output directory is made
    out_dir = output_dir(out_dir, overwrite, "baseline")
    with progress_bar(1, f"{method} · {run['runs']} runs", not quiet) as adv:
        result = baseline(model, method, samples=int(run["steps"]), runs=int(run["runs"]),
                      seed=int(run["seed"]), record_every=run.get("record_every"), record=rec,
                      step=step if (method == "oja" and step_given) else None)
        adv(1)
    result.save(out_dir)
    a = np.abs(result.alignment[:, -1])
    theory_steps = np.maximum(np.asarray(result.steps, dtype=np.int64), 1)
    curve = np.asarray(baseline_theory(model, method, theory_steps,
                                       step=result.schedule if method == "oja" else None),
                       dtype=np.float64)
    th = float(curve[-1])
    if plot:
        _plot(result, out_dir / "alignment", method, curve, preset, run, model,
              attention, quiet)
    table = Table(title=f"attnsignal baseline — {method}, {model.n_tokens} tokens in "
                        f"R^{model.d}, {model.signal_sign} sign")
    for col in ("runs", "samples", "final |ρ| (mean ± sd)", "theory E|ρ|", "time"):
        table.add_column(col, justify="right")
    table.add_row(str(a.size), str(int(result.steps[-1])),
                  f"{fmt(float(a.mean()))} ± {fmt(float(a.std(ddof=1)) if a.size > 1 else 0.0)}",
                  fmt(th), f"{result.timings['total_s']:.1f} s")
    out.print(table)
    out.print(f"results in {out_dir}/")



def _plot(result, stem: Path, method: str, curve: np.ndarray, preset: Optional[str],
          run: dict, model, attention: bool, quiet: bool) -> None:
    """The estimator's runs with its theory and, with ``attention``, attention's mean, band and
    limiting ODE over as many samples (one figure, samples on the x axis)."""
    from ..config import RunConfig, StepSize
    from ..engines import fastest_engine
    from ..plots import draw_theory, plot_run
    from ..simulate import simulate
    from ._beside import theory_lines

    sga = lines = None
    if attention:
        p = preset_values(preset)
        step = StepSize(eta0=p["eta0"], k0=p["k0"], power=p["power"])
        rc = {"steps": int(result.steps[-1]), "runs": int(run["runs"]), "seed": int(run["seed"]),
              "record": [int(k) for k in result.steps]}
        rc["engine"] = fastest_engine(model, RunConfig(**rc))
        with progress_bar(int(rc["steps"]), f"attention · {rc['engine']}", not quiet) as adv:
            sga = simulate(model, step, progress=adv, **rc)
        lines = theory_lines(sga, effective=False)

    def overlay(ax):
        xs = np.asarray(result.steps)
        ax.plot(xs, curve, color="black", lw=1.4, ls="-.", label=rf"{method}: theory $\mathrm{{E}}|\rho|$")
        if sga is not None:
            m = np.abs(sga.alignment).mean(axis=0)
            lo, hi = np.quantile(np.abs(sga.alignment), [0.1, 0.9], axis=0)
            ax.fill_between(sga.steps, lo, hi, color="tab:purple", alpha=0.15)
            ax.plot(sga.steps, m, color="tab:purple", lw=2,
                    label=f"attention (SGA, {sga.engine}): mean and 10–90 %")
            draw_theory(ax, np.asarray(sga.steps), lines, color="tab:purple")

    plot_run(result, stem, overlay=overlay, attention=sga,
             title=f"{method} baseline beside attention — {model.n_tokens} tokens in "
                   f"R^{model.d}, θ = {model.theta:g}")
