"""The schedule advisor (theory/advisor.py) against simulation."""

from __future__ import annotations

import numpy as np
import pytest

from attnsignal.config import ConfigError, ModelConfig
from attnsignal.schedules import StepSize, TabulatedStep
from attnsignal.theory.advisor import advise_schedule

MODEL = ModelConfig(d=100, n_informative=20, n_nuisance=80, theta=0.5)


def _sim_hit(chain_simulate, step, steps: int, target: float) -> int:
    res = chain_simulate(MODEL, step, steps=steps, runs=100, seed=4, record="log")
    mu = np.abs(res.alignment).mean(axis=0)
    hit = np.nonzero(mu >= target)[0]
    return int(res.steps[hit[0]]) if hit.size else -1


@pytest.mark.slow
def test_advice_reaches_the_target_when_predicted(chain_simulate):
    """100 chain runs with the advised power-law step reach mean |ρ| = 0.9 between 0.85× and
    1.1× the predicted samples; the advice is within 1.25× the optimal schedule's prediction,
    and the optimal schedule (a TabulatedStep) is accepted by simulate and also reaches the
    target near its prediction."""
    adv = advise_schedule(MODEL, 0.9, n_samples=2000, tune=False)
    assert isinstance(adv.step, StepSize) and adv.step.robbins_monro
    assert isinstance(adv.optimal, TabulatedStep)
    assert 0 < adv.samples <= 1.25 * adv.optimal_samples
    assert adv.mean_path_samples <= adv.optimal_samples
    k = _sim_hit(chain_simulate, adv.step, int(1.3 * adv.samples), 0.9)
    assert 0.85 * adv.samples <= k <= 1.1 * adv.samples, (k, adv.samples)
    k_opt = _sim_hit(chain_simulate, adv.optimal, int(1.3 * adv.optimal_samples), 0.9)
    assert 0.85 * adv.optimal_samples <= k_opt <= 1.1 * adv.optimal_samples


def test_unreachable_or_bad_target_is_one_config_error():
    with pytest.raises(ConfigError):
        advise_schedule(MODEL, 1.5)
    with pytest.raises(ConfigError):
        advise_schedule(MODEL, 0.01)  # below the start's mean |ρ|
