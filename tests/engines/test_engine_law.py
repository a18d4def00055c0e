"""The exact engines against the literal algorithm, in law.

Two-sample Kolmogorov–Smirnov tests on the alignment (and, for the projected engine, on a
coordinate of ``q`` orthogonal to ``ξ``, and on the attention statistics) after a few large
steps, with 4000 independent runs per engine and fixed seeds (deterministic). The same tests
reject deliberately broken variants of the kernel (p < 1e-3), which shows they have power.
"""

import functools
import zlib

import numpy as np
import pytest
from scipy import stats

import attnsignal as asg
from kernel_probes import BrokenChain, BrokenProjected

from attnsignal.engines import _kernel, registry

RUNS = 4000
STEPS = 3
STEP = asg.StepSize(0.5, k0=10, power=0.75)
P_MIN = 1e-3

# (d, R, N, theta, beta, sigma, sign, batch, update, rho0)
CASES = {
    "fixed-start": (5, 2, 4, 1.5, 1.0, 1.0, "fixed", 1, "projected", 0.3),
    "random-start": (5, 2, 4, 1.5, 1.0, 1.0, "fixed", 1, "projected", None),
    "B3-beta2-riemannian": (6, 2, 3, 1.0, 2.0, 1.0, "fixed", 3, "riemannian", 0.2),
    "B3-random-sign-sigma": (5, 1, 4, 1.5, 2.0, 0.7, "random", 3, "riemannian", -0.2),
    "B-gt-D-sigma": (4, 2, 3, 1.0, 1.0, 1.3, "fixed", 3, "projected", None),
    "beta-half-random-sign": (8, 3, 5, 1.2, 0.5, 1.0, "random", 1, "projected", None),
    "d3": (3, 2, 3, 1.0, 1.0, 1.0, "fixed", 1, "projected", 0.4),
    "d3-B3": (3, 2, 3, 1.0, 1.0, 1.0, "fixed", 3, "riemannian", 0.4),
    "d2-B2": (2, 2, 3, 1.0, 1.0, 1.0, "fixed", 2, "projected", 0.4),
    "rho0=1": (5, 2, 4, 1.5, 1.0, 1.0, "fixed", 1, "projected", 1.0),
    "rho0=-1-random-sign": (5, 2, 4, 1.5, 1.0, 1.0, "random", 2, "riemannian", -1.0),
    "B70-sequential": (4, 1, 3, 1.0, 1.0, 1.0, "fixed", 70, "projected", 0.3),
}


def _model(case):
    d, R, N, th, be, sg, sign = case[:7]
    return asg.ModelConfig(d=d, n_informative=R, n_nuisance=N, theta=th, beta=be,
                           noise_std=sg, signal_sign=sign)


def _sim(case, engine, seed, runs=RUNS):
    B, upd, rho0 = case[7:]
    return asg.simulate(_model(case), STEP, steps=STEPS, runs=runs, batch=B, update=upd,
                        initial_alignment=rho0, engine=engine, seed=seed)


@functools.lru_cache(maxsize=None)
def _literal(name):
    return _sim(CASES[name], "literal", seed=1000 + list(CASES).index(name))


def _ks(a, b):
    return stats.ks_2samp(a, b).pvalue


#: every registered engine that declares the literal algorithm's law, the literal one aside
EXACT = [n for n in registry.engines_with(exact_in_law=True) if n != "literal"]
#: the seeds these tests were written with; an engine registered later gets one from its name
SEED_BASE = {"chain": 2000, "projected": 3000, "chain32": 5000}


def _seed(engine, name):
    base = SEED_BASE.get(engine, 10_000 + zlib.crc32(engine.encode()) % 10_000 * 100)
    return base + list(CASES).index(name)


def test_the_engines_that_declare_equality_in_law_are_tested():
    assert {"chain", "chain32", "projected"} <= set(EXACT)


@pytest.mark.parametrize("engine", EXACT)
@pytest.mark.parametrize("name", list(CASES))
def test_engine_matches_literal_in_law(name, engine):
    """The alignment and the attention statistics (and, for an engine with a query vector,
    a coordinate of ``q`` orthogonal to ``ξ``) after a few large steps."""
    lit = _literal(name)
    res = _sim(CASES[name], engine, seed=_seed(engine, name))
    p = {"rho": _ks(res.final_alignment, lit.final_alignment),
         "mass": _ks(res.informative_mass[:, -1], lit.informative_mass[:, -1]),
         "max_weight": _ks(res.max_nuisance_weight[:, -1], lit.max_nuisance_weight[:, -1])}
    if registry.get_engine(engine).capabilities.has_query:
        assert np.allclose(np.linalg.norm(res.q, axis=1), 1.0, rtol=0, atol=1e-12)
        assert np.array_equal(res.final_alignment, res.q[:, 0])
        p["q1"] = _ks(res.q[:, 1], lit.q[:, 1])  # a coordinate orthogonal to ξ = e_1
    else:
        assert res.q_final is None
    assert min(p.values()) > P_MIN, p


