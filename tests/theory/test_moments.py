"""The one-step moments (theory/moments.py): importance sampling of the largest score, standard
errors from the fourth moment, adaptive draws, replicate groups — and the moment table against
the chain engine on a seeded slice of ``benchmarks/one_step_accuracy.py``."""

from __future__ import annotations

import math

import numpy as np
import pytest

from attnsignal.config import ConfigError, ModelConfig
from attnsignal.one_step import chain_one_step, jump_moments
from attnsignal.theory.moments import moment_table, one_step_moments
from attnsignal.theory.reduced import ScoreTilt, reduced_chunks, score_tilt

#: a heavy-tailed jump at a small L: one score above the rest carries the variance
HEAVY = ModelConfig(d=400, n_informative=10, n_nuisance=300, theta=0.7, beta=1.3)


def test_tilt_weights_are_the_likelihood_ratio_of_the_mixture():
    """The compiled ``T(a)`` equals its definition draw by draw, ``E_φ[T] = 1`` (so the
    weights of the mixture's draws have mean 1 under it), the tilted token's score has the law
    ``N(μ, 1)`` beyond the floor, and the weights stay below ``1/λ₀``."""
    from scipy import stats
    from scipy.special import ndtr

    m = ModelConfig(d=50, n_informative=6, n_nuisance=30, theta=0.7, beta=1.1)
    tilt = score_tilt(m)
    rng = np.random.default_rng(3)
    a = rng.standard_normal((40_000, m.n_tokens))
    a[::7, 3] = tilt.draw(rng, a[::7].shape[0])  # some scores in the tails
    w = tilt.weights(a, 6)
    lam0 = 1.0 - tilt.share
    T = (1.0 / w - lam0) / tilt.share
    ref = np.zeros(40)
    for mu in tilt.shifts:
        e = np.where(a[:40] > tilt.floor, np.exp(mu * a[:40] - 0.5 * mu * mu), 0.0)
        e /= ndtr(mu - tilt.floor)
        ref += (0.5 * e[:, :6].mean(1) + 0.5 * e[:, 6:].mean(1)) / tilt.shifts.size
    np.testing.assert_allclose(T[:40], ref, rtol=1e-12)
    T_phi = (1.0 / tilt.weights(rng.standard_normal((200_000, m.n_tokens)), 6) - lam0) / tilt.share
    assert abs(T_phi.mean() - 1.0) < 4 * T_phi.std() / math.sqrt(T_phi.size)
    ws = np.concatenate([d.weight for d in reduced_chunks(m, 40_000, 5, tilt=tilt)])
    assert abs(ws.mean() - 1.0) < 4 * ws.std() / math.sqrt(ws.size)
    assert ws.max() <= 1.0 / lam0 + 1e-12
    one = ScoreTilt(tilt.share, tilt.shifts[2:3], tilt.floor, tilt.informative_share)
    x = one.draw(np.random.default_rng(1), 20_000)
    mu, c = float(tilt.shifts[2]), tilt.floor
    cdf = lambda v: (ndtr(v - mu) - ndtr(c - mu)) / ndtr(mu - c)  # noqa: E731
    assert x.min() > c and stats.kstest(x, cdf).pvalue > 0.01


def test_minibatch_tilt_keeps_the_batch_weight_bounded():
    """With ``B = 8`` one draw in 16 is tilted, so a minibatch's weight (the product of 8)
    stays below ``(1 − 1/16)^{−8} < 2``."""
    tilt = score_tilt(HEAVY, batch=8)
    assert tilt.share == pytest.approx(1 / 16)
    assert (1.0 - tilt.share) ** -8 < 2.0


def test_importance_sampling_leaves_a_light_tailed_estimate_unchanged():
    """At β = 0.5 (no heavy tail) the importance-sampled drift and variance agree with those of
    plain draws — the first-order ``ηΦ'`` control variate's estimate — within their errors."""
    m = ModelConfig(d=60, n_informative=20, n_nuisance=100, theta=0.6, beta=0.5)
    mo = one_step_moments(m, [0.3, 0.8], 0.05, n_samples=30_000, seed=1)
    rho_next = np.concatenate([chain_one_step(m, r, 0.05, runs=100_000, seed=2)[None]
                               for r in (0.3, 0.8)])
    for i, r in enumerate((0.3, 0.8)):
        jm = jump_moments(rho_next[i], r)
        se = math.hypot(jm.stderr_mean, float(mo.stderr_drift_z[i, 0]))
        assert abs(mo.drift_z[i, 0] - jm.mean) < 4 * se
        se_v = math.hypot(jm.stderr_var, float(mo.stderr_var_z[i, 0]))
        assert abs(mo.var_z[i, 0] - jm.var) < 4 * se_v


