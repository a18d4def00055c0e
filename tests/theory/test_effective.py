"""The effective dynamics (theory/effective.py) against the chain engine and exact laws.

Sizes are small (``L <= 40``) so that each comparison takes seconds; the accuracy targets at
the E1 sizes are measured by ``benchmarks/effective_accuracy.py``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from scipy.special import gammaln

import attnsignal as asg
from attnsignal.config import ConfigError, ModelConfig, StepSize
from attnsignal.theory.effective import effective_dynamics, one_step_moments

SMALL = ModelConfig(d=30, n_informative=10, n_nuisance=30, theta=0.8)
STEP = StepSize(eta0=0.05, k0=300.0, power=0.75)


def _band_stats(ed, res) -> tuple[float, float, float]:
    """(largest |predicted − simulated| mean |ρ| minus 3 SE, the largest gap, coverage of
    the 10–90 % band over (run, record) pairs after the first 5 % of the records)."""
    a = np.abs(res.alignment)
    assert np.array_equal(ed.steps, res.steps)
    mu = a.mean(axis=0)
    se = a.std(axis=0, ddof=1) / math.sqrt(a.shape[0])
    gap = np.abs(ed.mean_abs - mu)
    q10, q90 = ed.quantile([0.1, 0.9])
    first = int(math.ceil(0.05 * ed.steps.size))
    inside = (a >= q10) & (a <= q90)
    return float(np.max(gap - 3 * se)), float(gap.max()), float(inside[:, first:].mean())


def test_initial_law_is_the_uniform_sphere_law():
    """Record 0 of a uniform start: ``E|ρ0| = Γ(d/2)/(√π Γ((d+1)/2))`` and the law of |ρ0|
    against 20 000 exact draws (``ρ0² ~ Beta(1/2, (d−1)/2)``) by a KS test."""
    for d in (5, 30, 400):
        m = ModelConfig(d=d, n_informative=2, n_nuisance=3, theta=0.5)
        ed = effective_dynamics(m, STEP, steps=1, record=[0, 1], n_samples=200)
        exact = math.exp(gammaln(d / 2) - gammaln((d + 1) / 2)) / math.sqrt(math.pi)
        assert ed.mean_abs[0] == pytest.approx(exact, rel=2e-3)
        assert abs(ed.mean[0]) < 1e-12
        rng = np.random.default_rng(d)
        x = np.sqrt(rng.beta(0.5, (d - 1) / 2, 20_000))
        ps = np.linspace(0.01, 0.99, 99)
        q = ed.quantile(ps)[:, 0]
        cdf = lambda v: np.interp(v, q, ps, left=0.0, right=1.0)  # noqa: E731
        assert stats.kstest(x, cdf).pvalue > 0.01


def test_initial_alignment_is_a_point_mass():
    ed = effective_dynamics(SMALL, STEP, steps=1, record=[0, 1], initial_alignment=0.3,
                            n_samples=200)
    assert ed.mean[0] == pytest.approx(0.3, abs=2e-4)
    assert ed.quantile(0.5)[0] == pytest.approx(0.3, abs=0.01)


@pytest.mark.parametrize("update,batch", [("projected", 1), ("riemannian", 3)])
def test_one_step_drift_and_variance_match_long_chain(chain_simulate, update, batch):
    """E[Δρ] and Var[Δρ] of one step from ρ = 0.4 at η = 0.3: the control-variate estimate
    against 40 000 one-step chain runs (within 4 combined SE); the test resolves the finite
    step — the first-order drift ``η(1 − ρ²)Φ'`` is rejected."""
    rho, eta, n = 0.4, 0.3, 40_000
    mom = one_step_moments(SMALL, rho, eta, batch=batch, update=update, n_samples=10_000)
    res = chain_simulate(SMALL, StepSize(eta, power=0.0), steps=1, runs=n, batch=batch,
                         update=update, initial_alignment=rho, seed=11, record_every=1)
    dr = res.alignment[:, 1] - rho
    se = math.hypot(dr.std(ddof=1) / math.sqrt(n), float(mom.stderr_drift_rho[0, 0]))
    assert abs(mom.drift_rho[0, 0] - dr.mean()) < 4 * se
    first = eta * float(asg.vector_field(SMALL, rho))
    assert abs(first - dr.mean()) > 6 * se
    v = dr.var(ddof=1)
    se_v = v * math.sqrt(2.0 / n) * 2  # kurtosis allowance
    assert abs(mom.var_rho[0, 0] - v) < 4 * se_v
    dz = np.arctanh(res.alignment[:, 1]) - np.arctanh(rho)
    se_z = math.hypot(dz.std(ddof=1) / math.sqrt(n), float(mom.stderr_drift_z[0, 0]))
    assert abs(mom.drift_z[0, 0] - dz.mean()) < 4 * se_z
    assert mom.var_z[0, 0] == pytest.approx(dz.var(ddof=1), rel=0.05)


