"""Where constant-step runs settle, from the exact one-step moments (``docs/scaling.md``,
"Critical, optimal and feedback steps").

A constant step ``η`` makes the alignment a time-homogeneous Markov chain on ``(−1, 1)``. Its
one-step mean ``m(ρ, η) = E[ρ' − ρ]`` and variance ``v(ρ, η) = Var[ρ' − ρ]`` are computed
without expanding in ``η`` by :func:`.moments.one_step_moments` (the exact update applied to
draws of the reduced sampler; exact in law up to Monte-Carlo error, common random numbers at
every ``(ρ, η)``). :func:`step_moments` tabulates them on nodes in ``φ = arcsin ρ`` and a
geometric range of steps, and :meth:`StepMoments.at` interpolates ``m/η`` and ``v/η²`` (smooth
in ``log η``: ``m/η → F``, ``v/η² → (1 − ρ²) Var g_e`` as ``η → 0``) at any step in the range.

:func:`stationary_mean_abs` gives the long-run mean ``|ρ|`` of the chain with those moments:
the chain on a grid of ``(−1, 1)`` whose transition from a cell is the normal law with the
cell's mean and variance, integrated over the destination cells, restricted to a basin — the
interval between consecutive unstable roots of ``m`` (or ``±1``) — and renormalised there
(reflection at the basin's ends; the runs that cross an unstable root within a measurement
window are neglected), and its stationary law by a sparse linear solve. This keeps every order
of ``η`` in the mean and variance of a step, and the noise's effect on where the runs settle to
all orders in the variance (the second-order shift of :func:`.escape.stationary_shift`
diverges at a saddle-node; the grid chain does not); it neglects the step's third and higher
cumulants (the normal kernel), which move the stationary mean at third order in the step's
spread. Where the step's spread is too small for the grid to resolve the stationary law, the
stable root moved by the second-order shift is used instead. ``ScalingLaw.c_critical_at``
(:mod:`.scaling`) uses it where the expansion in ``η`` fails.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Callable

import numpy as np
from scipy import sparse
from scipy.interpolate import CubicSpline
from scipy.sparse.linalg import MatrixRankWarning, spsolve
from scipy.special import ndtr

from ..config import ModelConfig
from .escape import _roots, settled_mean, start_density
from .moments import one_step_moments

__all__ = ["StepMoments", "step_moments", "stationary_mean_abs"]

#: Chebyshev–Lobatto nodes in ``φ = arcsin ρ`` (the moments are analytic in ``φ``)
_NODES = 41
#: the most cells of the grid chain in one basin
_MAX_CELLS = 2400
#: kernel support in standard deviations
_KSD = 9.0

Fn = Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True, eq=False)
class StepMoments:
    """``m/η`` and ``v/η²`` of one step on ``rho`` (``(n_rho,)``) × ``eta`` (``(n_eta,)``, model
    units, geometric), with the drift's largest Monte-Carlo standard error relative to
    ``|m|`` at each step (``rel_se``) and its standard error at each node (``drift_se``, in the
    units of ``drift``)."""

    rho: np.ndarray
    eta: np.ndarray
    drift: np.ndarray  # m/η
    var: np.ndarray  # v/η²
    rel_se: np.ndarray
    drift_se: np.ndarray  # se(m)/η

    def at(self, eta: float, shift: float = 0.0) -> tuple[Fn, Fn]:
        """``(m, v)`` at the step ``eta`` (inside the tabulated range) as functions of ``ρ``;
        ``shift`` standard errors of the drift taken off ``|m|`` at every node (fully
        correlated; ``shift > 0`` slows the runs, as a larger ``κ`` would)."""
        lo, hi = float(self.eta[0]), float(self.eta[-1])
        if not lo * (1 - 1e-9) <= eta <= hi * (1 + 1e-9):
            raise ValueError(f"eta = {eta} outside the tabulated range [{lo}, {hi}]")
        le = np.log(self.eta)
        x = math.log(eta)
        if self.eta.size == 1:
            dr, vr, se = self.drift[:, 0], self.var[:, 0], self.drift_se[:, 0]
        else:
            dr = CubicSpline(le, self.drift, axis=1)(x)
            vr = CubicSpline(le, self.var, axis=1)(x)
            se = CubicSpline(le, self.drift_se, axis=1)(x)
        if shift:  # towards zero, with a sign smoothed where |m| is within its error
            dr = dr - shift * se * dr / np.sqrt(dr * dr + se * se + 1e-300)
        phi = np.arcsin(self.rho)
        sd = CubicSpline(phi, dr)
        sv = CubicSpline(phi, np.maximum(vr, 0.0))

        def m(rho: np.ndarray) -> np.ndarray:
            return eta * sd(np.arcsin(np.clip(rho, -1.0, 1.0)))

        def v(rho: np.ndarray) -> np.ndarray:
            return eta * eta * np.maximum(sv(np.arcsin(np.clip(rho, -1.0, 1.0))), 0.0)

        return m, v

    def drift_se_at(self, eta: float) -> Fn:
        """The standard error of ``m`` at the step ``eta`` (a tabulated step) as a function of
        ``ρ`` (interpolated between the nodes)."""
        k = int(np.argmin(np.abs(np.log(self.eta / eta))))
        sse = CubicSpline(np.arcsin(self.rho), self.drift_se[:, k])

        def se(rho: np.ndarray) -> np.ndarray:
            return eta * np.abs(sse(np.arcsin(np.clip(rho, -1.0, 1.0))))

        return se


def _phi_nodes(n: int) -> np.ndarray:
    phi = 0.5 * np.pi * np.cos(np.pi * np.arange(n) / (n - 1))[::-1]
    rho = np.sin(phi)
    rho[np.abs(rho) < 1e-15] = 0.0
    return rho


def step_moments(model: ModelConfig, eta_lo: float, eta_hi: float, *, n_eta: int = 9,
                 n_samples: int = 4000, seed: int = 0, update: str = "projected",
                 n_rho: int = _NODES) -> StepMoments:
    """The exact one-step moments of ``model`` at ``n_eta`` steps from ``eta_lo`` to ``eta_hi``
    (geometric; model units) on ``n_rho`` nodes in ``arcsin ρ`` (the ends ``±1`` moved in to
    ``±(1 − 1e-9)``; the moments vanish there). The random sign's drift is odd in ``ρ`` and its
    variance even: its nodes are ``ρ >= 0`` and the rest is their reflection (exact symmetry,
    no Monte-Carlo asymmetry)."""
    rho = _phi_nodes(n_rho)
    rho = np.clip(rho, -1.0 + 1e-9, 1.0 - 1e-9)
    random = model.signal_sign == "random"
    r = rho[rho >= 0.0] if random else rho
    etas = np.geomspace(eta_lo, eta_hi, n_eta) if n_eta > 1 else np.array([float(eta_lo)])
    om = one_step_moments(model, r, etas, n_samples=n_samples, seed=seed, update=update)
    dr, vr, se = om.drift_rho, om.var_rho, om.stderr_drift_rho
    if random:
        neg = r > 0
        r = np.concatenate([-r[neg][::-1], r])
        dr = np.concatenate([-dr[neg][::-1], dr])
        vr = np.concatenate([vr[neg][::-1], vr])
        se = np.concatenate([se[neg][::-1], se])
    scale = np.max(np.abs(dr), axis=0)
    rel = np.max(se, axis=0) / np.where(scale > 0, scale, 1.0)
    return StepMoments(rho=r, eta=etas, drift=dr / etas[None, :],
                       var=vr / (etas * etas)[None, :], rel_se=rel, drift_se=se / etas[None, :])


def _basins(m: Fn) -> list[tuple[float, float]]:
    """Intervals between consecutive unstable roots of ``m`` (and ``±1``)."""
    roots, stable = _roots(m)
    cuts = [float(r) for r, s in zip(roots, stable) if not s]
    edges = [-1.0] + cuts + [1.0]
    return [(edges[i], edges[i + 1]) for i in range(len(edges) - 1)]


def _basin_mean_abs(m: Fn, v: Fn, lo: float, hi: float) -> float | None:
    """The stationary mean ``|ρ|`` of the grid chain restricted to ``(lo, hi)``: once on the
    basin, then on the range that holds its stationary mass (beyond ``1e-12`` in either tail,
    widened by ten of the step's spreads) with cells of a sixth of the step's smallest spread
    there (at most :data:`_MAX_CELLS`). None where the grid does not resolve the stationary
    law (its spread below five cells: a noise too small for the grid)."""
    x, pi = _grid_stationary(m, v, lo, hi, 3.0)
    if x is None:
        return None
    cdf = np.cumsum(pi)
    a = x[min(int(np.searchsorted(cdf, 1e-12)), x.size - 1)]
    b = x[min(int(np.searchsorted(cdf, 1.0 - 1e-12)), x.size - 1)]
    pad = 10.0 * float(np.sqrt(np.maximum(v(np.array([a, b])), 0.0)).max())
    lo2, hi2 = max(lo, a - pad), min(hi, b + pad)
    if hi2 - lo2 < 0.5 * (hi - lo):
        x, pi = _grid_stationary(m, v, lo2, hi2, 6.0)
        if x is None:
            return None
    mean = float(pi @ x)
    spread = math.sqrt(max(float(pi @ (x * x)) - mean * mean, 0.0))
    if not spread >= 5.0 * (x[1] - x[0]):
        return None
    return float(pi @ np.abs(x))


def _grid_stationary(m: Fn, v: Fn, lo: float, hi: float, per_sd: float
                     ) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Cell midpoints and the stationary law of the grid chain on ``(lo, hi)`` (None, None
    where the linear system is singular: cells that map into themselves)."""
    probe = np.linspace(lo, hi, 2001)[1:-1]
    sd = np.sqrt(np.maximum(v(probe), 0.0))
    # cells fine enough to resolve the kernel where the chain lives (where the step's spread
    # is smallest, near ±1, the kernel is a near-point mass and the cell integral keeps it)
    pos = sd > 0
    h_fine = float(np.quantile(sd[pos], 0.05)) / per_sd if pos.any() else (hi - lo) / 200
    n = int(min(_MAX_CELLS, max(200, math.ceil((hi - lo) / max(h_fine, 1e-12)))))
    edges = np.linspace(lo, hi, n + 1)
    x = 0.5 * (edges[:-1] + edges[1:])
    mu = x + m(x)
    s = np.sqrt(np.maximum(v(x), 0.0)) + 1e-3 * (hi - lo) / n
    # each row: the normal kernel integrated over the cells within _KSD spreads of its mean
    # (a kernel wholly beyond an end: the nearest cell), renormalised to the basin
    a = np.clip(np.searchsorted(edges, mu - _KSD * s) - 1, 0, n - 1)
    b = np.clip(np.searchsorted(edges, mu + _KSD * s), a + 1, n)
    width = int((b - a).max())
    cols = a[:, None] + np.arange(width)[None, :]
    inside = cols < b[:, None]
    cols = np.minimum(cols, n - 1)
    z_lo = (edges[cols] - mu[:, None]) / s[:, None]
    z_hi = (edges[cols + 1] - mu[:, None]) / s[:, None]
    p = np.where(inside, ndtr(z_hi) - ndtr(z_lo), 0.0)
    tot = p.sum(axis=1)
    empty = ~(tot > 0)
    if empty.any():  # the whole kernel beyond an end of the basin: the nearest cell
        p[empty] = 0.0
        p[empty, 0] = 1.0
        cols[empty, 0] = np.clip(np.searchsorted(edges, mu[empty]) - 1, 0, n - 1)
        tot = p.sum(axis=1)
    p /= tot[:, None]
    rows = np.repeat(np.arange(n), width)
    P = sparse.csr_matrix((p.ravel(), (rows, cols.ravel())), shape=(n, n))
    # π P = π, Σ π = 1: (Pᵀ − I) π = 0 with the last equation replaced by the normalisation
    A = (P.T - sparse.identity(n, format="csr")).tolil()
    A[n - 1, :] = np.ones(n)
    rhs = np.zeros(n)
    rhs[-1] = 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MatrixRankWarning)
        pi = spsolve(A.tocsr(), rhs)
    if not np.all(np.isfinite(pi)) or not pi.sum() > 0:
        return None, None
    pi = np.maximum(pi, 0.0)
    return x, pi / pi.sum()


