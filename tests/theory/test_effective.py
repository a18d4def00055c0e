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
def test_one_step_drift_and_variance_match_long_chain(update, batch):
    """E[Δρ] and Var[Δρ] of one step from ρ = 0.4 at η = 0.3: the control-variate estimate
    against 40 000 one-step runs of the chain engine (:func:`~attnsignal.one_step.
    chain_one_step`, the engine's own update from the point mass; within 4 combined SE); the
    test resolves the finite step — the first-order drift ``η(1 − ρ²)Φ'`` is rejected."""
    from attnsignal.one_step import chain_one_step

    rho, eta, n = 0.4, 0.3, 40_000
    mom = one_step_moments(SMALL, rho, eta, batch=batch, update=update, n_samples=10_000)
    rho_next = chain_one_step(SMALL, rho, eta, runs=n, batch=batch, update=update, seed=11)
    dr = rho_next - rho
    se = math.hypot(dr.std(ddof=1) / math.sqrt(n), float(mom.stderr_drift_rho[0, 0]))
    assert abs(mom.drift_rho[0, 0] - dr.mean()) < 4 * se
    first = eta * float(asg.vector_field(SMALL, rho))
    assert abs(first - dr.mean()) > 6 * se
    v = dr.var(ddof=1)
    se_v = v * math.sqrt(2.0 / n) * 2  # kurtosis allowance
    assert abs(mom.var_rho[0, 0] - v) < 4 * se_v
    dz = np.arctanh(rho_next) - np.arctanh(rho)
    se_z = math.hypot(dz.std(ddof=1) / math.sqrt(n), float(mom.stderr_drift_z[0, 0]))
    assert abs(mom.drift_z[0, 0] - dz.mean()) < 4 * se_z
    assert mom.var_z[0, 0] == pytest.approx(dz.var(ddof=1), rel=0.05)


@pytest.fixture(scope="module")
def small_chain(chain_simulate):
    """1 200 chain runs of 1 500 steps of SMALL from a uniform start (projected, B = 1): the
    simulated mean's standard error (up to 0.005) well below the 0.01 allowed, so that the
    effective dynamics' own bias here (about 0.005, measured on 4 000 runs) leaves room for
    the 3 SE of the largest of 21 correlated records."""
    return chain_simulate(SMALL, STEP, steps=1500, runs=1200, seed=5, record_every=75)


def _fixed_table(steps: int, **kw):
    """The moment table of ``SMALL`` over ``STEP``'s first ``steps`` steps with 48 000 draws at
    every node — what the default tolerance loop (from 3 000 draws) adds at the nodes these
    laws visit — and no replicates: the band tests compare the prediction, not its SE, so one
    evolution of the pooled table is the whole cost."""
    from attnsignal.theory.moments import moment_table

    return moment_table(SMALL, STEP.eta(steps - 1), STEP.eta(0), n_samples=48_000, rtol=None,
                        replicates=0, **kw)


@pytest.fixture(scope="module")
def small_table():
    return _fixed_table(1500)


@pytest.mark.slow
def test_mean_and_band_match_chain(small_chain, small_table):
    """Predicted mean |ρ| within 0.01 + 3 SE of 1 200 chain runs at every record, and the
    10–90 % band holds 80 ± 8 % of the (run, record) pairs after the first 5 % of the run."""
    ed = effective_dynamics(SMALL, STEP, steps=1500, record_every=75, moments=small_table,
                            tolerance=None)
    excess, gap, cover = _band_stats(ed, small_chain)
    assert excess <= 0.01, (gap, cover)
    assert 0.72 <= cover <= 0.88, (gap, cover)


@pytest.mark.slow
def test_zero_diffusion_is_rejected_by_the_band_test(small_chain, small_table):
    """The same comparison with the diffusion switched off (the mean-field flow of the
    uniform start's law): the band no longer holds 80 ± 8 % of the runs."""
    ed = effective_dynamics(SMALL, STEP, steps=1500, record_every=75, moments=small_table,
                            tolerance=None, diffusion_scale=0.0)
    _, _, cover = _band_stats(ed, small_chain)
    assert not 0.72 <= cover <= 0.88, cover


