"""Each baseline's exact sampler is equal in law to the literal algorithm (tokens
materialised), at every record and jointly across records; deliberately broken samplers are
rejected by the same tests."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from scipy.stats import ks_2samp

from attnsignal import ModelConfig, StepSize
from attnsignal.baselines import baseline
from attnsignal.baselines import mean as mean_mod
from attnsignal.baselines import oja as oja_mod
from attnsignal.baselines import pca as pca_mod
from attnsignal.baselines.literal import literal_baseline

RUNS = 2000
RECORD = [0, 2, 4, 12, 30]
ALPHA = 1e-3  # per comparison; the seeds are fixed, so every outcome is deterministic
OJA_STEP = StepSize(eta0=3.0, k0=5.0, power=1.0)


def _model(sign: str) -> ModelConfig:
    return ModelConfig(d=5, n_informative=3, n_nuisance=7, theta=1.0, noise_std=1.3,
                       signal_sign=sign)


@functools.lru_cache(maxsize=None)
def _literal_cached(model, method):
    return _literal(model, method)


@functools.lru_cache(maxsize=None)
def _exact_cached(model, method):
    return _exact(model, method)


def _exact(model, method, seed=1):
    step = OJA_STEP if method == "oja" else None
    return baseline(model, method, samples=RECORD[-1], runs=RUNS, seed=seed,
                    record=RECORD, step=step).alignment


def _literal(model, method, seed=2):
    step = OJA_STEP if method == "oja" else None
    return literal_baseline(model, method, samples=RECORD[-1], runs=RUNS, record=RECORD,
                            seed=seed, step=step)


def _pvalues(a: np.ndarray, b: np.ndarray) -> list[float]:
    """KS p-values: the signed ρ at every record after 0, and two increments (joint law)."""
    ps = [ks_2samp(a[:, j], b[:, j]).pvalue for j in range(1, a.shape[1])]
    for j1, j2 in ((1, 3), (2, 4)):
        ps.append(ks_2samp(a[:, j2] - a[:, j1], b[:, j2] - b[:, j1]).pvalue)
    return ps


@pytest.mark.parametrize("sign", ["fixed", "random"])
@pytest.mark.parametrize("method", ["mean", "oracle", "pca", "oja"])
def test_estimator_matches_literal_in_law(method, sign):
    model = _model(sign)
    ps = _pvalues(_exact_cached(model, method), _literal_cached(model, method))
    assert min(ps) > ALPHA, ps


def test_signal_is_visible_at_these_sizes():
    # the law tests have power only if the alignment moves away from a uniform direction
    a = np.abs(_exact_cached(_model("fixed"), "mean"))
    assert a[:, -1].mean() > 0.8 and a[:, 0].mean() < 0.5


def test_mean_without_the_cross_term_is_rejected(monkeypatch):
    """Broken: ‖W‖² += (Δ/L) χ²_{d−1}, forgetting that the block's noise adds to W
    (right marginal mean, wrong spread after several blocks)."""

    def broken(model, state, samples, c, var, random_sign):
        if samples <= 0:
            return state
        out = orig(model, state, samples, c, var, random_sign)
        rng = np.random.default_rng(state.k + 7)
        across = np.sqrt(state.stats["across"] ** 2
                         + samples * var * rng.chisquare(model.d - 1, state.rho.size))
        along = out.stats["along"]
        return out.replace(rho=along / np.hypot(along, across),
                           stats={"along": along, "across": across})

    orig = mean_mod.advance_sum
    monkeypatch.setattr(mean_mod, "advance_sum", broken)
    model = _model("fixed")
    ps = _pvalues(_exact(model, "mean"), _literal_cached(model, "mean"))
    assert min(ps) < ALPHA, ps


def test_pca_with_one_sample_counted_twice_is_rejected(monkeypatch):
    """Broken: Wishart(Δ) instead of Wishart(Δ − 1) for the part of the block orthogonal to
    the signal coordinates (the sample along â counted twice)."""
    orig = pca_mod.wishart
    monkeypatch.setattr(pca_mod, "wishart", lambda g, p, n: orig(g, p, n + 1))
    model = _model("fixed")
    ps = _pvalues(_exact(model, "pca"), _literal_cached(model, "pca"))
    assert min(ps) < ALPHA, ps


def test_oja_without_the_rest_of_the_complement_is_rejected(monkeypatch):
    """Broken: the part of m orthogonal to span(q, ξ) dropped (‖v_⊥‖ = 0)."""
    orig = oja_mod.oja_block
    monkeypatch.setattr(oja_mod, "oja_block",
                        lambda r, s, e, a, b, p: orig(r, s, e, a, b, 0.0 * p))
    model = _model("fixed")
    ps = _pvalues(_exact(model, "oja"), _literal_cached(model, "oja"))
    assert min(ps) < ALPHA, ps