def stationary_mean_abs(m: Fn, v: Fn, d: int | None = None, side: int = 0) -> float:
    """The long-run mean ``|ρ|`` of the chain with one-step mean ``m`` and variance ``v``
    (module docstring): ``side = ±1`` in the basin that contains ``±0.9`` (the runs that go to
    ``±ξ``); ``side = 0`` over the basins weighted by a uniform start's mass on ``S^{d−1}``
    (``d = None``: the two basins next to 0, equally). Where the grid cannot resolve the
    stationary law (a step's spread far below the basin's width / :data:`_MAX_CELLS`), the
    stable root of ``m`` moved by the noise's second-order shift
    (:func:`.escape.settled_mean`): the noise is then too small for its higher orders to
    matter."""
    basins = _basins(m)
    if side:
        y = 0.9 * side
        lo, hi = next((a, b) for a, b in basins if a <= y <= b)
        got = _basin_mean_abs(m, v, lo, hi)
        return settled_mean(m, v, d, side) if got is None else got
    if d is None:
        picks = [next((a, b) for a, b in basins if a <= y <= b) for y in (-1e-13, 1e-13)]
        parts = [(0.5, a, b) for a, b in picks]
    else:
        sd = 1.0 / math.sqrt(d)
        x = np.linspace(max(-1.0, -12 * sd), min(1.0, 12 * sd), 4001)
        w = start_density(d, x)
        w /= w.sum()
        parts = [(float(w[(x >= a) & (x < b)].sum()), a, b) for a, b in basins]
    out = 0.0
    for mass, a, b in parts:
        if mass > 1e-9:
            got = _basin_mean_abs(m, v, a, b)
            if got is None:
                return settled_mean(m, v, d, 0)
            out += mass * got
    return out
