"""``attnsignal landscape`` and ``attnsignal ode`` end to end: files written, printed numbers equal
to the theory layer recomputed here, bad input as one line and exit status 2."""

import re
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from attnsignal.cli import main
from attnsignal.config import ModelConfig, StepSize
from attnsignal.results import Result
from attnsignal.theory import fixed_points, landscape, landscape_verdict, solve_ode, tracking

MODEL = ModelConfig(d=10, n_informative=4, n_nuisance=12, theta=1.0)  # interior min at ≈ −0.77
MODEL_ARGS = ["--d", "10", "--n-informative", "4", "--n-nuisance", "12", "--theta", "1"]
STEP = StepSize(0.01, k0=100.0, power=0.75)
STEP_ARGS = ["--eta0", "0.01", "--k0", "100", "--power", "0.75"]

_FP_ROW = re.compile(r"│\s*([+-]\d\.\d{6})\s*│\s*(\S+)\s*│\s*(yes|no)\s*│")
_HIT_ROW = re.compile(r"│\s*(0\.9|0\.99|0\.9965)\s*│\s*([0-9.e+-]+)\s*│\s*([0-9,]+)\s*│")


def _printed_fixed_points(text):
    return [(float(r), kind, stable == "yes") for r, kind, stable in _FP_ROW.findall(text)]


def _check_fixed_points(text, model):
    expected = fixed_points(model)
    got = _printed_fixed_points(text)
    assert len(got) == len(expected) >= 2
    for (r, kind, stable), p in zip(got, expected):
        assert r == pytest.approx(p.rho, abs=1e-6)
        assert (kind, stable) == (p.kind, p.stable)
    assert f"verdict: {landscape_verdict(model).verdict}" in text


def test_landscape_end_to_end(tmp_path, capsys):
    out = tmp_path / "ls"
    rc = main(["landscape", *MODEL_ARGS, "--points", "41", "--mc-samples", "3000",
               "--mc-points", "9", "--seed", "5", "--out", str(out), "--quiet"])
    text = capsys.readouterr().out
    assert rc == 0
    for name in ("landscape.parquet", "landscape.png", "landscape.pdf"):
        assert (out / name).stat().st_size > 1000, name
    assert not [p for p in out.iterdir() if p.name.startswith(".")]  # no temp files left

    df = pd.read_parquet(out / "landscape.parquet")
    assert set(df["method"]) == {"exact", "mc", "asymptotic"}
    rho = np.linspace(-1.0, 1.0, 41)
    for method in ("exact", "asymptotic"):
        part = df[df["method"] == method]
        ref = landscape(MODEL, rho, method)
        np.testing.assert_array_equal(part["rho"].to_numpy(), rho)
        for col in ("phi", "dphi", "field"):
            np.testing.assert_allclose(part[col].to_numpy(), getattr(ref, col), rtol=1e-12,
                                       atol=0, err_msg=f"{method} {col}")
    mc = df[df["method"] == "mc"]
    assert mc["rho"].iloc[0] == -1.0 and mc["rho"].iloc[-1] == 1.0
    assert np.isin(mc["rho"].to_numpy(), rho).all()  # a subgrid of the exact grid
    ref = landscape(MODEL, mc["rho"].to_numpy(), "mc", n_samples=3000, seed=5)
    np.testing.assert_allclose(mc["phi"].to_numpy(), ref.phi, rtol=1e-12)
    np.testing.assert_allclose(mc["dphi_stderr"].to_numpy(), ref.dphi_stderr, rtol=1e-12)

    # printed Φ table: the row ρ = +0.6 shows the exact value to 5 decimals
    phi_06 = float(landscape(MODEL, 0.6).phi)
    assert re.search(rf"│\s*\+0\.600\s*│\s*{phi_06:.5f}\s*│", text), text
    assert "Monte Carlo (n=3,000)" in text and "±" in text
    _check_fixed_points(text, MODEL)
    assert any(abs(r) < 1 for r, _, _ in _printed_fixed_points(text))  # the interior minimum


def test_landscape_one_method_random_sign(tmp_path, capsys):
    out = tmp_path / "ls"
    args = ["landscape", *MODEL_ARGS, "--signal-sign", "random", "--methods", "asymptotic",
            "--points", "11", "--out", str(out), "--quiet", "--no-plot"]
    assert main(args) == 0
    text = capsys.readouterr().out
    df = pd.read_parquet(out / "landscape.parquet")
    assert set(df["method"]) == {"asymptotic"} and len(df) == 11
    assert not (out / "landscape.png").exists()
    model = MODEL.replace(signal_sign="random")
    expected = fixed_points(model, "asymptotic")
    got = _printed_fixed_points(text)
    assert [(round(r, 6), k, s) for r, k, s in got] == [
        (round(p.rho, 6), p.kind, p.stable) for p in expected]
    assert 0.0 in [r for r, _, _ in got]  # Φ even: ρ = 0 is a fixed point


