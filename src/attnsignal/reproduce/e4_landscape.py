"""E4 — the landscape: Φ and the vector field, fixed points and basins.

For the E1 and E2 configurations: ``Φ(ρ)`` and ``(1 − ρ²)Φ'(ρ)`` (exact finite-size values),
their fixed points and the verdict. In a configuration with two attracting signs
(d = 1000, R = 10, N = 200, θ = 0.25: ``Φ`` has an interior minimum ``ρ*``) the fraction of
runs that reach +ξ against the ODE's basin prediction (each run's own ``ρ0`` against ``ρ*``,
and the probability of a uniform start).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..config import ModelConfig, RunConfig
from ..plots import _plt, save_figure
from ..report import Section
from .context import Context, result_of, sweep_spec
from .plan import Plan

__all__ = ["run_e4"]


def run_e4(plan: Plan, ctx: Context, models: list[ModelConfig]) -> tuple[Section, dict[str, Any]]:
    from ..theory import landscape, landscape_verdict

    rho = np.linspace(-1, 1, 401)
    verdicts = []
    stable_interior = 0
    monotone = 0
    for m in [*models, plan.e4_design_model]:
        b = landscape_verdict(m)
        verdicts.append((m, b))
        stable_interior += sum(1 for p in b.fixed_points if p.stable and abs(p.rho) < 1)
        if m in models:
            monotone += int(b.monotone and any(p.stable and p.rho == 1.0 for p in b.fixed_points))

    # two-sign configuration: simulate from uniform starts
    m2 = plan.e4_model
    b2 = landscape_verdict(m2)
    stable_interior += sum(1 for p in b2.fixed_points if p.stable and abs(p.rho) < 1)
    every = max(1, plan.e4_steps // 50)
    frame = ctx.sweep("E4", sweep_spec(m2, plan.e4_step, seed=plan.seed + 40, runs=plan.e4_runs,
                                       steps=plan.e4_steps, record_every=every))
    res = result_of(frame, m2, plan.e4_step,
                    RunConfig(steps=plan.e4_steps, runs=plan.e4_runs, engine="chain", record_every=every))
    rho0 = res.alignment[:, 0]
    final = res.final_alignment
    predicted = np.array([b2.attractor_of(float(r)) for r in rho0], dtype=float)
    frac_plus = float((final > 0).mean())
    frac_pred = float(np.nanmean(predicted > 0))
    agree = float(np.mean(np.sign(final) == np.sign(predicted)))
    b_plus = next((b for b in b2.basins if b.attractor == 1.0), None)
    p_uniform = b_plus.probability_uniform_start if b_plus else float("nan")
    n = final.size
    se = np.sqrt(max(p_uniform * (1 - p_uniform), 1e-12) / n)

    plt = _plt()
    show = [verdicts[0][0], plan.e4_design_model, m2]
    fig, axes = plt.subplots(2, len(show), figsize=(4.2 * len(show), 6.4), squeeze=False)
    for j, m in enumerate(show):
        ls = landscape(m, rho, "exact")
        la = landscape(m, rho, "asymptotic")
        b = landscape_verdict(m)
        ax, axf = axes[0, j], axes[1, j]
        ax.plot(rho, ls.phi, color="navy", lw=1.8, label="Φ exact (finite R, N)")
        ax.plot(rho, la.phi, color="tab:orange", ls="--", lw=1.2, label="Φ∞ (large R, N)")
        ax.set_title(f"d={m.d}, R={m.n_informative}, N={m.n_nuisance}, θ={m.theta:g}", fontsize=9)
        ax.set_ylabel("Φ(ρ) = E‖f‖²")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
        fld = (1 - rho**2) * ls.dphi
        axf.plot(rho, fld, color="tab:green", lw=1.6)
        axf.axhline(0, color="k", lw=0.6)
        for p in b.fixed_points:
            axf.plot([p.rho], [0], "o", ms=7, mfc="k" if p.stable else "white", mec="k")
        for bb in b.basins:
            axf.axvspan(bb.lo, bb.hi, color="tab:blue" if bb.attractor > 0 else "tab:red", alpha=0.08)
        axf.set_xlabel("ρ")
        axf.set_ylabel("(1 − ρ²) Φ'(ρ)")
        axf.grid(alpha=0.3)
        axf.set_title(_wrap(b.verdict), fontsize=7)
    fig.suptitle("E4 — landscape and vector field (● attracting, ○ repelling; shaded: basins)", fontsize=10)
    fig.tight_layout()
    save_figure(fig, ctx.figures / "e4_landscape")

    # the basin boundary: runs from fixed starts around the interior minimum ρ*
    interior = [p.rho for p in b2.fixed_points if abs(p.rho) < 1 and not p.stable]
    boundary_rows = []
    if interior:
        rstar = interior[0]
        offsets = (-0.12, -0.06, -0.03, 0.0, 0.03, 0.06, 0.12)
        starts = [round(float(np.clip(rstar + o, -0.999, 0.999)), 4) for o in offsets]
        fb = ctx.sweep("E4_boundary", sweep_spec(
            m2, plan.e4_step, seed=plan.seed + 41, runs=plan.e4_boundary_runs,
            steps=plan.e4_steps, record_every=plan.e4_steps, initial_alignment=starts[0],
            grid={"sweep.initial_alignment": starts}))
        last = fb[fb["step"] == fb["step"].max()]
        for r0 in starts:
            fin = last[last["sweep.initial_alignment"] == r0]["alignment"].to_numpy()
            # the start rounded onto ρ* itself is the boundary (a fixed point), not a basin
            pred = 0.0 if abs(r0 - rstar) <= 1e-4 else b2.attractor_of(r0)
            boundary_rows.append((r0, float((fin > 0).mean()), pred, fin.size))
        fig2, axb = plt.subplots(figsize=(6.2, 3.8))
        xs = [r[0] for r in boundary_rows]
        fr = np.array([r[1] for r in boundary_rows])
        nn = np.array([r[3] for r in boundary_rows])
        axb.errorbar(xs, fr, yerr=1.96 * np.sqrt(np.maximum(fr * (1 - fr), 0.25 / nn) / nn),
                     fmt="o", color="navy", label=f"simulation ({plan.e4_boundary_runs} runs per start)")
        grid_r = np.linspace(min(xs) - 0.05, max(xs) + 0.05, 400)
        axb.plot(grid_r, (grid_r > rstar).astype(float), color="tab:red", lw=1.5,
                 label=f"ODE basins (ρ* = {rstar:.3f})")
        axb.set_xlabel("initial alignment ρ0")
        axb.set_ylabel("fraction of runs reaching +ξ")
        axb.set_ylim(-0.05, 1.05)
        axb.grid(alpha=0.3)
        axb.legend(fontsize=8, loc="upper left")
        axb.set_title(f"E4 — two attracting signs: d={m2.d}, R={m2.n_informative}, "
                      f"N={m2.n_nuisance}, θ={m2.theta:g}", fontsize=9)
        fig2.tight_layout()
        save_figure(fig2, ctx.figures / "e4_basins")

    sec = Section("E4 — landscape, fixed points and basins")
    rows = []
    for m, b in verdicts:
        rows.append([m.d, m.n_informative, m.n_nuisance, f"{m.theta:g}", b.verdict])
    rows.append([m2.d, m2.n_informative, m2.n_nuisance, f"{m2.theta:g}", b2.verdict])
    sec.table(rows, header=["d", "R", "N", "θ", "fixed points and basins (exact Φ)"])
    sec.para(
        f"Two attracting signs (d = {m2.d}, R = {m2.n_informative}, N = {m2.n_nuisance}, "
        f"θ = {m2.theta:g}): {n} runs from uniform starts, {plan.e4_steps} steps. Fraction at +ξ: "
        f"**{frac_plus:.3f}**; the ODE basins predict {frac_pred:.3f} from the runs' own starts "
        f"(a uniform start lands in the basin of +ξ with probability {p_uniform:.3f} ± {se:.3f}); "
        f"the sign of {agree:.1%} of the runs is the one their start predicts."
    )
    sec.figure(ctx.figures / "e4_landscape.png", "Φ (top) and the vector field (bottom) with fixed points and basins.")
    if boundary_rows:
        sec.para(
            "From fixed starts around the interior minimum the ODE predicts a sharp boundary at ρ*. "
            + _boundary_sentence(boundary_rows))
        sec.table([[f"{r0:+.4f}", f"{fr:.3f}", _basin_label(pred), n]
                   for r0, fr, pred, n in boundary_rows],
                  header=["ρ0", "fraction at +ξ", "ODE basin", "runs"])
        sec.figure(ctx.figures / "e4_basins.png",
                   "Fraction of runs reaching +ξ against the start, and the ODE's basin boundary.")
    meas = {
        "e4_stable_interior": stable_interior,
        "e4_monotone_configs": monotone,
        "e4_configs": len(models),
        "e4_fraction_plus": frac_plus,
        "e4_fraction_predicted": frac_pred,
        "e4_p_uniform": p_uniform,
        "e4_sign_agreement": agree,
        "e4_boundary": [list(r) for r in boundary_rows],
    }
    return sec, meas


def _wrap(text: str, width: int = 60) -> str:
    words, lines, cur = text.split(), [], ""
    for w in words:
        if len(cur) + len(w) + 1 > width:
            lines.append(cur)
            cur = w
        else:
            cur = f"{cur} {w}".strip()
    lines.append(cur)
    return "\n".join(lines)


def _basin_label(attractor: float | None) -> str:
    if not attractor:
        return "ρ* (boundary)"
    return "+ξ" if attractor > 0 else "−ξ"


def _boundary_sentence(rows: list[tuple[float, float, float | None, int]]) -> str:
    """How many starts on the wrong side of ρ* ended at the sign the ODE does not predict."""
    wrong = [(r0, fr) for r0, fr, pred, _ in rows
             if pred and abs(fr - (1.0 if pred > 0 else 0.0)) > 0.0]
    if not wrong:
        return ("Every run from a start off ρ* reached the sign of its ODE basin; from ρ* itself "
                "the noise decides:")
    worst = min(wrong, key=lambda w: abs(w[1] - 0.5))
    return (f"{len(wrong)} of the starts off ρ* had runs ending at the other sign (the gradient "
            f"noise blurs the boundary; closest to even: ρ0 = {worst[0]:+.4f}, "
            f"{worst[1]:.0%} at +ξ):")
