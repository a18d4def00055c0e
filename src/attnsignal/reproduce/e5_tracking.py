"""E5 — the stochastic recursion tracks the limiting ODE (asymptotic pseudo-trajectory).

Runs from a fixed ``ρ0`` with decreasing Robbins–Monro schedules ``η_k = η0 (1 + k/k0)^(−p)``
for several ``η0``; on the ODE time axis the mean alignment is compared with the ODE solution
over ``[0, T]``. The largest gap must shrink as ``η0`` decreases. The stochastic-approximation
diagnostics (noise budget ``Σ η_k² V(ρ_k)``, windowed martingale sums) are drawn for the
largest ``η0``, whose runs are continued to ODE time ``e5_sa_T``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..config import RunConfig, StepSize
from ..plots import _plt, save_figure
from ..report import Section
from ..schedules import step_at_time
from .context import Context, result_of, sweep_spec
from .plan import Plan

__all__ = ["run_e5"]

def run_e5(plan: Plan, ctx: Context) -> tuple[Section, dict[str, Any]]:
    from ..theory import sa_diagnostics, tracking
    from ..theory.plots import plot_sa_diagnostics

    m = plan.e5_model
    steps_needed = {
        eta0: int(step_at_time(StepSize(eta0, k0=plan.e5_k0, power=plan.e5_power), plan.e5_T)) + 1
        for eta0 in plan.e5_eta0s
    }
    rows, tracks = [], {}
    for i, eta0 in enumerate(plan.e5_eta0s):
        # every point its own sweep: records dense enough (about 100 over [0, T]) to catch the
        # early transient, where the gap is largest
        st = StepSize(eta0, k0=plan.e5_k0, power=plan.e5_power)
        K = steps_needed[eta0]
        every = max(1, K // 100)
        run = RunConfig(steps=K, runs=plan.e5_runs, engine="chain", record_every=every,
                        initial_alignment=plan.e5_rho0)
        frame = ctx.sweep(f"E5_eta{i}", sweep_spec(
            m, st, seed=plan.seed + 50, runs=plan.e5_runs, steps=K, record_every=every,
            initial_alignment=plan.e5_rho0), small=True)
        res = result_of(frame, m, st, run)
        tr = tracking(res, m, T=plan.e5_T)
        tracks[eta0] = (res, tr)
        rows.append([f"{eta0:g}", K, f"{tr.gap:.4f}", f"{tr.gap_time:.2f}",
                     f"{tr.excess:.4f}", f"{tr.fraction_inside:.0%}"])
    gaps = [tracks[e][1].gap for e in plan.e5_eta0s]
    shrinking = all(a > b for a, b in zip(gaps, gaps[1:]))

    plt = _plt()
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11.5, 4.2))
    colors = plt.cm.viridis(np.linspace(0, 0.85, len(plan.e5_eta0s)))
    for c, eta0 in zip(colors, plan.e5_eta0s):
        res, tr = tracks[eta0]
        ax1.fill_between(tr.t, tr.lower, tr.upper, color=c, alpha=0.25)
        ax1.plot(tr.t, tr.sim_mean, color=c, lw=1.4, label=f"η0 = {eta0:g} (gap {tr.gap:.3f})")
    ax1.plot(tr.t, tr.ode, color="k", ls="--", lw=1.6, label="limiting ODE")
    ax1.set_xlabel("ODE time t")
    ax1.set_ylabel("mean ρ (band: ± 1.96 se)")
    ax1.set_title(f"d={m.d}, R={m.n_informative}, N={m.n_nuisance}, θ={m.theta:g}, ρ0={plan.e5_rho0}")
    ax1.grid(alpha=0.3)
    ax1.legend(fontsize=8)
    ax2.loglog(plan.e5_eta0s, gaps, "o-", color="navy", label="largest gap on [0, T]")
    ax2.loglog(plan.e5_eta0s, gaps[0] * np.asarray(plan.e5_eta0s) / plan.e5_eta0s[0], ":",
               color="gray", label="∝ η0")
    ax2.set_xlabel("η0")
    ax2.set_ylabel("sup |mean ρ − ρ_ODE|")
    ax2.set_title(f"tracking error, T = {plan.e5_T:g}")
    ax2.grid(alpha=0.3, which="both")
    ax2.legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, ctx.figures / "e5_tracking")

    # SA diagnostics: the largest η0 continued to ODE time e5_sa_T
    largest = plan.e5_eta0s[0]
    st = StepSize(largest, k0=plan.e5_k0, power=plan.e5_power)
    K = int(step_at_time(st, plan.e5_sa_T)) + 1
    every = max(1, K // 400)
    sa_runs = min(plan.e5_runs, 100)
    frame = ctx.sweep("E5_sa", sweep_spec(
        m, st, seed=plan.seed + 51, runs=sa_runs, steps=K, record_every=every,
        initial_alignment=plan.e5_rho0), small=True)
    long_run = result_of(frame, m, st, RunConfig(steps=K, runs=sa_runs, engine="chain",
                                                record_every=every,
                                                initial_alignment=plan.e5_rho0))
    diag = sa_diagnostics(long_run, m, T=1.0)
    plot_sa_diagnostics(diag, ctx.figures / "e5_sa_diagnostics")

    sec = Section("E5 — the recursion tracks the limiting ODE")
    sec.para(
        f"{plan.e5_runs} runs per schedule from ρ0 = {plan.e5_rho0}, η_k = η0 (1 + k/{plan.e5_k0:g})^(−{plan.e5_power:g}), "
        f"compared with dρ/dt = (1 − ρ²)Φ'(ρ) (exact Φ) over t ∈ [0, {plan.e5_T:g}]. The largest gap "
        + ("**shrinks** as η0 decreases." if shrinking else "does **not** shrink monotonically.")
    )
    sec.table(rows, header=["η0", "steps to T", "largest gap", "at t", "outside the band by",
                            "records with the ODE inside the band"])
    per_eta = ", ".join(f"{g / e:.2f}" for g, e in zip(gaps, plan.e5_eta0s))
    sec.para(
        f"Gap/η0 = {per_eta}: the gap is the O(η) bias of the finite step, not "
        f"Monte-Carlo noise — halving η0 halves it — so with {plan.e5_runs} runs the ODE lies "
        "outside the ± 1.96 se band of the mean even as the gap goes to zero."
    )
    sec.figure(ctx.figures / "e5_tracking.png", "Mean alignment against the ODE; the gap against η0.")
    sec.figure(ctx.figures / "e5_sa_diagnostics.png",
               f"Stochastic-approximation diagnostics at η0 = {largest:g} over t ∈ [0, "
               f"{plan.e5_sa_T:g}]: the noise budget Σ η_k² V(ρ_k) (finite under Robbins–Monro) "
               "and the largest martingale sum over windows of ODE length 1, which shrinks.")
    w = np.asarray(diag.window_max_mean)
    ok = np.isfinite(w)
    w_early, w_late = float(w[ok][0]), float(w[ok][-1])
    sec.para(
        f"Martingale window maxima at η0 = {largest:g} (mean over runs, windows of ODE length 1): "
        f"{w_early:.4f} for the first window, {w_late:.4f} for the last (t ≈ "
        f"{float(diag.t[ok][-1]):.1f}); noise budget at the end of the run "
        f"{float(diag.noise_budget[-1]):.3g}, remaining {float(diag.noise_remaining[-1]):.3g}."
    )
    meas = {"e5_gaps": gaps, "e5_gap_shrinks": bool(shrinking), "e5_smallest_gap": gaps[-1],
            "e5_window_first": w_early, "e5_window_last": w_late}
    return sec, meas
