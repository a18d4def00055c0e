"""Effective dynamics at finite step and dimension: the law of ``ρ_k``, with its own error.

``ρ_k`` is a Markov chain (``docs/effective-dynamics.md``). This module evolves its law on a
grid with the finite-``η`` one-step moments of the exact reduced sampler (:mod:`.moments`),
and so predicts the mean ``E ρ_k``, the mean ``E|ρ_k|`` and any quantile of ``|ρ_k|`` — what a
simulation shows at the sizes users run — where the limiting ODE ``dρ/dt = (1 − ρ²)Φ'(ρ)`` is
only the ``η → 0`` limit. It also says how far to trust the prediction: a Monte-Carlo standard
error of every predicted quantity and a validity diagnostic (:class:`Diagnostic`) that warns,
or with ``strict=True`` raises, when the predicted error exceeds the caller's tolerance.

Coordinates
-----------
The law is carried in ``z = artanh ρ`` on a uniform grid ``z_j = j h`` on ``[−Z, Z]``. In ``z``
the first-order drift is the limiting ODE itself, ``E[Δz] = η Φ'(ρ) + O(η²)`` (since
``E[g_e] = s Φ'(ρ)``, ``s = √(1 − ρ²)``), and the approach to ``±1`` — where ``1 − |ρ|`` is
spread over decades — is resolved uniformly (``1 − |ρ| ≈ 2 e^{−2|z|}``). ``Z`` is chosen
above the constant-step plateau of the smallest step of the schedule by a margin of 2 in
``z`` (a factor ``e⁴`` in ``1 − |ρ|``); mass that would leave the grid stays on its last node.

One-step moments
----------------
At alignments ``0.2`` apart in ``z`` and steps log-spaced over the schedule, the drift
``m(z, η) = E[Δz]`` and diffusion ``v(z, η) = Var[Δz]`` of one exact update, importance-sampled
on the largest attention score, the drift with two control variates of exact mean, and with
draws added until their standard errors are below ``rtol`` (:func:`.moments.moment_table`) —
with a tolerance, only at the nodes the law visits (a node it never reaches does not move the
prediction). Between table points ``(m − ηΦ') s²/η²`` and
``v s²/η²`` (bounded, smooth) are interpolated by cubic splines in ``log η`` and in ``z``.

Evolution of the law
--------------------
The steps are grouped into blocks. Within a block, from every grid node ``z_j`` the mean path and
its variance follow the linearised moment equations of the chain (the local Gaussian / linear
noise approximation), integrated by exponential Euler over sub-blocks on which ``η`` changes by
at most 1 %:

    dx/dk = m(x, η_k),   dP/dk = 2 ∂_z m(x, η_k) P + v(x, η_k),   x(0) = z_j, P(0) = 0,

so the variance of a block is *not* ``n`` times a one-step variance: an expanding drift (near
``ρ ≈ 0``) amplifies it, a contracting one (near the plateau) saturates it at the local
stationary variance. The block's transition from ``z_j`` is ``N(x, P)``, deposited on the grid
with the block's mean and variance (:func:`_deposit_kernel`: the hat kernel after subtracting
its own variance ``h²/6`` when ``P`` is within a few grid steps, the sampled Gaussian beyond),
so the grid adds no numerical diffusion and removes none. Sources are merged where the
previous block's spread is many grid steps wide (:func:`_sources`). A block ends at a record, or when the variance grown
from a node among those that hold 99 % of the mass reaches ``0.05²``, so that the drift is
close to linear across each block's spread. The whole evolution is compiled
(:func:`_evolve_one`).

Order and error
---------------
The scheme is a diffusion (second-moment) approximation of the chain in ``z`` with
exact-in-``η`` moments: the per-step jump's third and higher cumulants are dropped, which is
accurate when many steps shape the law (each step's jump small against the law's width) and
degrades when single steps do — small ``L`` with large ``η``, or an escape from ``ρ ≈ 0`` in
few steps. The prediction's errors, and how :class:`Diagnostic` estimates each:

* Monte-Carlo: the draws behind the moments are split into ``K`` disjoint groups whose tables
  are evolved separately (on blocks twice as wide as the pooled table's: a discretisation
  error common to them does not enter their spread); the spread of the ``K`` predictions
  gives the standard error of the pooled prediction (``mean_abs_stderr``,
  :meth:`EffectiveDynamics.quantile_stderr`; measured against the spread over independent
  moment seeds in ``docs/effective-dynamics.md``), and
  :func:`within_tolerance` adds draws while ``t₀.₉₇₅,K−1`` times it exceeds half the
  tolerance;
* the diffusion approximation: the third and fourth cumulants it drops, estimated from the
  jump's skewness and excess kurtosis against the law's width and their effect on the mean
  ``|ρ|`` (:func:`approximation_errors`; its running maximum over the records, times a measured
  margin of 4 — an estimate, not a bound), plus, where single steps shape the law, the step's
  discreteness: a block's flow over one step is not the chain's discrete step, and the law
  evolved under moments corrected for it differs by :func:`discreteness_errors`.

Measured against the chain engine: ``docs/effective-dynamics.md``.

Why a narrower band would appear (what this scheme avoids): a Gaussian kernel evaluated at grid
nodes and renormalised loses variance when its width is below the grid step; aggregating ``n``
steps as ``n`` times the one-step variance misses the amplification by an expanding drift near
``ρ ≈ 0``; a point mass at ``1/√d`` instead of the exact initial law (density
``∝ (1 − ρ²)^{(d−3)/2}``, i.e. ``∝ sech^{d−1} z``) misses the spread that the escape amplifies;
and a Gaussian in ``ρ`` near ``±1`` (where ``1 − ρ`` is a non-negative, skewed variable) must be
clipped or reflected.

``σ ≠ 1`` uses the standardised model (``ModelConfig.standardized()``) with steps ``σ² η``;
the random-sign variant is the reduced sampler's per-sample sign with the even ``Φ``.
"""

from __future__ import annotations

import dataclasses
import math
import time
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numba import njit
from scipy.interpolate import CubicSpline
from scipy.stats import t as student_t

from ..config import ConfigError, ModelConfig
from ..validation import Boolean, Integer, Optional, Real, validated
from ._checks import BATCH, MODEL, RHO0, SEED, STEP, UPDATE
from .reduced import _in_threads
from .moments import (DEFAULT_RTOL, NODE_DZ, Z_CAP, MomentTable, OneStepMoments,
                      _max_samples, build_table, check_pool_memory, eta_nodes,
                      extend_table, moment_table, one_step_moments, refine_table, z_max)

__all__ = ["BlockBudgetExceeded", "Diagnostic", "EffectiveDynamics",
           "EffectiveDynamicsAccuracyError", "EffectiveDynamicsAccuracyWarning", "MomentTable",
           "OneStepMoments", "effective_dynamics", "grid_spacing", "max_grid_nodes",
           "moment_table", "one_step_moments", "schedule_etas", "record_schedule",
           "check_pool_memory", "z_max", "within_tolerance", "approximation_errors",
           "discreteness_errors", "check_effective_model", "check_grid_step", "MAX_D",
           "MAX_NODE_BLOCKS", "pooled_law", "visited_nodes", "last_pass_warnings",
           "DEFAULT_TOLERANCE"]

_BLOCK_SD = 0.05          # largest spread of a block from a node that carries mass (in z)
#: the replicate tables' blocks and sub-blocks (:func:`_evolve`), twice and five times the
#: pooled table's: their spread measures the Monte-Carlo error, and a discretisation error common
#: to them does not enter it (their standard error agrees with the fine blocks' within a few per
#: cent; ``tests/theory/test_effective.py``) at under half the cost
_REPLICATE_BLOCK_SD = 0.1
_REPLICATE_ETA_CHANGE = 0.05
_ETA_CHANGE = 0.01        # largest relative change of η within a sub-block
_MOVE = 0.02              # largest mean displacement of a non-stiff node per sub-block (in z)
_MAX_PIECES = 32          # at most this many pieces of a sub-block per node
_MAX_GRID = 20_001
#: largest standardised step ``σ²η`` (its square must stay finite: beyond ~1e154 the drift
#: would be NaN and the law would silently stand still)
MAX_STD_STEP = 1e150
_MAX_STEPS = 50_000_000
_MAX_LAW = 60_000_000     # doubles kept for the law (records × grid)
#: the most evolution work accepted up front, in grid nodes × blocks (blocks at most
#: ``min(steps, max_blocks)``: one a step where single steps shape the law; ≈ 1 µs each)
MAX_NODE_BLOCKS = 5e9
#: the largest ``d``: the grid (at most 20 001 nodes over ``[−Z, Z]``) must resolve the uniform
#: start's width ``≈ 1/√d`` in ``z``
MAX_D = 10**6
#: an explicit ``grid_step`` may be at most this many times finer than :func:`grid_spacing`
_FINEST = 4.0
#: the largest ``diffusion_scale`` (a multiplier of the chain's diffusion, for tests of the
#: law's width; 0: the mean-field flow)
MAX_DIFFUSION_SCALE = 100.0
#: the share of the tolerance the Monte-Carlo error may take before more draws are made
_MC_SHARE = 0.5
#: the error in the mean |ρ| that :func:`effective_dynamics` and the schedule advisor accept by
#: default before they warn (their ``tolerance``)
DEFAULT_TOLERANCE = 0.01
#: the share of single-step blocks above which the step's discreteness is evaluated
#: (:func:`discreteness_errors`, one more evolution of the pooled table)
_SINGLE_SHARE = 0.1
#: the dropped cumulants' Edgeworth estimate (its running maximum over the records) is
#: multiplied by this: it omits how the dynamics amplifies a jump's skewness after the step
#: (``docs/effective-dynamics.md``, "The diffusion approximation's error": a measured factor
#: 3.3 ± 0.9 where single steps shape the escape)
_EDGEWORTH_FACTOR = 4.0
#: the levels at which the replicates' quantiles are kept (:meth:`EffectiveDynamics.quantile_stderr`)
_Q_LEVELS = np.linspace(0.0, 1.0, 101)


