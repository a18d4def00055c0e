"""The theory never returns a non-finite value silently and never hangs (issue 15, items 4
and 5): overflow-prone inputs give a finite value computed in log space or a one-line
ConfigError naming a method that works; every integration ends within its bound."""

from __future__ import annotations

import time
import warnings

import numpy as np
import pytest

import attnsignal as asg
from attnsignal.config import ConfigError
from attnsignal.theory import (
    fixed_points, flow, landscape, landscape_verdict, solve_ode,
)
from attnsignal.theory import ode as ode_module
from attnsignal.theory.asymptotic import phi_asymptotic

HOT = asg.ModelConfig(d=10, n_informative=5, n_nuisance=50, theta=5.0, beta=30.0)


def _naive_asymptotic(R, N, d, theta, beta, rho):
    """The large-R, N closed form of docs/model.md written literally (overflows for large βθ
    or β)."""
    from scipy.special import expit

    rho = np.asarray(rho, float)
    bt = beta * theta
    x = bt * rho
    p = expit(x + np.log(R / N))
    u = np.exp(x)
    den = R * u + N
    eb2 = np.exp(beta * beta)
    A = beta + p * theta * rho
    phi = A * A + p * p * theta ** 2 * (1 - rho ** 2) + (d - 1) * eb2 * (R * u * u + N) / den ** 2
    dp = bt * p * (1 - p)
    dphi = (2 * A * theta * (p + rho * dp) + theta ** 2 * (2 * p * dp * (1 - rho ** 2) - 2 * rho * p * p)
            + (d - 1) * eb2 * 2 * bt * p * (1 - p) * (u - 1) / den)
    return phi, dphi


@pytest.mark.parametrize("args", [(5, 50, 10, 2.0, 1.5), (100, 3, 4, 0.3, 0.7), (1, 1000, 20, 5.0, 2.0)])
def test_log_space_closed_form_equals_the_literal_one_where_that_is_finite(args):
    rho = np.linspace(-1, 1, 41)
    got, want = phi_asymptotic(*args, rho), _naive_asymptotic(*args, rho)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-13)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-12, atol=1e-12 * np.abs(want[1]).max())


def test_closed_form_stays_finite_where_the_literal_one_overflows():
    """βθ = 1000: e^{βθρ} overflows, the limit does not (p → 1, the e^{β²} term → e^{β²}/R)."""
    rho = np.array([-1.0, -0.5, 0.5, 1.0])
    with np.errstate(all="ignore"):
        naive = _naive_asymptotic(5, 50, 10, 1000.0, 1.0, rho)
    assert not np.all(np.isfinite(naive[0]))
    phi, dphi = phi_asymptotic(5, 50, 10, 1000.0, 1.0, rho)
    assert np.all(np.isfinite(phi)) and np.all(np.isfinite(dphi))
    # at ρ = 1 every informative token wins: Φ∞ = (β + θ)² + (d − 1) e^{β²}/R
    assert phi[-1] == pytest.approx((1 + 1000.0) ** 2 + 9 * np.e / 5, rel=1e-12)


def test_issue_example_asymptotic_at_beta_30_raises_and_names_mc():
    with pytest.raises(ConfigError, match="use method='mc'") as info:
        landscape(HOT, [-1, 0, 1], "asymptotic")
    assert "\n" not in str(info.value)


def test_issue_example_is_finite_by_mc_and_exact_says_to_use_mc():
    ls = landscape(HOT, [-1, 0, 1], "mc", n_samples=4000)
    assert np.all(np.isfinite(ls.phi)) and np.all(np.isfinite(ls.dphi))
    with pytest.raises(ConfigError, match="method='mc'"):
        landscape(HOT, [-1, 0, 1], "exact")


def test_landscape_verdict_never_builds_on_non_finite_values():
    with pytest.raises(ConfigError, match="use method='mc'"):
        landscape_verdict(HOT, "asymptotic")


def test_verdict_and_ode_choose_a_method_that_works_beyond_the_exact_range():
    m = asg.ModelConfig(d=10, n_informative=3, n_nuisance=20, theta=1.0, beta=13.0)
    sol = solve_ode(m, 0.1)
    assert sol.method == "mc"
    assert np.all(np.isfinite(sol.rho))
    assert fixed_points(m)[-1].rho == 1.0


