"""Finite-step theory against long chain simulations: constant-step plateau, samples to reach."""

from __future__ import annotations

import numpy as np
import pytest

from attnsignal.config import ConfigError, ModelConfig, StepSize
from attnsignal.theory import (
    constant_step_plateau,
    corrected_drift,
    landscape,
    samples_to_reach,
    second_order_coefficient,
)

MODEL = ModelConfig(20, 3, 6, 1.0)


@pytest.mark.parametrize("update", ["riemannian", "projected"])
@pytest.mark.parametrize("eta", [2e-3, 1e-3])
def test_constant_step_plateau_matches_long_chain(chain_simulate, update, eta):
    # stated tolerance: the stationary mean of 1 − |ρ| over 40 runs × 75 000 steps is within
    # 10 % of the predicted 1 − ρ_plateau (measured: within 4 %)
    pred = constant_step_plateau(MODEL, eta, update=update, n_samples=50_000)
    assert 0.9 < pred < 0.96
    res = chain_simulate(MODEL, StepSize(eta, 1000, 0.0), steps=100_000, runs=40, update=update,
                         initial_alignment=0.9, seed=2, record_every=500)
    a = np.abs(res.alignment[:, res.alignment.shape[1] // 4:])
    assert (1 - a.mean()) / (1 - pred) == pytest.approx(1.0, abs=0.10)


@pytest.mark.parametrize("batch", [2, 4])
def test_constant_step_plateau_with_a_minibatch_matches_long_chain(chain_simulate, batch):
    # V_B = |E g|² + (V − |E g|²)/B: a minibatch lifts the plateau; same 10 % tolerance
    eta = 3e-3 * batch
    pred = constant_step_plateau(MODEL, eta, batch, n_samples=50_000)
    single = constant_step_plateau(MODEL, eta, 1, n_samples=50_000)
    assert pred > single
    res = chain_simulate(MODEL, StepSize(eta, 1000, 0.0), steps=30_000, runs=40, batch=batch,
                         update="riemannian", initial_alignment=0.9, seed=3, record_every=250)
    a = np.abs(res.alignment[:, res.alignment.shape[1] // 4:])
    assert (1 - a.mean()) / (1 - pred) == pytest.approx(1.0, abs=0.10)


def test_plateau_first_order_scaling():
    # 1 − ρ* ≈ η V(1) / (4 Φ'(1)) for small η (riemannian)
    eta = 2e-4
    pred = constant_step_plateau(MODEL, eta, n_samples=20_000)
    kap1 = float(second_order_coefficient(MODEL, 1.0, n_samples=20_000).value)  # = V(1)/2
    approx = eta * kap1 / (2 * float(landscape(MODEL, 1.0).dphi))
    assert (1 - pred) / approx == pytest.approx(1.0, abs=0.05)


def test_plateau_is_nan_where_the_end_repels():
    # −ξ repels in the monotone model
    assert np.isnan(constant_step_plateau(ModelConfig(100, 50, 500, 0.5), 1e-3, side=-1,
                                          n_samples=500))


def test_corrected_drift_vanishes_at_the_plateau():
    eta = 1e-3
    rstar = constant_step_plateau(MODEL, eta, n_samples=20_000)
    cd = corrected_drift(MODEL, [rstar - 0.02, rstar, rstar + 0.02], eta, n_samples=20_000)
    assert cd.value[0] > 0 > cd.value[2]
    assert abs(cd.value[1]) < 0.05 * abs(cd.value[0])


def test_samples_to_reach_is_consistent():
    step = StepSize(0.02, 1000, 0.75)
    res = samples_to_reach(MODEL, step, 0.95, batch=2, n_samples=5000)
    assert res.ode_steps > 0 and np.isfinite(res.ode_time)
    assert res.eta_at_hit == pytest.approx(float(step.eta(res.ode_steps)))
    assert res.reachable_at_hit == (res.eta_at_hit <= res.eta_max)
    # the two checks agree: the step is small enough iff its plateau clears the target
    assert res.reachable_at_hit == (res.plateau_at_hit >= 0.95)
    assert res.steps >= res.ode_steps and res.samples == 2 * res.steps
    if not res.reachable_at_hit:
        assert float(step.eta(res.steps)) <= res.eta_max * (1 + 1e-9)


def test_samples_to_reach_with_a_larger_target_waits_for_the_step():
    step = StepSize(0.05, 100, 0.75)
    res = samples_to_reach(MODEL, step, 0.99, n_samples=5000)
    assert not res.reachable_at_hit and res.plateau_at_hit < 0.99
    assert res.steps > res.ode_steps


def test_samples_to_reach_without_the_plateau_changes_nothing_else():
    step = StepSize(0.05, 100, 0.75)
    full = samples_to_reach(MODEL, step, 0.99, n_samples=3000)
    fast = samples_to_reach(MODEL, step, 0.99, n_samples=3000, plateau=False)
    assert np.isnan(fast.plateau_at_hit) and np.isfinite(full.plateau_at_hit)
    for name in ("ode_time", "ode_steps", "eta_at_hit", "eta_max", "reachable_at_hit",
                 "steps", "samples"):
        assert getattr(fast, name) == getattr(full, name), name


@pytest.mark.parametrize("call,field", [
    (lambda: constant_step_plateau(MODEL, 0.0), "eta"),
    (lambda: constant_step_plateau(MODEL, 1e-3, side=2), "side"),
    (lambda: samples_to_reach(MODEL, StepSize(0.01), 1.0), "target"),
    (lambda: samples_to_reach(MODEL, 0.01, 0.9), "step"),
    (lambda: corrected_drift(MODEL, 0.5, -1.0), "eta"),
])
def test_bad_input_names_the_field(call, field):
    with pytest.raises(ConfigError) as info:
        call()
    assert str(info.value).startswith(field + ":")
