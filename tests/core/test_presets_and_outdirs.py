"""Presets are valid configurations and ``paper`` is the reproduction's E1; output
directories are never reused without ``overwrite``."""

from __future__ import annotations

import pytest

from attnsignal.config import ConfigError
from attnsignal.outdirs import new_output_dir
from attnsignal.presets import DEFAULT_PRESET, PRESETS, preset
from attnsignal.reproduce.e1_headline import E1Plan


def test_paper_preset_is_the_reproductions_headline_experiment():
    p, e1 = preset("paper"), E1Plan.full()
    assert p.model == e1.model and p.step == e1.step
    assert (p.steps, p.runs) == (e1.steps, e1.runs)


def test_every_preset_is_valid_and_an_unknown_one_is_refused():
    assert DEFAULT_PRESET in PRESETS
    for name, p in PRESETS.items():
        assert p.name == name and p.steps > 0 and p.runs > 0
        assert p.to_dict()["d"] == p.model.d
    with pytest.raises(ConfigError, match=r"^preset: must be one of paper, toy; got 'huge'$"):
        preset("huge")


def test_new_directories_are_stamped_and_never_shared(tmp_path):
    a = new_output_dir(None, base=tmp_path / "results", now=0.0)
    b = new_output_dir(None, base=tmp_path / "results", now=0.0)
    assert a != b and a.is_dir() and b.is_dir()
    assert b.name == a.name + "-2" and a.name.startswith("run-")


def test_a_named_directory_with_results_needs_overwrite(tmp_path):
    out = tmp_path / "mine"
    assert new_output_dir(out) == out  # new
    (out / "result.parquet").write_text("x")
    with pytest.raises(ConfigError, match=r"^out: must be a new or empty directory, or give "
                                          r"--overwrite"):
        new_output_dir(out)
    assert new_output_dir(out, overwrite=True) == out
    assert (out / "result.parquet").exists()  # choosing it deletes nothing


def test_a_file_in_the_way_is_refused_before_work(tmp_path):
    f = tmp_path / "f"
    f.write_text("x")
    with pytest.raises(ConfigError, match=r"^out: must be a directory \(it is a file\)"):
        new_output_dir(f)
    with pytest.raises(ConfigError, match="results folder must be a directory"):
        new_output_dir(None, base=f)

