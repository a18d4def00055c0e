"""The law of a slow one-dimensional chain with small noise: hitting times and mean ``|ρ|``
(``docs/scaling.md``, "The law of a run").

:func:`hitting_law` evolves the chain's law on a grid (:mod:`.chain_grid`, ``noise="grid"``,
and by default where the grid resolves the runs' spread) or builds the linear-noise law below
(``noise="linear"``); the flow below serves both (the escape law, the median path).

The alignment moves by steps with mean ``g(ρ)`` and variance ``v(ρ)`` (both small; per step,
time-homogeneous) from an initial law of ``ρ0``. Per run:

* **deterministic part** — the flow ``dρ/dk = ĝ(ρ)`` with the modified drift
  ``ĝ = g − ½ g g'``, whose time-one map is the step ``ρ ↦ ρ + g(ρ)`` up to ``O(g³)``. On an
  interval between consecutive roots of ``ĝ`` the flow is monotone, and the time from ``x`` to
  ``y`` is ``Θ(y) − Θ(x)`` with ``Θ(ρ) = ∫ dρ/ĝ``. ``Θ`` is tabulated in a logistic coordinate
  ``ρ = r_lo + (r_hi − r_lo) σ(u)``, in which ``dρ/(ĝ du)`` stays bounded at simple roots, so
  the logarithmic divergence of ``Θ`` at an unstable root and at a stable one are both
  resolved by a uniform grid in ``u``;
* **noise** (linear-noise approximation) — the noise of step ``j`` moves the end of the path
  as a perturbation ``δ_j / J(0 → j)`` of the start would, with ``J(0 → j) = ĝ(ρ_j)/ĝ(ρ_0)``
  the flow's Jacobian in one dimension. The noise is therefore an independent Gaussian
  perturbation of the start with variance

      V_eq(x0) = ĝ(x0)² ∫_{x0}^{end} v(ρ) / ĝ(ρ)³ dρ,

  ``end`` the target level on the run's side. Near an unstable root ``ρ_c`` with
  ``ĝ ≈ λ (ρ − ρ_c)`` this is ``v(ρ_c)/(2λ)`` — the stationary variance of the linearised
  escape — and the law reduces to the escape law below.

The law of a run is then that of the deterministic flow from ``x = x0 + √V_eq(x0) W``, ``x0``
from the initial law and ``W`` standard normal. The density of ``x`` (the initial law convolved
with the local noise kernel) is evaluated on a grid, uniform over its support and geometric
around every unstable root in it — the hitting time is logarithmic in ``|x − ρ_c|``, and on a
geometric grid the trapezoid rule integrates it to high accuracy. The mean ``E|ρ_k|`` is a
weighted sum of flow positions, the hitting time of ``|ρ| = X`` a weighted law of
``Θ(±X) − Θ(x)``.

Escape law. Where the initial mass sits at an unstable root ``ρ_c`` (a saddle of the landscape
at ``ρ ≈ 0``), write ``x − ρ_c = A``. Then the time to reach ``±X`` is

    T = (1/λ) ln(|±X − ρ_c| / |A|) + C_±,   C_± = ∫_{ρ_c}^{±X} [1/ĝ − 1/(λ(ρ − ρ_c))] dρ,

and for ``A ~ N(0, σ_A²)`` (``σ_A² = Var ρ0 + v(ρ_c)/(2λ)``), ``ln|A| = ln σ_A + ln|Z|`` with
``E ln|Z| = −(γ_E + ln 2)/2`` and ``Var ln|Z| = π²/8``: the mean is
``(1/λ)[ln(X/σ_A) + (γ_E + ln 2)/2] + C̄`` and the standard deviation ``π/(2√2 λ)`` (with equal
``C_±`` and ``ρ_c = 0``; :meth:`HittingLaw.escape` gives the general values by quadrature and
these closed forms beside them).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
from scipy.optimize import brentq
from scipy.special import expit

from ..config import ConfigError
from .chain_grid import SURVIVAL_TOL as GRID_SURVIVAL_TOL
from .chain_grid import ChainGrid, _deriv, evolve

__all__ = ["HitMoments", "HittingLaw", "EscapeLaw", "hitting_law", "start_density",
           "uniform_mean_abs", "stationary_shift", "settled_mean"]

Fn = Callable[[np.ndarray], np.ndarray]

#: Logistic half-range of an interval's table: ``σ(−U) ≈ 1e-10`` of the interval's width.
_U = 23.0
_NU = 2401
_EULER = 0.5772156649015329


def stationary_shift(gh: Fn, v: Fn, root: float) -> float:
    """The mean of the stationary law around a stable root ``ρ_p`` minus ``ρ_p``: at
    stationarity ``E[ĝ(ρ)] = 0``, and with ``ĝ ≈ −γ x + ½ ĝ'' x²`` (``x = ρ − ρ_p``) and
    ``E x² ≈ v/(2γ)`` this is ``ĝ''(ρ_p) v(ρ_p) / (4 γ²)`` — the noise's second-order shift of
    where the runs settle (``O(1/d)`` at fixed ``L``)."""
    h = 1e-4
    x = np.array([root - h, root, root + h])
    x = np.clip(x, -1.0, 1.0)
    gv = gh(x)
    g1 = (gv[2] - gv[0]) / (x[2] - x[0])
    g2 = (gv[2] - 2.0 * gv[1] + gv[0]) / (0.25 * (x[2] - x[0]) ** 2)
    if not g1 < 0:
        return 0.0
    return float(g2 * v(np.array([root]))[0] / (4.0 * g1 * g1))


@dataclass(frozen=True, eq=False)
class _Interval:
    """The flow on ``(lo, hi)`` between consecutive roots (or ``±1``): its sign and tables."""

    lo: float
    hi: float
    sign: int  # +1: flows up, −1: flows down
    lo_root: bool  # lo is a root of ĝ (not the boundary −1)
    hi_root: bool
    u: np.ndarray
    rho: np.ndarray
    theta: np.ndarray  # Θ(u), Θ(0) = 0
    dlo: np.ndarray  # ρ − lo
    dhi: np.ndarray  # hi − ρ
    jint: np.ndarray  # ∫_{ρ}^{end} v/ĝ³ dρ (end = the target level on this side); NaN if none
    end: float  # the target level reached on this interval's flow (NaN if none)

    def u_of(self, x: np.ndarray) -> np.ndarray:
        t = np.clip((x - self.lo) / (self.hi - self.lo), 1e-300, 1.0 - 1e-16)
        return np.log(t) - np.log1p(-t)

    def theta_of(self, x: np.ndarray) -> np.ndarray:
        return np.interp(self.u_of(x), self.u, self.theta)

    def position(self, th: np.ndarray) -> np.ndarray:
        """``ρ`` with ``Θ(ρ) = th`` (clamped at the table's ends, i.e. at the roots)."""
        if self.theta[-1] >= self.theta[0]:
            return np.interp(th, self.theta, self.rho)
        return np.interp(-th, -self.theta, self.rho)


@dataclass(frozen=True)
class EscapeLaw:
    """The escape from an unstable root ``root`` near ``ρ = 0`` (``docs/scaling.md``).

    rate : ``λ = ĝ'(ρ_c)`` per step
    amplitude_sd : ``σ_A`` of the effective start ``A = x − ρ_c`` (initial spread and noise)
    initial_sd, noise_sd : its two parts (``σ_A² = initial_sd² + noise_sd²``)
    offset : ``E[A]`` (``E ρ0 − ρ_c``)
    c_plus, c_minus : the constants ``C_±`` (steps)
    mean, sd : the law's hitting time of ``|ρ| = X`` (``hit_mean``, ``hit_sd``: the grid's, or
        the linear-noise law's quadrature over the effective start)
    mean_closed, sd_closed : the closed forms ``(1/λ)[ln(X/σ_A) + (γ_E + ln 2)/2] + (C_+ + C_−)/2``
        and ``√(π²/8 + (λ(C_+ − C_−)/2)²)/λ`` (centred amplitude, ``ρ_c`` neglected against ``X``)
    """

    root: float
    rate: float
    amplitude_sd: float
    initial_sd: float
    noise_sd: float
    offset: float
    c_plus: float
    c_minus: float
    mean: float
    sd: float
    mean_closed: float
    sd_closed: float


@dataclass(frozen=True)
class HitMoments:
    """The law's hitting step ``T`` of ``|ρ| = X`` seen through a horizon of ``H`` steps, as a
    simulation of ``H`` steps sees it (:meth:`HittingLaw.hit_moments`).

    horizon : ``H`` (``inf``: no horizon)
    reached : ``P(T <= H)``
    mean, sd : the mean and standard deviation of ``T`` given ``T <= H`` — what the runs that
        reach the target within the horizon estimate (NaN where ``reached`` is 0)
    kurtosis : the excess kurtosis of ``T`` given ``T <= H``: the relative standard error of a
        standard deviation estimated from ``n`` such runs is ``√((kurtosis + 2)/(4n))``
    restricted_mean, restricted_sd : the mean and standard deviation of ``min(T, H)`` over all
        runs (``inf`` with ``H = inf`` where some runs never reach the target)
    """

    horizon: float
    reached: float
    mean: float
    sd: float
    kurtosis: float
    restricted_mean: float
    restricted_sd: float


@dataclass(frozen=True, eq=False)
class HittingLaw:
    """The law of the runs (module docstring) for one drift/noise pair and target ``X``.

    roots, stable : the roots of ``ĝ`` in ``(−1, 1)`` and whether each attracts
    reachable : whether the long-run mean ``|ρ|`` reaches ``X`` (``mean_limit >= X``)
    mean_limit : ``Σ w |ρ_∞|`` over the nodes (where each node's flow settles)
    samples : the first (real) step ``k`` with ``E|ρ_k| >= X`` (``inf`` if never)
    noise : the treatment of the noise the law used, "grid" or "linear" (:func:`hitting_law`)
    grid_error : with the grid, its estimate of its samples' relative error (NaN otherwise)
    hit_fraction : weight of the runs whose ``|ρ|`` reaches ``X``
    hit_mean, hit_sd : mean and standard deviation of those runs' hitting steps, with no
        horizon; a simulation of ``H`` steps sees the law of :meth:`hit_moments` ``(H)``
    escape : :class:`EscapeLaw` when the initial mass sits at an unstable root, else None
    """

    target: float
    roots: np.ndarray
    stable: np.ndarray
    mean_limit: float
    samples: float
    hit_fraction: float
    hit_mean: float
    hit_sd: float
    escape: EscapeLaw | None
    _starts: np.ndarray = field(repr=False)
    _weights: np.ndarray = field(repr=False)
    _which: np.ndarray = field(repr=False)
    _theta0: np.ndarray = field(repr=False)
    _hit: np.ndarray = field(repr=False)
    _intervals: tuple = field(repr=False)
    noise: str = "linear"
    grid_error: float = math.nan
    _grid: ChainGrid | None = field(default=None, repr=False)

    @property
    def reachable(self) -> bool:
        return bool(np.isfinite(self.samples))

    def mean_abs(self, k: np.ndarray) -> np.ndarray:
        """``E|ρ_k|`` at the steps ``k`` (real, ``>= 0``); with the grid's noise, interpolated
        between its times and held at its last value beyond them (where the law has
        settled)."""
        k = np.atleast_1d(np.asarray(k, dtype=np.float64))
        if self._grid is not None:
            return np.interp(k, self._grid.t, self._grid.mean_abs)
        out = np.zeros(k.shape)
        for i, iv in enumerate(self._intervals):
            sel = self._which == i
            if not sel.any():
                continue
            th = self._theta0[sel][:, None] + k[None, :]
            pos = iv.position(th)
            out += self._weights[sel] @ np.abs(pos)
        return out

    def median_path(self, n: int = 160) -> tuple[np.ndarray, np.ndarray]:
        """The path of the run with the median hitting step (among those that reach the
        target): ``n`` step indices from 0 to 1.5 × its hitting step, geometrically spaced,
        and its alignment there — the flow's, from the effective start of the linear-noise law
        (whichever ``noise``: a path is the flow's)."""
        reach = np.isfinite(self._hit)
        if not reach.any():
            raise ValueError("no run reaches the target")
        order = np.argsort(self._hit[reach])
        idx = np.nonzero(reach)[0][order]
        cw = np.cumsum(self._weights[idx])
        j = idx[min(int(np.searchsorted(cw, 0.5 * cw[-1])), idx.size - 1)]
        t_end = max(1.5 * float(self._hit[j]), 2.0)
        ks = np.unique(np.concatenate([[0], np.round(np.geomspace(1.0, t_end, n))]).astype(np.int64))
        iv = self._intervals[self._which[j]]
        return ks, iv.position(self._theta0[j] + ks.astype(np.float64))

    def hit_moments(self, horizon: float = math.inf) -> HitMoments:
        """The hitting step ``T`` through a horizon of ``horizon`` steps (:class:`HitMoments`):
        ``P(T <= H)``, the mean, standard deviation and excess kurtosis of ``T`` given
        ``T <= H``, and the mean and standard deviation of ``min(T, H)``. The comparison with a
        simulation of ``H`` steps: its runs that reach the target estimate the conditional
        moments, all its runs (a censored one counted at ``H``) the restricted ones. In the
        escape regime the law of ``T`` has a long right tail (``T ≈ −ln|Z|/λ``), so the
        unconditional moments exceed the conditional ones by far more than the censored
        fraction (``docs/scaling.md``, "Measuring": leaving out the slowest 2.6 % of the runs
        shrinks the standard deviation by 17 % there).

        With the grid: the masses of its survival function (:func:`_grid_hits`, the interval
        holding ``H`` split there). Else a quadrature over the law's nodes of the effective
        start; a node counts as reached when its hitting step is at most ``H`` (the nodes are
        dense where ``T`` is large: geometric around the unstable root). Raises
        ``ValueError`` for a horizon that is not positive."""
        H = float(horizon)
        if not H > 0:
            raise ValueError(f"horizon must be > 0, got {horizon!r}")
        if self._grid is not None:
            t, w = _grid_hits(self._grid, H)
        else:
            t, w = self._hit, self._weights / self._weights.sum()
        ok = t <= H
        frac, mean, c2, c4 = _weighted_moments(t[ok], w[ok])
        kurt = c4 / (c2 * c2) - 3.0 if c2 > 0 else math.nan
        if math.isinf(H) and frac < 1.0 - 1e-12:
            rmean = rsd = math.inf
        else:
            _, rmean, rc2, _ = _weighted_moments(np.minimum(t, H), w)
            rsd = math.sqrt(max(rc2, 0.0))
        return HitMoments(H, frac, mean, math.sqrt(max(c2, 0.0)), kurt, rmean, rsd)

    def hitting_quantile(self, p: np.ndarray) -> np.ndarray:
        """Quantiles of the hitting step over all runs (``inf`` beyond ``hit_fraction``); with
        the grid, its survival function inverted (linear between its times, the exponential
        tail beyond the last)."""
        p = np.atleast_1d(np.asarray(p, dtype=np.float64))
        if self._grid is not None:
            gr = self._grid
            F = 1.0 - gr.survival
            idx = np.searchsorted(F, p, side="left")
            j = np.clip(idx, 1, F.size - 1)
            with np.errstate(divide="ignore", invalid="ignore"):
                tq = gr.t[j - 1] + (p - F[j - 1]) / (F[j] - F[j - 1]) * (gr.t[j] - gr.t[j - 1])
            beyond = np.inf
            if gr.tail_rate > 0 or gr.survival[-1] < GRID_SURVIVAL_TOL:
                mu = gr.tail_rate if gr.tail_rate > 0 else math.inf
                with np.errstate(divide="ignore", invalid="ignore"):
                    beyond = gr.t[-1] + np.log(gr.survival[-1] / np.maximum(1.0 - p, 1e-300)) / mu
                beyond = np.where(p < 1.0, np.maximum(beyond, gr.t[-1]), np.inf)
            return np.where(p <= F[0], 0.0, np.where(p <= F[-1], tq, beyond))
        order = np.argsort(self._hit)
        t = self._hit[order]
        cw = np.cumsum(self._weights[order])
        cw /= cw[-1]
        idx = np.searchsorted(cw, p)
        return np.where(idx < t.size, t[np.minimum(idx, t.size - 1)], np.inf)


def _roots(gh: Fn) -> tuple[np.ndarray, np.ndarray]:
    """Roots of ``gh`` in ``(−1, 1)`` (sign changes on a grid dense near 0 and ±1, refined by
    ``brentq``) and whether each is stable (``gh`` decreasing through it)."""
    phi = np.linspace(-0.5 * np.pi, 0.5 * np.pi, 6001)
    grid = np.unique(np.concatenate([np.sin(phi), np.linspace(-0.02, 0.02, 4001),
                                     np.geomspace(1e-9, 1e-2, 400), -np.geomspace(1e-9, 1e-2, 400)]))
    grid = grid[(grid > -1.0) & (grid < 1.0)]
    val = gh(grid)
    roots, stable = [], []
    for j in np.nonzero(np.sign(val[:-1]) * np.sign(val[1:]) < 0)[0]:
        r = brentq(lambda x: float(gh(np.array([x]))[0]), grid[j], grid[j + 1], xtol=1e-15)
        roots.append(r)
        stable.append(bool(val[j] > 0))
    for j in np.nonzero(val == 0.0)[0]:  # an exact zero on the grid
        if 0 < j < grid.size - 1 and val[j - 1] * val[j + 1] < 0:
            roots.append(float(grid[j]))
            stable.append(bool(val[j - 1] > 0))
    order = np.argsort(roots)
    return np.asarray(roots)[order], np.asarray(stable, dtype=bool)[order]


def _interval(lo: float, hi: float, lo_root: bool, hi_root: bool, gh: Fn, v: Fn,
              target: float) -> _Interval:
    u = np.linspace(-_U, _U, _NU)
    width = hi - lo
    dlo = width * expit(u)
    dhi = width * expit(-u)
    rho = np.where(u < 0, lo + dlo, hi - dhi)
    gv = gh(rho)
    sign = 1 if np.median(gv) > 0 else -1
    # Θ' in u: dρ/du / ĝ = width σ(1 − σ)/ĝ, bounded at simple roots
    dens = width * expit(u) * expit(-u) / np.where(gv == 0.0, np.nan, gv)
    dens = np.nan_to_num(dens, nan=0.0)
    h = u[1] - u[0]
    theta = np.concatenate([[0.0], np.cumsum(0.5 * h * (dens[1:] + dens[:-1]))])
    theta -= np.interp(0.0, u, theta)
    end = float("nan")
    lvl = target if sign > 0 else -target
    if lo < lvl < hi:
        end = lvl
    jint = np.full(u.shape, np.nan)
    if np.isfinite(end):
        # ∫_ρ^end v/ĝ³ dρ, summed from the end towards the root: near an unstable root the
        # integrand grows like (ρ − ρ_c)⁻³, and a sum started there would swamp the rest
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            jd = v(rho) * width * expit(u) * expit(-u) / gv ** 3
            ue = float(np.log((end - lo) / width) - np.log1p(-(end - lo) / width))
            jde = float(v(np.array([end]))[0] * width * expit(ue) * expit(-ue)
                        / gh(np.array([end]))[0] ** 3)
        jd = np.nan_to_num(jd, nan=0.0, posinf=0.0, neginf=0.0)
        panels = 0.5 * h * (jd[1:] + jd[:-1])
        jint = np.zeros(u.shape)
        if sign > 0:  # the end is above: rows j <= ie
            ie = int(np.searchsorted(u, ue, side="left")) - 1
            part = 0.5 * (ue - u[ie]) * (jd[ie] + jde)
            jint[:ie + 1] = part + np.concatenate([np.cumsum(panels[:ie][::-1])[::-1], [0.0]])
        else:  # the end is below: rows j >= ie
            ie = int(np.searchsorted(u, ue, side="right"))
            part = 0.5 * (u[ie] - ue) * (jd[ie] + jde)
            jint[ie:] = part + np.concatenate([[0.0], np.cumsum(panels[ie:])])
            jint = -jint  # ∫_ρ^end with end < ρ, and ĝ³ < 0: positive
    return _Interval(lo, hi, sign, lo_root, hi_root, u, rho, theta, dlo, dhi, jint, end)


def start_density(d: int, x: np.ndarray) -> np.ndarray:
    """Density of the alignment of a uniform point on ``S^{d−1}``:
    ``(1 − x²)^{(d−3)/2} / B(1/2, (d − 1)/2)`` on ``[−1, 1]``."""
    from scipy.special import betaln

    x = np.asarray(x, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        logp = 0.5 * (d - 3) * np.log1p(-x * x) - betaln(0.5, 0.5 * (d - 1))
    return np.where(np.abs(x) < 1.0, np.exp(logp), 0.0)


def uniform_mean_abs(d: int) -> float:
    """``E|ρ0|`` of the alignment of a uniform point on ``S^{d−1}`` (the mean of
    :func:`start_density`'s ``|x|``): ``Γ(d/2) / (√π Γ((d + 1)/2))``, in log-gamma form (no
    overflow at large ``d``)."""
    from scipy.special import gammaln

    return float(math.exp(gammaln(d / 2) - gammaln((d + 1) / 2)) / math.sqrt(math.pi))


def _start_nodes(d: int, veq_of: Fn, roots: np.ndarray, stable: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and weights of the effective start ``x = ρ0 + √V_eq(ρ0) W``: its density (the
    initial law convolved with the local noise kernel) on a uniform grid, refined
    geometrically around every unstable root inside it (where the hitting time has a
    logarithmic singularity), with trapezoid weights."""
    sd0 = 1.0 / math.sqrt(d)
    lo0, hi0 = max(-1.0, -12.0 * sd0), min(1.0, 12.0 * sd0)
    x0 = np.linspace(lo0, hi0, 2001)
    h0 = x0[1] - x0[0]
    p0 = start_density(d, x0)
    p0 = p0 / (p0.sum() * h0)
    sig = np.sqrt(np.maximum(veq_of(x0), 0.0) + h0 * h0)
    smax = float(sig.max())
    lo, hi = max(-1.0, lo0 - 8.0 * smax), min(1.0, hi0 + 8.0 * smax)
    parts = [np.linspace(lo, hi, 1201)]
    scale = math.sqrt(sd0 * sd0 + smax * smax)
    for r, st in zip(roots, stable):
        if not st and lo < r < hi:
            off = np.geomspace(1e-10 * scale, 10.0 * scale, 320)
            parts += [r + off, r - off, np.array([r])]
    x = np.unique(np.clip(np.concatenate(parts), lo, hi))
    dens = np.zeros(x.shape)
    for blk in range(0, x0.size, 256):  # ∫ p0(x0) φ((x − x0)/σ(x0))/σ(x0) dx0
        a, sg, pw = x0[blk:blk + 256], sig[blk:blk + 256], p0[blk:blk + 256] * h0
        z = (x[:, None] - a[None, :]) / sg[None, :]
        dens += (np.exp(-0.5 * z * z) / (sg * math.sqrt(2.0 * math.pi))[None, :]) @ pw
    w = np.zeros(x.shape)
    dx = np.diff(x)
    w[:-1] += 0.5 * dx * dens[:-1]
    w[1:] += 0.5 * dx * dens[1:]
    return x, w / w.sum()


def _grid_hits(grid: ChainGrid, horizon: float = math.inf) -> tuple[np.ndarray, np.ndarray]:
    """The hitting step's law of the grid as point masses: the start's mass at ``|ρ| >= X`` at
    0, the mass that leaves ``(−X, X)`` between consecutive times at their midpoint (the
    interval holding ``horizon`` split there, each part at its own midpoint), and the mass
    left inside at the end: below the evolution's tolerance at the last time; with a tail rate
    ``μ`` as an exponential tail from the last time (8-point Gauss–Laguerre nodes
    ``t_end + x_k/μ``); else at ``inf`` (never reached)."""
    t, S = grid.t, grid.survival
    lo, hi, m = t[:-1], t[1:], S[:-1] - S[1:]
    H = float(horizon)
    j = int(np.searchsorted(t, H, side="left")) - 1
    times = [np.array([0.0]), 0.5 * (lo + hi)]
    mass = [np.array([1.0 - S[0]]), m.copy()]
    if 0 <= j < lo.size and lo[j] < H < hi[j]:
        f = (H - lo[j]) / (hi[j] - lo[j])
        times.append(np.array([0.5 * (lo[j] + H), 0.5 * (H + hi[j])]))
        mass.append(np.array([f * m[j], (1.0 - f) * m[j]]))
        mass[1][j] = 0.0
    if S[-1] < GRID_SURVIVAL_TOL:
        times.append(t[-1:])
        mass.append(S[-1:])
    elif grid.tail_rate > 0:
        x, w = np.polynomial.laguerre.laggauss(8)
        times.append(t[-1] + x / grid.tail_rate)
        mass.append(S[-1] * w)
    else:
        times.append(np.array([math.inf]))
        mass.append(S[-1:])
    return np.concatenate(times), np.maximum(np.concatenate(mass), 0.0)


def _weighted_moments(t: np.ndarray, w: np.ndarray) -> tuple[float, float, float, float]:
    """The mass ``Σw``, mean ``Σ w t / Σw`` and central second and fourth moments
    ``Σ w (t − mean)^k / Σw`` of the values ``t`` under the weights ``w`` (not normalised):
    the law's moments of the hitting step over its nodes (NaN moments where the mass is 0)."""
    mass = float(w.sum())
    if not mass > 0:
        return mass, math.nan, math.nan, math.nan
    mean = float(w @ t / mass)
    dev = t - mean
    return mass, mean, float(w @ dev ** 2 / mass), float(w @ dev ** 4 / mass)


#: the treatments of the noise in :func:`hitting_law`
NOISES = ("auto", "grid", "linear")
#: ``noise="auto"`` keeps the grid where its two grids' hitting-time spreads agree to this
#: fraction (the runs' spread is resolved)
GRID_SPREAD_RTOL = 0.05
#: a grid law whose estimated relative error of the samples (``grid_error``) exceeds this says
#: so (a ``RuntimeWarning``): a fifth of the 5 % the law is verified to
GRID_ERROR_WARN = 0.01


def hitting_law(g: Fn, v: Fn, d: int, target: float, *, modified: bool = True,
                noise: str = "auto") -> HittingLaw:
    """The law of the runs of a chain with per-step mean ``g`` and variance ``v`` (vectorised
    callables on ``[−1, 1]``) from a uniform start on ``S^{d−1}``, for the level
    ``|ρ| = target`` (module docstring). ``modified=False`` uses ``g`` itself as the flow's
    drift (the continuum limit) instead of ``ĝ = g − ½ g g'``.

    noise : "grid" — the law of the chain evolved on a grid (:mod:`.chain_grid`): ``samples``,
        ``mean_abs``, ``hit_fraction``, ``hit_mean``, ``hit_sd``, :meth:`HittingLaw.hit_moments`
        and :meth:`HittingLaw.hitting_quantile` are the grid's, ``grid_error`` its estimated
        relative error of the samples; ``escape``'s rate, amplitude, constants and closed forms
        and :meth:`HittingLaw.median_path` stay those of the flow. "linear" — the noise as one
        Gaussian perturbation of the start (module docstring). "auto" (default) — the grid
        where it resolves the runs' spread (its two grids' standard deviations of the hitting
        step within 5 %), else the linear law: where the runs' spread is far below their time
        scale (a nearly deterministic transit) the grid's numerical diffusion would set it,
        and the linear law, whose deterministic part is exact, is kept. ``noise`` of the
        result says which was used.

    Raises ConfigError for a ``noise`` not in ("auto", "grid", "linear")."""
    if noise not in NOISES:
        raise ConfigError("noise", f"must be one of {NOISES}", noise)
    if modified:
        def gh(x: np.ndarray) -> np.ndarray:
            gx = g(x)
            return gx - 0.5 * gx * _deriv(g, x)
    else:
        gh = g
    roots, stable = _roots(gh)
    edges = np.concatenate([[-1.0], roots, [1.0]])
    intervals = tuple(
        _interval(float(edges[i]), float(edges[i + 1]), i > 0, i < edges.size - 2, gh, v, target)
        for i in range(edges.size - 1))

    def locate(x: np.ndarray) -> np.ndarray:
        return np.clip(np.searchsorted(edges, x, side="right") - 1, 0, len(intervals) - 1)

    def veq_of(x0: np.ndarray) -> np.ndarray:
        """V_eq(x0) = ĝ(x0)² ∫_{x0}^{end} v/ĝ³ along x0's own path (0 where no end)."""
        out = np.zeros(x0.shape)
        which0 = locate(x0)
        for i, iv in enumerate(intervals):
            sel = which0 == i
            if sel.any() and np.isfinite(iv.end):
                # at the table's resolution: V_eq is smooth, but ĝ² J is 0 × ∞ at a root
                uu = np.clip(iv.u_of(x0[sel]), iv.u[0], iv.u[-1])
                jv = np.interp(uu, iv.u, np.nan_to_num(iv.jint, nan=0.0))
                out[sel] = gh(np.interp(uu, iv.u, iv.rho)) ** 2 * np.maximum(jv, 0.0)
        return np.where(np.isfinite(out), out, 0.0)

    xs, ws = _start_nodes(d, veq_of, roots, stable)
    xs = np.clip(xs, -1.0 + 1e-15, 1.0 - 1e-15)
    which = locate(xs)
    th0 = np.empty(xs.shape)
    hit = np.full(xs.shape, np.inf)
    settle = np.empty(xs.shape)
    for i, iv in enumerate(intervals):
        sel = which == i
        if not sel.any():
            continue
        th0[sel] = iv.theta_of(xs[sel])
        settle[sel] = iv.hi if iv.sign > 0 else iv.lo
        if np.isfinite(iv.end):
            before = (xs[sel] - iv.end) * iv.sign < 0
            t = iv.theta_of(np.array([iv.end]))[0] - th0[sel]
            hit[sel] = np.where(before, t, 0.0)
    mean_limit = float(ws @ np.abs(_shifted(settle, roots, stable, gh, v)))
    reached = np.isfinite(hit)
    frac, hm, c2, _ = _weighted_moments(hit[reached], ws[reached])
    hs = math.sqrt(max(c2, 0.0))
    law = HittingLaw(target, roots, stable, mean_limit, float("inf"), frac, hm, hs, None,
                     xs, ws, which, th0, hit, intervals)
    samples = _first_crossing(law, target) if mean_limit >= target else float("inf")
    if noise != "linear":
        scale = samples if math.isfinite(samples) and samples > 0 else hm
        grid = evolve(gh, v, d, target, roots, scale if math.isfinite(scale) else math.inf)
    if noise == "grid" or (noise == "auto" and grid.spread_error <= GRID_SPREAD_RTOL):
        th, wh = _grid_hits(grid)
        ok = np.isfinite(th)
        frac, hm, c2, _ = _weighted_moments(th[ok], wh[ok])
        hs = math.sqrt(max(c2, 0.0))
        samples = grid.samples
        for k, val in (("_grid", grid), ("noise", "grid"), ("grid_error", grid.error),
                       ("hit_fraction", frac), ("hit_mean", hm), ("hit_sd", hs)):
            object.__setattr__(law, k, val)
        if grid.error > GRID_ERROR_WARN:
            warnings.warn(f"hitting_law: the grid law's samples ({samples:.6g}) have an estimated "
                          f"relative error of {grid.error:.2%} (its two grids' difference), above "
                          f"{GRID_ERROR_WARN:.0%}", RuntimeWarning, stacklevel=2)
    sd0 = 1.0 / math.sqrt(d)
    esc = _escape(law, gh, v, sd0, target, intervals, roots, stable)
    object.__setattr__(law, "samples", samples)
    object.__setattr__(law, "escape", esc)
    return law


def _shifted(settle: np.ndarray, roots: np.ndarray, stable: np.ndarray, gh: Fn, v: Fn
             ) -> np.ndarray:
    """Each settling point moved by the noise's :func:`stationary_shift` (stable roots). The
    shift is a second-order expansion around the root; where it reaches half the distance to
    the next root (or to ``±1``) — near a saddle-node, where ``γ → 0`` — the expansion no longer
    holds and the shift is capped there, so that the settled mean stays in the root's basin
    (the law is not valid there: ``docs/scaling.md``, where the law stops holding)."""
    out = settle.copy()
    edges = np.concatenate([[-1.0], roots, [1.0]])
    for r, st in zip(roots, stable):
        if st:
            others = np.abs(edges - r)
            room = 0.5 * float(others[others > 0].min()) if (others > 0).any() else 0.0
            shift = stationary_shift(gh, v, float(r))
            out[settle == r] = r + float(np.clip(shift, -room, room))
    return out


def settled_mean(gh: Fn, v: Fn, d: int | None, side: int = 0) -> float:
    """The long-run mean ``|ρ|`` of the runs: where the flow of ``gh`` takes the initial mass
    (a uniform start on ``S^{d−1}``; ``d = None``: an infinitesimal symmetric start at 0),
    each stable root moved by the noise's :func:`stationary_shift`. ``side = ±1``: the
    branch of the runs that go to ``±ξ`` only (the stable point reached from ``±0.9``)."""
    roots, stable = _roots(gh)
    edges = np.concatenate([[-1.0], roots, [1.0]])
    settle = []
    for i in range(edges.size - 1):
        mid = 0.5 * (edges[i] + edges[i + 1])
        settle.append(edges[i + 1] if gh(np.array([mid]))[0] > 0 else edges[i])
    settle = _shifted(np.asarray(settle), roots, stable, gh, v)
    which_of = lambda x: np.clip(np.searchsorted(edges, x, side="right") - 1, 0,  # noqa: E731
                                 settle.size - 1)
    if side:
        return float(abs(settle[which_of(np.array([0.9 * side]))[0]]))
    if d is None:
        which = which_of(np.array([-1e-13, 1e-13]))
        return float(0.5 * np.abs(settle[which]).sum())
    sd = 1.0 / math.sqrt(d)
    x = np.linspace(max(-1.0, -12 * sd), min(1.0, 12 * sd), 4001)
    w = start_density(d, x)
    w /= w.sum()
    return float(w @ np.abs(settle[which_of(x)]))


def _first_crossing(law: HittingLaw, target: float) -> float:
    """The first ``k`` with ``E|ρ_k| >= target`` (the mean may dip first: a fixed-sign run that
    starts on the far side of zero crosses it)."""
    finite = law._hit[np.isfinite(law._hit)]
    k_hi = float(finite.max()) if finite.size else 1.0
    # the slowest runs settle within the tables' range: extend geometrically if needed
    for _ in range(60):
        ks = np.linspace(0.0, k_hi, 801)
        m = law.mean_abs(ks)
        above = np.nonzero(m >= target)[0]
        if above.size:
            j = int(above[0])
            if j == 0:
                return 0.0
            return float(brentq(lambda k: float(law.mean_abs(np.array([k]))[0]) - target,
                                ks[j - 1], ks[j], xtol=1e-9 * max(ks[j], 1.0)))
        k_hi *= 2.0
    return float("inf")


def _escape(law: HittingLaw, gh: Fn, v: Fn, sd0: float, target: float,
            intervals: tuple, roots: np.ndarray, stable: np.ndarray) -> EscapeLaw | None:
    """:class:`EscapeLaw` for an unstable root within the initial spread (``|ρ_c|`` below 3
    initial standard deviations ``sd0``) whose two sides both lead to the target."""
    m0 = 0.0
    cand = [(abs(r - m0), j) for j, r in enumerate(roots) if not stable[j]]
    if not cand:
        return None
    dist, j = min(cand)
    if dist > 3.0 * sd0:
        return None
    rc = float(roots[j])
    up, down = intervals[j + 1], intervals[j]
    if not (np.isfinite(up.end) and np.isfinite(down.end)):
        return None
    lam = float(_deriv(gh, np.array([rc]))[0])
    if not lam > 0:
        return None
    vn = float(v(np.array([rc]))[0]) / (2.0 * lam)
    sd_a = math.sqrt(sd0 * sd0 + vn)

    def const(iv: _Interval) -> float:
        # C = lim_{x→ρ_c} [Θ(end) − Θ(x) − (1/λ) ln(|end − ρ_c|/|x − ρ_c|)], at the table's end
        k = 0 if iv.sign > 0 else -1
        dx = iv.dlo[k] if iv.sign > 0 else iv.dhi[k]
        t_end = iv.theta_of(np.array([iv.end]))[0]
        return float(t_end - iv.theta[k] - math.log(abs(iv.end - rc) / dx) / lam)

    cp, cm = const(up), const(down)
    mean_c = (math.log(target / sd_a) + 0.5 * (_EULER + math.log(2.0))) / lam + 0.5 * (cp + cm)
    sd_c = math.sqrt(math.pi ** 2 / 8.0 + (0.5 * lam * (cp - cm)) ** 2) / lam
    return EscapeLaw(rc, lam, sd_a, sd0, math.sqrt(vn), m0 - rc, cp, cm, law.hit_mean, law.hit_sd,
                     mean_c, sd_c)
