"""``attnsignal scaling`` end to end: the table and figure written, the predictions equal to the
law recomputed here, the measurements to ``measure_samples``'s, bad input one line and exit 2."""

import numpy as np
import pandas as pd
import pytest

from attnsignal.cli import main
from attnsignal.config import ModelConfig
from attnsignal.measure import measure_samples
from attnsignal.seeds import stream
from attnsignal.theory.scaling import scaling_law

ARGS = ["--d", "200", "--n-informative", "4", "--n-nuisance", "16", "--theta", "2",
        "--c", "0.02", "--n-samples", "300", "--seed", "3"]


def test_scaling_end_to_end(tmp_path, capsys):
    out = tmp_path / "sc"
    rc = main(["scaling", *ARGS, "--dims", "1e2", "--runs", "8", "--signs", "random",
               "--out", str(out)])
    text = capsys.readouterr().out
    assert rc == 0
    for name in ("scaling.parquet", "scaling.png", "scaling.pdf"):
        assert (out / name).stat().st_size > 1000, name
    df = pd.read_parquet(out / "scaling.parquet")
    assert list(df["d"]) == [100] and set(df["sign"]) == {"random"}
    law = scaling_law(ModelConfig(d=200, n_informative=4, n_nuisance=16, theta=2.0,
                                  signal_sign="random"), target=0.5, c=0.02, n_samples=300,
                      seed=3)
    for r in df.itertuples():
        assert r.predicted == pytest.approx(law.samples(r.d), rel=1e-9)
        assert r.eta == pytest.approx(law.step_size(r.d), rel=1e-12)
        assert r.tau == pytest.approx((20 + r.d) / 20)
        ms = measure_samples(law.model_at(r.d), law.step(r.d), 0.5,
                             steps=int(np.ceil(3.0 * r.predicted)) + 10, runs=8,
                             seed=stream(3, "d", r.d))
        assert r.measured == ms.samples and (r.measured_lo, r.measured_hi) == ms.interval
        # the hitting step through the horizon: measured and law of the same quantities
        assert ms.horizon == r.horizon_steps == int(np.ceil(3.0 * r.predicted)) + 10
        assert (r.hit_mean, r.hit_sd, r.restricted_mean, r.restricted_sd) == (
            ms.hit_mean, ms.hit_sd, ms.restricted_mean, ms.restricted_sd)
        hm = law.law(r.d).hit_moments(r.horizon_steps)
        assert (r.hit_mean_conditional, r.hit_sd_conditional, r.reached_predicted,
                r.restricted_mean_predicted) == (hm.mean, hm.sd, hm.reached, hm.restricted_mean)
    assert "samples for the mean |ρ| to reach the target" in text


def test_scaling_law_only(tmp_path, capsys):
    out = tmp_path / "law"
    rc = main(["scaling", *ARGS, "--dims", "100", "--runs", "0", "--no-plot", "--out", str(out)])
    assert rc == 0
    df = pd.read_parquet(out / "scaling.parquet")
    assert set(df["sign"]) == {"fixed", "random"} and df["measured"].isna().all()
    assert not (out / "scaling.png").exists()


@pytest.mark.parametrize("args, field", [
    (["--dims", "1e2,2.5"], "dims"),
    (["--dims", "3"], "dims"),
    (["--signs", "both"], "signs"),
    (["--target", "1"], "target"),
    (["--c", "0"], "c"),
    (["--path", "diagonal"], "path"),
    (["--runs", "1"], "runs"),
    (["--horizon", "0.5"], "horizon"),
])
def test_bad_input_is_one_line_and_exit_2(args, field, tmp_path, capsys):
    rc = main(["scaling", *args, "--out", str(tmp_path / "x")])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.startswith(f"attnsignal: error: {field}:") and err.count("\n") == 1


def test_an_output_path_that_is_a_file_is_refused(tmp_path, capsys):
    f = tmp_path / "file"
    f.write_text("x")
    rc = main(["scaling", "--runs", "0", "--out", str(f)])
    assert rc == 2 and "out:" in capsys.readouterr().err