@pytest.mark.parametrize("beta, n_nuisance, warned", [(3.0, 12, True), (1.0, 400, False)])
def test_landscape_says_when_the_asymptotic_limit_is_unreliable(beta, n_nuisance, warned,
                                                                tmp_path, capsys):
    # the closed form needs R + N ≫ e^{β²}: 16 ≪ e⁹ ≈ 8 103, while 404 / e ≈ 149 is comfortable
    args = ["landscape", "--d", "10", "--n-informative", "4", "--n-nuisance", str(n_nuisance),
            "--theta", "1", "--beta", str(beta), "--methods", "asymptotic", "--points", "11",
            "--out", str(tmp_path / "ls"), "--quiet", "--no-plot"]
    assert main(args) == 0
    captured = capsys.readouterr()
    text = captured.out + captured.err
    assert ("not reliable" in text) is warned, text
    if warned:
        assert "8.1e+03" in text  # e^{β²} printed


def test_ode_end_to_end(tmp_path, capsys):
    out = tmp_path / "ode"
    rc = main(["ode", *MODEL_ARGS, *STEP_ARGS, "--rho0", "0.1", "--out", str(out), "--quiet"])
    text = capsys.readouterr().out
    assert rc == 0
    sol = solve_ode(MODEL, 0.1, step=STEP)
    rows = _HIT_ROW.findall(text)
    assert [float(x) for x, _, _ in rows] == [0.9, 0.99, 0.9965]
    for x, t, k in rows:
        assert float(t) == pytest.approx(sol.hitting_times[float(x)], rel=1e-7)
        assert int(k.replace(",", "")) == sol.hitting_steps[float(x)]
    _check_fixed_points(text, MODEL)
    assert "lies in the basin of ρ = +1" in text
    for name in ("trajectory.parquet", "ode.png", "ode.pdf"):
        assert (out / name).stat().st_size > 1000, name
    traj = pd.read_parquet(out / "trajectory.parquet")
    assert traj["t"].iloc[0] == 0.0 and traj["rho"].iloc[0] == pytest.approx(0.1)
    np.testing.assert_allclose(traj["rho"].to_numpy(), sol(traj["t"].to_numpy()), atol=1e-9)
    assert traj["t"].iloc[-1] == pytest.approx(1.25 * sol.hitting_times[0.9965])
    assert traj["rho"].iloc[-1] > 0.9965


def test_ode_compare_overlays_a_chain_simulation(tmp_path, capsys):
    out = tmp_path / "cmp"
    rc = main(["ode", *MODEL_ARGS, *STEP_ARGS, "--rho0", "0.2", "--compare", "--runs", "6",
               "--seed", "3", "--out", str(out), "--quiet"])
    text = capsys.readouterr().out
    assert rc == 0
    for name in ("ode.png", "ode.pdf", "compare.parquet", "simulation/manifest.json"):
        assert (out / name).stat().st_size > 1000, name
    res = Result.load(out / "simulation")
    assert res.engine == "chain" and res.alignment.shape[0] == 6
    np.testing.assert_allclose(res.alignment[:, 0], 0.2)
    cmp = pd.read_parquet(out / "compare.parquet")
    assert (cmp["sim_q10"] <= cmp["sim_mean"] + 1e-12).all()
    assert (cmp["sim_mean"] <= cmp["sim_q90"] + 1e-12).all()
    m = re.search(r"max gap \|mean \|?ρ\|? − ODE\| = ([0-9.e+-]+)", text)
    assert m, text
    gap = tracking(res, MODEL, float(cmp["t"].max())).gap
    assert float(m.group(1)) == pytest.approx(gap, rel=1e-3)
    assert 0 < gap < 0.5


def test_ode_stationary_start_and_config_file(tmp_path, capsys):
    out = tmp_path / "o"
    assert main(["ode", *MODEL_ARGS, "--signal-sign", "random", "--rho0", "0", "--out",
                 str(out), "--quiet", "--no-plot"]) == 0
    text = capsys.readouterr().out
    assert text.count("never (ρ0 is a fixed point)") == 3
    assert "is a repelling fixed point" in text
    traj = pd.read_parquet(out / "trajectory.parquet")
    assert (traj["rho"] == 0.0).all()

    cfg = tmp_path / "c.toml"
    cfg.write_text("[model]\nd = 10\nn_informative = 4\nn_nuisance = 12\ntheta = 1.0\n"
                   "[step]\neta0 = 0.01\nk0 = 100.0\n[run]\ninitial_alignment = 0.3\n")
    assert main(["ode", "--config", str(cfg), "--out", str(out), "--quiet", "--no-plot"]) == 0
    text = capsys.readouterr().out
    assert "ODE from ρ0 = +0.3; d=10, R=4, N=12" in text
    sol = solve_ode(MODEL, 0.3, step=STEP)
    t = float(_HIT_ROW.findall(text)[0][1])
    assert t == pytest.approx(sol.hitting_times[0.9], rel=1e-7)


