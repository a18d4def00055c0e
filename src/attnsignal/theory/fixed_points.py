"""Fixed points of ``dρ/dt = F(ρ) = (1 − ρ²) Φ'(ρ)`` on ``[−1, 1]``, their stability, the basins
of attraction and a plain-language verdict.

* ``±1`` are always stationary. ``F'(1) = −2Φ'(1)`` and ``F'(−1) = 2Φ'(−1)``: ``+1`` attracts iff
  ``Φ'(1) > 0``, ``−1`` iff ``Φ'(−1) < 0`` — an endpoint attracts iff it is a local maximum of ``Φ``
  on ``[−1, 1]``.
* Interior fixed points are the zeros of ``Φ'``; ``F'(ρ*) = (1 − ρ*²) Φ''(ρ*)``, so a zero where
  ``Φ'`` changes sign from ``+`` to ``−`` (a local maximum of ``Φ``) attracts and one from ``−`` to
  ``+`` (a local minimum) repels.

Root finding: ``Φ'`` (from the Chebyshev interpolant of :func:`.field.dphi_interpolant`) on a
grid of ``2000`` points that excludes ``0`` (so the zero at ``0`` of the even random-sign
landscape is bracketed, not hit), then ``brentq`` on the directly evaluated ``Φ'`` inside each
sign change. Zeros where ``Φ'`` touches zero without changing sign (non-hyperbolic, not
generic) are not reported. If ``max |Φ'| <= 1e-12 max |Φ|`` (e.g. ``θ = 0``) the landscape is
flat: every point is stationary and both endpoints are reported as ``"endpoint-degenerate"``.

Basins: in one dimension the basin of an attractor is the open interval between the repelling
fixed points (or ends) on either side of it, plus the attractor itself. For a start drawn
uniformly on the sphere, ``ρ0² ~ Beta(1/2, (d − 1)/2)`` with a fair sign, which gives the
probability of each basin.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import brentq
from scipy.stats import beta as beta_dist

from ..config import ModelConfig
from ._checks import MODEL, OPTIONAL_METHOD, validated
from .field import dphi_interpolant
from .landscape import default_method, landscape

__all__ = ["FixedPoint", "Basin", "LandscapeVerdict", "Basins", "fixed_points",
           "landscape_verdict", "resolve_method", "is_flat"]

_GRID = 2000
#: the landscape is flat when max |Φ'| <= this times max |Φ(±1)| (round-off level)
FLAT_RTOL = 1e-12


@validated(model=MODEL, method=OPTIONAL_METHOD)
def resolve_method(model: ModelConfig, method: str | None) -> str:
    """``method``, or when None the default for ``model``: ``"exact"`` if ``βσ <= 12``, else
    ``"mc"``. Raises ``ConfigError`` for a bad model or method."""
    return default_method(model) if method is None else method


def phi_scale(model: ModelConfig, method: str) -> float:
    """``max |Φ(±1)|``: the scale against which ``Φ'`` is judged zero."""
    ends = landscape(model, np.array([-1.0, 1.0]), method, n_samples=4000)
    return max(float(np.max(np.abs(ends.phi))), 1e-300)


def is_flat(dphi_values: np.ndarray, scale: float) -> bool:
    """``Φ'`` is zero up to round-off: ``max |Φ'| <= 1e-12 · scale`` (e.g. ``θ = 0``, or a
    random-sign model whose every token is informative and ``d`` is small)."""
    return bool(np.max(np.abs(dphi_values)) <= FLAT_RTOL * scale)


@dataclass(frozen=True)
class FixedPoint:
    """A stationary point ``rho`` of the ODE; ``stable`` iff it attracts.

    kind : "endpoint-max" | "endpoint-min" | "endpoint-degenerate" | "interior-max" |
    "interior-min" — whether ``Φ`` has a local maximum or minimum there (on ``[−1, 1]``).
    ``slope`` is ``F'(ρ)`` for ``F = (1 − ρ²)Φ'`` (negative: attracting).
    """

    rho: float
    stable: bool
    kind: str
    slope: float = float("nan")