@pytest.mark.slow
def test_variance_and_its_standard_error_are_right_under_heavy_tails():
    """At ``HEAVY`` (jump kurtosis ≈ 100: plain draws would give the variance a relative error
    of ``√(κ/n)`` ≈ 16 % at 4 000 draws, not ``√(2/n)`` ≈ 2 %) the variance over six seeds of
    4 000 draws each: every estimate within 4 of its own standard errors of 400 000 chain
    runs' variance (the chain's SE from its fourth moment), and the seeds' spread not above
    2× the reported standard error."""
    rho, eta = 0.5, 1.5e-5  # half the step whose plateau stays above |ρ| = 0.5
    jm = jump_moments(chain_one_step(HEAVY, rho, eta, runs=400_000, seed=9), rho)
    assert jm.kurtosis > 50  # the regime this test is about
    est, se = [], []
    for seed in range(6):
        mo = one_step_moments(HEAVY, rho, eta, n_samples=4000, seed=seed)
        est.append(float(mo.var_z[0, 0]))
        se.append(float(mo.stderr_var_z[0, 0]))
        assert abs(est[-1] - jm.var) < 4 * math.hypot(se[-1], jm.stderr_var), (est, jm)
    assert np.std(est, ddof=1) < 2.0 * np.mean(se)


def test_adaptive_draws_reach_the_tolerance_or_report_the_bound():
    """``rtol`` adds draws until the variance's relative standard error is within it at every
    node; with ``max_samples`` too small the table says it did not converge."""
    m = ModelConfig(d=60, n_informative=10, n_nuisance=60, theta=0.8, beta=1.2)
    t = moment_table(m, 0.01, 0.03, z_max=1.0, n_samples=1000, rtol=0.03, max_samples=64_000)
    assert t.converged and t.n_samples > 1000
    assert np.all(t.stderr_b <= 0.03 * t.b)
    assert np.all(t.draws <= 64_000)
    capped = moment_table(m, 0.01, 0.03, z_max=1.0, n_samples=1000, rtol=0.001,
                          max_samples=2000)
    assert not capped.converged and capped.n_samples == 2000


def test_replicate_groups_are_disjoint_and_pool_to_the_table():
    """The ``K`` replicate tables come from disjoint groups of the draws: their mean is close
    to the pooled table (equal group sizes) and their spread is ``√K`` times the pooled
    standard error on average."""
    m = ModelConfig(d=40, n_informative=10, n_nuisance=40, theta=0.8)
    t = moment_table(m, 0.02, 0.05, z_max=1.0, n_samples=8000, rtol=None, replicates=8)
    assert t.replicate_b.shape == (8,) + t.b.shape
    np.testing.assert_allclose(t.replicate_b.mean(axis=0), t.b, rtol=0.02)
    ratio = t.replicate_b.std(axis=0, ddof=1) / (math.sqrt(8) * t.stderr_b)
    assert 0.6 < float(np.median(ratio)) < 1.5


def test_moment_table_refuses_bad_input_with_one_line():
    m = ModelConfig(d=40, n_informative=10, n_nuisance=40, theta=0.8)
    with pytest.raises(ConfigError, match="max_samples"):
        moment_table(m, 0.01, 0.02, n_samples=1000, max_samples=500)
    with pytest.raises(ConfigError, match="rtol"):
        moment_table(m, 0.01, 0.02, rtol=2.0)


# a seeded slice of benchmarks/one_step_accuracy.py: configuration c006 of the map's draw with
# seed 2727 (d=321, L=72, θ=0.72, β=1.81, B=8, projected) and c011 (d=581, L=38, θ=0.86,
# β=1.69, B=1, projected), at ρ = 0.5 and the larger step of the benchmark
@pytest.mark.slow
@pytest.mark.parametrize("index", [6, 11])
def test_moment_table_matches_the_chain_engine_one_step(index):
    """The table's interpolated drift within 4 combined standard errors and its variance
    within 5 % of 200 000 one-step chain runs from ρ = 0.5 (the chain's variance SE from its
    fourth moment, ≈ 1 %; the table's ≤ 1 % by ``rtol``)."""
    from attnsignal.theory.finite_step import largest_plateau_step
    from attnsignal.validate.box import draw_config

    c = draw_config(index, 2727)
    cap = largest_plateau_step(c.model, 0.5, c.batch, c.update, n_samples=20_000)
    eta = 0.5 * cap
    t = moment_table(c.model, 0.03 * cap, 0.8 * cap, batch=c.batch, update=c.update,
                     z_max=2.2, n_samples=4000, rtol=0.01, max_samples=1 << 18,
                     seed=1000 + index)
    z = math.atanh(0.5)
    m, _, v = (float(x[0]) for x in t.at(eta)(np.array([z])))
    se_m, se_v = (float(x[0]) for x in t.stderr_at(eta, np.array([z])))
    jm = jump_moments(chain_one_step(c.model, 0.5, eta, runs=200_000, batch=c.batch,
                                     update=c.update, seed=1002 + index), 0.5)
    assert abs(m - jm.mean) < 4 * math.hypot(se_m, jm.stderr_mean)
    assert math.hypot(se_v / v, jm.stderr_var / jm.var) < 0.02  # the check has power
    assert abs(v / jm.var - 1.0) < 0.05
