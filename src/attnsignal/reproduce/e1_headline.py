"""E1 — the headline: 30 runs, θ = 0.25, R = 500, N = 10 000 (20× the informative tokens).

d = 100 with a Robbins–Monro schedule that brings the mean final |ρ| to the paper's 0.9965,
and d = 1000 on the same budget, with the number of samples the finite-step theory predicts
for 0.9965. Figure: every run thin, the mean, a 10–90 % band and the ODE solution on the ODE
time axis. A few runs of the literal algorithm check the exact engine on the same
configuration (their alignment after ``literal_steps`` updates against the chain's at that
step).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from ..config import RunConfig
from ..plots import band, save_figure, _plt
from ..report import Section
from ..simulate import simulate
from .context import Context, result_of, sweep_spec
from .plan import Plan

__all__ = ["run_e1"]


def run_e1(plan: Plan, ctx: Context) -> tuple[Section, dict[str, Any]]:
    from ..theory import samples_to_reach, tracking

    m100 = plan.e1_model
    every = max(1, plan.e1_steps // plan.e1_records)
    spec = sweep_spec(m100, plan.e1_step, seed=plan.seed, runs=plan.e1_runs,
                      steps=plan.e1_steps, record_every=every,
                      grid={"model.d": [m100.d, plan.e1_big_d]})
    frame = ctx.sweep("E1", spec)
    run = RunConfig(steps=plan.e1_steps, runs=plan.e1_runs, engine="chain", seed=plan.seed,
                    record_every=every)
    results = {}
    for d in (m100.d, plan.e1_big_d):
        sub = frame[frame["model.d"] == d]
        results[d] = result_of(sub, m100.replace(d=d), plan.e1_step, run)

    ctx.cache['E1'] = results
    r = results[m100.d]
    fin = np.abs(r.final_alignment)
    meas: dict[str, Any] = {
        "e1_runs": r.alignment.shape[0],
        "e1_mean_final_abs": float(fin.mean()),
        "e1_sd_final_abs": float(fin.std(ddof=1)),
        "e1_min_final_abs": float(fin.min()),
        "e1_fraction_plus": float((r.final_alignment > 0).mean()),
    }
    # the limiting ODE from each run's own start, averaged (|ρ| when the runs split signs)
    tracks = {d: tracking(res, res.model) for d, res in results.items()}
    ode_abs = {d: np.abs(t.ode) if t.mode == "signed" else t.ode for d, t in tracks.items()}
    meas["e1_ode_gap"] = float(tracks[m100.d].gap)
    meas["e1_d1000_ode_gap"] = float(tracks[plan.e1_big_d].gap)

    # the finite-step prediction for 0.9965, both dimensions
    pred = {}
    for d, res in results.items():
        pred[d] = samples_to_reach(res.model, plan.e1_step, 0.9965,
                                   n_samples=plan.theory_samples, plateau=False)
    r1000 = results[plan.e1_big_d]
    fin1000 = np.abs(r1000.final_alignment)
    seen = {d: _first_reach(res, 0.9965) for d, res in results.items()}
    meas["e1_measured_samples_d100"] = seen[m100.d]
    meas.update({
        "e1_d1000_mean_final_abs": float(fin1000.mean()),
        "e1_d1000_sd_final_abs": float(fin1000.std(ddof=1)),
        "e1_pred_samples_d100": _steps_of(pred[m100.d]),
        "e1_pred_samples_d1000": _steps_of(pred[plan.e1_big_d]),
    })

    # literal spot check: a few runs of the literal algorithm against the chain at that step
    lit = simulate(m100, plan.e1_step, steps=plan.literal_steps, runs=plan.literal_runs,
                   engine="literal", seed=plan.seed + 1, record_every=plan.literal_steps)
    chk = simulate(m100, plan.e1_step, steps=plan.literal_steps, runs=max(200, 10 * plan.literal_runs),
                   engine="chain", seed=plan.seed + 2, record_every=plan.literal_steps)
    lit_abs = np.abs(lit.final_alignment)
    chain_abs = np.abs(chk.final_alignment)
    z = (lit_abs.mean() - chain_abs.mean()) / np.sqrt(
        chain_abs.var(ddof=1) / chain_abs.size + max(chain_abs.var(ddof=1), 1e-12) / lit_abs.size)
    meas["e1_literal_z"] = float(z)
    meas["e1_literal_seconds_per_sample"] = lit.timings["seconds_per_sample"]
    meas["e1_chain_seconds_per_sample"] = chk.timings["seconds_per_sample"]

    # figure
    plt = _plt()
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.6), gridspec_kw={"width_ratios": [1, 1, 0.9]})
    for ax, d in zip(axes[:2], (m100.d, plan.e1_big_d)):
        res = results[d]
        a = np.abs(res.alignment)
        for row in a:
            ax.plot(res.ode_time, row, color="tab:blue", lw=0.4, alpha=0.3)
        mean, lo, hi = band(a)
        ax.fill_between(res.ode_time, lo, hi, color="tab:blue", alpha=0.2, label="10–90 % of runs")
        ax.plot(res.ode_time, mean, color="navy", lw=2, label=f"mean of {a.shape[0]} runs")
        ax.plot(tracks[d].t, ode_abs[d], color="tab:red", ls="--", lw=1.6,
                label="limiting ODE (same starts)")
        ax.axhline(0.9965, color="k", ls=":", lw=1, label="0.9965 (paper)")
        ax.set_xlim(0, res.ode_time[-1])
        ax.set_ylim(0, 1.01)
        ax.set_xlabel("ODE time t = Σ η_k")
        ax.set_ylabel("|ρ|")
        ax.set_title(f"d = {d}: final |ρ| = {np.abs(res.final_alignment).mean():.4f} ± "
                     f"{np.abs(res.final_alignment).std(ddof=1):.4f}", fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right", fontsize=8)
    ax3 = axes[2]
    for d, c in ((m100.d, "navy"), (plan.e1_big_d, "tab:purple")):
        res = results[d]
        gap = 1 - np.abs(res.alignment[:, 1:])
        mean, lo, hi = band(gap)
        ax3.fill_between(res.steps[1:], lo, hi, color=c, alpha=0.15)
        ax3.plot(res.steps[1:], mean, color=c, lw=1.8, label=f"d = {d}")
    ax3.axhline(1 - 0.9965, color="k", ls=":", lw=1, label="1 − 0.9965")
    ax3.set_yscale("log")
    ax3.set_xlabel("step k (samples per run)")
    ax3.set_ylabel("1 − |ρ| (mean, 10–90 % band)")
    ax3.set_title("approach to ±ξ", fontsize=10)
    ax3.grid(alpha=0.3, which="both")
    ax3.legend(fontsize=8)
    fig.suptitle(f"E1 — θ = {m100.theta}, R = {m100.n_informative}, N = {m100.n_nuisance}, "
                 f"{plan.e1_step.describe()}, {plan.e1_steps} samples per run", fontsize=10)
    fig.tight_layout()
    save_figure(fig, ctx.figures / "e1_headline")

    sec = Section("E1 — headline: weak signal, 20× nuisance tokens")
    sec.para(
        f"{meas['e1_runs']} independent runs of the exact alignment chain (equal in law to the "
        f"literal algorithm), θ = {m100.theta}, R = {m100.n_informative}, N = {m100.n_nuisance}, "
        f"uniform random starts, schedule {plan.e1_step.describe()}, {plan.e1_steps} samples per run."
    )
    sec.table(
        [[f"d = {m100.d}", f"{meas['e1_mean_final_abs']:.4f} ± {meas['e1_sd_final_abs']:.4f}",
          f"{meas['e1_min_final_abs']:.4f}", f"{meas['e1_fraction_plus']:.0%}",
          _fmt_steps(pred[m100.d]), _fmt_seen(seen[m100.d], plan.e1_steps)],
         [f"d = {plan.e1_big_d}", f"{meas['e1_d1000_mean_final_abs']:.4f} ± {meas['e1_d1000_sd_final_abs']:.4f}",
          f"{fin1000.min():.4f}", f"{(r1000.final_alignment > 0).mean():.0%}",
          _fmt_steps(pred[plan.e1_big_d]), _fmt_seen(seen[plan.e1_big_d], plan.e1_steps)]],
        header=["dimension", "final |ρ| (mean ± sd)", "min", "runs at +ξ",
                "samples the finite-step theory predicts for 0.9965",
                "samples at which the mean |ρ| reached 0.9965"],
    )
    ratio = seen[m100.d] / _steps_of(pred[m100.d])
    sec.para(
        "The prediction is the later of the ODE's hitting step and the step where the "
        "constant-step plateau passes 0.9965 — a quasi-static figure that assumes |ρ| "
        "settles on its plateau at once, so it is a lower bound"
        + (f": at d = {m100.d} the runs took {ratio:.2f}× the predicted samples."
           if np.isfinite(ratio) else ".")
    )
    sec.figure(ctx.figures / "e1_headline.png",
               "Every run (thin), the mean, the 10–90 % band and the limiting ODE from the same starts.")
    sec.para(
        f"Largest gap between the mean |ρ| and the limiting ODE over the run: "
        f"{meas['e1_ode_gap']:.3f} (d = {m100.d}), {meas['e1_d1000_ode_gap']:.3f} "
        f"(d = {plan.e1_big_d}); the simulation trails the ODE early on, where the step is "
        f"largest (the O(η²) finite-step correction, E5)."
    )
    sec.para(
        f"Literal spot check: {plan.literal_runs} runs of the literal O(L·d) algorithm, "
        f"{plan.literal_steps} steps: mean |ρ| {lit_abs.mean():.4f} against the chain's "
        f"{chain_abs.mean():.4f} over {chain_abs.size} runs (z = {z:+.2f}). Cost per sample: literal "
        f"{meas['e1_literal_seconds_per_sample'] * 1e3:.2f} ms, chain "
        f"{meas['e1_chain_seconds_per_sample'] * 1e6:.1f} µs."
    )
    return sec, meas


def _first_reach(res: Any, target: float) -> float:
    """First recorded step at which the mean |ρ| over runs is ``>= target`` (NaN if never)."""
    mean = np.abs(res.alignment).mean(axis=0)
    hit = np.flatnonzero(mean >= target)
    return float(res.steps[hit[0]]) if hit.size else float("nan")


def _fmt_seen(v: float, budget: int) -> str:
    return f"not within {budget:,}" if not np.isfinite(v) else f"{v:,.0f}"


def _steps_of(pred: Any) -> float:
    v = getattr(pred, "samples", pred)
    return float(v) if v is not None else float("nan")


def _fmt_steps(pred: Any) -> str:
    v = _steps_of(pred)
    return "not reached" if not np.isfinite(v) else f"{v:,.0f}"
