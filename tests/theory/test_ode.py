"""The limiting ODE: hitting times, dense output, the approach to ±1, step mapping."""

from __future__ import annotations

import numpy as np
import pytest

from attnsignal.config import ConfigError, ModelConfig, StepSize
from attnsignal.theory import flow, landscape, solve_ode

MODEL = ModelConfig(100, 500, 10_000, 0.25)


def test_hitting_times_consistent_with_dense_solution():
    sol = solve_ode(MODEL, 0.1)
    assert list(sol.hitting_times) == [0.9, 0.99, 0.9965]
    prev = 0.0
    for target, th in sol.hitting_times.items():
        assert np.isfinite(th) and th > prev
        assert abs(float(sol(th))) == pytest.approx(target, abs=1e-9)
        before = np.linspace(0.0, th, 400)[:-1]
        assert np.all(np.abs(sol(before)) < target)
        prev = th
    # dense output through the solver's own points, monotone increasing
    np.testing.assert_allclose(sol(sol.t), sol.rho, atol=1e-12)
    assert np.all(np.diff(sol(np.linspace(0, sol.t_end, 500))) > 0)


def test_dense_solution_solves_the_ode():
    sol = solve_ode(MODEL, -0.3)
    t = np.linspace(1.0, 150.0, 50)
    h = 1e-3
    lhs = (sol(t + h) - sol(t - h)) / (2 * h)
    rhs = landscape(MODEL, sol(t)).field
    np.testing.assert_allclose(lhs, rhs, rtol=1e-6, atol=1e-10)


def test_exponential_approach_to_plus_one():
    # near +1: 1 − ρ ∝ exp(−2Φ'(1) t); the z = artanh ρ variable resolves this cleanly
    sol = solve_ode(MODEL, 0.5)
    t = np.array([300.0, 400.0])
    slope = np.diff(np.log1p(-sol(t)))[0] / 100.0
    assert slope == pytest.approx(-2 * float(landscape(MODEL, 1.0).dphi), rel=1e-4)
    assert 1 - float(sol(1e5)) < 1e-12  # continued past the solver's end


def test_hitting_steps_follow_the_schedule():
    step = StepSize(0.1, 1000, 0.75)
    sol = solve_ode(MODEL, 0.1, step=step)
    for target, k in sol.hitting_steps.items():
        t = sol.hitting_times[target]
        assert k == step.step_at_time(t)
        assert step.ode_time([k - 1])[0] < t <= step.ode_time([k])[0]
    np.testing.assert_array_equal(sol.steps_at([0.0, 50.0]), step.step_at_time([0.0, 50.0]))


def test_stationary_and_attracting_starts():
    for r0 in (-1.0, 1.0):
        sol = solve_ode(MODEL, r0)
        assert float(sol(123.0)) == r0 and all(h == 0.0 for h in sol.hitting_times.values())
    # from just above the interior minimum of the d/L-large model: to +1; just below: to −1
    m = ModelConfig(1000, 10, 200, 0.25)
    up, down = solve_ode(m, -0.33), solve_ode(m, -0.35)
    assert float(up(up.t_end)) > 0.999 and float(down(down.t_end)) < -0.999
    assert np.isfinite(up.hitting_times[0.9]) and np.isfinite(down.hitting_times[0.9])


def test_flow_matches_solve_ode():
    t = np.linspace(0.0, 120.0, 7)
    starts = np.array([0.1, -0.5, 1.0])
    f = flow(MODEL, starts, t)
    for i, r0 in enumerate(starts):
        np.testing.assert_allclose(f[i], solve_ode(MODEL, r0)(t), atol=1e-8)


@pytest.mark.parametrize("kwargs,field", [
    (dict(rho0=1.2), "rho0"),
    (dict(rho0=0.1, t_max=-1.0), "t_max"),
    (dict(rho0=0.1, method="rk4"), "method"),
    (dict(rho0=0.1, targets=(0.9, 1.0)), "targets"),
    (dict(rho0=0.1, step=0.1), "step"),
])
def test_bad_input_names_the_field(kwargs, field):
    with pytest.raises(ConfigError) as info:
        solve_ode(MODEL, **kwargs)
    assert str(info.value).startswith(field + ":")


def test_a_start_on_an_exact_fixed_point_stays_there():
    # the random-sign landscape is even: Φ'(0) = 0 exactly; round-off must not move ρ
    even = ModelConfig(20, 5, 20, 1.0, signal_sign="random")
    assert abs(float(landscape(even, 0.0).dphi)) < 1e-12
    sol = solve_ode(even, 0.0, t_max=50.0)
    assert all(np.isnan(h) for h in sol.hitting_times.values())
    np.testing.assert_array_equal(sol(np.linspace(0, 100, 7)), 0.0)
    out = flow(even, np.array([0.0, 0.2]), np.array([0.0, 10.0, 50.0]))
    np.testing.assert_array_equal(out[0], 0.0)
    assert out[1, -1] > 0.9  # a start off the fixed point still moves