class BlockBudgetExceeded(RuntimeError):
    """The evolution needs more blocks than ``max_blocks`` allows (large per-step jumps against
    the law's width — small ``L``, large ``η`` — force blocks of a few steps).

    A budget the caller set ran out during the work — not bad input (a ``ConfigError`` is
    raised before any work), so a ``RuntimeError``: the caller catches it to fall back to a
    cheaper theory. One line naming ``max_blocks``; ``.max_blocks``, ``.step`` (where it
    stopped) and ``.steps``."""

    def __init__(self, max_blocks: int, step: int, steps: int):
        self.max_blocks, self.step, self.steps = max_blocks, step, steps
        super().__init__(f"max_blocks: this law needs more than {max_blocks} evolution blocks "
                         f"(by step {step} of {steps}: per-step jumps are large against the "
                         f"law's width)")

    def __reduce__(self):  # picklable across process pools
        return (type(self), (self.max_blocks, self.step, self.steps))


class EffectiveDynamicsAccuracyWarning(RuntimeWarning):
    """The effective dynamics' predicted error exceeds the caller's ``tolerance``; the message
    is :attr:`Diagnostic.message` (one line naming the cause)."""


class EffectiveDynamicsAccuracyError(RuntimeError):
    """Raised instead of :class:`EffectiveDynamicsAccuracyWarning` with ``strict=True``."""


def grid_spacing(d: int) -> float:
    """The default spacing ``h = min(0.01, 0.1/√d)`` of the ``z`` grid (the uniform start's
    law has width ``≈ 1/√d`` in ``z``)."""
    return min(0.01, 0.1 / math.sqrt(d))


def check_effective_model(model: ModelConfig) -> None:
    """Refuse, before any work, a model the effective dynamics cannot evolve: ``d`` above
    :data:`MAX_D` (its grid cannot resolve the start) and a token count one reduced draw of
    which cannot fit in memory (:func:`~.reduced.check_draw_memory`). Raises ConfigError."""
    from .reduced import check_draw_memory

    if model.d > MAX_D:
        raise ConfigError("d", f"must be <= {MAX_D:.0e} for the effective dynamics (its z grid "
                          f"of at most {_MAX_GRID} nodes must resolve the start's width "
                          "≈ 1/√d)", model.d)
    check_draw_memory(model)