@pytest.fixture(scope="module")
def small_chain(chain_simulate):
    """400 chain runs of 1 500 steps of SMALL from a uniform start (projected, B = 1)."""
    return chain_simulate(SMALL, STEP, steps=1500, runs=400, seed=5, record_every=75)


@pytest.mark.slow
def test_mean_and_band_match_chain(small_chain):
    """Predicted mean |ρ| within 0.01 + 3 SE of 400 chain runs at every record, and the
    10–90 % band holds 80 ± 8 % of the (run, record) pairs after the first 5 % of the run."""
    ed = effective_dynamics(SMALL, STEP, steps=1500, record_every=75, n_samples=3000)
    excess, gap, cover = _band_stats(ed, small_chain)
    assert excess <= 0.01, (gap, cover)
    assert 0.72 <= cover <= 0.88, (gap, cover)


@pytest.mark.slow
def test_zero_diffusion_is_rejected_by_the_band_test(small_chain):
    """The same comparison with the diffusion switched off (the mean-field flow of the
    uniform start's law): the band no longer holds 80 ± 8 % of the runs."""
    ed = effective_dynamics(SMALL, STEP, steps=1500, record_every=75, n_samples=3000,
                            diffusion_scale=0.0)
    _, _, cover = _band_stats(ed, small_chain)
    assert not 0.72 <= cover <= 0.88, cover


@pytest.mark.slow
def test_riemannian_minibatch_match_chain(chain_simulate):
    """The riemannian update with minibatches of B = 4: mean |ρ| within 0.01 + 3 SE and the
    10–90 % band against 400 chain runs."""
    ed = effective_dynamics(SMALL, STEP, steps=1000, batch=4, update="riemannian",
                            record_every=50, n_samples=3000)
    res = chain_simulate(SMALL, STEP, steps=1000, runs=400, batch=4, update="riemannian",
                         seed=6, record_every=50)
    excess, gap, cover = _band_stats(ed, res)
    assert excess <= 0.01, (gap, cover)
    assert 0.72 <= cover <= 0.88, (gap, cover)


def test_random_sign_law_is_symmetric():
    """The random-sign chain is symmetric under ρ → −ρ: the predicted law is even (E ρ = 0)
    while E|ρ| moves."""
    m = SMALL.replace(signal_sign="random")
    ed = effective_dynamics(m, STEP, steps=200, record_every=50, n_samples=1000)
    np.testing.assert_allclose(ed.law, ed.law[:, ::-1], atol=1e-12)
    assert ed.mean_abs[-1] > ed.mean_abs[0] + 0.03


def test_noise_std_is_absorbed_into_the_step():
    """(θ, σ, β) with steps η is (θ/σ, 1, βσ) with steps σ²η."""
    m = ModelConfig(d=20, n_informative=5, n_nuisance=10, theta=1.0, beta=0.5, noise_std=2.0)
    step = StepSize(eta0=0.01, k0=200.0, power=0.75)
    a = effective_dynamics(m, step, steps=100, record_every=50, n_samples=500)
    b = effective_dynamics(m.standardized(), StepSize(eta0=0.04, k0=200.0, power=0.75),
                           steps=100, record_every=50, n_samples=500)
    np.testing.assert_allclose(a.mean_abs, b.mean_abs, rtol=1e-9)


@pytest.mark.parametrize("kwargs", [dict(steps=0), dict(steps=10, batch=0),
                                    dict(steps=10, update="newton"),
                                    dict(steps=10, initial_alignment=1.5),
                                    dict(steps=10, record=[0, 11])])
def test_bad_input_is_one_config_error(kwargs):
    with pytest.raises(ConfigError):
        effective_dynamics(SMALL, STEP, **kwargs)


def test_a_minibatch_pool_beyond_memory_is_refused_before_any_draw(monkeypatch):
    """B = 3 000 of 4 000 draws needs ≈ 0.6 TB of pool: one ConfigError naming ``batch``,
    raised in well under the time one draw of the pool would take (the check runs first, in
    effective_dynamics itself, not only in the command line's pre-check)."""
    import time

    import attnsignal.theory.effective as eff

    def no_pool(*a, **k):  # reaching the pool means the check came too late
        raise AssertionError("the gradient pool was drawn")

    monkeypatch.setattr(eff, "_gradient_pool", no_pool)
    t0 = time.perf_counter()
    with pytest.raises(ConfigError, match=r"^batch: must keep the effective dynamics' minibatch"):
        effective_dynamics(SMALL, STEP, steps=10, batch=3000)
    assert time.perf_counter() - t0 < 5.0


