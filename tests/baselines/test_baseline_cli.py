"""attnsignal baseline: end to end, same numbers as Python, one-line rejections."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import attnsignal as asg
from attnsignal.cli import main

SMALL = ["--d", "8", "--n-informative", "3", "--n-nuisance", "6", "--theta", "1.0"]


def test_cli_baseline_end_to_end_matches_python(tmp_path, capsys):
    out = tmp_path / "b"
    rc = main(["baseline", "--method", "oja", *SMALL, "--eta0", "0.5", "--k0", "20",
               "--power", "1", "--steps", "200", "--runs", "4", "--seed", "3", "--record", "log",
               "--out", str(out)])
    assert rc == 0
    text = capsys.readouterr().out
    assert "final |ρ|" in text and "theory E|ρ|" in text
    assert (out / "alignment.png").stat().st_size > 0
    r = asg.Result.load(out)
    assert r.method == "oja"
    py = asg.baseline(asg.ModelConfig(d=8, n_informative=3, n_nuisance=6, theta=1.0), "oja",
                      samples=200, runs=4, seed=3, record="log",
                      step=asg.StepSize(eta0=0.5, k0=20, power=1.0))
    np.testing.assert_array_equal(r.alignment, py.alignment)
    np.testing.assert_array_equal(r.steps, py.steps)


def test_cli_baseline_record_list_and_config_file(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text("[model]\nd = 6\nn_informative = 2\nn_nuisance = 3\ntheta = 1.0\n"
                   "[run]\nsteps = 50\nruns = 2\nseed = 9\n")
    out = tmp_path / "o"
    assert main(["baseline", "--method", "pca", "--config", str(cfg), "--record", "5,20",
                 "--out", str(out), "--no-plot"]) == 0
    r = asg.Result.load(out)
    assert r.method == "pca" and r.model.d == 6 and r.run.seed == 9
    assert list(r.steps) == [0, 5, 20, 50]


@pytest.mark.parametrize("argv, line", [
    (["--method", "median"], "method: must be one of 'mean', 'pca', 'oja', 'oracle'; got 'median'"),
    (["--method", "mean", "--eta0", "0.1"], "step: is only used by method 'oja'"),
    (["--theta", "-1"], "theta: must be a finite number >= 0; got -1"),
    (["--steps", "0"], "steps: must be an integer >= 1; got 0"),
    (["--record", "1,x"], "record: must be 'linear', 'log' or a strictly increasing list of step "
                          "indices >= 0 (or None); got '1,x'"),
])
def test_cli_baseline_bad_input_is_one_line_and_status_2(argv, line, tmp_path, capsys):
    assert main(["baseline", *argv, "--out", str(tmp_path / "x"), "--no-plot"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and line in err[0]


def test_cli_baseline_out_that_is_a_file_is_rejected_before_work(tmp_path, capsys):
    f = tmp_path / "file"
    f.write_text("x")
    assert main(["baseline", "--out", str(f)]) == 2
    assert "out:" in capsys.readouterr().err


def test_cli_baseline_help_lists_the_flags():
    res = subprocess.run([sys.executable, "-m", "attnsignal", "baseline", "--help"],
                         capture_output=True, text=True,
                         env={"COLUMNS": "200", "PATH": "",
                              **{k: v for k, v in os.environ.items() if k == "PYTHONPATH"}})
    assert res.returncode == 0
    for flag in ("--method", "--d", "--theta", "--signal-sign", "--eta0", "--steps", "--runs",
                 "--seed", "--record", "--config", "--out"):
        assert flag in res.stdout, flag
