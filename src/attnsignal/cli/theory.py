"""``attnsignal landscape`` and ``attnsignal ode``: the theory layer from the command line.

``landscape``  tables of ``Φ(ρ)`` and ``Φ'(ρ)`` by each method on a coarse subgrid, the fixed
               points, basins and the verdict; ``OUT/landscape.parquet`` (every method on its
               grid) and ``OUT/landscape.{png,pdf}`` (the methods overlaid, fixed points marked).
``ode``        the limiting ODE ``dρ/dt = (1 − ρ²) Φ'(ρ)`` from ``ρ0``: hitting times of
               ``|ρ| = 0.9, 0.99, 0.9965`` in ODE time and as step indices of the schedule, the
               fixed points and the verdict; ``OUT/trajectory.parquet`` and ``OUT/ode.{png,pdf}``.
               ``--compare`` also simulates with the chain engine from ``ρ0`` and overlays the
               mean and the 10–90 % band, printing the max gap (:func:`~attnsignal.theory.tracking`).

This module parses the options and prints; the analysis is the theory layer's
(:mod:`attnsignal.theory.ode_study` for ``ode``).

Model and step-size options are named after the fields of :class:`~attnsignal.config.ModelConfig`
and :class:`~attnsignal.config.StepSize` and validated there; ``--config FILE.toml`` takes
``[model]``, ``[step]`` and ``[run]`` tables as for ``attnsignal run`` (flags override it).
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Optional

import numpy as np
import pandas as pd
import typer
from rich.table import Table

from ..config import ConfigError, RunConfig
from ..limits import MAX_EXACT_BETA_SIGMA
from ..paths import check_output_dir
from ..validation import Integer, OneOf, Real, Sequence
from ._app import UsageFailure, app
from ._common import (
    MODEL_FIELDS, STEP_FIELDS, build_configs, config_options, console, fmt, load_toml, option,
    option_value, out, out_option, output_dir, overwrite_option, preset_defaults, preset_option,
    preset_values, progress_bar, quiet_option, reported_warnings,
)

#: The model of a bare ``attnsignal landscape`` / ``ode``: the default preset's (that of every
#: command, :mod:`attnsignal.presets`) — a few seconds on 2 cores, and a landscape with an
#: interior minimum, so both ±ξ attract.
MODEL_DEFAULTS = {k: v for k, v in preset_values(None).items() if k in MODEL_FIELDS}


def _preset_model(name: str | None) -> dict:
    """The model fields of preset ``name`` (the default preset when None)."""
    return {k: v for k, v in preset_values(name).items() if k in MODEL_FIELDS}


_METHOD_WORDS = re.compile(r"method='(\w+)'")


def _in_flag_words(exc: ConfigError) -> UsageFailure:
    """A theory-layer error about its ``method`` argument, reworded for the command line's
    ``--methods`` flag (``use --methods mc``, not ``use method='mc'``)."""
    text = _METHOD_WORDS.sub(r"--methods \1", str(exc))
    return UsageFailure(re.sub(r"^method:", "methods:", text))
#: Step size of a bare ``attnsignal ode``: small enough that ``--compare`` tracks the ODE
#: (max gap ≈ 0.02 with 30 runs; ``attnsignal run``'s η0 = 0.02 plateaus near |ρ| ≈ 0.8 this
#: early) and still only ~5 000 steps to t ≈ 3.
STEP_DEFAULTS = {"eta0": 0.001, "k0": 2000.0, "power": 0.75}
#: ``--rho0`` default. ``ρ0 = 0`` is a fixed point of the ODE when the landscape is even
#: (``signal_sign = "random"``), and ``ρ0 ≈ 1/√d`` is the typical alignment of a random start.
RHO0_DEFAULT = 0.05


def _theory_methods() -> tuple[str, ...]:
    from ..theory import METHODS  # the theory layer (scipy) loads only when a command runs

    return METHODS


def _targets() -> tuple[float, ...]:
    from ..theory.ode import DEFAULT_TARGETS

    return DEFAULT_TARGETS


# CLI-only values: parsed and checked by their constraint (``--points 2.5`` is rejected with
# the allowed range, like the model's values).
_POINTS = Integer(ge=3)
_MC_SAMPLES = Integer(ge=2)
_SEED = Integer(ge=0)
_METHODS = Sequence(OneOf(_theory_methods), min_len=1,
                    what="a comma-separated list of 'exact', 'mc', 'asymptotic'")
_RHO0 = Real(ge=-1.0, le=1.0)
_T_MAX = Real(gt=0.0)


def _methods(text: str | None) -> list[str]:
    got = option_value(text, "methods", _METHODS, _theory_methods())
    return [m for m in _theory_methods() if m in got]  # canonical order, no duplicates


def check_grid_size(model, n_points: int, methods: list[str]) -> None:
    """Refuse a ``--points`` grid that cannot fit or finish: the frame (about 8 float64 columns
    per point and method) must fit in memory, and the exact quadrature (≈ 2·10⁶·max(1, βσ)²
    operations per point) must stay below the work limit; the estimate is in the message."""
    from ..limits import check_memory, check_work

    check_memory("points", 64.0 * n_points * len(methods), f"a grid of {n_points} points", n_points)
    if "exact" in methods:
        per_point = 2e6 * max(1.0, model.beta * model.noise_std) ** 2
        check_work("points", n_points * per_point, f"the exact quadrature on {n_points} points",
                   n_points)


def _write_parquet(frame: pd.DataFrame, path: Path) -> Path:
    from ..results import atomic_write

    atomic_write(path, lambda tmp: frame.to_parquet(tmp, index=False))
    return path


def _subgrid(n: int, k: int) -> np.ndarray:
    """Indices of ``k`` (or ``n``, if fewer) nearly evenly spaced nodes of an ``n``-point grid,
    both ends included."""
    return np.unique(np.round(np.linspace(0, n - 1, min(k, n))).astype(int))


# --------------------------------------------------------------------------- shared tables


def _stable_word(stable: bool) -> str:
    return "yes" if stable else "no"


#: how a fixed-point table names the method that computed ``Φ'``
_DPHI_BY = {"exact": "exact Φ'", "mc": "Monte-Carlo Φ'", "asymptotic": "asymptotic Φ'"}


def _print_fixed_points(basins, method: str) -> None:
    table = Table(title=f"fixed points ({_DPHI_BY.get(method, method)})")
    table.add_column("ρ", justify="right")
    table.add_column("kind")
    table.add_column("stable", justify="center")
    table.add_column("F'(ρ)", justify="right")
    for p in basins.fixed_points:
        table.add_row(f"{p.rho:+.6f}", p.kind, _stable_word(p.stable), f"{p.slope:+.4g}")
    out.print(table)
    if basins.basins:
        bt = Table(title="basins of attraction")
        bt.add_column("attractor", justify="right")
        bt.add_column("basin", justify="center")
        bt.add_column("P(uniform start)", justify="right")
        for b in basins.basins:
            lo = "[" if b.lo == b.attractor else "("
            hi = "]" if b.hi == b.attractor else ")"
            bt.add_row(f"{b.attractor:+.6f}", f"{lo}{b.lo:+.4f}, {b.hi:+.4f}{hi}",
                       _probability(b.probability_uniform_start))
        out.print(bt)
    out.print(f"verdict: {basins.verdict}", soft_wrap=True)


def _probability(p: float) -> str:
    """4 significant digits, but ``1 − 3.87e-05`` rather than a ``1`` that hides the rest."""
    if 0.0 < 1.0 - p < 1e-3:
        return f"1 − {1.0 - p:.3g}"
    return f"{p:.4g}"


def _model_line(model) -> str:
    s = (f"d={model.d}, R={model.n_informative}, N={model.n_nuisance}, θ={model.theta:g}, "
         f"β={model.beta:g}, σ={model.noise_std:g}")
    return s + (", random sign" if model.signal_sign == "random" else "")


# --------------------------------------------------------------------------- landscape


@app.command("landscape")
@config_options(MODEL_FIELDS, preset_defaults(MODEL_FIELDS),
                {"beta": "inverse temperature β (> 0; method 'exact' needs βσ <= "
                         f"{MAX_EXACT_BETA_SIGMA:g})"})
def landscape_cmd(
    flags: dict,
    preset: Optional[str] = preset_option(),
    points: Optional[str] = option("--points", _POINTS, 201, "grid points on [−1, 1] for 'exact' and 'asymptotic' (integer >= 3)"),
    methods: Optional[str] = option("--methods", _METHODS, "exact,mc,asymptotic", "comma-separated subset of exact, mc, asymptotic"),
    mc_samples: Optional[str] = option("--mc-samples", _MC_SAMPLES, 20000, "Monte-Carlo draws, shared by every grid point (integer >= 2)"),
    mc_points: Optional[str] = option("--mc-points", _POINTS, 21, "Monte-Carlo grid points, a subgrid of --points (integer >= 3)"),
    seed: Optional[str] = option("--seed", _SEED, 0, "seed of the Monte-Carlo draws (integer >= 0)"),
    config: Optional[Path] = typer.Option(None, "--config", metavar="FILE", help="TOML file with a \\[model] table; it overrides the preset, flags override it"),
    out_dir: Optional[Path] = out_option("landscape", "landscape.parquet, landscape.png, landscape.pdf"),
    overwrite: bool = overwrite_option(),
    plot: bool = typer.Option(True, "--plot/--no-plot", help="write landscape.png and landscape.pdf"),
    quiet: bool = quiet_option(),
) -> None:
    """The population objective Φ(ρ) = J(q) for ⟨q, ξ⟩ = ρ and the field (1 − ρ²)Φ'(ρ).

    Prints Φ and Φ' by each method on a coarse subgrid (Monte Carlo ± one standard error),
    the fixed points (ρ, kind, stable), the basins of attraction and the verdict. Writes
    OUT/landscape.parquet (columns rho, phi, dphi, field, phi_stderr, dphi_stderr, method) and
    OUT/landscape.{png,pdf} with the methods overlaid and the fixed points marked.
    """
    from ..theory import landscape, landscape_verdict
    from ..theory.asymptotic import asymptotic_reliability
    from ..theory.plots import plot_landscape

    model, _, _ = build_configs(flags, config, {**_preset_model(preset), **STEP_DEFAULTS,
                                                "steps": 1}, tables=("model",))
    n_points = option_value(points, "points", _POINTS, 201)
    meths = _methods(methods)
    n_samples = option_value(mc_samples, "mc_samples", _MC_SAMPLES, 20_000)
    n_mc = option_value(mc_points, "mc_points", _POINTS, 21)
    seed_v = option_value(seed, "seed", _SEED, 0)
    check_grid_size(model, n_points, meths)

    for m in meths:  # fail fast (one line, before any progress bar) on a method's own limits
        try:
            landscape(model, np.zeros(1), m, n_samples=2, seed=seed_v)
        except ConfigError as exc:
            raise _in_flag_words(exc) from None
    out_dir = output_dir(out_dir, overwrite, "landscape")
    rho = np.linspace(-1.0, 1.0, n_points)
    rows = _subgrid(n_points, 11)  # the printed subgrid
    mc_idx = np.union1d(_subgrid(n_points, n_mc), rows)  # mc on a subgrid holding the rows
    fp_method = next(m for m in ("exact", "asymptotic", "mc") if m in meths)
    L = model.n_informative + model.n_nuisance
    reliability = asymptotic_reliability(model.n_informative, model.n_nuisance,
                                         model.standardized().beta)  # L e^{−(βσ)²}
    if "asymptotic" in meths and reliability < 10.0:
        console.print(f"[yellow]note:[/] the asymptotic limit needs R + N ≫ e^(βσ)² = "
                      f"{L / reliability:.3g}; here R + N = {L:,}, so its curve is not reliable")
    stages = len(meths) + 1 + int(plot)
    results = {}
    with progress_bar(stages, "landscape", not quiet) as adv:
        for m in meths:
            try:
                if m == "mc":
                    results[m] = landscape(model, rho[mc_idx], "mc", n_samples=n_samples,
                                           seed=seed_v)
                else:
                    results[m] = landscape(model, rho, m)
            except ConfigError as exc:
                raise _in_flag_words(exc) from None
            adv(1)
        basins = landscape_verdict(model, fp_method)
        adv(1)
        paths = []
        if plot:
            paths = plot_landscape(model, out_dir / "landscape", methods=meths,
                                   landscapes=results, basins=basins,
                                   fixed_point_method=fp_method)
            adv(1)
    frame = pd.concat([results[m].to_frame() for m in meths], ignore_index=True)
    if "phi_stderr" not in frame:
        frame["phi_stderr"] = np.nan
        frame["dphi_stderr"] = np.nan
    frame = frame[["method", "rho", "phi", "dphi", "field", "phi_stderr", "dphi_stderr"]]
    _write_parquet(frame, out_dir / "landscape.parquet")

    heads = {"exact": "exact", "mc": f"Monte Carlo (n={n_samples:,})", "asymptotic": "asymptotic"}
    for attr, title in (("phi", "Φ(ρ)"), ("dphi", "Φ'(ρ)")):
        table = Table(title=f"{title} — {_model_line(model)}")
        table.add_column("ρ", justify="right")
        for m in meths:
            table.add_column(heads[m], justify="right")
        for i in rows:
            cells = [f"{rho[i]:+.3f}"]
            for m in meths:
                ls = results[m]
                if m == "mc":
                    j = int(np.searchsorted(mc_idx, i))
                    se = getattr(ls, attr + "_stderr")
                    cells.append(f"{fmt(float(getattr(ls, attr)[j]), 5)} ± "
                                 f"{float(se[j]):.1e}")
                else:
                    cells.append(fmt(float(getattr(ls, attr)[i]), 5))
            table.add_row(*cells)
        out.print(table)
    _print_fixed_points(basins, fp_method)
    files = ", ".join(p.name for p in [out_dir / "landscape.parquet", *paths])
    out.print(f"written to {out_dir}/: {files}", soft_wrap=True)


# --------------------------------------------------------------------------- ode


@app.command("ode")
@config_options(MODEL_FIELDS + STEP_FIELDS
                + ("runs", "steps", "seed", "batch", "update", "record_every", "record"),
                {**preset_defaults(MODEL_FIELDS), **STEP_DEFAULTS, "runs": 30, "seed": 0,
                 "steps": "the step index of t-max", "batch": 1, "update": "projected",
                 "record_every": "steps // 200", "record": "linear"},
                {"beta": "inverse temperature β (> 0; Φ' by exact quadrature while βσ <= "
                         f"{MAX_EXACT_BETA_SIGMA:g}, by Monte Carlo above)",
                 "runs": "--compare: independent runs (integer >= 1)",
                 "steps": "--compare, --effective: SGA updates per run (integer >= 1)",
                 "seed": "--compare: root seed of the runs; --effective: seed of the one-step "
                         "moments (integer >= 0)",
                 "batch": "--compare, --effective: minibatch size B (integer >= 1)",
                 "update": "--compare, --effective: update rule ('projected' or 'riemannian')",
                 "record_every": "--compare, --effective: record every this many steps "
                                 "(integer >= 1)",
                 "record": "--compare, --effective: recorded steps: 'linear', 'log' or a "
                           "comma-separated list of step indices"})
def ode_cmd(
    flags: dict,
    preset: Optional[str] = preset_option(),
    rho0: Optional[str] = option("--rho0", _RHO0, RHO0_DEFAULT, "initial alignment ρ0 in [−1, 1] (0 is a fixed point when the landscape is even, e.g. --signal-sign random)"),
    t_max: Optional[str] = option("--t-max", _T_MAX, "1.25 × the last hitting time", "ODE time horizon (> 0)"),
    compare: bool = typer.Option(False, "--compare", help="also simulate with the chain engine from ρ0 and overlay the mean and 10–90 % band"),
    effective: bool = typer.Option(False, "--effective", help="also predict the law of ρ_k at finite step and dimension (effective dynamics): mean |ρ| and 10–90 % band of |ρ|"),
    config: Optional[Path] = typer.Option(None, "--config", metavar="FILE", help="TOML file with \\[model], \\[step], \\[run] tables; they override the preset, flags override them (\\[run] initial_alignment is the default ρ0)"),
    out_dir: Optional[Path] = out_option("ode", "trajectory.parquet, ode.png, ode.pdf; with --compare also compare.parquet and simulation/; with --effective also effective.parquet"),
    overwrite: bool = overwrite_option(),
    plot: bool = typer.Option(True, "--plot/--no-plot", help="write ode.png and ode.pdf"),
    quiet: bool = quiet_option(),
) -> None:
    """The limiting ODE dρ/dt = (1 − ρ²) Φ'(ρ) of SGA in ODE time t = Σ η_k.

    Prints the hitting times of |ρ| = 0.9, 0.99, 0.9965 (ODE time and step index k of the
    schedule), the fixed points and the verdict. Writes OUT/trajectory.parquet (t, step, rho)
    and OUT/ode.{png,pdf}. With --compare, simulates --runs chain-engine runs from ρ0, overlays
    their mean and 10–90 % band, prints the max gap to the ODE and writes OUT/compare.parquet
    and OUT/simulation/. With --effective, adds the effective dynamics (the law of ρ_k at finite
    step and dimension, attnsignal.theory.effective) over --steps updates at the same records:
    its mean |ρ| and 10–90 % band of |ρ| in the figure (on the same ODE-time axis, steps on
    top), OUT/effective.parquet and a printed summary; with both, the figure and
    OUT/compare.parquet hold the simulation, the limiting ODE and the effective dynamics in
    |ρ|, and the max gaps of both theories to the simulated mean |ρ| are printed with their
    standard errors.
    """
    from ..simulate import simulate
    from ..theory import ode_study as study
    from ..theory.plots import plot_ode

    TARGETS = _targets()
    file_run = {}
    if config is not None:
        file_run = load_toml(config).get("run", {})
        file_run = file_run if isinstance(file_run, dict) else {}
    defaults = {**_preset_model(preset), **STEP_DEFAULTS, "steps": 1, "runs": 30, "seed": 0,
                "engine": "chain"}
    model, step, run = build_configs(flags, config, defaults)
    if out_dir is not None:
        check_output_dir(out_dir, "out", create=False)  # created below, once the input holds
    if effective:  # a model it cannot evolve, before the ODE's work
        from ..theory.effective import check_effective_model

        check_effective_model(model)
    steps_given = flags["steps"] is not None or "steps" in file_run
    if rho0 is not None:
        r0 = option_value(rho0, "rho0", _RHO0, None)
    elif run.get("initial_alignment") is not None:
        r0 = float(run["initial_alignment"])
    else:
        r0 = RHO0_DEFAULT
    tmax = option_value(t_max, "t_max", _T_MAX, None)

    ode = study.ode_study(model, r0, step, tmax, TARGETS)
    sol, basins, stationary, t_win = ode.solution, ode.basins, ode.stationary, ode.t_window
    if ode.method == "mc":
        bs = model.beta * model.noise_std
        console.print(f"note: βσ = {bs:g} > {MAX_EXACT_BETA_SIGMA:g}, beyond the exact "
                      "quadrature: Φ' (the ODE, the fixed points) by Monte Carlo",
                      markup=False, highlight=False, soft_wrap=True)
    if (compare or effective) and not steps_given:  # before anything is written
        run["steps"] = study.window_steps(step, t_win)
    rc = RunConfig(**{**run, "initial_alignment": r0})  # validated, with its default records
    if compare:  # the simulation's sizes and work, before anything is written or drawn
        from ..simulate import check_simulation

        check_simulation(model, rc)
    if effective:
        study.check_effective(model, step, rc)
    out_dir = output_dir(out_dir, overwrite, "ode")

    t_grid = np.linspace(0.0, t_win, 601)
    traj = pd.DataFrame({"t": t_grid, "step": np.asarray(step.step_at_time(t_grid)),
                         "rho": sol(t_grid)})
    _write_parquet(traj, out_dir / "trajectory.parquet")

    result = tr = None
    if compare:
        run["initial_alignment"] = r0
        with reported_warnings(), progress_bar(int(run["steps"]),
                                               f"{run['engine']} · {run['runs']} runs",
                                               not quiet) as adv:
            result = simulate(model, step, progress=adv, **run)
        result.save(out_dir / "simulation")
        tr, cmp, keep = study.simulation_comparison(result, model, t_win)
        _write_parquet(cmp, out_dir / "compare.parquet")

    ed = eff_frame = gaps = None
    if effective:
        with progress_bar(1, "effective dynamics", not quiet) as adv:
            ed = study.effective_prediction(model, step, rc, r0)
            adv(1)
        eff_frame = study.effective_frame(ed, ode.at)
        _write_parquet(eff_frame, out_dir / "effective.parquet")
        if result is not None:
            cmp, gaps = study.effective_comparison(cmp, result, ed, ode.at, keep)
            _write_parquet(cmp, out_dir / "compare.parquet")

    paths = []
    if plot:
        with progress_bar(1, "figure", not quiet) as adv:
            paths = plot_ode(model, r0, out_dir / "ode", step=step, result=result,
                             t_max=t_win, targets=TARGETS,
                             band="quantile", T=None if tr is None else tr.T, solution=sol,
                             effective=ed)
            adv(1)

    out.print(f"ODE from ρ0 = {r0:+.6g}; {_model_line(model)}", soft_wrap=True)
    out.print(f"schedule: {step.describe()}", soft_wrap=True)
    table = Table(title="hitting times of |ρ| = target")
    table.add_column("target |ρ|", justify="right")
    table.add_column("ODE time t", justify="right")
    table.add_column("step k", justify="right")
    if ed is not None:
        table.add_column("effective dynamics: mean |ρ_k| reaches it at step", justify="right")
    for x in TARGETS:
        h = sol.hitting_times[x]
        k = sol.hitting_steps[x]
        if stationary:
            row = [f"{x:g}", "never (ρ0 is a fixed point)", "—"]
        elif not math.isfinite(h):
            reached = "not reached" + (f" by t = {tmax:g}" if tmax is not None else "")
            row = [f"{x:g}", reached, "—"]
        else:
            ks = "never (Σ η_k < t)" if k > study.UNREACHABLE_STEP else f"{k:,}"
            row = [f"{x:g}", f"{h:.8g}", ks]
        if ed is not None:
            ke = ed.hitting_step(x)
            row.append(f"{ke:,} (first record)" if ke >= 0 else f"not by {rc.steps:,}")
        table.add_row(*row)
    out.print(table)
    att = basins.attractor_of(r0)
    if att is None:
        out.print(f"ρ0 = {r0:+.6g} is a repelling fixed point: the ODE stays there",
                  soft_wrap=True)
    else:
        out.print(f"ρ0 = {r0:+.6g} lies in the basin of ρ = {att:+g}", soft_wrap=True)
    _print_fixed_points(basins, ode.method)
    if tr is not None:
        out.print(f"simulation: {tr.runs} {run['engine']}-engine runs of {int(run['steps']):,} "
                  f"steps from ρ0 = {r0:+.6g} (seed {run['seed']})", soft_wrap=True)
    if tr is not None and gaps is None:  # with --effective, the gaps table says it
        what = "|ρ|" if tr.mode == "abs" else "ρ"
        out.print(f"max gap |mean {what} − ODE| = {tr.gap:.4g} at t = {tr.gap_time:.4g} "
                  f"(over t <= {tr.T:.4g}); ODE inside mean ± 1.96 se at "
                  f"{tr.fraction_inside:.0%} of the records", soft_wrap=True)
    if ed is not None:
        _print_effective(ed, eff_frame, rc, r0)
    if gaps is not None:
        _print_gaps(gaps, tr.runs)
    files = [out_dir / "trajectory.parquet", *paths]
    if tr is not None:
        files += [out_dir / "compare.parquet", out_dir / "simulation"]
    if ed is not None:
        files += [out_dir / "effective.parquet"]
    out.print(f"written to {out_dir}/: " + ", ".join(p.name for p in files), soft_wrap=True)


# --------------------------------------------------------------------------- ode --effective


def _print_effective(ed, frame: pd.DataFrame, rc: RunConfig, r0: float) -> None:
    out.print(f"effective dynamics: law of ρ_k over {rc.steps:,} steps from ρ0 = {r0:+.6g} "
              f"(batch {rc.batch}, {rc.update} update, moments seed {rc.seed}; "
              f"{ed.timings['total_s']:.2f} s)", soft_wrap=True)
    table = Table(title="effective dynamics: predicted |ρ_k| beside the limiting ODE")
    for head in ("step k", "ODE time t", "ODE ρ(t)", "mean |ρ_k|", "10 % of |ρ_k|",
                 "90 % of |ρ_k|"):
        table.add_column(head, justify="right")
    for i in _subgrid(len(frame), 9):
        r = frame.iloc[i]
        table.add_row(f"{int(r['step']):,}", f"{r['t']:.4g}", f"{r['ode_rho']:+.4f}",
                      f"{r['effective_mean_abs_rho']:.4f}", f"{r['effective_q10_abs_rho']:.4f}",
                      f"{r['effective_q90_abs_rho']:.4f}")
    out.print(table)
    diag = getattr(ed, "diagnostic", None)
    if diag is not None and diag.verdict != "ok":
        console.print(f"[yellow]warning:[/] {diag.message}", soft_wrap=True)
    elif diag is not None and np.isfinite(diag.stderr):
        out.print(f"effective dynamics: Monte-Carlo standard error of the mean |ρ| at most "
                  f"{diag.stderr:.2g} ({diag.draws:,} draws a moment node); predicted error "
                  f"{diag.predicted_error:.2g} <= tolerance {diag.tolerance}", soft_wrap=True)


def _print_gaps(gaps: dict, runs: int) -> None:
    """One row per theory: its largest gap to the simulated mean |ρ| with the standard error
    of that mean there, and the largest excess over 3 standard errors."""
    table = Table(title=f"theory against the simulated mean |ρ| ({runs} runs)")
    table.add_column("theory", no_wrap=True)
    for head in ("max gap", "± se", "at step", "ODE time t", "max(gap − 3 se)"):
        table.add_column(head, justify="right")
    for name, key in (("limiting ODE", "ode"), ("effective dynamics", "effective")):
        g = gaps[key]
        table.add_row(name, f"{g['gap']:.4g}", f"{g['se']:.2g}", f"{g['step']:,}",
                      f"{g['t']:.4g}", f"{g['excess_3se']:+.4g}")
    out.print(table)
    out.print(f"effective 10–90 % band of |ρ| holds {gaps['band']:.1%} of the (run, record) "
              "pairs after the first 5 % of the records (80 % expected)", soft_wrap=True)