def test_minibatches_from_the_pool_have_independent_batch_moments():
    """The minibatches built from the common pool (``_batches``) have ``Var ḡ_e = Var g_e/B``
    and ``E||ū||² = E||u||²/B`` (independent uniform complement directions): within 3 %."""
    from attnsignal.theory.effective import _batches, _gradient_pool

    pool = _gradient_pool(SMALL, np.array([0.1]), 20_000, 0)
    _, ge, u2 = _batches(pool, 4, SMALL.d - 2, 0)
    assert ge.var() == pytest.approx(pool[0, :, 1].var() / 4, rel=0.03)
    assert u2.mean() == pytest.approx(pool[0, :, 2].mean() / 4, rel=0.03)


def test_a_block_budget_bounds_the_evolution_with_one_line():
    """Small L with a large step: about one block per step. ``max_blocks`` stops the evolution
    with a ConfigError naming the field (no unbounded work); with room it changes nothing."""
    from attnsignal.theory.effective import BlockBudgetExceeded

    model = ModelConfig(d=10, n_informative=20, n_nuisance=60, theta=0.6)
    step = StepSize(eta0=0.03, k0=1000.0, power=1.0)
    with pytest.raises(BlockBudgetExceeded, match="max_blocks") as info:
        effective_dynamics(model, step, steps=2000, record_every=500, n_samples=300,
                           max_blocks=20)
    assert isinstance(info.value, ConfigError) and "\n" not in str(info.value)
    free = effective_dynamics(model, step, steps=40, record_every=10, n_samples=300)
    capped = effective_dynamics(model, step, steps=40, record_every=10, n_samples=300,
                                max_blocks=int(free.timings["blocks"]))
    np.testing.assert_array_equal(free.mean_abs, capped.mean_abs)


def test_a_step_whose_square_overflows_is_refused_not_a_frozen_law():
    """σ²η above 1e150: η² in the normalised moments would overflow, the drift turn NaN and
    the law stand still while looking finite; refused with one line naming the step."""
    model = ModelConfig(d=10, n_informative=20, n_nuisance=60, theta=0.6)
    with pytest.raises(ConfigError, match="step"):
        effective_dynamics(model, StepSize(eta0=1e300, k0=10.0, power=1.0), steps=10,
                           n_samples=200)


@pytest.mark.parametrize("model", [
    ModelConfig(d=100, n_informative=100, n_nuisance=2000, theta=0.25),  # E1's shape, smaller
    SMALL,
    ModelConfig(d=5, n_informative=6, n_nuisance=0, theta=0.7),           # no nuisance token
    ModelConfig(d=3, n_informative=1, n_nuisance=1, theta=0.6),            # D = 1: no χ'
    ModelConfig(d=50, n_informative=10, n_nuisance=200, theta=1.0, beta=8.0),  # peaked weights
    ModelConfig(d=20, n_informative=4, n_nuisance=60, theta=1.2, beta=3.0, signal_sign="random"),
], ids=["e1-shape", "small", "no-nuisance", "d3", "beta8", "random-sign"])
def test_pool_kernel_matches_the_reduced_sampler_draw_by_draw(model):
    """The compiled pool (nuisance tokens through their ρ-free moments, or one by one where
    that quadratic form would cancel) gives every draw's ``(g_q, g_e, ||u||²)`` of the
    literal vectorised sampler (``ReducedDraws.gradient``, docs/engines.md) on the same draws, at
    alignments from −0.9999 to 0.9999: each value to relative 1e-6 (the two differ by
    rounding only; at β = 8 without the one-by-one fallback some draws are off by 5 %)."""
    from attnsignal.theory.effective import _gradient_pool
    from attnsignal.theory.reduced import reduced_chunks

    std = model.standardized()
    rhos = np.tanh(np.linspace(-5.0, 5.0, 23))
    n = 150
    pool = _gradient_pool(std, rhos, n, 11)
    ref = np.empty_like(pool)
    pos = 0
    for draws in reduced_chunks(std, n, 11):
        k = draws.a.shape[0]
        for r, rho in enumerate(rhos):
            g = draws.gradient(float(rho))
            ref[r, pos:pos + k] = np.stack([g.g_q, g.g_e, g.u2], axis=1)
        pos += k
    np.testing.assert_allclose(pool, ref, rtol=1e-6, atol=0.0)
