"""Each experiment's claims are a pure function of its plan section and typed measurements:
they must fail on a violation, and only that claim may fail.

Every registered experiment supplies measurements under which its claims hold
(``Experiment.example_measurements``); the tests start from those, for every experiment in
the registry, and move one number at a time."""

from dataclasses import replace

import numpy as np
import pytest

from attnsignal.claims import claims_failed, claims_table_markdown
from attnsignal.reproduce import EXPERIMENTS, Plan, check_claims, get_experiment
from attnsignal.reproduce.e1_headline import E1

PLANS = [Plan.full(), Plan.quick()]


def build(plan: Plan, changes: dict | None = None) -> dict:
    """Every registered experiment's example measurements, with ``changes[name]`` applied."""
    out = {}
    for exp in EXPERIMENTS:
        m = exp.example_measurements(plan.section(exp))
        out[exp.name] = replace(m, **(changes or {}).get(exp.name, {}))
    return out


@pytest.mark.parametrize("plan", PLANS, ids=lambda p: p.mode)
def test_every_experiments_example_passes_its_claims(plan):
    rows = check_claims(plan, build(plan))
    assert claims_failed(rows) == []
    assert len(rows) == sum(len(e.claims(plan.section(e), e.example_measurements(
        plan.section(e)))) for e in EXPERIMENTS)
    # the checks of this implementation come last, each marked so in its row
    flags = [r.implementation_check for r in rows]
    assert flags == sorted(flags)
    for r in rows:
        assert r.tolerance and r.measured and r.claim
        assert r.claim.startswith("Check of this implementation (not a claim of the paper)") \
            == r.implementation_check
    md = claims_table_markdown(rows)
    assert md.count("\n") == len(rows) + 1


def test_the_paper_claims_of_the_full_plan():
    rows = check_claims(Plan.full(), build(Plan.full()))
    verdicts = [r.verdict for r in rows]
    assert verdicts.count("PASS") == len(rows) - 1
    assert any(v.startswith("holds only when") for v in verdicts)  # E3: filtering


def test_only_the_experiments_asked_for_are_checked():
    plan = Plan.full()
    rows = check_claims(plan, build(plan), [E1])
    assert len(rows) == len(E1.claims(plan.section(E1), build(plan)["E1"])) and rows


@pytest.mark.parametrize(
    "name,field,value,which",
    [
        ("E1", "mean_final_abs", 0.95, 1),
        ("E1", "min_final_abs", 0.5, 0),
        ("E2", "weak_mean_final_abs", 0.8, 0),
        ("E2", "min_mean_final_abs", 0.3, 0),
        ("E3", "mass_dense", 0.2, 0),
        ("E3", "max_nuisance_dense", 0.3, 0),
        ("E3", "mass_weak", 0.5, 0),
        ("E4", "stable_interior", 1, 0),
        ("E1", "literal_z", 6.0, 2),   # the literal spot check disagrees with the chain
        ("E1", "literal_z", -4.5, 2),
        ("E1", "d1000_effective_excess", 0.012, 3),  # the effective dynamics misses d = 1000
        # the scaling law misses the chain at d = 10⁵ (random sign) by 30 samples beyond
        # 5 % + 2 SE
        ("E7", "excess", {"fixed": [-1.0] * 4, "random": [-1.0, -1.0, -1.0, 30.0]}, 0),
    ],
)
def test_a_violated_claim_fails(name, field, value, which):
    """``which`` is the claim's place among its experiment's claims."""
    plan = Plan.full()
    exp = get_experiment(name)
    meas = build(plan, {name: {field: value}})
    own = exp.claims(plan.section(exp), meas[name])
    assert own[which].verdict == "FAIL" and own[which].failed
    rows = check_claims(plan, meas)
    # check_claims links each row to its experiment's section (its evidence)
    assert claims_failed(rows) == [replace(own[which], evidence=name)]


