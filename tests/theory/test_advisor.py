"""The schedule advisor (theory/advisor.py) against simulation."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from attnsignal.config import ConfigError, ModelConfig
from attnsignal.schedules import StepSize, TabulatedStep
from attnsignal.simulate import simulate
from attnsignal.theory.advisor import advise_schedule
from attnsignal.theory.effective import EffectiveDynamicsAccuracyWarning

MODEL = ModelConfig(d=100, n_informative=20, n_nuisance=80, theta=0.5)


def _sim_hit(chain_simulate, step, predicted: int, target: float, runs: int = 48) -> float:
    """The first step at which the mean |ρ| of ``runs`` chain runs (to 1.3× ``predicted``)
    reaches ``target``, interpolated linearly between records (log-spaced, and every 1 % of
    ``predicted`` over 0.8–1.3× of it)."""
    n = int(1.3 * predicted)
    dense = np.round(np.linspace(0.8 * predicted, n, 51)).astype(np.int64)
    log = np.round(np.geomspace(1, n, 60)).astype(np.int64)
    rec = np.unique(np.concatenate([[0], log, dense]))
    res = chain_simulate(MODEL, step, steps=n, runs=runs, seed=4, record=rec)
    mu = np.abs(res.alignment).mean(axis=0)
    i = int(np.nonzero(mu >= target)[0][0])
    k0, k1 = float(res.steps[i - 1]), float(res.steps[i])
    return k0 + (target - mu[i - 1]) / (mu[i] - mu[i - 1]) * (k1 - k0)


@pytest.mark.slow
def test_advice_reaches_the_target_when_predicted(chain_simulate):
    """48 chain runs with the advised power-law step first reach mean |ρ| = 0.9 between 0.85×
    and 1.1× the predicted samples; the advice is within 1.25× the optimal schedule's
    prediction, and the optimal schedule (a TabulatedStep) is accepted by simulate and also
    reaches the target near its prediction. Power: the crossing's standard error at 48 runs is
    about 2.9 % of the prediction (the mean's standard error over its slope there: 2.0 % and
    1.7 % measured with 100 runs, times √(100/48)), so a prediction 15 % off is caught with
    probability ≥ 0.96."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        adv = advise_schedule(MODEL, 0.9, n_samples=2000, tune=False)
    assert isinstance(adv.step, StepSize) and adv.step.robbins_monro
    assert isinstance(adv.optimal, TabulatedStep)
    assert 0 < adv.optimal_samples <= adv.samples <= 1.25 * adv.optimal_samples
    assert adv.mean_path_samples <= adv.optimal_samples
    # 2 000 draws a node leave the advice's Monte-Carlo error above half the tolerance: the
    # table was extended, the advice's run repeated on it, and both reported runs use it
    assert adv.dynamics.moments.n_samples > 2000 and adv.calibration >= 2
    assert adv.optimal_dynamics.moments is adv.dynamics.moments
    # the warnings are the reported runs' (one each at most), not the superseded run's
    accuracy = [w for w in caught if issubclass(w.category, EffectiveDynamicsAccuracyWarning)]
    assert len(accuracy) <= 2, [str(w.message) for w in accuracy]
    k = _sim_hit(chain_simulate, adv.step, adv.samples, 0.9)
    assert 0.85 * adv.samples <= k <= 1.1 * adv.samples, (k, adv.samples)
    k_opt = _sim_hit(chain_simulate, adv.optimal, adv.optimal_samples, 0.9)
    assert 0.85 * adv.optimal_samples <= k_opt <= 1.1 * adv.optimal_samples, \
        (k_opt, adv.optimal_samples)


SMALL = ModelConfig(d=40, n_informative=10, n_nuisance=30, theta=0.6)  # L = 40


@pytest.fixture(scope="module")
def small_advice():
    """Untuned advice at small L with a 4-run search (shared: one advice, several properties)."""
    return advise_schedule(SMALL, 0.9, n_samples=500, tune=False, search=4)


def test_optimal_is_never_beaten_by_the_advice_at_small_L(small_advice):
    """At small L the spread of ρ matters: the mean-path feedback schedule that the advisor
    used to call optimal lost to the power law there. The optimal schedule is the best of the
    feedback, the power law and the searched knot family, so it is never above the advice,
    and its own run reaches the target where it says (the mean path alone, no spread, before
    it)."""
    adv = small_advice
    assert 0 < adv.optimal_samples <= adv.samples, (adv.optimal_samples, adv.samples)
    assert adv.mean_path_samples <= adv.optimal_samples
    assert adv.optimal_dynamics.hitting_step(0.9) <= adv.optimal_samples + 0.05 * adv.samples


