"""Step-size schedules: every family's η(k), ODE time, inverse, Robbins–Monro verdict, description
and table round trip; the generic fallbacks against direct sums; any family through simulate."""

import json
import math
import tomllib
import warnings
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pytest

import attnsignal as asg
from attnsignal.schedules import (
    SCHEDULES, ConstantStep, PiecewiseStep, Schedule, StepSize, TabulatedStep, ode_time,
    schedule_from_dict,
    step_at_time, step_sizes,
)
from attnsignal.validation import Real

POWER = StepSize(0.2, k0=50, power=0.8)
CONST = ConstantStep(0.03)
PIECE = PiecewiseStep(boundaries=(10, 300, 5000), etas=(0.1, 0.05, 0.02, 0.01))
TAB = TabulatedStep(etas=tuple(0.1 / (1 + 0.1 * np.arange(40))), tail=StepSize(0.02, k0=400))
TAB_FLAT = TabulatedStep(etas=(0.3, 0.2, 0.1))
FAMILIES = [POWER, CONST, PIECE, TAB, TAB_FLAT]


def _literal_eta(s, k: int) -> float:
    """η_k written out from each family's definition, one k at a time."""
    if isinstance(s, StepSize):
        return s.eta0 * (1 + k / s.k0) ** (-s.power)
    if isinstance(s, ConstantStep):
        return s.eta0
    if isinstance(s, PiecewiseStep):
        for b, e in zip(s.boundaries, s.etas):
            if k < b:
                return e
        return s.etas[-1]
    if k < len(s.etas):
        return s.etas[k]
    return s.etas[-1] if s.tail is None else _literal_eta(s.tail, k - len(s.etas))


def test_step_sizes_follow_the_formula():
    s = asg.StepSize(0.2, k0=50, power=0.8)
    k = np.arange(1000)
    np.testing.assert_allclose(step_sizes(s, k), 0.2 * (1 + k / 50) ** -0.8, rtol=1e-15)


@pytest.mark.parametrize("s", FAMILIES, ids=lambda s: s.kind)
def test_eta_matches_the_literal_definition(s):
    ks = np.array([0, 1, 9, 10, 11, 39, 40, 41, 299, 300, 4999, 5000, 123_456])
    got = s.eta(ks)
    assert got.dtype == np.float64 and got.shape == ks.shape
    np.testing.assert_allclose(got, [_literal_eta(s, int(k)) for k in ks], rtol=1e-14)


@pytest.mark.parametrize("s", FAMILIES, ids=lambda s: s.kind)
def test_ode_time_and_partial_sums_equal_direct_sums(s):
    ks = [0, 1, 17, 40, 999, 6000]
    direct = [math.fsum(_literal_eta(s, j) for j in range(k)) for k in ks]
    np.testing.assert_allclose(s.ode_time(ks), direct, rtol=1e-12)
    np.testing.assert_allclose([s.partial_sum(k) for k in ks], direct, rtol=1e-12)
    big = 400_000  # beyond the exact range: closed forms / Euler–Maclaurin
    exact = float(np.sum(s.eta(np.arange(big))))
    assert s.partial_sum(big) == pytest.approx(exact, rel=1e-10)


@pytest.mark.parametrize("s", FAMILIES, ids=lambda s: s.kind)
def test_step_at_time_inverts_ode_time(s):
    ks = np.array([0, 1, 17, 999, 5000, 150_000])
    back = s.step_at_time(s.ode_time(ks))
    np.testing.assert_array_equal(back, ks)
    big = 300_000
    k = s.step_at_time(float(np.sum(s.eta(np.arange(big)))))
    assert abs(int(k) - big) <= 1


@pytest.mark.parametrize("power", [0.0, 0.6, 1.0])
def test_power_family_inverse_with_the_old_module_functions(power):
    s = asg.StepSize(0.05, k0=100, power=power)
    ks = np.array([0, 1, 17, 999, 5000, 150_000])
    t = ode_time(s, ks)
    assert t[0] == 0 and np.all(np.diff(t) > 0)
    np.testing.assert_array_equal(step_at_time(s, t), ks)


