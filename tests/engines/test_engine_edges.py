"""Exact engines: seeding and reproducibility, divergence, edge cases, long contexts."""

import resource
import time

import numba
import numpy as np
import pytest

import attnsignal as asg
from attnsignal.engines import engine_names, get_engine
from attnsignal.engines.base import run_seeds

ENGINES = ["chain", "projected"]  # the compiled engines
MODEL = asg.ModelConfig(d=7, n_informative=3, n_nuisance=5, theta=1.2, beta=1.5)
STEP = asg.StepSize(0.3, k0=20, power=0.75)


def _sim(engine, **kw):
    args = dict(steps=12, runs=6, batch=2, seed=7, record_every=3)
    args.update(kw)
    model = args.pop("model", MODEL)
    return asg.simulate(model, STEP, engine=engine, **args)


def _same(a, b):
    np.testing.assert_array_equal(a.alignment, b.alignment)
    np.testing.assert_array_equal(a.informative_mass, b.informative_mass)
    np.testing.assert_array_equal(a.max_nuisance_weight, b.max_nuisance_weight)
    if a.q_final is not None:
        np.testing.assert_array_equal(a.q_final, b.q_final)


# ----------------------------------------------------------------- reproducibility


@pytest.mark.parametrize("engine", ENGINES)
def test_seed_determinism(engine):
    a, b = _sim(engine), _sim(engine)
    _same(a, b)
    c = _sim(engine, seed=8)
    assert not np.array_equal(a.alignment[:, -1], c.alignment[:, -1])


@pytest.mark.parametrize("engine", ENGINES)
def test_run_is_bit_identical_whatever_the_number_of_runs(engine):
    few = _sim(engine, runs=3)
    many = _sim(engine, runs=11)
    np.testing.assert_array_equal(few.alignment, many.alignment[:3])
    np.testing.assert_array_equal(few.informative_mass, many.informative_mass[:3])
    if engine == "projected":
        np.testing.assert_array_equal(few.q_final, many.q_final[:3])
    mid = _sim(engine, runs=4, first_run=5)
    np.testing.assert_array_equal(mid.alignment, many.alignment[5:9])
    # runs are distinct
    assert len(np.unique(many.alignment[:, -1])) == 11


@pytest.mark.parametrize("engine", ENGINES)
def test_trajectory_does_not_depend_on_how_steps_are_blocked(engine):
    a = _sim(engine, record_every=1)
    b = _sim(engine, record_every=5)
    np.testing.assert_array_equal(a.alignment[:, -1], b.alignment[:, -1])
    np.testing.assert_array_equal(a.alignment[:, ::5], b.alignment[:, :-1])
    np.testing.assert_array_equal(a.informative_mass[:, -1], b.informative_mass[:, -1])


@pytest.mark.parametrize("engine", ENGINES)
def test_trajectory_does_not_depend_on_the_thread_count(engine):
    n = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = _sim(engine)
    finally:
        numba.set_num_threads(n)
    _same(one, _sim(engine))


def test_noise_std_is_absorbed_exactly():
    """(θ, σ, β) with steps η is (θ/σ, 1, βσ) with steps σ²η — same draws, same path."""
    sig = 1.7
    m = MODEL.replace(noise_std=sig)
    for engine in ENGINES:
        a = asg.simulate(m, STEP, steps=6, runs=5, batch=2, seed=3, engine=engine)
        step2 = STEP.replace(eta0=STEP.eta0 * sig**2)
        b = asg.simulate(m.standardized(), step2, steps=6, runs=5, batch=2, seed=3,
                         engine=engine)
        np.testing.assert_allclose(a.alignment, b.alignment, rtol=0, atol=1e-10)


# ----------------------------------------------------------------- state and results


def test_projected_records_q():
    res = _sim("projected", record_q=True)
    assert res.q_records.shape == (6, len(res.steps), MODEL.d)
    np.testing.assert_array_equal(res.q_records[:, -1], res.q)
    np.testing.assert_array_equal(res.q_records[:, :, 0], res.alignment)
    np.testing.assert_allclose(np.linalg.norm(res.q_records, axis=2), 1.0, atol=1e-12)