@pytest.mark.slow
def test_riemannian_minibatch_match_chain(chain_simulate):
    """The riemannian update with minibatches of B = 4: mean |ρ| within 0.01 + 3 SE and the
    10–90 % band against 400 chain runs."""
    ed = effective_dynamics(SMALL, STEP, steps=1000, batch=4, update="riemannian",
                            record_every=50, tolerance=None,
                            moments=_fixed_table(1000, batch=4, update="riemannian"))
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
    """B = 3 000 needs ≈ 0.9 TB of per-chunk minibatch arrays: one ConfigError naming ``batch``,
    raised in well under the time one draw of the pool would take (the check runs first, in
    effective_dynamics itself, not only in the command line's pre-check)."""
    import time

    def no_pool(*a, **k):  # reaching the pool means the check came too late
        raise AssertionError("the gradient pool was drawn")

    import attnsignal.theory.moments as mom

    monkeypatch.setattr(mom, "_gradient_pool", no_pool)
    monkeypatch.setattr(mom, "_accumulate", no_pool)
    t0 = time.perf_counter()
    with pytest.raises(ConfigError, match=r"^batch: must keep the one-step moments' minibatches"):
        effective_dynamics(SMALL, STEP, steps=10, batch=3000)
    assert time.perf_counter() - t0 < 5.0


def test_minibatches_from_the_pool_have_independent_batch_moments():
    """The minibatches built from the common pool (``_batches``) have ``Var ḡ_e = Var g_e/B``
    and ``E||ū||² = E||u||²/B`` (independent uniform complement directions): within 3 %."""
    from attnsignal.theory.moments import _batches, _gradient_pool

    pool, _ = _gradient_pool(SMALL, np.array([0.1]), 20_000, 0)
    _, ge, u2 = _batches(pool, 4, SMALL.d - 2, 0)
    assert ge.var() == pytest.approx(pool[0, :, 1].var() / 4, rel=0.03)
    assert u2.mean() == pytest.approx(pool[0, :, 2].mean() / 4, rel=0.03)


