"""The commands agree: one preset of defaults, the fastest exact engine by declared cost, a new
output directory per run (never an overwrite without --overwrite), help text without typer's
type tags, errors in the command line's own words, and ``compare`` of saved runs."""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

import pytest

from attnsignal.cli import main
from attnsignal.config import ModelConfig, RunConfig
from attnsignal.engines import engines_with, fastest_engine, get_engine
from attnsignal.engines.base import Capabilities
from attnsignal.presets import DEFAULT_PRESET, PRESETS
from attnsignal.results import Result
from attnsignal.schedules import StepSize

TINY = ["--d", "6", "--n-informative", "2", "--n-nuisance", "3", "--steps", "40",
        "--runs", "2", "--record-every", "10", "--quiet", "--no-plot"]


def _help(capsys, *argv: str) -> str:
    assert main([*argv, "--help"]) == 0
    return capsys.readouterr().out


@pytest.fixture(autouse=True)
def _columns(monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")


@pytest.mark.parametrize("command", ["run", "baseline", "advise", "landscape", "ode"])
def test_every_model_command_offers_the_presets_and_states_the_default(capsys, command):
    text = " ".join(_help(capsys, command).split())
    assert "--preset" in text and f"(default: {DEFAULT_PRESET})" in text
    assert "<bool>" not in text and "<str>" not in text and "<path>" not in text


@pytest.mark.parametrize("command, usage", [("compare", "compare [OPTIONS] DIR..."),
                                            ("sweep", "sweep [OPTIONS] SPEC|status [DIR]")])
def test_positional_arguments_show_their_names_not_type_tags(capsys, command, usage):
    text = " ".join(_help(capsys, command).split())
    assert usage in text
    assert re.search(r"<[a-z][\w\[\], ]*>", text) is None, text


def test_help_keeps_square_brackets_that_rich_would_take_for_markup(capsys):
    text = " ".join(_help(capsys, "reproduce").split())
    assert "a [slurm] table" in text


def test_the_default_engine_is_the_cheapest_exact_one_by_declared_cost():
    model = ModelConfig(d=20, n_informative=10, n_nuisance=40, theta=1.0)
    run = RunConfig(steps=10)
    name = fastest_engine(model, run)
    cost = {n: get_engine(n).capabilities.cost_of(1, 50, 20)
            for n in engines_with(exact_in_law=True, opt_in=False)}
    assert cost[name] == min(cost.values())
    assert not get_engine(name).capabilities.opt_in  # chain32 only by name


def test_declared_costs_evaluate_as_sums_of_products():
    caps = Capabilities(has_query=True, cost="O(B (L + d))")
    assert caps.cost_of(2, 3, 4) == 14.0
    assert Capabilities(has_query=False, cost="O(B L d)").cost_of(2, 3, 4) == 24.0
    with pytest.raises(ValueError, match="unknown term"):
        Capabilities(has_query=False, cost="O(B L x)").cost_of(1, 1, 1)


def test_run_starts_from_the_preset_and_flags_override_it(tmp_path):
    out = tmp_path / "p"
    assert main(["run", "--preset", "paper", "--steps", "3", "--runs", "1", "--quiet",
                 "--no-plot", "--out", str(out)]) == 0
    r = Result.load(out)
    paper = PRESETS["paper"]
    assert r.model == paper.model and r.schedule.eta0 == paper.step.eta0
    assert r.run.engine == fastest_engine(r.model, r.run)


def test_a_directory_with_results_is_never_overwritten_without_the_flag(tmp_path, capsys):
    out = tmp_path / "r"
    assert main(["run", *TINY, "--out", str(out)]) == 0
    first = (out / "manifest.json").read_text()
    assert main(["run", *TINY, "--seed", "1", "--out", str(out)]) == 2
    assert "--overwrite" in capsys.readouterr().err
    assert (out / "manifest.json").read_text() == first
    assert main(["run", *TINY, "--seed", "1", "--out", str(out), "--overwrite"]) == 0
    assert json.loads((out / "manifest.json").read_text())["seed"] == 1


def test_without_out_every_run_gets_a_new_timestamped_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["run", *TINY]) == 0
    assert main(["run", *TINY]) == 0
    made = sorted(p.name for p in (tmp_path / "results").iterdir())
    assert len(made) == 2 and all(re.fullmatch(r"run-\d{8}-\d{6}(-\d+)?", n) for n in made)


def test_landscape_errors_name_the_flag_not_the_python_argument(capsys):
    assert main(["landscape", "--beta", "30", "--methods", "exact", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "--methods mc" in err and "method='" not in err


def test_advise_prints_a_run_line_that_the_run_command_accepts(tmp_path):
    from attnsignal.cli.advise import _run_line

    adv = SimpleNamespace(step=StepSize(eta0=0.0123456, k0=1234.5678, power=0.987654),
                          samples=12_345)
    line = _run_line(None, {"d": "6", "theta": None}, None, adv, None, 1, "projected")
    assert line == ("attnsignal run --d 6 --eta0 0.0123 --k0 1.23e+03 --power 0.988 "
                    "--steps 19000")
    words = line.split()[2:]
    assert main(["run", *words, "--n-informative", "2", "--n-nuisance", "3", "--steps", "5",
                 "--runs", "1", "--quiet", "--no-plot", "--out", str(tmp_path / "a")]) == 0


def test_compare_overlays_saved_runs_and_tabulates_their_configurations(tmp_path, capsys):
    a, b = tmp_path / "a", tmp_path / "b"
    assert main(["run", *TINY, "--out", str(a)]) == 0
    assert main(["run", *TINY, "--eta0", "0.05", "--out", str(b)]) == 0
    capsys.readouterr()
    assert main(["compare", str(a), str(b), "--out", str(tmp_path / "c"), "--quiet"]) == 0
    text = capsys.readouterr().out
    assert "common to all" in text and "schedule" in text
    rows = (tmp_path / "c" / "compare.csv").read_text().strip().splitlines()
    assert len(rows) == 3 and rows[1].startswith("a,") and rows[2].startswith("b,")
    assert (tmp_path / "c" / "compare.png").stat().st_size > 0
    assert main(["compare", str(tmp_path / "c"), "--out", str(tmp_path / "d")]) == 2
