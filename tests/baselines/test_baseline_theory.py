"""baseline_theory against closed forms, independent Monte Carlo and simulation."""

from __future__ import annotations

import numpy as np
import pytest

from attnsignal import ConfigError, ModelConfig, StepSize
from attnsignal.baselines import baseline
from attnsignal.baselines.theory import (_oja_meanfield, baseline_theory, mean_alignment_exact,
                                         oja_kappa_coefficients, uniform_mean_abs)

HEADLINE = ModelConfig(d=100, n_informative=500, n_nuisance=10_000, theta=0.25)
ELL = (500 * 0.25) ** 2 / 10_500  # c²L


def test_uniform_start_matches_monte_carlo():
    rng = np.random.default_rng(0)
    for d in (2, 5, 100):
        n = 100_000
        r2 = rng.chisquare(1, n)
        mc = np.sqrt(r2 / (r2 + rng.chisquare(d - 1, n)))  # |z_1|/‖z‖, z ~ N(0, I_d)
        assert uniform_mean_abs(d) == pytest.approx(mc.mean(), abs=4 * mc.std() / np.sqrt(n))


@pytest.mark.parametrize("random_sign", [False, True])
def test_mean_series_matches_direct_monte_carlo_of_its_law(random_sign):
    """ρ = (T + Z)/√((T + Z)² + χ²_{d−1}) with T = c√(Lk) Σε/k, drawn directly."""
    rng = np.random.default_rng(1)
    d, ell, n = 7, 0.4, 400_000
    for k in (1, 3, 40):
        S = (2 * rng.binomial(k, 0.5, n) - k) if random_sign else np.full(n, k)
        y = np.sqrt(ell / k) * S + rng.standard_normal(n)
        mc = np.abs(y) / np.sqrt(y * y + rng.chisquare(d - 1, n))
        th = mean_alignment_exact(d, ell, np.array([k]), random_sign)[0]
        assert th == pytest.approx(mc.mean(), abs=4 * mc.std() / np.sqrt(n))


def test_mean_and_oracle_approach_their_asymptotic_rates():
    k = np.array([200_000, 1_000_000])
    gap = 1 - baseline_theory(HEADLINE, "mean", k)
    np.testing.assert_allclose(gap, 99 / (2 * k * ELL), rtol=0.02)
    gap = 1 - baseline_theory(HEADLINE, "oracle", k)
    np.testing.assert_allclose(gap, 99 / (2 * k * 500 * 0.25 ** 2), rtol=0.02)
    gap = 1 - baseline_theory(HEADLINE, "pca", k)  # BBP → d(1 + ℓ)/(2kℓ²)
    np.testing.assert_allclose(gap, 100 * (1 + ELL) / (2 * k * ELL ** 2), rtol=0.02)


# (model, method, step, samples, runs, absolute tolerance beyond 4 standard errors)
CASES = [
    (HEADLINE, "mean", None, [30, 300, 3000], 300, 0.0),  # exact
    (HEADLINE.replace(signal_sign="random"), "mean", None, [30, 3000], 300, 0.0),  # exact
    (HEADLINE.replace(signal_sign="random"), "oracle", None, [3, 30, 300], 300, 0.0),  # exact
    (HEADLINE, "pca", None, [200, 2000], 100, 0.02),  # BBP limit at d = 100
    (HEADLINE, "oja", None, [1000, 5000], 300, 0.02),  # mean field
    (ModelConfig(d=20, n_informative=50, n_nuisance=200, theta=0.5), "oja",
     StepSize(eta0=2.0, k0=50.0, power=0.75), [100, 1000], 300, 0.02),
]


@pytest.mark.parametrize("model, method, step, ks, runs, tol", CASES)
def test_theory_matches_simulation(model, method, step, ks, runs, tol):
    res = baseline(model, method, samples=ks[-1], runs=runs, seed=11, record=ks, step=step)
    a = np.abs(res.alignment[:, 1:])
    sim, se = a.mean(0), a.std(0, ddof=1) / np.sqrt(runs)
    th = baseline_theory(model, method, ks, step=step)
    assert np.all(np.abs(sim - th) <= 4 * se + tol), (sim, th, se)