def test_a_block_budget_bounds_the_evolution_with_one_line():
    """Small L with a large step: about one block per step. ``max_blocks`` stops the evolution
    with one line naming the field (no unbounded work) — a RuntimeError, not a ConfigError: the
    input was valid; with room it changes nothing."""
    from attnsignal.theory.effective import BlockBudgetExceeded

    model = ModelConfig(d=10, n_informative=20, n_nuisance=60, theta=0.6)
    step = StepSize(eta0=0.03, k0=1000.0, power=1.0)
    with pytest.raises(BlockBudgetExceeded, match="max_blocks") as info:
        effective_dynamics(model, step, steps=2000, record_every=500, n_samples=300,
                           max_blocks=20)
    assert isinstance(info.value, RuntimeError) and not isinstance(info.value, ConfigError)
    assert "\n" not in str(info.value) and info.value.max_blocks == 20
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
    that quadratic form would cancel), drawing and evaluating each sample without storing it
    (``fused_pool``, with the score tilt), gives every draw's ``(g_q, g_e, ||u||²)`` of the
    literal vectorised sampler (``ReducedDraws.gradient``) on the same draws, at alignments
    from −0.9999 to 0.9999: each value to relative 1e-6, or 1e-9 of the largest of its kind
    at that ρ where it is a rounding residue (the two differ by rounding only; at β = 8
    without the one-by-one fallback some draws are off by 5 %); the weights are the tilt's
    likelihood ratios of those draws; ``ReducedDraws.gradients`` agrees as well; and with the
    softmax weights' power sums the gradients are the same and ``Σα^k`` (``k = 2, 3, 4``) that
    of the literal softmax, to relative 1e-10."""
    from attnsignal.theory.moments import _key
    from attnsignal.theory.reduced import fused_pool, score_tilt

    std = model.standardized()
    rhos = np.tanh(np.linspace(-5.0, 5.0, 23))
    n = 150
    tilt = score_tilt(std)
    pool, w, draws = fused_pool(std, rhos, n, _key(11), 0, tilt, keep=True)
    ref = np.empty_like(pool)
    for r, rho in enumerate(rhos):
        g = draws.gradient(float(rho))
        ref[r] = np.stack([g.g_q, g.g_e, g.u2], axis=1)
    floor = 1e-9 * np.abs(ref).max(axis=1, keepdims=True)
    assert np.all(np.abs(pool - ref) <= 1e-6 * np.abs(ref) + floor)
    np.testing.assert_allclose(w, tilt.weights(draws.a, std.n_informative), rtol=1e-12)
    assert np.all(np.abs(draws.gradients(rhos) - ref) <= 1e-6 * np.abs(ref) + floor)
    # the stream: draw i depends on (key, i) only
    part, _, _ = fused_pool(std, rhos, 50, _key(11), 100, tilt)
    np.testing.assert_array_equal(part, pool[:, 100:150])
    # with the softmax weights' power sums: the same gradients, and Σα^k (k = 2, 3, 4) of the
    # literal softmax of each draw at each ρ
    six, _, _ = fused_pool(std, rhos, n, _key(11), 0, tilt, powers=True)
    np.testing.assert_array_equal(six[..., :3], pool)
    R = std.n_informative
    for r, rho in enumerate(rhos):
        sc = draws.a.copy()
        sc[:, :R] += (draws.eps * std.theta * rho)[:, None]
        x = std.beta * sc
        al = np.exp(x - x.max(axis=1, keepdims=True))
        al /= al.sum(axis=1, keepdims=True)
        for j, k in enumerate((2, 3, 4)):
            np.testing.assert_allclose(six[r, :, 3 + j], np.sum(al ** k, axis=1), rtol=1e-10)


def test_compiled_interpolants_are_the_tables_splines():
    """The evolution's compiled drift, its slope and the diffusion (``_local`` on ``_Poly``)
    equal :meth:`MomentTable.at`'s splines at random ``(z, η)``, to rounding."""
    from attnsignal.theory.effective import _local, _Poly, _table_at
    from attnsignal.theory.moments import moment_table

    t = moment_table(SMALL, 0.01, 0.05, z_max=2.0, n_samples=500, rtol=None, replicates=0)
    poly = _Poly.of(t)
    rng = np.random.default_rng(0)
    n = poly.zop.shape[2]
    Ca, Cb = np.empty((4, n - 1)), np.empty((4, n - 1))
    for _ in range(20):
        eta = float(np.exp(rng.uniform(np.log(0.01), np.log(0.05))))
        z = float(rng.uniform(-2.0, 2.0))
        _table_at(poly.ca, poly.le0, poly.dle, math.log(eta), poly.zop, Ca)
        _table_at(poly.cb, poly.le0, poly.dle, math.log(eta), poly.zop, Cb)
        got = _local(z, eta, Ca, Cb, poly.zn0, poly.dzn, poly.cf, poly.zf0, poly.dzf, -2.0, 2.0)
        want = [float(x[0]) for x in t.at(eta)(np.array([z]))]
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-15)


@pytest.mark.parametrize("sig_over_h", [0.3, 1.0, 2.5, 12.0])
def test_deposit_keeps_the_mean_and_variance(sig_over_h):
    """A node's deposit on the grid has the node's mean, and its variance as node masses:
    wide (sampled Gaussian, from ``σ = 2h`` on) to 1e-6; narrow (hat kernel after subtracting
    its variance ``h²/6``: second differences of ``E(Y − x)⁺``) within 2 % — the hat adds
    ``E[(Y − z_l)(z_r − Y)]``, which is ``h²/6`` only when ``Y`` spreads over its cell."""
    from attnsignal.theory.effective import _deposit_kernel

    h = 0.01
    z = np.arange(-400, 401) * h
    var = (sig_over_h * h) ** 2 + h * h / 6.0
    out = np.zeros(z.size)
    _deposit_kernel(np.array([1.0]), np.array([0.0123]), np.array([var]), float(z[0]), h, out)
    assert out.sum() == pytest.approx(1.0, abs=1e-12)
    mean = float(out @ z)
    assert mean == pytest.approx(0.0123, abs=1e-9)
    assert float(out @ (z - mean) ** 2) == pytest.approx(var, rel=1e-6 if sig_over_h >= 2 else 0.02)


def test_the_standard_error_covers_the_seed_to_seed_spread():
    """Five moment seeds at SMALL with few draws: the spread of the predicted mean |ρ| over the
    seeds agrees with the reported Monte-Carlo standard error (ratio within [0.4, 2.5] at the
    last record; with 4 degrees of freedom the ratio's 95 % range is about [0.35, 1.9]) — a
    seeded slice of ``benchmarks/effective_mc_error.py`` (16 seeds at three configurations)."""
    preds, ses = [], []
    for seed in range(5):
        ed = effective_dynamics(SMALL, STEP, steps=300, record_every=100, n_samples=1000,
                                seed=seed, rtol=None, tolerance=None)
        preds.append(ed.mean_abs[-1])
        ses.append(ed.mean_abs_stderr[-1])
    ratio = np.std(preds, ddof=1) / np.sqrt(np.mean(np.square(ses)))
    assert 0.4 < ratio < 2.5, (preds, ses)


