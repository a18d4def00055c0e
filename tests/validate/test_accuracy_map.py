"""A seeded slice of the accuracy map (attnsignal.validate): the draw, the schedule's cap from
the finite-step theory, the comparison machinery on a configuration where the effective
dynamics is right and where a deliberately wrong one (no diffusion) must be caught, resuming,
and the command's bad input. The full map is ``benchmarks/effective_map.py``."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from attnsignal.cli import main
from attnsignal.config import ModelConfig
from attnsignal.theory.finite_step import constant_step_plateau, largest_plateau_step
from attnsignal.theory.tracking import band_coverage
from attnsignal.validate import BOX, MapBox, MapConfig, MapSettings, draw_configs, run_map
from attnsignal.validate.accuracy_map import map_row
from attnsignal.validate.plan import step_cap

#: escapes in ~85 steps and is run to 170 (L = 49): the effective dynamics holds here
#: (measured with 128 runs at three seeds: excess −0.010 to +0.0003, band 78–83 %)
REAL = MapConfig(index=0, d=174, n_informative=10, n_nuisance=39, theta=1.22, beta=0.34,
                 signal_sign="fixed", batch=1, update="projected", power=0.8,
                 eta_fraction=0.8, k0_factor=2.0)
#: escapes in a few steps, then settles on its plateau for the rest of the 100-step run: the
#: plateau's spread is the diffusion's, so a law without diffusion collapses there (L = 75)
FAST = MapConfig(index=1, d=44, n_informative=13, n_nuisance=62, theta=0.8, beta=0.37,
                 signal_sign="fixed", batch=8, update="riemannian", power=0.9,
                 eta_fraction=0.9, k0_factor=2.0)
#: the budget caps the runs (~2 900 and ~270 steps); what `attnsignal validate --seed 5 --runs 128
#: --n-samples 1000 --budget 3e7` sets
SETTINGS = MapSettings(runs=128, seed=5, n_samples=1000, budget=3e7)
WRONG = dataclasses.replace(SETTINGS, diffusion_scale=0.0)


def test_draw_is_seeded_inside_the_box_and_prefix_stable():
    a = draw_configs(12, seed=3)
    assert draw_configs(5, seed=3) == a[:5]  # configuration i does not depend on n
    assert draw_configs(5, seed=4) != a[:5]
    for c in a:
        assert BOX.d[0] - 0.5 <= c.d <= BOX.d[1] + 0.5
        assert BOX.n_informative[0] - 0.5 <= c.n_informative <= BOX.n_informative[1] + 0.5
        assert BOX.nuisance_ratio[0] - 0.5 <= c.n_nuisance / c.n_informative \
            <= BOX.nuisance_ratio[1] + 0.5
        assert BOX.theta[0] <= c.theta <= BOX.theta[1] and BOX.beta[0] <= c.beta <= BOX.beta[1]
        assert BOX.eta_fraction[0] <= c.eta_fraction <= BOX.eta_fraction[1]
        assert c.batch in BOX.batches
    # both signs, both updates and both batches appear in twelve draws
    assert {c.signal_sign for c in a} == {"fixed", "random"}
    assert {c.update for c in a} == {"projected", "riemannian"}
    assert {c.batch for c in a} == {1, 8}


def test_bad_map_input_is_one_config_error():
    with pytest.raises(ValueError, match="configs: must be an integer >= 1"):
        draw_configs(0, seed=1)
    with pytest.raises(ValueError, match="runs: must be an integer >= 2"):
        MapSettings(runs=1)
    with pytest.raises(ValueError, match="power"):
        dataclasses.replace(FAST, power=0.4)


@pytest.mark.parametrize("update", ["riemannian", "projected"])
def test_largest_plateau_step_is_where_the_plateau_crosses_the_level(update):
    """Just below the cap the constant-step plateau is above |ρ| = 0.5, just above it below:
    the cap is the step whose plateau is the level (the two use the same κ_B draws)."""
    model = ModelConfig(d=30, n_informative=8, n_nuisance=24, theta=1.0, beta=0.8)
    kw = dict(n_samples=4000, seed=2)
    cap = largest_plateau_step(model, 0.5, 1, update, **kw)
    assert 0 < cap < math.inf
    assert constant_step_plateau(model, 0.97 * cap, 1, update, **kw) > 0.5
    assert constant_step_plateau(model, 1.03 * cap, 1, update, **kw) < 0.5


def test_band_coverage_counts_pairs_after_the_start():
    rng = np.random.default_rng(0)
    x = rng.uniform(size=(400, 40))
    lo, hi = np.full(40, 0.1), np.full(40, 0.9)
    assert band_coverage(x, lo, hi) == pytest.approx(0.8, abs=0.01)
    x[:, :2] = 5.0  # the first 5 % of the records (2 of 40) are left out
    assert band_coverage(x, lo, hi) == pytest.approx(0.8, abs=0.01)
    with pytest.raises(ValueError):
        band_coverage(x, lo[:-1], hi[:-1])
    x[0, 5] = np.nan
    with pytest.raises(ValueError):
        band_coverage(x, lo, hi)


def test_step_cap_keeps_the_chain_work_within_the_budget():
    c = FAST
    cap = step_cap(c, runs=128, budget=1e9, max_steps=10**6)
    assert 128 * cap * 8 * (c.n_tokens + 32) <= 1e9 < 128 * (cap + 1) * 8 * (c.n_tokens + 32)
    assert step_cap(c, runs=128, budget=1.0, max_steps=10**6) == 100  # the floor


@pytest.fixture(scope="module")
def real_map(tmp_path_factory):
    out = tmp_path_factory.mktemp("map")
    return run_map([REAL, FAST], out, SETTINGS, executor="serial", progress=False)


@pytest.fixture(scope="module")
def wrong_map(real_map):
    """The deliberately wrong law (no diffusion) at FAST, into the real map's directory."""
    return run_map([FAST], real_map.out, WRONG, executor="serial", progress=False)


