"""The engine contract, for every registered engine: pure ``advance``, runs independent of the
runs beside them, capabilities that the rest of the library reads, pre-flight checks."""

import numpy as np
import pytest

import attnsignal as asg
from attnsignal.config import ConfigError
from attnsignal.engines import Engine, engine_names, engines_with, get_engine, register
from attnsignal.engines.base import run_seeds

MODEL = asg.ModelConfig(d=7, n_informative=2, n_nuisance=5, theta=1.2, beta=1.5,
                        noise_std=0.8, signal_sign="random")
STEP = asg.StepSize(0.3, k0=10, power=0.7)


def _snapshot(state):
    return {k: (None if v is None else np.array(v, copy=True))
            for k, v in vars(state).items() if k != "k"} | {"k": state.k}


def _same(a, b):
    return all(
        (a[k] is None and b[k] is None) or np.array_equal(a[k], b[k], equal_nan=True)
        for k in a if k != "k"
    ) and a["k"] == b["k"]


def test_the_registry_lists_the_built_in_engines():
    assert engine_names()[:3] == ("literal", "projected", "chain")
    for name in engine_names():
        eng = get_engine(name)
        assert isinstance(eng, Engine) and eng.name == name
    assert "chain" not in engines_with(has_query=True)
    assert {"literal", "projected"} <= set(engines_with(has_query=True))
    with pytest.raises(ConfigError, match=r"^engine: must be one of 'literal'.*; got 'nope'$"):
        get_engine("nope")
    with pytest.raises(ValueError, match="already registered"):
        register(type(get_engine("chain"))())


@pytest.mark.parametrize("engine", engine_names())
@pytest.mark.parametrize("batch, update", [(1, "projected"), (3, "riemannian")])
def test_advance_is_pure(engine, batch, update):
    """Two advances from one state give the same bits and leave the state untouched."""
    eng = get_engine(engine)
    run = asg.RunConfig(steps=5, runs=4, batch=batch, engine=engine, update=update)
    state = eng.init(MODEL, run, run_seeds(3, 4))
    state, _ = eng.advance(MODEL, run, state, np.array([0.2, 0.1]))  # k > 0, streams in use
    before = _snapshot(state)
    etas = np.array([0.3, 0.2, 0.25])
    a, sa = eng.advance(MODEL, run, state, etas)
    assert _same(_snapshot(state), before), "advance modified its input state"
    b, sb = eng.advance(MODEL, run, state, etas)
    assert _same(_snapshot(a), _snapshot(b))
    np.testing.assert_array_equal(sa.informative_mass, sb.informative_mass)
    np.testing.assert_array_equal(sa.max_nuisance_weight, sb.max_nuisance_weight)
    assert a.k == state.k + 3 and np.isfinite(a.rho).all()
    # init is pure too, and splitting the updates into several calls changes nothing
    assert _same(_snapshot(eng.init(MODEL, run, run_seeds(3, 4))),
                 _snapshot(eng.init(MODEL, run, run_seeds(3, 4))))
    c, _ = eng.advance(MODEL, run, state, etas[:1])
    c, sc = eng.advance(MODEL, run, c, etas[1:])
    assert _same(_snapshot(a), _snapshot(c))
    np.testing.assert_array_equal(sa.informative_mass, sc.informative_mass)


@pytest.mark.parametrize("engine", engine_names())
def test_a_run_does_not_depend_on_the_runs_beside_it(engine):
    """Run r is bit-identical with runs=6 and with runs=2, first_run=4."""
    kw = dict(steps=12, batch=2, seed=21, engine=engine, record_every=3)
    full = asg.simulate(MODEL, STEP, runs=6, **kw)
    part = asg.simulate(MODEL, STEP, runs=2, first_run=4, **kw)
    np.testing.assert_array_equal(full.alignment[4:], part.alignment)
    np.testing.assert_array_equal(full.informative_mass[4:], part.informative_mass)
    np.testing.assert_array_equal(full.max_nuisance_weight[4:], part.max_nuisance_weight)
    if get_engine(engine).capabilities.has_query:
        np.testing.assert_array_equal(full.q[4:], part.q)
    assert part.run_ids.tolist() == [4, 5]
    assert len(np.unique(full.final_alignment)) == 6


@pytest.mark.parametrize("engine", engine_names())
def test_capabilities_decide_whether_q_exists(engine):
    has_q = get_engine(engine).capabilities.has_query
    r = asg.simulate(MODEL, STEP, steps=2, runs=2, engine=engine, record_q=has_q)
    if has_q:
        assert r.q.shape == (2, MODEL.d) and r.q_records.shape == (2, 3, MODEL.d)
    else:
        with pytest.raises(AttributeError, match="does not form the query vector"):
            r.q
        with pytest.raises(ConfigError, match=r"^record_q: the '\w+' engine has no query"):
            asg.simulate(MODEL, STEP, steps=2, runs=2, engine=engine, record_q=True)


def test_an_engine_name_is_checked_by_the_config_and_resolved_by_the_registry():
    for name in engine_names():
        assert asg.RunConfig(steps=1, engine=name).engine == name
    assert asg.RunConfig(steps=1, engine="fast").engine == "fast"  # a name; not resolved here
    with pytest.raises(ConfigError, match=r"^engine: must be an engine name \(letters"):
        asg.RunConfig(steps=1, engine="no such engine")
    listed = r"^engine: must be one of 'literal', 'projected', 'chain'.*; got 'fast'$"
    with pytest.raises(ConfigError, match=listed):
        asg.simulate(MODEL, STEP, steps=1, engine="fast")
    from attnsignal.sweep import SweepSpec

    spec = {"sweep": {"steps": 1, "engine": "fast"}, "model": MODEL.to_dict(),
            "step": STEP.to_dict()}
    with pytest.raises(ConfigError, match=listed.replace("^engine", "^sweep.engine")):
        SweepSpec.from_dict(spec)
    spec["grid"] = {"sweep.engine": ["chain", "fast"]}
    with pytest.raises(ConfigError, match=listed.replace("^engine", "^grid.sweep.engine")):
        SweepSpec.from_dict(spec)


class _Frozen(Engine):
    """A test engine: nothing moves. Registered under a fresh name for one test."""

    name = "frozen_for_tests"
    capabilities = get_engine("chain").capabilities

    def init(self, model, run, seeds):
        return get_engine("chain").init(model, run, seeds)

    def advance(self, model, run, state, etas):
        n = state.rho.shape[0]
        return state.replace(k=state.k + len(etas)), asg.engines.StepStats(
            np.full(n, 0.5), np.full(n, 0.1))


def test_a_registered_engine_is_usable_by_name(monkeypatch):
    from attnsignal.engines import registry

    monkeypatch.setattr(registry, "_ENGINES", dict(registry._ENGINES))
    register(_Frozen())
    assert "frozen_for_tests" in engine_names()
    r = asg.simulate(MODEL, STEP, steps=4, runs=3, engine="frozen_for_tests", seed=2)
    assert np.all(r.alignment == r.alignment[:, :1]) and r.engine == "frozen_for_tests"
    assert asg.RunConfig(steps=1, engine="frozen_for_tests").engine == "frozen_for_tests"
