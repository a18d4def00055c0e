"""``attnsignal advise``: the schedule advisor (:func:`attnsignal.theory.advisor.advise_schedule`).

Prints the advised Robbins–Monro step ``η0 (1 + k/k0)^(−power)``, the predicted samples to the
target mean ``|ρ|`` with it and with the optimal schedule, and (with ``--compare-eta0``) what a
given power-law schedule would take; writes ``OUT/advice.parquet`` (the predicted paths: mean
and 10–90 % band of ``|ρ|`` under both schedules) and ``OUT/advice.{png,pdf}``.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Optional

import numpy as np
import pandas as pd
import typer

from ..paths import check_output_dir
from ..validation import ConfigError, Integer, Optional as Opt, Real, parse_text
from ._app import app
from ._common import (
    FIELD_TABLE, MODEL_FIELDS, build_configs, config_options, out, out_option,
    output_dir, overwrite_option, preset_defaults, preset_option, preset_values, progress_bar,
    reported_warnings,
)

#: the model of a bare ``attnsignal advise``: the default preset's (:mod:`attnsignal.presets`)
MODEL_DEFAULTS = {k: v for k, v in preset_values(None).items() if k in MODEL_FIELDS}
_RUN_DEFAULTS = {"batch": 1, "update": "projected", "seed": 0}


def _value(text: Optional[str], field: str, constraint: Any, default: Any) -> Any:
    return constraint.check(field, default if text is None else parse_text(text))


def check_advise_size(model: Any) -> None:
    """What the advisor cannot do, refused before it starts: a ``βσ`` or ``θ/σ`` beyond the
    exact landscape (its mean path integrates the exact field), and what the effective dynamics
    cannot evolve (a ``d`` its grid cannot resolve, a token count one Monte-Carlo draw of
    which cannot fit in memory). Raises ConfigError."""
    from ..limits import MAX_EXACT_BETA_SIGMA
    from ..theory.effective import check_effective_model
    from ..theory.exact import MAX_THETA

    bs = model.beta * model.noise_std
    if not bs <= MAX_EXACT_BETA_SIGMA:
        raise ConfigError("beta", f"must keep βσ <= {MAX_EXACT_BETA_SIGMA:g} for advise (the "
                          f"advisor's mean path uses the exact landscape); βσ = {bs:.3g}",
                          model.beta)
    ratio = model.theta / model.noise_std
    if not ratio <= MAX_THETA:
        raise ConfigError("theta/noise_std", f"must be <= {MAX_THETA:.0e} for advise (the "
                          "advisor's mean path uses the exact landscape)", ratio)
    check_effective_model(model)


@app.command("advise")
@config_options(MODEL_FIELDS + ("batch", "update", "seed"),
                preset_defaults(MODEL_FIELDS + ("batch", "update", "seed"), _RUN_DEFAULTS),
                helps={"seed": "seed of the one-step moments (integer >= 0)"})
def advise_cmd(
    flags: dict[str, Any],
    preset: Optional[str] = preset_option(),
    target: Optional[str] = typer.Option(None, "--target", help="mean |ρ| to reach, in (0, 1) (default: 0.9)"),
    rho0: Optional[str] = typer.Option(None, "--rho0", help="initial alignment in [−1, 1] (default: a uniform start)"),
    compare_eta0: Optional[str] = typer.Option(None, "--compare-eta0", help="also predict the power-law schedule with this η0 (> 0)"),
    compare_k0: Optional[str] = typer.Option(None, "--compare-k0", help="its k0 (> 0; default: 1000)"),
    compare_power: Optional[str] = typer.Option(None, "--compare-power", help="its power (>= 0; default: 1)"),
    config: Optional[Path] = typer.Option(None, "--config", metavar="FILE", help="TOML file with a \\[model] table; it overrides the preset, flags override it"),
    out_dir: Optional[Path] = out_option("advise", "advice.parquet, advice.png, advice.pdf"),
    overwrite: bool = overwrite_option(),
    plot: bool = typer.Option(True, "--plot/--no-plot", help="write advice.png and advice.pdf"),
    max_evaluations: Optional[str] = typer.Option(None, "--max-evaluations", help="at most this many effective-dynamics runs comparing schedules (>= 4; default: 40); the search stops there and says so"),
    quiet: bool = typer.Option(False, "--quiet", help="no progress bar"),
) -> None:
    """Advise step sizes that bring the mean |ρ| to --target in the fewest samples.

    The advice is a Robbins–Monro power law fitted to the time-optimal step
    η*(ρ) = argmax_η E[Δz | ρ, η] along the mean path and tuned on predicted samples; the
    "optimal" schedule is the best found among that feedback schedule, the power law and a
    bounded search around them (never worse than the advice). Predictions include the spread
    of ρ over runs.
    """
    from ..config import StepSize
    from ..theory.advisor import advise_schedule
    from ..theory.effective import effective_dynamics

    model_flags = {n: flags[n] for n in MODEL_FIELDS}
    model_defaults = {k: v for k, v in preset_values(preset).items() if k in MODEL_FIELDS}
    model, _, _ = build_configs(model_flags, config, {**model_defaults, "eta0": 0.01},
                                tables=("model",))
    tgt = _value(target, "target", Real(gt=0.0, lt=1.0), 0.9)
    b = _value(flags["batch"], "batch", FIELD_TABLE["batch"], 1)
    upd = _value(flags["update"], "update", FIELD_TABLE["update"], "projected")
    r0 = _value(rho0, "rho0", Opt(Real(ge=-1.0, le=1.0)), None)
    sd = _value(flags["seed"], "seed", FIELD_TABLE["seed"], 0)
    cmp_step = None
    if compare_eta0 is None and (compare_k0 is not None or compare_power is not None):
        flag = "compare_k0" if compare_k0 is not None else "compare_power"
        raise ConfigError(flag, "only with --compare-eta0 (the compared schedule's η0)",
                          compare_k0 if compare_k0 is not None else compare_power)
    if compare_eta0 is not None:
        cmp_step = StepSize(eta0=_value(compare_eta0, "compare_eta0", Real(gt=0.0), None),
                            k0=_value(compare_k0, "compare_k0", Real(gt=0.0), 1000.0),
                            power=_value(compare_power, "compare_power", Real(ge=0.0), 1.0))
    if out_dir is not None:
        check_output_dir(out_dir, "out", create=False)  # a file, read-only...: before any work
    check_advise_size(model)
    if b > 4000:  # advise_schedule's draws a moment node
        raise ConfigError("batch", "must be <= 4000 for advise (the one-step moments draw 4000 "
                          "samples a node)", b)

    from ..theory.advisor import MIN_EVALUATIONS

    n_eval = _value(max_evaluations, "max_evaluations",
                    Integer(ge=MIN_EVALUATIONS, le=1000), 40)
    from ..theory.effective import EffectiveDynamicsAccuracyWarning

    with reported_warnings(EffectiveDynamicsAccuracyWarning), \
            progress_bar(n_eval, "advise · effective-dynamics runs", enabled=not quiet) as advance:
        done = [0]

        def progress(k: int, total: int) -> None:
            advance(k - done[0])
            done[0] = k

        adv = advise_schedule(model, tgt, batch=b, update=upd, initial_alignment=r0, seed=sd,
                              max_evaluations=n_eval, progress=progress)
    out.print(adv.describe(), soft_wrap=True)
    run_line = _run_line(preset, model_flags, config, adv, r0, b, upd)
    out.print(f"to run it: {run_line}", soft_wrap=True, markup=False, highlight=False)
    frames = []
    for name, ed in (("advised", adv.dynamics), ("optimal", adv.optimal_dynamics)):
        q10, q90 = ed.quantile([0.1, 0.9])
        frames.append(pd.DataFrame({"schedule": name, "step": ed.steps, "samples": ed.steps * b,
                                    "mean_abs": ed.mean_abs, "q10_abs": q10, "q90_abs": q90}))
    if cmp_step is not None:
        horizon = int(max(adv.samples, adv.optimal_samples) // b * 4)
        ed = effective_dynamics(model, cmp_step, steps=max(horizon, 10), batch=b, update=upd,
                                initial_alignment=r0, record="log", seed=sd)
        hit = ed.hitting_step(tgt)
        q10, q90 = ed.quantile([0.1, 0.9])
        frames.append(pd.DataFrame({"schedule": "compared", "step": ed.steps,
                                    "samples": ed.steps * b, "mean_abs": ed.mean_abs,
                                    "q10_abs": q10, "q90_abs": q90}))
        if hit < 0:
            out.print(f"compared {cmp_step.describe()}: target not reached within "
                      f"{ed.steps[-1] * b:,} samples (the advice saves more than "
                      f"{100 * (1 - adv.samples / (ed.steps[-1] * b)):.0f} %)", soft_wrap=True)
        else:
            out.print(f"compared {cmp_step.describe()}: {hit * b:,} samples — the advice "
                      f"saves {100 * (1 - adv.samples / (hit * b)):.0f} %", soft_wrap=True)
    frame = pd.concat(frames, ignore_index=True)
    from ..persistence import atomic_write

    out_dir = output_dir(out_dir, overwrite, "advise")
    atomic_write(out_dir / "advice.parquet", lambda tmp: frame.to_parquet(tmp, index=False))
    if plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, (ax, ax_eta) = plt.subplots(1, 2, figsize=(11, 4.2))
        steps_of = {"advised": adv.step, "optimal": adv.optimal, "compared": cmp_step}
        for name, g in frame.groupby("schedule", sort=False):
            x = np.maximum(g["samples"].to_numpy(), 1)
            line, = ax.plot(x, g["mean_abs"], label=f"{name}: predicted mean $|\\rho|$")
            ax.fill_between(x, g["q10_abs"], g["q90_abs"], color=line.get_color(), alpha=0.2)
            k = np.unique(np.maximum(g["step"].to_numpy(dtype=np.int64), 0))
            ax_eta.plot(np.maximum(k * b, 1), steps_of[name].eta(k), color=line.get_color(),
                        label=f"{name}: $\\eta_k$")
        ax.axhline(tgt, color="k", lw=0.8, ls=":", label=f"target {tgt:g}")
        ax.set_xscale("log")
        ax.set_xlabel("samples per run")
        ax.set_ylabel(r"$|\rho|$ (mean and 10–90 % band, predicted)")
        ax.set_title("predicted alignment (effective dynamics)")
        ax.legend(loc="lower right", fontsize=9.5)  # the band starts wide at the upper left
        ax.grid(alpha=0.3)
        ax_eta.set_xscale("log")
        ax_eta.set_yscale("log")
        ax_eta.set_xlabel("samples per run")
        ax_eta.set_ylabel(r"step size $\eta_k$")
        ax_eta.set_title("schedules")
        ax_eta.legend(loc="lower left", fontsize=9.5)
        ax_eta.grid(alpha=0.3)
        fig.suptitle(f"to run it: {run_line}", fontsize=9)
        fig.tight_layout()
        for ext in ("png", "pdf"):
            atomic_write(out_dir / f"advice.{ext}", lambda tmp, e=ext: fig.savefig(tmp, format=e))
        plt.close(fig)
    out.print(f"wrote {out_dir / 'advice.parquet'}", soft_wrap=True)


def _run_line(preset: Optional[str], model_flags: dict, config: Optional[Path], adv: Any,
              r0: Optional[float], batch: int, update: str) -> str:
    """The ``attnsignal run`` command that applies the advice: the same model (preset, file
    and flags as given here), the advised power law rounded to 3 significant digits, as many
    updates as the advice predicts to the target (×1.5, rounded up to 2 significant digits)."""
    words = ["attnsignal", "run"]
    if preset is not None:
        words += ["--preset", preset]
    if config is not None:
        words += ["--config", str(config)]
    for name, value in model_flags.items():
        if value is not None:
            words += [f"--{name.replace('_', '-')}", str(value)]
    st = adv.step
    steps = max(int(math.ceil(1.5 * adv.samples / max(batch, 1))), 1)
    digits = max(len(str(steps)) - 2, 0)
    steps = int(math.ceil(steps / 10 ** digits) * 10 ** digits)
    words += ["--eta0", f"{st.eta0:.3g}", "--k0", f"{st.k0:.3g}", "--power", f"{st.power:.3g}",
              "--steps", str(steps)]
    if batch != 1:
        words += ["--batch", str(batch)]
    if update != "projected":
        words += ["--update", update]
    if r0 is not None:
        words += ["--initial-alignment", f"{r0:g}"]
    return " ".join(words)
