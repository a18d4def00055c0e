"""Matplotlib figures of simulation results (written as PNG and PDF, Agg backend)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Callable

import numpy as np

from .results import Result, atomic_write

__all__ = ["save_figure", "plot_run", "band", "legend_below", "schedule_tex", "tex_powers"]


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
    files are cropped to the figure's tight bounding box (padded by ``savefig.pad_inches``).

    The figure is drawn twice in all. The first draw, with Agg at ``dpi``, gives both that box
    and the PNG: its pixels are cropped from the canvas to the box, as many as
    ``savefig(bbox_inches=box)`` would write. The second draw writes the PDF. (``savefig`` with
    ``bbox_inches="tight"`` would lay the figure out once more for each format. After
    ``fig.tight_layout()``, the figure keeps a placeholder layout engine that does nothing
    when drawn, yet ``savefig`` lays the figure out again before each format because of it,
    so the placeholder is removed first.) Where the content reaches beyond the canvas (an
    artist outside the figure), the PNG is drawn by ``savefig`` instead.
    """
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.layout_engine import PlaceHolderLayoutEngine

    stem = Path(stem)
    rc = matplotlib.rcParams
    if (isinstance(fig.get_layout_engine(), PlaceHolderLayoutEngine)
            and not rc["figure.autolayout"] and not rc["figure.constrained_layout.use"]):
        fig.set_layout_engine(None)
    shown_dpi, shown_canvas = fig.dpi, fig.canvas
    agg = FigureCanvasAgg(fig)  # the figure's canvas until restored below
    try:
        fig.set_dpi(dpi)  # text extents are measured at the dpi the PNG is drawn at
        agg.draw()
        tight = fig.get_tightbbox(agg.get_renderer())
        bbox = tight.padded(rc["savefig.pad_inches"])
        pixels = _crop(np.asarray(agg.buffer_rgba()), tight, bbox, dpi, fig.get_facecolor())
    finally:
        fig.set_dpi(shown_dpi)
        fig.set_canvas(shown_canvas)
    png = stem.parent / f"{stem.name}.png"  # not with_suffix: keep dots in the name
    pdf = stem.parent / f"{stem.name}.pdf"
    if pixels is not None:
        atomic_write(png, lambda tmp: matplotlib.image.imsave(tmp, pixels, format="png", dpi=dpi))
    else:
        atomic_write(png, lambda tmp: fig.savefig(tmp, format="png", dpi=dpi, bbox_inches=bbox))
    atomic_write(pdf, lambda tmp: fig.savefig(tmp, format="pdf", dpi=dpi, bbox_inches=bbox))
    _plt().close(fig)
    return [png, pdf]


def _crop(rgba: np.ndarray, tight, bbox, dpi: float, face) -> np.ndarray | None:
    """The pixels of the canvas ``rgba`` (``(h, w, 4)`` uint8, row 0 at the top) inside
    ``bbox`` (inches from the lower left), as many as ``savefig(bbox_inches=bbox)`` writes
    (its lower left corner rounded to a pixel); what the padding adds
    beyond the canvas is the figure's face colour. ``None`` when the content itself
    (``tight``) reaches beyond the canvas: those pixels were never drawn."""
    h, w = rgba.shape[:2]
    if not (tight.x0 * dpi >= 0 and tight.y0 * dpi >= 0 and tight.x1 * dpi <= w
            and tight.y1 * dpi <= h and tight.width > 0 and tight.height > 0):
        return None
    # savefig's pixels: the box's extent in whole pixels (truncated) from its lower left
    # corner (the origin of the translated drawing)
    x0, r1 = int(round(bbox.x0 * dpi)), int(round(h - bbox.y0 * dpi))
    x1, r0 = x0 + int(bbox.width * dpi), r1 - int(bbox.height * dpi)
    out = np.empty((r1 - r0, x1 - x0, 4), dtype=np.uint8)
    out[...] = np.round(np.asarray(face, dtype=float) * 255.0).astype(np.uint8)
    cr0, cr1, cx0, cx1 = max(r0, 0), min(r1, h), max(x0, 0), min(x1, w)
    out[cr0 - r0:cr1 - r0, cx0 - x0:cx1 - x0] = rgba[cr0:cr1, cx0:cx1]
    return out


