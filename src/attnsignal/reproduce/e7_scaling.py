"""E7 — sample complexity over the dimension: the law of ``docs/scaling.md`` against the chain.

On the proportional path (``R = d/5``, ``N = 4d/5``, so ``L = d``; θ = 1, β = 0.5) with the
constant step ``η = c·s(d, L)`` of :func:`attnsignal.theory.scaling.scaling_law`, the samples
``n(d)`` at which the mean ``|ρ|`` of runs from a uniform start first reaches ``target`` are
predicted by the law and measured with the chain engine
(:func:`attnsignal.measure.compare_law`: the first step at which the runs' mean reaches the
target, with a 95 % bootstrap interval over the runs), for both signal signs, at
``d = 10², …, 10⁵`` (quick: to ``10⁴``). The chain's cost per update is ``O(L)`` whatever
``d``, so the largest dimension costs what its ``L`` tokens cost.

Check of this implementation (not a claim of the paper): at ``d ≥ check_from`` the predicted
and measured samples agree within ``tolerance`` (relative) plus ``z`` standard errors of the
measurement (its bootstrap interval's half-width / 1.96): with 64 runs the random sign's
crossing is itself known to only about ± 5 %, so a bare 5 % would fail on the runs' noise
about as often as on the law's error. Each point is one task of the shared pool (the law at
that ``d`` and its runs, ``horizon ×`` the predicted samples), its row stored under
``OUT/data/E7/`` so that a resumed reproduction on the same code does not run it again
(:meth:`~attnsignal.reproduce.context.ExperimentContext.compute_stored`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..claims import ClaimResult, passed
from ..config import ModelConfig
from ..plots import _plt, legend_below, save_figure
from ..report import Section
from ..validation import Integer, Real, Sequence
from .context import ExperimentContext, warning_texts
from .experiment import MODEL, Experiment, Measurements, PlanSection
from .scheduler import CHAIN_UPDATE_OVERHEAD

__all__ = ["E7Plan", "E7Measurements", "E7Scaling", "E7", "law_point"]

SIGNS = ("fixed", "random")


@dataclass(frozen=True)
class E7Plan(PlanSection):
    """E7's path, steps and budget: the proportional path's reference model (``model``: its
    ``R/d`` and ``N/d`` are kept), the step constants (``c_fixed``, ``c_random``, the values
    ``docs/scaling.md`` verifies), the dimensions, runs per point, the horizon (simulated
    samples over predicted) and the check. Full: ``d = 10², …, 10⁵``, 64 runs; quick: to
    ``10⁴``, 32 runs."""

    model: ModelConfig = ModelConfig(d=1000, n_informative=200, n_nuisance=800, theta=1.0,
                                     beta=0.5)
    c_fixed: float = 0.05
    c_random: float = 0.1
    target: float = 0.5
    dims: tuple[int, ...] = (100, 1000, 10_000, 100_000)
    runs: int = 64
    #: simulate this many times the predicted samples (the crossing is measured if the law is
    #: within 50 % of it)
    horizon: float = 1.5
    #: draws of the law's moments (per L)
    law_samples: int = 4000
    check_from: int = 10_000
    tolerance: float = 0.05
    z: float = 2.0

    _table = {
        "model": MODEL, "c_fixed": Real(gt=0.0), "c_random": Real(gt=0.0),
        "target": Real(gt=0.0, lt=1.0), "dims": Sequence(Integer(ge=4), min_len=1),
        "runs": Integer(ge=2), "horizon": Real(gt=1.0, le=10.0),
        "law_samples": Integer(ge=100), "check_from": Integer(ge=4),
        "tolerance": Real(ge=0.0, le=1.0), "z": Real(ge=0.0),
    }

    @classmethod
    def quick(cls) -> "E7Plan":
        return cls(dims=(100, 1000, 10_000), runs=32)

    def c(self, sign: str) -> float:
        return self.c_fixed if sign == "fixed" else self.c_random


def law_point(model: ModelConfig, *, c: float, target: float, law_samples: int, law_seed: int,
              d: int, runs: int, horizon: float, seed: Any) -> dict[str, Any]:
    """The law at ``d`` on ``model``'s proportional path and its measurement with ``runs``
    chain runs (one row of :func:`attnsignal.measure.compare_law`, with ``"warnings"``: the
    text of the warnings the law or the runs raised, each once)."""
    from ..measure import compare_law
    from ..theory.scaling import scaling_law

    with warning_texts() as said:
        law = scaling_law(model, target=target, c=c, path="proportional",
                          n_samples=law_samples, seed=law_seed)
        row = compare_law(law, [d], runs=runs, seed=seed, horizon=horizon)[0]
    row["warnings"] = said
    return row


def _cost(p: E7Plan, d: int, sign: str) -> float:
    """Pool units (a chain sample of L tokens costs L + overhead): runs × horizon × the
    samples the law predicts on this path (≈ 160 fixed, ≈ 700 random at these c) × (L + 32)."""
    L = max(2, round(d * p.model.n_tokens / p.model.d))
    n = 160 if sign == "fixed" else 700
    return float(p.runs * p.horizon * n * (L + CHAIN_UPDATE_OVERHEAD))


@dataclass(frozen=True)
class E7Measurements(Measurements):
    seed: int
    #: per sign, per dimension (``p.dims`` order): the law's samples, its Monte-Carlo error,
    #: the measured samples (NaN: not reached within the horizon) and its 95 % interval,
    #: the time scale τ(d) and the step η(d)
    predicted: dict[str, list[float]]
    predicted_error: dict[str, list[float]]
    measured: dict[str, list[float]]
    measured_lo: dict[str, list[float]]
    measured_hi: dict[str, list[float]]
    tau: dict[str, list[float]]
    eta: dict[str, list[float]]
    #: per sign, per dimension: |predicted/measured − 1|, and the excess of |predicted −
    #: measured| over tolerance·measured + z·SE (≤ 0: within)
    relative_error: dict[str, list[float]]
    excess: dict[str, list[float]]
    warnings: list[str]


def _se(lo: float, hi: float) -> float:
    return (hi - lo) / (2 * 1.96) if math.isfinite(lo) and math.isfinite(hi) else math.nan


class E7Scaling(Experiment[E7Plan, E7Measurements]):
    name = "E7"
    title = "E7 — sample complexity over the dimension (measured, not a claim of the paper)"
    Plan = E7Plan

    def run(self, p: E7Plan, ctx: ExperimentContext) -> E7Measurements:
        pending = {}
        for sign in SIGNS:
            m = p.model.replace(signal_sign=sign)
            law_seed = int(ctx.stream("law", sign).generate_state(1)[0])
            for d in p.dims:
                pending[sign, d] = ctx.compute_stored(
                    f"{sign}-{d}", law_point, m, c=p.c(sign), target=p.target, law_samples=p.law_samples,
                    law_seed=law_seed, d=int(d), runs=p.runs, horizon=p.horizon,
                    seed=ctx.stream("runs", sign, int(d)), simulation=True,
                    cost=_cost(p, int(d), sign))
        rows = {k: f.result() for k, f in pending.items()}
        import pandas as pd

        ctx.write_frame("E7", pd.DataFrame([{**r, "warnings": "; ".join(r["warnings"])}
                                            for r in rows.values()]))
        out: dict[str, dict[str, list[float]]] = {k: {s: [] for s in SIGNS} for k in (
            "predicted", "predicted_error", "measured", "measured_lo", "measured_hi", "tau",
            "eta", "relative_error", "excess")}
        said: list[str] = []
        for sign in SIGNS:
            for d in p.dims:
                r = rows[sign, d]
                pred, meas = float(r["predicted"]), float(r["measured"])
                se = _se(float(r["measured_lo"]), float(r["measured_hi"]))
                rel = abs(pred / meas - 1) if meas > 0 and math.isfinite(pred) else math.inf
                exc = (abs(pred - meas) - (p.tolerance * meas + p.z * se)
                       if math.isfinite(rel) and math.isfinite(se) else math.inf)
                for key, v in (("predicted", pred), ("predicted_error", r["predicted_error"]),
                               ("measured", meas), ("measured_lo", r["measured_lo"]),
                               ("measured_hi", r["measured_hi"]), ("tau", r["tau"]),
                               ("eta", r["eta"]), ("relative_error", rel), ("excess", exc)):
                    out[key][sign].append(float(v))
                said += [f"{sign}, d = {d}: {w}" for w in r["warnings"]]
        return E7Measurements(seed=ctx.seed, warnings=said, **out)

    def _checked(self, p: E7Plan, m: E7Measurements) -> list[tuple[str, int, int]]:
        return [(s, i, d) for s in SIGNS for i, d in enumerate(p.dims) if d >= p.check_from]

    def figures(self, p: E7Plan, m: E7Measurements, fig_dir: Path) -> list[Path]:
        plt = _plt()
        fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
        dims = np.asarray(p.dims, float)
        for k, (sign, color) in enumerate(zip(SIGNS, ("tab:blue", "tab:red"))):
            tau = np.asarray(m.tau[sign])
            pred = np.asarray(m.predicted[sign])
            meas = np.asarray(m.measured[sign])
            lo, hi = np.asarray(m.measured_lo[sign]), np.asarray(m.measured_hi[sign])
            ax.plot(dims, pred / tau, color=color, lw=1.6, ls="--", label=f"law, {sign} sign")
            ax.errorbar(dims, meas / tau, yerr=[np.nan_to_num((meas - lo) / tau),
                                                np.nan_to_num((hi - meas) / tau)],
                        fmt="o", color=color, capsize=3,
                        label=f"chain, {sign} sign ({p.runs} runs, 95 %)")
            # predicted/measured − 1, its interval from the measurement's (the law's own
            # Monte-Carlo error is far smaller)
            x = dims * (1.06 if k else 1 / 1.06)
            rel = pred / meas - 1
            ax2.errorbar(x, rel, yerr=[np.nan_to_num(rel - (pred / hi - 1)),
                                       np.nan_to_num((pred / lo - 1) - rel)],
                         fmt="o", color=color, capsize=3)
        ax2.axhspan(-p.tolerance, p.tolerance, color="0.85", zorder=0,
                    label=f"± {p.tolerance:.0%}")
        ax2.axhline(0, color="k", lw=0.8)
        ax2.axvline(p.check_from / 1.25, color="k", ls=":", lw=1,
                    label=f"checked from $d = {p.check_from:,}$")
        for a in (ax, ax2):
            a.set_xscale("log")
            a.set_xlabel("dimension $d$ (proportional path: $R = d/5$, $N = 4d/5$)")
            a.grid(alpha=0.3, which="both")
        ax.set_ylabel(r"samples to mean $|\rho| = %g$, over $\tau(d)$" % p.target)
        ax.set_title("predicted and measured sample complexity", fontsize=10.5)
        ax2.set_ylabel("predicted / measured − 1")
        ax2.set_title("the law's relative error (95 % of the measurement)", fontsize=10.5)
        handles, labels = ax.get_legend_handles_labels()
        h2, l2 = ax2.get_legend_handles_labels()
        legend_below(fig, handles + h2, labels + l2, ncol=3)
        return save_figure(fig, fig_dir / "e7_scaling")[:1]

    def report_section(self, p: E7Plan, m: E7Measurements, fig_dir: Path) -> Section:
        sec = Section(self.title)
        sec.para(
            f"The proportional path $R = d/5$, $N = 4d/5$ ($L = d$), $\\theta = {p.model.theta:g}$, "
            f"$\\beta = {p.model.beta:g}$, constant step $\\eta = c\\,(L/(L + d))^2$ with "
            f"$c = {p.c_fixed:g}$ (fixed sign) and ${p.c_random:g}$ (random sign), target mean "
            f"$|\\rho| = {p.target:g}$ from a uniform start: the samples the law of the "
            "documentation's Scaling page predicts, against the first step at which the mean "
            f"of {p.runs} chain runs reaches the target (95 % bootstrap interval over the runs; "
            f"seed {m.seed})."
        )
        rows = []
        for sign in SIGNS:
            for i, d in enumerate(p.dims):
                meas = m.measured[sign][i]
                rows.append([sign, f"{d:,}", f"{m.eta[sign][i]:.4g}",
                             f"{m.predicted[sign][i]:,.0f} ± {m.predicted_error[sign][i]:,.0f}",
                             (f"{meas:,.0f} [{m.measured_lo[sign][i]:,.0f}, "
                              f"{m.measured_hi[sign][i]:,.0f}]") if math.isfinite(meas)
                             else "not reached",
                             f"{m.predicted[sign][i] / meas - 1:+.1%}" if meas > 0 else "—"])
        sec.table(rows, header=["sign", "d", "step η", "predicted samples (± MC error)",
                                "measured [95 %]", "predicted / measured − 1"])
        sec.figure(fig_dir / "e7_scaling.png",
                   "Left, samples to the target over the time scale $\\tau(d) = (L + d)/L$: the "
                   "law (dashed) and the chain (points, 95 % intervals), both signs; right, the "
                   "law's relative error against $d$, with the check's band.")
        if m.warnings:
            sec.para("Warnings raised by the law or the runs: " + "; ".join(m.warnings) + ".")
        return sec

    def claims(self, p: E7Plan, m: E7Measurements) -> list[ClaimResult]:
        checked = self._checked(p, m)
        worst = max((m.relative_error[s][i] for s, i, _ in checked), default=math.nan)
        excess = max((m.excess[s][i] for s, i, _ in checked), default=math.inf)
        return [ClaimResult(
            "Check of this implementation (not a claim of the paper): the sample complexity "
            f"follows the predicted law within {p.tolerance:.0%} at d ≥ {p.check_from:,} "
            "(proportional path, both signs)",
            f"largest |predicted/measured − 1| = {worst:.1%} over d = "
            + ", ".join(f"{d:,}" for d in sorted({d for _, _, d in checked}))
            + f"; max of |predicted − measured| − ({p.tolerance:g}·measured + {p.z:g} SE) = "
            f"{excess:+,.0f} samples",
            f"|predicted − measured| ≤ {p.tolerance:g}·measured + {p.z:g} SE of the measurement",
            passed(bool(checked) and excess <= 0),
            implementation_check=True,
        )]

    def example_measurements(self, p: E7Plan) -> E7Measurements:
        """Measurements that pass every claim (the claims tests start from them)."""
        n = len(p.dims)
        per = {s: [150.0 if s == "fixed" else 650.0] * n for s in SIGNS}
        return E7Measurements.of(
            seed=2606, predicted=per, predicted_error={s: [1.0] * n for s in SIGNS},
            measured=per, measured_lo={s: [v - 10 for v in per[s]] for s in SIGNS},
            measured_hi={s: [v + 10 for v in per[s]] for s in SIGNS},
            tau={s: [2.0] * n for s in SIGNS}, eta={s: [0.0125] * n for s in SIGNS},
            relative_error={s: [0.0] * n for s in SIGNS},
            excess={s: [-10.0] * n for s in SIGNS}, warnings=[])


E7 = E7Scaling()
