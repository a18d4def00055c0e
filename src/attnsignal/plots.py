"""Matplotlib figures of simulation results (written as PNG and PDF, Agg backend)."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import numpy as np

from .results import Result, atomic_write

__all__ = ["save_figure", "plot_run", "band"]


def use_agg_unless_pyplot_is_loaded() -> None:
    """Select the Agg backend — unless pyplot is already loaded: then the user (a notebook's
    inline backend, an interactive session) chose one, and switching it would silently stop
    their figures from showing."""
    import sys

    if "matplotlib.pyplot" not in sys.modules:
        import matplotlib

        matplotlib.use("Agg", force=False)


def _plt():
    use_agg_unless_pyplot_is_loaded()
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig, stem: str | Path, dpi: int = 150) -> list[Path]:
    """Save ``fig`` as ``stem.png`` and ``stem.pdf`` atomically; close it; return the paths.

    ``stem`` is a path without extension (``figures/e1`` → ``figures/e1.png``, ``.pdf``). Both
    files are cropped to the figure's tight bounding box (padded by ``savefig.pad_inches``),
    found once for both: ``bbox_inches="tight"`` would lay the figure out again for each
    format."""
    import matplotlib

    stem = Path(stem)
    shown_dpi = fig.dpi
    fig.set_dpi(dpi)  # text extents are measured at the dpi the PNG is drawn at
    try:
        fig.draw_without_rendering()
        bbox = fig.get_tightbbox().padded(matplotlib.rcParams["savefig.pad_inches"])
    finally:
        fig.set_dpi(shown_dpi)
    paths = []
    for ext in ("png", "pdf"):
        p = stem.parent / f"{stem.name}.{ext}"  # not with_suffix: keep dots in the name
        atomic_write(p, lambda tmp, e=ext: fig.savefig(tmp, format=e, dpi=dpi, bbox_inches=bbox))
        paths.append(p)
    _plt().close(fig)
    return paths


def band(values: np.ndarray, lo: float = 10, hi: float = 90) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean and the ``lo``–``hi`` percentile band over axis 0, ignoring NaN (diverged) runs."""
    with np.errstate(all="ignore"):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return (
                np.nanmean(values, axis=0),
                np.nanpercentile(values, lo, axis=0),
                np.nanpercentile(values, hi, axis=0),
            )


def plot_run(
    result: Result,
    stem: str | Path,
    *,
    x: str = "step",
    overlay: Callable | None = None,
    title: str | None = None,
) -> list[Path]:
    """Two panels: |ρ| per run (thin), mean and 10–90 % band; informative mass (mean, band).

    ``x`` is ``"step"`` or ``"ode_time"``. ``overlay(ax)`` may draw more on the alignment panel
    (e.g. the ODE solution). Returns the written paths (PNG, PDF).
    """
    plt = _plt()
    xs = result.steps if x == "step" else result.ode_time
    a = np.abs(result.alignment)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    for row in a:
        ax1.plot(xs, row, color="tab:blue", lw=0.5, alpha=0.25)
    mean, lo, hi = band(a)
    ax1.fill_between(xs, lo, hi, color="tab:blue", alpha=0.2, label="10–90 % of runs")
    ax1.plot(xs, mean, color="navy", lw=2, label=f"mean over {a.shape[0]} runs")
    if overlay is not None:
        overlay(ax1)
    ax1.set_ylim(0, 1.02)
    ax1.set_xlabel("step k" if x == "step" else "ODE time t = Σ η")
    ax1.set_ylabel("|ρ| = |⟨q, ξ⟩|")
    ax1.set_title("alignment")
    ax1.grid(alpha=0.3)
    ax1.legend(loc="lower right", fontsize=8)

    m = result.informative_mass[:, 1:]
    mm, mlo, mhi = band(m)
    ax2.fill_between(xs[1:], mlo, mhi, color="tab:orange", alpha=0.25, label="10–90 %")
    ax2.plot(xs[1:], mm, color="tab:red", lw=2, label=r"mean informative mass $\sum_{i\in I}\alpha_i$")
    w = result.max_nuisance_weight[:, 1:]
    ax2.plot(xs[1:], np.nanmean(w, axis=0), color="gray", lw=1.2, label="mean largest nuisance weight")
    md = result.model
    ax2.axhline(md.n_informative / md.n_tokens, color="k", ls=":", lw=1, label="R/L (uniform attention)")
    ax2.set_ylim(0, 1.02)
    ax2.set_xlabel(ax1.get_xlabel())
    ax2.set_title("attention on informative tokens")
    ax2.grid(alpha=0.3)
    ax2.legend(loc="upper left", fontsize=8)
    fig.suptitle(
        title
        or (
            f"d={md.d}, R={md.n_informative}, N={md.n_nuisance}, θ={md.theta:g}, β={md.beta:g}; "
            f"{result.engine} engine, {result.update} update, B={result.run.batch}"
        ),
        fontsize=10,
    )
    fig.tight_layout()
    return save_figure(fig, stem)