@pytest.mark.parametrize("s", FAMILIES, ids=lambda s: s.kind)
def test_first_step_at_most_against_a_scan(s):
    etas = s.eta(np.arange(20_000))
    for level in (0.5, 0.1, 0.05, 0.025, 0.012, 0.0101):
        got = s.first_step_at_most(level)
        above = np.flatnonzero(etas > level)
        if above.size and above[-1] == etas.size - 1:  # still above at the end of the scan
            assert got == -1 or got >= etas.size, (level, got)
        else:
            assert got == (0 if above.size == 0 else above[-1] + 1), (level, got)


def test_tail_square_sums():
    k = 1000
    direct = float(np.sum(POWER.eta(np.arange(k, 5_000_000)) ** 2))
    rest = POWER.tail_sq_sum(5_000_000)
    assert POWER.tail_sq_sum(k) == pytest.approx(direct + rest, rel=1e-6)
    assert TAB.tail_sq_sum(0) == pytest.approx(
        float(np.sum(np.asarray(TAB.etas) ** 2)) + TAB.tail.tail_sq_sum(0), rel=1e-12)
    for s in (CONST, PIECE, TAB_FLAT, StepSize(0.1, power=0.5)):
        assert s.tail_sq_sum(10) == math.inf


def test_robbins_monro_verdicts():
    assert StepSize(0.1, power=0.75).robbins_monro and StepSize(0.1, power=1.0).robbins_monro
    assert not any(StepSize(0.1, power=p).robbins_monro for p in (0.0, 0.5, 1.5))
    assert not CONST.robbins_monro and not PIECE.robbins_monro and not TAB_FLAT.robbins_monro
    assert TAB.robbins_monro
    assert not TabulatedStep((0.1,), tail=StepSize(0.1, power=2.0)).robbins_monro


@pytest.mark.parametrize("s", FAMILIES, ids=lambda s: s.kind)
def test_describe_is_one_line_naming_the_verdict(s):
    text = s.describe()
    assert "\n" not in text and "η_k" in text
    assert ("not Robbins–Monro" in text) is (not s.robbins_monro)


@pytest.mark.parametrize("s", FAMILIES, ids=lambda s: s.kind)
def test_table_round_trip_through_json_and_toml(s):
    d = s.to_dict()
    assert d["kind"] == s.kind
    assert schedule_from_dict(json.loads(json.dumps(d))) == s
    lines = []
    for k, v in d.items():
        if isinstance(v, dict):
            continue
        lines.append(f"{k} = {json.dumps(v)}")
    text = "[step]\n" + "\n".join(lines) + "\n"
    if "tail" in d:
        text += "[step.tail]\n" + "\n".join(f"{k} = {json.dumps(v)}" for k, v in d["tail"].items())
    assert schedule_from_dict(tomllib.loads(text)["step"]) == s
    assert hash(schedule_from_dict(d)) == hash(s)


def test_a_table_without_kind_is_the_power_family():
    assert schedule_from_dict({"eta0": 0.1, "power": 0.6}) == StepSize(0.1, power=0.6)
    assert asg.StepSize is StepSize and asg.config.StepSize is StepSize


#: a kind no family is registered under, however many there are
UNKNOWN_KIND = "not_" + "_".join(SCHEDULES)


