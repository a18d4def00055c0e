"""``attnsignal ode --effective`` (and with ``--compare``): the effective dynamics in the table,
figure and printed summary equal the library's for the same inputs, the printed gaps of both
theories to the simulation are recomputed here from the saved runs, bad input is one line and
exit status 2 before anything is written."""

import math
import re

import numpy as np
import pandas as pd
import pytest

from attnsignal.cli import main
from attnsignal.config import ModelConfig, StepSize
from attnsignal.records import record_steps
from attnsignal.results import Result
from attnsignal.theory import solve_ode
from attnsignal.theory.effective import effective_dynamics

MODEL = ModelConfig(d=10, n_informative=4, n_nuisance=12, theta=1.0)
MODEL_ARGS = ["--d", "10", "--n-informative", "4", "--n-nuisance", "12", "--theta", "1"]
STEP = StepSize(0.01, k0=100.0, power=0.75)
STEP_ARGS = ["--eta0", "0.01", "--k0", "100", "--power", "0.75"]

EFFECTIVE_COLUMNS = ["step", "t", "ode_rho", "ode_abs_rho", "effective_mean_abs_rho",
                     "effective_mean_rho", "effective_q10_abs_rho", "effective_q50_abs_rho",
                     "effective_q90_abs_rho"]
_RUNS = re.compile(r"theory against the simulated mean \|ρ\| \((\d+) runs\)")


def _gap_rows(text: str) -> dict[str, tuple[str, str, str, str, str]]:
    """The gaps table's rows: theory -> (theory, max gap, se, runs, at step)."""
    runs = _RUNS.search(text).group(1)
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("│").split("│")]
        if len(cells) == 6 and cells[0] in ("limiting ODE", "effective dynamics"):
            rows[cells[0]] = (cells[0], cells[1], cells[2], runs, cells[3])
    return rows
_BAND = re.compile(r"band of \|ρ\| holds ([0-9.]+)% of the \(run, record\) pairs")


def test_effective_table_is_the_library_effective_dynamics(tmp_path, capsys):
    out = tmp_path / "eff"
    rc = main(["ode", *MODEL_ARGS, *STEP_ARGS, "--rho0", "0.2", "--effective", "--steps", "300",
               "--batch", "2", "--update", "riemannian", "--record", "log", "--seed", "5",
               "--out", str(out), "--quiet", "--no-plot"])
    cap = capsys.readouterr()
    text = cap.out
    assert rc == 0
    frame = pd.read_parquet(out / "effective.parquet")
    assert list(frame.columns) == EFFECTIVE_COLUMNS
    ed = effective_dynamics(MODEL, STEP, steps=300, initial_alignment=0.2, batch=2,
                            update="riemannian", record="log", seed=5)
    np.testing.assert_array_equal(frame["step"], record_steps(300, record="log"))
    np.testing.assert_array_equal(frame["effective_mean_abs_rho"], ed.mean_abs)
    np.testing.assert_array_equal(frame["effective_mean_rho"], ed.mean)
    q = ed.quantile([0.1, 0.5, 0.9])
    for i, p in enumerate((10, 50, 90)):
        np.testing.assert_array_equal(frame[f"effective_q{p}_abs_rho"], q[i])
    # ODE time of each record: t_k = Σ_{j<k} η_j, and the limiting ODE there
    etas = STEP.eta(np.arange(300))
    np.testing.assert_allclose(frame["t"], np.concatenate([[0.0], np.cumsum(etas)])[frame["step"]],
                               rtol=1e-12)
    sol = solve_ode(MODEL, 0.2, step=STEP)
    np.testing.assert_allclose(frame["ode_rho"], sol(frame["t"].to_numpy()), atol=1e-9)
    np.testing.assert_array_equal(frame["ode_abs_rho"], np.abs(frame["ode_rho"]))
    assert (frame["effective_q10_abs_rho"] <= frame["effective_q90_abs_rho"]).all()
    hit = ed.hitting_step(0.9)
    assert hit > 0
    row = next(line for line in text.splitlines() if line.startswith("│") and " 0.9 " in line)
    assert f"{hit:,} (first record)" in row  # the hitting-time table's effective column
    assert "batch 2, riemannian update" in text
    # the diagnostic's line: its warning when it flags, its standard error when not
    d = ed.diagnostic
    if d.verdict == "ok":
        assert f"Monte-Carlo standard error of the mean |ρ| at most {d.stderr:.2g}" in text
    else:
        assert d.message in " ".join((cap.out + cap.err).split())


