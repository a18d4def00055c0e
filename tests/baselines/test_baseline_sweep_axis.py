"""Baselines as a sweep axis: ``"sweep.method"`` in the grid runs each estimator on its grid
point, with the point index in the seeds, exactly as a direct call."""

from __future__ import annotations

import numpy as np
import pytest

import attnsignal as asg
from attnsignal.config import ConfigError
from attnsignal.baselines import method_names
from attnsignal.sweep import SweepSpec, load_sweep, run_sweep

SPEC = {
    "sweep": {"seed": 4, "runs": 3, "steps": 40, "engine": "chain", "record_every": 20},
    "model": {"d": 6, "n_informative": 3, "n_nuisance": 5, "theta": 1.0},
    "step": {"eta0": 0.3, "k0": 10.0, "power": 1.0},
    "grid": {"sweep.method": ["mean", "oja", "pca"]},
}


def test_a_sweep_accepts_attention_and_every_registered_method():
    for method in ("sga", *method_names()):
        spec = {**SPEC, "grid": {}, "sweep": {**SPEC["sweep"], "method": method}}
        assert SweepSpec.from_dict(spec).points()[0].run.method == method


def test_method_axis_runs_each_baseline_as_a_direct_call(tmp_path):
    report = run_sweep(SPEC, tmp_path / "s", executor="serial", progress=False)
    assert report.ok, report.failed
    frame = load_sweep(tmp_path / "s")
    model = asg.ModelConfig(**SPEC["model"])
    for point, method in enumerate(SPEC["grid"]["sweep.method"]):
        sub = frame[frame["point"] == point]
        assert (sub["method"] == method).all() and (sub["sweep.method"] == method).all()
        direct = asg.baseline(model, method, samples=40, runs=3, seed=4, record_every=20,
                              spawn_prefix=(point,),
                              step=asg.StepSize(**SPEC["step"]) if method == "oja" else None)
        got = sub.sort_values(["run", "step"])["alignment"].to_numpy().reshape(3, -1)
        np.testing.assert_array_equal(got, direct.alignment)


def test_unknown_method_in_the_grid_is_rejected_up_front():
    bad = {**SPEC, "grid": {"sweep.method": ["mean", "median"]}}
    with pytest.raises(ConfigError, match=r"^grid\.sweep\.method: must be 'sga' or a baseline "
                                          r"method: 'mean', .*; got 'median'$"):
        SweepSpec.from_dict(bad).points()