def legend_below(fig, handles: list, labels: list, *, ncol: int = 3,
                 fontsize: float = 10, note: str = "") -> None:
    """One legend for the whole figure, centred under its panels — outside every data area —
    after laying the panels out with room for it (``tight_layout`` with a bottom margin sized
    to the legend's rows); ``note``, a line of text under the legend. Everything stays on
    the canvas, so :func:`save_figure` keeps its single draw."""
    rows = -(-len(labels) // ncol)
    fig.tight_layout()
    height = fig.get_size_inches()[1]
    below = 0.3 / height if note else 0.0  # inches for the note's line
    margin = (0.32 * rows + 0.15) / height + below  # inches per legend row at this font size
    fig.tight_layout(rect=(0, margin, 1, 1))
    fig.legend(handles, labels, loc="lower center", ncol=ncol, fontsize=fontsize,
               frameon=False, bbox_to_anchor=(0.5, below))
    if note:
        fig.text(0.5, 0.08 / height, note, ha="center", va="bottom", fontsize=fontsize - 0.5,
                 style="italic", wrap=True)


_POWER = re.compile(r"(?<![\\$\w])([A-Za-z])\^(\{[^}]*\}|[0-9]+)")


def tex_powers(text: str) -> str:
    """Plain-text powers as math: ``S^999`` → ``$S^{999}$``, ``e^{βθ}`` → ``$e^{βθ}$``
    (matplotlib mathtext and KaTeX both read it); text already in ``$…$`` is left alone."""
    parts = text.split("$")
    for i in range(0, len(parts), 2):  # outside math only
        parts[i] = _POWER.sub(lambda m: f"${m.group(1)}^{{{m.group(2).strip('{}')}}}$",
                              parts[i])
    return "$".join(parts)


def schedule_tex(step) -> str:
    """A step-size schedule as math text (matplotlib mathtext and KaTeX read the same TeX):
    ``$\\eta_k = 0.05\\,(1 + k/1000)^{-1}$``; a schedule of another family, its
    ``describe()``."""
    eta0, k0, power = (getattr(step, a, None) for a in ("eta0", "k0", "power"))
    if eta0 is not None and k0 is not None and power is not None:
        return f"$\\eta_k = {eta0:g}\\,(1 + k/{k0:g})^{{-{power:g}}}$"
    if eta0 is not None and k0 is None:
        return f"$\\eta_k = {eta0:g}$ (constant)"
    return step.describe()


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
    ax1.set_xlabel("step $k$" if x == "step" else r"ODE time $t = \Sigma_{j<k}\,\eta_j$")
    ax1.set_ylabel(r"$|\rho| = |\langle q, \xi\rangle|$")
    ax1.set_title("alignment")
    ax1.grid(alpha=0.3)
    ax1.legend(loc="lower right", fontsize=9.5)

    m = result.informative_mass[:, 1:]
    mm, mlo, mhi = band(m)
    ax2.fill_between(xs[1:], mlo, mhi, color="tab:orange", alpha=0.25, label="10–90 %")
    ax2.plot(xs[1:], mm, color="tab:red", lw=2, label=r"mean informative mass $\Sigma_{i\in I}\,\alpha_i$")
    w = result.max_nuisance_weight[:, 1:]
    ax2.plot(xs[1:], np.nanmean(w, axis=0), color="gray", lw=1.2, label="mean largest nuisance weight")
    md = result.model
    ax2.axhline(md.n_informative / md.n_tokens, color="k", ls=":", lw=1, label="R/L (uniform attention)")
    ax2.set_ylim(0, 1.02)
    ax2.set_xlabel(ax1.get_xlabel())
    ax2.set_title("attention on informative tokens")
    ax2.grid(alpha=0.3)
    ax2.legend(loc="upper left", fontsize=9.5)
    fig.suptitle(
        title
        or (
            f"$d$ = {md.d}, $R$ = {md.n_informative}, $N$ = {md.n_nuisance}, "
            f"$\\theta$ = {md.theta:g}, $\\beta$ = {md.beta:g}; "
            f"{result.engine} engine, {result.update} update, $B$ = {result.run.batch}"
        ),
        fontsize=10,
    )
    fig.tight_layout()
    return save_figure(fig, stem)