def test_random_sign_mean_stays_at_a_random_direction_while_pca_and_oja_recover_xi():
    model = HEADLINE.replace(signal_sign="random")
    ks = [1000, 20_000]
    mean = np.abs(baseline(model, "mean", samples=ks[-1], runs=200, record=ks).alignment)
    # it stays at the stationary law: the alignment of a direction drawn from
    # N(0, diag(1 + ℓ, 1, …)) — within a factor √(1 + ℓ) of a uniform direction's
    stay = baseline_theory(model, "mean", [10 ** 6])[0]
    assert uniform_mean_abs(100) < stay < np.sqrt(1 + ELL) * uniform_mean_abs(100) + 0.01
    for j in (1, 2):
        assert abs(mean[:, j].mean() - stay) < 4 * mean[:, j].std() / np.sqrt(200)
        assert mean[:, j].mean() < 0.2
    for method in ("pca", "oja"):
        a = np.abs(baseline(model, method, samples=ks[-1], runs=20, record=ks).alignment)
        assert a[:, -1].mean() > 0.95


def _kappa_unexpanded(x, c, lam2, d):
    """The module docstring's κ plus E(Δρ)²/η², term by term as written there."""
    s2, r2 = x, 1.0 - x
    lam1, A4 = c * c + lam2, c ** 4 + 6 * c * c * lam2 + 3 * lam2 * lam2
    kap = (r2 * lam1 * lam2 * (d - 1) + s2 * lam2 * lam2 * (d + 1)
           - s2 * (r2 * A4 + s2 * lam1 * lam2 + r2 * lam1 * lam2 + 3 * s2 * lam2 * lam2
                   + (r2 * lam1 + s2 * lam2) * (d - 2) * lam2)
           + 4 * s2 * (r2 * r2 * A4 + 6 * r2 * s2 * lam1 * lam2 + 3 * s2 * s2 * lam2 * lam2)
           - 12 * s2 * r2 * lam1 * lam2 - 12 * s2 * s2 * lam2 * lam2)
    return kap + s2 * (s2 * r2 * (A4 - 2 * lam1 * lam2 + 3 * lam2 * lam2)
                       + (s2 - r2) ** 2 * lam1 * lam2)


def test_oja_kappa_polynomial_matches_its_unexpanded_form():
    rng = np.random.default_rng(5)
    for _ in range(200):
        c, lam2 = rng.uniform(0.01, 2.0), 1.0 / rng.integers(2, 20_000)
        d, x = int(rng.integers(2, 10 ** 6)), rng.uniform(0.0, 1.0)
        p0, p1, p2, p3 = oja_kappa_coefficients(c, lam2, d)
        want = _kappa_unexpanded(x, c, lam2, d)
        scale = (c * c + lam2) * lam2 * d + c ** 4  # the size of the terms that cancel
        assert p0 + x * (p1 + x * (p2 + x * p3)) == pytest.approx(want, abs=1e-12 * scale)


def test_oja_recursion_runs_every_start_as_the_scalar_recursion_would():
    rng = np.random.default_rng(6)
    c, lam2, d = 0.4, 1.0 / 300, 50
    etas = 2.0 / (np.arange(500) + 20.0)
    x0 = rng.uniform(0.0, 1.0, 7)
    at = np.array([0, 1, 17, 250, 500])
    got = _oja_meanfield(etas, x0, c * c, *oja_kappa_coefficients(c, lam2, d), at)
    for i, x in enumerate(x0):
        want = []
        for k in range(etas.size + 1):
            if k in at:
                want.append(x)
            if k < etas.size:
                eta = etas[k]
                x = x - 2 * eta * c * c * x * (1 - x) + eta * eta * _kappa_unexpanded(x, c, lam2, d)
                x = min(1.0, max(0.0, x))
        np.testing.assert_allclose(got[i], want, rtol=1e-12, atol=1e-15)


def test_bad_theory_input_names_the_field():
    with pytest.raises(ConfigError, match="samples"):
        baseline_theory(HEADLINE, "mean", [-1])
    with pytest.raises(ConfigError, match="method"):
        baseline_theory(HEADLINE, "sga", [10])
    with pytest.raises(ConfigError, match="step"):
        baseline_theory(HEADLINE, "pca", [10], step=StepSize(eta0=1.0))
