"""Where constant-step runs settle: the grid chain of :mod:`attnsignal.theory.settled` against
closed forms and a literal stationary computation, and the critical ``c`` from the exact
one-step moments against the expansion's where the step is small (``docs/scaling.md``;
``tests/theory/test_scaling.py``). The chain-engine comparison at large steps is
``benchmarks/scaling_law.py --critical``."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import brentq
from scipy.stats import norm

from attnsignal.theory.escape import stationary_shift
from attnsignal.theory.settled import stationary_mean_abs


def test_stationary_mean_of_a_linear_chain_is_the_ar1_law():
    """m = −γ(ρ − p), v = σ²: the stationary law is N(p, σ²/(1 − (1 − γ)²)) (an AR(1) chain),
    whose mean |ρ| is s√(2/π) e^{−p²/2s²} + p(1 − 2Φ(−p/s)). The grid (cells of a third of the
    step's spread) reproduces it to 1e-3 relative."""
    p, gam, sig = 0.3, 0.3, 0.05
    s = sig / np.sqrt(1.0 - (1.0 - gam) ** 2)
    exact = s * np.sqrt(2 / np.pi) * np.exp(-p * p / (2 * s * s)) + p * (1 - 2 * norm.cdf(-p / s))
    got = stationary_mean_abs(lambda r: -gam * (r - p), lambda r: np.full(np.shape(r), sig ** 2))
    assert got == pytest.approx(exact, rel=1e-3)


def _cubic(sig2: float):
    def m(r):
        return 0.05 * r * (1.0 - (r / 0.5) ** 2) - 0.01 * r ** 2

    def v(r):
        return np.full(np.shape(r), sig2) * (1.0 - np.asarray(r) ** 2)

    return m, v


def test_stationary_mean_matches_the_noise_shift_at_small_noise():
    """A saddle at 0 and stable roots near ±0.5: on the branch to +ξ the grid chain's mean at
    small noise is the root moved by the second-order shift g''v/(4γ²) — with the stationary
    variance of a discrete-time chain, v/(2γ − γ²) for v/(2γ) (here γ ≈ 0.1: 5 %) — up to
    O(v²); to 1 %."""
    m, v = _cubic(1e-6)
    r = brentq(lambda x: m(np.array([x]))[0], 0.3, 0.7)
    h = 1e-5
    gam = -(m(np.array([r + h]))[0] - m(np.array([r - h]))[0]) / (2 * h)
    shift = stationary_shift(m, v, r) * 2 * gam / (2 * gam - gam * gam)
    got = stationary_mean_abs(m, v, side=1)
    assert got - r == pytest.approx(shift, rel=0.01)


def test_stationary_mean_matches_a_literal_eigenvector():
    """Large noise (the step's spread a fifth of the plateau's distance to the saddle): the
    grid chain against a literal computation — a dense transition matrix of normal densities
    at the nodes of a uniform grid of the branch (0, 1), its stationary law π = πP solved
    densely — to 2e-3 (the two discretise the kernel differently)."""
    m, v = _cubic(4e-3)
    x = np.linspace(0.0, 1.0, 601)[1:-1]
    P = norm.pdf(x[None, :], loc=(x + m(x))[:, None], scale=np.sqrt(v(x))[:, None])
    P /= P.sum(axis=1, keepdims=True)
    A = P.T - np.eye(x.size)
    A[-1] = 1.0
    rhs = np.zeros(x.size)
    rhs[-1] = 1.0
    pi = np.linalg.solve(A, rhs)
    assert stationary_mean_abs(m, v, side=1) == pytest.approx(float(pi @ x), abs=2e-3)