@dataclass(frozen=True)
class Basin:
    """Basin of attraction of ``attractor``: the interval ``(lo, hi)``, closed at an end that is
    the attractor itself; ``probability_uniform_start`` is the chance that a uniform ``q0`` on
    ``S^{d−1}`` starts in it."""

    attractor: float
    lo: float
    hi: float
    probability_uniform_start: float

    def contains(self, rho: float) -> bool:
        return (self.lo < rho < self.hi) or rho == self.attractor


@dataclass(frozen=True)
class LandscapeVerdict:
    """What :func:`landscape_verdict` returns: all fixed points, the basins of the attractors
    and a one-line verdict."""

    model: ModelConfig
    fixed_points: list[FixedPoint]
    basins: list[Basin]
    verdict: str
    monotone: bool = field(default=False)

    def attractor_of(self, rho0: float) -> float | None:
        """The attractor reached from ``rho0`` (None when ``rho0`` is a repelling point)."""
        for b in self.basins:
            if b.contains(rho0):
                return b.attractor
        return None


#: Old name of :class:`LandscapeVerdict`.
Basins = LandscapeVerdict


def _classify_end(rho: float, dphi: float, tol: float) -> FixedPoint:
    slope = -2.0 * rho * dphi  # F'(±1) = ∓2Φ'(±1) = −2ρΦ'(ρ)
    if abs(dphi) <= tol:
        return FixedPoint(rho, False, "endpoint-degenerate", slope)
    is_max = dphi * rho > 0
    return FixedPoint(rho, bool(is_max), "endpoint-max" if is_max else "endpoint-min", slope)


@validated(model=MODEL, method=OPTIONAL_METHOD)
def fixed_points(model: ModelConfig, method: str | None = None) -> list[FixedPoint]:
    """Stationary points of ``dρ/dt = (1 − ρ²) Φ'(ρ)`` on ``[−1, 1]``, sorted by ``rho``,
    always including ``±1`` (see the module docstring for the method and classification).

    method : "exact" | "asymptotic" | "mc" (common random numbers, 20 000 draws; the only
    method for ``βσ > 12``, with the noise of its ``Φ'`` in the interior roots); None (the
    default) means "exact" where it applies (``βσ <= 12``), else "mc".
    The basins of attraction (intervals), the probability that a uniform start lands in each
    and the plain-language verdict are :func:`landscape_verdict` (built on this list).
    Raises ``ConfigError`` for a bad ``model`` or ``method``.
    """
    method = resolve_method(model, method)
    dphi_i = dphi_interpolant(model, method)

    def dphi(r: float) -> float:
        if method == "exact" or method == "asymptotic":
            return float(landscape(model, r, method).dphi)
        return float(dphi_i(np.array(r)))

    grid = np.linspace(-1.0, 1.0, _GRID)  # even count: 0 is not a node
    vals = dphi_i(grid)
    scale = phi_scale(model, method)
    if is_flat(vals, scale):
        return [FixedPoint(-1.0, False, "endpoint-degenerate", 0.0),
                FixedPoint(1.0, False, "endpoint-degenerate", 0.0)]
    tol = FLAT_RTOL * scale
    d_lo, d_hi = dphi(-1.0), dphi(1.0)
    pts = [_classify_end(-1.0, d_lo, tol)]
    sg = np.sign(vals)
    for i in np.nonzero(sg[:-1] * sg[1:] < 0)[0]:
        a, b = grid[i], grid[i + 1]
        fa, fb = dphi(a), dphi(b)
        if fa * fb > 0:  # interpolant and direct evaluation disagree on the bracket: widen
            a, b = grid[max(i - 1, 0)], grid[min(i + 2, _GRID - 1)]
            fa, fb = dphi(a), dphi(b)
            if fa * fb > 0:
                continue
        root = brentq(dphi, a, b, xtol=1e-14, rtol=4 * np.finfo(float).eps)
        if model.signal_sign == "random" and abs(root) < 1e-10:
            root = 0.0  # exact by symmetry: Φ' is odd
        is_max = fa > 0  # + → −: local maximum of Φ
        h = 1e-6
        slope = (1 - root ** 2) * (dphi(min(root + h, 1.0)) - dphi(max(root - h, -1.0))) / (2 * h)
        pts.append(FixedPoint(float(root), bool(is_max), "interior-max" if is_max else "interior-min",
                              float(slope)))
    pts.append(_classify_end(1.0, d_hi, tol))
    return pts


