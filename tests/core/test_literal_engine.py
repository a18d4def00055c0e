"""The literal engine against an independent per-sample implementation, seeding, divergence."""

import numpy as np
import pytest
from scipy import stats

import attnsignal as asg
from attnsignal.engines import get_engine
from attnsignal.engines.base import run_seeds


def _reference_rho(model, step, steps, runs, batch, update, rho0, seed, broken=False):
    """Straightforward loop: one run at a time, one sample at a time, loops over tokens."""
    rng = np.random.default_rng(seed)
    d, R, L, th, be, sg = (model.d, model.n_informative, model.n_tokens, model.theta,
                           model.beta, model.noise_std)
    out = np.empty(runs)
    for r in range(runs):
        u = rng.standard_normal(d - 1)
        u /= np.linalg.norm(u)
        q = np.concatenate([[rho0], np.sqrt(1 - rho0**2) * u])
        for k in range(steps):
            eta = step.eta0 * (1 + k / step.k0) ** (-step.power)
            G = np.zeros(d)
            for _ in range(batch):
                eps = rng.choice([-1.0, 1.0]) if model.signal_sign == "random" else 1.0
                X = sg * rng.standard_normal((L, d))
                X[:R, 0] += eps * th
                sc = be * (X @ q)
                w = np.exp(sc - sc.max())
                a = w / w.sum()
                f = sum(a[i] * X[i] for i in range(L))
                F = f @ f
                term = sum(a[i] * (X[i] @ f) * X[i] for i in range(L))
                G += 2 * be * (term - (0.0 if broken else F) * f)
            G /= batch
            if update == "riemannian":
                G -= (G @ q) * q
            q = q + eta * G
            q /= np.linalg.norm(q)
        out[r] = q[0]
    return out


CASES = [
    # (d, R, N, theta, beta, sigma, sign, batch, update, rho0)
    (4, 2, 3, 1.0, 1.0, 1.0, "fixed", 1, "projected", 0.3),
    (5, 1, 4, 1.5, 2.0, 0.7, "random", 3, "riemannian", -0.2),
]


@pytest.mark.parametrize("case", CASES)
def test_literal_engine_matches_per_sample_loop_in_law(case):
    d, R, N, th, be, sg, sign, B, upd, rho0 = case
    model = asg.ModelConfig(d=d, n_informative=R, n_nuisance=N, theta=th, beta=be,
                            noise_std=sg, signal_sign=sign)
    step = asg.StepSize(0.3, k0=10, power=0.75)
    runs, steps = 3000, 3
    res = asg.simulate(model, step, steps=steps, runs=runs, batch=B, update=upd,
                       initial_alignment=rho0, seed=17)
    ref = _reference_rho(model, step, steps, runs, B, upd, rho0, seed=4242)
    p = stats.ks_2samp(res.final_alignment, ref).pvalue
    assert p > 0.01, p
    # the same comparison has the power to see a wrong gradient (−F f term dropped)
    bad = _reference_rho(model, step, steps, runs, B, upd, rho0, seed=4243, broken=True)
    assert stats.ks_2samp(res.final_alignment, bad).pvalue < 1e-3


def test_same_seed_gives_identical_results_and_runs_do_not_depend_on_run_count():
    model = asg.ModelConfig(d=6, n_informative=2, n_nuisance=5, theta=1.0, signal_sign="random")
    step = asg.StepSize(0.1, k0=20, power=0.7)
    kw = dict(steps=25, batch=2, seed=123, record_every=5)
    a = asg.simulate(model, step, runs=30, **kw)
    b = asg.simulate(model, step, runs=30, **kw)
    c = asg.simulate(model, step, runs=10, **kw)
    np.testing.assert_array_equal(a.alignment, b.alignment)
    np.testing.assert_array_equal(a.informative_mass, b.informative_mass)
    np.testing.assert_array_equal(a.alignment[:10], c.alignment)
    np.testing.assert_array_equal(a.q_final[:10], c.q_final)
    # a chunk of runs computed on its own is the same as the runs inside the full call
    d = asg.simulate(model, step, runs=5, first_run=12, **kw)
    np.testing.assert_array_equal(a.alignment[12:17], d.alignment)
    # different seeds differ, and runs differ from each other
    e = asg.simulate(model, step, runs=10, **{**kw, "seed": 124})
    assert not np.array_equal(e.alignment, c.alignment)
    assert len(np.unique(a.alignment[:, -1])) == 30


