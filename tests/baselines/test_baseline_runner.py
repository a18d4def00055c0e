"""baseline(): seeding, purity, the Result it returns (method column, I/O), validation."""

from __future__ import annotations

import json

import numpy as np
import pytest

from attnsignal import ConfigError, ModelConfig, Result, StepSize, simulate
from attnsignal.baselines import baseline, get_estimator, method_names
from attnsignal.baselines import runner as baseline_mod
from attnsignal.baselines.base import BaselineConfig, RUNNING_AVERAGE
from attnsignal.engines.base import run_seeds

MODEL = ModelConfig(d=12, n_informative=4, n_nuisance=20, theta=1.0, signal_sign="random")
METHODS = ["mean", "pca", "oja", "oracle"]


def test_registry_lists_every_method():
    assert set(method_names()) == set(METHODS)
    for m in METHODS:
        mod = get_estimator(m)
        assert callable(mod.init) and callable(mod.advance)
    with pytest.raises(ConfigError, match="method"):
        get_estimator("median")


@pytest.mark.parametrize("method", METHODS)
def test_run_is_bit_identical_whatever_runs_ride_beside_it(method, monkeypatch):
    kw = dict(samples=300, seed=5, record=[0, 7, 50, 300])
    wide = baseline(MODEL, method, runs=5, **kw)
    alone = baseline(MODEL, method, runs=1, first_run=3, **kw)
    np.testing.assert_array_equal(wide.alignment[3], alone.alignment[0])
    monkeypatch.setattr(baseline_mod, "_CHUNK_BYTES", 1)  # one run per chunk
    chunked = baseline(MODEL, method, runs=5, **kw)
    np.testing.assert_array_equal(wide.alignment, chunked.alignment)
    other_seed = baseline(MODEL, method, runs=5, **{**kw, "seed": 6})
    assert not np.array_equal(wide.alignment[:, 1:], other_seed.alignment[:, 1:])


@pytest.mark.parametrize("method", METHODS)
def test_advance_is_a_pure_function_of_its_state(method):
    est = get_estimator(method)
    cfg = BaselineConfig(method, StepSize(eta0=0.5, k0=10.0) if method == "oja"
                         else RUNNING_AVERAGE)
    s0 = est.init(MODEL, cfg, run_seeds(1, 3))
    a = est.advance(MODEL, cfg, s0, 40)
    b = est.advance(MODEL, cfg, s0, 40)
    np.testing.assert_array_equal(a.rho, b.rho)
    assert a.k == 40 and s0.k == 0
    assert all(np.isfinite(a.rho)) and np.all(np.abs(a.rho) <= 1 + 1e-12)


def test_result_says_which_method_and_round_trips(tmp_path):
    res = baseline(MODEL, "pca", samples=100, runs=3, record="log")
    frame = res.to_frame()
    assert (frame["method"] == "pca").all()
    assert res.steps[0] == 0 and res.steps[-1] == 100
    assert np.isnan(res.informative_mass[:, 0]).all()
    assert np.allclose(res.informative_mass[:, 1:], 4 / 24)
    assert np.allclose(res.max_nuisance_weight[:, 1:], 1 / 24)
    back = Result.load(res.save(tmp_path / "r"))
    assert back.method == "pca"
    np.testing.assert_array_equal(back.alignment, res.alignment)
    # the running average's schedule: ode_time is the harmonic number H_k
    k = res.steps[-1]
    assert res.ode_time[-1] == pytest.approx(np.sum(1.0 / np.arange(1, k + 1)))
    again = Result.from_frame(frame, res.model, res.schedule, res.run)
    assert again.method == "pca"
    oracle = baseline(MODEL, "oracle", samples=10, runs=2)
    assert np.allclose(oracle.informative_mass[:, 1:], 1.0)
    assert np.allclose(oracle.max_nuisance_weight[:, 1:], 0.0)


def test_old_manifest_without_method_loads_as_attention(tmp_path):
    res = simulate(MODEL.replace(signal_sign="fixed"), StepSize(eta0=0.05), steps=5, runs=2,
                   engine="literal")
    assert res.method == "sga" and (res.to_frame()["method"] == "sga").all()
    path = res.save(tmp_path / "old")
    man = json.loads((path / "manifest.json").read_text())
    del man["method"]
    (path / "manifest.json").write_text(json.dumps(man))
    assert Result.load(path).method == "sga"


@pytest.mark.parametrize(
    "kwargs, field",
    [
        (dict(method="median"), "method"),
        (dict(samples=0), "samples"),
        (dict(samples=2.5), "samples"),
        (dict(runs=0), "runs"),
        (dict(seed=-1), "seed"),
        (dict(step=StepSize(eta0=0.1)), "step"),  # only Oja takes a schedule
        (dict(method="oja", step="fast"), "step"),
        (dict(record=[0, 99]), "record"),
    ],
)
def test_bad_input_names_the_field(kwargs, field):
    args = dict(method="mean", samples=10)
    args.update(kwargs)
    method = args.pop("method")
    with pytest.raises(ConfigError) as err:
        baseline(MODEL, method, **args)
    assert err.value.field == field
    assert "\n" not in str(err.value)


def test_oja_needs_a_step_without_signal():
    with pytest.raises(ConfigError, match="step"):
        baseline(MODEL.replace(theta=0.0), "oja", samples=5)
    res = baseline(MODEL.replace(theta=0.0), "oja", samples=5, step=StepSize(eta0=0.1))
    assert np.isfinite(res.alignment).all()


@pytest.mark.parametrize("method, kwargs, field", [
    ("pca", dict(samples=10), "model.d"),  # d² floats per run
    ("oja", dict(samples=10 ** 13, runs=10), "samples"),  # O(1) per sample, but 10^14 of them
    ("mean", dict(samples=10 ** 15, record_every=1), "record_every"),
])
def test_sizes_that_cannot_fit_or_finish_are_refused_before_work(method, kwargs, field):
    huge = ModelConfig(d=10 ** 6, n_informative=5, n_nuisance=5, theta=1.0)
    with pytest.raises(ConfigError) as err:
        baseline(huge, method, **kwargs)
    assert err.value.field == field
