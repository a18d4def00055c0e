"""``attnsignal scaling``: the sample-complexity law against the chain engine across ``d``
(:func:`attnsignal.theory.scaling.scaling_law`, :func:`attnsignal.measure.measure_samples`;
``docs/scaling.md``).

For each sign (``--signs``) the law of the reference model's path (``--path``) predicts, at every
dimension of ``--dims``, the samples for the mean ``|ρ|`` to reach ``--target`` with the step
``η = c (L/(L + d))²``; with ``--runs`` > 0 the chain engine measures them (a bootstrap
interval over runs). Writes ``OUT/scaling.parquet`` (one row per sign and dimension: the
prediction, its Monte-Carlo error, the predicted hitting-time law — with no horizon and seen
through the simulated horizon ``H``, as the runs see it — the measurement and its interval;
:func:`attnsignal.measure.compare_law`'s columns) and ``OUT/scaling.{png,pdf}``: ``n(d)/τ(d)`` against ``d`` (``τ = (L + d)/L``), the law
as a line, the measurements as points with intervals.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Optional

import numpy as np
import pandas as pd
import typer
from rich.table import Table

from ..config import ConfigError
from ..paths import check_output_dir
from ..validation import Integer, OneOf, Real, Sequence
from ._app import app
from ._common import MODEL_FIELDS, build_configs, config_options, console, option, option_value, out

#: The reference model of a bare ``attnsignal scaling``: L = 20 tokens, a saddle at ρ = 0 for
#: both signs above d ≈ 200, and chain runs of seconds up to d = 10⁴.
MODEL_DEFAULTS = {"d": 1000, "n_informative": 4, "n_nuisance": 16, "theta": 2.0, "beta": 1.0,
                  "noise_std": 1.0, "signal_sign": "fixed"}
_FIELDS = tuple(f for f in MODEL_FIELDS if f != "signal_sign")


class _Dim(Real):
    """A dimension: an integer-valued number >= 4 (``1e4`` is accepted)."""

    def __init__(self) -> None:
        super().__init__(ge=4.0, le=1e15)

    def _accepts(self, v: Any) -> bool:
        return super()._accepts(v) and float(v) == math.floor(float(v))

    def coerce(self, v: Any) -> int:
        return int(float(v))

    def describe(self) -> str:
        return "must be an integer-valued number in [4, 1e15]"


_DIMS = Sequence(_Dim(), min_len=1, what="a comma-separated list of dimensions >= 4 (1e2,1e3)")
_SIGNS = Sequence(OneOf("fixed", "random"), min_len=1, what="a comma-separated subset of "
                  "fixed, random")
_TARGET = Real(gt=0.0, lt=1.0)
_C = Real(gt=0.0)
_RUNS = Integer(ge=0)
_SEED = Integer(ge=0)
_SAMPLES = Integer(ge=100)
_HORIZON = Real(gt=1.0)
#: Most chain work (runs × steps × L token updates) a point may take before it is refused.
MAX_CHAIN_WORK = 2e11


def _law_line(law, dims: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """The law's ``n(d)/τ(d)`` on a log grid spanning ``dims`` (8 points a decade)."""
    lo, hi = math.log10(min(dims)), math.log10(max(dims))
    grid = np.unique(np.round(np.logspace(lo, hi, max(2, int(8 * (hi - lo)) + 1))).astype(int))
    return grid, np.array([law.samples(int(d)) / law.tau(int(d)) for d in grid])


@app.command("scaling")
@config_options(_FIELDS, MODEL_DEFAULTS, helps={"d": "reference dimension d₀ of the path "
                                                   "(integer >= 4)"})