def test_effective_with_compare_is_one_table_with_both_gaps(tmp_path, capsys):
    out = tmp_path / "cmp"
    rc = main(["ode", *MODEL_ARGS, *STEP_ARGS, "--rho0", "0.2", "--compare", "--effective",
               "--runs", "6", "--steps", "400", "--seed", "3", "--out", str(out), "--quiet"])
    text = capsys.readouterr().out
    assert rc == 0
    for name in ("ode.png", "ode.pdf", "compare.parquet", "effective.parquet"):
        assert (out / name).stat().st_size > 1000, name
    res = Result.load(out / "simulation")
    cmp = pd.read_parquet(out / "compare.parquet")
    eff = pd.read_parquet(out / "effective.parquet")
    for col in ("sim_mean_abs_rho", "sim_se_abs_rho", "sim_q10_abs_rho", "sim_q90_abs_rho",
                "ode_abs_rho", "effective_mean_abs_rho", "effective_q10_abs_rho",
                "effective_q90_abs_rho"):
        assert col in cmp.columns, col
    # one set of records: the simulation's are the effective dynamics'
    np.testing.assert_array_equal(eff["step"], res.steps)
    n = len(cmp)
    np.testing.assert_array_equal(cmp["step"], res.steps[:n])
    np.testing.assert_array_equal(cmp["effective_mean_abs_rho"], eff["effective_mean_abs_rho"][:n])
    eff_mean = eff["effective_mean_abs_rho"].to_numpy()[:n]  # the library's (test above)

    # the printed gaps, recomputed from the saved runs
    a = np.abs(np.asarray(res.alignment, dtype=np.float64))[:, :n]
    mean = a.mean(axis=0)
    se = a.std(axis=0, ddof=1) / math.sqrt(a.shape[0])
    np.testing.assert_allclose(cmp["sim_mean_abs_rho"], mean, rtol=1e-12)
    ode_abs = np.abs(solve_ode(MODEL, 0.2, step=STEP)(np.asarray(res.ode_time)[:n]))
    np.testing.assert_allclose(cmp["ode_abs_rho"], ode_abs, atol=1e-9)
    printed = _gap_rows(text)
    assert set(printed) == {"limiting ODE", "effective dynamics"}, text
    for name, pred in (("limiting ODE", ode_abs), ("effective dynamics", eff_mean)):
        diff = np.abs(mean - pred)
        j = int(np.argmax(diff))
        _, gap, se_j, runs, step = printed[name]
        assert float(gap) == pytest.approx(diff[j], rel=1e-3)
        assert float(se_j) == pytest.approx(se[j], rel=0.06)
        assert int(runs) == 6 and int(step.replace(",", "")) == res.steps[j]
    q10 = eff["effective_q10_abs_rho"].to_numpy()[:n]
    q90 = eff["effective_q90_abs_rho"].to_numpy()[:n]
    first = math.ceil(0.05 * n)
    inside = ((a >= q10) & (a <= q90))[:, first:].mean()
    assert float(_BAND.search(text).group(1)) == pytest.approx(100 * inside, abs=0.06)
    # the finite-step theory is the closer one here (η0 = 0.01 at d = 10)
    assert np.abs(mean - eff_mean).max() < np.abs(mean - ode_abs).max()


@pytest.mark.parametrize("args, field", [
    (["--effective", "--batch", "5000", "--steps", "10"], "batch"),
    (["--effective", "--steps", "60000000"], "steps"),
    (["--effective", "--steps", "2000000", "--record-every", "1"], "record"),
    (["--effective", "--update", "sideways"], "update"),
    (["--effective", "--eta0", "1e300", "--steps", "50"], "step"),
])
def test_effective_bad_input_is_one_line_and_exit_2(args, field, tmp_path, capsys):
    assert main(["ode", *MODEL_ARGS, *args, "--out", str(tmp_path / "x"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith(f"attnsignal: error: {field}: ") and "; got " in err[0], err[0]
    assert not (tmp_path / "x").exists()


def test_effective_refuses_a_baseline_method_from_the_config_file(tmp_path, capsys):
    cfg = tmp_path / "c.toml"
    cfg.write_text('[run]\nmethod = "oja"\n')
    assert main(["ode", *MODEL_ARGS, "--effective", "--config", str(cfg), "--out",
                 str(tmp_path / "x"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["attnsignal: error: method: must be 'sga' with --effective (the effective "
                   "dynamics predicts attention's SGA); got 'oja'"]
    assert not (tmp_path / "x").exists()