def test_accuracy_warning_names_the_cause_and_strict_raises():
    """Few draws and no room for more: the predicted error exceeds a tight tolerance; the
    warning (an ``EffectiveDynamicsAccuracyWarning``) and, with ``strict``, the exception carry
    the same one line naming the cause; ``tolerance=None`` checks nothing."""
    from attnsignal.theory.effective import (EffectiveDynamicsAccuracyError,
                                             EffectiveDynamicsAccuracyWarning)

    kw = dict(steps=300, record_every=100, n_samples=400, max_samples=400, rtol=None)
    with pytest.warns(EffectiveDynamicsAccuracyWarning) as rec:
        ed = effective_dynamics(SMALL, STEP, tolerance=1e-4, **kw)
    msg = str(rec[0].message)
    assert ed.diagnostic.verdict == "flagged" and msg == ed.diagnostic.message
    assert "\n" not in msg and "Monte-Carlo" in msg
    assert ed.diagnostic.predicted_error > 1e-4
    with pytest.raises(EffectiveDynamicsAccuracyError) as info:
        effective_dynamics(SMALL, STEP, tolerance=1e-4, strict=True, **kw)
    assert str(info.value) == msg
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        quiet = effective_dynamics(SMALL, STEP, tolerance=None, **kw)
    assert quiet.diagnostic.verdict == "ok" and np.all(quiet.mean_abs_stderr[1:] > 0)


