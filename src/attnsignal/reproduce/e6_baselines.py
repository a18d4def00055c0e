"""E6 — attention against simple estimators on the same token stream (not a claim of the
paper: what is measured).

At the headline configuration (θ = 0.25, R = 500, N = 10 000), d = 100 and d = 1000, both
sign variants: ``1 − E|ρ|`` against samples (log–log) for attention's SGA and every baseline
of :mod:`attnsignal.baselines` (token mean, PCA, Oja's rule, the oracle), each beside its
theory, and the table of samples to reach 0.99 and 0.9965 with ratios to the oracle.

Attention with a fixed sign reuses E1's runs; the random-sign attention runs are a sweep in the
shared pool. PCA and Oja's rule have the same law in both sign variants (their statistics are
even in the sign; tested in ``tests/baselines``), so one set of runs serves both. PCA at
``big_d`` costs ``O(d³)`` per record: quick mode gives its BBP prediction only.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..config import ModelConfig
from ..validation import Boolean, Integer, Real, Sequence
from ..plots import _plt, legend_below, save_figure, schedule_tex
from ..report import Section
from ..results import Result
from .context import ExperimentContext, sweep_spec
from .e1_headline import E1
from .experiment import Experiment, Measurements, PlanSection, data_field

__all__ = ["E6Plan", "E6Measurements", "E6Baselines", "E6"]

BASELINES = ("mean", "pca", "oja", "oracle")
SIGNS = ("fixed", "random")
#: baselines whose law is the same in both sign variants (their statistics are even in the sign)
SIGN_BLIND = ("pca", "oja")
COLORS = {"sga": "navy", "mean": "tab:orange", "pca": "tab:green", "oja": "tab:olive",
          "oracle": "tab:red"}
LABELS = {"sga": "attention (SGA)", "mean": "token mean", "pca": "PCA", "oja": "Oja's rule",
          "oracle": "oracle"}


@dataclass(frozen=True)
class E6Plan(PlanSection):
    """E6's budget. ``samples``: per baseline run (log-spaced ``records``); the random-sign
    attention runs use E1's step and ``attention_steps``; ``pca_big_runs = 0`` leaves PCA at
    ``big_d`` to its BBP prediction."""

    targets: tuple = (0.99, 0.9965)
    runs: int = 30
    samples: int = 1_000_000
    records: int = 60
    pca_big_runs: int = 6
    attention_runs: int = 2  # random sign, per dimension
    attention_steps: int = 80_000  # E1's (full) budget
    attention_big_d: bool = True
    attention_theory: bool = True
    theory_samples: int = 1000

    _table = {
        "targets": Sequence(Real(gt=0.0, lt=1.0), min_len=1),
        "runs": Integer(ge=2), "samples": Integer(ge=10), "records": Integer(ge=5),
        "pca_big_runs": Integer(ge=0), "attention_runs": Integer(ge=1),
        "attention_steps": Integer(ge=1), "attention_big_d": Boolean(),
        "attention_theory": Boolean(), "theory_samples": Integer(ge=100),
    }

    @classmethod
    def quick(cls) -> "E6Plan":
        """Attention and the baselines at equal samples: E1's quick budget (8 000)."""
        return cls(runs=8, samples=8_000, records=30, pca_big_runs=0, attention_runs=2,
                   attention_steps=8_000, attention_big_d=False, attention_theory=False)


@dataclass(frozen=True)
class E6Measurements(Measurements):
    seed: int
    dims: tuple
    #: one row per (d, sign, method, target): measured and predicted samples, ratios
    table: list
    verdict: str
    model: ModelConfig = data_field()  # E1's configuration (at dims[0])
    step: Any = data_field()  # attention's schedule (E1's)
    results: dict = data_field()  # (d, sign, method) -> Result
    theory: dict = data_field()   # (d, sign, method) -> (steps, predicted E|ρ|)


