"""E2 — robustness grid: θ ∈ {0.25, 0.5, 1} × N/R ∈ {1, 5, 10, 20}.

Per cell: mean ± sd of the final |ρ| over the runs and the number of steps to reach
|ρ| ≥ 0.99 (first record at or above it; the mean over runs that reach it, and how many do).
A table and a heat map.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..config import ModelConfig
from ..plots import _plt, save_figure
from ..report import Section
from .context import Context, sweep_spec
from .plan import Plan

__all__ = ["run_e2", "steps_to_reach"]


def steps_to_reach(frame: pd.DataFrame, level: float = 0.99) -> pd.Series:
    """Per run: the first recorded step with |ρ| ≥ level (NaN if never)."""
    hit = frame[frame["abs_alignment"] >= level]
    first = hit.groupby("run")["step"].min()
    return first.reindex(np.unique(frame["run"]))


def run_e2(plan: Plan, ctx: Context) -> tuple[Section, dict[str, Any], list[ModelConfig]]:
    base = ModelConfig(d=plan.e2_d, n_informative=plan.e2_R, n_nuisance=plan.e2_R,
                       theta=plan.e2_thetas[0])
    every = max(1, plan.e2_steps // 100)
    spec = sweep_spec(base, plan.e2_step, seed=plan.seed + 20, runs=plan.e2_runs,
                      steps=plan.e2_steps, record_every=every,
                      grid={"model.theta": list(plan.e2_thetas),
                            "model.n_nuisance": [r * plan.e2_R for r in plan.e2_ratios]})
    frame = ctx.sweep("E2", spec)
    rows = []
    models = []
    last = frame["step"].max()
    for th in plan.e2_thetas:
        for ratio in plan.e2_ratios:
            sub = frame[(frame["model.theta"] == th) & (frame["model.n_nuisance"] == ratio * plan.e2_R)]
            models.append(base.replace(theta=th, n_nuisance=ratio * plan.e2_R))
            fin = sub[sub["step"] == last]["abs_alignment"].to_numpy()
            hits = steps_to_reach(sub)
            rows.append({
                "theta": th, "N/R": ratio, "N": ratio * plan.e2_R,
                "mean_final_abs": float(fin.mean()), "sd_final_abs": float(fin.std(ddof=1)),
                "min_final_abs": float(fin.min()),
                "steps_to_0.99": float(hits.mean()) if hits.notna().any() else float("nan"),
                "reached_0.99": f"{int(hits.notna().sum())}/{fin.size}",
            })
    table = pd.DataFrame(rows)

    plt = _plt()
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    for ax, col, title, fmt, cmap in (
        (axes[0], "mean_final_abs", "mean final |ρ|", "{:.4f}", "viridis"),
        (axes[1], "steps_to_0.99", "mean steps to |ρ| ≥ 0.99", "{:,.0f}", "magma_r"),
    ):
        grid = table.pivot(index="theta", columns="N/R", values=col)
        im = ax.imshow(grid.to_numpy(), cmap=cmap, aspect="auto", origin="lower")
        ax.set_xticks(range(len(grid.columns)), [str(c) for c in grid.columns])
        ax.set_yticks(range(len(grid.index)), [f"{t:g}" for t in grid.index])
        ax.set_xlabel("N/R (nuisance per informative token)")
        ax.set_ylabel("θ")
        ax.set_title(title)
        vals = grid.to_numpy()
        finite = vals[np.isfinite(vals)]
        if not finite.size:
            ax.text(0.5, 0.5, "not reached within the budget", transform=ax.transAxes,
                    ha="center", va="center", fontsize=9)
        mid = np.median(finite) if finite.size else 0
        for i in range(vals.shape[0]):
            for j in range(vals.shape[1]):
                v = vals[i, j]
                txt = "—" if not np.isfinite(v) else fmt.format(v)
                dark = (v < mid) if cmap == "viridis" else (v > mid)
                ax.text(j, i, txt, ha="center", va="center", fontsize=8,
                        color="white" if dark else "black")
        fig.colorbar(im, ax=ax, shrink=0.85)
    fig.suptitle(f"E2 — robustness: R = {plan.e2_R}, d = {plan.e2_d}, {plan.e2_runs} runs per cell, "
                 f"{plan.e2_steps} samples per run", fontsize=10)
    fig.tight_layout()
    save_figure(fig, ctx.figures / "e2_robustness")

    weak = table[(table["theta"] == min(plan.e2_thetas)) & (table["N/R"] == max(plan.e2_ratios))]
    meas = {
        "e2_weak_mean_final_abs": float(weak["mean_final_abs"].iloc[0]),
        "e2_min_mean_final_abs": float(table["mean_final_abs"].min()),
    }
    sec = Section("E2 — robustness to the signal strength and to nuisance tokens")
    sec.para(f"R = {plan.e2_R}, d = {plan.e2_d}, {plan.e2_runs} runs per cell, schedule "
             f"{plan.e2_step.describe()}, {plan.e2_steps} samples per run, chain engine.")
    show = table.copy()
    show["final |ρ|"] = [f"{a:.4f} ± {b:.4f}" for a, b in zip(table["mean_final_abs"], table["sd_final_abs"])]
    show["steps to 0.99"] = ["—" if not np.isfinite(v) else f"{v:,.0f}" for v in table["steps_to_0.99"]]
    sec.table(show[["theta", "N/R", "N", "final |ρ|", "min_final_abs", "steps to 0.99", "reached_0.99"]]
              .rename(columns={"min_final_abs": "min final |ρ|", "reached_0.99": "runs reaching 0.99"}))
    sec.para("Steps to 0.99: the first recorded step with |ρ| ≥ 0.99, averaged over the runs "
             "that reached it (the last column); — where none did within the budget.")
    sec.figure(ctx.figures / "e2_robustness.png", "Mean final |ρ| and steps to 0.99 over the grid.")
    return sec, meas, models