def test_draws_are_added_until_the_monte_carlo_error_fits_the_tolerance():
    """With a tolerance the draws grow (within ``max_samples``) until the Monte-Carlo error of
    the prediction takes at most half of it — or the bound is reached, and the diagnostic says
    so."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ed = effective_dynamics(SMALL, STEP, steps=120, record_every=40, n_samples=500,
                                max_samples=64_000, rtol=None, tolerance=0.02)
    d = ed.diagnostic
    assert d.draws > 500
    assert d.mc_error <= 0.01 or d.draws == 64_000


def test_within_tolerance_adds_draws_only_where_the_law_goes():
    """The one tolerance rule, for a shared table (the advisor's, the map's): the draws grow
    at the moment nodes the law visits alone — the others keep their starting draws — until
    the Monte-Carlo error takes at most half of the tolerance or the draws reach
    ``max_samples``; a tolerance of None evolves once and adds nothing."""
    import warnings

    from attnsignal.theory.effective import moment_table, visited_nodes, within_tolerance

    table = moment_table(SMALL, 0.01, 0.05, n_samples=400, seed=2, rtol=None,
                         max_samples=25_600, z_max=3.0)
    calls = []

    def evolve(t):
        calls.append(t)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return effective_dynamics(SMALL, STEP, steps=120, record_every=40, moments=t,
                                      tolerance=0.02)

    ed, final = within_tolerance(evolve, table, None)
    assert final is table and len(calls) == 1
    ed, final = within_tolerance(evolve, table, 0.02)
    visited = visited_nodes(final, ed.law, ed.z_grid)
    assert len(calls) > 2 and not np.all(visited)
    assert np.all(final.draws[~visited] == 400) and np.all(final.draws[visited] > 400)
    assert ed.diagnostic.mc_error <= 0.01 or final.draws.max() == 25_600


def test_the_approximation_error_follows_the_dropped_cumulants():
    """The diffusion approximation's estimated error is linear in the one-step jump's skewness
    and excess kurtosis: doubling both doubles it, zero (Gaussian jumps) gives 0, and a large
    one flags the prediction naming it — while the prediction itself stays bit-identical (the
    estimate reads the table's shape statistics, the evolution does not)."""
    import dataclasses
    import warnings

    kw = dict(steps=200, record_every=100, n_samples=400, rtol=None, replicates=2)
    base = effective_dynamics(SMALL, STEP, tolerance=None, **kw)
    t = base.moments

    def with_shape(f, tolerance=None):
        tab = dataclasses.replace(t, skewness=f * t.skewness,
                                  excess_kurtosis=f * t.excess_kurtosis)
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            ed = effective_dynamics(SMALL, STEP, moments=tab, tolerance=tolerance, **kw)
        np.testing.assert_array_equal(ed.mean_abs, base.mean_abs)
        return ed.diagnostic, seen

    d1, _ = with_shape(1.0)
    assert 0 < d1.approximation_error < 0.04
    assert with_shape(2.0)[0].approximation_error == pytest.approx(2 * d1.approximation_error,
                                                                   rel=1e-9)
    assert with_shape(0.0)[0].approximation_error == 0.0
    big, seen = with_shape(0.5 / d1.approximation_error, tolerance=0.2)
    assert big.verdict == "flagged" and big.predicted_error >= big.approximation_error > 0.2
    assert any("diffusion approximation's error" in c for c in big.causes) and seen


def test_the_discreteness_error_is_the_flow_against_the_discrete_step():
    """Where single steps shape the law, the evolution's flow over a one-step block is not the
    chain's discrete step; the diagnostic's ``discreteness_error`` estimates what that costs
    the mean |ρ|. Checked against Gaussian jumps with the table's own moments simulated one
    discrete step at a time (the same moments, so only the discreteness and the grid differ):
    within a factor 2 of their largest difference, which is many particle SEs."""
    import warnings

    step = StepSize(eta0=0.6, k0=100.0, power=0.75)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ed = effective_dynamics(SMALL, step, steps=60, record_every=20, n_samples=1000,
                                rtol=None, replicates=2, seed=1, tolerance=0.01)
    d = ed.diagnostic
    assert d.single_step_blocks == d.blocks == 60
    rng = np.random.default_rng(3)
    n = 20_000
    g = rng.standard_normal((n, SMALL.d))
    z = np.arctanh(g[:, 0] / np.linalg.norm(g, axis=1))
    etas = step.eta(np.arange(60))
    gap = []
    for k in range(60):
        m, _, v = ed.moments.at(float(etas[k]))(z)[:3]
        z = z + m + np.sqrt(np.maximum(v, 0.0)) * rng.standard_normal(n)
        if (k + 1) % 20 == 0:
            a = np.abs(np.tanh(z))
            gap.append(abs(ed.mean_abs[(k + 1) // 20] - a.mean()))
            assert a.std() / math.sqrt(n) < 0.15 * d.discreteness_error
    assert 0.5 * max(gap) <= d.discreteness_error <= 2.0 * max(gap)
    assert d.approximation_error >= d.discreteness_error > 0


def test_pooled_law_is_effective_dynamics_on_the_pooled_table():
    """The advisor's fast path (pooled moments only, no replicates, no diagnostic) gives the
    same records, grid, law and mean |ρ| to the bit as the full effective dynamics on the
    table without its replicates, from a uniform start and from a point mass."""
    import dataclasses

    from attnsignal.theory.effective import moment_table, pooled_law

    model = ModelConfig(d=30, n_informative=6, n_nuisance=14, theta=0.8)
    step = StepSize(eta0=0.05, k0=100.0, power=0.8)
    table = moment_table(model, 0.01, 0.05, n_samples=200, seed=3, replicates=4, rtol=None)
    bare = dataclasses.replace(table, replicate_a=None, replicate_b=None)
    rec = [0, 3, 10, 40, 200]
    for rho0 in (None, -0.3):
        ed = effective_dynamics(model, step, steps=rec[-1], record=rec, moments=bare,
                                initial_alignment=rho0, tolerance=None)
        ks, z, law, mean_abs = pooled_law(model, step, table, rec, initial_alignment=rho0)
        assert np.array_equal(ks, ed.steps) and np.array_equal(z, ed.z_grid)
        assert np.array_equal(law, ed.law) and np.array_equal(mean_abs, ed.mean_abs)


def test_refined_table_matches_the_built_one_and_keeps_its_scope():
    """``refine_table`` over every node continues the same stream as ``moment_table`` with
    ``rtol`` (the same table to the bit); over a few nodes it adds draws there alone and says
    whether those met ``rtol``."""
    from attnsignal.theory.moments import moment_table, refine_table

    model = ModelConfig(d=30, n_informative=6, n_nuisance=14, theta=0.8, beta=1.5)
    kw = dict(n_samples=200, seed=5, replicates=4, z_max=3.0)
    built = moment_table(model, 0.01, 0.05, rtol=0.05, **kw)
    start = moment_table(model, 0.01, 0.05, rtol=None, **kw)
    every = refine_table(start, np.ones(start.z_nodes.size, dtype=bool), 0.05)
    for f in ("a", "b", "replicate_a", "replicate_b", "draws", "stderr_b"):
        assert np.array_equal(getattr(every, f), getattr(built, f)), f
    assert every.converged == built.converged
    scope = np.abs(start.z_nodes) <= 0.5
    some = refine_table(start, scope, 0.05)
    assert np.all(some.draws[~scope] == start.draws[~scope])
    assert np.all(some.draws[scope] >= start.draws[scope])


def test_a_flag_inside_the_tolerance_says_its_estimate_is_unreliable_not_exceeded():
    """A verdict flagged for unconverged moments while the predicted error is under the
    tolerance must not read "0.007 may exceed 0.01" (a contradiction); one above it must."""
    from attnsignal.theory.effective import Diagnostic

    cause = "the one-step moments did not reach rtol = 0.03 within 4800 draws a node"
    base = dict(verdict="flagged", causes=(cause,), tolerance=0.01, stderr=np.zeros(2),
                mc_error=0.005, approximation_error=0.002, blocks=10, single_step_blocks=0,
                jump_to_width=0.01, jump_skewness=0.1, jump_kurtosis=0.2, draws=4800,
                converged=False)
    inside = Diagnostic(predicted_error=0.007, **base).message
    assert "within tolerance 0.01" in inside and "not reliable" in inside and cause in inside
    assert "may exceed" not in inside
    above = Diagnostic(predicted_error=0.02, **base).message
    assert "may exceed tolerance 0.01" in above and cause in above


def test_a_first_pass_that_stands_is_the_fine_evolution():
    """With a tolerance, the first pass evolves the pooled table on the replicates' wider blocks
    (its law only says where draws are needed); where no draws follow it, the prediction is
    still the pooled table's fine evolution: bit for bit the call without a tolerance (law, mean
    ``|ρ|``, its standard errors, the block counts)."""
    kw = dict(steps=200, record_every=50, n_samples=500, rtol=None)
    a = effective_dynamics(SMALL, STEP, tolerance=1.0, **kw)
    b = effective_dynamics(SMALL, STEP, tolerance=None, **kw)
    np.testing.assert_array_equal(a.moments.draws, b.moments.draws)  # no draws were added
    np.testing.assert_array_equal(a.law, b.law)
    np.testing.assert_array_equal(a.mean_abs, b.mean_abs)
    np.testing.assert_array_equal(a.mean_abs_stderr, b.mean_abs_stderr)
    assert a.timings["blocks"] == b.timings["blocks"]


def test_replicates_on_coarser_blocks_keep_the_standard_error(monkeypatch):
    """The replicate tables are evolved on blocks twice as wide (and sub-blocks of 5 % in
    ``η``) as the pooled one: their spread — the reported Monte-Carlo error — agrees with the
    same replicates evolved on the pooled table's blocks within 5 % at every record (a
    discretisation error common to them does not enter it), and the pooled prediction is the
    same evolution either way."""
    import attnsignal.theory.effective as eff

    ed = effective_dynamics(SMALL, STEP, steps=200, record_every=50, n_samples=500,
                            rtol=None, tolerance=None)
    z, h = ed.z_grid, float(ed.z_grid[1] - ed.z_grid[0])
    p = eff._initial_law(z, h, SMALL.d, None)
    etas = eff.schedule_etas(STEP, np.arange(200))
    coarse = eff._evolve_all(ed.moments, p, z, h, etas, ed.steps, 1.0, None, 200)
    monkeypatch.setattr(eff, "_REPLICATE_BLOCK_SD", eff._BLOCK_SD)
    monkeypatch.setattr(eff, "_REPLICATE_ETA_CHANGE", eff._ETA_CHANGE)
    fine = eff._evolve_all(ed.moments, p, z, h, etas, ed.steps, 1.0, None, 200)
    assert np.array_equal(coarse.mean_abs, fine.mean_abs)
    assert np.all(coarse.se_abs[1:] > 0)
    np.testing.assert_allclose(coarse.se_abs[1:], fine.se_abs[1:], rtol=0.05)
