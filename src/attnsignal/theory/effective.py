"""Effective dynamics at finite step and dimension: the law of ``ρ_k``
(docs/theory.md#the-law-of-rho-k).

``ρ_k`` is a Markov chain (docs/model.md#the-alignment-is-a-markov-chain). This module evolves
its law on a grid with the finite-``η`` one-step moments of the exact reduced sampler, and so predicts the mean ``E ρ_k``, the mean
``E|ρ_k|`` and any quantile of ``|ρ_k|`` — what a simulation shows at the sizes users run —
where the limiting ODE ``dρ/dt = (1 − ρ²)Φ'(ρ)`` is only the ``η → 0`` limit.

Coordinates
-----------
The law is carried in ``z = artanh ρ`` on a uniform grid ``z_j = j h`` on ``[−Z, Z]``. In ``z``
the first-order drift is the limiting ODE itself, ``E[Δz] = η Φ'(ρ) + O(η²)`` (since
``E[g_e] = s Φ'(ρ)``, ``s = √(1 − ρ²)``), and the approach to ``±1`` — where ``1 − |ρ|`` is
spread over decades — is resolved uniformly (``1 − |ρ| ≈ 2 e^{−2|z|}``). ``Z`` is chosen
above the constant-step plateau of the smallest step of the schedule
(docs/theory.md#the-second-order-term) by a margin of
2 in ``z`` (a factor ``e⁴`` in ``1 − |ρ|``); mass that would leave the grid stays on its last node.

One-step moments (:func:`one_step_moments`)
-------------------------------------------
At each of about 65 alignments (uniform in ``z``) the reduced sampler (:mod:`.reduced`) draws
``n_samples`` per-sample gradients ``(g_q, g_e, ||u||²)`` once (common random numbers), and the
*exact* update (projected or riemannian; minibatches of ``B`` distinct draws with the complement
norm from a Bartlett draw of Wishart(``D``, ``I_B``), §2.1) gives ``ρ'`` for every draw at every
step size of a log-spaced table spanning the schedule. Then, with the control variate of §8,

    m(z, η) = E[Δz] = η Φ'(ρ) + mean(Δz − η ḡ_e / s),      v(z, η) = Var(Δz)  (sample variance),

(with the control variate's coefficient fitted by regression, which is 1 + O(η) and never does
worse than the plain mean at large ``η``),

``Φ'`` from the exact quadrature (:mod:`.exact`). These are not truncated in ``η``: every order
of the step is in them; the only error is Monte-Carlo: the remainder ``Δz − ηḡ_e/s`` has standard
deviation ``O(η²/s²)``, so ``m`` has error ``O(η²/√n)`` (about ``10⁻³`` relative to the ``η²``
term at ``n = 4000``), ``v`` a relative error ``≈ √(2/n)``. Between table points ``(m − ηΦ')
s²/η²`` and ``v s²/η²`` (bounded, smooth) are interpolated by cubic splines in ``log η`` and
in ``z``.

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
with the hat (linear-interpolation) kernel whose own variance ``h²/6`` is subtracted first: the
deposited law has exactly the block's mean and variance (when ``P ≥ h²/6``), so the grid adds
no numerical diffusion and removes none. A block ends at a record, or when the variance grown
from a node among those that hold 99 % of the mass reaches ``0.05²``, so that
the drift is close to linear across each block's spread — also in the contracting region near
the plateau, where an unlimited block would replace the skewed local law by a Gaussian.

Order and error. The scheme is a diffusion (second-moment) approximation of the chain in ``z``
with exact-in-``η`` moments: the per-step jump's third and higher cumulants (``O(η³)`` per step)
are dropped, which over the ``≈ 1/η`` steps that matter leaves an ``O(η²)`` error in the law
relative to ``O(η)`` for the ``O(η²)``-truncated drift and ``O(1)`` for the limiting ODE, plus
the Monte-Carlo error above and the linear-noise error within a block (``O(c²)`` with
``c = 0.05``). Measured against the chain engine: ``docs/effective-dynamics.md`` and
``benchmarks/effective_accuracy.py``.

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

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numba import njit
from scipy.interpolate import CubicSpline
from scipy.special import ndtr

from ..config import ConfigError, ModelConfig
from ..seeds import stream
from ..validation import Integer, Optional, Real, validated
from ._checks import BATCH, MODEL, RHO0, SEED, STEP, UPDATE
from .exact import MAX_BETA
from .field import dphi_interpolant
from .reduced import reduced_chunks

__all__ = ["BlockBudgetExceeded", "EffectiveDynamics", "MomentTable", "OneStepMoments",
           "effective_dynamics", "grid_spacing", "max_grid_nodes", "moment_table",
           "one_step_moments", "schedule_etas", "record_schedule"]

_SQRT2PI = math.sqrt(2.0 * math.pi)
_BLOCK_SD = 0.05          # largest spread of a block from a node that carries mass (in z)
_ETA_CHANGE = 0.01        # largest relative change of η within a sub-block
_MOVE = 0.02              # largest mean displacement of a non-stiff node per sub-block (in z)
_NODE_DZ = 0.2            # spacing of the moment nodes in z
_MAX_GRID = 20_001
_Z_CAP = 9.0              # the grid never reaches beyond |z| = 9 (1 − |ρ| ≈ 3e-8)
#: largest standardised step ``σ²η`` (its square must stay finite: beyond ~1e154 the drift
#: would be NaN and the law would silently stand still)
MAX_STD_STEP = 1e150
_MAX_STEPS = 50_000_000
_MAX_LAW = 60_000_000     # doubles kept for the law (records × grid)


class BlockBudgetExceeded(ConfigError):
    """The evolution needs more blocks than ``max_blocks`` allows (large per-step jumps against
    the law's width — small ``L``, large ``η`` — force blocks of a few steps)."""


def grid_spacing(d: int) -> float:
    """The default spacing ``h = min(0.01, 0.1/√d)`` of the ``z`` grid (the uniform start's
    law has width ``≈ 1/√d`` in ``z``)."""
    return min(0.01, 0.1 / math.sqrt(d))


def max_grid_nodes(d: int) -> int:
    """The most nodes the default grid can have at dimension ``d``: ``2⌈Z/h⌉ + 1`` with the
    largest extent ``Z = 9``, at most 20 001 — a bound known before any work."""
    return min(_MAX_GRID, 2 * math.ceil(_Z_CAP / grid_spacing(d)) + 1)


def check_pool_memory(batch: int, n_samples: int, z_max: float = _Z_CAP) -> None:
    """Refuse, before any work, a minibatch pool that memory cannot hold: the moment table
    keeps about ``3·M·n·B + 2·n·B²`` doubles for ``B = batch`` (``B = 1``: ``3·M·n``), ``n =
    n_samples`` draws and ``M = 2⌈z_max/0.2⌉ + 1`` moment nodes (91 at the largest extent, the
    default — a bound known before the extent is). Raises ConfigError (field ``batch``)."""
    from ..limits import check_memory

    nodes = 2 * math.ceil(min(z_max, _Z_CAP) / _NODE_DZ) + 1
    n, b = float(n_samples), float(batch)
    check_memory("batch", 8.0 * (3 * nodes * n * b + 2 * n * b * b),
                 f"the effective dynamics' minibatch pool (B = {batch}, {n_samples} draws)",
                 batch)


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


# --------------------------------------------------------------------------- one step


@dataclass(frozen=True, eq=False)
class OneStepMoments:
    """Moments of the one-step change at alignments ``rho`` (shape ``(n_rho,)``) and steps
    ``eta`` (``(n_eta,)``, original units), each ``(n_rho, n_eta)``:

    drift_rho, var_rho : ``E[ρ' − ρ]`` (control variate ``η(1 − ρ²)Φ'``) and ``Var[ρ' − ρ]``
    drift_z, var_z : the same for ``Δz = artanh ρ' − artanh ρ`` (control variate ``ηΦ'``)
    stderr_drift_rho, stderr_drift_z : Monte-Carlo standard errors of the drifts
    """

    rho: np.ndarray
    eta: np.ndarray
    drift_rho: np.ndarray
    var_rho: np.ndarray
    drift_z: np.ndarray
    var_z: np.ndarray
    stderr_drift_rho: np.ndarray
    stderr_drift_z: np.ndarray
    n_samples: int


def _gradient_pool(model: ModelConfig, rhos: np.ndarray, n_samples: int, seed: int
                   ) -> np.ndarray:
    """Per-sample ``(g_q, g_e, ||u||²)`` at every ``ρ`` from one set of reduced draws
    (:func:`.reduced.reduced_chunks`, common to all ``ρ``; the compiled
    :meth:`.reduced.ReducedDraws.gradients`): ``(n_rho, n_samples, 3)``, standardised units."""
    out = np.empty((rhos.size, n_samples, 3))
    pos = 0
    rh = np.ascontiguousarray(rhos, dtype=np.float64)
    for draws in reduced_chunks(model, n_samples, seed):
        n = draws.a.shape[0]
        out[:, pos:pos + n] = draws.gradients(rh)
        pos += n
    return out


def _batches(pool: np.ndarray, batch: int, D: int, seed: int
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Minibatch means ``ḡ_q, ḡ_e`` and ``||ū||²`` from the pool: batch ``i`` averages the ``B``
    distinct draws ``π(i + o_j mod n)``, ``o_j = j⌊φn⌋ mod n``; ``||Σ_b u_b/B||² = cᵀGc``, ``c_b = r_b/√G_bb`` with
    ``G`` a Bartlett draw of Wishart(``D``, ``I_B``) (direct directions if ``D < B``)."""
    if batch == 1:
        return pool[..., 0], pool[..., 1], pool[..., 2]
    n = pool.shape[1]
    if n < batch:
        raise ConfigError("n_samples", f"must be >= batch = {batch}", n)
    rng = np.random.default_rng(stream(seed, "minibatches", batch))
    perm = rng.permutation(n)
    # offsets j·⌊φ n⌋ (golden ratio): distinct partners, no short cycle (with offsets j·n/B
    # every batch would recur B times and the n batches hold only n/B independent ones)
    off = np.array([(j * int(0.6180339887498949 * n)) % n for j in range(batch)])
    if np.unique(off).size < batch:
        off = np.arange(batch)
    idx = perm[(np.arange(n)[:, None] + off[None, :]) % n]  # (n, B)
    gq = pool[:, idx, 0].mean(axis=2)
    ge = pool[:, idx, 1].mean(axis=2)
    r = np.sqrt(pool[:, idx, 2])  # (n_rho, n, B)
    if D >= batch:
        T = np.zeros((n, batch, batch))
        for j in range(batch):
            T[:, j, j] = np.sqrt(rng.chisquare(D - j, n))
            if j:
                T[:, j, :j] = rng.standard_normal((n, j))
        G = np.einsum("nij,nkj->nik", T, T)
    elif D > 0:
        Y = rng.standard_normal((n, batch, D))
        G = np.einsum("nid,nkd->nik", Y, Y)
    else:
        G = np.zeros((n, batch, batch))
    diag = np.sqrt(np.maximum(np.einsum("nii->ni", G), 1e-300))
    c = r / diag[None, :, :]
    u2 = np.einsum("rni,nik,rnk->rn", c, G, c) / (batch * batch)
    return gq, ge, u2


def _control_variate(y: np.ndarray, x: np.ndarray, ex: np.ndarray
                     ) -> tuple[np.ndarray, np.ndarray]:
    """``E[y]`` per row from draws ``y`` with the control variate ``x`` of known mean ``ex``:
    ``mean(y − c(x − ex))`` with the regression coefficient ``c = Cov(y, x)/Var(x)`` (``c → 1``
    as ``η → 0``, where ``y − x = O(η²)``; at large ``η`` the fitted ``c`` keeps the variance
    below that of the plain mean). Returns the estimate and its standard error."""
    n = y.shape[1]
    xc = x - x.mean(axis=1, keepdims=True)
    yc = y - y.mean(axis=1, keepdims=True)
    vx = np.einsum("ij,ij->i", xc, xc)
    c = np.where(vx > 0, np.einsum("ij,ij->i", xc, yc) / np.where(vx > 0, vx, 1.0), 0.0)
    res = y - c[:, None] * x
    est = res.mean(axis=1) + c * ex
    return est, res.std(axis=1, ddof=1) / math.sqrt(n)


def _step_moments(rhos: np.ndarray, dphi: np.ndarray, gq: np.ndarray, ge: np.ndarray,
                  u2: np.ndarray, eta: float, update: str) -> tuple[np.ndarray, ...]:
    """Exact update for every draw at standardised step ``eta``; moments with control variates."""
    r = rhos[:, None]
    s = np.sqrt(np.maximum(1.0 - r * r, 0.0))
    gq_ = 0.0 if update == "riemannian" else gq
    num = r * (1.0 + eta * gq_) + s * eta * ge
    den = np.sqrt((1.0 + eta * gq_) ** 2 + (eta * ge) ** 2 + eta * eta * u2)
    rp = np.clip(num / den, -1.0, 1.0)
    d_rho = rp - r
    drift_rho, se_rho = _control_variate(d_rho, eta * s * ge, eta * (1.0 - rhos ** 2) * dphi)
    var_rho = d_rho.var(axis=1, ddof=1)
    lim = 1.0 - 1e-16
    d_z = np.arctanh(np.clip(rp, -lim, lim)) - np.arctanh(np.clip(r, -lim, lim))
    drift_z, se_z = _control_variate(d_z, eta * ge / np.maximum(s, 1e-300), eta * dphi)
    var_z = d_z.var(axis=1, ddof=1)
    return drift_rho, var_rho, drift_z, var_z, se_rho, se_z


def _dphi_std(model: ModelConfig):
    std = model.standardized()
    method = "exact" if std.beta <= MAX_BETA else "mc"
    return dphi_interpolant(std, method)


@validated(model=MODEL, batch=BATCH, update=UPDATE, n_samples=Integer(ge=2), seed=SEED)
def one_step_moments(model: ModelConfig, rho: Any, eta: Any, *, batch: int = 1,
                     update: str = "projected", n_samples: int = 4000,
                     seed: int = 0) -> OneStepMoments:
    """Mean and variance of the one-step change of ``ρ`` and of ``z = artanh ρ`` at every
    ``(ρ, η)`` (``η`` in the model's units; ``σ ≠ 1`` uses the standardised model with step
    ``σ²η``), from the exact reduced update with the control variate of
    docs/theory.md#the-law-of-rho-k:
    ``E[Δρ] = η(1 − ρ²)Φ'(ρ) + E[Δρ − η s ḡ_e]`` (``E[Δz] = ηΦ'(ρ) + E[Δz − ηḡ_e/s]``), the
    coefficient of the control variate fitted by regression (:func:`_control_variate`).

    rho : values in (−1, 1); eta : values > 0. Raises ``ConfigError`` for bad input."""
    rhos = np.atleast_1d(np.asarray(rho, dtype=np.float64)).ravel()
    if rhos.size == 0 or not np.all(np.isfinite(rhos)) or np.any(np.abs(rhos) >= 1.0):
        raise ConfigError("rho", "must be finite numbers in (-1, 1)", rho)
    etas = np.atleast_1d(np.asarray(eta, dtype=np.float64)).ravel()
    if etas.size == 0 or not np.all(np.isfinite(etas)) or np.any(etas <= 0):
        raise ConfigError("eta", "must be finite numbers > 0", eta)
    std = model.standardized()
    s2 = model.noise_std ** 2
    dphi = np.asarray(_dphi_std(model)(rhos))
    pool = _gradient_pool(std, rhos, n_samples, seed)
    gq, ge, u2 = _batches(pool, batch, std.d - 2, seed)
    out = [np.empty((rhos.size, etas.size)) for _ in range(6)]
    for j, e in enumerate(etas):
        res = _step_moments(rhos, dphi, gq, ge, u2, float(e) * s2, update)
        for o, x in zip(out, res):
            o[:, j] = x
    return OneStepMoments(rhos, etas, out[0], out[1], out[2], out[3], out[4], out[5],
                          int(n_samples))


# --------------------------------------------------------------------------- moment table


@dataclass(frozen=True, eq=False)
class MomentTable:
    """Per-step drift ``m(z, η) = E[Δz]`` and diffusion ``v(z, η) = Var[Δz]`` of
    ``z = artanh ρ`` on ``z_nodes × etas`` (standardised steps ``etas``), stored normalised:
    ``a = (m − ηΦ')s²/η²`` and ``b = v s²/η²`` (``s² = 1 − ρ²``), with ``dphi = Φ'`` at the nodes
    (standardised). :meth:`at` returns the interpolants at one step."""

    z_nodes: np.ndarray
    etas: np.ndarray
    a: np.ndarray
    b: np.ndarray
    dphi_nodes: np.ndarray
    n_samples: int
    _dphi: Any = field(repr=False, default=None)

    def __post_init__(self) -> None:
        if self.etas.size >= 4:
            le = np.log(self.etas)
            object.__setattr__(self, "_sa", CubicSpline(le, self.a, axis=1))
            object.__setattr__(self, "_sb", CubicSpline(le, self.b, axis=1))
        zf = np.linspace(self.z_nodes[0], self.z_nodes[-1], 4001)
        object.__setattr__(self, "_fp", CubicSpline(zf, np.asarray(self._dphi(np.tanh(zf)))))

    def _coeffs(self, eta: float) -> tuple[np.ndarray, np.ndarray]:
        if self.etas.size == 1:
            return self.a[:, 0], self.b[:, 0]
        le = np.log(self.etas)
        x = float(np.clip(math.log(eta), le[0], le[-1]))
        if self.etas.size < 4:
            a = np.array([np.interp(x, le, row) for row in self.a])
            b = np.array([np.interp(x, le, row) for row in self.b])
            return a, b
        return self._sa(x), self._sb(x)  # type: ignore[attr-defined]

    def at(self, eta: float) -> "_Local":
        """Interpolants of ``m(·, η)``, ``∂_z m`` and ``v(·, η)`` at the standardised step."""
        a, b = self._coeffs(eta)
        return _Local(eta, CubicSpline(self.z_nodes, a), CubicSpline(self.z_nodes, b),
                      self._fp, float(self.z_nodes[0]), float(self.z_nodes[-1]))  # type: ignore[attr-defined]


@dataclass(frozen=True, eq=False)
class _Local:
    eta: float
    a: CubicSpline
    b: CubicSpline
    fp: CubicSpline  # z ↦ Φ'(tanh z)
    lo: float
    hi: float

    def __call__(self, z: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``m``, ``∂_z m`` and ``v`` at ``z`` (standardised step)."""
        z = np.clip(z, self.lo, self.hi)
        rho = np.tanh(z)
        c2 = np.cosh(z) ** 2  # 1/s²
        e = self.eta
        a = self.a(z)
        m = e * self.fp(z) + e * e * a * c2
        mz = e * self.fp(z, 1) + e * e * (self.a(z, 1) + 2.0 * rho * a) * c2
        v = np.maximum(e * e * self.b(z) * c2, 0.0)
        return m, mz, v


def _eta_nodes(lo: float, hi: float) -> np.ndarray:
    """Log-spaced table steps on ``[lo, hi]`` (ratio at most 1.25, 4 to 24 of them)."""
    if hi / lo < 1.0 + 1e-9:
        return np.array([lo])
    n_eta = int(min(24, max(4, math.ceil(math.log(hi / lo) / math.log(1.25)) + 1)))
    return np.exp(np.linspace(math.log(lo), math.log(hi), n_eta))


@validated(model=MODEL, eta_min=Real(gt=0.0), eta_max=Real(gt=0.0), batch=BATCH,
           update=UPDATE, z_max=Optional(Real(ge=1.0, le=_Z_CAP)), n_samples=Integer(ge=100),
           seed=SEED)
def moment_table(model: ModelConfig, eta_min: float, eta_max: float, *, batch: int = 1,
                 update: str = "projected", z_max: float | None = None, n_samples: int = 4000,
                 seed: int = 0) -> MomentTable:
    """The one-step moment table of ``z = artanh ρ`` for steps in ``[eta_min, eta_max]``
    (model units), for reuse by several :func:`effective_dynamics` calls (the schedule
    advisor). ``z_max`` defaults to 2 above the plateau of ``eta_min``."""
    if eta_max < eta_min:
        raise ConfigError("eta_max", f"must be >= eta_min = {eta_min:g}", eta_max)
    check_pool_memory(batch, n_samples, _Z_CAP if z_max is None else z_max)
    s2 = model.noise_std ** 2
    if z_max is None:
        z_max = _z_max(model, eta_min * s2, batch, None, seed)
    return _moment_table(model, float(z_max), _eta_nodes(eta_min * s2, eta_max * s2), batch,
                         update, n_samples, seed)


def _moment_table(model: ModelConfig, z_max: float, etas_std: np.ndarray, batch: int,
                  update: str, n_samples: int, seed: int) -> MomentTable:
    n_nodes = 2 * int(math.ceil(z_max / _NODE_DZ)) + 1
    z_nodes = np.linspace(-z_max, z_max, n_nodes)
    rhos = np.tanh(z_nodes)
    std = model.standardized()
    dphi_f = _dphi_std(model)
    dphi = np.asarray(dphi_f(rhos))
    pool = _gradient_pool(std, rhos, n_samples, seed)
    gq, ge, u2 = _batches(pool, batch, std.d - 2, seed)
    s2 = 1.0 / np.cosh(z_nodes) ** 2
    a = np.empty((n_nodes, etas_std.size))
    b = np.empty((n_nodes, etas_std.size))
    for j, e in enumerate(etas_std):
        _, _, mz, vz, _, _ = _step_moments(rhos, dphi, gq, ge, u2, float(e), update)
        a[:, j] = (mz - e * dphi) * s2 / (e * e)
        b[:, j] = vz * s2 / (e * e)
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise FloatingPointError("effective_dynamics: non-finite one-step moments")
    if model.signal_sign == "random":
        # the chain is symmetric under ρ → −ρ (docs/model.md): m odd, v even in z — impose on
        # the Monte-Carlo estimates (the nodes are symmetric about 0)
        a = 0.5 * (a - a[::-1])
        b = 0.5 * (b + b[::-1])
    return MomentTable(z_nodes, etas_std, a, b, dphi, int(n_samples), dphi_f)


# --------------------------------------------------------------------------- the law


def _hat_gaussian(mu: np.ndarray, var: np.ndarray, z0: float, h: float, G: int
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Grid indices ``(n, W)`` and weights of ``N(mu, var)`` deposited with the hat kernel
    after subtracting its variance ``h²/6``: mean and variance exact when ``var >= h²/6``.
    Weights are the second differences of ``C(x) = E(Y − x)⁺``; rows sum to 1 (mass that
    leaves the grid stays on the end node)."""
    sig = np.sqrt(np.maximum(var - h * h / 6.0, 0.0))
    half = int(math.ceil(float(np.max(5.5 * sig, initial=0.0)) / h)) + 2
    centre = np.rint((mu - z0) / h).astype(np.int64)
    j = centre[:, None] + np.arange(-half - 1, half + 2)[None, :]  # W + 2 knots
    d = mu[:, None] - (z0 + j * h)
    sg = sig[:, None]
    pos = sg > 0
    sgs = np.where(pos, sg, 1.0)
    t = d / sgs
    with np.errstate(under="ignore"):
        pdf = np.exp(-0.5 * np.minimum(t * t, 1e6)) / _SQRT2PI
    C = np.where(pos, sgs * pdf + d * ndtr(t), np.maximum(d, 0.0))
    w = (C[:, :-2] - 2.0 * C[:, 1:-1] + C[:, 2:]) / h
    w = np.maximum(w, 0.0)
    idx = np.clip(j[:, 1:-1], 0, G - 1)
    tot = w.sum(axis=1, keepdims=True)
    w = w / np.where(tot > 0, tot, 1.0)
    return idx, w


@njit(cache=True, nogil=True)
def _deposit_kernel(p, mu, var, z0, h, out):  # pragma: no cover
    """``out += Σ_j p_j · hat-deposited N(mu_j, var_j − h²/6)`` (see :func:`_hat_gaussian`),
    each node on its own window of ±5.5 standard deviations; rows normalised to 1."""
    G = out.shape[0]
    inv_sqrt2pi = 1.0 / math.sqrt(2.0 * math.pi)
    for jn in range(mu.shape[0]):
        sig = math.sqrt(max(var[jn] - h * h / 6.0, 0.0))
        half = int(math.ceil(5.5 * sig / h)) + 2
        c = int(round((mu[jn] - z0) / h))
        W = 2 * half + 1
        w = np.empty(W)
        cm = 0.0
        c0 = 0.0
        tot = 0.0
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
                w[t - 2] = wt
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
            out[kn] += w[t] * scale


def _deposit(p_live: np.ndarray, mu: np.ndarray, var: np.ndarray, z0: float, h: float,
             G: int) -> np.ndarray:
    """``Σ_j p_j N(mu_j, var_j)`` on the grid with the hat kernel (:func:`_hat_gaussian`)."""
    out = np.zeros(G)
    _deposit_kernel(np.ascontiguousarray(p_live), np.ascontiguousarray(mu),
                    np.ascontiguousarray(var), float(z0), float(h), out)
    return out


def _phi12(a: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(e^{at} − 1)/a`` and ``(e^{2at} − 1)/(2a)`` (→ ``t`` as ``a → 0``)."""
    at = a * t
    small = np.abs(at) < 1e-8
    safe = np.where(small, 1.0, a)
    with np.errstate(over="ignore"):
        p1 = np.where(small, t, np.expm1(at) / safe)
        p2 = np.where(small, t, np.expm1(2.0 * at) / (2.0 * safe))
    return p1, p2


def _advance_nodes(x: np.ndarray, P: np.ndarray, n: float, loc: "_Local", vscale: float
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Exponential-Euler steps of ``dx/dk = m``, ``dP/dk = 2 m_z P + v`` over ``n`` steps at one
    ``η``; a node whose one-piece move would exceed ``_MOVE`` is split into up to 32 equal
    pieces (so a node far above the plateau follows the nonlinear drift, not its tangent)."""
    m, mz, v = loc(x)
    p1, _ = _phi12(mz, np.full(x.shape, n))
    q = np.clip(np.ceil(np.abs(p1 * m) / _MOVE), 1, 32).astype(np.int64)
    dt = n / q
    x = x.copy()
    P = P.copy()
    mz_out = mz.copy()
    for it in range(int(q.max())):
        sel = np.nonzero(q > it)[0]
        if it > 0:
            m_s, mz_s, v_s = loc(x[sel])
        else:
            m_s, mz_s, v_s = m[sel], mz[sel], v[sel]
        t = dt[sel]
        p1, p2 = _phi12(mz_s, t)
        x[sel] = np.clip(x[sel] + p1 * m_s, loc.lo, loc.hi)
        P[sel] = np.exp(np.minimum(2.0 * mz_s * t, 700.0)) * P[sel] + p2 * v_s * vscale
        mz_out[sel] = mz_s
    return x, P, mz_out


@dataclass(frozen=True, eq=False)
class EffectiveDynamics:
    """The predicted law of ``ρ_k`` at the recorded steps.

    steps : (n_rec,) recorded step indices (as :func:`simulate` records them)
    ode_time : (n_rec,) ``t_k = Σ_{j<k} η_j``
    mean_abs, mean : (n_rec,) predicted ``E|ρ_k|`` and ``E ρ_k``
    z_grid, rho_grid : (G,) the grid (``rho_grid = tanh z_grid``)
    law : (n_rec, G) probability of each grid node (rows sum to 1; node masses of a
        piecewise-linear density in ``z``)
    moments : the :class:`MomentTable` (drift and diffusion of ``z`` used)
    timings : seconds for the moments and for the evolution
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

    def quantile(self, p: Any) -> np.ndarray:
        """Predicted ``p``-quantile(s) of ``|ρ_k|`` at each record: shape ``(n_rec,)`` for a
        scalar ``p``, ``(len(p), n_rec)`` for an array. ``p`` in [0, 1]."""
        pa = np.asarray(p, dtype=np.float64)
        if not np.all(np.isfinite(pa)) or np.any((pa < 0) | (pa > 1)):
            raise ConfigError("p", "must be numbers in [0, 1]", p)
        G = self.z_grid.size
        c = G // 2  # the grid is symmetric with z = 0 at the centre
        folded = self.law[:, c:].copy()
        folded[:, 1:] += self.law[:, :c][:, ::-1]
        absz = self.z_grid[c:]
        h = absz[1] - absz[0]
        # piecewise-linear density: the CDF at the cell midpoints is the cumulative node mass
        cdf = np.cumsum(folded, axis=1)
        cdf /= cdf[:, -1:]
        mids = absz + 0.5 * h
        out = np.empty(pa.shape + (self.steps.size,))
        for i in range(self.steps.size):
            zq = np.interp(pa, np.concatenate([[0.0], cdf[i]]),
                           np.concatenate([[0.0], mids]))
            out[..., i] = np.tanh(np.minimum(zq, absz[-1]))
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
        import pandas as pd
        q = self.quantile([0.1, 0.5, 0.9])
        return pd.DataFrame({"step": self.steps, "ode_time": self.ode_time,
                             "mean_abs": self.mean_abs, "mean": self.mean,
                             "q10_abs": q[0], "median_abs": q[1], "q90_abs": q[2]})


def _z_max(model: ModelConfig, eta_min_std: float, batch: int, z_start: float | None,
           seed: int) -> float:
    """Upper end of the grid: 2 above the plateau ``1 − |ρ| ≈ η V_B(1)/(4|Φ'(±1)|)`` of the
    smallest step (docs/theory.md#the-second-order-term), in [3, 9]."""
    std = model.standardized()
    dphi = _dphi_std(model)
    pool = _gradient_pool(std, np.array([1.0 - 1e-9, -1.0 + 1e-9]), 400, stream(seed, "plateau"))
    zs = []
    for i, end in enumerate((1.0, -1.0)):
        fp = float(dphi(np.array(end))) * end
        if fp <= 0:
            continue
        V = float(np.mean(pool[i, :, 1] ** 2 + pool[i, :, 2])) / batch
        gap = max(eta_min_std * V / (4.0 * fp), 1e-16)
        zs.append(0.5 * math.log(2.0 / gap))
    z = max(zs) + 2.0 if zs else 3.0
    if z_start is not None:
        z = max(z, abs(z_start) + 0.5)
    return float(min(max(z, 3.0), _Z_CAP))


@validated(model=MODEL, step=STEP, steps=Integer(ge=1, le=_MAX_STEPS),
           initial_alignment=Optional(RHO0), batch=BATCH, update=UPDATE, seed=SEED,
           n_samples=Integer(ge=100), grid_step=Optional(Real(gt=0.0, le=0.5)),
           diffusion_scale=Real(ge=0.0), max_blocks=Optional(Integer(ge=1)))
def effective_dynamics(model: ModelConfig, step: Any, *, steps: int,
                       initial_alignment: float | None = None, batch: int = 1,
                       update: str = "projected", record_every: int | None = None,
                       record: Any = None, seed: int = 0, n_samples: int = 4000,
                       grid_step: float | None = None,
                       diffusion_scale: float = 1.0,
                       moments: MomentTable | None = None,
                       max_blocks: int | None = None) -> EffectiveDynamics:
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
    n_samples : reduced draws per moment node (int >= 100)
    grid_step : spacing ``h`` of the ``z`` grid (default ``min(0.01, 0.1/√d)``, at most
        20 001 nodes)
    diffusion_scale : multiplies the diffusion ``v`` (1: the chain's; 0: the mean-field flow
        of the initial law — a deliberately wrong law that the band tests must reject)
    moments : a :class:`MomentTable` to reuse (built by :func:`moment_table` for this
        ``model``, ``batch`` and ``update`` over a step range that covers the schedule's);
        the grid then spans the table's ``z`` range
    max_blocks : at most this many evolution blocks (None: no limit beyond ``steps``); the
        cost is ~1 ms per block and grid thousand nodes, and a block spans many steps at the
        sizes users run (E1: 175 blocks for 10⁶ steps) but ~1 step when one step moves ``z``
        by ~0.05 or more (small ``L``, large ``η``). Exceeding it raises
        :class:`BlockBudgetExceeded` (a ``ConfigError``) before the next block

    Returns
    -------
    EffectiveDynamics. Raises ``ConfigError`` for bad input (one line naming the field).
    """
    t0 = time.perf_counter()
    if n_samples < batch:
        raise ConfigError("n_samples", f"must be >= batch = {batch}", n_samples)
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
        z_max = _z_max(model, float(eta_std.min()), batch, z_start, seed)
    else:
        z_max = float(moments.z_nodes[-1])
    h = grid_spacing(d) if grid_step is None else float(grid_step)
    half = int(math.ceil(z_max / h))
    if 2 * half + 1 > _MAX_GRID:
        half = (_MAX_GRID - 1) // 2
        h = z_max / half
    G = 2 * half + 1
    z = np.linspace(-half * h, half * h, G)
    z0 = float(z[0])
    if ks_rec.size * G > _MAX_LAW:
        raise ConfigError("record", f"records × grid ({ks_rec.size} × {G}) must be <= "
                          f"{_MAX_LAW} doubles; record fewer steps", ks_rec.size)

    # ---- moments
    if moments is None:
        table = _moment_table(model, z_max, _eta_nodes(float(eta_std.min()),
                                                       float(eta_std.max())),
                              batch, update, n_samples, seed)
    else:
        table = moments
    t1 = time.perf_counter()

    # ---- initial law
    if initial_alignment is None:
        logp = (d - 1) * -np.log(np.cosh(z))
        p = np.exp(logp - logp.max())
    else:
        p = np.zeros(G)
        x = (min(max(z_start, z0), -z0) - z0) / h
        i = min(int(math.floor(x)), G - 2)
        f = x - i
        p[i] += 1.0 - f
        p[i + 1] += f
    p /= p.sum()

    # ---- evolve
    logeta = np.log(eta_std)
    var_cum = np.concatenate([[0.0], np.cumsum(np.abs(np.diff(logeta)))])
    law = np.empty((ks_rec.size, G))
    rec_i = 0
    if ks_rec[0] == 0:
        law[0] = p
        rec_i = 1
    k = 0
    n_blocks = 0
    n_sub = 0
    while rec_i < ks_rec.size:
        if max_blocks is not None and n_blocks >= max_blocks:
            raise BlockBudgetExceeded(
                "max_blocks", f"must cover the blocks this law needs (more than {max_blocks} "
                f"by step {k} of {steps}: per-step jumps are large against the law's width)",
                max_blocks)
        k_rec = int(ks_rec[rec_i])
        live = np.nonzero(p > 1e-14 * p.max())[0]
        x = z[live].copy()
        P = np.zeros(live.size)
        # the nodes that hold 99 % of the mass set the block length (the far tails, where one
        # step may throw a node back to the plateau, would force one-step blocks)
        order = np.argsort(p[live])[::-1]
        n_core = int(np.searchsorted(np.cumsum(p[live][order]), 0.99)) + 1
        heavy = np.zeros(live.size, dtype=bool)
        heavy[order[:n_core]] = True
        while k < k_rec:
            # sub-block: η changes by at most 1 %
            k_end = int(np.searchsorted(var_cum, var_cum[k] + _ETA_CHANGE, side="right")) - 1
            k_end = min(max(k_end, k + 1), k_rec)
            loc = table.at(float(np.mean(eta_std[k:k_end])))
            # ... and the spread added from a node that carries mass stays below the limit
            v_heavy = float(np.max(loc(x[heavy])[2], initial=0.0)) * diffusion_scale
            if v_heavy > 0:
                k_end = min(k_end, k + max(1, int(_BLOCK_SD ** 2 / v_heavy)))
            n = k_end - k
            x, P, mz = _advance_nodes(x, P, float(n), loc, diffusion_scale)
            x = np.clip(x, z0, -z0)
            k = k_end
            n_sub += 1
            # block end: the spread grown from a node that carries mass reaches the limit
            if P[heavy].max() > _BLOCK_SD ** 2:
                break
        if not (np.all(np.isfinite(x)) and np.all(np.isfinite(P))):
            raise FloatingPointError(f"effective_dynamics: non-finite block moments at step {k}")
        p = _deposit(p[live], x, P, z0, h, G)
        p /= p.sum()
        n_blocks += 1
        if k == k_rec:
            law[rec_i] = p
            rec_i += 1
    t2 = time.perf_counter()
    rho_grid = np.tanh(z)
    mean = law @ rho_grid
    mean_abs = law @ np.abs(rho_grid)
    ode_t = np.concatenate([[0.0], np.cumsum(etas)])[ks_rec]
    return EffectiveDynamics(
        model=model, step=step, batch=batch, update=update,
        initial_alignment=initial_alignment, seed=seed, steps=ks_rec, ode_time=ode_t,
        mean_abs=mean_abs, mean=mean, z_grid=z, rho_grid=rho_grid, law=law, moments=table,
        timings={"moments_s": t1 - t0, "evolve_s": t2 - t1, "total_s": t2 - t0,
                 "blocks": float(n_blocks), "sub_blocks": float(n_sub)},
    )
