"""Every rejected input, through Python and through the command line."""

import math

import numpy as np
import pytest

import attnsignal as asg
from attnsignal.cli import main
from attnsignal.engines import engine_names

#: the registered engines as the refusal of an unknown one lists them
ENGINES = ", ".join(map(repr, engine_names()))

GOOD_MODEL = dict(d=5, n_informative=2, n_nuisance=3, theta=1.0)
GOOD_STEP = dict(eta0=0.1, k0=10.0, power=0.75)

MODEL_BAD = [
    ("d", 1), ("d", 2.5), ("d", "7"), ("n_informative", 0), ("n_informative", 1.5),
    ("n_nuisance", -1), ("n_nuisance", 2.0 + 0.5), ("theta", -0.1), ("theta", math.inf),
    ("theta", math.nan), ("beta", 0.0), ("beta", -1.0), ("noise_std", 0.0),
    ("signal_sign", "sometimes"),
]
STEP_BAD = [("eta0", 0.0), ("eta0", -1.0), ("k0", 0.0), ("power", -0.5), ("eta0", math.nan)]
RUN_BAD = [
    ("steps", 0), ("runs", 0), ("batch", 0), ("record_every", 0), ("initial_alignment", 1.5),
    ("initial_alignment", -1.01), ("engine", "magic"), ("update", "sideways"), ("steps", 2.5),
]


@pytest.mark.parametrize("field,value", MODEL_BAD)
def test_model_config_rejects(field, value):
    with pytest.raises(asg.ConfigError) as exc:
        asg.ModelConfig(**{**GOOD_MODEL, field: value})
    msg = str(exc.value)
    assert msg.startswith(f"{field}: ") and "got" in msg and "\n" not in msg
    assert isinstance(exc.value, ValueError)


@pytest.mark.parametrize("field,value", STEP_BAD)
def test_step_size_rejects(field, value):
    with pytest.raises(asg.ConfigError, match=rf"^{field}: .*got"):
        asg.StepSize(**{**GOOD_STEP, field: value})


@pytest.mark.parametrize("field,value", RUN_BAD)
def test_simulate_rejects(field, value):
    kw = dict(steps=2, runs=1)
    kw[field] = value
    with pytest.raises(asg.ConfigError, match=rf"^{field}: .*got"):
        asg.simulate(asg.ModelConfig(**GOOD_MODEL), asg.StepSize(**GOOD_STEP), **kw)


def test_valid_configs_are_frozen_and_canonical():
    m = asg.ModelConfig(d=np.int64(5), n_informative=2, n_nuisance=3, theta=1)
    assert type(m.d) is int and type(m.theta) is float
    assert m == asg.ModelConfig(**GOOD_MODEL)
    with pytest.raises(Exception):
        m.d = 3  # type: ignore[misc]
    with pytest.raises(asg.ConfigError, match="model.bogus: unknown key"):
        asg.ModelConfig.from_dict({**GOOD_MODEL, "bogus": 1})


def test_non_robbins_monro_schedules_are_allowed_but_flagged(tmp_path):
    model = asg.ModelConfig(**GOOD_MODEL)
    for power in (0.0, 0.5, 1.5):
        step = asg.StepSize(0.05, power=power)
        assert not step.robbins_monro
        with pytest.warns(asg.NotRobbinsMonroWarning):
            r = asg.simulate(model, step, steps=2)
        assert r.manifest()["robbins_monro"] is False
    assert asg.StepSize(0.05, power=0.0).describe().endswith("constant step (not Robbins–Monro)")
    for power in (0.51, 0.75, 1.0):
        assert asg.StepSize(0.05, power=power).robbins_monro


