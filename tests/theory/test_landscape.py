"""Φ(ρ) and Φ'(ρ): exact quadrature vs brute-force quadrature, Monte Carlo, the literal model and
the asymptotic closed form."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.polynomial.hermite_e import hermegauss

from attnsignal.config import ConfigError, ModelConfig
from attnsignal.model import latent_direction, objective_mc
from attnsignal.theory import landscape
from attnsignal.theory.exact import _Class, phi_exact


def _tensor_gauss_hermite(R: int, N: int, d: int, theta: float, beta: float, rho: float,
                          n: int) -> float:
    """Φ(ρ) = E_a[A² + θ²(1−ρ²)m² + (d−1)n²] by an n^L tensor Gauss–Hermite rule."""
    x, w = hermegauss(n)
    w = w / np.sqrt(2 * np.pi)
    L = R + N
    s = np.stack(np.meshgrid(*([x] * L), indexing="ij"), -1).copy()
    W = np.ones(s.shape[:-1])
    for g in np.meshgrid(*([w] * L), indexing="ij"):
        W = W * g
    s[..., :R] += theta * rho
    z = beta * s
    z -= z.max(-1, keepdims=True)
    a = np.exp(z)
    a /= a.sum(-1, keepdims=True)
    A = (a * s).sum(-1)
    m = a[..., :R].sum(-1)
    n2 = (a * a).sum(-1)
    return float((W * (A ** 2 + theta ** 2 * (1 - rho ** 2) * m ** 2 + (d - 1) * n2)).sum())


def test_single_token_closed_form():
    # L = 1: α = 1, so Φ = E[s²] + θ²(1 − ρ²) + d − 1 = θ² + d for every ρ, and Φ' = 0.
    phi, dphi = phi_exact(1, 0, 7, 0.8, 1.3, np.array([-1.0, -0.3, 0.5, 1.0]))
    np.testing.assert_allclose(phi, 0.8 ** 2 + 7, rtol=1e-13)
    np.testing.assert_allclose(dphi, 0.0, atol=1e-13)


@pytest.mark.parametrize("R,N,d,theta,beta,rho,n", [
    (1, 1, 5, 0.7, 1.0, 0.4, 150),
    (2, 1, 5, 0.7, 1.5, -0.3, 90),
    (1, 2, 9, 1.2, 0.6, 0.8, 90),
    (2, 0, 3, 0.5, 2.0, 0.2, 150),
])
def test_exact_matches_tensor_quadrature(R, N, d, theta, beta, rho, n):
    # all three pair classes (I–I, N–N, I–N) of the factorised formula are exercised
    exact = float(phi_exact(R, N, d, theta, beta, np.array([rho]))[0][0])
    ref = _tensor_gauss_hermite(R, N, d, theta, beta, rho, n)
    assert exact == pytest.approx(ref, rel=1e-12)


def test_inner_quadrature_reproduces_gaussian_moments():
    # at t = 0 the tilted ratios are plain moments of s ~ N(μ, 1):
    # E e^{βs} = e^{βμ+β²/2}, E s e^{βs} = (μ+β) e^{βμ+β²/2}, E e^{2βs} = e^{2βμ+2β²},
    # E s² e^{2βs} = ((μ+2β)² + 1) e^{2βμ+2β²}
    for mu, beta in [(0.0, 1.0), (0.4, 2.5), (-1.0, 0.3), (2.0, 6.0)]:
        c = _Class(np.array([0.0]), mu, beta, True)
        e1 = np.exp(beta * mu + beta ** 2 / 2)
        e2 = np.exp(2 * beta * mu + 2 * beta ** 2)
        assert c.r_w[0] == pytest.approx(e1, rel=1e-13)
        assert c.r_ws[0] == pytest.approx((mu + beta) * e1, rel=1e-13)
        assert c.r_w2[0] == pytest.approx(e2, rel=1e-13)
        assert c.r_w2s2[0] == pytest.approx(((mu + 2 * beta) ** 2 + 1) * e2, rel=1e-13)
        # ∂_μ E[g] = E[(s − μ) g]: d/dμ E e^{βs} = β E e^{βs}
        assert c.d_w[0] == pytest.approx(beta * e1, rel=1e-12)
        assert c.lam[0] == pytest.approx(0.0, abs=1e-15)


def test_asymptotic_is_the_law_of_large_numbers_limit():
    # Φ∞ built from the quadrature moments (ratios of class sums) equals the closed form
    R, N, d, theta, beta = 50, 400, 30, 0.6, 1.4
    rho = np.array([-0.8, 0.1, 0.7])
    ci = [_Class(np.array([0.0]), theta * r, beta, False) for r in rho]
    cn = _Class(np.array([0.0]), 0.0, beta, False)
    S = np.array([R * c.r_w[0] + N * cn.r_w[0] for c in ci])
    A = np.array([R * c.r_ws[0] + N * cn.r_ws[0] for c in ci]) / S
    m = np.array([R * c.r_w[0] for c in ci]) / S
    n2 = np.array([R * c.r_w2[0] + N * cn.r_w2[0] for c in ci]) / S ** 2
    lln = A ** 2 + theta ** 2 * (1 - rho ** 2) * m ** 2 + (d - 1) * n2
    ls = landscape(ModelConfig(d, R, N, theta, beta), rho, "asymptotic")
    np.testing.assert_allclose(ls.phi, lln, rtol=1e-12)


@pytest.mark.parametrize("model", [
    ModelConfig(50, 5, 20, 0.8, 1.5),
    ModelConfig(30, 3, 10, 1.0, 0.7, noise_std=1.3),
    ModelConfig(20, 4, 8, 1.2, 2.0, signal_sign="random"),
])
def test_exact_matches_monte_carlo_within_3_se(model):
    rho = np.array([-0.7, 0.15, 0.4, 0.9])
    ex = landscape(model, rho, "exact")
    mc = landscape(model, rho, "mc", n_samples=1_000_000, seed=11)
    assert np.all(np.abs(mc.phi - ex.phi) <= 3 * mc.phi_stderr)
    assert np.all(np.abs(mc.dphi - ex.dphi) <= 3 * mc.dphi_stderr)


def test_monte_carlo_handles_a_million_tokens():
    # L = 1.1e6: chunked (a few draws at a time), still agrees with the quadrature
    model = ModelConfig(100, 100_000, 1_000_000, 0.25)
    rho = np.array([0.0, 0.9])
    mc = landscape(model, rho, "mc", n_samples=16, seed=3)
    ex = landscape(model, rho, "exact")
    assert np.all(np.abs(mc.phi - ex.phi) <= 4 * mc.phi_stderr)
    assert np.all(np.abs(mc.dphi - ex.dphi) <= 4 * mc.dphi_stderr)


@pytest.mark.parametrize("model,rho", [
    (ModelConfig(6, 3, 4, 0.9, noise_std=1.3), 0.35),
    (ModelConfig(6, 3, 4, 0.9, 1.2, signal_sign="random"), 0.6),
])
def test_landscape_matches_the_literal_objective(model, rho):
    # independent of every reduction: J(q) by sampling X and pooling (attnsignal.model)
    xi = latent_direction(model.d)
    q = np.zeros(model.d)
    q[0], q[1] = rho, np.sqrt(1 - rho ** 2)
    est, se = objective_mc(model, q, 100_000, np.random.default_rng(5), xi)
    assert abs(est - float(landscape(model, rho).phi)) <= 3 * se


def test_random_sign_is_the_even_part():
    fixed = ModelConfig(30, 4, 30, 0.9, 1.3)
    rand = fixed.replace(signal_sign="random")
    rho = np.linspace(-1, 1, 9)
    f, r = landscape(fixed, rho), landscape(rand, rho)
    np.testing.assert_allclose(r.phi, 0.5 * (f.phi + f.phi[::-1]), rtol=1e-14)
    np.testing.assert_allclose(r.dphi, 0.5 * (f.dphi - f.dphi[::-1]), rtol=1e-12, atol=1e-15)
    assert r.dphi[4] == 0.0  # odd: exactly zero at ρ = 0


def test_asymptotic_error_is_order_one_over_L():
    # R : N = 1 : 20 and d/L fixed (d = 2R), L grows by 10 each time: L × (Φ∞ − Φ) settles
    # to a constant (≈ 150 here), i.e. the error is O(1/L)
    rho = np.array([-0.5, 0.3, 0.95])
    scaled = []
    for R in (1000, 10_000, 100_000, 1_000_000):
        m = ModelConfig(2 * R, R, 20 * R, 0.25, beta=1.5)
        err = landscape(m, rho, "asymptotic").phi - landscape(m, rho, "exact").phi
        scaled.append(m.n_tokens * err)
    scaled = np.array(scaled)
    ratios = scaled[1:] / scaled[:-1]
    assert np.all(np.abs(ratios - 1) < 0.05), ratios
    assert np.all(np.abs(ratios[-1] - 1) < 0.002), ratios


def test_asymptotic_error_at_fixed_d():
    # fixed d = 100: the d/L-sized term first dominates (its error is O(d/L²)), then the
    # O(1/L) remainder takes over and L × error settles
    rho = np.array([-0.5, 0.3, 0.95])
    scaled = []
    for R in (10_000, 100_000, 1_000_000):
        m = ModelConfig(100, R, 20 * R, 0.25)
        err = landscape(m, rho, "asymptotic").phi - landscape(m, rho, "exact").phi
        scaled.append(m.n_tokens * err)
    ratios = scaled[-1] / scaled[-2]
    assert np.all(np.abs(ratios - 1) < 0.1), ratios
    assert np.all(np.abs(scaled[-1]) < 0.1)


@pytest.mark.parametrize("model", [
    ModelConfig(100, 500, 10_000, 0.25),
    ModelConfig(20, 3, 5, 2.0, 2.5),
    ModelConfig(1000, 10, 200, 0.25, noise_std=0.7),
])
@pytest.mark.parametrize("method", ["asymptotic", "exact"])
def test_analytic_derivative_matches_finite_differences(model, method):
    rho = np.array([-0.8, -0.1, 0.45, 0.97])
    h = 1e-5
    ls = landscape(model, rho, method)
    fd = (landscape(model, rho + h, method).phi - landscape(model, rho - h, method).phi) / (2 * h)
    scale = np.max(np.abs(ls.dphi))
    np.testing.assert_allclose(ls.dphi, fd, atol=1e-7 * scale + 1e-10 * np.max(ls.phi))


def test_exact_is_stable_for_huge_token_counts():
    # R, N up to 1e6: quadrature refined (half the outer step, finer inner grid) agrees to 1e-12
    import attnsignal.theory.exact as ex
    cfgs = [(10**6, 10**6, 100, 0.25, 1.0), (10**6, 3, 1000, 1.5, 2.0), (3, 10**6, 10, 0.25, 3.0)]
    rho = np.array([-0.9, 0.35, 1.0])
    base = [phi_exact(*c, rho) for c in cfgs]
    old = ex._H_U
    try:
        ex._H_U = old / 2
        for c, b in zip(cfgs, base):
            f = phi_exact(*c, rho)
            np.testing.assert_allclose(f[0], b[0], rtol=1e-12)
            np.testing.assert_allclose(f[1], b[1], rtol=1e-9, atol=1e-13 * np.max(b[0]))
    finally:
        ex._H_U = old


def _adaptive_reference(R: int, N: int, d: int, theta: float, beta: float, rho: float) -> float:
    """Φ(ρ) through 1/S² = ∫ t e^{−tS} dt with every integral done by ``scipy.integrate.quad``
    (adaptive, nested) — an implementation independent of :mod:`attnsignal.theory.exact`.

    With ``φ_c(t) = E e^{−t w}`` per token class ``c`` and ``⟨g⟩_c = E[g e^{−t w}]/φ_c``
    (``w = e^{βs}``, ``s ~ N(μ_c, 1)``), ``E[F(a)/S²] = ∫ t φ_I^R φ_N^N K(t) dt`` where ``K``
    collects the token moments of ``A² S²``, ``m² S²`` and ``Σ w²``.
    """
    import math
    import warnings

    from scipy.integrate import IntegrationWarning, quad

    def gauss(fun, mu):
        f = lambda y: fun(mu + y) * math.exp(-0.5 * y * y) / math.sqrt(2 * math.pi)  # noqa: E731
        return sum(quad(f, a, b, epsabs=0, epsrel=2e-14, limit=400)[0]
                   for a, b in [(-40, -5), (-5, 0), (0, 5), (5, 12), (12, 40)])

    def token_class(t, mu):
        om = gauss(lambda s: -math.expm1(-t * math.exp(beta * s)), mu)  # 1 − φ, accurately
        if om < 0.5:
            logphi, phi = math.log1p(-om), 1 - om
        else:
            phi = gauss(lambda s: math.exp(-t * math.exp(beta * s)), mu)
            if phi <= 0:
                return -math.inf, 0.0, 0.0, 0.0, 0.0
            logphi = math.log(phi)
        E = lambda g: gauss(lambda s: g(s) * math.exp(-t * math.exp(beta * s)), mu) / phi  # noqa: E731
        return (logphi, E(lambda s: math.exp(beta * s)), E(lambda s: math.exp(2 * beta * s)),
                E(lambda s: s * math.exp(beta * s)), E(lambda s: s * s * math.exp(2 * beta * s)))

    mu = theta * rho
    scale = R * math.exp(beta * mu + beta * beta / 2) + N * math.exp(beta * beta / 2)  # E S
    c = theta * theta * (1 - rho * rho)

    def integrand(u):
        t = math.exp(u) / scale
        lI, wI, w2I, wsI, w2s2I = token_class(t, mu)
        lN, wN, w2N, wsN, w2s2N = token_class(t, 0.0)
        ell = R * lI + N * lN
        if ell < -740:
            return 0.0
        tot = R * wsI + N * wsN
        K = (R * w2s2I + N * w2s2N + tot ** 2 - R * wsI ** 2 - N * wsN ** 2
             + c * (R * w2I + R * (R - 1) * wI ** 2) + (d - 1) * (R * w2I + N * w2N))
        return t * t * math.exp(ell) * K  # dt = t du

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IntegrationWarning)
        return sum(quad(integrand, a, b, epsabs=0, epsrel=1e-12, limit=200)[0]
                   for a, b in [(-30, -5), (-5, 0), (0, 2), (2, 5), (5, 30)])


@pytest.mark.parametrize("R,N,d,theta,beta,rho", [
    (10**6, 10**6, 100, 0.25, 1.0, 0.35),
    (10**6, 3, 1000, 1.5, 2.0, -0.9),
    (3, 10**6, 10, 0.25, 3.0, 1.0),
])
def test_exact_is_accurate_to_1e8_at_a_million_tokens(R, N, d, theta, beta, rho):
    ref = _adaptive_reference(R, N, d, theta, beta, rho)
    got = float(phi_exact(R, N, d, theta, beta, np.array([rho]))[0][0])
    assert got == pytest.approx(ref, rel=1e-8, abs=0)


def test_landscape_shapes_and_frame():
    m = ModelConfig(10, 2, 3, 1.0)
    s = landscape(m, 0.3)
    assert s.phi.shape == () and s.dphi.shape == ()
    g = landscape(m, np.zeros((2, 3)), "asymptotic")
    assert g.phi.shape == (2, 3)
    mc = landscape(m, [0.0, 0.5], "mc", n_samples=1000)
    df = mc.to_frame()
    assert list(df.columns) == ["rho", "phi", "dphi", "field", "phi_stderr", "dphi_stderr",
                                "method"]
    np.testing.assert_allclose(df["field"], (1 - df["rho"] ** 2) * df["dphi"])


@pytest.mark.parametrize("kwargs,field", [
    (dict(rho=1.5), "rho"),
    (dict(rho=[0.0, np.nan]), "rho"),
    (dict(rho="x"), "rho"),
    (dict(rho=0.0, method="quadrature"), "method"),
    (dict(rho=0.0, method="mc", n_samples=1), "n_samples"),
    (dict(rho=0.0, method="mc", seed=-1), "seed"),
])
def test_bad_input_names_the_field(kwargs, field):
    with pytest.raises(ConfigError) as info:
        landscape(ModelConfig(10, 2, 3, 1.0), **kwargs)
    msg = str(info.value)
    assert msg.startswith(field + ":") and "got" in msg and "\n" not in msg


def test_exact_refuses_extreme_beta():
    with pytest.raises(ConfigError, match="^beta:"):
        landscape(ModelConfig(10, 2, 3, 1.0, beta=20.0), 0.0)
    assert np.isfinite(landscape(ModelConfig(10, 2, 3, 1.0, beta=20.0), 0.0, "mc",
                                 n_samples=100).phi)


def test_monte_carlo_uses_common_random_numbers_across_the_grid():
    # one set of draws serves every ρ: a point's value does not depend on the rest of the grid,
    # and a central difference of Φ equals the Φ' estimate far inside one standard error
    m = ModelConfig(20, 3, 8, 1.0, 1.5)
    alone = landscape(m, [0.3], "mc", n_samples=20_000, seed=1)
    grid = landscape(m, [-0.5, 0.3, 0.9], "mc", n_samples=20_000, seed=1)
    assert grid.phi[1] == pytest.approx(alone.phi[0], rel=1e-12)
    h = 1e-4
    pm = landscape(m, [0.3 - h, 0.3 + h], "mc", n_samples=20_000, seed=1)
    fd = (pm.phi[1] - pm.phi[0]) / (2 * h)
    assert abs(fd - alone.dphi[0]) < 1e-3 * alone.dphi_stderr[0]
    other = landscape(m, [0.3], "mc", n_samples=20_000, seed=2)
    assert other.phi[0] != alone.phi[0]  # the seed does matter