def check_grid_step(d: int, grid_step: float) -> None:
    """Refuse an explicit ``grid_step`` finer than ``grid_spacing(d)/4`` or than a grid of
    :data:`_MAX_GRID` nodes over the largest extent ``[−9, 9]`` allows (the evolution's work
    grows with the nodes and with their number per block spread). Raises ConfigError."""
    lo = max(grid_spacing(d) / _FINEST, Z_CAP / ((_MAX_GRID - 1) // 2))
    if not grid_step >= lo:
        raise ConfigError("grid_step", f"must be in [{lo:.3g}, 0.5] at d = {d} (at most "
                          f"{_FINEST:g} times finer than the default min(0.01, 0.1/√d), at most "
                          f"{_MAX_GRID} nodes)", grid_step)


def max_grid_nodes(d: int) -> int:
    """The most nodes the default grid can have at dimension ``d``: ``2⌈Z/h⌉ + 1`` with the
    largest extent ``Z = 9``, at most 20 001 — a bound known before any work."""
    return min(_MAX_GRID, 2 * math.ceil(Z_CAP / grid_spacing(d)) + 1)


# --------------------------------------------------------------------------- schedules


def schedule_etas(step: Any, ks: np.ndarray) -> np.ndarray:
    """``η_k`` at the step indices ``ks`` for any :class:`~attnsignal.schedules.Schedule`."""
    return np.asarray(step.eta(np.asarray(ks, dtype=np.int64)), dtype=np.float64)


def record_schedule(steps: int, record_every: int | None = None,
                    record: Any = None) -> np.ndarray:
    """Recorded step indices, exactly as :func:`simulate` records them
    (:func:`attnsignal.records.record_steps`)."""
    from ..records import record_steps

    return np.asarray(record_steps(steps, record_every=record_every, record=record),
                      dtype=np.int64)


# --------------------------------------------------------------------------- compiled law

@njit(cache=True, nogil=True, error_model="numpy")
def _deposit_kernel(p, mu, var, z0, h, out):  # pragma: no cover
    """``out += Σ_j p_j ·`` node masses with mean ``mu_j`` and variance ``var_j``, each node on
    its own window of ±5.5 standard deviations, each node's weights normalised to ``p_j``
    (mass that leaves the grid stays on the end node).

    Narrow (``σ = √(var − h²/6) < 2h``): ``Y ~ N(mu, σ²)`` deposited with the hat kernel,
    whose own variance ``h²/6`` was subtracted first — the weights are the second differences
    of ``C(x) = E(Y − x)⁺`` on the grid: exact in mean; in variance the hat adds
    ``E[(Y − z_l)(z_r − Y)]`` (``z_l, z_r`` the nodes around ``Y``), ``h²/6`` up to a few
    per cent below ``σ ≈ h`` and to ``e^{−2π²σ²/h²}`` beyond. Wider: the
    density of ``N(mu, var)`` at the nodes, by the recurrence ``g_{t+1} = g_t q_t``,
    ``q_{t+1} = q_t e^{−h²/var}`` (two products a node; the sampled Gaussian's mean and
    variance are exact to ``~e^{−2π²var/h²} < 10⁻³⁴`` there)."""
    G = out.shape[0]
    inv_sqrt2pi = 1.0 / math.sqrt(2.0 * math.pi)
    buf = np.empty(64)
    for jn in range(mu.shape[0]):
        sig = math.sqrt(max(var[jn] - h * h / 6.0, 0.0))
        # ±5.5 σ, within 16 grid widths (a σ beyond reads as int overflow)
        half = int(math.ceil(min(5.5 * sig / h, 16.0 * G))) + 2
        c = int(round((mu[jn] - z0) / h))
        W = 2 * half + 1
        if W > buf.shape[0]:
            buf = np.empty(2 * W)
        tot = 0.0
        if sig >= 2.0 * h:
            # the sampled Gaussian's node masses have its variance: sample N(mu, var)
            sw = math.sqrt(var[jn])
            du = h / sw
            u = (z0 + (c - half) * h - mu[jn]) / sw
            g = math.exp(-0.5 * u * u)
            q = math.exp(-u * du - 0.5 * du * du)
            r = math.exp(-du * du)
            for t in range(W):
                buf[t] = g
                tot += g
                g *= q
                q *= r
        else:
            cm = 0.0
            c0 = 0.0
            for t in range(W + 2):
                kn = c - half - 1 + t
                d = mu[jn] - (z0 + kn * h)
                if sig > 0.0:
                    u = d / sig
                    cc = sig * math.exp(-0.5 * min(u * u, 1e6)) * inv_sqrt2pi \
                        + d * 0.5 * math.erfc(-u / math.sqrt(2.0))
                else:
                    cc = max(d, 0.0)
                if t >= 2:
                    wt = max((cm - 2.0 * c0 + cc) / h, 0.0)
                    buf[t - 2] = wt
                    tot += wt
                cm = c0
                c0 = cc
        if tot <= 0.0:
            continue
        scale = p[jn] / tot
        for t in range(W):
            kn = c - half + t
            if kn < 0:
                kn = 0
            elif kn > G - 1:
                kn = G - 1
            out[kn] += buf[t] * scale


@dataclass(frozen=True, eq=False)
class _Poly:
    """A :class:`MomentTable`'s splines as the arrays :func:`_evolve_one` evaluates: the
    normalised drift ``a`` and diffusion ``b`` as piecewise cubics in ``log η`` per node
    (``ca``, ``cb``: ``(4, intervals, nodes)``, highest power first, as scipy's ``PPoly``), the
    linear map from node values to the coefficients of their not-a-knot cubic spline in ``z``
    (``zop``: ``(4, nodes − 1, nodes)``), and ``z ↦ Φ'(tanh z)`` (``cf``: ``(4, 4000)``) — all
    on uniform knots, so the compiled code finds an interval by one division. The same
    interpolants as :meth:`MomentTable.at`, to rounding."""

    ca: np.ndarray
    cb: np.ndarray
    le0: float
    dle: float
    zop: np.ndarray
    zn0: float
    dzn: float
    cf: np.ndarray
    zf0: float
    dzf: float

    @classmethod
    def of(cls, table: MomentTable, a: np.ndarray | None = None,
           b: np.ndarray | None = None, like: "_Poly | None" = None) -> "_Poly":
        """The arrays of ``table`` (with ``a``, ``b`` in place of its own if given); ``like``:
        a :class:`_Poly` of the same table whose ``z`` operator and ``Φ'`` are shared (only the
        cubics in ``log η`` are built)."""
        a = table.a if a is None else a
        b = table.b if b is None else b
        le = np.log(table.etas)
        ca, le0, dle = _log_eta_poly(le, a)
        cb, _, _ = _log_eta_poly(le, b)
        if like is not None:
            return dataclasses.replace(like, ca=ca, cb=cb)
        zn = table.z_nodes
        zop = np.ascontiguousarray(CubicSpline(zn, np.eye(zn.size), axis=0).c)  # (4, n−1, n)
        zf = table._zf  # type: ignore[attr-defined]
        return cls(ca, cb, le0, dle, zop, float(zn[0]), float(zn[1] - zn[0]),
                   np.ascontiguousarray(table._fp.c), float(zf[0]),  # type: ignore[attr-defined]
                   float(zf[1] - zf[0]))


def _log_eta_poly(le: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, float, float]:
    """``y`` (nodes, steps) as piecewise cubics in ``log η`` on the uniform knots ``le``: the
    cubic spline from 4 steps on, linear for 2–3, constant for 1 (as :meth:`MomentTable.at`)."""
    n_nodes, n_eta = y.shape
    if n_eta == 1:
        c = np.zeros((4, 1, n_nodes))
        c[3, 0] = y[:, 0]
        return c, float(le[0]), 1.0
    dle = float((le[-1] - le[0]) / (n_eta - 1))
    if n_eta >= 4:
        return np.ascontiguousarray(CubicSpline(le, y, axis=1).c), float(le[0]), dle
    c = np.zeros((4, n_eta - 1, n_nodes))
    c[2] = (np.diff(y, axis=1) / np.diff(le)[None, :]).T
    c[3] = y[:, :-1].T
    return c, float(le[0]), dle


@njit(cache=True, nogil=True, error_model="numpy")
def _pp(c, x0, dx, x):  # pragma: no cover
    """Value and derivative at ``x`` of the piecewise cubic ``c`` ``(4, n)`` on the uniform
    knots ``x0 + i dx`` (the end pieces extended)."""
    n = c.shape[1]
    i = int(math.floor((x - x0) / dx))
    i = min(max(i, 0), n - 1)
    t = x - (x0 + i * dx)
    val = ((c[0, i] * t + c[1, i]) * t + c[2, i]) * t + c[3, i]
    der = (3.0 * c[0, i] * t + 2.0 * c[1, i]) * t + c[2, i]
    return val, der


@njit(cache=True, nogil=True, error_model="numpy")
def _table_at(ce, le0, dle, x, zop, out_c):  # pragma: no cover
    """The not-a-knot spline coefficients in ``z`` (``out_c``, ``(4, nodes − 1)``) of the node
    values of ``ce`` at ``log η = x`` (clipped to the table's range)."""
    n_int = ce.shape[1]
    n_nodes = ce.shape[2]
    x = min(max(x, le0), le0 + dle * n_int)
    i = int(math.floor((x - le0) / dle))
    i = min(max(i, 0), n_int - 1)
    t = x - (le0 + i * dle)
    vals = np.empty(n_nodes)
    for j in range(n_nodes):
        vals[j] = ((ce[0, i, j] * t + ce[1, i, j]) * t + ce[2, i, j]) * t + ce[3, i, j]
    for q in range(4):
        for s in range(n_nodes - 1):
            acc = 0.0
            for j in range(n_nodes):
                acc += zop[q, s, j] * vals[j]
            out_c[q, s] = acc


@njit(cache=True, nogil=True, error_model="numpy")
def _local(z, eta, Ca, Cb, zn0, dzn, cf, zf0, dzf, lo, hi):  # pragma: no cover
    """``m``, ``∂_z m`` and ``v`` at ``z`` (clipped to ``[lo, hi]``) and standardised step
    ``eta``: ``m = ηΦ' + η² a cosh²z``, ``v = η² b cosh²z`` (:class:`.moments.Local`)."""
    z = min(max(z, lo), hi)
    rho = math.tanh(z)
    ch = math.cosh(z)
    c2 = ch * ch
    fp, fpd = _pp(cf, zf0, dzf, z)
    a, ad = _pp(Ca, zn0, dzn, z)
    b, _ = _pp(Cb, zn0, dzn, z)
    e2 = eta * eta
    m = eta * fp + e2 * a * c2
    mz = eta * fpd + e2 * (ad + 2.0 * rho * a) * c2
    v = max(e2 * b * c2, 0.0)
    return m, mz, v


@njit(cache=True, nogil=True, error_model="numpy")
def _phi12(a, t):  # pragma: no cover
    """``(e^{at} − 1)/a`` and ``(e^{2at} − 1)/(2a)`` (→ ``t`` as ``a → 0``)."""
    at = a * t
    if abs(at) < 1e-8:
        return t, t
    return math.expm1(min(at, 700.0)) / a, math.expm1(min(2.0 * at, 700.0)) / (2.0 * a)


@njit(cache=True, nogil=True, error_model="numpy")
def _advance_node(x, P, n, eta, Ca, Cb, zn0, dzn, cf, zf0, dzf, lo, hi, vscale
                  ):  # pragma: no cover
    """Exponential-Euler steps of ``dx/dk = m``, ``dP/dk = 2 m_z P + v`` over ``n`` steps at one
    ``η``; a node whose one-piece move would exceed ``_MOVE`` is split into up to 32 equal
    pieces (so a node far above the plateau follows the nonlinear drift, not its tangent)."""
    m, mz, v = _local(x, eta, Ca, Cb, zn0, dzn, cf, zf0, dzf, lo, hi)
    p1, _ = _phi12(mz, n)
    mv = abs(p1 * m) / _MOVE
    q = _MAX_PIECES if not mv < _MAX_PIECES else max(1, int(math.ceil(mv)))
    dt = n / q
    for it in range(q):
        if it > 0:
            m, mz, v = _local(x, eta, Ca, Cb, zn0, dzn, cf, zf0, dzf, lo, hi)
        p1, p2 = _phi12(mz, dt)
        x = min(max(x + p1 * m, lo), hi)
        P = math.exp(min(2.0 * mz * dt, 700.0)) * P + p2 * v * vscale
    return x, P


@njit(cache=True, nogil=True, error_model="numpy")
def _summaries(p, zg, levels, out):  # pragma: no cover
    """``out = (E ρ, E|ρ|, the levels' quantiles of |ρ|)`` of the grid law ``p`` (as
    :func:`_abs_quantiles`)."""
    G = zg.shape[0]
    c = G // 2
    m = 0.0
    ma = 0.0
    for j in range(G):
        r = math.tanh(zg[j])
        m += p[j] * r
        ma += p[j] * abs(r)
    out[0] = m
    out[1] = ma
    n = G - c
    xs = np.empty(n + 1)
    cdf = np.empty(n + 1)
    h = zg[c + 1] - zg[c]
    xs[0] = 0.0
    cdf[0] = 0.0
    acc = 0.0
    for i in range(n):
        acc += p[c + i] + (p[c - i] if i > 0 else 0.0)
        cdf[i + 1] = acc
        xs[i + 1] = zg[c + i] + 0.5 * h
    for i in range(n + 1):
        cdf[i] /= acc
    top = zg[G - 1]
    i = 0
    for q in range(levels.shape[0]):  # levels ascending: one pass, linear interpolation
        lv = levels[q]
        while i < n - 1 and cdf[i + 1] < lv:
            i += 1
        lo_c, hi_c = cdf[i], cdf[i + 1]
        f = (lv - lo_c) / (hi_c - lo_c) if hi_c > lo_c else 0.0
        f = min(max(f, 0.0), 1.0)
        out[2 + q] = math.tanh(min(xs[i] + f * (xs[i + 1] - xs[i]), top))


@njit(cache=True, nogil=True, error_model="numpy")
def _mark_heavy(pl, nl, heavy):  # pragma: no cover
    """``heavy[i]`` for the sources with the largest masses ``pl[:nl]`` that together hold 99 %
    of the mass: those at or above a threshold found by bisection (ties are in or out
    together, so an even law gives an even set)."""
    tot = 0.0
    top = 0.0
    for i in range(nl):
        tot += pl[i]
        top = max(top, pl[i])
    lo = 0.0
    hi = top
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        held = 0.0
        for i in range(nl):
            if pl[i] >= mid:
                held += pl[i]
        if held >= 0.99 * tot:
            lo = mid
        else:
            hi = mid
    for i in range(nl):
        heavy[i] = pl[i] >= lo


@njit(cache=True, nogil=True, error_model="numpy")
def _last_at_most(a, x, start):  # pragma: no cover
    """The last index ``j >= start`` of the ascending ``a`` with ``a[j] <= x`` (``start`` if
    none)."""
    lo = start
    hi = a.shape[0] - 1
    if a[hi] <= x:
        return hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[mid] <= x:
            lo = mid
        else:
            hi = mid
    return lo


@njit(cache=True, nogil=True, error_model="numpy")
def _sources(p, zg, span, x, P, pl, g_lo, g_hi, heavy):  # pragma: no cover
    """The block's sources: the live grid nodes (mass above ``10⁻¹⁴`` of the largest), merged
    into runs of adjacent ones of at most ``span[j]`` nodes, formed outwards from ``z = 0`` on
    each side (so that a law even in ``z`` stays even); mass ``pl``, mean ``x`` and variance
    ``P`` of each run (the run's spread enters as the initial ``P``), its grid nodes
    ``[g_lo, g_hi)``, and ``heavy`` (:func:`_mark_heavy`). Returns ``(sources, variance of
    the law)``."""
    G = zg.shape[0]
    pmax = 0.0
    mu_law = 0.0
    for j in range(G):
        pmax = max(pmax, p[j])
        mu_law += p[j] * zg[j]
    thr = 1e-14 * pmax
    var_law = 0.0
    for j in range(G):
        var_law += p[j] * (zg[j] - mu_law) ** 2
    nl = 0
    c = G // 2
    for side in range(3):
        j = c if side == 0 else (c + 1 if side == 1 else c - 1)
        step = 1 if side == 1 else -1
        while 0 <= j < G:
            if not p[j] > thr:
                if side == 0:
                    break
                j += step
                continue
            limit = 1 if side == 0 else span[j]
            s0 = 0.0
            s1 = 0.0
            cnt = 0
            j_start = j
            while 0 <= j < G and cnt < limit and p[j] > thr:
                s0 += p[j]
                s1 += p[j] * zg[j]
                cnt += 1
                j += step
            mu = s1 / s0
            s2 = 0.0
            for i in range(cnt):
                jj = j_start + i * step
                s2 += p[jj] * (zg[jj] - mu) ** 2
            g_lo[nl] = min(j_start, j - step)
            g_hi[nl] = max(j_start, j - step) + 1
            pl[nl] = s0
            x[nl] = mu
            P[nl] = s2 / s0
            nl += 1
            if side == 0:
                break
    _mark_heavy(pl, nl, heavy)
    return nl, var_law


@njit(cache=True, nogil=True, error_model="numpy")
def _sub_block(k, k_rec, k_blk, cum_eta, var_cum, ca, cb, le0, dle, zop, zn0, dzn, cf, zf0,
               dzf, vscale, nl, x, P, heavy, z0, zend, Ca, Cb, tgt, eta_change
               ):  # pragma: no cover
    """One sub-block from step ``k``: at most ``k_rec``, ``η`` changing by at most 1 %, and
    the spread added from a heavy source below ``0.05²``; every source's path and variance
    advanced (:func:`_advance_node`). Returns ``(k_end, spread limit reached, the largest
    one-step variance over the heavy sources)``."""
    n_nodes = zop.shape[2]
    lo = zn0
    hi = zn0 + dzn * (n_nodes - 1)
    k_end = _last_at_most(var_cum, var_cum[k] + eta_change, k)
    k_end = min(max(k_end, k + 1), k_rec)
    eta = (cum_eta[k_end] - cum_eta[k]) / (k_end - k)
    lx = math.log(eta)
    _table_at(ca, le0, dle, lx, zop, Ca)
    _table_at(cb, le0, dle, lx, zop, Cb)
    vh = 0.0
    for i in range(nl):
        if heavy[i]:
            _, _, v = _local(x[i], eta, Ca, Cb, zn0, dzn, cf, zf0, dzf, lo, hi)
            vh = max(vh, v)
    v_step = vh
    vh *= vscale
    if vh > 0.0:
        lim = tgt / vh
        if lim < k_end - k:
            k_end = k + max(1, int(lim))
    n = float(k_end - k)
    ph = 0.0
    for i in range(nl):
        xi, Pi = _advance_node(x[i], P[i], n, eta, Ca, Cb, zn0, dzn, cf, zf0, dzf, lo, hi,
                               vscale)
        x[i] = min(max(xi, z0), zend)
        P[i] = Pi
        if heavy[i]:
            ph = max(ph, Pi)
    return k_end, ph > tgt, v_step


@njit(cache=True, nogil=True, error_model="numpy")
def _finish_block(p, zg, h, nl, x, P, pl, g_lo, g_hi, span, out):  # pragma: no cover
    """Deposit the sources' transitions ``N(x, P)`` (:func:`_deposit_kernel`) as the new law
    ``p`` (normalised) and set each node's merge span for the next block: half the spread
    its source grew, in grid steps (1 to 64). Returns False if a source is not finite."""
    G = zg.shape[0]
    for i in range(nl):
        if not (math.isfinite(x[i]) and math.isfinite(P[i])):
            return False
    for i in range(nl):
        m_i = min(64, max(1, int(0.5 * math.sqrt(max(P[i], 0.0)) / h)))
        for j in range(g_lo[i], g_hi[i]):
            span[j] = m_i
    for j in range(G):
        out[j] = 0.0
    _deposit_kernel(pl[:nl], x[:nl], P[:nl], zg[0], h, out)
    tot = 0.0
    for j in range(G):
        tot += out[j]
    for j in range(G):
        p[j] = out[j] / tot
    return True


def _evolve_one(p: np.ndarray, zg: np.ndarray, h: float, cum_eta: np.ndarray,
                var_cum: np.ndarray, ks_rec: np.ndarray, poly: "_Poly", ref: "_Poly",
                vscale: float, max_blocks: int, keep_law: bool, law: np.ndarray,
                summ: np.ndarray, rec_stats: np.ndarray, stats: np.ndarray,
                block_sd: float = _BLOCK_SD, eta_change: float = _ETA_CHANGE) -> None:
    """Evolve the law ``p`` on the grid ``zg`` (spacing ``h``) through the blocks of the module
    docstring under the table ``poly`` (``ref``: its shared arrays); at the recorded steps
    ``ks_rec`` write it into ``law`` when ``keep_law`` (the pooled table: its mean, mean
    ``|ρ|`` and quantiles come from the law), else its :func:`_summaries` into ``summ`` (a
    replicate: only these are kept). ``cum_eta``: prefix sums of the standardised steps; ``var_cum``: of
    ``|Δ log η|``. Per record, ``rec_stats`` gets (blocks, single-step blocks, largest ratio
    of one step's standard deviation to the law's over the heavy sources) since the previous
    record; ``stats``: (blocks, sub-blocks, single-step blocks, the step reached, status: 0,
    1 = ``max_blocks`` reached, 2 = non-finite moments). A Python loop over the blocks calls
    the compiled :func:`_sources`, :func:`_sub_block` and :func:`_finish_block` (small kernels
    compile in a fraction of the time of one large one)."""
    G = zg.shape[0]
    n_nodes = ref.zop.shape[2]
    Ca = np.empty((4, n_nodes - 1))
    Cb = np.empty((4, n_nodes - 1))
    x, P, pl, out = (np.empty(G) for _ in range(4))
    heavy = np.zeros(G, dtype=np.bool_)
    g_lo = np.empty(G, dtype=np.int64)
    g_hi = np.empty(G, dtype=np.int64)
    span = np.ones(G, dtype=np.int64)
    z0, zend = float(zg[0]), float(zg[-1])
    rec_i = 0
    if ks_rec[0] == 0:
        if keep_law:
            law[0] = p
        else:
            _summaries(p, zg, _Q_LEVELS, summ[0])
        rec_i = 1
    k = n_blocks = n_sub = n_single = status = 0
    while rec_i < ks_rec.size:
        if max_blocks >= 0 and n_blocks >= max_blocks:
            status = 1
            break
        k_rec = int(ks_rec[rec_i])
        nl, var_law = _sources(p, zg, span, x, P, pl, g_lo, g_hi, heavy)
        k_blk = k
        v_first = -1.0
        while k < k_rec:
            k, full, v_step = _sub_block(k, k_rec, k_blk, cum_eta, var_cum, poly.ca, poly.cb,
                                         ref.le0, ref.dle, ref.zop, ref.zn0, ref.dzn, ref.cf,
                                         ref.zf0, ref.dzf, vscale, nl, x, P, heavy, z0, zend,
                                         Ca, Cb, block_sd * block_sd, eta_change)
            n_sub += 1
            if v_first < 0.0:
                v_first = v_step
            if full:
                break
        if not _finish_block(p, zg, h, nl, x, P, pl, g_lo, g_hi, span, out):
            status = 2
            break
        n_blocks += 1
        rec_stats[rec_i, 0] += 1.0
        if k - k_blk == 1:
            n_single += 1
            rec_stats[rec_i, 1] += 1.0
        ratio = math.sqrt(max(v_first, 0.0) / var_law) if var_law > 0.0 else math.inf
        rec_stats[rec_i, 2] = max(rec_stats[rec_i, 2], ratio)
        if k == k_rec:
            if keep_law:
                law[rec_i] = p
            else:
                _summaries(p, zg, _Q_LEVELS, summ[rec_i])
            rec_i += 1
    stats[:] = (n_blocks, n_sub, n_single, k, status)


def _prefix_sums(eta_std: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(cum_eta, var_cum)`` of the standardised steps ``(steps,)``, each ``(steps + 1,)``: the
    prefix sums of the steps and of ``|Δ log η|`` (how far the step changes within a block)."""
    return (np.concatenate([[0.0], np.cumsum(eta_std)]),
            np.concatenate([[0.0], np.cumsum(np.abs(np.diff(np.log(eta_std))))]))


def _evolve(p0: np.ndarray, z: np.ndarray, h: float, eta_std: np.ndarray, ks_rec: np.ndarray,
            polys: list[_Poly], diffusion_scale: float, max_blocks: int | None,
            pooled_coarse: bool = False
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The law at the records under the first table of ``polys`` and the records' summaries
    under each of the others (:func:`_evolve_one`, the tables on parallel threads): ``(law,
    summaries (T, n_rec, 2 + levels; row 0 unused), per-record stats (T, n_rec, 3), stats (T,
    5))``. ``pooled_coarse``: the first table on the replicates' wider blocks too (a law
    that only says where the draws are needed)."""
    cum_eta, var_cum = _prefix_sums(eta_std)
    T = len(polys)
    law = np.empty((ks_rec.size, z.size))
    summ = np.zeros((T, ks_rec.size, 2 + _Q_LEVELS.size))
    rec_stats = np.zeros((T, ks_rec.size, 3))
    stats = np.zeros((T, 5))
    ref = polys[0]
    mb = -1 if max_blocks is None else int(max_blocks)

    def one(t: int) -> None:
        blocks = ((_BLOCK_SD, _ETA_CHANGE) if t == 0 and not pooled_coarse
                  else (_REPLICATE_BLOCK_SD, _REPLICATE_ETA_CHANGE))
        _evolve_one(p0.copy(), z, float(h), cum_eta, var_cum, ks_rec, polys[t], ref,
                    float(diffusion_scale), mb, t == 0, law, summ[t], rec_stats[t], stats[t],
                    *blocks)

    _in_threads(one, T)
    return law, summ, rec_stats, stats


@dataclass(frozen=True, eq=False)
class _Evolved:
    law: np.ndarray
    mean: np.ndarray
    mean_abs: np.ndarray
    se_abs: np.ndarray
    se_mean: np.ndarray
    rep_abs: np.ndarray | None
    rep_q: np.ndarray | None
    replicates: int
    rec_stats: np.ndarray
    stats: np.ndarray


def _evolve_all(table: MomentTable, p: np.ndarray, z: np.ndarray, h: float,
                eta_std: np.ndarray, ks_rec: np.ndarray, diffusion_scale: float,
                max_blocks: int | None, steps: int, pooled_coarse: bool = False) -> _Evolved:
    """The law under the pooled table and the summaries under each replicate (on parallel threads,
    :func:`_evolve`), their standard errors; raises on the pooled table's block budget or
    non-finite moments (a replicate that stops is left out of the standard errors)."""
    K = table.replicates
    polys = [_Poly.of(table)]
    if K >= 2:
        polys += [_Poly.of(table, table.replicate_a[r], table.replicate_b[r], polys[0])
                  for r in range(K)]
    law, summ, rec_stats, stats = _evolve(p, z, h, eta_std, ks_rec, polys, diffusion_scale,
                                          max_blocks, pooled_coarse)
    status = stats[:, 4]
    if status[0] == 1:
        raise BlockBudgetExceeded(int(max_blocks), int(stats[0, 3]), int(steps))
    if status[0] == 2:
        raise FloatingPointError(
            f"effective_dynamics: non-finite block moments at step {int(stats[0, 3])}")
    rho_grid = np.tanh(z)
    rep_abs = rep_q = None
    se_abs = se_mean = np.full(ks_rec.size, np.nan)
    done = np.nonzero(status[1:] == 0)[0] + 1  # replicates that completed (within max_blocks)
    if done.size >= 2:
        rep_abs = summ[done, :, 1]
        rep_q = np.moveaxis(summ[done, :, 2:], 2, 1)  # (K, levels, n_rec)
        se_abs = rep_abs.std(axis=0, ddof=1) / math.sqrt(done.size)
        se_mean = summ[done, :, 0].std(axis=0, ddof=1) / math.sqrt(done.size)
    return _Evolved(law, law @ rho_grid, law @ np.abs(rho_grid), se_abs, se_mean, rep_abs,
                    rep_q, int(done.size), rec_stats[0], stats[0])


# --------------------------------------------------------------------------- results


def _abs_quantiles(law: np.ndarray, z_grid: np.ndarray, pa: np.ndarray) -> np.ndarray:
    """``p``-quantiles of ``|ρ|`` of each row of ``law`` (on the symmetric grid ``z_grid``):
    ``pa.shape + (rows,)``. The density is piecewise linear, so the CDF at the cell midpoints
    is the cumulative node mass."""
    G = z_grid.size
    c = G // 2  # the grid is symmetric with z = 0 at the centre
    folded = law[:, c:].copy()
    folded[:, 1:] += law[:, :c][:, ::-1]
    absz = z_grid[c:]
    h = absz[1] - absz[0]
    cdf = np.cumsum(folded, axis=1)
    cdf /= cdf[:, -1:]
    mids = absz + 0.5 * h
    out = np.empty(pa.shape + (law.shape[0],))
    for i in range(law.shape[0]):
        zq = np.interp(pa, np.concatenate([[0.0], cdf[i]]), np.concatenate([[0.0], mids]))
        out[..., i] = np.tanh(np.minimum(zq, absz[-1]))
    return out


def _check_p(p: Any) -> np.ndarray:
    pa = np.asarray(p, dtype=np.float64)
    if not np.all(np.isfinite(pa)) or np.any((pa < 0) | (pa > 1)):
        raise ConfigError("p", "must be numbers in [0, 1]", p)
    return pa


@dataclass(frozen=True)
class Diagnostic:
    """How far to trust an :class:`EffectiveDynamics` (module docstring, "Order and error").

    verdict : ``"ok"`` or ``"flagged"``
    causes : one line per reason the prediction may be off by more than ``tolerance`` (empty
        when ``"ok"``); ``message`` the line a warning, an exception or the CLI prints
    tolerance : the caller's tolerance on the mean ``|ρ|`` (None: nothing checked, verdict
        ``"ok"``)
    predicted_error : the bound on the error of the predicted mean ``|ρ|`` over the records,
        ``mc_error + approximation_error``
    stderr : the largest Monte-Carlo standard error of the mean ``|ρ|`` over the records
    mc_error : ``t_{0.975, K−1}`` times ``stderr`` (``K`` replicates)
    approximation_error : the diffusion approximation's estimated error (the dropped
        cumulants' and the step's discreteness, at the worst record)
    discreteness_error : the step's discreteness alone (:func:`discreteness_errors`; 0 where
        at most 10 % of the blocks are single steps)
    blocks, single_step_blocks : evolution blocks, and those that held a single step
    jump_to_width : the largest ratio of one step's standard deviation to the law's, over the
        nodes that carry 99 % of the mass
    jump_skewness, jump_kurtosis : the largest ``|skewness|`` and excess kurtosis of one
        step's ``Δz`` over the moment nodes the law visits (mass above 10⁻⁴)
    draws : the most draws any moment node used; converged : every node met ``rtol``
    """

    verdict: str
    causes: tuple[str, ...]
    tolerance: float | None
    predicted_error: float
    stderr: float
    mc_error: float
    approximation_error: float
    blocks: int
    single_step_blocks: int
    jump_to_width: float
    jump_skewness: float
    jump_kurtosis: float
    draws: int
    converged: bool
    discreteness_error: float = 0.0

    @property
    def message(self) -> str:
        """One line: the predicted error against the tolerance and the first cause. Flagged
        with the predicted error inside the tolerance (unconverged moments, no replicates, a
        discreteness evolution that stopped), the line says the estimate is not reliable
        rather than that it exceeds the tolerance."""
        head = f"effective dynamics: predicted error {self.predicted_error:.3g} of the mean |rho|"
        if self.verdict == "ok":
            return f"{head} within tolerance {self.tolerance}"
        if self.tolerance is not None and self.predicted_error <= self.tolerance:
            return (f"{head} is within tolerance {self.tolerance}, but that estimate is not "
                    f"reliable: {self.causes[0]}")
        return f"{head} may exceed tolerance {self.tolerance}: {self.causes[0]}"

    def as_dict(self) -> dict[str, Any]:
        """The fields as a flat dict (causes joined by ``"; "``)."""
        return {"verdict": self.verdict, "causes": "; ".join(self.causes),
                "tolerance": self.tolerance, "predicted_error": self.predicted_error,
                "stderr": self.stderr, "mc_error": self.mc_error,
                "approximation_error": self.approximation_error, "blocks": self.blocks,
                "single_step_blocks": self.single_step_blocks,
                "jump_to_width": self.jump_to_width, "jump_skewness": self.jump_skewness,
                "jump_kurtosis": self.jump_kurtosis, "draws": self.draws,
                "converged": self.converged, "discreteness_error": self.discreteness_error}


@dataclass(frozen=True, eq=False)
class EffectiveDynamics:
    """The predicted law of ``ρ_k`` at the recorded steps.

    steps : (n_rec,) recorded step indices (as :func:`simulate` records them)
    ode_time : (n_rec,) ``t_k = Σ_{j<k} η_j``
    mean_abs, mean : (n_rec,) predicted ``E|ρ_k|`` and ``E ρ_k``
    mean_abs_stderr, mean_stderr : (n_rec,) their Monte-Carlo standard errors (from the
        replicate moment tables evolved separately; NaN without replicates)
    z_grid, rho_grid : (G,) the grid (``rho_grid = tanh z_grid``)
    law : (n_rec, G) probability of each grid node (rows sum to 1; node masses of a
        piecewise-linear density in ``z``)
    moments : the :class:`MomentTable` (drift and diffusion of ``z`` used)
    diagnostic : the :class:`Diagnostic` (predicted error, verdict, causes)
    timings : seconds for the moments and for the evolution (and counts: blocks, sub-blocks,
        draws)
    replicate_mean_abs : (K, n_rec) the replicates' predicted mean ``|ρ|``
    """

    model: ModelConfig
    step: Any
    batch: int
    update: str
    initial_alignment: float | None
    seed: int
    steps: np.ndarray
    ode_time: np.ndarray
    mean_abs: np.ndarray
    mean: np.ndarray
    z_grid: np.ndarray
    rho_grid: np.ndarray
    law: np.ndarray
    moments: MomentTable
    timings: dict[str, float]
    mean_abs_stderr: np.ndarray | None = None
    mean_stderr: np.ndarray | None = None
    diagnostic: Diagnostic | None = None
    replicate_mean_abs: np.ndarray | None = None
    _replicate_quantiles: np.ndarray | None = field(default=None, repr=False)

    def quantile(self, p: Any) -> np.ndarray:
        """Predicted ``p``-quantile(s) of ``|ρ_k|`` at each record: shape ``(n_rec,)`` for a
        scalar ``p``, ``(len(p), n_rec)`` for an array. ``p`` in [0, 1]."""
        return _abs_quantiles(self.law, self.z_grid, _check_p(p))

    def quantile_stderr(self, p: Any) -> np.ndarray:
        """Monte-Carlo standard error of :meth:`quantile` (same shape): the replicates' spread
        of the ``p``-quantile over ``√K`` (their quantiles kept at ``p = 0, 0.01, …, 1`` and
        interpolated in ``p``); NaN without replicates."""
        pa = _check_p(p)
        rq = self._replicate_quantiles
        if rq is None or rq.shape[0] < 2:
            return np.full(pa.shape + (self.steps.size,), np.nan)
        se = rq.std(axis=0, ddof=1) / math.sqrt(rq.shape[0])  # (levels, n_rec)
        out = np.empty(pa.shape + (self.steps.size,))
        for i in range(self.steps.size):
            out[..., i] = np.interp(pa, _Q_LEVELS, se[:, i])
        return out

    def drift(self, rho: Any, eta: float) -> np.ndarray:
        """Per-step ``E[Δz]`` of ``z = artanh ρ`` used at ``ρ`` and step ``eta`` (model units)."""
        z = np.arctanh(np.clip(np.asarray(rho, dtype=np.float64), -1 + 1e-15, 1 - 1e-15))
        return self.moments.at(float(eta) * self.model.noise_std ** 2)(z)[0]

    def diffusion(self, rho: Any, eta: float) -> np.ndarray:
        """Per-step ``Var[Δz]`` of ``z = artanh ρ`` used at ``ρ`` and step ``eta``."""
        z = np.arctanh(np.clip(np.asarray(rho, dtype=np.float64), -1 + 1e-15, 1 - 1e-15))
        return self.moments.at(float(eta) * self.model.noise_std ** 2)(z)[2]

    def hitting_step(self, target: float) -> int:
        """First recorded step at which the predicted mean ``|ρ|`` reaches ``target`` (−1 if
        never)."""
        hit = np.nonzero(self.mean_abs >= target)[0]
        return int(self.steps[hit[0]]) if hit.size else -1

    def to_frame(self):
        """One row per record: step, ODE time, mean |ρ| (and its standard error), mean ρ and
        the 10 %, 50 % and 90 % quantiles of |ρ|."""
        import pandas as pd
        q = self.quantile([0.1, 0.5, 0.9])
        se = (self.mean_abs_stderr if self.mean_abs_stderr is not None
              else np.full(self.steps.size, np.nan))
        return pd.DataFrame({"step": self.steps, "ode_time": self.ode_time,
                             "mean_abs": self.mean_abs, "mean_abs_stderr": se,
                             "mean": self.mean, "q10_abs": q[0], "median_abs": q[1],
                             "q90_abs": q[2]})


# --------------------------------------------------------------------------- diagnostic


def _law_width2(law: np.ndarray, z: np.ndarray) -> np.ndarray:
    """Squared width of one mode of each row of the grid ``law``: the variance of ``z``, or of
    ``|z|`` when the law sits in two modes ``±z`` (mean ``|z|`` above twice its spread)."""
    m = law @ z
    var = np.maximum(law @ (z * z) - m * m, 0.0)
    am = law @ np.abs(z)
    avar = np.maximum(law @ (z * z) - am * am, 0.0)
    return np.where(am > 2.0 * np.sqrt(avar), avar, var)


def approximation_errors(table: MomentTable, law: np.ndarray, z: np.ndarray,
                         etas: np.ndarray) -> np.ndarray:
    """The diffusion approximation's estimated error of the mean ``|ρ|`` at each row of
    ``law`` (``docs/effective-dynamics.md``, "The diffusion approximation's error"). With the
    one-step ``Δz`` of variance ``v``, skewness ``γ₁`` and excess kurtosis ``γ₂`` at ``z`` (the
    table's, at the row's standardised step ``etas[r]``) and the width ``W`` of the law's
    mode, the chain's law carries a third cumulant ``κ₃ ≈ γ₁ √v W²`` and a fourth
    ``κ₄ ≈ γ₂ v W²`` that the approximation drops; they move ``E f(z)``, ``f = tanh|z|``, by
    ``|E[κ₃ f⁽³⁾]|/6 + |E[κ₄ f⁽⁴⁾]|/24`` under the row's law, the derivatives taken as
    central differences at ``W/4`` (so that the kink of ``|ρ|`` at 0 counts). Capped at 1."""
    n_rec = law.shape[0]
    out = np.zeros(n_rec)
    if table.skewness is None or table.excess_kurtosis is None or n_rec == 0:
        return out
    le = np.log(table.etas)
    x = np.clip(np.log(np.asarray(etas, dtype=np.float64)), le[0], le[-1])
    if le.size > 1:  # the nodes' statistics at each row's step, linear in log η
        i = np.clip(np.searchsorted(le, x) - 1, 0, le.size - 2)
        w = (x - le[i]) / (le[i + 1] - le[i])
        g1n = (1 - w) * table.skewness[:, i] + w * table.skewness[:, i + 1]
        g2n = (1 - w) * table.excess_kurtosis[:, i] + w * table.excess_kurtosis[:, i + 1]
    else:
        g1n = np.repeat(table.skewness[:, :1], n_rec, axis=1)
        g2n = np.repeat(table.excess_kurtosis[:, :1], n_rec, axis=1)
    if le.size >= 4:
        bn = np.asarray(table._sb(x))  # type: ignore[attr-defined]
    else:
        bn = np.stack([table._coeffs(float(e))[1] for e in etas], axis=1)
    bn = np.maximum(bn, 0.0)
    # linear interpolation from the nodes to the grid (held at the ends, as np.interp)
    zn = table.z_nodes
    zc = np.clip(z, zn[0], zn[-1])
    j = np.clip(np.searchsorted(zn, zc) - 1, 0, zn.size - 2)
    f = ((zc - zn[j]) / (zn[j + 1] - zn[j]))[:, None]
    w2 = _law_width2(law, z)
    eta = np.asarray(etas, dtype=np.float64)
    ch2 = np.cosh(z) ** 2
    for r0 in range(0, n_rec, 32):  # rows in chunks: (G, 32) arrays at most
        r1 = min(n_rec, r0 + 32)
        rows = law[r0:r1]
        live = np.nonzero(np.any(rows > 1e-12 * rows.max(axis=1, keepdims=True), axis=0))[0]
        g = slice(int(live[0]), int(live[-1]) + 1) if live.size else slice(0, 0)
        jg, fg, zg = j[g], f[g], z[g]
        g1 = (1 - fg) * g1n[jg, r0:r1] + fg * g1n[jg + 1, r0:r1]
        g2 = (1 - fg) * g2n[jg, r0:r1] + fg * g2n[jg + 1, r0:r1]
        v = ((1 - fg) * bn[jg, r0:r1] + fg * bn[jg + 1, r0:r1]) * ch2[g, None] * eta[r0:r1] ** 2
        dz = np.maximum(0.25 * np.sqrt(w2[r0:r1]), 1e-3)
        ft = [np.tanh(np.abs(zg[:, None] + k * dz)) for k in (-2, -1, 0, 1, 2)]
        f3 = (ft[4] - 2.0 * ft[3] + 2.0 * ft[1] - ft[0]) / (2.0 * dz ** 3)
        f4 = (ft[4] - 4.0 * ft[3] + 6.0 * ft[2] - 4.0 * ft[1] + ft[0]) / dz ** 4
        p = rows[:, g].T
        e3 = np.abs(np.sum(p * g1 * np.sqrt(v) * f3, axis=0)) / 6.0
        e4 = np.abs(np.sum(p * g2 * v * f4, axis=0)) / 24.0
        out[r0:r1] = np.minimum(w2[r0:r1] * (e3 + e4), 1.0)
    return out


def _discrete_table(table: MomentTable) -> "_Poly":
    """The table whose exponential-Euler flow over one step lands where the chain's discrete
    step does, to first order in ``λ = ∂m/∂z``: ``m̃ = m/φ₁(λ)`` and ``ṽ = v/φ₁(2λ)``,
    ``φ₁(x) = (eˣ − 1)/x`` (the evolution integrates ``dx/dk = m``, ``dP/dk = 2λP + v`` over a
    block, which over one step gives ``z + m φ₁(λ)`` and ``v φ₁(2λ)``, not the step's ``z + m``
    and ``v``). Its evolution against the pooled one is :func:`discreteness_errors`."""
    zn = table.z_nodes
    s2 = 1.0 / np.cosh(zn) ** 2
    eta = table.etas[None, :]
    first = eta * table.dphi_nodes[:, None]
    m = eta * eta * table.a / s2[:, None] + first
    lam = CubicSpline(zn, m, axis=0).derivative()(zn)

    def phi1(x: np.ndarray) -> np.ndarray:
        small = np.abs(x) < 1e-8
        return np.where(small, 1.0 + 0.5 * x, np.expm1(np.minimum(x, 700.0))
                        / np.where(small, 1.0, x))

    a = ((m / phi1(lam) - first) * s2[:, None] / (eta * eta))
    b = table.b / phi1(2.0 * lam)
    return _Poly.of(table, np.ascontiguousarray(a), np.ascontiguousarray(b))


def discreteness_errors(table: MomentTable, p0: np.ndarray, z: np.ndarray, h: float,
                        eta_std: np.ndarray, ks_rec: np.ndarray, mean_abs: np.ndarray,
                        diffusion_scale: float = 1.0,
                        max_blocks: int | None = None) -> np.ndarray:
    """The step's discreteness in the mean ``|ρ|`` at each record: the law evolved again from
    ``p0`` under :func:`_discrete_table` (the pooled moments corrected so that each step's
    flow matches the chain's discrete step) minus the prediction ``mean_abs``, in absolute
    value (``docs/effective-dynamics.md``, "The diffusion approximation's error"). NaN when
    that evolution stops (block budget, non-finite moments): the error is then unknown."""
    cum_eta, var_cum = _prefix_sums(eta_std)
    ref = _Poly.of(table)
    summ = np.zeros((ks_rec.size, 2 + _Q_LEVELS.size))
    rec_stats = np.zeros((ks_rec.size, 3))
    stats = np.zeros(5)
    mb = -1 if max_blocks is None else int(max_blocks)
    _evolve_one(p0.copy(), z, float(h), cum_eta, var_cum, ks_rec, _discrete_table(table), ref,
                float(diffusion_scale), mb, False, np.empty((1, 1)), summ, rec_stats, stats)
    if stats[4] != 0:
        return np.full(ks_rec.size, np.nan)
    return np.abs(summ[:, 1] - mean_abs)


def _mc_error(se_abs: np.ndarray, K: int) -> tuple[float, float, float]:
    """``(SE, t, t·SE)``: the largest standard error of the predicted mean ``|ρ|`` over the
    records, Student's ``t`` 97.5 % quantile on ``K − 1`` degrees of freedom (the replicates
    it comes from), and their product, the Monte-Carlo error (NaN without replicates)."""
    se = float(np.nanmax(se_abs)) if np.any(np.isfinite(se_abs)) else math.nan
    tq = float(student_t.ppf(0.975, K - 1)) if K >= 2 else math.nan
    return se, tq, (tq * se if np.isfinite(se) else math.nan)


def visited_nodes(table: MomentTable, law: np.ndarray, z: np.ndarray) -> np.ndarray:
    """The moment nodes that the law (records × grid ``z``) visits: a grid node within
    ``±0.1`` of the moment node holds more than ``10⁻⁴`` of the mass at some record
    (boolean, ``table.z_nodes.shape``)."""
    mass = law.max(axis=0)
    visited = np.zeros(table.z_nodes.size, dtype=bool)
    for i, zn in enumerate(table.z_nodes):
        near = np.abs(z - zn) <= 0.5 * NODE_DZ
        visited[i] = bool(np.any(mass[near] > 1e-4))
    return visited


def _diagnose(ed_mean_abs_se: np.ndarray, K: int, table: MomentTable, law: np.ndarray,
              z: np.ndarray, rec_stats: np.ndarray, stats: np.ndarray, etas_used: np.ndarray,
              tolerance: float | None, rec_etas: np.ndarray | None = None,
              discrete: np.ndarray | None = None,
              rec_steps: np.ndarray | None = None) -> Diagnostic:
    """The :class:`Diagnostic` of one evolution (module docstring, "Order and error");
    ``discrete``: :func:`discreteness_errors` at the records (None: not computed);
    ``rec_steps``: the records' step indices (a record at step 0 is the exact start)."""
    se, tq, mc = _mc_error(ed_mean_abs_se, K)
    visited = visited_nodes(table, law, z)
    lo, hi = float(etas_used.min()), float(etas_used.max())
    cols = (table.etas >= lo / 1.3) & (table.etas <= hi * 1.3)
    if not np.any(cols):
        cols = np.ones(table.etas.size, dtype=bool)
    skew = kurt = 0.0
    if table.skewness is not None and np.any(visited):
        skew = float(np.max(np.abs(table.skewness[np.ix_(visited, cols)])))
        kurt = float(np.max(table.excess_kurtosis[np.ix_(visited, cols)]))
    blocks, single = int(stats[0]), int(stats[2])
    jw = float(np.max(rec_stats[:, 2])) if rec_stats.size else 0.0
    approx = disc = 0.0
    if rec_etas is not None:
        per = approximation_errors(table, law, z, rec_etas)
        if rec_steps is not None:
            per[np.asarray(rec_steps) == 0] = 0.0  # the start's law: nothing dropped yet
        # what a step's skewness did to the law persists in the later records (the estimate
        # at a record sees only that record's law), and the estimate omits how the dynamics
        # amplifies it: the running maximum, times a margin (docs, measured)
        per = _EDGEWORTH_FACTOR * np.maximum.accumulate(per) if per.size else per
        if discrete is not None and np.all(np.isfinite(discrete)):
            disc = float(np.max(discrete, initial=0.0))
            per = np.minimum(per + discrete, 1.0)
        approx = float(np.max(per, initial=0.0))
    mc0 = mc if np.isfinite(mc) else 0.0
    pred = mc0 + approx
    causes: list[str] = []
    if tolerance is not None:
        if not np.isfinite(mc):
            causes.append("no replicate moment tables (replicates < 2): the Monte-Carlo "
                          "error is unknown")
        if discrete is not None and not np.all(np.isfinite(discrete)):
            causes.append("single steps shape the law and the step's discreteness could not be "
                          "evaluated (its corrected evolution stopped)")
        if not table.converged:
            causes.append(f"the one-step moments did not reach rtol = {table.rtol} within "
                          f"{table.n_samples} draws a node")
        if pred > tolerance:
            mc_line = (f"Monte-Carlo error of the one-step moments: {tq:.2f} x SE {se:.3g} = "
                       f"{mc:.3g}; raise n_samples / max_samples")
            single_line = (f"; single steps shape the law ({single} of {blocks} blocks are "
                           "one step)" if blocks and single > 0.1 * blocks else "")
            disc_line = (f" and the step's discreteness ({disc:.3g})" if disc > 0.0 else "")
            approx_line = (f"the diffusion approximation's error {approx:.3g}: the one-step "
                           f"jumps' skewness (up to {skew:.3g}) and excess kurtosis (up to "
                           f"{kurt:.3g}) against the law's width{disc_line}{single_line}")
            lines = [(mc0, mc_line), (approx, approx_line)]
            lines.sort(key=lambda t: -t[0])  # the larger part first; the other if it matters
            causes += [line for i, (part, line) in enumerate(lines)
                       if i == 0 or part > 0.1 * tolerance]
    verdict = "flagged" if causes else "ok"
    return Diagnostic(verdict=verdict, causes=tuple(causes), tolerance=tolerance,
                      predicted_error=float(pred), stderr=se, mc_error=mc,
                      approximation_error=approx, blocks=blocks, single_step_blocks=single,
                      jump_to_width=jw, jump_skewness=skew, jump_kurtosis=kurt,
                      draws=int(table.n_samples), converged=bool(table.converged),
                      discreteness_error=disc)


def _grid(zm: float, h: float) -> tuple[np.ndarray, float]:
    """The symmetric ``z`` grid over ``[−zm, zm]`` (rounded out to a multiple of ``h``) and
    its spacing, at most :data:`_MAX_GRID` nodes (``h`` widened to fit)."""
    half = int(math.ceil(zm / h))
    if 2 * half + 1 > _MAX_GRID:
        half = (_MAX_GRID - 1) // 2
        h = zm / half
    return np.linspace(-half * h, half * h, 2 * half + 1), h


def _initial_law(z: np.ndarray, h: float, d: int, z_start: float | None) -> np.ndarray:
    """The start's law on the grid ``z``: the uniform start's density ``∝ sech^{d−1} z``, or
    the point mass at ``z_start`` split linearly between its two nodes."""
    G = z.size
    z0 = float(z[0])
    if z_start is None:
        logp = (d - 1) * -np.log(np.cosh(z))
        p = np.exp(logp - logp.max())
    else:
        p = np.zeros(G)
        x = (min(max(z_start, z0), -z0) - z0) / h
        i = min(int(math.floor(x)), G - 2)
        f = x - i
        p[i] += 1.0 - f
        p[i + 1] += f
    return p / p.sum()


def pooled_law(model: ModelConfig, step: Any, table: MomentTable, record: Any, *,
               initial_alignment: float | None = None, max_blocks: int | None = None
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(records, z grid, law at the records, mean |ρ| there)`` of :func:`effective_dynamics`
    on the pooled moments of ``table`` alone (its replicates and the diagnostic skipped), for
    callers that compare many schedules on one table and report only the best (the schedule
    advisor): the same numbers as ``effective_dynamics(model, step, steps=record[-1],
    record=record, moments=table without its replicates)`` gives as ``steps``, ``z_grid``,
    ``law`` and ``mean_abs``, at the cost of one evolution. The caller checks its arguments
    (no validation here); raises :class:`BlockBudgetExceeded` and ``FloatingPointError`` as
    :func:`effective_dynamics`."""
    ks_rec = np.asarray(record, dtype=np.int64)
    steps = int(ks_rec[-1])
    etas = schedule_etas(step, np.arange(steps, dtype=np.int64))
    if etas.size == 0 or not np.all(np.isfinite(etas)) or np.any(etas <= 0):
        raise ConfigError("step", "must give finite step sizes > 0", step)
    z, h = _grid(float(table.z_nodes[-1]), grid_spacing(model.d))
    z_start = None
    if initial_alignment is not None:
        z_start = float(np.arctanh(np.clip(initial_alignment, -1 + 1e-12, 1 - 1e-12)))
    p = _initial_law(z, h, model.d, z_start)
    pooled = table if table.replicate_a is None else dataclasses.replace(
        table, replicate_a=None, replicate_b=None)
    ev = _evolve_all(pooled, p, z, h, etas * model.noise_std ** 2, ks_rec, 1.0, max_blocks,
                     steps)
    return ks_rec, z, ev.law, ev.mean_abs


# --------------------------------------------------------------------------- entry point


@validated(model=MODEL, step=STEP, steps=Integer(ge=1, le=_MAX_STEPS),
           initial_alignment=Optional(RHO0), batch=BATCH, update=UPDATE, seed=SEED,
           n_samples=Integer(ge=100), grid_step=Optional(Real(gt=0.0, le=0.5)),
           diffusion_scale=Real(ge=0.0, le=MAX_DIFFUSION_SCALE),
           max_blocks=Optional(Integer(ge=1)),
           rtol=Optional(Real(gt=0.0, lt=1.0)), max_samples=Optional(Integer(ge=100)),
           replicates=Integer(ge=0, le=64), tolerance=Optional(Real(gt=0.0)),
           strict=Boolean())
def effective_dynamics(model: ModelConfig, step: Any, *, steps: int,
                       initial_alignment: float | None = None, batch: int = 1,
                       update: str = "projected", record_every: int | None = None,
                       record: Any = None, seed: int = 0, n_samples: int = 4000,
                       grid_step: float | None = None,
                       diffusion_scale: float = 1.0,
                       moments: MomentTable | None = None,
                       max_blocks: int | None = None,
                       rtol: float | None = DEFAULT_RTOL,
                       max_samples: int | None = None,
                       replicates: int = 8,
                       tolerance: float | None = DEFAULT_TOLERANCE,
                       strict: bool = False) -> EffectiveDynamics:
    """The law of the alignment ``ρ_k`` of SGA at finite step and dimension (module docstring).

    Parameters
    ----------
    model : ModelConfig (any ``σ``, either signal sign)
    step : StepSize (or any schedule with ``eta(k)``), in the model's units
    steps : number of updates (int >= 1)
    initial_alignment : ``ρ0`` in [−1, 1] (a point mass) or None: the exact law of a uniform
        start, density ``∝ (1 − ρ²)^{(d−3)/2}``
    batch, update : minibatch size and update rule, as :func:`simulate`
    record_every, record : the recorded steps, as :func:`simulate`
    seed : seed of the reduced draws behind the one-step moments
    n_samples : reduced draws per moment node to start with (int >= 100)
    rtol : relative Monte-Carlo tolerance of the one-step moments: draws are doubled at the
        nodes whose drift or variance standard error exceeds it, up to ``max_samples``
        (default ``16·n_samples``; :mod:`.moments`) — with a ``tolerance``, at the nodes the
        law visits (the others keep ``n_samples``), else at every node; None: exactly
        ``n_samples`` (and with a tolerance, more at the visited nodes only while the
        Monte-Carlo error exceeds half of it)
    replicates : ``K`` disjoint groups of the draws, whose moment tables are evolved separately
        for the standard errors (``mean_abs_stderr``, :meth:`EffectiveDynamics.quantile_stderr`);
        0 or 1: none (standard errors NaN)
    tolerance : the largest acceptable error of the predicted mean ``|ρ|``: while the
        Monte-Carlo part (``t₀.₉₇₅,K−1`` times the replicates' standard error) exceeds half of
        it, draws are added at the nodes the law visits and the law evolved again
        (:func:`within_tolerance`, the one rule); when the :class:`Diagnostic` predicts more
        (or finds a cause), an :class:`EffectiveDynamicsAccuracyWarning` names the cause
        (None: no check)
    strict : raise :class:`EffectiveDynamicsAccuracyError` instead of warning
    grid_step : spacing ``h`` of the ``z`` grid (default ``min(0.01, 0.1/√d)``, at most
        20 001 nodes; an explicit one at most 4 times finer than the default and within
        20 001 nodes over ``[−9, 9]``)
    diffusion_scale : multiplies the diffusion ``v`` (1: the chain's; 0: the mean-field flow
        of the initial law — a deliberately wrong law that the band tests must reject; at
        most :data:`MAX_DIFFUSION_SCALE`)
    moments : a :class:`MomentTable` to reuse (built by :func:`moment_table` for this
        ``model``, ``batch`` and ``update`` over a step range that covers the schedule's);
        the grid then spans the table's ``z`` range, and its replicates (if any) give the
        standard errors
    max_blocks : at most this many evolution blocks (None: no limit beyond ``steps``); a block
        spans many steps at the sizes users run (E1: 175 blocks for 10⁶ steps) but ~1 step
        when one step moves ``z`` by ~0.05 or more (small ``L``, large ``η``). Exceeding it
        raises :class:`BlockBudgetExceeded` (a ``RuntimeError``: the input was valid, the
        budget ran out)

    Returns
    -------
    EffectiveDynamics. Raises ``ConfigError`` for bad input (one line naming the field) —
    among it, before any work: ``d`` above :data:`MAX_D`, a draw beyond memory, and more than
    :data:`MAX_NODE_BLOCKS` grid nodes × blocks (``min(steps, max_blocks)``) —
    :class:`EffectiveDynamicsAccuracyError` with ``strict`` when the diagnostic fires.
    """
    t0 = time.perf_counter()
    check_effective_model(model)
    if grid_step is not None:
        check_grid_step(model.d, grid_step)
    # the evolution's work, bounded before any: blocks (one a step at worst) × grid nodes
    z_top = Z_CAP if moments is None else float(moments.z_nodes[-1])
    g_most = min(_MAX_GRID, 2 * math.ceil(z_top / (grid_spacing(model.d) if grid_step is None
                                                    else grid_step)) + 1)
    most = steps if max_blocks is None else min(steps, max_blocks)
    if most * g_most > MAX_NODE_BLOCKS:
        field_, value = ("steps", steps) if max_blocks is None else ("max_blocks", max_blocks)
        raise ConfigError(field_, f"must keep the evolution's work within {MAX_NODE_BLOCKS:.0e} "
                          f"grid nodes × blocks: up to {most:,} blocks (one a step where "
                          f"single steps shape the law) × {g_most:,} nodes; pass max_blocks <= "
                          f"{int(MAX_NODE_BLOCKS // g_most):,} to bound it", value)
    if n_samples < batch:
        raise ConfigError("n_samples", f"must be >= batch = {batch}", n_samples)
    mx = _max_samples(n_samples, max_samples)
    if moments is None:
        check_pool_memory(batch, n_samples)
    ks_rec = record_schedule(steps, record_every, record)
    all_k = np.arange(steps + 1, dtype=np.int64)
    etas = schedule_etas(step, all_k[:-1])
    if etas.size == 0 or not np.all(np.isfinite(etas)) or np.any(etas <= 0):
        raise ConfigError("step", "must give finite step sizes > 0", step)
    s2 = model.noise_std ** 2
    eta_std = etas * s2
    if not float(eta_std.max()) <= MAX_STD_STEP:
        raise ConfigError("step", f"must keep σ²η_k <= {MAX_STD_STEP:g} (the one-step moments "
                          "are normalised by η², which must stay finite)",
                          f"largest σ²η_k = {float(eta_std.max()):.3g}")
    d = model.d

    # ---- grid
    z_start = None
    if initial_alignment is not None:
        z_start = float(np.arctanh(np.clip(initial_alignment, -1 + 1e-12, 1 - 1e-12)))
    if moments is None:
        zm = z_max(model, float(eta_std.min()), batch, z_start, seed)
    else:
        zm = float(moments.z_nodes[-1])
    z, h = _grid(zm, grid_spacing(d) if grid_step is None else float(grid_step))
    G = z.size
    if ks_rec.size * G > _MAX_LAW:
        raise ConfigError("record", f"records × grid ({ks_rec.size} × {G}) must be <= "
                          f"{_MAX_LAW} doubles; record fewer steps", ks_rec.size)

    # ---- moments; with a tolerance, ``rtol`` is met at the nodes the law visits (below)
    scoped = moments is None and tolerance is not None and rtol is not None
    if moments is None:
        table = build_table(model, zm, eta_nodes(float(eta_std.min()), float(eta_std.max())),
                            batch, update, n_samples, seed, None if scoped else rtol, mx,
                            replicates)
    else:
        table = moments
    t1 = time.perf_counter()

    p = _initial_law(z, h, d, z_start)

    # ---- evolve the pooled table and each replicate (in parallel); with a tolerance, draws
    # added at the nodes the law visits and the law evolved again (:func:`within_tolerance`)
    t_ev = [0.0]

    def run(tab: MomentTable, coarse: bool = False) -> _Evolved:
        t_e = time.perf_counter()
        out = _evolve_all(tab, p, z, h, eta_std, ks_rec, diffusion_scale, max_blocks, steps,
                          coarse)
        t_ev[0] += time.perf_counter() - t_e
        return out

    def finish(res: _Evolved, tab: MomentTable) -> _Evolved:
        """A first pass that stood: its pooled law evolved again on the fine blocks."""
        fine = run(dataclasses.replace(tab, replicate_a=None, replicate_b=None))
        return dataclasses.replace(res, law=fine.law, mean=fine.mean, mean_abs=fine.mean_abs,
                                   rec_stats=fine.rec_stats, stats=fine.stats)

    t_loop = time.perf_counter()
    ev, table = _to_tolerance(run, table, None if moments is not None else tolerance,
                              lambda e: (e.law, z, _mc_error(e.se_abs, e.replicates)[2]),
                              float(rtol) if scoped else None,  # type: ignore[arg-type]
                              lambda tab: run(tab, True), finish)
    t_more = time.perf_counter() - t_loop - t_ev[0]  # the draws the rule added
    disc = None
    if tolerance is not None and ev.stats[2] > _SINGLE_SHARE * ev.stats[0]:
        # single steps shape the law: the flow over a block is not the discrete step
        disc = discreteness_errors(table, p, z, h, eta_std, ks_rec, ev.mean_abs,
                                   diffusion_scale, max_blocks)
    diag = _diagnose(ev.se_abs, ev.replicates, table, ev.law, z, ev.rec_stats, ev.stats,
                     eta_std, tolerance, eta_std[np.maximum(ks_rec - 1, 0)], disc, ks_rec)
    t2 = time.perf_counter()
    ode_t = np.concatenate([[0.0], np.cumsum(etas)])[ks_rec]
    ed = EffectiveDynamics(
        model=model, step=step, batch=batch, update=update,
        initial_alignment=initial_alignment, seed=seed, steps=ks_rec, ode_time=ode_t,
        mean_abs=ev.mean_abs, mean=ev.mean, z_grid=z, rho_grid=np.tanh(z), law=ev.law,
        moments=table,
        timings={"moments_s": t1 - t0 + t_more, "evolve_s": t2 - t1 - t_more,
                 "total_s": t2 - t0,
                 "blocks": float(ev.stats[0]), "sub_blocks": float(ev.stats[1]),
                 "draws": float(table.n_samples)},
        mean_abs_stderr=ev.se_abs, mean_stderr=ev.se_mean, diagnostic=diag,
        replicate_mean_abs=ev.rep_abs, _replicate_quantiles=ev.rep_q)
    if diag.verdict != "ok":
        if strict:
            raise EffectiveDynamicsAccuracyError(diag.message)
        warnings.warn(diag.message, EffectiveDynamicsAccuracyWarning, stacklevel=3)
    return ed


def _extension(mc: float, tolerance: float) -> float:
    """The factor on the draws behind the Monte-Carlo error ``mc`` (``∝ 1/√draws``) that
    should bring it to ``_MC_SHARE·tolerance``, with a margin of 1.2, in [1.25, 16]."""
    return min(16.0, max(1.25, 1.2 * (mc / (_MC_SHARE * tolerance)) ** 2))


#: the most evolutions the tolerance rule makes (each after draws were added)
_MAX_PASSES = 8


def _to_tolerance(evolve: Any, table: MomentTable, tolerance: float | None, probe: Any,
                  rtol: float | None = None, first: Any = None, finish: Any = None
                  ) -> tuple[Any, MomentTable]:
    """The tolerance rule (:func:`within_tolerance`) for any ``evolve(table)``; ``probe(result)``
    gives ``(law at the records, its z grid, Monte-Carlo error)``; ``rtol``: the visited nodes
    are first refined to it (:func:`~.moments.refine_table`; None: not). ``first`` (with a
    tolerance): a cheaper evolution for the first pass, whose law only says which nodes need
    draws (its Monte-Carlo error the same as ``evolve``'s); where no draws follow,
    ``finish(result, table)`` turns it into ``evolve``'s result."""
    if tolerance is None:
        return evolve(table), table
    res = (evolve if first is None else first)(table)
    changed = False
    refined = np.zeros(table.z_nodes.size, dtype=bool)
    for _ in range(_MAX_PASSES):
        law, z, mc = probe(res)
        if table.draws is None or table._acc is None:
            break
        visited = visited_nodes(table, law, z)
        if not np.any(visited):
            break
        more = table
        if rtol is not None and np.any(visited & ~refined):
            refined |= visited
            more = refine_table(more, refined, rtol)
        if np.isfinite(mc) and mc > _MC_SHARE * tolerance:
            # the draws that should bring mc to the share, from the draws it was measured at
            need = float(table.draws[visited].max()) * _extension(mc, tolerance)
            top = float(more.draws[visited].max())
            if need > top:
                more = extend_table(more, need / top, visited)
        if more.draws is None or np.array_equal(more.draws, table.draws):
            break
        table = more
        res = evolve(table)
        changed = True
    if not changed and first is not None:
        res = finish(res, table)
    return res, table


def within_tolerance(evolve: Any, table: MomentTable, tolerance: float | None
                     ) -> tuple[EffectiveDynamics, MomentTable]:
    """``evolve(table)`` (an :class:`EffectiveDynamics` on a shared moment table, e.g. the
    schedule advisor's or the accuracy map's) under the tolerance rule that
    :func:`effective_dynamics` applies to a table of its own: while the Monte-Carlo error
    (``t₀.₉₇₅,K−1`` times the largest standard error of the mean ``|ρ|`` over the records)
    takes more than half of ``tolerance``, the draws at the moment nodes the law visits
    (:func:`visited_nodes`; a node it never reaches does not move the prediction) are set to
    what should bring it there — ``1.2 (mc/(tolerance/2))²`` times the draws it was measured
    at, within ``[1.25, 16]`` times and the table's ``max_samples`` (:func:`~.moments.
    extend_table`, the same stream continued) — and the law evolved again (at most
    8 evolutions). Returns the last prediction and the table it used."""
    return _to_tolerance(evolve, table, tolerance,
                         lambda ed: (ed.law, ed.z_grid, ed.diagnostic.mc_error))


def last_pass_warnings(evolve: Any) -> tuple[Any, list[warnings.WarningMessage]]:
    """``(recorded, caught)``: ``recorded`` calls ``evolve`` with the warnings it raises
    recorded instead of shown (every one: the filter ``"always"``), and ``caught`` holds those
    of its last call alone (replaced at each call). For a caller of :func:`within_tolerance`
    that reports the last pass's prediction with that pass's warnings — a pass that a table
    extension supersedes keeps its warnings to itself: the schedule advisor raises ``caught``
    again, the accuracy map counts it among the prediction's causes."""
    caught: list[warnings.WarningMessage] = []

    def recorded(*args: Any, **kwargs: Any) -> Any:
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            out = evolve(*args, **kwargs)
        caught[:] = seen
        return out

    return recorded, caught
