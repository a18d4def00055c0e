"""``attnsignal sweep``: bad specs fail fast (exit 2, one line, nothing written); help;
status output and exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from attnsignal.cli import main

from sweep_helpers import TINY_TOML


@pytest.mark.parametrize("old, new, field", [
    ('engine = "literal"', 'engine = "literal"\ncolour = "red"', "sweep.colour"),
    ("theta = 1.0", "theta = -1.0", "model.theta"),
    ('"model.theta" = [0.5, 1.0]', '"model.theta" = []', "grid.model.theta"),
    ('"model.theta" = [0.5, 1.0]', '"model.width" = [1, 2]', "grid.model.width"),
    ("[step]", "[steps]", "steps"),
    ("steps = 30", 'steps = "many"', "sweep.steps"),
])
def test_bad_spec_exits_2_with_one_line_and_writes_nothing(tmp_path, capsys, old, new, field):
    spec = tmp_path / "bad.toml"
    spec.write_text(TINY_TOML.replace(old, new))
    out = tmp_path / "out"
    assert main(["sweep", str(spec), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"attnsignal: error: {field}:"), err
    assert not out.exists()


def test_bad_spec_leaves_an_existing_out_dir_empty(tmp_path, capsys):
    spec = tmp_path / "bad.toml"
    spec.write_text(TINY_TOML.replace("d = 6", "d = 1"))
    out = tmp_path / "out"
    out.mkdir()
    assert main(["sweep", str(spec), "--out", str(out)]) == 2
    assert "model.d:" in capsys.readouterr().err
    assert list(out.iterdir()) == []


@pytest.mark.parametrize("argv, needle", [
    (["sweep", "SPEC"], "--out"),
    (["sweep", "status"], "DIR"),
    (["sweep", "status", "x", "--workers", "2"], "--workers"),
    (["sweep", "nope.toml", "--out", "o"], "spec: file not found"),
    (["sweep", "{spec}", "--out", "{out}", "--workers", "0"], "workers:"),
    (["sweep", "{spec}", "--out", "{out}", "--executor", "ray"], "executor:"),
    (["sweep", "{spec}", "--out", "{out}", "--scheduler", "tcp://h:1"], "scheduler:"),
    (["sweep", "{spec}", "--out", "{out}", "--chunk-runs", "x"], "chunk-runs"),
])
def test_usage_errors_exit_2_with_one_line(tmp_path, capsys, monkeypatch, argv, needle):
    monkeypatch.chdir(tmp_path)
    spec = tmp_path / "spec.toml"
    spec.write_text(TINY_TOML)
    argv = [a.format(spec=spec, out=tmp_path / "out") for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and needle in err[0], err
    assert not (tmp_path / "out").exists() and not (tmp_path / "o").exists()


def test_help_explains_both_forms():
    r = subprocess.run([sys.executable, "-m", "attnsignal", "sweep", "--help"],
                       capture_output=True, text=True, env={**os.environ, "COLUMNS": "100"})
    assert r.returncode == 0
    for text in ("sweep SPEC --out DIR", "--executor", "sweep status DIR", "done / missing / corrupt",
                 "--scheduler", "--workers", "--chunk-runs", "[grid]"):
        assert text in r.stdout, text


def test_run_then_status(tmp_path, capsys):
    spec = tmp_path / "spec.toml"
    spec.write_text(TINY_TOML)
    out = tmp_path / "out"
    assert main(["sweep", str(spec), "--out", str(out), "--executor", "local", "--workers",
                 "1", "--chunk-runs", "2", "--quiet"]) == 0
    assert "8 computed" in capsys.readouterr().out
    assert main(["sweep", "status", str(out)]) == 0
    text = capsys.readouterr().out
    assert "complete" in text and "incomplete" not in text
    assert main(["sweep", "status", str(out), "--json"]) == 0
    st = json.loads(capsys.readouterr().out)
    assert st["complete"] and st["done"] == 8 and st["missing"] == 0 and st["corrupt"] == 0
    assert st["axes"] == ["model.theta", "model.n_nuisance"]
    next(out.glob("shards/*.parquet")).unlink()
    assert main(["sweep", "status", str(out), "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["missing"] == 1
    assert main(["sweep", "status", str(tmp_path)]) == 2
    assert "not a sweep directory" in capsys.readouterr().err
