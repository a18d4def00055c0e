"""Result frame, save/load round trip, atomic writes, the CLI end to end."""

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import attnsignal as asg
from attnsignal.cli import main
from attnsignal.results import FRAME_COLUMNS, atomic_write


@pytest.fixture(scope="module")
def result():
    model = asg.ModelConfig(d=6, n_informative=2, n_nuisance=4, theta=1.0, beta=1.2)
    step = asg.StepSize(0.1, k0=50, power=0.6)
    return asg.simulate(model, step, steps=40, runs=4, batch=2, record_every=7,
                        initial_alignment=0.1, seed=3, record_q=True)


def test_frame_is_tidy(result):
    f = result.to_frame()
    assert list(f.columns) == FRAME_COLUMNS
    assert len(f) == 4 * len(result.steps)
    assert f.groupby("run").size().tolist() == [len(result.steps)] * 4
    np.testing.assert_array_equal(f["abs_alignment"], np.abs(f["alignment"]))
    np.testing.assert_array_equal(
        f.pivot(index="run", columns="step", values="alignment").to_numpy(), result.alignment
    )


def test_save_load_round_trips_exactly(result, tmp_path):
    result.save(tmp_path / "r")
    back = asg.Result.load(tmp_path / "r")
    pd.testing.assert_frame_equal(back.to_frame(), result.to_frame(), check_exact=True)
    for name in ("alignment", "informative_mass", "max_nuisance_weight", "ode_time", "steps",
                 "q_final", "q_records", "diverged", "diverged_step", "run_ids"):
        np.testing.assert_array_equal(getattr(back, name), getattr(result, name), err_msg=name)
    assert back.model == result.model and back.schedule == result.schedule and back.run == result.run
    man = json.loads((tmp_path / "r" / "manifest.json").read_text())
    assert man["seed"] == 3 and man["engine"] == "literal" and man["update"] == "projected"
    assert man["version"] == asg.__version__ and man["robbins_monro"] is True
    assert man["timings"]["total_s"] > 0
    assert not list((tmp_path / "r").glob("*.tmp"))


def test_load_refuses_a_directory_without_manifest(tmp_path):
    (tmp_path / "half").mkdir()
    with pytest.raises(FileNotFoundError, match="no manifest.json"):
        asg.Result.load(tmp_path / "half")


def test_atomic_write_leaves_nothing_behind_on_failure(tmp_path):
    target = tmp_path / "x.txt"
    target.write_text("old")

    def boom(p):
        open(p, "w").write("partial")
        raise RuntimeError("interrupted")

    with pytest.raises(RuntimeError):
        atomic_write(target, boom)
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.txt"]


def test_chain_engine_has_no_query_vector(result):
    assert result.q.shape == (4, 6)
    r = asg.Result(**{**result.__dict__, "q_final": None, "run": result.run.replace(engine="chain")})
    with pytest.raises(AttributeError, match="does not form the query vector"):
        r.q


def test_cli_run_end_to_end(tmp_path, capsys):
    out = tmp_path / "run"
    rc = main(["run", "--d", "8", "--n-informative", "3", "--n-nuisance", "6", "--theta", "1.5",
               "--eta0", "0.05", "--k0", "100", "--power", "0.7", "--steps", "300", "--runs", "5",
               "--seed", "4", "--record-every", "30", "--out", str(out), "--quiet"])
    assert rc == 0
    text = capsys.readouterr().out
    assert "final |ρ|" in text and "at +ξ" in text
    frame_file = json.loads((out / "manifest.json").read_text())["files"]["frame"]["name"]
    for name in (frame_file, "manifest.json", "alignment.png", "alignment.pdf"):
        assert (out / name).stat().st_size > 0
    r = asg.Result.load(out)
    assert r.alignment.shape == (5, 11)
    # the same call from Python, with the engine the command picked, gives the same numbers
    py = asg.simulate(asg.ModelConfig(d=8, n_informative=3, n_nuisance=6, theta=1.5),
                      asg.StepSize(0.05, k0=100, power=0.7), steps=300, runs=5, seed=4,
                      record_every=30, engine=r.run.engine)
    np.testing.assert_array_equal(r.alignment, py.alignment)


