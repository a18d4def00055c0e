"""The law of a slow one-dimensional chain evolved on a grid (``docs/scaling.md``, "The law of
a run").

The chain moves by steps of mean ``g(ρ)`` and variance ``v(ρ)`` from the alignment of a uniform
point on ``S^{d−1}``. Its law is evolved in the step count ``t`` by the Fokker–Planck equation

    ∂p/∂t = −∂J/∂ρ,   J = ĝ p − ∂(D p)/∂ρ = u p − D ∂p/∂ρ,   D = v/2,   u = ĝ − D',

with the modified drift ``ĝ = g − ½ g g'`` (whose flow's time-one map is the step
``ρ ↦ ρ + g(ρ)`` to ``O(g³)``) and the per-step variance ``v`` as the diffusion per step. Two
problems share the grid: the law of ``ρ_t`` on ``[−1, 1]`` (no flux through ``±1``), whose
``E|ρ_t|`` gives the samples, and the law of the runs that have not yet reached ``|ρ| = X``,
on ``(−X, X)`` with absorbing ends, whose mass ``S(t)`` is the survival function of the hitting
step. A chain watched once per step crosses a level later than its diffusion does: the density
vanishes ``0.5826 √v`` beyond ``±X`` (``−ζ(1/2)/√(2π)``, the continuity correction of a
discretely monitored barrier). Unlike the linear-noise law of :mod:`.escape` (every step's
noise mapped to one Gaussian perturbation of the start) this keeps when the noise acts and what
it does to the mean.

Scheme. Finite volumes on cells whose edges include ``±1``, ``±X`` and ``0`` (so that ``|ρ|``
is linear on every cell and the exit is at a face), with Scharfetter–Gummel fluxes: at a face
between centres ``δ`` apart, ``J = (D/δ)[B(−P) p_i − B(P) p_{i+1}]``, ``P = uδ/D``,
``B(z) = z/(eᶻ − 1)`` — exact for a constant flux with constant coefficients, central where the
diffusion dominates (``|P|`` small), upwind where it vanishes. Implicit Euler in time: every
step solves ``(I − Δt A) M_{n+1} = M_n`` for the cell masses ``M``, with ``A`` tridiagonal, an
M-matrix whose columns sum to zero (no flux out) or to minus the exit rate, so every step keeps
the masses non-negative and the total mass (less what leaves through ``±X``). ``A`` does not
depend on ``t`` (the chain is time-homogeneous): one factorisation serves every step.

Grid and time step. The spacing is ``h(ρ) = min(h_max, min_f(s_f/m + α|ρ − c_f|))`` over the
features ``f``: the start (centre 0, scale ``1/√d``) and every root ``ρ_r`` of ``ĝ`` with its
noise scale ``√(v/(2|ĝ'|))`` — so the start law and the spread at a root are resolved whatever
``d``, and the cell count grows like ``ln d`` only. The time step is ``Δt = κ/r`` with ``r`` the
largest ``|ĝ'|`` on the grid inside ``|ρ| ≤ max(X, |roots|)``, and at most the law's time scale
over 200: the step count is fixed in units of the drift's rate, so it does not grow with ``d``
in the scaled time.

Error and its estimate. The scheme is first order in ``Δt`` and (where the drift dominates a
cell) in the spacing. The law is evolved twice — on the grid and time step above and on the
grid with every cell halved and half the time step — and the outputs (``E|ρ_t|``, ``S(t)`` at
the coarse times) are extrapolated, ``2 fine − coarse`` (Richardson), which removes the
first-order error of both. The difference of the two runs' samples, relative, is reported as
the law's grid error (``error``): the first-order error of the finer run, an upper estimate of
the extrapolated value's.

The effective dynamics' grid evolution (:mod:`.effective`) is not reused: it deposits a step's
law node by node on a uniform grid in ``artanh ρ`` under a step-size schedule and a moment
table; here the step is constant in time and ``g``, ``v`` are arbitrary callables, so one
factorised implicit step serves the whole evolution.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Callable

import numpy as np
from scipy.linalg.lapack import dgttrf, dgttrs
from scipy.special import betainc, exprel

Fn = Callable[[np.ndarray], np.ndarray]

#: cells per feature scale at the feature's centre, and the spacing's growth per unit distance
_PER_SCALE = 16.0
_GROWTH = 0.04
#: largest spacing (the grid's cells away from every feature)
_H_MAX = 1.0 / 400.0
#: the time step in units of the drift's largest rate, and the least steps per time scale
_KAPPA = 0.05
_MIN_STEPS = 200
#: a chain watched once per step crosses a level later than its diffusion: the absorbing
#: boundary sits this many step standard deviations beyond ``±X`` (``−ζ(1/2)/√(2π)``, the
#: continuity correction of a discretely monitored barrier)
_OVERSHOOT = 0.5825971579390106
#: survival below which the absorbed problem is finished
SURVIVAL_TOL = 1e-9
#: the evolution covers at most this many time scales (or 50/r, if longer): mass left in
#: ``(−X, X)`` then has not reached the target on the law's time scale
_T_CAP = 6.0
#: a survival decaying at least this fraction of the drift's largest rate at the end is an
#: escape's exponential tail; slower, a basin the runs leave only on a longer time scale
_TAIL_RATE = 0.1
#: the evolution stops after this many coarse steps (a RuntimeWarning says so)
_MAX_STEPS = 200_000


@dataclass(frozen=True)
class ChainGrid:
    """The evolved law (module docstring): at the times ``t`` (steps, ``t[0] = 0``, spacing
    ``dt``) the mean ``E|ρ_t|`` (``mean_abs``) and the survival ``S(t) = P(T > t)`` of the
    hitting step ``T`` of ``|ρ| = X`` (``survival``; ``1 − survival[0]`` is the start's mass
    at ``|ρ| >= X``), both extrapolated from the two grids; ``samples`` the first ``t`` with
    ``E|ρ_t| >= X`` (``inf`` if none by the end); ``error`` the relative change of the samples
    between the two grids (NaN where the samples are infinite), ``spread_error`` that of the
    standard deviation of the hitting step over the runs that reach the target — where the
    runs' spread is far below their time scale (a nearly deterministic transit) the grid's
    numerical diffusion dominates it and the two grids disagree; ``settled``: the evolution
    stopped by one of its rules, not at the step cap. Mass left in ``(−X, X)`` at the end
    leaves it at the constant rate ``tail_rate`` (the survival's decay rate over the last
    ``10/r`` steps) where that rate is at least ``r/10`` (``r`` the drift's largest rate) — the
    tail of an escape, whose rate is the drift's — and otherwise has not reached the target
    (``tail_rate`` 0: a basin the noise leaves only on a far longer time scale)."""

    t: np.ndarray
    mean_abs: np.ndarray
    survival: np.ndarray
    samples: float
    error: float
    spread_error: float
    cells: int
    settled: bool
    tail_rate: float = 0.0


def _spacing(x: np.ndarray, feats: list[tuple[float, float]], m: float, alpha: float,
             h_max: float) -> np.ndarray:
    h = np.full(x.shape, h_max)
    for c, s in feats:
        h = np.minimum(h, s / m + alpha * np.abs(x - c))
    return np.maximum(h, 1e-9)


def grid_edges(d: int, target: float, feats: list[tuple[float, float]],
               m: float = _PER_SCALE, alpha: float = _GROWTH, h_max: float = _H_MAX
               ) -> np.ndarray:
    """Cell edges on ``[−1, 1]`` with the spacing of the module docstring: ``feats`` the
    ``(centre, scale)`` pairs besides the start's ``(0, 1/√d)``; edges at ``±1``, ``0`` and
    ``±target``. Each segment between those anchors gets ``⌈∫ dρ/h⌉`` cells (at least 2), placed
    at equal steps of ``∫ dρ/h``."""
    feats = [(0.0, 1.0 / math.sqrt(d))] + [(float(c), float(s)) for c, s in feats
                                          if s > 0 and abs(c) < 1.0]
    parts = [np.linspace(-1.0, 1.0, 8001)]
    for c, s in feats:
        off = np.geomspace(s / (10.0 * m), 2.0, 400)
        parts += [c + off, c - off]
    anchors = np.unique(np.array([-1.0, -target, 0.0, target, 1.0]))
    x = np.unique(np.clip(np.concatenate(parts + [anchors]), -1.0, 1.0))
    inv = 1.0 / _spacing(x, feats, m, alpha, h_max)
    cum = np.concatenate([[0.0], np.cumsum(0.5 * np.diff(x) * (inv[1:] + inv[:-1]))])
    edges = [np.array([-1.0])]
    for a, b in zip(anchors[:-1], anchors[1:]):
        ca, cb = np.interp([a, b], x, cum)
        n = max(2, int(math.ceil(cb - ca)))
        e = np.interp(np.linspace(ca, cb, n + 1), cum, x)
        e[0], e[-1] = a, b
        edges.append(e[1:])
    return np.concatenate(edges)


def _deriv(f: Fn, x: np.ndarray) -> np.ndarray:
    """Central difference of ``f`` at ``x`` (step 1e-6, one-sided at ``±1``)."""
    h = 1e-6
    lo = np.clip(x - h, -1.0, 1.0)
    hi = np.clip(x + h, -1.0, 1.0)
    return (f(hi) - f(lo)) / (hi - lo)


def _face_rates(x: np.ndarray, dist: np.ndarray, gh: Fn, v: Fn) -> tuple[np.ndarray, np.ndarray]:
    """Scharfetter–Gummel rates at faces ``x`` between centres ``dist`` apart: the flux is
    ``J = a p_left − b p_right`` with ``a = (D/δ) B(−P)``, ``b = (D/δ) B(P)``, ``P = uδ/D``; the
    upwind rates where ``|P|`` is beyond 700 or ``D`` vanishes (``B(±P)`` is then ``0`` or
    ``∓P`` to double precision)."""
    D = 0.5 * np.maximum(v(x), 0.0)
    u = gh(x) - 0.5 * _deriv(lambda y: np.maximum(v(y), 0.0), x)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        P = u * dist / D
        up = ~(np.abs(P) <= 700.0)
        Ps = np.where(up, 0.0, P)
        a = np.where(up, np.maximum(u, 0.0), (D / dist) / exprel(-Ps))
        b = np.where(up, np.maximum(-u, 0.0), (D / dist) / exprel(Ps))
    return a, b


def _operator(edges: np.ndarray, gh: Fn, v: Fn, absorb: bool
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``dM/dt = A M`` for the cell masses on ``edges`` (sub-, main and super-diagonal of
    ``A``): no flux through the outer edges, or (``absorb``) absorbing outer edges — the
    density 0 there, half a cell beyond the last centre."""
    w = np.diff(edges)
    c = 0.5 * (edges[1:] + edges[:-1])
    a, b = _face_rates(edges[1:-1], np.diff(c), gh, v)
    n = w.size
    diag = np.zeros(n)
    diag[:-1] -= a / w[:-1]  # out of cell i through its right face
    diag[1:] -= b / w[1:]  # out of cell i + 1 through its left face
    sup = b / w[1:]  # into i from i + 1
    sub = a / w[:-1]  # into i + 1 from i
    if absorb:
        ends = edges[[0, -1]]
        shift = _OVERSHOOT * np.sqrt(np.maximum(v(ends), 0.0))
        ra, _ = _face_rates(edges[-1:], 0.5 * w[-1:] + shift[1:], gh, v)
        _, lb = _face_rates(edges[:1], 0.5 * w[:1] + shift[:1], gh, v)
        diag[-1] -= ra[0] / w[-1]
        diag[0] -= lb[0] / w[0]
    return sub, diag, sup


class _Stepper:
    """Implicit Euler steps ``(I − Δt A) M_{n+1} = M_n`` with one LU factorisation."""

    def __init__(self, op: tuple[np.ndarray, np.ndarray, np.ndarray], dt: float):
        sub, diag, sup = op
        self.f = dgttrf(-dt * sub, 1.0 - dt * diag, -dt * sup)
        if self.f[-1] != 0:
            raise RuntimeError("chain_grid: singular implicit step matrix")

    def __call__(self, m: np.ndarray) -> np.ndarray:
        dl, d, du, du2, ipiv, _ = self.f
        x, info = dgttrs(dl, d, du, du2, ipiv, m)
        return x


def start_masses(d: int, edges: np.ndarray) -> np.ndarray:
    """Masses of the cells under the alignment of a uniform point on ``S^{d−1}``:
    ``(1 + ρ)/2 ~ Beta((d − 1)/2, (d − 1)/2)``."""
    a = 0.5 * (d - 1)
    cdf = betainc(a, a, np.clip(0.5 * (edges + 1.0), 0.0, 1.0))
    return np.maximum(np.diff(cdf), 0.0)


class _Run:
    """One grid's two problems (free on ``[−1, 1]``, absorbed on ``(−X, X)``) stepped with
    ``dt`` as one tridiagonal system (the two blocks uncoupled): the state is the free masses
    followed by the absorbed ones."""

    def __init__(self, edges: np.ndarray, d: int, X: float, gh: Fn, v: Fn, dt: float):
        c = 0.5 * (edges[1:] + edges[:-1])
        self.absc = np.abs(c)
        m = start_masses(d, edges)
        inside = np.nonzero((c > -X) & (c < X))[0]
        lo, hi = inside[0], inside[-1]
        fs, fd, fu = _operator(edges, gh, v, False)
        As, Ad, Au = _operator(edges[lo:hi + 2], gh, v, True)
        self.n = m.size
        self.state = np.concatenate([m, m[lo:hi + 1]])
        self.step = _Stepper((np.concatenate([fs, [0.0], As]), np.concatenate([fd, Ad]),
                              np.concatenate([fu, [0.0], Au])), dt)

    def advance(self) -> None:
        self.state = self.step(self.state)

    def out(self) -> tuple[float, float]:
        return float(self.absc @ self.state[:self.n]), float(self.state[self.n:].sum())


def _spread(t: np.ndarray, S: np.ndarray) -> float:
    """Standard deviation of the hitting step over the mass that leaves by the last time (each
    interval's at its midpoint, the start's outside mass at 0)."""
    tm = np.concatenate([[0.0], 0.5 * (t[1:] + t[:-1])])
    m = np.maximum(np.concatenate([[1.0 - S[0]], S[:-1] - S[1:]]), 0.0)
    tot = m.sum()
    if not tot > 0:
        return math.nan
    mu = m @ tm / tot
    return math.sqrt(max(m @ (tm - mu) ** 2 / tot, 0.0))


def _first_crossing(t: np.ndarray, y: np.ndarray, level: float) -> float:
    above = np.nonzero(y >= level)[0]
    if not above.size:
        return math.inf
    j = int(above[0])
    if j == 0:
        return 0.0
    return float(t[j - 1] + (level - y[j - 1]) / (y[j] - y[j - 1]) * (t[j] - t[j - 1]))


def evolve(g_hat: Fn, v: Fn, d: int, target: float, roots: np.ndarray, time_scale: float,
           refine: int = 1) -> ChainGrid:
    """The law of the chain with modified drift ``g_hat`` and per-step variance ``v`` from a
    uniform start on ``S^{d−1}`` (module docstring), for the level ``|ρ| = target``.

    roots : the roots of ``g_hat`` in ``(−1, 1)`` (features of the grid)
    time_scale : the law's time scale in steps (e.g. the flow's crossing step): the time step is
        at most a 200th of it
    refine : divide every spacing and the time step by this factor (the grid's convergence)

    The evolution stops when the survival of ``(−X, X)`` is below 1e-9, or when over the last
    ``10/r`` steps (``r`` the drift's largest rate) ``E|ρ_t|`` moved by less than 1e-7 and the
    survival's decay rate is below ``r/1000`` (settled: the mass left inside never leaves on the
    law's time scale), or at ``max(6 time_scale, 50/r)`` steps (the mass left inside — runs
    held in a basin whose edge is near ``X`` — counts as not reaching the target); at most
    200 000 coarse steps (then a ``RuntimeWarning``)."""
    X = float(target)
    feats = []
    for r in np.atleast_1d(roots):
        r = float(r)
        slope = abs(float(_deriv(g_hat, np.array([r]))[0]))
        vr = float(v(np.array([r]))[0])
        if slope > 0 and vr > 0:
            feats.append((r, math.sqrt(vr / (2.0 * slope))))
    edges = grid_edges(d, X, feats, m=_PER_SCALE * refine, alpha=_GROWTH / refine,
                       h_max=_H_MAX / refine)
    fine = np.empty(2 * edges.size - 1)
    fine[0::2] = edges
    fine[1::2] = 0.5 * (edges[1:] + edges[:-1])
    c = 0.5 * (edges[1:] + edges[:-1])
    reach = max(X, float(np.max(np.abs(roots))) if np.size(roots) else 0.0)
    near = np.abs(c) <= reach + 1e-12
    rate = float(np.max(np.abs(_deriv(g_hat, c[near])))) if near.any() else 0.0
    dt = _KAPPA / rate if rate > 0 else math.inf
    if math.isfinite(time_scale) and time_scale > 0:
        dt = min(dt, time_scale / _MIN_STEPS)
    if not math.isfinite(dt):
        dt = 1.0
    dt /= refine
    coarse, fin = _Run(edges, d, X, g_hat, v, dt), _Run(fine, d, X, g_hat, v, 0.5 * dt)
    window = max(int(math.ceil(10.0 / (rate * dt))) if rate > 0 else 200, 20)
    t_cap = max(_T_CAP * time_scale if math.isfinite(time_scale) else 0.0,
                50.0 / rate if rate > 0 else 0.0)
    n_cap = _MAX_STEPS if not t_cap > 0 else min(_MAX_STEPS, int(math.ceil(t_cap / dt)))
    mc, sc, mf, sf = ([x] for x in (*coarse.out(), *fin.out()))
    settled = False
    for n in range(1, n_cap + 1):
        coarse.advance()
        fin.advance()
        fin.advance()
        a, b = coarse.out()
        e, f = fin.out()
        mc.append(a), sc.append(b), mf.append(e), sf.append(f)
        s_ext = 2.0 * f - b
        if s_ext < SURVIVAL_TOL and f < SURVIVAL_TOL:
            settled = True
            break
        if n > window:
            still = abs(mf[-1] - mf[-1 - window]) < 1e-7
            decay = (sf[-1 - window] - sf[-1]) / (window * dt * max(sf[-1], 1e-300))
            if still and decay <= 1e-3 * rate:
                settled = True
                break
    else:
        settled = n_cap < _MAX_STEPS
    if not settled:
        warnings.warn(f"chain_grid.evolve: {_MAX_STEPS} steps of {dt:.3g} did not settle the law "
                      f"(d = {d}, target {X}); the law stops there", RuntimeWarning, stacklevel=3)
    t = dt * np.arange(len(mc))
    mc, sc, mf, sf = (np.asarray(x) for x in (mc, sc, mf, sf))
    mean = 2.0 * mf - mc
    surv = np.clip(2.0 * sf - sc, 0.0, 1.0)
    surv = np.minimum.accumulate(surv)  # a survival function does not increase
    s_ext = _first_crossing(t, mean, X)
    s_c, s_f = _first_crossing(t, mc, X), _first_crossing(t, mf, X)
    err = abs(s_f - s_c) / s_ext if math.isfinite(s_ext) and s_ext > 0 else math.nan
    tail = 0.0
    if surv[-1] >= SURVIVAL_TOL and n > window and surv[-1 - window] > surv[-1]:
        mu = math.log(surv[-1 - window] / surv[-1]) / (window * dt)
        if mu >= _TAIL_RATE * rate:
            tail = mu
    sd_c, sd_f = _spread(t, sc), _spread(t, sf)
    sd_e = _spread(t, surv)
    sp_err = abs(sd_f - sd_c) / sd_e if sd_e > 0 else math.nan
    return ChainGrid(t, mean, surv, s_ext, err, sp_err, int(edges.size - 1), settled, tail)
