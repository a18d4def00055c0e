"""E4 — the landscape: Φ and the vector field, fixed points and basins.

For the E1 and E2 configurations (read from their plan sections): ``Φ(ρ)`` and
``(1 − ρ²)Φ'(ρ)`` (exact finite-size values), their fixed points and the verdict. In a
configuration with two attracting signs (``model``: ``Φ`` has an interior minimum ``ρ*``) the
fraction of runs that reach +ξ against the ODE's basin prediction (each run's own ``ρ0``
against ``ρ*``, and the probability of a uniform start), and runs from fixed starts around
``ρ*`` against the ODE's sharp boundary.

Claim: no spurious interior traps — no stable interior fixed point in any configuration.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..claims import ClaimResult, passed
from ..config import ModelConfig, StepSize
from ..plots import _plt, legend_below, save_figure, tex_powers
from ..report import Section
from ..validation import Integer
from .context import ExperimentContext, sweep_spec
from .e1_headline import E1
from .e2_robustness import E2
from .experiment import MODEL, STEP, Experiment, Measurements, PlanSection, data_field

__all__ = ["E4Plan", "E4Measurements", "E4Landscape", "E4"]

#: offsets of the fixed starts around ρ* (the basin boundary)
BOUNDARY_OFFSETS = (-0.12, -0.06, -0.03, 0.0, 0.03, 0.06, 0.12)


@dataclass(frozen=True)
class E4Plan(PlanSection):
    """E4's two-sign configuration and budget. Full: 200 runs from uniform starts and 50 per
    fixed start (the fraction at +ξ to a standard error of ≈ 0.024); quick: 40 and 10 runs;
    both 150 000 steps: every sign is settled by 120 000 steps (measured over 100 runs; over
    200 uniform-start runs of 200 000 steps the last to change sign did so at step 104 000).
    No claim rests on these runs (the claim is the theory's); with 40 runs the fraction at +ξ
    has a standard error of about 0.054 against the uniform-start prediction 0.865, and the
    boundary is sharp at this size: with 20 runs per start (seed 2606) the fraction at +ξ was
    0 from ρ* − 0.03 down and 1 from ρ* + 0.03 up, 0.45 at ρ* itself, which 10 runs per start
    show as well (a fraction's standard error is ≤ 0.16 there).

    d/L large makes Φ non-monotone. The example of docs/model.md (``design_model``: d=1000,
    R=10, N=200, θ=0.25) has ρ* = −0.34, so uniform starts all go to +ξ, and its gradient noise
    (V ≈ 6·10^4 against a field of 10^-2) would need steps below 10^-8 for the basins to
    show; ``model`` has a basin of −ξ that a uniform start hits with probability 0.135 and
    V/field² ≈ 1600."""

    model: ModelConfig = ModelConfig(d=50, n_informative=2, n_nuisance=4, theta=2.0)
    design_model: ModelConfig = ModelConfig(d=1000, n_informative=10, n_nuisance=200, theta=0.25)
    runs: int = 200
    boundary_runs: int = 50
    steps: int = 150_000
    step: StepSize = StepSize(eta0=4e-6, k0=1e6, power=0.75)

    _table = {"model": MODEL, "design_model": MODEL, "runs": Integer(ge=1),
              "boundary_runs": Integer(ge=1), "steps": Integer(ge=1), "step": STEP}

    @classmethod
    def quick(cls) -> "E4Plan":
        return cls(runs=40, boundary_runs=10)


@dataclass(frozen=True)
class E4Measurements(Measurements):
    seed: int
    stable_interior: int
    monotone_configs: int
    configs: int
    fraction_plus: float
    fraction_predicted: float
    p_uniform: float
    p_uniform_se: float
    sign_agreement: float
    runs: int
    #: (ρ0, fraction at +ξ, ODE attractor (0: ρ* itself), runs) per fixed start
    boundary: list[tuple[float, float, float, int]]
    rstar: float | None
    #: (model, Basins) of every configuration examined, then the two-sign one
    verdicts: list[tuple[ModelConfig, Any]] = data_field()
    #: per model shown: (model, Φ exact, Φ∞, Φ' exact, Basins) on ``rho``
    curves: list[tuple[ModelConfig, Any, Any, Any, Any]] = data_field()
    rho: np.ndarray = data_field()


class E4Landscape(Experiment[E4Plan, E4Measurements]):
    name = "E4"
    title = "E4 — landscape, fixed points and basins"
    Plan = E4Plan

    def run(self, p: E4Plan, ctx: ExperimentContext) -> E4Measurements:
        from ..theory import dphi_interpolant, landscape, landscape_verdict, phi_interpolant

        m2 = p.model
        every = max(1, p.steps // 50)
        uniform = ctx.submit("E4", sweep_spec(m2, p.step, seed=ctx.seed, runs=p.runs,
                                               steps=p.steps, record_every=every,
                                               spawn_key=ctx.spawn_key("uniform")))
        b2 = landscape_verdict(m2)
        # the basin boundary: runs from fixed starts around the interior minimum ρ*
        interior = [q.rho for q in b2.fixed_points if abs(q.rho) < 1 and not q.stable]
        rstar = interior[0] if interior else None
        boundary = None
        if rstar is not None:
            starts = [round(float(np.clip(rstar + o, -0.999, 0.999)), 4) for o in BOUNDARY_OFFSETS]
            boundary = ctx.submit("E4_boundary", sweep_spec(
                m2, p.step, seed=ctx.seed, runs=p.boundary_runs, steps=p.steps,
                spawn_key=ctx.spawn_key("boundary"),
                record_every=p.steps, initial_alignment=starts[0],
                grid={"sweep.initial_alignment": starts}))

        # E1's configuration is also a cell of the E2 grid: examine each configuration once
        models = list(dict.fromkeys([ctx.plan.section(E1).model, *ctx.plan.section(E2).models()]))
        verdicts = [(m, landscape_verdict(m)) for m in [*models, p.design_model]]
        stable_interior = sum(1 for _, b in verdicts for q in b.fixed_points
                              if q.stable and abs(q.rho) < 1)
        monotone = sum(int(b.monotone and any(q.stable and q.rho == 1.0 for q in b.fixed_points))
                       for m, b in verdicts[:len(models)])
        stable_interior += sum(1 for q in b2.fixed_points if q.stable and abs(q.rho) < 1)
        verdicts.append((m2, b2))
        rho = np.linspace(-1, 1, 201)  # the figure's curves (Φ is smooth: 0.01 apart draws it)
        curves = []
        for m, b in (verdicts[0], verdicts[len(models)], verdicts[-1]):
            # the verdict's Chebyshev series of Φ' (and its integral): no quadrature per point
            la = landscape(m, rho, "asymptotic")
            curves.append((m, phi_interpolant(m, "exact")(rho), la.phi,
                           dphi_interpolant(m, "exact")(rho), b))

        res = uniform.result().result_at()
        rho0 = res.alignment[:, 0]
        final = res.final_alignment
        predicted = np.array([b2.attractor_of(float(r)) for r in rho0], dtype=float)
        b_plus = next((b for b in b2.basins if b.attractor == 1.0), None)
        p_uniform = b_plus.probability_uniform_start if b_plus else float("nan")
        n = final.size
        rows: list[tuple[float, float, float, int]] = []
        if boundary is not None:
            fb = boundary.result()
            last = fb.frame[fb.frame["step"] == fb.frame["step"].max()]
            for r0 in starts:
                fin = last[last["sweep.initial_alignment"] == r0]["alignment"].to_numpy()
                # the start rounded onto ρ* itself is the boundary (a fixed point), not a basin
                pred = 0.0 if abs(r0 - rstar) <= 1e-4 else b2.attractor_of(r0)
                rows.append((r0, float((fin > 0).mean()), pred, int(fin.size)))
        return E4Measurements(
            seed=res.run.seed,
            stable_interior=stable_interior, monotone_configs=monotone, configs=len(models),
            fraction_plus=float((final > 0).mean()),
            fraction_predicted=float(np.nanmean(predicted > 0)),
            p_uniform=p_uniform,
            p_uniform_se=float(np.sqrt(max(p_uniform * (1 - p_uniform), 1e-12) / n)),
            sign_agreement=float(np.mean(np.sign(final) == np.sign(predicted))),
            runs=n, boundary=rows, rstar=rstar,
            verdicts=verdicts, curves=curves, rho=rho,
        )

    def figures(self, p: E4Plan, m: E4Measurements, fig_dir: Path) -> list[Path]:
        plt = _plt()
        rho = m.rho
        fig, axes = plt.subplots(2, len(m.curves), figsize=(4.2 * len(m.curves), 6.4), squeeze=False)
        for j, (mod, phi, phi_inf, dphi, b) in enumerate(m.curves):
            ax, axf = axes[0, j], axes[1, j]
            ax.plot(rho, phi, color="navy", lw=1.8, label=r"$\Phi$ exact (finite $R, N$)")
            ax.plot(rho, phi_inf, color="tab:orange", ls="--", lw=1.2,
                    label=r"$\Phi_\infty$ (large $R, N$)")
            ax.set_title(f"$d$ = {mod.d}, $R$ = {mod.n_informative}, $N$ = {mod.n_nuisance}, "
                         f"$\\theta$ = {mod.theta:g}", fontsize=10)
            ax.set_ylabel(r"$\Phi(\rho) = \mathbb{E}\,\|f\|^2$")
            ax.grid(alpha=0.3)
            fld = (1 - rho**2) * dphi
            axf.plot(rho, fld, color="tab:green", lw=1.6)
            axf.axhline(0, color="k", lw=0.6)
            for q in b.fixed_points:
                axf.plot([q.rho], [0], "o", ms=7, mfc="k" if q.stable else "white", mec="k")
            for bb in b.basins:
                axf.axvspan(bb.lo, bb.hi, color="tab:blue" if bb.attractor > 0 else "tab:red", alpha=0.08)
            axf.set_xlabel(r"$\rho$")
            axf.set_ylabel(r"$(1 - \rho^2)\,\Phi'(\rho)$")
            axf.grid(alpha=0.3)
            axf.set_title(tex_powers(_wrap(b.verdict, 48)), fontsize=9)
        fig.suptitle("E4 — landscape and vector field (● attracting, ○ repelling; shaded: basins)",
                     fontsize=11)
        handles, labels = axes[0, 0].get_legend_handles_labels()
        legend_below(fig, handles, labels, ncol=2, fontsize=10)
        out = save_figure(fig, fig_dir / "e4_landscape")[:1]
        if not m.boundary:
            return out
        m2 = p.model
        fig2, axb = plt.subplots(figsize=(6.2, 3.8))
        xs = [r[0] for r in m.boundary]
        fr = np.array([r[1] for r in m.boundary])
        nn = np.array([r[3] for r in m.boundary])
        axb.errorbar(xs, fr, yerr=1.96 * np.sqrt(np.maximum(fr * (1 - fr), 0.25 / nn) / nn),
                     fmt="o", color="navy", label=f"simulation ({p.boundary_runs} runs per start, "
                     "95 % interval)")
        grid_r = np.linspace(min(xs) - 0.05, max(xs) + 0.05, 400)
        axb.plot(grid_r, (grid_r > m.rstar).astype(float), color="tab:red", lw=1.5,
                 label=f"ODE basins ($\\rho^*$ = {m.rstar:.3f})")
        axb.set_xlabel(r"initial alignment $\rho_0$")
        axb.set_ylabel(r"fraction of runs reaching $+\xi$")
        axb.set_ylim(-0.05, 1.05)
        axb.grid(alpha=0.3)
        axb.set_title(f"E4 — two attracting signs: $d$ = {m2.d}, $R$ = {m2.n_informative}, "
                      f"$N$ = {m2.n_nuisance}, $\\theta$ = {m2.theta:g}", fontsize=10)
        handles, labels = axb.get_legend_handles_labels()
        legend_below(fig2, handles, labels, ncol=2, fontsize=9.5)
        return out + save_figure(fig2, fig_dir / "e4_basins")[:1]

    def report_section(self, p: E4Plan, m: E4Measurements, fig_dir: Path) -> Section:
        m2 = p.model
        sec = Section(self.title)
        sec.table(verdict_rows(m.verdicts),
                  header=["d", "R", "N", "θ", "configurations", "fixed points and basins (exact Φ)"])
        sec.para(
            f"Two attracting signs ($d = {m2.d}$, $R = {m2.n_informative}$, "
            f"$N = {m2.n_nuisance}$, $\\theta = {m2.theta:g}$): {m.runs} runs from uniform "
            f"starts, {p.steps} steps (seed {m.seed}). Fraction at +ξ: "
            f"**{m.fraction_plus:.3f}**; the ODE basins predict {m.fraction_predicted:.3f} from the "
            f"runs' own starts (a uniform start lands in the basin of +ξ with probability "
            f"{m.p_uniform:.3f} ± {m.p_uniform_se:.3f}); "
            f"the sign of {m.sign_agreement:.1%} of the runs is the one their start predicts."
        )
        sec.figure(fig_dir / "e4_landscape.png",
                   "Landscape $\\Phi$ (top) and the vector field (bottom) with fixed points "
                   "and basins.")
        if m.boundary:
            sec.para(
                "From fixed starts around the interior minimum the ODE predicts a sharp boundary "
                "at ρ*. " + _boundary_sentence(m.boundary))
            sec.table([[f"{r0:+.4f}", f"{fr:.3f}", _basin_label(pred), n]
                       for r0, fr, pred, n in m.boundary],
                      header=["ρ0", "fraction at +ξ", "ODE basin", "runs"])
            sec.figure(fig_dir / "e4_basins.png",
                       "Basin boundary: the fraction of runs reaching $+\\xi$ against the start, "
                       "and the ODE's basins.")
        return sec

    def claims(self, p: E4Plan, m: E4Measurements) -> list[ClaimResult]:
        return [ClaimResult(
            "No spurious interior traps (no stable interior fixed point of the alignment ODE)",
            f"{m.stable_interior} stable interior fixed points; Φ increasing on [−1, 1] "
            f"in {m.monotone_configs} of {m.configs} E1/E2 configurations",
            "0 stable interior fixed points",
            passed(m.stable_interior == 0),
        )]

    def example_measurements(self, p: E4Plan) -> E4Measurements:
        """Measurements that pass every claim (the claims tests start from them)."""
        return E4Measurements.of(
            seed=2646, stable_interior=0, monotone_configs=12, configs=12,
            fraction_plus=0.86, fraction_predicted=0.86, p_uniform=0.865, p_uniform_se=0.02,
            sign_agreement=0.98, runs=p.runs, boundary=[], rstar=-0.15)


E4 = E4Landscape()


def verdict_rows(verdicts: list[tuple[ModelConfig, Any]]) -> list[list[str]]:
    """One row per distinct verdict (configurations with the same fixed points and basins
    share it): each column lists its distinct values, with the number of configurations."""
    groups: dict[str, list[ModelConfig]] = {}
    for mod, b in verdicts:
        groups.setdefault(tex_powers(b.verdict), []).append(mod)

    def values(xs: list[Any]) -> str:
        return ", ".join(f"{x:g}" for x in sorted(set(xs)))

    return [[values([m.d for m in mods]), values([m.n_informative for m in mods]),
             values([m.n_nuisance for m in mods]), values([m.theta for m in mods]),
             str(len(mods)), verdict] for verdict, mods in groups.items()]


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