@pytest.mark.parametrize("engine", ENGINES)
def test_attention_statistics_are_in_range(engine):
    res = _sim(engine, runs=50)
    assert np.all(np.isnan(res.informative_mass[:, 0]))
    m, w = res.informative_mass[:, 1:], res.max_nuisance_weight[:, 1:]
    assert np.all((m > 0) & (m < 1)) and np.all((w > 0) & (w < 1))
    no_nuisance = MODEL.replace(n_nuisance=0)
    r0 = _sim(engine, model=no_nuisance)
    assert np.all(r0.max_nuisance_weight[:, 1:] == 0.0)
    np.testing.assert_allclose(r0.informative_mass[:, 1:], 1.0, rtol=0, atol=1e-12)


# ----------------------------------------------------------------- divergence


@pytest.mark.parametrize("engine", engine_names())
def test_non_finite_run_is_flagged_and_frozen_others_go_on(engine):
    eng = get_engine(engine)
    run = asg.RunConfig(steps=5, runs=4, engine=engine)
    s0 = eng.init(MODEL, run, run_seeds(1, 4))
    if not eng.capabilities.has_query:
        rho = s0.rho.copy()
        rho[2] = np.nan
        s0 = s0.replace(rho=rho)
    else:
        q = s0.q.copy()
        q[2, 3] = np.nan
        s0 = s0.replace(q=q)
    s1, st1 = eng.advance(MODEL, run, s0, np.full(3, 0.1))
    assert s1.diverged.tolist() == [False, False, True, False]
    assert s1.diverged_step.tolist() == [-1, -1, 1, -1]
    assert np.isnan(s1.rho[2]) and np.all(np.isfinite(s1.rho[[0, 1, 3]]))
    assert np.isnan(st1.informative_mass[2]) and np.isfinite(st1.informative_mass[0])
    if eng.capabilities.has_query:
        assert np.all(np.isnan(s1.q[2])) and np.all(np.isfinite(s1.q[[0, 1, 3]]))
    s2, _ = eng.advance(MODEL, run, s1, np.full(2, 0.1))
    assert s2.diverged_step.tolist() == [-1, -1, 1, -1]
    assert np.all(s2.rho[[0, 1, 3]] != s1.rho[[0, 1, 3]])
    # the other runs are exactly what they would have been without run 2
    ref, _ = eng.advance(MODEL, run, eng.init(MODEL, run, run_seeds(1, 4)), np.full(5, 0.1))
    np.testing.assert_array_equal(s2.rho[[0, 1, 3]], ref.rho[[0, 1, 3]])


@pytest.mark.parametrize("engine", ENGINES)
def test_infinite_step_diverges_at_that_update(engine):
    eng = get_engine(engine)
    run = asg.RunConfig(steps=5, runs=3, engine=engine)
    s0 = eng.init(MODEL, run, run_seeds(2, 3))
    s1, _ = eng.advance(MODEL, run, s0, np.array([0.1, np.inf, 0.1]))
    assert s1.diverged.all() and s1.diverged_step.tolist() == [2, 2, 2]
    assert np.all(np.isnan(s1.rho))


# ----------------------------------------------------------------- edge cases


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("rho0", [1.0, -1.0])
def test_start_exactly_on_the_signal(engine, rho0):
    res = _sim(engine, initial_alignment=rho0, runs=200)
    assert np.all(res.alignment[:, 0] == rho0)
    a = res.alignment[:, 1:]
    assert np.all(np.isfinite(a)) and np.all(np.abs(a) <= 1.0)
    assert np.all(np.abs(a[:, -1]) < 1.0)  # the noise moves it off the pole


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("d", [2, 3])
@pytest.mark.parametrize("batch", [1, 4])
def test_smallest_dimensions(engine, d, batch):
    res = _sim(engine, model=MODEL.replace(d=d), batch=batch, runs=30)
    assert np.all(np.isfinite(res.alignment)) and np.all(np.abs(res.alignment) <= 1)
    if engine == "projected":
        assert res.q.shape == (30, d)
        np.testing.assert_allclose(np.linalg.norm(res.q, axis=1), 1.0, atol=1e-12)