@pytest.mark.parametrize("table, field", [
    ({"kind": UNKNOWN_KIND, "eta0": 0.1}, "step.kind"),
    ({"kind": "constant", "eta0": 0.1, "power": 1.0}, "step.power"),
    ({"kind": "constant"}, "step.eta0"),
    ({"kind": "constant", "eta0": -1.0}, "step.eta0"),
    ({"kind": "piecewise", "boundaries": [10, 5], "etas": [0.1, 0.2, 0.3]}, "step.boundaries"),
    ({"kind": "piecewise", "boundaries": [10], "etas": [0.1]}, "step.etas"),
    ({"kind": "tabulated", "etas": []}, "step.etas"),
    ({"kind": "tabulated", "etas": [0.1, float("nan")]}, "step.etas"),
])
def test_bad_tables_are_one_line_config_errors(table, field):
    with pytest.raises(asg.ConfigError) as info:
        schedule_from_dict(table)
    assert info.value.field == field and "\n" not in str(info.value)


@dataclass(frozen=True)
class _ExpStep(Schedule):
    """A family defined here, with nothing but η: the generic sums must serve it."""

    eta0: float
    rate: float

    kind: ClassVar[str] = "exp-test"
    _table = {"eta0": Real(gt=0.0), "rate": Real(gt=0.0)}

    def eta(self, k: Any) -> np.ndarray:
        return self.eta0 * np.exp(-self.rate * np.asarray(k, dtype=np.float64))

    @property
    def robbins_monro(self) -> bool:
        return False

    def describe(self) -> str:
        return f"η_k = {self.eta0:g} e^(−{self.rate:g} k) (not Robbins–Monro)"


def test_generic_fallbacks_serve_a_new_family():
    s = _ExpStep(0.1, 2e-6)
    k = 600_000
    exact = float(np.sum(s.eta(np.arange(k))))
    assert s.partial_sum(k) == pytest.approx(exact, rel=1e-10)
    closed = 0.1 ** 2 * np.exp(-2 * 2e-6 * 1000) / (1 - np.exp(-2 * 2e-6))
    assert s.tail_sq_sum(1000) == pytest.approx(closed, rel=1e-6)
    assert s.first_step_at_most(0.05) == math.ceil(math.log(2) / 2e-6)
    assert s.step_at_time(s.ode_time([250_000]))[0] == 250_000


MODEL = asg.ModelConfig(d=6, n_informative=2, n_nuisance=5, theta=1.0)


@pytest.mark.parametrize("engine", ["chain", "projected"])
def test_constant_family_equals_a_power_law_of_power_zero_bit_for_bit(engine):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", asg.NotRobbinsMonroWarning)
        a = asg.simulate(MODEL, ConstantStep(0.05), steps=200, runs=3, engine=engine, seed=2)
        b = asg.simulate(MODEL, StepSize(0.05, power=0.0), steps=200, runs=3, engine=engine,
                         seed=2)
        c = asg.simulate(MODEL, PiecewiseStep((50,), (0.05, 0.05)), steps=200, runs=3,
                         engine=engine, seed=2)
    np.testing.assert_array_equal(a.alignment, b.alignment)
    np.testing.assert_array_equal(a.alignment, c.alignment)
    np.testing.assert_array_equal(a.ode_time, b.ode_time)


def test_tabulated_head_then_a_shifted_power_tail_is_the_power_law():
    s, n = StepSize(0.05, k0=100, power=0.75), 60
    tab = TabulatedStep(tuple(s.eta(np.arange(n))),
                        tail=StepSize(0.05 * (1 + n / 100) ** -0.75, k0=100 + n, power=0.75))
    ks = np.arange(0, 5000)
    np.testing.assert_allclose(tab.eta(ks), s.eta(ks), rtol=1e-13)
    a = asg.simulate(MODEL, s, steps=300, runs=2, engine="chain", seed=1)
    b = asg.simulate(MODEL, tab, steps=300, runs=2, engine="chain", seed=1)
    np.testing.assert_allclose(a.alignment, b.alignment, atol=1e-9)


def test_a_non_power_schedule_survives_save_and_load(tmp_path):
    with pytest.warns(asg.NotRobbinsMonroWarning, match="not Robbins"):
        r = asg.simulate(MODEL, PIECE, steps=30, runs=2, engine="chain")
    r.save(tmp_path / "r")
    back = asg.Result.load(tmp_path / "r")
    assert back.step == PIECE
    np.testing.assert_array_equal(back.ode_time, PIECE.ode_time(r.steps))