def _uniform_prob(d: int, lo: float, hi: float) -> float:
    """P(lo < ρ0 < hi) for ``ρ0`` the alignment of a uniform point on ``S^{d−1}``."""
    dist = beta_dist(0.5, (d - 1) / 2.0)

    def cdf(x: float) -> float:  # P(ρ0 <= x), via the survival function for accuracy
        x = min(max(x, -1.0), 1.0)
        tail = 0.5 * dist.sf(x * x)  # P(ρ0 < −|x|) = P(ρ0 > |x|)
        return tail if x < 0 else 1.0 - tail

    if hi <= 0.0:
        return float(cdf(hi) - cdf(lo))
    if lo >= 0.0:  # P(lo < ρ0 < hi) = P(−hi < ρ0 < −lo)
        return float(cdf(-lo) - cdf(-hi))
    return float(cdf(hi) - cdf(lo))


@validated(model=MODEL, method=OPTIONAL_METHOD)
def landscape_verdict(model: ModelConfig, method: str | None = None) -> LandscapeVerdict:
    """Basins of attraction and a plain-language verdict (``method`` as in
    :func:`fixed_points`), e.g.

    * ``"Φ strictly increasing on [−1, 1]: every start but ρ = −1 goes to +ξ"``;
    * ``"interior minimum at ρ* = 0.0123: both ±ξ attract (ρ0 > ρ* → +ξ, ρ0 < ρ* → −ξ)"``.
    """
    pts = fixed_points(model, method)
    bad = [p for p in pts if not (np.isfinite(p.rho) and np.isfinite(p.slope))]
    if bad:  # landscape() refuses non-finite values, so this is a bug guard, never silent
        raise ValueError(f"fixed points: non-finite rho or slope {bad[0]} for {model}; "
                         "the verdict would be built on it")
    if all(p.kind == "endpoint-degenerate" for p in pts) and len(pts) == 2:
        return LandscapeVerdict(model, pts, [], "Φ is constant: every ρ is stationary (no signal to find)")
    stable = [p for p in pts if p.stable]
    unstable = [p.rho for p in pts if not p.stable]
    basins = []
    for p in stable:
        lo = max([u for u in unstable if u < p.rho], default=-1.0)
        hi = min([u for u in unstable if u > p.rho], default=1.0)
        basins.append(Basin(p.rho, lo, hi, _uniform_prob(model.d, lo, hi)))
    interior = [p for p in pts if abs(p.rho) < 1.0]
    monotone = not interior
    if monotone and len(stable) == 1 and stable[0].rho == 1.0:
        verdict = "Φ strictly increasing on [−1, 1]: every start but ρ = −1 goes to +ξ"
    elif monotone and len(stable) == 1 and stable[0].rho == -1.0:
        verdict = "Φ strictly decreasing on [−1, 1]: every start but ρ = +1 goes to −ξ"
    elif (len(interior) == 1 and interior[0].kind == "interior-min"
          and {p.rho for p in stable} == {-1.0, 1.0}):
        r = interior[0].rho
        b_minus = next(b for b in basins if b.attractor == -1.0)
        verdict = (f"interior minimum at ρ* = {r:.4g}: both ±ξ attract (ρ0 > ρ* → +ξ, "
                   f"ρ0 < ρ* → −ξ; a uniform start on S^{model.d - 1} goes to −ξ with "
                   f"probability {b_minus.probability_uniform_start:.3g})")
    else:
        parts = [f"{p.kind} at ρ = {p.rho:.4g} ({'attracting' if p.stable else 'repelling'})"
                 for p in pts]
        verdict = "fixed points: " + "; ".join(parts)
    return LandscapeVerdict(model, pts, basins, verdict, monotone)