@pytest.mark.parametrize("engine", ["chain", "projected"])
@pytest.mark.parametrize("variant", [_kernel.DROP_COMPLEMENT, _kernel.WRONG_DIMENSION])
@pytest.mark.parametrize("name", ["fixed-start", "B3-beta2-riemannian"])
def test_law_test_rejects_broken_variants(monkeypatch, engine, variant, name):
    """Dropping ||v_⊥||²χ' (chain) / ν (projected), or using D = d − 1, is detected."""
    broken = {"chain": BrokenChain, "projected": BrokenProjected}[engine](variant)
    monkeypatch.setitem(registry._ENGINES, engine, broken)  # this test only
    res = _sim(CASES[name], engine, seed=4000 + 10 * variant)
    assert _ks(res.final_alignment, _literal(name).final_alignment) < P_MIN


def test_long_run_mean_alignment_agrees_with_literal():
    """200 updates: the mean alignment curves agree within Monte-Carlo error everywhere."""
    model = asg.ModelConfig(d=6, n_informative=2, n_nuisance=6, theta=1.5)
    step = asg.StepSize(0.05, k0=50, power=0.6)
    kw = dict(steps=200, record_every=10, initial_alignment=0.1)
    lit = asg.simulate(model, step, runs=800, engine="literal", seed=5, **kw)
    res = {e: asg.simulate(model, step, runs=4000, engine=e, seed=6, **kw)
           for e in ("chain", "projected")}
    m_l = lit.alignment.mean(0)
    se_l = lit.alignment.std(0, ddof=1) / np.sqrt(lit.alignment.shape[0])
    assert m_l[-1] - m_l[0] > 0.3  # the curve moves: the comparison is not trivial
    for r in res.values():
        m = r.alignment.mean(0)
        se = r.alignment.std(0, ddof=1) / np.sqrt(r.alignment.shape[0])
        z = (m - m_l)[1:] / np.sqrt(se**2 + se_l**2)[1:]
        assert np.abs(z).max() < 4.0, z


@pytest.mark.slow
@pytest.mark.parametrize(
    "d, B, update, with_literal",
    [(50, 2, "projected", True), (200, 1, "riemannian", False), (1000, 3, "projected", False)],
)
def test_exact_engines_agree_at_larger_d(d, B, update, with_literal):
    """20 000 runs of chain vs projected (and literal at d = 50), where the complement
    (large χ² shapes, Bartlett with D ≫ B) dominates the update."""
    model = asg.ModelConfig(d=d, n_informative=3, n_nuisance=12, theta=2.0)
    kw = dict(steps=3, batch=B, update=update, initial_alignment=0.5)
    c = asg.simulate(model, STEP, runs=20_000, engine="chain", seed=1, **kw)
    p = asg.simulate(model, STEP, runs=20_000, engine="projected", seed=2, **kw)
    assert _ks(c.final_alignment, p.final_alignment) > P_MIN
    assert _ks(c.informative_mass[:, -1], p.informative_mass[:, -1]) > P_MIN
    if with_literal:
        lit = asg.simulate(model, STEP, runs=10_000, engine="literal", seed=3, **kw)
        assert _ks(c.final_alignment, lit.final_alignment) > P_MIN
        assert _ks(p.q[:, 1], lit.q[:, 1]) > P_MIN


# (label, model, step, initial alignment, steps): chain32 against chain where float32 could
# show — many tokens (long float32 sums) and d = 10^6 (γ² ≈ d: cancellation in c_i − F)
SINGLE_CASES = {
    "L=1000": (asg.ModelConfig(d=20, n_informative=50, n_nuisance=950, theta=1.0),
               asg.StepSize(0.5, k0=20, power=0.75), 0.2, 40),
    "d=10^6": (asg.ModelConfig(d=10**6, n_informative=5, n_nuisance=60, theta=1.0),
               asg.StepSize(2e-9, k0=100, power=0.75), 0.3, 300),
}


@pytest.mark.parametrize("name", list(SINGLE_CASES))
def test_single_precision_chain_matches_the_chain_in_law(monkeypatch, name):
    """chain32 (float32 per-sample arithmetic) against chain, 600 runs each; the same test
    tells the chain without its complement term (DROP_COMPLEMENT) apart: it has power."""
    model, step, rho0, steps = SINGLE_CASES[name]
    kw = dict(steps=steps, runs=600, initial_alignment=rho0)
    ref = asg.simulate(model, step, engine="chain", seed=21, **kw).final_alignment
    single = asg.simulate(model, step, engine="chain32", seed=22, **kw).final_alignment
    assert _ks(single, ref) > P_MIN
    monkeypatch.setitem(registry._ENGINES, "chain", BrokenChain(_kernel.DROP_COMPLEMENT))
    wrong = asg.simulate(model, step, engine="chain", seed=23, **kw).final_alignment
    assert _ks(wrong, ref) < P_MIN