def scaling_cmd(
    flags: dict,
    dims: Optional[str] = option("--dims", _DIMS, "1e2,1e3,1e4", "dimensions, comma-separated (1e2,1e3,1e4)"),
    target: Optional[str] = option("--target", _TARGET, 0.5, "mean |ρ| to reach, in (0, 1)"),
    c: Optional[str] = option("--c", _C, "each sign's c_optimal at d₀", "step constant c > 0: η = c (L/(L + d))²/σ²"),
    path: Optional[str] = option("--path", OneOf("fixed_L", "proportional"), "fixed_L", "fixed_L (R, N fixed) or proportional (R, N ∝ d)"),
    signs: Optional[str] = option("--signs", _SIGNS, "fixed,random", "signal signs, comma-separated"),
    update: Optional[str] = option("--update", OneOf("projected", "riemannian"), "projected", "update rule"),
    runs: Optional[str] = option("--runs", _RUNS, 64, "chain runs per point (0: the law only)"),
    horizon: Optional[str] = option("--horizon", _HORIZON, 3.0, "simulate this many times the predicted samples (> 1)"),
    n_samples: Optional[str] = option("--n-samples", _SAMPLES, 4000, "draws of the one-step moments at d₀ (integer >= 100)"),
    seed: Optional[str] = option("--seed", _SEED, 0, "seed of the moments and of the runs (integer >= 0)"),
    config: Optional[Path] = typer.Option(None, "--config", help="TOML file with a \\[model] table; flags override it"),
    out_dir: Path = typer.Option(Path("results/scaling"), "--out", help="output directory (scaling.parquet, scaling.png, scaling.pdf)"),
    plot: bool = typer.Option(True, "--plot/--no-plot", help="write scaling.png and scaling.pdf"),
) -> None:
    """How many samples at dimension d: the scaling law against the chain engine.

    Prints, per sign and dimension, the step, the predicted samples n(d) (± the moments'
    Monte-Carlo error), the predicted hitting-time law and, with --runs > 0, the measured
    samples with a 95 % bootstrap interval. See docs/scaling.md.
    """
    from ..measure import compare_law
    from ..theory.scaling import scaling_law

    model, _, _ = build_configs({**flags, "signal_sign": None}, config,
                                {**MODEL_DEFAULTS, "eta0": 0.01}, tables=("model",))
    ds = sorted(set(option_value(dims, "dims", _DIMS, (100, 1000, 10000))))
    tgt = option_value(target, "target", _TARGET, 0.5)
    c_given = option_value(c, "c", _C, None)
    pth = option_value(path, "path", OneOf("fixed_L", "proportional"), "fixed_L")
    sgn = list(dict.fromkeys(option_value(signs, "signs", _SIGNS, ("fixed", "random"))))
    upd = option_value(update, "update", OneOf("projected", "riemannian"), "projected")
    n_runs = option_value(runs, "runs", _RUNS, 64)
    hor = option_value(horizon, "horizon", _HORIZON, 3.0)
    n_mom = option_value(n_samples, "n_samples", _SAMPLES, 4000)
    sd = option_value(seed, "seed", _SEED, 0)
    if n_runs == 1:
        raise ConfigError("runs", "must be 0 (the law only) or >= 2 (a bootstrap needs runs)",
                          n_runs)
    check_output_dir(out_dir, "out", create=False)

    rows, lines = [], {}
    for sign in sgn:
        ref = model.replace(signal_sign=sign)
        law = scaling_law(ref, target=tgt, c=c_given, path=pth, update=upd, n_samples=n_mom,
                          seed=sd)
        console.print(f"{sign} sign: c = {law.c:.4g}"
                      + ("" if c_given is not None else " (c_optimal at d₀)"))
        # refuse a simulation that cannot finish before any of it runs
        for d in ds:
            n_pred = law.samples(d)
            L = law.model_at(d).n_tokens
            steps = math.ceil(hor * n_pred) + 10 if math.isfinite(n_pred) else 0
            if n_runs and n_runs * steps * L > MAX_CHAIN_WORK:
                raise ConfigError("dims", f"must keep each chain point below {MAX_CHAIN_WORK:.0e}"
                                  f" token updates (runs × steps × L): d = {d} needs "
                                  f"{n_runs * steps * L:.3g}; use --runs 0 or fewer "
                                  "dimensions", d)
        rows += compare_law(law, ds, runs=n_runs, seed=sd, horizon=hor)
        lines[sign] = _law_line(law, ds)
    frame = pd.DataFrame(rows)
    _print_table(frame)
    from ..results import atomic_write

    out_dir.mkdir(parents=True, exist_ok=True)
    atomic_write(out_dir / "scaling.parquet", lambda tmp: frame.to_parquet(tmp, index=False))
    if plot:
        plot_scaling(frame, lines, out_dir / "scaling", tgt, pth)
    out.print(f"wrote {out_dir / 'scaling.parquet'}", soft_wrap=True)


def _print_table(frame: pd.DataFrame) -> None:
    table = Table(title="samples for the mean |ρ| to reach the target")
    for col in ("sign", "d", "L", "η", "predicted", "measured [95 %]", "pred/meas − 1",
                "hit mean pred/meas (T ≤ H)", "IQR pred/meas"):
        table.add_column(col, justify="right")
    for r in frame.itertuples():
        meas = "—" if not np.isfinite(r.measured) else (
            f"{r.measured:,.0f} [{r.measured_lo:,.0f}, {r.measured_hi:,.0f}]")
        rel = "—" if not np.isfinite(r.measured) else f"{r.predicted / r.measured - 1:+.1%}"
        table.add_row(r.sign, f"{r.d:,}", f"{r.L:,}", f"{r.eta:.3g}",
                      f"{r.predicted:,.0f} ± {r.predicted_error:,.0f}", meas, rel,
                      f"{r.hit_mean_conditional:,.0f} / {r.hit_mean:,.0f}",
                      f"{r.iqr_predicted:,.0f} / {r.iqr:,.0f}")
    out.print(table, soft_wrap=True)


def plot_scaling(frame: pd.DataFrame, lines: dict, stem: Path, target: float,
                 path: str) -> list[Path]:
    """``n(d)/τ(d)`` against ``d``: the law as lines, the measurements as points with their
    intervals, one colour per sign; PNG and PDF at ``stem``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ..plots import save_figure

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    colours = {"fixed": "C0", "random": "C3"}
    for sign, (grid, y) in lines.items():
        ax.plot(grid, y, color=colours[sign], lw=1.5, label=f"law, {sign} sign")
        g = frame[(frame["sign"] == sign) & np.isfinite(frame["measured"])]
        if len(g):
            tau = g["tau"].to_numpy()
            yv = g["measured"].to_numpy() / tau
            err = np.vstack([yv - g["measured_lo"].to_numpy() / tau,
                             np.minimum(g["measured_hi"].to_numpy(), 1e300) / tau - yv])
            ax.errorbar(g["d"], yv, yerr=np.maximum(err, 0.0), fmt="o", color=colours[sign],
                        ms=4, capsize=3, label=f"chain, {sign} sign (95 %)")
    ax.set_xscale("log")
    ax.set_xlabel("dimension d")
    ax.set_ylabel("samples / τ(d),  τ = (L + d)/L")
    ax.set_title(f"samples to mean |ρ| = {target:g} ({path.replace('_', ' ')} path)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return save_figure(fig, stem)