class E6Baselines(Experiment[E6Plan, E6Measurements]):
    name = "E6"
    title = "E6 — attention against simple estimators (measured, not a claim of the paper)"
    Plan = E6Plan
    needs = (E1,)

    def check_plan(self, plan: Any) -> None:
        """Every baseline E6 will run fits in memory and time (E1's model and ``big_d``)."""
        from ..baselines.runner import check_baseline_size

        p, e1 = plan.section(self), plan.section(E1)
        n_rec = len(record_steps(p))
        for model, method, runs in baseline_calls(p, e1.model, e1.big_d):
            check_baseline_size(model, method, samples=p.samples, runs=runs, records=n_rec)

    def run(self, p: E6Plan, ctx: ExperimentContext) -> E6Measurements:
        from ..baselines import baseline, baseline_theory, efficiency

        e1 = ctx.needed(E1)
        base, step = e1.headline.model, e1.headline.schedule
        dims = (base.d, e1.big.model.d)
        att_dims = dims if p.attention_big_d else (base.d,)
        pending = ctx.submit("E6", sweep_spec(
            base.replace(signal_sign="random"), step, seed=ctx.seed, runs=p.attention_runs,
            spawn_key=ctx.spawn_key("attention"),
            steps=p.attention_steps, record="log", grid={"model.d": list(att_dims)}))
        ks = record_steps(p)
        results: dict[tuple, Result] = {}
        for d in dims:
            results[d, "fixed", "sga"] = e1.headline if d == base.d else e1.big
        for model, method, runs in baseline_calls(p, base, dims[1]):
            res = baseline(model, method, samples=p.samples, runs=runs,
                           seed=ctx.stream("baseline", method, model.signal_sign, model.d),
                           record=ks)
            for sign in SIGNS if method in SIGN_BLIND else (model.signal_sign,):
                results[model.d, sign, method] = res
        data = pending.result()
        for d in att_dims:
            results[d, "random", "sga"] = data.result_at(model__d=d)

        rows, theory = [], {}
        for d in dims:
            for sign in SIGNS:
                model = base.replace(d=d, signal_sign=sign)
                have = {m: results[d, sign, m] for m in ("sga", *BASELINES)
                        if (d, sign, m) in results}
                table = efficiency(model, list(p.targets), methods=("sga", *BASELINES),
                                   samples=p.samples, results=have, simulate=False,
                                   attention_step=step, attention_theory=p.attention_theory,
                                   theory_samples=p.theory_samples,
                                   seed=ctx.stream("efficiency", d, sign))
                for r in table.to_dict("records"):
                    rows.append({"d": d, "sign": sign, **r})
                for m in BASELINES:
                    theory[d, sign, m] = (np.asarray(ks), baseline_theory(model, m, ks))
        return E6Measurements(seed=ctx.seed, dims=dims, table=rows, verdict=_verdict(rows, p),
                              model=base, step=step, results=results, theory=theory)

    def figures(self, p: E6Plan, m: E6Measurements, fig_dir: Path) -> list[Path]:
        plt = _plt()
        dims = m.dims
        fig, axes = plt.subplots(2, 2, figsize=(12, 9), sharey=True)
        missing: list[str] = []  # "PCA at d = 1000": theory only, or nothing
        lowest = 1e-1
        for row, d in enumerate(dims):
            for col, sign in enumerate(SIGNS):
                ax = axes[row, col]
                for method in ("sga", *BASELINES):
                    res = m.results.get((d, sign, method))
                    c = COLORS[method]
                    if res is not None:  # on top of the theory, with markers: never hidden
                        gap = 1 - np.nanmean(np.abs(res.alignment), axis=0)
                        ok = res.steps > 0
                        ax.plot(res.steps[ok], gap[ok], color=c, lw=2.0, marker="o", ms=2.5,
                                zorder=3, label=f"{LABELS[method]}: simulated")
                        lowest = min(lowest, float(np.nanmin(gap[ok], initial=1.0)))
                    elif not (method in SIGN_BLIND and sign != SIGNS[0]):
                        missing.append(f"{LABELS[method]} at $d$ = {d}"
                                       + ("" if method in SIGN_BLIND else f", {sign} sign"))
                    if method in BASELINES:
                        ks, th = m.theory[d, sign, method]
                        ax.plot(ks, 1 - th, color=c, ls="--", lw=1.2, alpha=0.8, zorder=2,
                                label=f"{LABELS[method]}: theory")
                for t in p.targets:
                    ax.axhline(1 - t, color="k", ls=":", lw=0.8)
                ax.set_xscale("log")
                ax.set_yscale("log")
                ax.set_ylim(max(1e-5, lowest / 3), 1.2)
                ax.set_title(f"$d$ = {d}, {sign} sign", fontsize=11)
                ax.set_xlabel("samples $k$")
                ax.grid(alpha=0.3, which="both")
                if col == 0:
                    ax.set_ylabel(r"$1 - \mathbb{E}|\rho|$")
        runs = ", ".join(f"{LABELS[k]} {n}" for k, n in _runs_per_method(m).items())
        fig.suptitle(f"E6 — $\\theta$ = {m.model.theta}, $R$ = {m.model.n_informative}, "
                     f"$N$ = {m.model.n_nuisance}; runs: {runs}; dotted: "
                     + ", ".join(f"$1 - {t}$" for t in p.targets), fontsize=11)
        by_label: dict[str, Any] = {}
        for ax in axes.flat:  # every method once, whichever panel drew it
            for h, lab in zip(*ax.get_legend_handles_labels()):
                by_label.setdefault(lab, h)
        order = [f"{LABELS[k]}: {w}" for k in ("sga", *BASELINES) for w in ("simulated", "theory")]
        labels = [lab for lab in order if lab in by_label]
        legend_below(fig, [by_label[lab] for lab in labels], labels, ncol=5, fontsize=10,
                     note=("not simulated in this plan (theory only, if any): "
                           + "; ".join(missing)) if missing else "")
        return save_figure(fig, fig_dir / "e6_baselines")[:1]

    def report_section(self, p: E6Plan, m: E6Measurements, fig_dir: Path) -> Section:
        sec = Section(self.title)
        sec.para(
            "Every estimator sees the same token stream: the token mean (running average of the "
            "per-sample token means), PCA (top eigenvector of their running second moment), "
            "Oja's rule on them (its default $1/(g(k + k_0))$ schedule), and an oracle that knows "
            "which tokens are informative and the sign. Attention with a fixed sign is E1's runs; "
            f"with a random sign, {p.attention_runs} runs of {p.attention_steps:,} samples "
            f"with {schedule_tex(m.step)}. Baselines: {p.runs} runs of {p.samples:,} samples each "
            f"(seed {m.seed}). See the documentation's Baselines page for the estimators and "
            "their theory.")
        sec.figure(fig_dir / "e6_baselines.png",
                   "Attention against the baselines: $1 - \\mathbb{E}|\\rho|$ against samples; "
                   "solid with dots: simulated, dashed: each baseline's theory (exact for the "
                   "mean and the oracle, BBP for PCA, mean field for Oja).")
        header, rows = table_rows(m.table, p, budgets(p, m))
        sec.table(rows, header=header, collapse=False,
                  caption="Samples to reach each target: measured / theory, and the ratio to "
                  "the oracle's (measured / theory). PCA and Oja's rule are blind to the sign "
                  "(their statistics are even in it), so they appear once per dimension.")
        sec.para("“not within N”: the runs' mean did not reach the target within their budget "
                 "of N samples — where the theory's figure is larger than N the two agree (the "
                 "budget was too small, not the theory wrong); “never”: the theory predicts "
                 "that the mean does not converge (the token mean with a random sign). "
                 + ("In quick mode attention and the baselines have the same budget, "
                    f"{p.samples:,} samples, so their curves compare sample for sample; "
                    "attention's theory is not computed." if p.samples == p.attention_steps
                    else ""))
        sec.para(m.verdict)
        return sec

    def example_measurements(self, p: E6Plan) -> E6Measurements:
        """Measurements of the kind E6 reports (it checks no claim)."""
        return E6Measurements.of(seed=2666, dims=(100, 1000), table=[], verdict="(none)")