@pytest.mark.parametrize("method", ["exact", "mc", "asymptotic"])
@pytest.mark.parametrize("theta, noise_std", [(1e300, 1.0), (1.0, 1e-300), (1e101, 1.0)])
def test_theta_over_sigma_beyond_float64_is_refused_without_warnings(method, theta, noise_std):
    m = asg.ModelConfig(d=10, n_informative=5, n_nuisance=50, theta=theta, noise_std=noise_std)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no raw numpy RuntimeWarning either
        with pytest.raises(ConfigError, match="theta/noise_std"):
            landscape(m, [-1, 0, 1], method, n_samples=100)


def test_exact_handles_a_large_signal_that_overflowed_its_weights():
    """βθρ = 10⁴ made e^{βθρ} overflow; the common shift of the weights keeps it finite, and
    it agrees with Monte Carlo within 4 standard errors."""
    m = asg.ModelConfig(d=5, n_informative=3, n_nuisance=20, theta=1e4)
    rho = [-0.5, 0.01, 0.5]
    ex = landscape(m, rho, "exact")
    mc = landscape(m, rho, "mc", n_samples=50_000)
    assert np.all(np.isfinite(ex.phi)) and np.all(np.isfinite(ex.dphi))
    assert np.all(np.abs(ex.phi - mc.phi) <= 4 * mc.phi_stderr + 1e-9 * np.abs(mc.phi))
    assert np.all(np.abs(ex.dphi - mc.dphi) <= 4 * mc.dphi_stderr + 1e-9 * np.abs(mc.dphi))


@pytest.mark.parametrize("n_nuisance, n_samples, field", [
    (10 ** 30, 100, "model.n_nuisance"), (10, 10 ** 30, "n_samples")])
def test_monte_carlo_sizes_that_cannot_run_are_refused_with_the_estimate(n_nuisance, n_samples,
                                                                         field):
    m = asg.ModelConfig(d=10, n_informative=5, n_nuisance=n_nuisance, theta=1.0)
    t0 = time.perf_counter()
    with pytest.raises(ConfigError, match=field) as info:
        landscape(m, [0.0], "mc", n_samples=n_samples)
    assert "≈" in str(info.value) and time.perf_counter() - t0 < 1.0


# ---------------------------------------------------------------------- no hangs


@pytest.mark.timeout(30)
@pytest.mark.parametrize("d", [2, 3])
def test_flat_random_sign_landscape_is_stationary_not_a_hang(d):
    """R = 3, N = 0, random sign: Φ is constant (all scores shift together); the ODE ran
    past 45–90 s integrating round-off. Now: stationary, in a second or two."""
    m = asg.ModelConfig(d=d, n_informative=3, n_nuisance=0, theta=1.0, signal_sign="random")
    t0 = time.perf_counter()
    sol = solve_ode(m, 0.1)
    assert time.perf_counter() - t0 < 10
    np.testing.assert_array_equal(sol.rho, 0.1)
    assert all(np.isnan(h) for h in sol.hitting_times.values())
    np.testing.assert_array_equal(flow(m, [0.1, -0.3], [0.0, 5.0]), [[0.1, 0.1], [-0.3, -0.3]])


@pytest.mark.parametrize("kw", [{"rtol": float("nan")}, {"atol": float("nan")}, {"rtol": 0.0},
                                {"rtol": -1.0}, {"atol": 0.0}, {"rtol": float("inf")},
                                {"rtol": 1e-20}])
def test_tolerances_scipy_would_loop_on_or_change_are_refused(kw):
    m = asg.ModelConfig(d=10, n_informative=3, n_nuisance=20, theta=1.0)
    with pytest.raises(ConfigError, match=next(iter(kw))):
        solve_ode(m, 0.1, **kw)
    with pytest.raises(ConfigError, match=next(iter(kw))):
        flow(m, [0.1], [1.0], **kw)


@pytest.mark.timeout(30)
def test_an_integration_past_its_budget_ends_with_a_config_error(monkeypatch):
    monkeypatch.setattr(ode_module, "MAX_FIELD_EVALUATIONS", 50)
    m = asg.ModelConfig(d=10, n_informative=3, n_nuisance=20, theta=1.0)
    with pytest.raises(ConfigError, match="within 50 evaluations"):
        solve_ode(m, 0.1, rtol=1e-12)
    with pytest.raises(ConfigError, match="within 50 evaluations"):
        flow(m, np.linspace(-0.9, 0.9, 7), np.linspace(0, 1e3, 5))


def test_a_huge_t_max_toward_plus_one_still_ends():
    m = asg.ModelConfig(d=10, n_informative=3, n_nuisance=20, theta=1.0)
    sol = solve_ode(m, 0.1, t_max=1e300)
    assert sol.t_end < 1e6 and sol.rho[-1] > 1 - 1e-11