CLI_BAD = [
    (["--d", "1"], "d: must be an integer >= 2; got 1"),
    (["--d", "2.5"], "d: must be an integer >= 2; got 2.5"),
    (["--n-informative", "0"], "n_informative: must be an integer >= 1; got 0"),
    (["--n-nuisance", "-3"], "n_nuisance: must be an integer >= 0; got -3"),
    (["--theta", "-1"], "theta: must be a finite number >= 0; got -1"),
    (["--theta", "nan"], "theta: must be a finite number >= 0; got nan"),
    (["--beta", "0"], "beta: must be a finite number > 0; got 0"),
    (["--noise-std", "-2"], "noise_std: must be a finite number > 0; got -2"),
    (["--eta0", "0"], "eta0: must be a finite number > 0; got 0"),
    (["--k0", "-1"], "k0: must be a finite number > 0; got -1"),
    (["--power", "-1"], "power: must be a finite number >= 0; got -1"),
    (["--steps", "0"], "steps: must be an integer >= 1; got 0"),
    (["--runs", "0"], "runs: must be an integer >= 1; got 0"),
    (["--batch", "0"], "batch: must be an integer >= 1; got 0"),
    (["--record-every", "0"], "record_every: must be an integer >= 1 (or None); got 0"),
    (["--initial-alignment", "2"], "initial_alignment: must be a number in [-1, 1] (or None); got 2"),
    (["--engine", "warp"], f"engine: must be one of {ENGINES}; got 'warp'"),
    (["--update", "x"], "update: must be one of 'projected', 'riemannian'; got 'x'"),
    (["--signal-sign", "x"], "signal_sign: must be one of 'fixed', 'random'; got 'x'"),
    (["--no-such-flag", "1"], "No such option: --no-such-flag"),
    # non-integer counts, non-finite reals, the other side of the alignment range
    (["--n-informative", "1.5"], "n_informative: must be an integer >= 1; got 1.5"),
    (["--n-nuisance", "2.0"], "n_nuisance: must be an integer >= 0; got 2.0"),
    (["--steps", "1.5"], "steps: must be an integer >= 1; got 1.5"),
    (["--runs", "2.5"], "runs: must be an integer >= 1; got 2.5"),
    (["--batch", "1.5"], "batch: must be an integer >= 1; got 1.5"),
    (["--record-every", "1.5"], "record_every: must be an integer >= 1 (or None); got 1.5"),
    (["--theta", "inf"], "theta: must be a finite number >= 0; got inf"),
    (["--eta0", "nan"], "eta0: must be a finite number > 0; got nan"),
    (["--initial-alignment", "-2"], "initial_alignment: must be a number in [-1, 1] (or None); got -2"),
]