E6 = E6Baselines()


def record_steps(p: E6Plan) -> list[int]:
    """The baselines' record steps: ``p.records`` log-spaced steps in ``[1, p.samples]``
    (fewer where they round to the same step)."""
    return [int(k) for k in np.unique(np.round(np.geomspace(1, p.samples, p.records)))]


def baseline_calls(p: E6Plan, base: ModelConfig, big_d: int
                   ) -> list[tuple[ModelConfig, str, int]]:
    """``(model, method, runs)`` of every baseline run E6 makes (its stream is keyed
    ``(E6, "baseline", method, sign, d)``): each method at ``base.d`` and ``big_d`` in both sign variants, except
    that the sign-blind ones (PCA, Oja) run once, with the fixed sign, for both, and PCA at
    ``big_d`` runs ``p.pca_big_runs`` times (0: not at all)."""
    calls = []
    for d in (base.d, big_d):
        for method in BASELINES:
            runs = p.pca_big_runs if (method == "pca" and d == big_d) else p.runs
            if runs == 0:
                continue
            for sign in ("fixed",) if method in SIGN_BLIND else SIGNS:
                calls.append((base.replace(d=d, signal_sign=sign), method, runs))
    return calls


def _fmt(v: float) -> str:
    return "not reached" if not np.isfinite(v) else f"{v:,.0f}"


