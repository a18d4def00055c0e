"""The claims check is a pure function of measured figures: it must fail on a violation."""

import pytest

from attnsignal.claims import Tolerances, check_claims, claims_failed, claims_table_markdown

GOOD = {
    "e1_runs": 30,
    "e1_min_final_abs": 0.995,
    "e1_mean_final_abs": 0.9971,
    "e2_weak_mean_final_abs": 0.993,
    "e2_min_mean_final_abs": 0.992,
    "e3_mass_weak": 0.061,
    "e3_mass_weak_predicted": 0.0605,
    "e3_mass_dense": 0.97,
    "e3_max_nuisance_dense": 1e-4,
    "e4_stable_interior": 0,
    "e4_monotone_configs": 13,
    "e4_configs": 13,
    "e1_literal_z": 0.7,
}


def test_all_claims_hold_on_good_figures():
    rows = check_claims(GOOD)
    assert len(rows) == 6
    assert claims_failed(rows) == []
    assert [r.verdict for r in rows].count("PASS") == 5
    assert rows[3].verdict.startswith("holds only when")
    md = claims_table_markdown(rows)
    assert md.count("\n") == 7 and "PASS" in md


@pytest.mark.parametrize(
    "key,value,which",
    [
        ("e1_mean_final_abs", 0.95, 1),
        ("e1_min_final_abs", 0.5, 0),
        ("e2_weak_mean_final_abs", 0.8, 2),
        ("e2_min_mean_final_abs", 0.3, 2),
        ("e3_mass_dense", 0.2, 3),
        ("e3_max_nuisance_dense", 0.3, 3),
        ("e3_mass_weak", 0.5, 3),
        ("e4_stable_interior", 1, 4),
        ("e1_literal_z", 6.0, 5),   # the literal spot check disagrees with the chain
        ("e1_literal_z", -4.5, 5),
    ],
)
def test_a_violated_claim_fails(key, value, which):
    rows = check_claims({**GOOD, key: value})
    assert rows[which].verdict == "FAIL"
    assert rows[which] in claims_failed(rows)
    assert all(r.verdict != "FAIL" for i, r in enumerate(rows) if i != which)


def test_quick_tolerances_are_looser_but_still_fail_real_violations():
    q = Tolerances.quick()
    assert q.mean_final_abs < Tolerances().mean_final_abs
    rows = check_claims({**GOOD, "e1_mean_final_abs": 0.985}, q)
    assert rows[1].verdict == "PASS"
    rows = check_claims({**GOOD, "e1_mean_final_abs": 0.9}, q)
    assert rows[1].verdict == "FAIL"
