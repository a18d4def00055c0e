"""Figures of the theory layer (matplotlib, Agg backend), each written as ``<stem>.png`` (150 dpi)
and ``<stem>.pdf``.

* :func:`plot_landscape` — ``Φ(ρ)`` and the field ``(1 − ρ²)Φ'(ρ)``, exact / Monte Carlo (with
  1.96·se bars) / asymptotic overlaid, fixed points marked (filled: attracting, open: repelling);
* :func:`plot_ode` — ``ρ(t)`` with the hitting times of ``|ρ| = 0.9, 0.99, 0.9965``, optionally a
  simulation overlay (mean ± 1.96 se) and a step-index axis;
* :func:`plot_sa_diagnostics` — noise budget and windowed martingale maxima.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ..config import ModelConfig, StepSize  # noqa: E402
from ._checks import check_model  # noqa: E402
from .fixed_points import landscape_verdict  # noqa: E402
from .landscape import landscape  # noqa: E402
from .ode import DEFAULT_TARGETS, solve_ode  # noqa: E402
from .tracking import SADiagnostics, tracking  # noqa: E402

__all__ = ["plot_landscape", "plot_ode", "plot_sa_diagnostics", "save_figure"]

_COLORS = {"exact": "#1f4e79", "mc": "#d95f02", "asymptotic": "#7570b3"}


def save_figure(fig: plt.Figure, path_stem: str | Path) -> list[Path]:
    """Write ``fig`` to ``<stem>.png`` and ``<stem>.pdf`` (parents created), close it, and return
    the two paths."""
    stem = Path(path_stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    out = [stem.with_name(stem.name + ".png"), stem.with_name(stem.name + ".pdf")]
    fig.savefig(out[0], dpi=150, bbox_inches="tight")
    fig.savefig(out[1], bbox_inches="tight")
    plt.close(fig)
    return out


def _title(model: ModelConfig) -> str:
    s = (f"d={model.d}, R={model.n_informative}, N={model.n_nuisance}, θ={model.theta:g}, "
         f"β={model.beta:g}")
    if model.noise_std != 1.0:
        s += f", σ={model.noise_std:g}"
    if model.signal_sign == "random":
        s += ", random sign"
    return s


def plot_landscape(model: ModelConfig, path_stem: str | Path, *,
                   methods: Sequence[str] = ("exact", "mc", "asymptotic"),
                   n_points: int = 201, n_mc_points: int = 21, n_samples: int = 20_000,
                   seed: int = 0) -> list[Path]:
    """``Φ(ρ)`` (left) and ``(1 − ρ²)Φ'(ρ)`` (right) on ``[−1, 1]`` for each of ``methods``
    (Monte Carlo on ``n_mc_points`` points with 1.96·se bars), exact fixed points marked, the
    verdict as a caption. Returns the PNG and PDF paths."""
    check_model(model)
    rho = np.linspace(-1.0, 1.0, n_points)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    for m in methods:
        if m == "mc":
            r = np.linspace(-1.0, 1.0, n_mc_points)
            ls = landscape(model, r, "mc", n_samples=n_samples, seed=seed)
            kw = dict(fmt="o", ms=3.5, color=_COLORS["mc"], capsize=2, lw=1,
                      label=f"Monte Carlo ({n_samples:,} draws, ±1.96 se)")
            ax1.errorbar(r, ls.phi, yerr=1.96 * ls.phi_stderr, **kw)
            ax2.errorbar(r, ls.field, yerr=1.96 * (1 - r ** 2) * ls.dphi_stderr, **kw)
        else:
            ls = landscape(model, rho, m)
            style = "-" if m == "exact" else "--"
            label = "exact (finite R, N)" if m == "exact" else "asymptotic Φ∞"
            ax1.plot(rho, ls.phi, style, color=_COLORS.get(m, "k"), lw=1.8, label=label)
            ax2.plot(rho, ls.field, style, color=_COLORS.get(m, "k"), lw=1.8, label=label)
    basins = landscape_verdict(model)
    ex = landscape(model, np.array([p.rho for p in basins.fixed_points]))
    for p, phi in zip(basins.fixed_points, np.atleast_1d(ex.phi)):
        face = "k" if p.stable else "white"
        ax1.plot([p.rho], [phi], "o", ms=8, mfc=face, mec="k", zorder=5)
        ax2.plot([p.rho], [0.0], "o", ms=8, mfc=face, mec="k", zorder=5)
    ax1.plot([], [], "o", mfc="k", mec="k", label="attracting fixed point")
    ax1.plot([], [], "o", mfc="white", mec="k", label="repelling fixed point")
    ax2.axhline(0.0, color="0.6", lw=0.8)
    ax1.set(xlabel="alignment ρ = ⟨q, ξ⟩", ylabel="Φ(ρ) = J(q)", title="population objective")
    ax2.set(xlabel="alignment ρ = ⟨q, ξ⟩", ylabel="dρ/dt = (1 − ρ²) Φ'(ρ)",
            title="mean-field vector field")
    for ax in (ax1, ax2):
        ax.set_xlim(-1.03, 1.03)
        ax.grid(alpha=0.3)
    ax1.legend(fontsize=8, loc="best")
    fig.suptitle(_title(model), fontsize=11)
    fig.text(0.5, -0.02, basins.verdict, ha="center", fontsize=9, style="italic")
    fig.tight_layout()
    return save_figure(fig, path_stem)


def plot_ode(model: ModelConfig, rho0: float, path_stem: str | Path, *,
             step: StepSize | None = None, result=None, t_max: float | None = None,
             targets: Sequence[float] = DEFAULT_TARGETS) -> list[Path]:
    """``ρ(t)`` of the limiting ODE from ``rho0`` with its hitting times of ``|ρ| = targets``;
    with ``result`` (a simulation) its mean ± 1.96 se on the same ODE-time axis (and the ODE
    from the runs' starts); with ``step`` a secondary axis of step indices. Returns the paths."""
    check_model(model)
    sol = solve_ode(model, rho0, step=step, targets=targets)
    finite = [h for h in sol.hitting_times.values() if np.isfinite(h)]
    if t_max is None:
        if result is not None:
            t_max = float(result.ode_time[-1])
        else:
            t_max = 1.25 * max(finite) if finite else sol.t_end
        t_max = max(t_max, 1e-12)
    t = np.linspace(0.0, t_max, 600)
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    ax.plot(t, sol(t), color="#1f4e79", lw=2.2, label=f"ODE from ρ0 = {sol.rho0:.3g}")
    if result is not None:
        tr = tracking(result, model)
        lab = "simulation mean" + (" |ρ|" if tr.mode == "abs" else " ρ")
        ax.fill_between(tr.t, tr.lower, tr.upper, color="#d95f02", alpha=0.25, lw=0)
        ax.plot(tr.t, tr.sim_mean, color="#d95f02", lw=1.4,
                label=f"{lab} ± 1.96 se ({tr.runs} runs)")
        ax.plot(tr.t, tr.ode, ":", color="k", lw=1.4,
                label=f"ODE from the runs' starts (max gap {tr.gap:.3g})")
    colors = ["#66a61e", "#e7298a", "#a6761d", "#666666"]
    for i, (x, h) in enumerate(sol.hitting_times.items()):
        if np.isfinite(h) and h <= t_max:
            c = colors[i % len(colors)]
            txt = f"|ρ| = {x:g} at t = {h:.3g}"
            if sol.hitting_steps is not None:
                txt += f" (step {sol.hitting_steps[x]:,})"
            ax.axvline(h, color=c, ls="--", lw=1, label=txt)
    ax.set(xlabel="ODE time t = Σ η_k", ylabel="alignment ρ", xlim=(0, t_max))
    ax.set_title("limiting ODE  dρ/dt = (1 − ρ²) Φ'(ρ)\n" + _title(model),
                 pad=30 if step is not None else 6)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="best")
    if step is not None:
        ticks = np.linspace(0.0, t_max, 6)
        ks = np.atleast_1d(sol.steps_at(ticks))
        top = ax.secondary_xaxis("top")
        top.set_xticks(ticks)
        top.set_xticklabels([f"{int(k):,}" for k in ks], fontsize=8)
        top.set_xlabel(f"step k  ({step.describe()})", fontsize=8)
    fig.tight_layout()
    return save_figure(fig, path_stem)