@pytest.mark.parametrize("args,expected", CLI_BAD)
def test_cli_rejects_bad_input_with_one_line_and_status_2(args, expected, tmp_path, capsys):
    out = tmp_path / "out"
    rc = main(["run", *args, "--steps", "1", "--out", str(out)] if "--steps" not in args
              else ["run", *args, "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 2
    lines = [l for l in err.splitlines() if l.strip()]
    assert len(lines) == 1, err
    assert expected in lines[0]
    assert "Traceback" not in err
    assert not out.exists()


def test_cli_rejects_bad_config_file(tmp_path, capsys):
    cfg = tmp_path / "c.toml"
    cfg.write_text("[model]\nd = 10\nthetta = 1.0\n")
    assert main(["run", "--config", str(cfg), "--out", str(tmp_path / "o")]) == 2
    assert "model.thetta: unknown key" in capsys.readouterr().err
    cfg.write_text("[model]\nd = 1\n")
    assert main(["run", "--config", str(cfg), "--out", str(tmp_path / "o")]) == 2
    assert "d: must be an integer >= 2; got 1" in capsys.readouterr().err
    cfg.write_text("[model\n")
    assert main(["run", "--config", str(cfg)]) == 2
    assert "config: must be valid TOML" in capsys.readouterr().err


@pytest.mark.parametrize("toml,expected", [
    ("[model]\ntheta = nan\n", "theta: must be a finite number >= 0; got nan"),
    ("[run]\nruns = 1.5\n", "runs: must be an integer >= 1; got 1.5"),
    ("[run]\nengine = \"warp\"\n", f"engine: must be one of {ENGINES}; got 'warp'"),
    ("[step]\npower = -1\n", "power: must be a finite number >= 0; got -1"),
    ("[model]\nn_informative = 0\n", "n_informative: must be an integer >= 1; got 0"),
])
def test_cli_rejects_bad_values_in_a_config_file(toml, expected, tmp_path, capsys):
    cfg = tmp_path / "c.toml"
    cfg.write_text(toml)
    out = tmp_path / "o"
    assert main(["run", "--config", str(cfg), "--out", str(out)]) == 2
    lines = [l for l in capsys.readouterr().err.splitlines() if l.strip()]
    assert len(lines) == 1 and expected in lines[0], lines
    assert not out.exists()


def test_cli_warns_about_a_schedule_that_is_not_robbins_monro(tmp_path, capsys):
    import json

    out = tmp_path / "o"
    rc = main(["run", "--d", "5", "--n-informative", "2", "--n-nuisance", "3", "--power", "0.3",
               "--steps", "5", "--runs", "2", "--out", str(out), "--quiet", "--no-plot"])
    assert rc == 0
    err = " ".join(capsys.readouterr().err.split())  # rich may wrap the line
    assert "not Robbins" in err and "0.3" in err, err
    assert json.loads((out / "manifest.json").read_text())["robbins_monro"] is False


# --------------------------------------------------------------------------- Python API edges

MODEL = asg.ModelConfig(**GOOD_MODEL)


def _one_line_error(fn, field):
    with pytest.raises(asg.ConfigError) as info:
        fn()
    msg = str(info.value)
    assert info.value.field == field, msg
    assert "\n" not in msg and msg.startswith(f"{field}: ") and "; got " in msg, msg
    assert len(msg) < 300, msg
    return msg


@pytest.mark.parametrize("kwargs, field", [
    ({"first_run": 2 ** 70}, "first_run"),
    ({"first_run": True}, "first_run"),
    ({"first_run": -1}, "first_run"),
    ({"record_q": "yes"}, "record_q"),
    ({"spawn_prefix": ("a",)}, "spawn_prefix"),
    ({"spawn_prefix": (-1,)}, "spawn_prefix"),
    ({"spawn_prefix": 5}, "spawn_prefix"),
    ({"progress": "x"}, "progress"),
    ({"record": "sometimes"}, "record"),
    ({"record": [0, 5, 3]}, "record"),
    ({"record": [1, 99]}, "record"),
    ({"record": "log", "record_every": 2}, "record_every"),
])
def test_simulate_rejects_bad_arguments_of_its_own(kwargs, field):
    _one_line_error(lambda: asg.simulate(MODEL, asg.StepSize(**GOOD_STEP), steps=3, **kwargs),
                    field)


def test_simulate_rejects_what_is_not_a_model_or_a_schedule():
    _one_line_error(lambda: asg.simulate(GOOD_MODEL, asg.StepSize(0.1), steps=2), "model")
    _one_line_error(lambda: asg.simulate(MODEL, {"eta0": 0.1}, steps=2), "step")


def test_theory_functions_reject_bad_arguments_in_one_line():
    from attnsignal.theory import (landscape, sa_diagnostics, samples_to_reach, solve_ode,
                                   tracking)

    res = asg.simulate(MODEL, asg.StepSize(**GOOD_STEP), steps=3)
    cases = [
        (lambda: landscape(MODEL, True), "rho"),
        (lambda: landscape(MODEL, "0.5"), "rho"),
        (lambda: landscape(MODEL, [0.1, np.nan]), "rho"),
        (lambda: landscape(MODEL, 0.1, "spline"), "method"),
        (lambda: landscape("model", 0.1), "model"),
        (lambda: solve_ode(MODEL, [0.1, 0.2]), "rho0"),
        (lambda: solve_ode(MODEL, 0.1, rtol="x"), "rtol"),
        (lambda: solve_ode(MODEL, 0.1, rtol=-1), "rtol"),
        (lambda: solve_ode(MODEL, 0.1, rtol=0), "rtol"),
        (lambda: solve_ode(MODEL, 0.1, rtol=math.nan), "rtol"),
        (lambda: solve_ode(MODEL, 0.1, atol=math.nan), "atol"),
        (lambda: solve_ode(MODEL, 0.1, t_max=-1.0), "t_max"),
        (lambda: solve_ode(MODEL, 0.1, targets=[0.5, 1.0]), "targets"),
        (lambda: solve_ode(MODEL, 0.1, step="fast"), "step"),
        (lambda: tracking("x", MODEL), "result"),
        (lambda: tracking(res, MODEL, z=0), "z"),
        (lambda: sa_diagnostics(None, MODEL), "result"),
        (lambda: samples_to_reach(MODEL, asg.StepSize(0.1), target=1.0), "target"),
        (lambda: samples_to_reach(MODEL, asg.StepSize(0.1), plateau="no"), "plateau"),
    ]
    for fn, field in cases:
        _one_line_error(fn, field)


def test_from_dict_names_missing_fields_and_big_values_are_truncated():
    msg = _one_line_error(lambda: asg.ModelConfig.from_dict({"d": 5}), "model.n_informative")
    assert msg.endswith("required; got nothing")
    msg = _one_line_error(lambda: asg.ModelConfig(**{**GOOD_MODEL, "theta": np.zeros((40, 40))}),
                          "theta")
    assert "array of shape (40, 40)" in msg
    msg = _one_line_error(lambda: asg.ModelConfig(**{**GOOD_MODEL, "signal_sign": "x" * 5000}),
                          "signal_sign")
    assert len(msg) < 300 and "…" in msg


def test_sweep_grids_take_numpy_values_like_the_configs_do():
    from attnsignal.sweep import SweepSpec

    base = {"sweep": {"steps": 5, "runs": 1}, "model": dict(GOOD_MODEL), "step": dict(GOOD_STEP)}
    a = SweepSpec.from_dict({**base, "grid": {"model.n_nuisance": [np.int64(5), np.int64(6)],
                                               "model.theta": np.array([0.5, 1.0])}})
    b = SweepSpec.from_dict({**base, "grid": {"model.n_nuisance": [5, 6],
                                               "model.theta": [0.5, 1.0]}})
    assert a.identity() == b.identity() and a.n_points == 4
    assert [type(v) for v in a.points()[0].values.values()] == [int, float]


def test_the_validator_pieces():
    from attnsignal.validation import (AnyOf, Boolean, Instance, Integer, OneOf, Optional, Real,
                                       Sequence, validated)

    assert Integer(ge=0).check("n", np.int64(3)) == 3
    assert type(Real(gt=0).check("x", np.float32(0.5))) is float
    assert Sequence(Integer(ge=0), min_len=1).check("s", np.array([1, 2])) == (1, 2)
    for c, v in [(Integer(ge=0), True), (Real(ge=0), "1"), (Real(ge=0), math.inf),
                 (Boolean(), 1), (OneOf("a", "b"), "c"), (Instance(dict), []),
                 (Optional(Integer(le=3)), 4), (AnyOf(Integer(), Boolean()), "x")]:
        with pytest.raises(asg.ConfigError, match=r"^f: must be .*; got "):
            c.check("f", v)

    @validated(n=Integer(ge=1))
    def twice(n):
        return 2 * n

    assert twice(np.int64(3)) == 6
    with pytest.raises(asg.ConfigError, match=r"^n: must be an integer >= 1; got 0$"):
        twice(0)


# --------------------------------------------------------------------------- records


def test_record_steps_linear_log_and_listed():
    from attnsignal.records import n_records, record_steps

    for steps in (1, 2, 7, 199, 200, 1000, 123_457, 10 ** 12):
        for record, every in ((None, None), ("log", None), (None, max(1, steps // 3))):
            if steps > 10 ** 7 and record is None:
                continue
            ks = record_steps(steps, every, record)
            assert ks.dtype == np.int64 and ks[0] == 0 and ks[-1] == steps
            assert np.all(np.diff(ks) > 0) and ks.size == n_records(steps, every, record)
        log = record_steps(steps, record="log")
        assert log.size == min(200, steps + 1)
        if steps >= 10_000:  # evenly spaced in log k past the first, consecutive ones
            r = np.diff(np.log(log[50:].astype(float)))
            assert r.max() < 1.5 * r.min() + 1e-9
    assert record_steps(10, record=[3, 5]).tolist() == [0, 3, 5, 10]
    assert record_steps(10, 3).tolist() == [0, 3, 6, 9, 10]
    assert n_records(10 ** 15, 1) == 10 ** 15 + 1  # counted, not built
    asg.RunConfig(steps=10 ** 15, record_every=1)  # validated without building the records


def test_linear_records_are_unchanged_and_a_list_or_log_records_the_same_run():
    m, s = MODEL, asg.StepSize(**GOOD_STEP)
    a = asg.simulate(m, s, steps=120, runs=3, engine="literal", seed=5)
    b = asg.simulate(m, s, steps=120, runs=3, engine="literal", seed=5, record="linear")
    c = asg.simulate(m, s, steps=120, runs=3, engine="literal", seed=5,
                     record=a.steps.tolist())
    np.testing.assert_array_equal(a.steps, np.arange(0, 121))
    for r in (b, c):
        np.testing.assert_array_equal(a.alignment, r.alignment)
        np.testing.assert_array_equal(a.ode_time, r.ode_time)
    lg = asg.simulate(m, s, steps=120, runs=3, engine="literal", seed=5, record="log")
    assert lg.steps[0] == 0 and lg.steps[-1] == 120
    np.testing.assert_array_equal(lg.alignment, a.alignment[:, lg.steps])
    assert lg.run.record == "log" and lg.run.record_every is None
    assert asg.RunConfig(steps=5, record="linear").record is None


# --------------------------------------------------------------------------- command line


def test_version_flag_prints_the_version(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"attnsignal {asg.__version__}"


@pytest.mark.parametrize("toml, flag, expected", [
    ("[model]\ntheta = -1.0\n", ["--theta", "1"], "model.theta: must be a finite number >= 0"),
    ("[run]\nsteps = 0\n", ["--steps", "3"], "run.steps: must be an integer >= 1"),
    ("[step]\npower = -2\n", ["--power", "0.75"], "step.power: must be a finite number >= 0"),
])
def test_a_bad_config_value_is_rejected_even_when_a_flag_overrides_it(toml, flag, expected,
                                                                      tmp_path, capsys):
    cfg = tmp_path / "c.toml"
    cfg.write_text(toml)
    out = tmp_path / "o"
    assert main(["run", "--config", str(cfg), *flag, "--steps", "2", "--out", str(out)]
                if "--steps" not in flag else
                ["run", "--config", str(cfg), *flag, "--out", str(out)]) == 2
    lines = [l for l in capsys.readouterr().err.splitlines() if l.strip()]
    assert len(lines) == 1 and expected in lines[0], lines
    assert not out.exists()


def test_run_records_log_spaced_or_listed_steps_from_the_command_line(tmp_path):
    import json

    base = ["run", "--d", "5", "--n-informative", "2", "--n-nuisance", "3", "--steps", "500",
            "--runs", "2", "--engine", "chain", "--quiet", "--no-plot"]
    assert main([*base, "--record", "log", "--out", str(tmp_path / "a")]) == 0
    res = asg.Result.load(tmp_path / "a")
    assert res.steps[0] == 0 and res.steps[-1] == 500 and res.steps.size == 200
    assert json.loads((tmp_path / "a" / "manifest.json").read_text())["run"]["record"] == "log"
    assert main([*base, "--record", "10,100", "--out", str(tmp_path / "b")]) == 0
    assert asg.Result.load(tmp_path / "b").steps.tolist() == [0, 10, 100, 500]
    assert main([*base, "--record", "10,x", "--out", str(tmp_path / "c")]) == 2


def test_a_sweep_spec_takes_log_records():
    from attnsignal.sweep import SweepSpec

    base = {"sweep": {"steps": 1000, "runs": 1, "record": "log"}, "model": dict(GOOD_MODEL),
            "step": dict(GOOD_STEP)}
    p = SweepSpec.from_dict(base).points()[0]
    assert p.run.record == "log" and p.run.record_steps()[-1] == 1000
    assert p.describe()["run"]["record"] == "log"
    plain = SweepSpec.from_dict({**base, "sweep": {"steps": 1000, "runs": 1}})
    assert "record" not in plain.points()[0].describe()["run"]  # identities of old specs kept
    with pytest.raises(asg.ConfigError, match=r"^sweep\.record_every: only with linear"):
        SweepSpec.from_dict({**base, "sweep": {"steps": 10, "record": "log", "record_every": 2}})
