"""The one-step moments (theory/moments.py): importance sampling of the largest score, standard
errors from the fourth moment, adaptive draws, replicate groups — and the moment table against
the chain engine on a seeded slice of ``benchmarks/one_step_accuracy.py``."""

from __future__ import annotations

import math

import numpy as np
import pytest

from attnsignal.config import ConfigError, ModelConfig
from attnsignal.one_step import chain_one_step, jump_moments
from attnsignal.theory.moments import MomentTable, moment_table, one_step_moments
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
    4 000 draws each: every estimate within 4 of its own standard errors of 200 000 chain
    runs' variance (the chain's SE from its fourth moment), and the seeds' spread not above
    2× the reported standard error."""
    rho, eta = 0.5, 1.5e-5  # half the step whose plateau stays above |ρ| = 0.5
    jm = jump_moments(chain_one_step(HEAVY, rho, eta, runs=200_000, seed=9), rho)
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


def test_node_moments_are_what_the_local_interpolants_give_at_the_nodes():
    """``MomentTable.node_moments``: the drift and variance at the nodes are the values of
    ``at(η)``'s interpolants there — at one step for every node, and with a step per node
    (node ``i`` at ``η_i``, each its own ``at(η_i)``, and to the bit what the shared step
    ``η_i`` gives at node ``i``), steps outside the table clipped to it; for a spline in
    ``log η`` (4 steps and more) and a linear one (2 steps)."""
    m = ModelConfig(d=40, n_informative=10, n_nuisance=40, theta=0.8)
    t = moment_table(m, 0.02, 0.2, z_max=1.0, n_samples=300, rtol=None, replicates=0)
    two = MomentTable(t.z_nodes, t.etas[[0, -1]], t.a[:, [0, -1]], t.b[:, [0, -1]],
                      t.dphi_nodes, t.n_samples, t._dphi)
    rng = np.random.default_rng(3)
    for table in (t, two):
        assert table.etas.size in (2, t.etas.size) and t.etas.size >= 4
        z, lo, hi = table.z_nodes, math.log(table.etas[0]), math.log(table.etas[-1])
        eta = float(np.exp(0.3 * lo + 0.7 * hi))
        m_n, v_n = table.node_moments(eta)
        m_l, _, v_l = table.at(eta)(z)
        assert m_n.shape == v_n.shape == z.shape
        np.testing.assert_allclose(m_n, m_l, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(v_n, v_l, rtol=1e-12, atol=1e-15)
        etas = np.exp(rng.uniform(lo - 0.5, hi + 0.5, z.size))  # some outside: clipped
        m_n, v_n = table.node_moments(etas)
        own = [table.at(float(e))(z[i:i + 1]) for i, e in enumerate(etas)]
        np.testing.assert_allclose(m_n, [o[0][0] for o in own], rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(v_n, [o[2][0] for o in own], rtol=1e-12, atol=1e-15)
        shared = np.array([table.node_moments(float(e))[0][i] for i, e in enumerate(etas)])
        np.testing.assert_array_equal(m_n, shared)  # a step per node: the same arithmetic
        with pytest.raises(ValueError, match="one step per node"):
            table.node_moments(etas[:-1])


def test_the_second_control_has_the_exact_mean_of_g_q():
    """``E[g_q] = β ∂Φ/∂β`` (the objective depends on ``q`` through ``βq`` alone): the
    Chebyshev series of the quadrature's β-derivative against 40 000 importance-sampled draws,
    within 4 standard errors (the SE is 0.1 % of the mean: a derivative off by 0.5 % fails)."""
    from attnsignal.theory.moments import _gq_mean_std, _key
    from attnsignal.theory.reduced import fused_pool

    std = HEAVY.standardized()
    rh = np.array([-0.6, 0.0, 0.5, 0.95])
    pool, w, _ = fused_pool(std, rh, 40_000, _key(4, "test"), 0, score_tilt(std))
    W = w / w.sum()
    mean = (W * pool[..., 0]).sum(axis=1)
    se = np.sqrt((W ** 2 * (pool[..., 0] - mean[:, None]) ** 2).sum(axis=1))
    assert np.all(np.abs(mean - _gq_mean_std(std)(rh)) < 4.0 * se)
    assert _gq_mean_std(std.replace(beta=30.0)) is None  # no exact quadrature: one control


def test_the_power_sums_have_the_exact_means_of_their_quadrature():
    """``E Σα_j^k`` (``k = 2, 3, 4``; the drift's further controls) by the one-dimensional
    quadrature against 60 000 importance-sampled draws (the compiled pool's power sums, the
    tilt's weights), within 4 standard errors, each below 1.2 % of the mean (0.2 % for
    ``k = 2``, 1 % for ``k = 4`` at β = 1.3: a quadrature off by 5 % fails), for the fixed and
    the random sign; None where it cannot vouch for itself (β = 8)."""
    from attnsignal.theory.moments import _key, _power_sum_means_std
    from attnsignal.theory.reduced import fused_pool

    rh = np.array([-0.7, 0.0, 0.97])
    for m in (HEAVY, ModelConfig(d=20, n_informative=4, n_nuisance=60, theta=1.2, beta=2.0,
                                 signal_sign="random")):
        std = m.standardized()
        pool, w, _ = fused_pool(std, rh, 60_000, _key(8, "test"), 0, score_tilt(std),
                                powers=True)
        W = w / w.sum()
        p = pool[..., 3:6]
        mean = np.einsum("n,rnk->rk", W, p)
        se = np.sqrt(np.einsum("n,rnk->rk", W ** 2, (p - mean[:, None, :]) ** 2))
        exact = _power_sum_means_std(std)(rh)
        assert np.all(se < 0.012 * exact), se / exact
        assert np.all(np.abs(mean - exact) < 4.0 * se), (mean - exact) / se
    assert _power_sum_means_std(HEAVY.replace(beta=8.0).standardized()) is None


def test_drift_and_its_standard_error_are_the_five_control_estimator_literally():
    """The drift of ``Δz`` and its standard error equal, to round-off, a literal NumPy version
    of the estimator on the same draws: the weighted regression of ``Δz`` on the five centred
    controls ``ηḡ_e/s − ηΦ'``, ``ηḡ_q − ηβ∂_βΦ`` and ``Σα^k − E Σα^k`` (``k = 2, 3, 4``, the
    softmax weights at ``ρ`` of each draw), the intercept, and the influence-function SE
    ``√Σw²(r − r̄)²/Σw`` of the residual ``r`` — the SE of the estimator actually used."""
    from attnsignal.theory.moments import _dphi_std, _gq_mean_std, _key, _power_sum_means_std
    from attnsignal.theory.reduced import fused_pool

    rhos, etas, n = np.array([0.3, 0.7]), np.array([0.01, 0.05]), 3000
    mo = one_step_moments(HEAVY, rhos, etas, n_samples=n, seed=5)
    std = HEAVY.standardized()
    pool, w, draws = fused_pool(std, rhos, n, _key(5, "moment draws", 0), 0, score_tilt(std),
                                keep=True)
    dphi, gqm = _dphi_std(HEAVY)(rhos), _gq_mean_std(std)(rhos)
    pm = _power_sum_means_std(std)(rhos)
    W = w / w.sum()
    R = std.n_informative
    for i, rho in enumerate(rhos):
        s = math.sqrt(1.0 - rho * rho)
        gq, ge, u2 = pool[i, :, 0], pool[i, :, 1], pool[i, :, 2]
        sc = draws.a.copy()
        sc[:, :R] += std.theta * rho
        x = std.beta * sc
        al = np.exp(x - x.max(axis=1, keepdims=True))
        al /= al.sum(axis=1, keepdims=True)
        ps = [np.sum(al ** k, axis=1) - pm[i, j] for j, k in enumerate((2, 3, 4))]
        for j, eta in enumerate(etas):
            a, e = 1.0 + eta * gq, eta * ge
            dz = np.arctanh((rho * a + s * e) / np.sqrt(a * a + e * e + eta * eta * u2)) \
                - math.atanh(rho)
            X = np.column_stack([np.ones(n), e / s - eta * dphi[i], eta * (gq - gqm[i])] + ps)
            sw = np.sqrt(W)
            coef = np.linalg.lstsq(X * sw[:, None], dz * sw, rcond=None)[0]
            r = dz - X[:, 1:] @ coef[1:]
            rbar = float(W @ r)
            se = math.sqrt(float(np.sum(W ** 2 * (r - rbar) ** 2)))
            assert mo.drift_z[i, j] == pytest.approx(coef[0], rel=1e-7, abs=1e-14)
            assert mo.stderr_drift_z[i, j] == pytest.approx(se, rel=1e-6)


def test_moment_table_refuses_bad_input_with_one_line():
    m = ModelConfig(d=40, n_informative=10, n_nuisance=40, theta=0.8)
    with pytest.raises(ConfigError, match="max_samples"):
        moment_table(m, 0.01, 0.02, n_samples=1000, max_samples=500)
    with pytest.raises(ConfigError, match="rtol"):
        moment_table(m, 0.01, 0.02, rtol=2.0)


# a seeded slice of benchmarks/one_step_accuracy.py: configuration c011 of the map's draw with
# seed 2727 (d=581, L=38, θ=0.86, β=1.69, B=1, projected; the heavy-tailed corner at a size the
# test budget allows), at ρ = 0.5 and the benchmark's two steps, against fewer chain runs
@pytest.mark.slow
def test_moment_table_matches_the_chain_engine_one_step():
    """The table's interpolated drift within 4 combined standard errors of 60 000 one-step
    chain runs from ρ = 0.5, and its variance within 4 combined standard errors (the chain's
    from its fourth moment, ≈ 2 % at this run count; the table's ≤ 2 % by ``rtol``) — at most
    12 %, so that the check has power against the 20–60 % errors of plain draws."""
    from attnsignal.theory.finite_step import largest_plateau_step
    from attnsignal.validate.box import draw_config

    c = draw_config(11, 2727)
    cap = largest_plateau_step(c.model, 0.5, c.batch, c.update, n_samples=20_000)
    t = moment_table(c.model, 0.03 * cap, 0.8 * cap, batch=c.batch, update=c.update,
                     z_max=1.0, n_samples=4000, rtol=0.02, max_samples=1 << 16, seed=11)
    z = math.atanh(0.5)
    for i, eta in enumerate((0.05 * cap, 0.5 * cap)):
        m, _, v = (float(x[0]) for x in t.at(eta)(np.array([z])))
        se_m, se_v = (float(x[0]) for x in t.stderr_at(eta, np.array([z])))
        jm = jump_moments(chain_one_step(c.model, 0.5, eta, runs=60_000, batch=c.batch,
                                         update=c.update, seed=12 + i), 0.5)
        assert abs(m - jm.mean) < 4 * math.hypot(se_m, jm.stderr_mean), (eta, m, jm)
        se_ratio = math.hypot(se_v / v, jm.stderr_var / jm.var)
        assert se_ratio < 0.03, se_ratio  # the check has power
        assert abs(v / jm.var - 1.0) < 4 * se_ratio, (eta, v, jm)


def test_the_step_in_z_is_artanh_of_the_update_to_full_precision():
    """``_z_after`` (one logarithm, the smaller of ``den ± num`` from ``(s·a₁ − ρe_g)² + c₂``)
    against ``artanh ρ' − z`` in 50-digit decimal arithmetic from the exact ``ρ = tanh z``: at
    every node at least as close as ``artanh`` of the rounded ratio ``num/den``, within 1e-14
    up to ``|z| = 2``, 1e-11 at ``|z| = 5`` (the rounding of ``ρ`` itself: ``1 − |ρ|`` is
    ~1e-4 there) and 2e-9 near ``|z| = 9``."""
    from decimal import Decimal, getcontext

    from attnsignal.theory.moments import _LIM, _z_after

    getcontext().prec = 50
    rng = np.random.default_rng(5)
    for z0 in (-8.9, -5.0, -2.0, 0.0, 0.7, 5.0, 8.9):
        Z = Decimal(z0)
        e2 = (2 * Z).exp()
        rho_d, s_d = (e2 - 1) / (e2 + 1), 2 * Z.exp() / (e2 + 1)
        rho = math.tanh(z0)
        s = math.sqrt(max(0.0, 1.0 - rho * rho))
        err_new = err_old = 0.0
        for _ in range(100):
            eta = 10.0 ** rng.uniform(-3, -0.5)
            a1 = 1.0 + eta * rng.normal(0, 3)
            eg = eta * rng.normal(0, 3)
            c2 = eta * eta * rng.chisquare(3) * 10.0 ** rng.uniform(-4, 1)
            num = rho * a1 + s * eg
            den = math.sqrt(a1 * a1 + eg * eg + c2)
            dn = rho_d * Decimal(a1) + s_d * Decimal(eg)
            dd = (Decimal(a1) ** 2 + Decimal(eg) ** 2 + Decimal(c2)).sqrt()
            exact = float(((dd + dn) / (dd - dn)).ln() / 2 - Z)
            err_new = max(err_new, abs(_z_after(rho, s, a1, eg, c2, num, den) - z0 - exact))
            err_old = max(err_old, abs(math.atanh(min(max(num / den, -_LIM), _LIM)) - z0
                                       - exact))
        assert err_new <= err_old + 1e-15, (z0, err_new, err_old)
        assert err_new <= (1e-14 if abs(z0) <= 2 else 1e-11 if abs(z0) <= 5 else 2e-9), (
            z0, err_new, err_old)


def test_parallel_sections_finish_before_an_error_propagates_and_nest_inline():
    """``_in_threads`` on its persistent pool: every call has run when the first exception
    propagates, and a section started from one of the pool's threads runs there in turn
    (no wait on its own pool)."""
    import threading

    from attnsignal.theory.reduced import _in_threads

    done = []
    lock = threading.Lock()

    def fails_first(i: int) -> None:
        if i == 0:
            raise ValueError("first")
        with lock:
            done.append(i)

    with pytest.raises(ValueError, match="first"):
        _in_threads(fails_first, 6)
    assert sorted(done) == [1, 2, 3, 4, 5]
    inner = np.zeros((4, 4))

    def outer(i: int) -> None:
        def cell(j: int) -> None:
            inner[i, j] = i * 4 + j
        _in_threads(cell, 4)

    _in_threads(outer, 4)
    assert np.array_equal(inner.ravel(), np.arange(16.0))


def test_a_forked_child_makes_its_own_compute_pool():
    """After the parent has used its persistent pool, a forked child (multiprocessing's default
    on Linux; its copy of the pool has no threads) runs parallel sections on a pool of its own
    instead of waiting for ever."""
    import os
    import signal
    import time

    from attnsignal.theory.reduced import _in_threads

    hits = np.zeros(4)
    _in_threads(lambda i: hits.__setitem__(i, 1.0), 4)
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            got = np.zeros(4)
            _in_threads(lambda i: got.__setitem__(i, 1.0), 4)
            os._exit(0 if got.sum() == 4 else 1)
        finally:
            os._exit(2)
    deadline = time.monotonic() + 30.0
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail("the forked child's parallel section did not finish")
        time.sleep(0.01)
    assert hits.sum() == 4 and os.waitstatus_to_exitcode(status) == 0
