"""Hostile command lines (issue 15, classes 1–5): each ends in exit 0 with a correct result or
in exit 2 with one line naming the field — never a traceback, a NaN cell, a raw numpy
warning, or a run past its bound. Cases run in process (``attnsignal.cli.main``)."""

from __future__ import annotations

import time
from pathlib import Path

import pandas as pd
import pytest

from hostile_cases import TINY_SPEC
from hostile_helpers import assert_finite_result, run_cli

SMALL = ["--d", "4", "--n-informative", "1", "--n-nuisance", "2", "--theta", "1"]
FAST = {  # each would finish in well under a second if its output were usable
    "run": ["run", *SMALL, "--eta0", "0.1", "--steps", "2", "--runs", "1", "--engine", "chain",
            "--no-plot", "--quiet"],
    "landscape": ["landscape", *SMALL, "--points", "5", "--methods", "asymptotic", "--no-plot",
                  "--quiet"],
    "ode": ["ode", *SMALL, "--no-plot", "--quiet"],
    "reproduce": ["reproduce", "--quick", "--quiet"],
    "sweep": ["sweep", "SPEC", "--quiet"],
}
E10, E12, E30 = str(10 ** 10), str(10 ** 12), str(10 ** 30)
P63 = str(2 ** 63)


def _argv(cmd: str, spec: Path, *extra: str) -> list[str]:
    return [str(spec) if a == "SPEC" else a for a in FAST[cmd]] + list(extra)


@pytest.fixture(scope="module")
def spec(tmp_path_factory) -> Path:
    p = tmp_path_factory.mktemp("spec") / "tiny.toml"
    p.write_text(TINY_SPEC)
    return p


@pytest.fixture(scope="module")
def bad_inputs(tmp_path_factory) -> dict[str, str]:
    d = tmp_path_factory.mktemp("inputs")
    (d / "loop").symlink_to(d / "loop")
    (d / "latin1.toml").write_bytes("[model]\nd = 5  # café\n".encode("latin-1"))
    return {".": ".", "symlink loop": str(d / "loop"), "not UTF-8": str(d / "latin1.toml"),
            "missing": str(d / "nothing.toml")}


# ---------------------------------------------------------------------- class 2: file system

OUT_COMMANDS = ("run", "landscape", "ode", "reproduce", "sweep")
OUT_PATHS = ("F", "F/sub", "/dev/null", "300-char name", "RO", "RO/x", "''")


@pytest.mark.timeout(60)
@pytest.mark.parametrize("where", OUT_PATHS)
@pytest.mark.parametrize("cmd", OUT_COMMANDS)
def test_unusable_output_is_refused_before_any_work(cmd, where, hostile_paths, spec, capsys):
    t0 = time.perf_counter()
    end = run_cli(_argv(cmd, spec, "--out", hostile_paths[where]), capsys)
    assert end.how == "refused" and "out:" in end.message, end
    assert time.perf_counter() - t0 < 10  # before the work, not after it


@pytest.mark.parametrize("what", [".", "symlink loop", "not UTF-8", "missing"])
@pytest.mark.parametrize("cmd", ["run", "landscape", "ode"])
def test_unreadable_config_is_one_line(cmd, what, bad_inputs, tmp_path, capsys):
    end = run_cli(_argv(cmd, Path()) + ["--config", bad_inputs[what], "--out", str(tmp_path / "o")],
                  capsys)
    assert end.how == "refused" and "config" in end.message, end


@pytest.mark.parametrize("what", [".", "symlink loop", "not UTF-8", "missing"])
def test_unreadable_sweep_spec_is_one_line(what, bad_inputs, tmp_path, capsys):
    end = run_cli(["sweep", bad_inputs[what], "--out", str(tmp_path / "s"), "--quiet"], capsys)
    assert end.how == "refused" and "spec" in end.message, end
    assert not (tmp_path / "s").exists()


# ---------------------------------------------------------------------- class 3: sizes

SIZE_CASES = {
    "run chain d=10^30": ["run", "--engine", "chain", "--d", E30],
    "run projected d=2^63": ["run", "--engine", "projected", "--d", P63],
    "run literal d=2^63": ["run", "--engine", "literal", "--d", P63],
    "run steps=10^30": ["run", "--steps", E30],
    "run steps=2^63": ["run", "--steps", P63],
    "run 10^12 records": ["run", "--steps", E12, "--record-every", "1"],
    "run runs=10^10": ["run", "--runs", E10],
    "run runs=10^30": ["run", "--runs", E30],
    "landscape points=10^30": ["landscape", "--points", E30],
    "landscape mc N=10^30": ["landscape", "--methods", "mc", "--n-nuisance", E30],
    "landscape mc-samples=10^30": ["landscape", "--methods", "mc", "--mc-samples", E30],
    "landscape exact theta=1e300": ["landscape", "--methods", "exact", "--theta", "1e300"],
    "landscape exact noise=1e-300": ["landscape", "--methods", "exact", "--noise-std", "1e-300"],
    "ode compare steps=10^30": ["ode", "--compare", "--steps", E30],
    "ode compare runs=10^30": ["ode", "--compare", "--runs", E30],
    "ode effective steps=10^30": ["ode", "--effective", "--steps", E30],
    "ode effective batch=10^30": ["ode", "--effective", "--batch", E30],
    "reproduce workers=10^30": ["reproduce", "--workers", E30],
}