def test_searched_optimal_schedule_is_valid(small_advice):
    """With a 4-run search at small L the search beats both the feedback and the power law
    (2 824 against 2 841 samples for the power law), and what it returns is a valid schedule:
    positive finite steps within the moment table's range (or the base's), a Robbins–Monro
    tail, accepted by simulate."""
    adv = small_advice
    assert isinstance(adv.optimal, TabulatedStep)
    assert 0 < adv.optimal_samples < adv.samples, (adv.optimal_samples, adv.samples)
    ks = np.arange(4 * adv.optimal_samples)
    eta = adv.optimal.eta(ks)
    assert np.all(np.isfinite(eta)) and np.all(eta > 0)
    top = max(adv.optimal_dynamics.moments.etas[-1] / SMALL.noise_std ** 2,
              float(adv.eta_path.max()), adv.step.eta0)
    assert eta.max() <= top * (1 + 1e-9)
    assert adv.optimal.robbins_monro
    k = adv.optimal_dynamics.hitting_step(0.9)
    assert 0 < k <= adv.optimal_samples + 0.05 * adv.samples
    res = simulate(SMALL, adv.optimal, steps=50, runs=2, seed=1)
    assert np.all(np.isfinite(res.alignment))


def test_unreachable_or_bad_target_is_one_config_error():
    with pytest.raises(ConfigError):
        advise_schedule(MODEL, 1.5)
    with pytest.raises(ConfigError):
        advise_schedule(MODEL, 0.01)  # below the start's mean |ρ|


def test_advisor_stops_at_its_evaluation_budget_and_says_so(monkeypatch):
    """At most ``max_evaluations`` effective-dynamics runs; when the tuning and search would
    need more, they end there and ``notes`` says so in one line; too small a budget is refused
    before any work (one ConfigError naming the field). The candidates are compared on the
    pooled moments alone: replicate tables are evolved, and the diagnostic computed, only for
    the runs that are reported (the final runs; without a tolerance, no table extension
    repeats the advice's), never per candidate."""
    import attnsignal.theory.effective as eff

    calls = {"replicates": 0, "pooled": 0, "diagnose": 0}
    evolve_all, diagnose = eff._evolve_all, eff._diagnose

    def counted_evolve(table, *a, **k):
        calls["replicates" if table.replicate_a is not None else "pooled"] += 1
        return evolve_all(table, *a, **k)

    def counted_diagnose(*a, **k):
        calls["diagnose"] += 1
        return diagnose(*a, **k)

    monkeypatch.setattr(eff, "_evolve_all", counted_evolve)
    monkeypatch.setattr(eff, "_diagnose", counted_diagnose)
    seen = []
    adv = advise_schedule(SMALL, 0.9, n_samples=200, max_evaluations=4, tolerance=None,
                          progress=lambda k, n: seen.append((k, n)))
    finals = 1 if adv.optimal_dynamics is adv.dynamics else 2
    assert calls["replicates"] == calls["diagnose"] == finals, calls
    assert calls["pooled"] >= adv.evaluations - finals > 0, (calls, adv.evaluations)
    assert adv.evaluations <= 4 and seen[-1] == (adv.evaluations, 4)
    assert [k for k, _ in seen] == list(range(1, adv.evaluations + 1))
    assert any("evaluation budget" in n for n in adv.notes), adv.notes
    assert 0 < adv.optimal_samples <= adv.samples
    with pytest.raises(ConfigError, match="max_evaluations"):
        advise_schedule(SMALL, 0.9, max_evaluations=2)


def test_advise_command_refuses_too_small_a_budget_in_one_line(capsys):
    from attnsignal.cli import main

    assert main(["advise", "--max-evaluations", "2"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "max_evaluations" in err and "got 2" in err



def test_searched_candidate_has_the_steps_of_its_tabulated_schedule():
    """A search candidate (unvalidated, for speed) gives the same steps to the bit as the
    TabulatedStep it becomes, in the table and in the tail."""
    from attnsignal.theory.advisor import _knot_correction, tabulated_step

    base = tabulated_step(0.02 * (1 + np.arange(300) / 50.0) ** -0.9,
                          StepSize(eta0=0.003, k0=80.0, power=1.0))
    cand = _knot_correction(base, 300.0, 400, np.array([0.1, -0.2, 0.3, 0.0, 0.2, -0.1]), 0.05)
    ks = np.arange(1000)
    assert np.array_equal(cand.eta(ks), cand.schedule().eta(ks))


def test_only_the_last_tolerance_pass_keeps_its_warnings():
    """``effective.last_pass_warnings`` (the advisor's and the accuracy map's runs on a
    shared table): every warning of a call is recorded (a repeat too, and whatever filter is
    outside), none is shown, and the list holds the last call's alone — a pass that a table
    extension supersedes keeps its warnings to itself."""
    from attnsignal.theory.effective import last_pass_warnings

    def evolve(k: int) -> int:
        for _ in range(k):
            warnings.warn(f"pass {k}", EffectiveDynamicsAccuracyWarning)
        return k

    recorded, caught = last_pass_warnings(evolve)
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("error")
        assert recorded(2) == 2 and [str(w.message) for w in caught] == ["pass 2", "pass 2"]
        assert recorded(1) == 1 and [str(w.message) for w in caught] == ["pass 1"]
        assert recorded(0) == 0 and caught == []
    assert shown == []