def test_a_sweep_takes_a_constant_schedule(tmp_path):
    from attnsignal.sweep import SweepSpec, load_sweep, run_sweep

    spec = {"sweep": {"steps": 40, "runs": 2, "engine": "chain", "seed": 3},
            "model": {"d": 6, "n_informative": 2, "n_nuisance": 5, "theta": 1.0},
            "step": {"kind": "constant", "eta0": 0.05},
            "grid": {"step.eta0": [0.02, 0.05]}}
    pts = SweepSpec.from_dict(spec).points()
    assert [p.step for p in pts] == [ConstantStep(0.02), ConstantStep(0.05)]
    with pytest.warns(asg.NotRobbinsMonroWarning):
        rep = run_sweep(spec, tmp_path / "s", executor="serial", progress=False)
    assert rep.ok
    frame = load_sweep(tmp_path / "s")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = asg.simulate(MODEL, ConstantStep(0.05), steps=40, runs=2, engine="chain", seed=3,
                           spawn_prefix=(1,))
    got = frame[frame["point"] == 1].sort_values(["run", "step"])["alignment"].to_numpy()
    np.testing.assert_array_equal(got, ref.alignment.ravel())
    with pytest.raises(asg.ConfigError, match=r"^grid\.step\.power: unknown field"):
        SweepSpec.from_dict({**spec, "grid": {"step.power": [0.5]}})


def test_run_config_file_takes_a_piecewise_schedule(tmp_path, capsys):
    import json as _json

    from attnsignal.cli import main

    cfg = tmp_path / "c.toml"
    cfg.write_text('[model]\nd = 5\nn_informative = 2\nn_nuisance = 3\ntheta = 1.0\n'
                   '[step]\nkind = "piecewise"\nboundaries = [5]\netas = [0.1, 0.02]\n'
                   '[run]\nsteps = 12\nruns = 2\nengine = "chain"\n')
    out = tmp_path / "o"
    assert main(["run", "--config", str(cfg), "--out", str(out), "--quiet", "--no-plot"]) == 0
    man = _json.loads((out / "manifest.json").read_text())
    assert man["step"] == {"kind": "piecewise", "boundaries": [5], "etas": [0.1, 0.02]}
    assert "piecewise" in capsys.readouterr().out
    assert main(["run", "--config", str(cfg), "--eta0", "0.1", "--out", str(tmp_path / "x"),
                 "--quiet"]) == 2
    assert "step.eta0: not a field of the 'piecewise' schedule" in capsys.readouterr().err


@pytest.mark.parametrize("power", [0.0, 0.6, 1.0])
def test_a_shifted_power_law_continues_the_same_sequence(power):
    s = StepSize(eta0=0.03, k0=250.0, power=power)
    j = np.arange(5000)
    for n in (0, 1, 777):
        np.testing.assert_allclose(s.shifted(n).eta(j), s.eta(n + j), rtol=1e-12)


def test_a_schedule_copy_reuses_the_partial_sums_of_an_equal_schedule(monkeypatch):
    """A pool worker unpickles a fresh copy of the schedule with each task: its ODE times come
    from the sums already computed for an equal schedule in the process (no call of ``eta``),
    bit for bit the same."""
    import pickle

    from attnsignal.config import StepSize

    s = StepSize(eta0=0.0123, k0=77.0, power=0.6)
    first = s.ode_time([0, 5, 1000, 200_000])
    copy = pickle.loads(pickle.dumps(s))
    assert "_partial_sums_cache" not in copy.__dict__
    calls = []
    monkeypatch.setattr(StepSize, "eta", lambda self, k: calls.append(k) or np.zeros(0))
    np.testing.assert_array_equal(copy.ode_time([0, 5, 1000, 200_000]), first)
    assert calls == []