def _with_overrides(cmd: str, extra: list[str], spec: Path) -> list[str]:
    """FAST[cmd] with the flags in ``extra`` replacing its own."""
    base = _argv(cmd, spec)
    flags: dict[str, str | None] = {}  # a flag followed by another flag is a switch (None)
    i = 0
    while i < len(extra):
        if i + 1 < len(extra) and not extra[i + 1].startswith("--"):
            flags[extra[i]] = extra[i + 1]
            i += 2
        else:
            flags[extra[i]] = None
            i += 1
    out, i = [base[0]], 1
    while i < len(base):
        a = base[i]
        if a in flags:
            i += 1 if flags[a] is None else 2
            continue
        out.append(a)
        i += 1
    for k, v in flags.items():
        out += [k] if v is None else [k, v]
    return out


@pytest.mark.timeout(60)
@pytest.mark.parametrize("case", list(SIZE_CASES))
def test_sizes_nothing_can_do_are_refused_with_an_estimate(case, spec, tmp_path, capsys):
    args = SIZE_CASES[case]
    cmd, extra = args[0], args[1:]
    t0 = time.perf_counter()
    end = run_cli(_with_overrides(cmd, extra, spec) + ["--out", str(tmp_path / "o")], capsys)
    assert end.how == "refused", end
    assert time.perf_counter() - t0 < 10
    assert not (tmp_path / "o" / "manifest.json").exists()


# ---------------------------------------------------------------------- class 1: integer widths

WIDTH_CASES = {
    "chain N=10^10": ["--engine", "chain", "--n-nuisance", E10],
    "chain R=2^63": ["--engine", "chain", "--n-informative", P63],
    "projected R=2^63": ["--engine", "projected", "--n-informative", P63],
    "projected N=2^31-9": ["--engine", "projected", "--n-nuisance", str(2 ** 31 - 9)],
    "seed=2^64": ["--seed", str(2 ** 64)],
    "seed=2^63-1": ["--seed", str(2 ** 63 - 1)],
    "chain d=2^63-1": ["--engine", "chain", "--d", str(2 ** 63 - 1)],
}


@pytest.mark.timeout(180)  # the first accepted run may compile an engine
@pytest.mark.parametrize("case", list(WIDTH_CASES))
def test_integer_widths_are_supported_or_refused(case, spec, tmp_path, capsys):
    """Either a finite result that moved (exit 0) or one line (exit 2); never the silent
    ρ-stays-put, NaN-mass result of item 1."""
    argv = _with_overrides("run", WIDTH_CASES[case], spec) + ["--out", str(tmp_path / "o")]
    end = run_cli(argv, capsys)
    if end.how == "ok":
        import attnsignal as asg

        res = asg.Result.load(tmp_path / "o")

        assert_finite_result(res)


# ---------------------------------------------------------------------- class 4: theory values

THEORY_CASES = {
    "mc theta=1e300": (["landscape", "--methods", "mc", "--theta", "1e300"], "refused"),
    "asymptotic theta=1e300": (["landscape", "--methods", "asymptotic", "--theta", "1e300"],
                               "refused"),
    "asymptotic beta=30": (["landscape", "--methods", "asymptotic", "--n-informative", "5",
                            "--n-nuisance", "50", "--d", "10", "--theta", "5", "--beta", "30"],
                           "refused"),
    "mc beta=30": (["landscape", "--methods", "mc", "--n-informative", "5", "--n-nuisance", "50",
                    "--d", "10", "--theta", "5", "--beta", "30", "--mc-samples", "2000"], "ok"),
    "asymptotic theta=1000": (["landscape", "--methods", "asymptotic", "--theta", "1000"], "ok"),
}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("case", list(THEORY_CASES))
def test_theory_commands_never_print_nan(case, spec, tmp_path, capsys):
    args, want = THEORY_CASES[case]
    argv = _with_overrides(args[0], args[1:], spec) + ["--out", str(tmp_path / "o")]
    end = run_cli(argv, capsys)
    assert end.how == want, end
    if end.how == "ok":
        for f in (tmp_path / "o").glob("*.parquet"):
            frame = pd.read_parquet(f)
            num = frame.select_dtypes("number").drop(columns=["phi_stderr", "dphi_stderr"],
                                                      errors="ignore")  # mc only
            assert num.notna().all().all(), f"NaN cells in {f.name}"


# ---------------------------------------------------------------------- class 5: hangs


@pytest.mark.timeout(60)
@pytest.mark.parametrize("d", ["2"])  # d = 3 is covered in Python (test_theory_numerics)
def test_ode_of_a_flat_landscape_ends(d, spec, tmp_path, capsys):
    argv = _with_overrides("ode", ["--d", d, "--n-informative", "3", "--n-nuisance", "0",
                                   "--signal-sign", "random"], spec)
    t0 = time.perf_counter()
    end = run_cli(argv + ["--out", str(tmp_path / "o")], capsys)
    assert end.how == "ok" and time.perf_counter() - t0 < 20
