"""Figures of the theory layer (matplotlib, Agg backend), each written as ``<stem>.png`` (150 dpi)
and ``<stem>.pdf``.

* :func:`plot_landscape` — ``Φ(ρ)`` and the field ``(1 − ρ²)Φ'(ρ)``, exact / Monte Carlo (with
  1.96·se bars) / asymptotic overlaid, fixed points marked (filled: attracting, open: repelling);
* :func:`plot_ode` — ``ρ(t)`` with the hitting times of ``|ρ| = 0.9, 0.99, 0.9965``, optionally a
  simulation overlay (mean with a ± 1.96 se or 10–90 % band) and a step-index axis;
* :func:`plot_sa_diagnostics` — noise budget and windowed martingale maxima.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

from ..plots import use_agg_unless_pyplot_is_loaded

use_agg_unless_pyplot_is_loaded()  # a notebook's inline backend is left alone
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ..config import ModelConfig  # noqa: E402
from ..plots import legend_below, save_figure  # noqa: E402  (save_figure re-exported)
from ..plots import schedule_tex, tex_powers  # noqa: E402
from ..schedules import Schedule  # noqa: E402
from ._checks import (  # noqa: E402
    METHOD, MODEL, N_SAMPLES, OPTIONAL_POSITIVE, OPTIONAL_STEP, RHO0, SEED, TARGETS, Integer,
    OneOf, validated,
)
from ..validation import Sequence as SequenceOf  # noqa: E402
from .fixed_points import Basins, landscape_verdict  # noqa: E402
from .landscape import Landscape, landscape  # noqa: E402
from .ode import DEFAULT_TARGETS, OdeSolution, solve_ode  # noqa: E402
from .tracking import SADiagnostics, tracking  # noqa: E402

__all__ = ["plot_landscape", "plot_ode", "plot_sa_diagnostics", "save_figure"]

_COLORS = {"exact": "#1f4e79", "mc": "#d95f02", "asymptotic": "#7570b3"}


def _title(model: ModelConfig) -> str:
    s = (f"$d$ = {model.d}, $R$ = {model.n_informative}, $N$ = {model.n_nuisance}, "
         f"$\\theta$ = {model.theta:g}, $\\beta$ = {model.beta:g}")
    if model.noise_std != 1.0:
        s += f", $\\sigma$ = {model.noise_std:g}"
    if model.signal_sign == "random":
        s += ", random sign"
    return s


@validated(model=MODEL, methods=SequenceOf(METHOD, min_len=1), n_points=Integer(ge=3),
           n_mc_points=Integer(ge=3), n_samples=N_SAMPLES, seed=SEED,
           fixed_point_method=METHOD)
def plot_landscape(model: ModelConfig, path_stem: str | Path, *,
                   methods: Sequence[str] = ("exact", "mc", "asymptotic"),
                   n_points: int = 201, n_mc_points: int = 21, n_samples: int = 20_000,
                   seed: int = 0, landscapes: Mapping[str, Landscape] | None = None,
                   basins: Basins | None = None,
                   fixed_point_method: str = "exact") -> list[Path]:
    """``Φ(ρ)`` (left) and ``(1 − ρ²)Φ'(ρ)`` (right) on ``[−1, 1]`` for each of ``methods``
    (Monte Carlo on ``n_mc_points`` points with 1.96·se bars), fixed points marked (filled:
    attracting, open: repelling; interior ones labelled), the verdict as a caption.

    landscapes : optional precomputed :class:`Landscape` per method (e.g. the ones a caller
        also tabulates), drawn instead of computing that method on the default grid;
    basins : optional precomputed :func:`landscape_verdict` (else computed with
        ``fixed_point_method``, which also gives ``Φ`` at the markers).

    Returns the PNG and PDF paths. Raises ``ConfigError`` for bad input."""
    landscapes = dict(landscapes or {})
    rho = np.linspace(-1.0, 1.0, n_points)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    for m in methods:
        ls = landscapes.get(m)
        if m == "mc":
            if ls is None:
                r = np.linspace(-1.0, 1.0, n_mc_points)
                ls = landscape(model, r, "mc", n_samples=n_samples, seed=seed)
            r = np.ravel(ls.rho)
            kw = dict(fmt="o", ms=3.5, color=_COLORS["mc"], capsize=2, lw=1, zorder=3,
                      label=f"Monte Carlo ({ls.n_samples:,} draws, ±1.96 se)")
            ax1.errorbar(r, np.ravel(ls.phi), yerr=1.96 * np.ravel(ls.phi_stderr), **kw)
            ax2.errorbar(r, np.ravel(ls.field),
                         yerr=1.96 * (1 - r ** 2) * np.ravel(ls.dphi_stderr), **kw)
        else:
            if ls is None:
                ls = landscape(model, rho, m)
            style = "-" if m == "exact" else "--"
            label = ("exact (finite $R, N$)" if m == "exact"
                     else r"asymptotic $\Phi_\infty$ ($R, N \to \infty$)")
            r = np.ravel(ls.rho)
            ax1.plot(r, np.ravel(ls.phi), style, color=_COLORS.get(m, "k"), lw=1.8, label=label)
            ax2.plot(r, np.ravel(ls.field), style, color=_COLORS.get(m, "k"), lw=1.8,
                     label=label)
    if basins is None:
        basins = landscape_verdict(model, fixed_point_method)
    fp_method = fixed_point_method if fixed_point_method != "mc" else "exact"
    if fixed_point_method == "mc" and "mc" in landscapes:
        ex_phi = np.interp([p.rho for p in basins.fixed_points], np.ravel(landscapes["mc"].rho),
                           np.ravel(landscapes["mc"].phi))
    else:
        ex_phi = np.atleast_1d(landscape(model, np.array([p.rho for p in basins.fixed_points]),
                                         fp_method).phi)
    for p, phi in zip(basins.fixed_points, ex_phi):
        face = "k" if p.stable else "white"
        ax1.plot([p.rho], [phi], "o", ms=8, mfc=face, mec="k", zorder=5)
        ax2.plot([p.rho], [0.0], "o", ms=8, mfc=face, mec="k", zorder=5)
        if abs(p.rho) < 1.0:  # labelled above the frame, clear of the curves and error bars
            for ax in (ax1, ax2):
                ax.axvline(p.rho, color="0.45", ls=":", lw=1, zorder=1)
            ax2.text(p.rho, 1.01, f"$\\rho^* = {p.rho:.3g}$", transform=ax2.get_xaxis_transform(),
                     ha="center", va="bottom", fontsize=10)
    ax1.plot([], [], "o", mfc="k", mec="k", label="attracting fixed point")
    ax1.plot([], [], "o", mfc="white", mec="k", label="repelling fixed point")
    ax2.axhline(0.0, color="0.6", lw=0.8)
    ax1.set(xlabel=r"alignment $\rho = \langle q, \xi\rangle$", ylabel=r"$\Phi(\rho) = J(q)$")
    ax1.set_title("population objective", pad=16)
    ax2.set(xlabel=r"alignment $\rho = \langle q, \xi\rangle$",
            ylabel=r"$d\rho/dt = (1 - \rho^2)\,\Phi'(\rho)$")
    ax2.set_title("mean-field vector field", pad=16)
    for ax in (ax1, ax2):
        ax.set_xlim(-1.03, 1.03)
        ax.grid(alpha=0.3)
    fig.suptitle(_title(model), fontsize=11)
    handles, labels = ax1.get_legend_handles_labels()
    legend_below(fig, handles, labels, ncol=3, fontsize=9.5, note=tex_powers(basins.verdict))
    return save_figure(fig, path_stem)


@validated(model=MODEL, rho0=RHO0, step=OPTIONAL_STEP, t_max=OPTIONAL_POSITIVE, targets=TARGETS,
           band=OneOf("se", "quantile"), T=OPTIONAL_POSITIVE)
def plot_ode(model: ModelConfig, rho0: float, path_stem: str | Path, *,
             step: Schedule | None = None, result=None, t_max: float | None = None,
             targets: Sequence[float] = DEFAULT_TARGETS, band: str = "se",
             T: float | None = None, solution: OdeSolution | None = None,
             effective=None) -> list[Path]:
    """``ρ(t)`` of the limiting ODE from ``rho0`` with its hitting times of ``|ρ| = targets``;
    with ``result`` (a simulation) its mean on the same ODE-time axis with a band — ``band="se"``
    (default): mean ± 1.96 se; ``"quantile"``: the 10–90 % quantiles of the runs — and the ODE
    from the runs' starts unless they all start at ``rho0`` (then it is the ODE curve itself);
    ``T`` is the horizon of the reported max gap (default: the whole simulation). With ``step``
    a secondary axis of step indices. ``solution``: an :class:`OdeSolution` from ``rho0``
    already at hand (drawn as is, with its hitting times) instead of solving again.
    ``effective``: an :class:`~attnsignal.theory.effective.EffectiveDynamics` (same schedule):
    its predicted mean ``|ρ|`` and 10–90 % band of ``|ρ|`` are drawn on the same ODE-time
    axis (``t_k = Σ_{j<k} η_j`` of its records), and then every curve is drawn in ``|ρ|`` (the
    simulation's mean and band of ``|ρ|``, the ODE's ``|ρ(t)|``).
    Returns the paths. Raises ``ConfigError`` for bad input."""
    sol = solution if solution is not None else solve_ode(model, rho0, step=step,
                                                          targets=targets)
    finite = [h for h in sol.hitting_times.values() if np.isfinite(h)]
    if t_max is None:
        if result is not None:
            t_max = float(result.ode_time[-1])
        else:
            t_max = 1.25 * max(finite) if finite else sol.t_end
        t_max = max(t_max, 1e-12)
    t = np.linspace(0.0, t_max, 600)
    fig, ax = plt.subplots(figsize=(11, 4.8))
    absolute = effective is not None
    if absolute:
        ax.plot(t, np.abs(sol(t)), color="#1f4e79", lw=2.2,
                label=f"limiting ODE $|\\rho(t)|$ from $\\rho_0$ = {sol.rho0:.3g}", zorder=4)
    else:
        ax.plot(t, sol(t), color="#1f4e79", lw=2.2,
                label=f"ODE from $\\rho_0$ = {sol.rho0:.3g}", zorder=4)
    if result is not None:
        tr = tracking(result, model, T)
        what = r" $|\rho|$" if tr.mode == "abs" or absolute else r" $\rho$"
        ok = ~np.asarray(result.diverged, dtype=bool)
        same_start = bool(np.allclose(np.asarray(result.alignment)[ok, 0], sol.rho0,
                                      rtol=0.0, atol=1e-12))
        if band == "quantile":
            from ..plots import band as _band

            keep = np.asarray(result.ode_time) <= tr.T + 1e-12 * max(1.0, tr.T)
            vals = np.asarray(result.alignment, dtype=np.float64)[ok][:, keep]
            if tr.mode == "abs" or absolute:
                vals = np.abs(vals)
            _, lo, hi = _band(vals, 10, 90)
            ax.fill_between(tr.t, lo, hi, color="#d95f02", alpha=0.25, lw=0,
                            label="10–90 % of runs")
            lab = f"simulation mean{what} ({tr.runs} runs)"
        else:
            ax.fill_between(tr.t, tr.lower, tr.upper, color="#d95f02", alpha=0.25, lw=0)
            lab = f"simulation mean{what} ± 1.96 se ({tr.runs} runs)"
        sim_mean = tr.sim_mean
        if absolute:
            sim_mean = np.abs(np.asarray(result.alignment, dtype=np.float64)[ok]
                              )[:, :tr.t.size].mean(axis=0)
        elif same_start:
            lab += f"; max gap to the ODE {tr.gap:.3g}"
        ax.plot(tr.t, sim_mean, color="#d95f02", lw=1.4, label=lab)
        if not same_start:
            ax.plot(tr.t, tr.ode, ":", color="k", lw=1.4,
                    label=f"ODE from the runs' starts (max gap {tr.gap:.3g})")
    if absolute:
        te = np.asarray(effective.ode_time)
        show = te <= t_max * (1 + 1e-12)
        q10, q90 = effective.quantile([0.1, 0.9])
        ax.fill_between(te[show], q10[show], q90[show], facecolor="none", edgecolor="#7570b3",
                        hatch="////", lw=0.0, label=r"effective dynamics: 10–90 % of $|\rho|$",
                        zorder=3)
        ax.plot(te[show], effective.mean_abs[show], "--", color="#7570b3", lw=1.8,
                label=r"effective dynamics: mean $|\rho|$", zorder=5)
    colors = ["#66a61e", "#e7298a", "#a6761d", "#666666"]
    for i, (x, h) in enumerate(sol.hitting_times.items()):
        if np.isfinite(h) and h <= t_max:
            c = colors[i % len(colors)]
            txt = f"ODE reaches $|\\rho|$ = {x:g} at $t$ = {h:.3g}"
            if sol.hitting_steps is not None:
                k = sol.hitting_steps[x]
                txt += f" (step {k:,})" if k <= 10 ** 12 else r" (no step: $\sum \eta_k < t$)"
            ax.axvline(h, color=c, ls="--", lw=1, label=txt)
    ax.set(xlabel=r"ODE time $t = \Sigma_{j<k}\,\eta_j$",
           ylabel=r"$|\rho|$" if absolute else r"alignment $\rho$", xlim=(0, t_max))
    head = r"limiting ODE  $d\rho/dt = (1 - \rho^2)\,\Phi'(\rho)$"
    head += r" and effective dynamics (finite $\eta$, $d$)" if absolute else ""
    ax.set_title(head + "\n" + _title(model),
                 pad=30 if step is not None else 6)
    ax.grid(alpha=0.3)
    # beside the axes, never over the curves
    ax.legend(fontsize=9.5, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0)
    if step is not None:
        ticks = np.linspace(0.0, t_max, 6)
        ks = np.atleast_1d(sol.steps_at(ticks))
        top = ax.secondary_xaxis("top")
        top.set_xticks(ticks)
        top.set_xticklabels([f"{int(k):,}" if k <= 10 ** 12 else "never" for k in ks],
                            fontsize=9)  # step_at_time gives 10^12 + 1 for unreachable t
        top.set_xlabel(f"step $k$  ({schedule_tex(step)})", fontsize=9.5)
    fig.tight_layout()
    return save_figure(fig, path_stem)


def plot_sa_diagnostics(diag: SADiagnostics, path_stem: str | Path) -> list[Path]:
    """Left: cumulative and remaining noise budget ``Σ η_k² V_B(ρ_k)`` against the step;
    right: windowed martingale maxima (mean over runs, a band of the 10–90 % quantiles) and the
    predicted scale, against ODE time. Returns the paths."""
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    k = np.maximum(diag.steps, 1)
    spent = np.where(diag.noise_budget > 0, diag.noise_budget, np.nan)
    ax1.plot(k, spent, color="#1f4e79", lw=1.8, label=r"spent  $\Sigma_{k<K}\, \eta_k^2 V_B(\rho_k)$")
    rem = np.where(np.isfinite(diag.noise_remaining), diag.noise_remaining, np.nan)
    ax1.plot(k, rem, color="#d95f02", lw=1.8,
             label=r"remaining  $\Sigma_{k\geq K}\, \eta_k^2 V_B(\rho_k)$")
    ax1.set(xscale="log", yscale="log", xlabel="step $K$", ylabel="noise budget",
            title=f"noise budget ($B$ = {diag.batch}, {diag.update})")
    ax1.grid(alpha=0.3, which="both")
    ax1.legend(fontsize=9.5)
    ok = np.isfinite(diag.window_max_mean)
    W = diag.window_max[:, ok]
    ax2.fill_between(diag.t[ok], np.nanquantile(W, 0.1, axis=0), np.nanquantile(W, 0.9, axis=0),
                     color="#7570b3", alpha=0.25, lw=0, label="10–90 % of runs")
    ax2.plot(diag.t[ok], diag.window_max_mean[ok], color="#7570b3", lw=1.8,
             label=r"mean over runs of $\max |M_{j'} - M_j|$")
    ax2.plot(diag.t[ok], diag.window_sd[ok], "--", color="k", lw=1.2,
             label="predicted sd of the window martingale")
    ax2.set(yscale="log", xlabel="ODE time $t_j$", ylabel="windowed martingale maximum",
            title=f"martingale noise over windows of ODE length $T$ = {diag.T:g}")
    ax2.grid(alpha=0.3, which="both")
    ax2.legend(fontsize=9.5)
    fig.tight_layout()
    return save_figure(fig, path_stem)