def test_quick_tolerances_are_looser_but_still_fail_real_violations():
    full, quick = Plan.full(), Plan.quick()
    assert quick.section(E1).mean_final_abs < full.section(E1).mean_final_abs

    def headline(plan, value):
        m = build(plan, {"E1": {"mean_final_abs": value}})["E1"]
        return E1.claims(plan.section(E1), m)[1].verdict

    assert headline(quick, 0.985) == "PASS"
    assert headline(full, 0.985) == "FAIL"
    assert headline(quick, 0.9) == "FAIL"


def _effective_check(plan, sim, se, pred):
    """The effective-dynamics row of the claims table for simulated mean |ρ| ``sim`` (with
    standard errors ``se``) against the prediction ``pred`` at d = big_d."""
    from attnsignal.reproduce.effective_overlay import mean_gap

    p = plan.section(E1)
    g = mean_gap(sim, se, np.arange(sim.size), pred, z=p.effective_se)
    m = build(plan, {"E1": {"d1000_effective_gap": g.gap, "d1000_effective_gap_se": g.se,
                            "d1000_effective_excess": g.excess}})
    rows = check_claims(plan, m)
    row = next(r for r in rows if "effective dynamics tracks" in r.claim)
    assert f"d = {p.big_d}" in row.claim and "not a claim of the paper" in row.claim
    return row


@pytest.mark.parametrize("plan", [Plan.full(), Plan.quick()])
def test_effective_dynamics_row_fails_on_a_shifted_prediction(plan):
    """A prediction that tracks the runs passes; the same shifted by 0.05 fails in full mode,
    by 0.08 in quick mode (its tolerance is 0.05 at the larger step; the runs' standard
    errors: ~0.005 mid-escape, ~0.0005 at the end — 4 quick runs' SE at d = 1000 reach 0.02),
    and the limiting ODE, 0.6 off at d = 1000, fails both."""
    rng = np.random.default_rng(0)
    steps = np.linspace(0, 1, 80)
    truth = 0.1 + 0.8 * steps / (0.3 + steps)
    se = 0.0005 + 0.008 * np.exp(-((steps - 0.2) / 0.1) ** 2)
    sim = truth + se * rng.standard_normal(steps.size)
    shift = 0.05 if plan.mode == "full" else 0.08
    assert _effective_check(plan, sim, se, truth).verdict == "PASS"
    assert _effective_check(plan, sim, se, truth + 0.004).verdict == "PASS"
    row = _effective_check(plan, sim, se, truth + shift)
    assert row.verdict == "FAIL" and row.failed
    assert _effective_check(plan, sim, se, truth - shift).verdict == "FAIL"
    assert _effective_check(plan, sim, se, np.minimum(truth + 0.6, 1.0)).verdict == "FAIL"
    # the tolerance is stated, with its standard-error allowance (quick: looser, at its
    # larger step)
    tol = "0.01" if plan.mode == "full" else "0.05"
    assert row.tolerance == f"|gap| ≤ {tol} + 3 SE at every record"


def test_path_gap_is_the_largest_gap_and_its_excess_over_z_standard_errors():
    from attnsignal.reproduce.effective_overlay import path_gap

    x = np.array([[0.0, 0.5, 1.0], [0.2, 0.7, 1.0]])  # means 0.1, 0.6, 1.0; SE 0.1, 0.1, 0
    g = path_gap(x, np.array([0, 10, 20]), np.array([0.1, 0.3, 0.95]), z=2.0)
    assert g.gap == pytest.approx(0.3) and g.step == 10 and g.se == pytest.approx(0.1)
    assert g.excess == pytest.approx(max(0.3 - 0.2, 0.05 - 0.0))
    with pytest.raises(ValueError):
        path_gap(x, np.array([0, 10, 20]), np.array([0.1, np.nan, 0.95]))
    with pytest.raises(ValueError):
        path_gap(x[:1], np.array([0, 10, 20]), np.array([0.1, 0.3, 0.95]))