@pytest.mark.parametrize("args, field", [
    (["landscape", "--points", "2"], "points"),
    (["landscape", "--points", "7.5"], "points"),
    (["landscape", "--methods", "exact,spline"], "methods"),
    (["landscape", "--theta", "-1"], "theta"),
    (["landscape", "--d", "2.5"], "d"),
    (["landscape", "--mc-samples", "1"], "mc_samples"),
    (["landscape", "--beta", "13"], "beta"),
    (["ode", "--rho0", "1.5"], "rho0"),
    (["ode", "--rho0", "abc"], "rho0"),
    (["ode", "--t-max", "-1"], "t_max"),
    (["ode", "--eta0", "0"], "eta0"),
    (["ode", "--signal-sign", "maybe"], "signal_sign"),
    (["ode", "--compare", "--runs", "0"], "runs"),
    (["ode", "--compare", "--power", "2"], "steps"),
])
def test_bad_input_is_one_line_and_exit_2(args, field, tmp_path, capsys):
    assert main([*args, "--out", str(tmp_path / "x"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith(f"attnsignal: error: {field}: ") and "; got " in err[0], err[0]
    assert not (tmp_path / "x").exists()


def test_help_and_bad_input_from_a_subprocess():
    env = {"COLUMNS": "200", "PATH": ""}
    for cmd, flags in (
        ("landscape", ("--d", "--n-informative", "--n-nuisance", "--theta", "--beta",
                       "--noise-std", "--signal-sign", "--points", "--methods", "--mc-samples",
                       "--seed", "--config", "--out")),
        ("ode", ("--d", "--theta", "--eta0", "--k0", "--power", "--rho0", "--t-max",
                 "--compare", "--runs", "--steps", "--seed", "--config", "--out")),
    ):
        res = subprocess.run([sys.executable, "-m", "attnsignal", cmd, "--help"],
                             capture_output=True, text=True, env=env)
        assert res.returncode == 0, res.stderr
        for flag in flags:
            assert flag in res.stdout, (cmd, flag)
    res = subprocess.run([sys.executable, "-m", "attnsignal", "ode", "--rho0", "-3"],
                         capture_output=True, text=True)
    assert res.returncode == 2
    assert res.stderr.strip().splitlines() == [
        "attnsignal: error: rho0: must be a number in [-1, 1]; got -3"]


def test_a_probability_near_one_is_not_printed_as_one():
    from attnsignal.cli.theory import _probability

    assert _probability(1.0 - 3.868e-05) == "1 − 3.87e-05"
    assert _probability(0.8652) == "0.8652" and _probability(1.0) == "1"
    assert _probability(3.868e-05) == "3.868e-05"


def test_landscape_shows_a_progress_bar_unless_quiet(tmp_path, capsys):
    args = ["landscape", *MODEL_ARGS, "--methods", "exact", "--points", "11", "--no-plot",
            "--out", str(tmp_path / "ls")]
    assert main(args) == 0
    loud = capsys.readouterr()
    assert "landscape" in loud.err and "2/2" in loud.err and "eta" in loud.err, loud.err  # method + fixed points
    assert main([*args, "--quiet"]) == 0
    assert "2/2" not in capsys.readouterr().err


def _flag_help(command: str, name: str) -> str:
    import typer

    from attnsignal.cli import _register, app

    _register()
    cmd = typer.main.get_command(app).commands[command]
    return next(p.help for p in cmd.params if p.name == name)


def test_the_beta_help_states_the_exact_quadratures_limit_from_its_constant():
    from attnsignal.theory.exact import MAX_BETA

    assert f"βσ <= {MAX_BETA:g}, by Monte Carlo above" in _flag_help("ode", "beta")
    assert f"method 'exact' needs βσ <= {MAX_BETA:g}" in _flag_help("landscape", "beta")


def test_ode_beyond_the_exact_quadrature_says_its_fixed_points_are_monte_carlo(tmp_path,
                                                                               capsys):
    from attnsignal.theory.exact import MAX_BETA

    beta = MAX_BETA + 1.0  # σ = 1: βσ just past the exact quadrature
    model = ModelConfig(d=10, n_informative=4, n_nuisance=12, theta=1.0, beta=beta)
    rc = main(["ode", *MODEL_ARGS, "--beta", f"{beta:g}", *STEP_ARGS, "--rho0", "0.1",
               "--no-plot", "--quiet", "--out", str(tmp_path / "ode")])
    captured = capsys.readouterr()
    assert rc == 0
    assert "fixed points (Monte-Carlo Φ')" in captured.out
    assert "exact Φ'" not in captured.out
    assert f"βσ = {beta:g} > {MAX_BETA:g}" in captured.err
    _check_fixed_points(captured.out, model)  # those of the Monte-Carlo Φ' (the default here)
    assert fixed_points(model) == fixed_points(model, "mc")