def test_map_passes_the_real_dynamics_and_flags_a_law_without_diffusion(real_map, wrong_map):
    """Where the effective dynamics holds, its mean is within 0.01 + 3 SE of 128 chain runs
    and its 10–90 % band holds 80 ± 8 % of the (run, record) pairs. The deliberately wrong law
    without diffusion (``diffusion_scale=0``) at a configuration that escapes in a few steps and
    then sits on its plateau has nearly the right mean path, but its band collapses on the
    plateau, where the spread is the diffusion's: it holds far fewer pairs (measured 17 %
    against the real law's 75–83 % over seeds) and fails the band target. Both maps of that
    configuration run the same chain runs (one sweep store); a second call of the real map is
    read back from its stored rows."""
    real = real_map
    out = real.out
    row, fast = real.table.iloc[0], real.table.iloc[1]
    assert row["escaped"] and 0 < row["sim_hit"] < row["steps"]
    assert row["runs"] == 128 and row["steps"] >= 100
    assert row["pass_excess"], row["excess"]
    assert row["pass_band"], row["band"]
    assert row["ed_seconds"] > 0 and row["chain_seconds"] > 0
    assert fast["escaped"] and fast["band"] > 0.7, fast["band"]
    wrong = wrong_map
    w = wrong.table.iloc[0]
    assert w["steps"] == fast["steps"]  # the same runs
    assert not w["pass_band"] and w["band"] < 0.6, w["band"]
    assert wrong.summary()["band_fraction"] == 0.0
    assert len(list((out / "chain").glob("c001-*/"))) == 1  # one sweep store for both
    again = run_map([REAL, FAST], out, SETTINGS, executor="serial", progress=False)
    assert again.table.equals(real.table)
    for name in ("map.parquet", "map.md", "map.png"):
        assert (out / name).stat().st_size > 0


def test_map_row_counts_a_miss_without_a_flag_as_silent(real_map):
    """The bookkeeping of the targets: a configuration beyond the tolerance is a silent miss
    unless the effective dynamics flagged it."""
    pred = _prediction(real_map.out)
    steps = pred.record_steps
    values = np.tile(pred.mean_abs + 0.2, (8, 1))  # 0.2 above the prediction everywhere
    values[::2] += 1e-3  # a spread, so that the standard error is finite
    miss = map_row(pred, values, steps, 1.0, SETTINGS)
    assert not miss["pass_excess"] and miss["silent_miss"] == (not miss["flagged"])
    flagged = map_row(dataclasses.replace(pred, verdict="flagged"), values, steps, 1.0, SETTINGS)
    assert flagged["flagged"] and not flagged["silent_miss"]
    assert real_map.summary()["silent_misses"] == 0


