"""Each experiment's claims are a pure function of its plan section and typed measurements:
they must fail on a violation, and only that claim may fail."""

from dataclasses import fields, replace

import numpy as np
import pytest

from attnsignal.claims import check_claims, claims_failed, claims_table_markdown
from attnsignal.config import ModelConfig
from attnsignal.reproduce import Plan
from attnsignal.reproduce.e1_headline import E1, E1Measurements
from attnsignal.reproduce.e2_robustness import E2, E2Measurements
from attnsignal.reproduce.e3_filtering import E3, E3Measurements
from attnsignal.reproduce.e4_landscape import E4, E4Measurements
from attnsignal.reproduce.e5_tracking import E5, E5Measurements
from attnsignal.reproduce.e6_baselines import E6Measurements


def measurements(cls, **numbers):
    """A measurements object with the given numbers; its data fields (arrays, results) are
    not read by the claims and stay None."""
    data = {f.name: None for f in fields(cls) if f.metadata.get("data")}
    return cls(**numbers, **data)


def good() -> dict:
    e1 = dict(seed=2606, runs=30, mean_final_abs=0.9971, sd_final_abs=0.001, min_final_abs=0.995,
              fraction_plus=0.5, ode_gap=0.05, d1000_ode_gap=0.3, measured_samples_d100=60_000.0,
              measured_samples_d1000=float("nan"), d1000_mean_final_abs=0.9,
              d1000_sd_final_abs=0.01, d1000_min_final_abs=0.88, d1000_fraction_plus=0.5,
              pred_samples_d100=50_000.0, pred_samples_d1000=900_000.0, literal_seed=2607,
              literal_mean_abs=0.2, chain_check_seed=2608, chain_check_runs=200,
              chain_check_mean_abs=0.2, literal_z=0.7, literal_seconds_per_sample=0.02,
              chain_seconds_per_sample=2e-4, ode_gap_se=0.01, d1000_ode_gap_se=0.005,
              effective_gap=0.012, effective_gap_se=0.006, effective_excess=-0.006,
              d1000_effective_gap=0.006, d1000_effective_gap_se=0.003,
              d1000_effective_excess=-0.003, effective_seconds=10.0,
              d1000_effective_seconds=5.0)
    return {
        "E1": e1,
        "E2": dict(seed=2626, weak_mean_final_abs=0.993, min_mean_final_abs=0.992),
        "E3": dict(seed=2636, mass_weak=0.061, mass_weak_predicted=0.0605, mass_dense=0.97,
                   max_nuisance_dense=1e-4, dense_theta=3.0, dense_density=4.0,
                   weak_final_abs=0.997),
        "E4": dict(seed=2646, boundary_seed=2647, stable_interior=0, monotone_configs=12,
                   configs=12, fraction_plus=0.86, fraction_predicted=0.86, p_uniform=0.865,
                   p_uniform_se=0.02, sign_agreement=0.98, runs=400, boundary=[], rstar=-0.15),
        "E5": dict(seed=2656, sa_seed=2657, gaps=[0.08, 0.04], gap_shrinks=True,
                   smallest_gap=0.04, window_first=0.1, window_last=0.05, steps_to_T=[100, 200],
                   effective_gaps=[0.005, 0.004], effective_gap_se=[0.003, 0.003],
                   effective_excess=[-0.002, -0.004], ode_excess=[0.07, 0.03]),
        # E6 reports measurements only: it has no claims
        "E6": dict(seed=2666, dims=(100, 1000), table=[], verdict="(not read by the claims)"),
    }


CLASSES = {"E1": E1Measurements, "E2": E2Measurements, "E3": E3Measurements,
           "E4": E4Measurements, "E5": E5Measurements, "E6": E6Measurements}
WEAK = ModelConfig(d=100, n_informative=500, n_nuisance=10_000, theta=0.25)


def build(changes: dict | None = None) -> dict:
    out = {}
    for name, nums in good().items():
        nums = {**nums, **(changes or {}).get(name, {})}
        m = measurements(CLASSES[name], **nums)
        if name == "E3":
            m = replace(m, weak_model=WEAK)
        out[name] = m
    return out


def test_all_claims_hold_on_good_measurements():
    rows = check_claims(Plan.full(), build())
    assert len(rows) == 7
    assert claims_failed(rows) == []
    assert [r.verdict for r in rows].count("PASS") == 6
    assert rows[3].verdict.startswith("holds only when")
    # the checks of this implementation come last, each marked so in its row
    assert all(r.implementation_check for r in rows[-2:])
    assert not any(r.implementation_check for r in rows[:-2])
    for r in rows[-2:]:
        assert r.claim.startswith("Check of this implementation (not a claim of the paper)")
    md = claims_table_markdown(rows)
    assert md.count("\n") == 8 and "PASS" in md


@pytest.mark.parametrize(
    "name,field,value,which",
    [
        ("E1", "mean_final_abs", 0.95, 1),
        ("E1", "min_final_abs", 0.5, 0),
        ("E2", "weak_mean_final_abs", 0.8, 2),
        ("E2", "min_mean_final_abs", 0.3, 2),
        ("E3", "mass_dense", 0.2, 3),
        ("E3", "max_nuisance_dense", 0.3, 3),
        ("E3", "mass_weak", 0.5, 3),
        ("E4", "stable_interior", 1, 4),
        ("E1", "literal_z", 6.0, 5),   # the literal spot check disagrees with the chain
        ("E1", "literal_z", -4.5, 5),
        ("E1", "d1000_effective_excess", 0.012, 6),  # the effective dynamics misses d = 1000
    ],
)
def test_a_violated_claim_fails(name, field, value, which):
    rows = check_claims(Plan.full(), build({name: {field: value}}))
    assert rows[which].verdict == "FAIL"
    assert rows[which] in claims_failed(rows)
    assert all(r.verdict != "FAIL" for i, r in enumerate(rows) if i != which)


def test_quick_tolerances_are_looser_but_still_fail_real_violations():
    full, quick = Plan.full(), Plan.quick()
    assert quick.section(E1).mean_final_abs < full.section(E1).mean_final_abs
    rows = check_claims(quick, build({"E1": {"mean_final_abs": 0.985}}))
    assert rows[1].verdict == "PASS"
    assert check_claims(full, build({"E1": {"mean_final_abs": 0.985}}))[1].verdict == "FAIL"
    rows = check_claims(quick, build({"E1": {"mean_final_abs": 0.9}}))
    assert rows[1].verdict == "FAIL"


def test_every_claim_states_its_tolerance_in_both_modes():
    for plan in (Plan.full(), Plan.quick()):
        for r in check_claims(plan, build()):
            assert r.tolerance and r.measured and r.claim


def _effective_check(plan, sim, se, pred):
    """The effective-dynamics row of the claims table for simulated mean |ρ| ``sim`` (with
    standard errors ``se``) against the prediction ``pred`` at d = big_d."""
    from attnsignal.reproduce.effective_overlay import mean_gap

    p = plan.section(E1)
    g = mean_gap(sim, se, np.arange(sim.size), pred, z=p.effective_se)
    m = build({"E1": {"d1000_effective_gap": g.gap, "d1000_effective_gap_se": g.se,
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