def test_chain_cost_does_not_depend_on_d():
    small = MODEL.replace(d=10, n_nuisance=400)
    huge = MODEL.replace(d=10**9, n_nuisance=400)
    kw = dict(steps=1000, runs=8, seed=1)
    asg.simulate(huge, STEP, engine="chain", **kw)  # warm
    t0 = time.perf_counter()
    asg.simulate(small, STEP, engine="chain", **kw)
    t1 = time.perf_counter()
    r = asg.simulate(huge, STEP, engine="chain", **kw)
    t2 = time.perf_counter()
    assert np.all(np.isfinite(r.alignment))
    assert t2 - t1 < 5 * (t1 - t0) + 0.1
    # a uniform start in d = 10^9 has |ρ0| of order d^(-1/2)
    assert np.abs(r.alignment[:, 0]).max() < 1e-3


@pytest.mark.parametrize("engine", ENGINES)
def test_informative_mass_on_the_signal_matches_the_large_L_formula(engine):
    """At q = ξ the informative mass is ≈ R e^{βθ}/(R e^{βθ} + N) (docs/model.md): 0.0603 for
    θ = 0.25, R = 500, N = 10 000."""
    m = asg.ModelConfig(d=50, n_informative=500, n_nuisance=10_000, theta=0.25)
    res = asg.simulate(m, asg.StepSize(1e-12), steps=1, runs=400, engine=engine, seed=2,
                       initial_alignment=1.0)
    p = 500 * np.exp(0.25) / (500 * np.exp(0.25) + 10_000)
    mass = res.informative_mass[:, -1]
    assert abs(mass.mean() - p) < 4 * mass.std() / np.sqrt(mass.size) + 2e-4


@pytest.mark.parametrize("engine", ENGINES)
def test_long_context_smoke(engine):
    m = asg.ModelConfig(d=20, n_informative=500, n_nuisance=10**5 - 500, theta=0.5)
    res = asg.simulate(m, STEP, steps=2, runs=3, batch=2, engine=engine, seed=4)
    assert np.all(np.isfinite(res.alignment))
    mass = res.informative_mass[:, -1]
    assert np.all((mass > 0.001) & (mass < 0.05))  # ≈ R e^{θρ}/(R e^{θρ} + N) ± noise


def test_context_of_a_million_tokens_fits_in_memory():
    """Scratch is per run and O(L): four float64 arrays (32 MB at L = 10^6)."""
    m = asg.ModelConfig(d=1000, n_informative=1000, n_nuisance=10**6 - 1000, theta=0.25)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    for engine in ENGINES:
        res = asg.simulate(m, STEP, steps=1, runs=2, engine=engine, seed=1)
        assert np.all(np.isfinite(res.alignment))
    grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown < 600, f"peak memory grew by {grown:.0f} MiB"


def test_engines_survive_fork_and_concurrent_threads():
    """After a compiled parallel launch the process can still fork (multiprocessing's
    default on Linux) and several Python threads may call the engines at once."""
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent(
        """
        import multiprocessing as mp
        from concurrent.futures import ThreadPoolExecutor
        import numpy as np
        import attnsignal as asg
        m = asg.ModelConfig(d=5, n_informative=2, n_nuisance=4, theta=1.5)
        st = asg.StepSize(0.5)
        def work(i, engine="chain"):
            r = asg.simulate(m, st, steps=3, runs=10, engine=engine, seed=i)
            return float(r.final_alignment[0])
        ref = [work(i) for i in range(4)] + [work(0, "projected")]
        with mp.get_context("fork").Pool(2) as pool:
            got = pool.map_async(work, range(4)).get(timeout=60)
            got.append(pool.apply_async(work, (0, "projected")).get(timeout=60))
        assert got == ref, (got, ref)
        with ThreadPoolExecutor(4) as ex:
            got = list(ex.map(work, range(4)))
        assert got == ref[:4]
        print("ok")
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=240)
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr[-2000:]