def test_cli_config_file_and_flag_override(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text("[model]\nd = 6\nn_informative = 2\nn_nuisance = 3\ntheta = 1.0\n"
                   "[step]\neta0 = 0.05\n[run]\nsteps = 20\nruns = 2\nseed = 9\n")
    out = tmp_path / "o"
    assert main(["run", "--config", str(cfg), "--runs", "3", "--out", str(out), "--quiet",
                 "--no-plot"]) == 0
    r = asg.Result.load(out)
    assert r.model.d == 6 and r.run.runs == 3 and r.run.seed == 9 and r.schedule.eta0 == 0.05


def test_cli_help_explains_every_option():
    res = subprocess.run([sys.executable, "-m", "attnsignal", "run", "--help"],
                         capture_output=True, text=True, env={"COLUMNS": "200", "PATH": ""})
    assert res.returncode == 0
    for flag in ("--d", "--n-informative", "--n-nuisance", "--theta", "--beta", "--noise-std",
                 "--signal-sign", "--eta0", "--k0", "--power", "--steps", "--runs", "--batch",
                 "--engine", "--update", "--seed", "--record-every", "--initial-alignment",
                 "--config", "--out"):
        assert flag in res.stdout, flag
    top = subprocess.run([sys.executable, "-m", "attnsignal", "--help"], capture_output=True,
                         text=True)
    assert top.returncode == 0 and "run" in top.stdout


def test_bad_input_from_a_subprocess_has_no_traceback(tmp_path):
    res = subprocess.run([sys.executable, "-m", "attnsignal", "run", "--theta", "-2", "--out",
                          str(tmp_path / "x")], capture_output=True, text=True)
    assert res.returncode == 2
    assert res.stderr.strip().splitlines() == [
        "attnsignal: error: theta: must be a finite number >= 0; got -2"
    ]


def test_result_rebuilt_from_its_frame_is_the_same(result):
    back = asg.Result.from_frame(result.to_frame(), result.model, result.schedule, result.run)
    for name in ("alignment", "informative_mass", "max_nuisance_weight", "ode_time", "steps",
                 "diverged", "run_ids"):
        np.testing.assert_array_equal(getattr(back, name), getattr(result, name), err_msg=name)
    with pytest.raises(ValueError, match="every \\(run, step\\) pair exactly once"):
        asg.Result.from_frame(result.to_frame().iloc[1:], result.model, result.schedule, result.run)


def test_save_figure_keeps_dots_in_the_name_and_writes_png_and_pdf(tmp_path):
    from attnsignal.plots import _plt, save_figure

    fig, ax = _plt().subplots()
    ax.plot([0, 1], [0, 1])
    paths = save_figure(fig, tmp_path / "theta_0.5")
    assert [p.name for p in paths] == ["theta_0.5.png", "theta_0.5.pdf"]
    assert paths[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert paths[1].read_bytes()[:5] == b"%PDF-"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["theta_0.5.pdf", "theta_0.5.png"]


def test_save_figure_crops_both_files_as_tight_savefig_does(tmp_path):
    # the bounding box is found once for both formats; each file must match what
    # savefig(bbox_inches="tight") writes for its own format (to a pixel / a point)
    import re

    from matplotlib.image import imread

    from attnsignal.plots import _plt, save_figure

    def figure():
        fig, axes = _plt().subplots(1, 2, figsize=(7, 3))
        axes[0].plot([0, 1], [0, 1e4])
        axes[0].set_ylabel("a long label to widen the left margin")
        axes[1].set_title("title")
        fig.suptitle("suptitle")
        return fig

    def pdf_box(path):
        box = re.search(rb"/MediaBox \[\s*([\d.]+) ([\d.]+) ([\d.]+) ([\d.]+)", path.read_bytes())
        return [float(v) for v in box.groups()]

    png, pdf = save_figure(figure(), tmp_path / "one")
    ref = figure()
    ref.savefig(tmp_path / "ref.png", dpi=150, bbox_inches="tight")
    ref.savefig(tmp_path / "ref.pdf", bbox_inches="tight")
    _plt().close(ref)
    img, img_ref = imread(png), imread(tmp_path / "ref.png")
    assert img.shape == img_ref.shape
    assert img.shape[1] > 1.2 * 150 * 7 / 2  # cropped, not the bare axes: the label widens it
    # the same pixels, up to the antialiasing of a sub-pixel offset (a crop one pixel off
    # leaves about 4 % of them off by more than 0.25)
    diff = np.abs(img - img_ref).max(axis=2)
    assert diff.max() <= 0.5 and (diff > 0.25).mean() < 0.015
    np.testing.assert_allclose(pdf_box(pdf), pdf_box(tmp_path / "ref.pdf"), atol=1.0)


def test_save_figure_draws_the_figure_once_per_file_after_tight_layout(tmp_path, monkeypatch):
    """One Agg draw gives the box and the PNG, one more the PDF: tight_layout's placeholder
    layout engine would make savefig lay the figure out again before each format."""
    from matplotlib.figure import Figure

    from attnsignal.plots import _plt, save_figure

    draws = []
    real = Figure.draw
    monkeypatch.setattr(Figure, "draw", lambda self, r: (draws.append(r), real(self, r))[1])
    fig, ax = _plt().subplots(1, 2)
    ax[0].set_ylabel("label")
    fig.tight_layout()
    draws.clear()
    save_figure(fig, tmp_path / "f")
    assert len(draws) == 2


def test_save_figure_keeps_content_beyond_the_canvas_and_pads_with_the_face_colour(tmp_path):
    """Text placed outside the figure is in the PNG (drawn by savefig: the canvas never held
    it), as savefig(bbox_inches="tight") writes it; padding that reaches past the canvas's
    edge is the figure's face colour."""
    from matplotlib.image import imread

    from attnsignal.plots import _plt, save_figure

    def outside():
        fig, ax = _plt().subplots(figsize=(4, 3))
        ax.plot([0, 1])
        fig.text(1.2, 0.5, "outside the figure")
        return fig

    png, _ = save_figure(outside(), tmp_path / "out")
    ref = outside()
    ref.savefig(tmp_path / "ref.png", dpi=150, bbox_inches="tight")
    _plt().close(ref)
    assert imread(png).shape == imread(tmp_path / "ref.png").shape
    assert imread(png).shape[1] > 1.2 * 150 * 4

    fig, ax = _plt().subplots(figsize=(4, 3))
    fig.set_facecolor((1.0, 0.8, 0.6))
    fig.suptitle("a title at the top edge", y=1.0, va="top")
    png, _ = save_figure(fig, tmp_path / "edge")
    img = imread(png)
    assert img.shape[0] > 3 * 150  # the padding above the top edge is there
    np.testing.assert_allclose(img[0, :, :3], np.broadcast_to([1.0, 0.8, 0.6], img[0, :, :3].shape),
                               atol=1 / 255)


def test_the_command_line_loads_no_scientific_layer_before_a_command_runs():
    """Registering every command (what ``attnsignal --help`` and every command do first)
    imports neither the theory layer, numba, scipy nor matplotlib: each command imports what
    it uses when it runs (``--help`` took 1.7 s when one module imported the theory layer at
    the top; 0.5 s without)."""
    code = ("import sys, attnsignal.cli as c; c._register(); "
            "print(','.join(m for m in ('attnsignal.theory', 'numba', 'scipy', 'matplotlib') "
            "if m in sys.modules))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True).stdout.strip()
    assert loaded == ""


@pytest.mark.parametrize("argv, status, stream, text", [
    (["--version"], 0, "stdout", "attnsignal "),
    (["run", "--d", "-1"], 2, "stderr", "attnsignal: error: d: must be an integer >= 2; got -1"),
])
def test_the_console_entry_runs_the_exit_handlers_flushes_and_keeps_the_status(
        tmp_path, argv, status, stream, text):
    """``entry`` (the console script, ``python -m attnsignal``) ends without the interpreter's
    teardown, yet the exit handlers run, buffered output reaches a pipe and the status is
    main's."""
    marker = tmp_path / "handler-ran"
    code = ("import atexit, pathlib, sys\n"
            f"atexit.register(pathlib.Path({str(marker)!r}).write_text, 'yes')\n"
            f"sys.argv = ['attnsignal', *{argv!r}]\n"
            "from attnsignal.cli import entry\n"
            "entry()\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == status
    assert getattr(proc, stream).startswith(text)
    assert marker.read_text() == "yes"