def plot_sa_diagnostics(diag: SADiagnostics, path_stem: str | Path) -> list[Path]:
    """Left: cumulative and remaining noise budget ``Σ η_k² V_B(ρ_k)`` against the step;
    right: windowed martingale maxima (mean over runs, a band of the 10–90 % quantiles) and the
    predicted scale, against ODE time. Returns the paths."""
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    k = np.maximum(diag.steps, 1)
    spent = np.where(diag.noise_budget > 0, diag.noise_budget, np.nan)
    ax1.plot(k, spent, color="#1f4e79", lw=1.8, label="spent  Σ_{k<K} η_k² V_B(ρ_k)")
    rem = np.where(np.isfinite(diag.noise_remaining), diag.noise_remaining, np.nan)
    ax1.plot(k, rem, color="#d95f02", lw=1.8, label="remaining  Σ_{k≥K} η_k² V_B(ρ_k)")
    ax1.set(xscale="log", yscale="log", xlabel="step K", ylabel="noise budget",
            title=f"noise budget (B = {diag.batch}, {diag.update})")
    ax1.grid(alpha=0.3, which="both")
    ax1.legend(fontsize=8)
    ok = np.isfinite(diag.window_max_mean)
    W = diag.window_max[:, ok]
    ax2.fill_between(diag.t[ok], np.nanquantile(W, 0.1, axis=0), np.nanquantile(W, 0.9, axis=0),
                     color="#7570b3", alpha=0.25, lw=0, label="10–90 % of runs")
    ax2.plot(diag.t[ok], diag.window_max_mean[ok], color="#7570b3", lw=1.8,
             label="mean over runs of max |M_j' − M_j|")
    ax2.plot(diag.t[ok], diag.window_sd[ok], "--", color="k", lw=1.2,
             label="predicted sd of the window martingale")
    ax2.set(yscale="log", xlabel="ODE time t_j", ylabel="windowed martingale maximum",
            title=f"martingale noise over windows of ODE length T = {diag.T:g}")
    ax2.grid(alpha=0.3, which="both")
    ax2.legend(fontsize=8)
    fig.tight_layout()
    return save_figure(fig, path_stem)
