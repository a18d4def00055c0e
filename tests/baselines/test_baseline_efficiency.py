"""efficiency(): the oracle needs the fewest samples at every target, measured and predicted;
the crossing interpolation; the random-sign mean never gets there."""

from __future__ import annotations

import numpy as np
import pytest

from attnsignal import ConfigError, ModelConfig, StepSize
from attnsignal.baselines.efficiency import efficiency, samples_to_target

MODEL = ModelConfig(d=10, n_informative=20, n_nuisance=60, theta=0.6)
TARGETS = [0.9, 0.97]


def test_crossing_is_interpolated_in_log_log():
    ks = np.array([0, 10, 100])
    m = np.array([0.1, 0.9, 0.99])  # 1 − m falls tenfold per decade: 1 − m = 1/k
    assert samples_to_target(ks, m, 0.9) == pytest.approx(10)
    assert samples_to_target(ks, m, 0.97) == pytest.approx(10 ** (1 + np.log10(10 / 3)))
    assert samples_to_target(ks, m, 0.05) == 0
    assert np.isnan(samples_to_target(ks, m, 0.999))


def test_oracle_needs_the_fewest_samples_at_every_target():
    table = efficiency(MODEL, TARGETS, runs=8, seed=3)
    assert set(table["method"]) == {"sga", "mean", "pca", "oja", "oracle"}
    for col in ("samples", "predicted"):
        for t in TARGETS:
            at = table[table["target"] == t].set_index("method")[col]
            assert np.isfinite(at).all(), table
            assert (at >= at["oracle"]).all(), table
    assert np.allclose(table[table["method"] == "oracle"]["ratio"], 1.0)
    # measured and predicted agree in order of magnitude for the exact baselines
    exact = table[table["method"].isin(["mean", "oracle", "pca"])]
    assert np.all(np.abs(np.log(exact["samples"] / exact["predicted"])) < np.log(2)), exact


def test_random_sign_mean_never_reaches_the_target_but_pca_does():
    table = efficiency(MODEL.replace(signal_sign="random"), TARGETS,
                       methods=("mean", "pca", "oracle"), runs=8, samples=4000)
    mean = table[table["method"] == "mean"]
    assert mean["samples"].isna().all() and mean["predicted"].isna().all()
    pca = table[table["method"] == "pca"]
    assert np.isfinite(pca["samples"]).all() and (pca["ratio"] > 1).all()


def test_bad_input_names_the_field():
    with pytest.raises(ConfigError, match="target"):
        efficiency(MODEL, 1.5)
    with pytest.raises(ConfigError, match="methods"):
        efficiency(MODEL, 0.9, methods=("mean", "median"))
    with pytest.raises(ConfigError, match="runs"):
        efficiency(MODEL, 0.9, runs=0)


def test_attention_prediction_is_the_effective_dynamics_and_matches_simulation():
    """At L = 1 000 the effective dynamics predicts attention's crossings: measured over 16
    runs, the samples to 0.9 and 0.97 agree with the prediction within 10 % (seen: 2 %)."""
    model = ModelConfig(d=20, n_informative=100, n_nuisance=900, theta=0.3)
    step = StepSize(eta0=0.03, k0=300.0, power=1.0)
    table = efficiency(model, TARGETS, methods=("sga", "oracle"), runs=16, seed=3,
                       samples=12_000, attention_step=step, theory_samples=1000)
    sga = table[table["method"] == "sga"]
    assert (sga["theory"] == "effective dynamics").all(), sga
    assert np.all(np.abs(sga["samples"] / sga["predicted"] - 1) < 0.10), sga


def test_attention_prediction_falls_back_to_the_limiting_ode_where_the_law_is_costly():
    """At L = 80 with E1's step one update moves z = artanh ρ by ~0.1: the law would need ~1
    block per step, so the prediction is the limiting ODE's (named in the table)."""
    table = efficiency(MODEL, [0.9], methods=("sga", "oracle"), runs=2, samples=2000)
    sga = table[table["method"] == "sga"]
    assert (sga["theory"] == "limiting ODE + finite-step plateau").all(), sga
    assert np.isfinite(sga["predicted"]).all()
    assert set(table[table["method"] == "oracle"]["theory"]) == {"exact"}


def test_a_model_that_is_not_a_model_config_is_one_line():
    with pytest.raises(ConfigError, match="model"):
        efficiency({"d": 10}, 0.9)
