"""``attnsignal compare``: saved runs overlaid in one figure, with a table of their
configurations.

Each ``DIR`` is a result directory written by ``attnsignal run`` or ``attnsignal baseline``
(or :meth:`attnsignal.Result.save`). The figure ``OUT/compare.{png,pdf}`` draws, per result
and in one colour, the mean ``|ρ|`` over its runs, the 10–90 % band, and its theory: the
limiting ODE for attention (docs/theory.md), the estimator's ``E|ρ|`` for a baseline
(docs/baselines.md); the x axis is samples per run (steps × batch), so runs with other batches
line up. The table (printed, and ``OUT/compare.csv``) lists each result's model, schedule,
engine or method, budget and final mean ``|ρ|``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import numpy as np
import pandas as pd
import typer
from rich.table import Table

from ..config import ConfigError
from ._app import UsageFailure, app
from ._common import console, fmt, out, out_option, output_dir, overwrite_option, progress_bar, quiet_option

__all__ = ["compare_cmd", "configuration_table"]

#: results one figure overlays (beyond it the colours repeat and the bands hide each other)
MAX_RESULTS = 10


def configuration_table(results: list, names: list[str]) -> pd.DataFrame:
    """One row per result: its name, what ran, the model, the schedule, the budget and the
    final mean ± sd of ``|ρ|`` over the runs that did not diverge."""
    rows = []
    for name, r in zip(names, results):
        m, run = r.model, r.run
        s = r.summary()
        rows.append({
            "result": name, "method": r.method,
            "engine": run.engine if r.method == "sga" else "—",
            "d": m.d, "R": m.n_informative, "N": m.n_nuisance, "theta": m.theta,
            "beta": m.beta, "sigma": m.noise_std, "sign": m.signal_sign,
            "schedule": (r.schedule.describe().split(" — ")[0]
                         if r.method in ("sga", "oja") else "—"), "steps": int(r.steps[-1]), "batch": run.batch,
            "runs": s["runs"], "seed": run.seed,
            "final_mean_abs_rho": s["mean_abs_alignment"], "final_sd_abs_rho": s["sd_abs_alignment"],
        })
    return pd.DataFrame(rows)


@app.command("compare")
def compare_cmd(
    dirs: list[Path] = typer.Argument(..., metavar="DIR...", help="result directories (each with a manifest.json) to overlay"),
    theory: bool = typer.Option(True, "--theory/--no-theory", help="draw each result's theory (limiting ODE, or the estimator's E|ρ|)"),
    out_dir: Optional[Path] = out_option("compare", "compare.png, compare.pdf, compare.csv"),
    overwrite: bool = overwrite_option(),
    quiet: bool = quiet_option(),
) -> None:
    """Overlay saved runs (mean |ρ|, 10–90 % band, theory) in one figure and tabulate their
    configurations.

    Writes OUT/compare.{png,pdf} and OUT/compare.csv; prints the table.
    """
    from ..persistence import ResultFileError, ResultMissingError
    from ..results import Result

    if len(dirs) > MAX_RESULTS:
        raise ConfigError("DIR", f"must name at most {MAX_RESULTS} results", len(dirs))
    results = []
    for d in dirs:
        if not Path(d).is_dir():
            raise ConfigError("DIR", "must be a result directory", str(d))
        try:
            results.append(Result.load(d))
        except ResultMissingError:
            raise ConfigError("DIR", "must hold a saved result (manifest.json)", str(d)) from None
        except ResultFileError as exc:
            raise UsageFailure(f"DIR: must hold an intact saved result ({exc})") from None
    names = _names(dirs)
    out_dir = output_dir(out_dir, overwrite, "compare")
    table = configuration_table(results, names)
    from ..persistence import atomic_write

    atomic_write(out_dir / "compare.csv", lambda tmp: table.to_csv(tmp, index=False))
    with progress_bar(len(results), "compare", not quiet) as adv:
        paths = _plot(results, names, out_dir / "compare", theory, adv)
    _print(table)
    files = ", ".join(p.name for p in [out_dir / "compare.csv", *paths])
    out.print(f"written to {out_dir}/: {files}", soft_wrap=True)


def _names(dirs: list[Path]) -> list[str]:
    """Short names: the directories' own names, or their paths where two names agree."""
    own = [Path(d).name or str(d) for d in dirs]
    return own if len(set(own)) == len(own) else [str(d) for d in dirs]


def _print(table: pd.DataFrame) -> None:
    t = Table(title="configurations")
    cols = [c for c in table.columns if c not in ("final_mean_abs_rho", "final_sd_abs_rho")]
    varying = [c for c in cols if c == "result" or table[c].astype(str).nunique() > 1]
    same = [c for c in cols if c not in varying]
    for c in varying:
        t.add_column(c, justify="right")
    t.add_column("final |ρ| (mean ± sd)", justify="right")
    for _, row in table.iterrows():
        t.add_row(*(str(row[c]) for c in varying),
                  f"{fmt(row['final_mean_abs_rho'])} ± {fmt(row['final_sd_abs_rho'])}")
    out.print(t)
    if same:
        first = table.iloc[0]
        out.print("common to all: " + ", ".join(f"{c} = {first[c]}" for c in same),
                  soft_wrap=True, markup=False, highlight=False)


def _plot(results: list, names: list[str], stem: Path, theory: bool, adv) -> list[Path]:
    from ..plots import _plt, band, legend_below, save_figure
    from ._beside import theory_lines

    plt = _plt()
    fig, ax = plt.subplots(figsize=(9, 4.6))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, (r, name) in enumerate(zip(results, names)):
        c = colors[i % len(colors)]
        ok = ~np.asarray(r.diverged, dtype=bool)
        a = np.abs(np.asarray(r.alignment, dtype=np.float64)[ok])
        xs = np.maximum(np.asarray(r.steps, dtype=np.int64) * r.run.batch, 1)
        mean, lo, hi = band(a)
        ax.fill_between(xs, lo, hi, color=c, alpha=0.15, lw=0)
        ax.plot(xs, mean, color=c, lw=2, label=f"{name}: mean over {a.shape[0]} runs")
        if theory:
            if r.method == "sga":
                lines = theory_lines(r, effective=False)
                if lines.ode is not None:
                    ax.plot(xs, lines.ode, color=c, ls="--", lw=1.2,
                            label=f"{name}: limiting ODE")
                for note in lines.notes:
                    console.print(f"note: {name}: {note}", markup=False, highlight=False)
            else:
                from ..baselines import baseline_theory

                th = baseline_theory(r.model, r.method, np.maximum(np.asarray(r.steps), 1),
                                     step=r.schedule if r.method == "oja" else None)
                ax.plot(xs, th, color=c, ls="-.", lw=1.2, label=f"{name}: {r.method} theory")
        adv(1)
    ax.set_xscale("log")
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("samples per run (steps × batch)")
    ax.set_ylabel(r"$|\rho| = |\langle q, \xi\rangle|$")
    ax.set_title(r"mean $|\rho|$ and 10–90 % band of the runs" + (", with theory" if theory else ""))
    ax.grid(alpha=0.3)
    handles, labels = ax.get_legend_handles_labels()
    legend_below(fig, handles, labels, ncol=2)
    return save_figure(fig, stem)
