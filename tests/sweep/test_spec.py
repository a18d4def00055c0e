"""Spec parsing and validation: every grid point is validated before any work."""

from __future__ import annotations

import copy

import pytest

from attnsignal.config import ConfigError, ModelConfig, RunConfig, StepSize
from attnsignal.sweep import SweepSpec, run_sweep

from sweep_helpers import TINY, TINY_TOML


def test_toml_and_dict_give_the_same_spec(tiny_toml):
    a = SweepSpec.from_toml(tiny_toml)
    b = SweepSpec.from_dict(TINY)
    assert a == b and a.identity() == b.identity()
    assert a.axes == ("model.theta", "model.n_nuisance")


def test_points_are_the_product_in_spec_order_last_axis_fastest(tiny_spec):
    pts = tiny_spec.points()
    assert [p.index for p in pts] == [0, 1, 2, 3]
    assert [tuple(p.values.values()) for p in pts] == [(0.5, 4), (0.5, 8), (1.0, 4), (1.0, 8)]
    p = pts[1]
    assert isinstance(p.model, ModelConfig) and isinstance(p.step, StepSize)
    assert isinstance(p.run, RunConfig)
    assert p.model.theta == 0.5 and p.model.n_nuisance == 8 and p.model.d == 6
    assert p.run_kwargs == {"steps": 30, "runs": 4, "batch": 1, "engine": "literal",
                            "update": "projected", "seed": 7, "record_every": 10,
                            "initial_alignment": None}
    assert "model.theta=0.5" in p.label()


def test_grid_overrides_its_table_and_any_section_can_be_an_axis():
    d = copy.deepcopy(TINY)
    d["grid"] = {"sweep.seed": [1, 2], "step.eta0": [0.05], "model.theta": [2]}
    pts = SweepSpec.from_dict(d).points()
    assert [p.run.seed for p in pts] == [1, 2]
    assert all(p.step.eta0 == 0.05 and p.model.theta == 2.0 for p in pts)
    assert isinstance(pts[0].values["model.theta"], float)  # validated, coerced values


def test_nested_grid_keys_as_toml_writes_unquoted_dotted_keys(tmp_path):
    text = TINY_TOML.replace('"model.theta"', "model.theta").replace('"model.n_nuisance"',
                                                                      "model.n_nuisance")
    p = tmp_path / "s.toml"
    p.write_text(text)
    assert SweepSpec.from_toml(p) == SweepSpec.from_dict(TINY)


def test_no_grid_is_one_point():
    d = copy.deepcopy(TINY)
    del d["grid"]
    s = SweepSpec.from_dict(d)
    assert s.n_points == 1 and s.points()[0].values == {}


def test_identity_ignores_spelling_but_not_content():
    d = copy.deepcopy(TINY)
    d["model"]["theta"] = 1  # int vs float
    d["model"]["beta"] = 1.0  # a default written out
    assert SweepSpec.from_dict(d).identity() == SweepSpec.from_dict(TINY).identity()
    d["grid"] = {"model.n_nuisance": [4, 8], "model.theta": [0.5, 1.0]}  # axis order matters
    assert SweepSpec.from_dict(d).identity() != SweepSpec.from_dict(TINY).identity()


def _bad(path, value):
    d = copy.deepcopy(TINY)
    *tables, key = path
    t = d
    for name in tables:
        t = t.setdefault(name, {})
    if value is KeyError:
        del t[key]
    else:
        t[key] = value
    return d


@pytest.mark.parametrize("path, value, field", [
    (("sweep", "bogus"), 1, "sweep.bogus"),
    (("model", "colour"), "red", "model.colour"),
    (("extra",), {}, "extra"),
    (("model", "theta"), -1.0, "model.theta"),
    (("sweep", "engine"), "fast", "sweep.engine"),
    (("sweep", "steps"), 0, "sweep.steps"),
    (("step", "eta0"), KeyError, "step.eta0"),
    (("grid", "model.theta"), [], "grid.model.theta"),
    (("grid", "model.theta"), [0.5, -2.0], "grid.model.theta"),
    (("grid", "model.theta"), [0.5, 0.5], "grid.model.theta"),
    (("grid", "model.theta"), 0.5, "grid.model.theta"),
    (("grid", "model.nope"), [1], "grid.model.nope"),
    (("grid", "run.steps"), [1], "grid.run.steps"),
    (("grid", "theta"), [1], "grid.theta"),
])
def test_bad_specs_raise_one_config_error_naming_the_key(path, value, field, tmp_path):
    with pytest.raises(ConfigError) as info:
        SweepSpec.from_dict(_bad(path, value))
    assert info.value.field == field
    assert "\n" not in str(info.value) and str(info.value).startswith(field + ":")
    out = tmp_path / "out"
    with pytest.raises(ConfigError):
        run_sweep(_bad(path, value), out, executor="serial", progress=False)
    assert not out.exists()


def test_a_bad_base_value_is_caught_even_when_a_grid_axis_overrides_it():
    d = _bad(("model", "theta"), -1.0)
    with pytest.raises(ConfigError, match=r"^model\.theta:"):
        SweepSpec.from_dict(d)


def test_from_toml_reports_missing_and_malformed_files(tmp_path):
    with pytest.raises(ConfigError, match="^spec: file not found"):
        SweepSpec.from_toml(tmp_path / "nope.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[sweep\nseed = 1\n")
    with pytest.raises(ConfigError, match="^spec: must be valid TOML"):
        SweepSpec.from_toml(bad)


@pytest.mark.parametrize("kwargs, field", [
    ({"executor": "cloud"}, "executor"),
    ({"workers": 0}, "workers"),
    ({"chunk_runs": 0}, "chunk_runs"),
    ({"scheduler": "tcp://127.0.0.1:1"}, "scheduler"),  # scheduler without dask
    ({"executor": "dask", "scheduler": "tcp://127.0.0.1:1", "workers": 2}, "workers"),
    ({"retries": -1}, "retries"),
])
def test_bad_options_fail_before_anything_is_written(kwargs, field, tiny_spec, tmp_path):
    out = tmp_path / "out"
    with pytest.raises(ConfigError) as info:
        run_sweep(tiny_spec, out, progress=False, **kwargs)
    assert info.value.field == field
    assert not out.exists()