def _prediction(out):
    import json

    from attnsignal.validate.plan import Prediction

    path = sorted((out / "predictions").glob("c000-*.json"))[0]
    return Prediction.from_dict(json.loads(path.read_text()))


def test_validate_command_rejects_bad_input_in_one_line(tmp_path, capsys):
    f = tmp_path / "file"
    f.write_text("x")
    for args, field in ((["--configs", "0"], "configs"), (["--runs", "1"], "runs"),
                        (["--budget", "-1"], "budget"), (["--out", str(f)], "out"),
                        (["--partition", "p"], "--partition"),
                        (["--executor", "nope"], "executor"),
                        (["--scheduler", "tcp://x:1"], "scheduler")):
        assert main(["validate", *args]) == 2, args
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and field in err, (args, err)
    assert not (tmp_path / "results").exists()


def test_validate_command_prints_the_summary_and_exits_1_on_a_missed_target(
        real_map, wrong_map, monkeypatch, capsys):
    """The command on the stored maps (the draw replaced by the test's configurations, so it
    reads their rows back): the summary lines and the table's path on stdout; exit 0 when the
    targets are met, 1 naming the target missed (the law without diffusion fails the band)."""
    import attnsignal.validate as v

    args = ["validate", "--out", str(real_map.out), "--seed", "5", "--runs", "128",
            "--n-samples", "1000", "--budget", "3e7", "--quiet", "--executor", "serial"]
    monkeypatch.setattr(v, "draw_configs", lambda n, seed: [REAL, FAST][:n])
    s = real_map.summary()
    met = (s["excess_fraction"] >= s["excess_target"] and s["band_fraction"] >= s["band_target"]
           and s["silent_misses"] == 0)
    assert main([*args, "--configs", "2"]) == (0 if met else 1)
    text = capsys.readouterr().out
    assert "2 configurations" in text and "band 80 ± 8 %" in text and "map.parquet" in text
    monkeypatch.setattr(v, "draw_configs", lambda n, seed: [FAST])
    monkeypatch.setattr(v, "MapSettings", lambda **kw: MapSettings(**kw, diffusion_scale=0.0))
    assert main([*args, "--configs", "1"]) == 1
    captured = capsys.readouterr()
    assert "target(s) missed: band" in captured.err + captured.out
    assert wrong_map.table.equals(v.MapResult.load(real_map.out).table)  # read back, not rerun


def test_a_small_box_draws_inside_its_own_ranges():
    box = MapBox(d=(20, 30), n_informative=(5, 6), nuisance_ratio=(1.0, 1.5))
    for c in draw_configs(6, seed=1, box=box):
        assert 20 <= c.d <= 30 and 5 <= c.n_informative <= 6


def test_recomputed_row_comes_from_the_stored_runs_and_the_current_prediction(real_map):
    """``repredicted_row`` (``benchmarks/effective_map.py --reverdict``) makes the prediction
    again at the stored schedule and records and compares it with the stored chain runs: a
    stored prediction and row that were wrong (mean ``|ρ|`` 0.2 too high, verdict, excess and
    band made up) do not survive into it, and with the code unchanged it reproduces the map's
    own prediction and row bit for bit."""
    import json

    from attnsignal.validate.accuracy_map import repredicted_row
    from attnsignal.validate.plan import Prediction

    out = real_map.out
    stored_row = real_map.table.iloc[1].to_dict()  # FAST: the cheaper one
    path = sorted((out / "predictions").glob("c001-*.json"))[0]
    stored = Prediction.from_dict(json.loads(path.read_text()))
    wrong = dataclasses.replace(stored, mean_abs=stored.mean_abs + 0.2,
                                verdict="refused" if stored.verdict == "ok" else "ok")
    made_up = {**stored_row, "excess": 1.0, "band": 0.0}
    row, pred = repredicted_row(out, wrong, SETTINGS, made_up)
    assert np.array_equal(pred.mean_abs, stored.mean_abs)
    for k in ("excess", "band", "gap", "gap_se", "verdict", "final_pred", "final_sim", "steps",
              "sim_hit"):
        assert row[k] == stored_row[k], k