def test_run_seeds_are_spawned_children():
    children = np.random.SeedSequence(9).spawn(4)
    mine = run_seeds(9, 4)
    assert [c.generate_state(2).tolist() for c in children] == [m.generate_state(2).tolist() for m in mine]


def test_initial_alignment_is_exact_and_uniform_start_has_the_sphere_law():
    model = asg.ModelConfig(d=9, n_informative=2, n_nuisance=2, theta=1.0)
    step = asg.StepSize(0.1)
    r = asg.simulate(model, step, steps=1, runs=50, initial_alignment=-0.37)
    np.testing.assert_allclose(r.alignment[:, 0], -0.37, atol=1e-15)
    r = asg.simulate(model, step, steps=1, runs=3000, seed=5)
    rho0 = r.alignment[:, 0]
    p = stats.kstest(rho0**2, stats.beta(0.5, (9 - 1) / 2).cdf).pvalue
    assert p > 0.01
    assert 0.45 < (rho0 > 0).mean() < 0.55
    np.testing.assert_allclose(np.linalg.norm(r.q_final, axis=1), 1.0, rtol=1e-12)


def test_records_steps_ode_time_and_metrics():
    model = asg.ModelConfig(d=5, n_informative=2, n_nuisance=3, theta=1.0)
    step = asg.StepSize(0.1, k0=10, power=1.0)
    r = asg.simulate(model, step, steps=23, runs=3, record_every=5)
    assert r.steps.tolist() == [0, 5, 10, 15, 20, 23]
    eta = 0.1 * (1 + np.arange(23) / 10) ** -1.0
    np.testing.assert_allclose(r.ode_time, np.concatenate([[0], np.cumsum(eta)])[r.steps], rtol=1e-14)
    assert np.all(np.isnan(r.informative_mass[:, 0]))
    m = r.informative_mass[:, 1:]
    assert np.all((m > 0) & (m < 1))
    w = r.max_nuisance_weight[:, 1:]
    assert np.all((w > 0) & (w < 1))


def test_a_diverging_run_is_flagged_and_the_others_go_on():
    model = asg.ModelConfig(d=4, n_informative=1, n_nuisance=2, theta=1.0)
    run = asg.RunConfig(steps=3, runs=3)
    literal = get_engine("literal")
    state = literal.init(model, run, run_seeds(0, 3))
    q = state.q.copy()
    q[1] = np.inf
    state = state.replace(q=q)
    new, stats_ = literal.advance(model, run, state, np.array([0.1, 0.1]))
    assert new.diverged.tolist() == [False, True, False]
    assert new.diverged_step.tolist() == [-1, 1, -1]
    assert np.isnan(new.rho[1]) and np.all(np.isfinite(new.rho[[0, 2]]))
    assert np.isnan(stats_.informative_mass[1]) and np.isfinite(stats_.informative_mass[0])
    # through simulate: an absurd step makes every run overflow, and each is reported
    with pytest.warns(asg.DivergenceWarning):
        r = asg.simulate(model, asg.StepSize(1e308, power=0.75), steps=4, runs=2)
    assert r.diverged.all() and np.all(np.isnan(r.alignment[:, -1]))
    assert r.to_frame()["diverged"].all()


@pytest.mark.parametrize("eta", [1e200, 1e300])
def test_a_step_so_large_that_the_norm_overflows_still_gives_a_unit_query(eta):
    # ‖q + ηg‖² overflows float64 although q + ηg is finite: the update must rescale before
    # normalising (as the exact engines do) instead of dividing by inf and zeroing q
    model = asg.ModelConfig(d=20, n_informative=10, n_nuisance=40, theta=1.0)
    r = asg.simulate(model, asg.StepSize(eta), steps=3, runs=4, seed=3)
    assert not r.diverged.any()
    np.testing.assert_allclose(np.linalg.norm(r.q_final, axis=1), 1.0, rtol=0, atol=1e-12)
    assert np.all(np.isfinite(r.alignment)) and np.all(np.abs(r.final_alignment) > 0)
    p = asg.simulate(model, asg.StepSize(eta), steps=3, runs=4, seed=3, engine="projected")
    assert not p.diverged.any()
    np.testing.assert_allclose(np.linalg.norm(p.q_final, axis=1), 1.0, rtol=0, atol=1e-12)