def budgets(p: E6Plan, m: E6Measurements) -> dict[tuple, int]:
    """Samples each (d, sign, method) ran for: the baselines' ``p.samples``; attention E1's
    runs (fixed sign) or ``p.attention_steps`` (random sign)."""
    out = {}
    for (d, sign, method), res in m.results.items():
        out[d, sign, method] = int(res.steps[-1]) if len(res.steps) else p.samples
    return out


def _runs_per_method(m: E6Measurements) -> dict[str, int]:
    runs: dict[str, int] = {}
    for (_, _, method), res in m.results.items():
        runs.setdefault(method, res.alignment.shape[0])
    return runs


def table_rows(table: list[dict], p: E6Plan, budget: dict[tuple, int]
               ) -> tuple[list[str], list[list[str]]]:
    """The report's table: one row per (d, sign, method) — the sign-blind methods once per
    dimension — with, per target, samples measured / theory and the ratios to the oracle."""
    header = ["d", "sign", "method"]
    for t in p.targets:
        header += [f"samples to {t:g}: measured / theory", f"× oracle at {t:g}: measured / theory"]
    cells: dict[tuple, list[str]] = {}
    for r in table:
        key = (r["d"], r["sign"], r["method"])
        if r["method"] in SIGN_BLIND and r["sign"] != SIGNS[0]:
            continue
        n = budget.get(key)
        measured = (f"{r['samples']:,.0f}" if np.isfinite(r["samples"]) else
                    f"not within {n:,}" if n else "not run")
        if r["method"] == "sga" and not p.attention_theory:
            theory = "not computed"
        elif r["method"] == "mean" and r["sign"] == "random" and not np.isfinite(r["predicted"]):
            theory = "never"
        else:
            theory = _fmt(r["predicted"])
        row = cells.setdefault(key, [f"{r['d']}", "either" if r["method"] in SIGN_BLIND
                                     else r["sign"], LABELS[r["method"]]])
        row += [f"{measured} / {theory}",
                f"{_ratio(r['ratio'])} / {_ratio(r['ratio_predicted'])}"]
    return header, list(cells.values())


def _ratio(v: float) -> str:
    return "—" if not np.isfinite(v) else f"{v:.1f}"


def _verdict(rows: list[dict], p: E6Plan) -> str:
    """Plain language from the measured table at the highest target (nothing asserted that
    the table does not show)."""
    t = max(p.targets)
    f = pd.DataFrame(rows)
    f = f[f["target"] == t]
    parts = []
    for (d, sign), g in f.groupby(["d", "sign"], sort=False):
        s = g.set_index("method")["samples"]
        att = s.get("sga", np.nan)
        simple = s.drop(["sga", "oracle"], errors="ignore").dropna()
        if np.isfinite(att) and simple.size:
            name, best = simple.idxmin(), simple.min()
            cmp = (f"attention needed {att:,.0f} samples, {att / best:.1f}× as many as the "
                   f"{LABELS[name]} ({best:,.0f})" if att >= best else
                   f"attention needed {att:,.0f} samples, fewer than every simple estimator "
                   f"(the best, the {LABELS[name]}, needed {best:,.0f})")
        elif np.isfinite(att):
            cmp = (f"attention needed {att:,.0f} samples and no simple estimator got there "
                   "within its budget")
        elif simple.size:
            name, best = simple.idxmin(), simple.min()
            cmp = (f"attention did not get there within its budget; the {LABELS[name]} "
                   f"needed {best:,.0f}")
        else:
            cmp = "neither attention nor a simple estimator got there within its budget"
        if "mean" in s.index and not np.isfinite(s["mean"]) and sign == "random":
            cmp += " (the token mean never does with a random sign: it does not converge)"
        parts.append(f"d = {d}, {sign} sign: {cmp}; the oracle needed "
                     f"{_fmt(s.get('oracle', np.nan))}.")
    return (f"Samples to reach a mean $|\\rho|$ of {t:g}. " + " ".join(parts) + " These are "
            "measurements of this configuration and budget, not a claim of the paper.")

