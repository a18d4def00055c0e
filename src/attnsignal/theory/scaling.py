"""Sample-complexity laws: how many samples SGA needs at dimension ``d`` (``docs/scaling.md``).

Two paths through the problem sizes, both from a reference model ``(d₀, R₀, N₀, θ, β)``:

``"fixed_L"``       ``R, N`` fixed and ``d`` free;
``"proportional"``  ``R = R₀ d/d₀``, ``N = N₀ d/d₀`` (rounded; ``L ∝ d``).

Step and time scales. With ``L = R + N``, the step is ``η = c · s(d, L)`` and the time is
``t = k/τ(d, L)`` with

    s(d, L) = (L/(L + d))²,    τ(d, L) = (L + d)/L,

so that ``dρ/dt = c f_d(ρ) − c² k_d(ρ)`` with ``f_d = F L/(L + d)`` and ``k_d = κ (L/(L + d))³``
(``F = (1 − ρ²)Φ'`` the drift, ``κ`` the ``O(η²)`` coefficient of the one-step mean). Both have
finite limits along both paths: at fixed ``L``, ``F`` is affine in ``d`` (``Φ_d = Φ_A + (d − 1)Ψ``
exactly, ``Ψ = E||α||²``) and ``κ`` a cubic in ``D = d − 2`` (:mod:`.dimension_moments`); on the
proportional path both are ``O(1)``. The per-step noise is ``O(1/d)`` of the drift's scale on
the fixed-``L`` path, so the chain in time ``t`` follows the deterministic ODE with its
finite-step term; what stays random is the start — ``ρ0 ~ N(0, 1/d)`` — amplified at the saddle
``ρ = 0`` (``Ψ'(0) = 0`` by exchangeability: both signs have it at fixed ``L``).

The law at a dimension (:meth:`ScalingLaw.law`) is exact in ``d`` up to Monte-Carlo error and the
``O(η³)`` remainder: the drift from the quadrature of :mod:`.exact`, ``κ`` and the alignment noise
``(1 − ρ²) Var g_e`` from the polynomial moments, combined by :func:`.escape.hitting_law` (the
law of the chain with that mean step and variance from the uniform start's law, evolved on a
grid, :mod:`.chain_grid`; where the grid does not resolve the runs' spread, the flow of the
modified drift with the noise as an equivalent perturbation of the start). At fixed ``L`` one
set of moments serves every ``d``; on the proportional path each ``d`` has its own ``L`` and its
own moments. Where that mean step
``ηF − η²κ`` is off the exact one-step mean by more than 1 % of the step (at ``L = 5000``,
``β = 1`` it is off by 3–8 % at ``η ≈ 10⁻⁴``: heavy-tailed gradients), the law takes the exact
one-step mean and variance at the law's step instead (``method="auto"``,
:meth:`ScalingLaw.law_method`).

On the proportional path ``s`` and ``τ`` are constants: the step does not shrink and the
samples tend to a constant as ``d`` grows. The fixed sign's runs become deterministic there (the
noise is ``O(1/d)``); the random sign's keep an ``O(c)`` kick per step from the sample's sign,
which drives their escape from ``ρ ≈ 0`` and which the law treats as Gaussian noise (exact as
``c → 0``; at steps whose escape lasts tens of steps its error is a few per cent).

``samples(d)``: the first step at which the predicted mean ``|ρ|`` reaches ``target``
(``batch = 1``: steps are samples). ``c_critical``: the largest ``c`` whose long-run mean
``|ρ|`` reaches the target; ``c_optimal``: the constant ``c`` with the fewest samples.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field, replace
from typing import Any, Callable

import numpy as np
from numpy.polynomial import Chebyshev
from scipy.optimize import minimize_scalar

from ..config import ConfigError, ConstantStep, ModelConfig, PiecewiseStep, Schedule
from ..validation import Integer, OneOf, Optional, Real, validated
from ._checks import MODEL, SEED, TARGET, UPDATE
from .dimension_moments import DimensionMoments, dimension_moments
from .escape import NOISES, HittingLaw, hitting_law, settled_mean
from .field import dphi_interpolant
from .moments import one_step_moments
from .settled import StepMoments, stationary_mean_abs, step_moments

__all__ = ["PATHS", "SCHEDULES", "ScalingLaw", "ScalingLimit", "scaling_law", "step_scale",
           "time_scale"]

PATHS = ("fixed_L", "proportional")
SCHEDULES = ("constant", "optimal")

#: Chebyshev–Lobatto nodes in ``φ = arcsin ρ`` at which the moments are drawn (the moments are
#: analytic in ``φ``; in ``ρ`` they carry ``√(1 − ρ²)`` and converge slowly at ``±1``).
_NODES = 33
_C_MAX = 1e12
#: the expansion's critical c is kept where its mean step at the plateau is within this
#: fraction of the finite-step term of the exact one (``c_critical_at(method="auto")``)
_EXPANSION_RTOL = 0.01
#: the exact critical c's draws, in multiples of the law's (``c_critical_at``)
_EXACT_DRAWS = 4
#: the methods of ``c_critical_at`` and of the law of a run (``scaling_law(method=...)``)
_METHOD = OneOf("auto", "expansion", "exact")
#: the law of a run keeps the expansion's mean step ``ηF − η²κ`` where it is within this
#: fraction of the exact one-step mean at the probes ±X/4, ±X/2, ±X (``law_method``): the
#: samples are ``∫ dρ/g``, so a relative error ε of the step is about ε in the samples, and
#: 1 % is a fifth of the 5 % the law is verified to
_STEP_RTOL = 0.01
#: probes of the mean step's check, in units of the target
_PROBES = (0.25, 0.5, 1.0)


def _bisect_log(ok: Callable[[float], bool], lo: float, hi: float, rtol: float) -> float:
    """The bracket's lower end after bisecting on ``log c`` until ``hi/lo <= 1 + rtol``
    (``ok(lo)`` holds and ``ok(hi)`` does not): the largest ``c`` found with ``ok(c)``."""
    while hi / lo > 1.0 + rtol:
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if ok(mid) else (lo, mid)
    return lo


def step_scale(d: int, L: int) -> float:
    """``s(d, L) = (L/(L + d))²``: the step is ``η = c s(d, L)``."""
    return (L / (L + d)) ** 2


def time_scale(d: int, L: int) -> float:
    """``τ(d, L) = (L + d)/L``: steps per unit of the scaled time ``t``."""
    return (L + d) / L


def _nodes(random: bool) -> np.ndarray:
    phi = 0.5 * np.pi * np.cos(np.pi * np.arange(_NODES) / (_NODES - 1))[::-1]
    rho = np.sin(phi)
    rho[np.abs(rho) < 1e-15] = 0.0
    return rho[rho >= 0.0] if random else rho


#: parity of each statistic of :data:`.dimension_moments.STATISTICS` under ``ρ → −ρ`` for the
#: random sign: g_e odd, g_q even, g_e² even, g_q g_e odd, g_q² even, ||u||² even
_PARITY = np.array([-1.0, 1.0, 1.0, -1.0, 1.0, 1.0])


@dataclass(frozen=True, eq=False)
class _Moments:
    """Chebyshev interpolants (in ``φ = arcsin ρ``) of the ``D``-polynomial coefficients of
    ``κ`` (projected and riemannian) and of ``E g_e²``, with their standard errors, for one
    ``L`` (standardised model)."""

    model: ModelConfig
    raw: DimensionMoments
    kappa: dict
    kappa_se: dict
    ge2: Chebyshev
    ge2_coef: tuple
    ge2_se: tuple

    @staticmethod
    def build(model: ModelConfig, n_samples: int, seed: int) -> "_Moments":
        random = model.signal_sign == "random"
        r = _nodes(random)
        dm = dimension_moments(model, r, n_samples=n_samples, seed=seed)
        coef, cov = dm.coef, dm.cov
        if random:  # reflect the half grid with the statistics' parities
            neg = r > 0
            r = np.concatenate([-r[neg][::-1], r])
            pc = np.concatenate([(_PARITY[None, :, None] * coef[neg])[::-1], coef])
            sgn = np.repeat(_PARITY, 4)
            pcov = np.concatenate([(sgn[None, :, None] * cov[neg] * sgn[None, None, :])[::-1],
                                   cov])
            dm = DimensionMoments(rho=r, coef=pc, cov=pcov, n_samples=dm.n_samples, model=model)
        phi = np.arcsin(np.clip(r, -1.0, 1.0))
        deg = r.size - 1

        def fit(y: np.ndarray) -> Chebyshev:
            return Chebyshev.fit(phi, y, deg, domain=[-0.5 * np.pi, 0.5 * np.pi])

        kap, kse = {}, {}
        for upd in ("projected", "riemannian"):
            val, se = dm.kappa_coefficients(upd)
            kap[upd] = tuple(fit(val[:, j]) for j in range(4))
            kse[upd] = tuple(fit(se[:, j]) for j in range(4))
        i = 2  # g_e²
        ge2 = tuple(fit(dm.coef[:, i, j]) for j in range(4))
        se = np.sqrt(np.maximum(np.diagonal(dm.cov, axis1=1, axis2=2), 0.0) / dm.n_samples)
        ge2_se = tuple(fit(se[:, 4 * i + j]) for j in range(4))
        return _Moments(model, dm, kap, kse, ge2[0], ge2, ge2_se)

    def kappa_at(self, d: int, update: str, shift: float = 0.0) -> Callable:
        """``ρ ↦ κ(ρ)`` at dimension ``d``: one Chebyshev series in ``φ``, the coefficients'
        series summed with the weights ``D^j``; ``shift`` standard errors added away from zero
        (``sign ρ``, smoothed over ``|ρ| ≲ 0.01``)."""
        D = float(d - 2)
        cs, ses = self.kappa[update], self.kappa_se[update]
        zero = Chebyshev([0.0], domain=cs[0].domain)
        series = sum((cs[j] * D ** j for j in range(4)), zero)
        err = sum((ses[j] * D ** j for j in range(4)), zero)

        def k(rho: np.ndarray) -> np.ndarray:
            phi = np.arcsin(np.clip(rho, -1.0, 1.0))
            if not shift:
                return series(phi)
            # the error moves κ away from zero on both sides (κ ≈ ρ × a positive moment)
            return series(phi) + shift * err(phi) * rho / np.sqrt(rho * rho + 1e-4)

        return k

    def ge2_at(self, d: int, shift: float = 0.0) -> Callable:
        """``ρ ↦ E g_e²`` at dimension ``d``."""
        D = float(d - 2)
        series = sum(((self.ge2_coef[j] + shift * self.ge2_se[j]) * D ** j for j in range(3)),
                     Chebyshev([0.0], domain=self.ge2_coef[0].domain))

        def m(rho: np.ndarray) -> np.ndarray:
            return series(np.arcsin(np.clip(rho, -1.0, 1.0)))

        return m


@dataclass(frozen=True)
class ScalingLimit:
    """The fixed-``L`` limit ``d → ∞`` in the scaled time ``t = k/τ`` (``docs/scaling.md``).

    ``dρ/dt = c f(ρ) − c² k(ρ)`` with ``f = L(1 − ρ²)Ψ'`` and ``k = L³ κ₃`` (``κ₃`` the
    ``D³`` coefficient of ``κ``, ``2β²ρ E Σα_i²(α_i − n²)²`` for both update rules); both
    vanish at ``ρ = 0``. ``f1 = f'(0)``, ``k1 = k'(0)``: the escape rate is ``λ(c) = c f1 − c² k1``;
    ``noise`` the limit of ``d ×`` the alignment noise per unit ``t`` divided by ``c²``, so that
    the effective start has variance ``(1 + c² noise/(2λ))/d``. ``c_critical``: the largest
    ``c`` with the long-run mean ``|ρ|`` at the target; ``c_escape = f1/(2 k1)`` maximises
    ``λ``; ``c_optimal`` is ``min(c_escape, c_critical)``, the ``d → ∞`` optimum (the
    ``ln d`` escape dominates the samples).
    """

    f1: float
    k1: float
    noise: float
    c_critical: float
    c_escape: float
    c_optimal: float

    def rate(self, c: float) -> float:
        """``λ(c) = c f1 − c² k1`` (per unit ``t``)."""
        return c * self.f1 - c * c * self.k1

    def escape_time(self, c: float, d: float, target: float, const: float = 0.0) -> float:
        """The mean escape time in ``t``: ``(1/λ)[ln(X √d/σ̃) + (γ_E + ln 2)/2] + C`` with
        ``σ̃² = 1 + c² noise/(2λ)`` and ``C = const`` (the nonlinear part)."""
        lam = self.rate(c)
        sig = math.sqrt(1.0 + c * c * self.noise / (2.0 * lam))
        return ((math.log(target * math.sqrt(d) / sig) + 0.5 * (0.5772156649015329 + math.log(2)))
                / lam + const)


@dataclass(frozen=True, eq=False)
class ScalingLaw:
    """A sample-complexity law along a path (module docstring). Build with :func:`scaling_law`.

    model : the reference model (its ``d``, ``R``, ``N`` fix the path)
    target : the mean ``|ρ|`` to reach;  c : the step constant (``η = c s(d, L)``)
    schedule : "constant" | "optimal";  path : "fixed_L" | "proportional";  update
    method : the law's mean step and noise: "auto" | "expansion" | "exact" (:meth:`law_method`)
    noise : the law of a run's treatment of the noise: "auto" | "grid" | "linear"
        (:func:`.escape.hitting_law`)
    """

    model: ModelConfig
    target: float
    c: float
    schedule: str
    path: str
    update: str
    n_samples: int
    seed: Any
    method: str = "auto"
    noise: str = "auto"
    _moments: dict = field(default_factory=dict, repr=False)
    _exact: dict = field(default_factory=dict, repr=False)
    _laws: dict = field(default_factory=dict, repr=False)
    _critical: dict = field(default_factory=dict, repr=False)

    def with_c(self, c: float) -> "ScalingLaw":
        """The same law with the step constant ``c`` (the moments are shared)."""
        Real(gt=0.0).check("c", c)
        return replace(self, c=float(c), _laws={})

    # ---------------------------------------------------------------- sizes along the path
    def model_at(self, d: int) -> ModelConfig:
        """The model at dimension ``d`` on this path."""
        d = int(d)
        if self.path == "fixed_L":
            return replace(self.model, d=d)
        f = d / self.model.d
        return replace(self.model, d=d, n_informative=max(1, round(self.model.n_informative * f)),
                       n_nuisance=round(self.model.n_nuisance * f))

    def step_size(self, d: int, c: float | None = None) -> float:
        """``η = c s(d, L)/σ²`` at ``d`` (original units)."""
        m = self.model_at(d)
        cc = self.c if c is None else c
        return cc * step_scale(m.d, m.n_tokens) / self.model.noise_std ** 2

    def step(self, d: int) -> Schedule:
        """The step-size schedule at ``d``: a constant step ``c s(d, L)``; for
        ``schedule="optimal"`` the feedback ``η*(ρ)`` read along the path of the run with the
        median hitting time, as a piecewise-constant schedule (the other runs get that run's
        steps, so a simulation of it can only be slower than the feedback law's
        :meth:`samples`)."""
        if self.schedule != "optimal":
            return ConstantStep(eta0=self.step_size(d))
        law = self.law(d)
        _, _, eta_of = self._step_drift(d, self.c)
        path_k, path_rho = law.median_path()
        etas = eta_of(path_rho) / self.model.noise_std ** 2
        bounds = tuple(int(k) for k in path_k[1:])
        return PiecewiseStep(boundaries=bounds, etas=tuple(float(e) for e in etas))

    def tau(self, d: int) -> float:
        """``τ(d, L)``: steps per unit of scaled time at ``d``."""
        m = self.model_at(d)
        return time_scale(m.d, m.n_tokens)

    # ---------------------------------------------------------------- the law at one d
    def draws_at(self, m: ModelConfig) -> int:
        """Draws of the moments for the model ``m`` of the path: ``n_samples`` at the reference
        ``L₀`` and below it, ``n_samples L₀/L`` (at least 200) above it — per-draw statistics
        concentrate like ``1/L``, so the error stays about the same at a constant cost
        (``samples_error`` reports it)."""
        L0, L = self.model.n_tokens, m.n_tokens
        return self.n_samples if L <= L0 else max(200, round(self.n_samples * L0 / L))

    def _moments_for(self, m: ModelConfig) -> _Moments:
        key = (m.n_informative, m.n_nuisance)
        if key not in self._moments:
            self._moments[key] = _Moments.build(m.standardized(), self.draws_at(m), self.seed)
        return self._moments[key]

    def _drift(self, d: int) -> tuple[Callable, Callable, Callable]:
        """``F``, ``κ``, ``V = (1 − ρ²) Var g_e`` at ``d`` (standardised)."""
        m = self.model_at(d)
        mom = self._moments_for(m)
        key = ("dphi", m.n_informative, m.n_nuisance)
        if key not in self._moments:  # Φ'_3 and Φ'_1003: Φ'_d at every d of this L
            self._moments[key] = _dphi_ends(m.standardized())
        a, b = self._moments[key]
        dphi = a + (b - a) * ((d - 3) / 1000.0)

        def F(rho: np.ndarray) -> np.ndarray:
            rho = np.asarray(rho, dtype=np.float64)
            return (1.0 - rho * rho) * dphi(rho)

        kap = mom.kappa_at(d, self.update)
        ge2 = mom.ge2_at(d)

        def V(rho: np.ndarray) -> np.ndarray:
            rho = np.asarray(rho, dtype=np.float64)
            s2 = 1.0 - rho * rho
            return s2 * np.maximum(ge2(rho) - s2 * dphi(rho) ** 2, 0.0)

        return F, kap, V

    def _step_drift(self, d: int, c: float, shift: float = 0.0
                    ) -> tuple[Callable, Callable, Callable]:
        """Per-step mean ``g``, variance ``v`` and the step ``η(ρ)`` at ``d``: the constant
        ``η = c s(d, L)``, or (``schedule="optimal"``) the feedback ``η*(ρ)``."""
        F, kap, V = self._drift(d)
        m = self.model_at(d)
        if shift:
            kap = self._moments_for(m).kappa_at(d, self.update, shift)
        if self.schedule == "optimal":
            eta_of = _feedback_step(F, kap, self.target)
        else:
            eta0 = c * step_scale(m.d, m.n_tokens)

            def eta_of(rho: np.ndarray) -> np.ndarray:
                return np.full(np.shape(rho), eta0)

        def g(rho: np.ndarray) -> np.ndarray:
            e = eta_of(rho)
            return e * F(rho) - e * e * kap(rho)

        def v(rho: np.ndarray) -> np.ndarray:
            e = eta_of(rho)
            return e * e * V(rho)

        return g, v, eta_of

    def law_method(self, d: int, c: float | None = None) -> str:
        """Which mean step and noise the law of a run uses at ``d`` (and ``c``, default this
        law's): ``"expansion"`` — ``ηF − η²κ`` and ``η²(1 − ρ²) Var g_e``, one set of moments
        for every ``d`` and ``c``; ``"exact"`` — the exact one-step mean and variance at the
        step ``c s(d, L)`` (:func:`.settled.step_moments` at that one step: every order of ``η``
        in the first two moments). ``method="auto"`` takes the exact ones where the expansion's
        mean step differs from the exact one-step mean by more than 1 % of the step and two
        Monte-Carlo standard errors at any of the probes ``±X/4, ±X/2, ±X`` (``X`` the target;
        :meth:`step_error`). The feedback schedule uses the expansion (its ``η*(ρ)`` is the
        expansion's)."""
        cc = self.c if c is None else float(c)
        if self.schedule != "constant" or self.method == "expansion":
            return "expansion"
        if self.method == "exact":
            return "exact"
        err, se = self.step_error(int(d), cc)
        return "exact" if err > max(_STEP_RTOL, 2.0 * se) else "expansion"

    def step_error(self, d: int, c: float | None = None) -> tuple[float, float]:
        """How far the expansion's mean step ``g = ηF − η²κ`` is from the exact one-step mean
        ``m`` at the step ``c s(d, L)``: ``|m − g|/|g|`` at the probe ``±X/4, ±X/2, ±X`` where
        it exceeds twice its Monte-Carlo standard error by the most (the random sign: ``ρ > 0``,
        its moments are odd), and that standard error — the exact drift's: whether the exact
        step is resolved away from the expansion's (``κ``'s own error is the law's, which
        :meth:`samples_error` reports; its bound, the coefficients' errors summed over the
        powers of ``D``, is several times the exact drift's at ``L = 5000``). ``m`` is read from
        the table the exact law uses (:meth:`_exact_moments`, interpolated between its nodes):
        its draws are the check's cost, and a switch to the exact law costs no more draws."""
        d, cc = int(d), self.c if c is None else float(c)
        key = ("error", d, cc)
        if key not in self._exact:
            X = self.target
            rho = np.array([f * X for f in _PROBES if f * X < 1.0])
            if self.model.signal_sign != "random":
                rho = np.concatenate([-rho[::-1], rho])
            m, _ = self._exact_moments(d, cc)
            se = self._exact_table(d, cc).drift_se_at(self.step_size(d, cc))(rho)
            gr = self._step_drift(d, cc)[0](rho)
            scale = np.where(np.abs(gr) > 0, np.abs(gr), np.inf)
            err, se = np.abs(m(rho) - gr) / scale, se / scale
            j = int(np.argmax(err - 2.0 * se))
            self._exact[key] = (float(err[j]), float(se[j]))
        return self._exact[key]

    def _exact_gap(self, d: int, c: float, rho: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """At ``rho`` and the step ``c s(d, L)``: the exact one-step mean minus the expansion's
        mean step, the difference's Monte-Carlo standard error and the expansion's finite-step
        term ``η²κ`` (per step of ``ρ``)."""
        m = self.model_at(d)
        eta = self.step_size(d, c)
        om = one_step_moments(m, rho, eta, n_samples=self.draws_at(m), seed=self.seed,
                              update=self.update)
        F, kap, _ = self._drift(d)
        es = eta * m.noise_std ** 2  # the standardised step of F and κ
        fin = es * es * kap(rho)
        kse = np.abs(self._moments_for(m).kappa_at(d, self.update, 1.0)(rho) - kap(rho))
        se = np.hypot(om.stderr_drift_rho[:, 0], es * es * kse)
        return om.drift_rho[:, 0] - (es * F(rho) - fin), se, fin

    def _exact_table(self, d: int, c: float) -> StepMoments:
        """The exact one-step moments at the step ``c s(d, L)`` (:func:`.settled.step_moments`
        at that one step, 41 nodes in ``arcsin ρ``, the law's draws)."""
        key = ("table", int(d), float(c))
        if key not in self._exact:
            m = self.model_at(d)
            eta = self.step_size(d, c)
            self._exact[key] = step_moments(m, eta, eta, n_eta=1, n_samples=self.draws_at(m),
                                            seed=self.seed, update=self.update)
        return self._exact[key]

    def _exact_moments(self, d: int, c: float, shift: float = 0.0) -> tuple[Callable, Callable]:
        """The exact one-step mean and variance at the step ``c s(d, L)`` as functions of ``ρ``
        (:meth:`_exact_table`; ``shift`` standard errors of the mean taken off ``|m|``)."""
        return self._exact_table(d, c).at(self.step_size(d, c), shift)

    def _law(self, d: int, c: float, shift: float = 0.0, method: str | None = None,
             noise: str | None = None) -> HittingLaw:
        """The law of a run at ``d`` and ``c`` with the mean step and noise of ``method``
        (default: :meth:`law_method`'s choice), the noise treated as ``noise`` (default: this
        law's)."""
        how = method or self.law_method(d, c)
        noise = noise or self.noise
        key = (int(d), float(c), float(shift), how, noise)
        if key not in self._laws:
            if how == "exact":
                g, v = self._exact_moments(d, c, shift)
            else:
                g, v, _ = self._step_drift(d, c, shift)
            self._laws[key] = hitting_law(g, v, self.model_at(d).d, self.target, noise=noise)
        return self._laws[key]

    def law(self, d: int) -> HittingLaw:
        """The law of the runs at ``d`` with this law's ``c`` (:class:`.escape.HittingLaw`:
        ``samples``, ``mean_abs(k)``, hitting-time law, ``escape``)."""
        return self._law(d, self.c)

    def samples(self, d: Any) -> Any:
        """Predicted samples for the mean ``|ρ|`` to reach ``target`` at ``d`` (scalar or
        array; ``inf`` where it is never reached)."""
        ds = np.atleast_1d(np.asarray(d))
        out = np.array([self._law(int(x), self.c).samples for x in ds])
        return float(out[0]) if np.ndim(d) == 0 else out

    def samples_error(self, d: int) -> float:
        """Monte-Carlo error of :meth:`samples` at ``d``: half the change when ``κ`` (with the
        exact one-step moments, :meth:`law_method`: the mean step) moves by ``±1`` standard
        error at every alignment (fully correlated: an upper estimate) — in the linear-noise
        law (``noise="linear"``), whose samples respond to the mean step as the grid's do (both
        have the same flow) at a tenth of the cost."""
        lo = self._law(int(d), self.c, -1.0, noise="linear").samples
        hi = self._law(int(d), self.c, 1.0, noise="linear").samples
        return 0.5 * abs(hi - lo)

    # ---------------------------------------------------------------- c critical / optimal
    def settled_mean(self, d: int, c: float, side: int = 0) -> float:
        """The long-run mean ``|ρ|`` at ``d`` with the constant ``c``: where the flows from the
        initial law settle, moved by the noise's stationary shift
        (:func:`.escape.settled_mean`); ``side = ±1`` for the branch that goes to ``±ξ``."""
        g, v, _ = self._step_drift(d, c)
        return settled_mean(g, v, self.model_at(d).d, side)

    def c_critical_at(self, d: int, side: int = 0, method: str = "auto",
                      n_samples: int | None = None) -> float:
        """The largest constant ``c`` at ``d`` whose long-run mean ``|ρ|`` reaches the target —
        over all runs, or (``side = ±1``) on the branch to ``±ξ`` (for either schedule: the
        constant step's).

        method : "expansion" — the mean step to ``O(η²)`` and the noise's second-order shift
            (:meth:`settled_mean`), bisection on ``log c`` (relative tolerance 1e-4);
            "exact" — the exact one-step mean and variance at each candidate step
            (:func:`.settled.step_moments`) and the stationary law of the chain they define
            (:func:`.settled.stationary_mean_abs`), bisection to a relative 1e-3;
            "auto" — the expansion's value where the exact one-step drift at its critical
            step and plateau agrees with the expansion's within 1 % of the finite-step term
            ``η²κ`` or within two Monte-Carlo standard errors (:meth:`expansion_error`), the
            exact value otherwise (``docs/scaling.md``).
        n_samples : draws of the exact one-step moments (default: four times the law's,
            ``4 draws_at``). Near the critical ``c`` the plateau is flat in ``c`` (on the
            scaling page's B it moves from 0.502 to 0.493 over ±6 % of ``c``), so the drift's
            Monte-Carlo error moves the critical ``c`` far more than it moves the samples: at
            4 000 draws three seeds give 0.6746, 0.6635, 0.6731 there (L = 5000, β = 1), at
            16 000 draws 0.6812, 0.6722, 0.6773, at a few seconds' cost.

        Returns ``nan`` with a ``RuntimeWarning`` where the exact bisection cannot bracket the
        crossing (four step tables from ``c₀/432`` to ``648 c₀``)."""
        _METHOD.check("method", method)
        if n_samples is not None:
            Integer(ge=100).check("n_samples", n_samples)
        key = (int(d), int(side), method, n_samples)
        if key not in self._critical:  # the critical c depends on neither c nor the schedule
            const = self if self.schedule == "constant" else replace(self, schedule="constant",
                                                                      _laws={})
            self._critical[key] = const._c_critical(int(d), int(side), method, n_samples)
        return self._critical[key]

    def _c_critical(self, d: int, side: int, method: str, n_samples: int | None) -> float:
        if method != "expansion":
            c0 = self.c_critical_at(d, side, method="expansion")
        else:
            c0 = self._c_critical_expansion(d, side)
        if method == "expansion" or not 0.0 < c0 < math.inf:
            return c0
        if method == "auto":
            err, se = self.expansion_error(d, c0, side)
            if err <= max(_EXPANSION_RTOL, 2.0 * se):
                return c0
        return self._c_critical_exact(d, side, c0, n_samples)

    def _c_critical_expansion(self, d: int, side: int) -> float:
        def ok(c: float) -> bool:
            return self.settled_mean(d, c, side) >= self.target

        if not ok(1e-12):
            return 0.0
        lo, hi = 1e-12, 1.0
        while ok(hi):
            lo, hi = hi, hi * 4.0
            if hi > _C_MAX:
                return math.inf
        return _bisect_log(ok, lo, hi, 1e-4)

    def _plateaus(self, d: int, c: float, side: int) -> list[float]:
        """The expansion's settled alignments (signed) on the branches ``side`` stands for."""
        sides = (side,) if side else ((1,) if self.model.signal_sign == "random" else (1, -1))
        return [s * self.settled_mean(d, c, s) for s in sides]

    def expansion_error(self, d: int, c: float, side: int = 0) -> tuple[float, float]:
        """How far the expansion's mean step is from the exact one at the step ``c s(d, L)``:
        ``max |m − (ηF − η²κ)| / (η²|κ|)`` over the expansion's plateaus (``m`` the exact
        one-step mean, :func:`.moments.one_step_moments`), and its Monte-Carlo standard error
        in the same units (the exact drift's and ``κ``'s, combined). Both relative to the
        finite-step term, which sets where the runs settle near the critical ``c``; at the
        plateau where the difference exceeds twice its error by the most."""
        rho = np.array([p for p in self._plateaus(d, c, side) if abs(p) < 1.0])
        if rho.size == 0:
            return 0.0, 0.0
        gap, se, fin = self._exact_gap(d, c, rho)
        fin = np.where(fin != 0, np.abs(fin), np.inf)
        err, se = np.abs(gap) / fin, se / fin
        j = int(np.argmax(err - 2.0 * se))
        return float(err[j]), float(se[j])

    def _c_critical_exact(self, d: int, side: int, c0: float, n_samples: int | None = None
                          ) -> float:
        """Bisection on ``c`` with :func:`.settled.stationary_mean_abs` of the exact one-step
        moments, tabulated over steps from ``c0/2`` to ``3 c0`` (moved by the same factors
        while the crossing lies outside; at most four tables)."""
        m = self.model_at(d)
        if m.signal_sign == "random":
            side = 1  # the random sign's chain is symmetric: |ρ| has the branch's law
        lo_f, hi_f = 0.5, 3.0
        for _ in range(4):
            clo, chi = lo_f * c0, hi_f * c0
            tab = step_moments(m, self.step_size(d, clo), self.step_size(d, chi),
                               n_samples=n_samples or _EXACT_DRAWS * self.draws_at(m),
                               seed=self.seed,
                               update=self.update)

            def ok(c: float) -> bool:
                mf, vf = tab.at(self.step_size(d, c))
                return stationary_mean_abs(mf, vf, m.d, side) >= self.target

            if not ok(clo):
                lo_f, hi_f = lo_f / 6.0, lo_f
                continue
            if ok(chi):
                lo_f, hi_f = hi_f, hi_f * 6.0
                continue
            return _bisect_log(ok, clo, chi, 1e-3)
        warnings.warn(f"c_critical_at(d={d}, method='exact'): the exact critical c was not "
                      f"bracketed within [{lo_f * c0:.3g}, {hi_f * c0:.3g}] after four step "
                      f"tables; returning nan", RuntimeWarning, stacklevel=3)
        return math.nan

    def c_optimal_at(self, d: int) -> float:
        """The constant ``c`` with the fewest predicted samples at ``d`` (bounded Brent search
        on ``log c`` below ``c_critical_at(d)``, relative tolerance about 1e-3) — the samples of
        the expansion's law (one set of moments serves every candidate ``c``)."""
        cc = self.c_critical_at(d, method="expansion")  # the bound of the law's own samples
        if not (0 < cc < math.inf):
            return float("nan")

        def f(x: float) -> float:
            n = self._law(d, math.exp(x), method="expansion").samples
            return n if np.isfinite(n) else 1e300

        res = minimize_scalar(f, bounds=(math.log(cc) - 6.0, math.log(cc * (1 - 1e-3))),
                              method="bounded", options={"xatol": 1e-3})
        return float(math.exp(res.x))

    @property
    def c_critical(self) -> float:
        """``c_critical_at`` the reference dimension ``model.d``."""
        return self.c_critical_at(self.model.d)

    @property
    def c_optimal(self) -> float:
        """``c_optimal_at`` the reference dimension ``model.d``."""
        return self.c_optimal_at(self.model.d)

    # ---------------------------------------------------------------- the d → ∞ limit
    def limit(self) -> ScalingLimit | None:
        """The fixed-``L`` limit (:class:`ScalingLimit`); None on the proportional path."""
        if self.path != "fixed_L":
            return None
        m = self.model
        std = m.standardized()
        L = m.n_tokens
        mom = self._moments_for(m)
        dp3 = dphi_interpolant(replace(std, d=3))
        dp4 = dphi_interpolant(replace(std, d=1003))
        h = 1e-4
        r = np.array([-h, h])
        psi1 = (dp4(r) - dp3(r)) / 1000.0  # Ψ'
        f1 = L * float(psi1[1] - psi1[0]) / (2 * h)
        k3 = mom.kappa[self.update][3]
        phi = np.arcsin(r)
        k1 = L ** 3 * float(k3(phi[1]) - k3(phi[0])) / (2 * h)
        # noise: d × (per unit t) / c² → L³ [ge2₂ − (ge₁)²] at ρ = 0, ge₁ = ∂_D E g_e = Ψ' = 0
        noise = L ** 3 * float(mom.ge2_coef[2](0.0))
        X = self.target

        def f(rho: np.ndarray) -> np.ndarray:
            a, b = dp3(rho), dp4(rho)
            return L * (1.0 - rho * rho) * (b - a) / 1000.0

        def k(rho: np.ndarray) -> np.ndarray:
            return L ** 3 * k3(np.arcsin(np.clip(rho, -1, 1)))

        def zero(x: np.ndarray) -> np.ndarray:  # no noise in the limit (it is O(1/d))
            return np.zeros(np.shape(x))

        def ok(c: float) -> bool:
            return settled_mean(lambda x: c * f(x) - c * c * k(x), zero, None) >= X

        lo, hi = 1e-12, 1.0
        while ok(hi) and hi < _C_MAX:
            lo, hi = hi, 4.0 * hi
        lo = _bisect_log(ok, lo, hi, 1e-4)
        c_esc = f1 / (2.0 * k1) if k1 > 0 else math.inf
        return ScalingLimit(f1=f1, k1=k1, noise=noise, c_critical=lo, c_escape=c_esc,
                            c_optimal=min(c_esc, lo))


def _feedback_step(F: Callable, kap: Callable, target: float) -> Callable:
    """``ρ ↦ η*(ρ)``: the step that moves the mean of one step fastest towards the side of
    ``F``'s sign, ``argmax_η |ηF − η²κ|`` = ``F/(2κ)`` where ``Fκ > 0``, capped at ``η_cap``
    (4 × the median of ``F/(2κ)`` over ``|ρ| <= target``), and ``η_cap`` where ``Fκ <= 0`` (the
    second-order term then helps: the cap keeps the expansion's ``η`` range)."""
    grid = np.linspace(-target, target, 801)
    f, k = F(grid), kap(grid)
    ok = f * k > 0
    cap = 4.0 * float(np.median(f[ok] / (2.0 * k[ok]))) if ok.any() else 1.0

    def eta(rho: np.ndarray) -> np.ndarray:
        rho = np.asarray(rho, dtype=np.float64)
        fr, kr = F(rho), kap(rho)
        with np.errstate(divide="ignore", invalid="ignore"):
            e = np.where(fr * kr > 0, fr / (2.0 * kr), cap)
        return np.clip(e, 0.0, cap)

    return eta


def _dphi_ends(std: ModelConfig) -> tuple[Chebyshev, Chebyshev]:
    """``Φ'_3`` and ``Φ'_1003`` of the standardised model as Chebyshev series: ``Φ'_d = Φ'_3 +
    (d − 3) Ψ'`` exactly in ``d`` (``Φ_d = Φ_A + (d − 1) Ψ``), ``Ψ' = (Φ'_1003 − Φ'_3)/1000``."""
    from .field import _chebyshev
    from .landscape import default_method

    method = default_method(std)
    a, _ = _chebyshev(replace(std, d=3), method, 20_000, 0)
    b, _ = _chebyshev(replace(std, d=1003), method, 20_000, 0)
    return a, b


_PATH = OneOf(*PATHS)
_SCHEDULE = OneOf(*SCHEDULES)


@validated(model=MODEL, target=TARGET, c=Optional(Real(gt=0.0)), schedule=_SCHEDULE,
           path=_PATH, update=UPDATE, n_samples=Integer(ge=100), seed=SEED, method=_METHOD,
           noise=OneOf(*NOISES))
def scaling_law(model: ModelConfig, *, target: float, c: float | None = None,
                schedule: str = "constant", path: str = "fixed_L", update: str = "projected",
                n_samples: int = 4000, seed: int = 0, method: str = "auto",
                noise: str = "auto") -> ScalingLaw:
    """The sample-complexity law of ``model``'s path (module docstring; ``docs/scaling.md``).

    Parameters
    ----------
    model : the reference model (``d >= 4``); the path keeps its ``R, N`` ("fixed_L") or its
        ratios ``R/d, N/d`` ("proportional")
    target : the mean ``|ρ|`` to reach, in (0, 1)
    c : the step constant, ``η = c (L/(L + d))²/σ²`` (default: ``c_optimal`` at ``model.d``)
    schedule : "constant" (the step ``c s(d, L)``) or "optimal"
    path : "fixed_L" | "proportional"
    update : "projected" | "riemannian" (the finite-step term differs)
    n_samples, seed : draws of the moments (per ``L``)
    method : the mean step and noise of the law of a run — "auto" (the expansion's where it
        is within 1 % of the exact one-step mean, :meth:`ScalingLaw.law_method`), "expansion"
        or "exact" (the latter for the constant schedule only)
    noise : the law of a run's noise — "auto" (the chain's law evolved on a grid where the grid
        resolves the runs' spread, else the linear-noise law), "grid" or "linear"
        (:func:`.escape.hitting_law`)

    Raises
    ------
    ConfigError for bad input, ``d < 4``, ``method="exact"`` with the feedback schedule, or a
    target that no constant step reaches.
    """
    if method == "exact" and schedule != "constant":
        raise ConfigError("method", "must be 'auto' or 'expansion' with schedule='optimal' (the "
                          "feedback step is the expansion's)", method)
    if model.d < 4:
        raise ConfigError("model.d", "must be >= 4 for a scaling law (the moments use χ²_{d−3})",
                          model.d)
    law = ScalingLaw(model, float(target), 1.0, "constant", path, update, int(n_samples), seed,
                     method, noise)
    if c is None:
        copt = law.c_optimal_at(model.d)
        if not np.isfinite(copt):
            raise ConfigError("target", "must be reachable with a constant step at the reference "
                              f"dimension d = {model.d} (no c reaches it)", target)
        c = copt
    return replace(law, c=float(c), schedule=schedule, _laws={})
