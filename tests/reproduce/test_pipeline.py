"""A reduced reproduction end to end: every section, every figure, a parseable claims table,
resumption from the stores, and the command line's exit statuses."""

from __future__ import annotations

import base64
import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from attnsignal.config import ModelConfig, StepSize
from attnsignal.reproduce import Plan, reproduce

SECTIONS = [
    "Claims of the paper, checked",
    "E1 — headline",
    "E2 — robustness",
    "E3 — attention filtering",
    "E4 — landscape",
    "E5 — the recursion tracks the limiting ODE",
    "Timings",
]
FIGURES = ["e1_headline", "e2_robustness", "e3_filtering", "e4_landscape", "e4_basins",
           "e5_tracking", "e5_sa_diagnostics"]
VERDICT = re.compile(r"^(PASS|FAIL|holds only when .+)$")


def tiny_plan() -> Plan:
    """Every experiment at toy size (seconds): same code paths, smaller models and budgets."""
    return replace(
        Plan.quick_plan(seed=7),
        e1_model=ModelConfig(d=20, n_informative=10, n_nuisance=200, theta=0.25),
        e1_big_d=60, e1_runs=4, e1_steps=1500, e1_records=30, theory_samples=300,
        e1_step=StepSize(eta0=0.05, k0=300.0, power=1.0),
        literal_runs=2, literal_steps=20,
        e2_thetas=(0.25, 1.0), e2_ratios=(1, 20), e2_R=10, e2_d=20, e2_runs=3, e2_steps=800,
        e3_thetas=(0.25, 2.0), e3_densities=(0.05, 1.0), e3_N=40, e3_runs=2, e3_steps=300,
        e4_runs=20, e4_boundary_runs=4, e4_steps=20_000,
        e5_eta0s=(0.04, 0.02), e5_runs=40, e5_sa_T=5.0,
    )


def _claims_rows(md: str) -> list[list[str]]:
    block = md.split("## Claims of the paper, checked", 1)[1].split("\n## ", 1)[0]
    lines = [ln for ln in block.splitlines() if ln.startswith("|")]
    assert lines[0].startswith("| claim | measured | tolerance | verdict")
    assert set(lines[1].replace("|", "")) <= {"-"}
    return [[c.strip() for c in ln.strip("|").split(" | ")] for ln in lines[2:]]


@pytest.fixture(scope="module")
def reduced(tmp_path_factory):
    out = tmp_path_factory.mktemp("repro")
    res = reproduce(out, plan=tiny_plan(), progress=False, log=lambda s: None)
    return out, res


def test_reduced_reproduction_writes_every_section_and_figure(reduced):
    out, res = reduced
    md = (out / "report.md").read_text()
    heads = [ln[3:] for ln in md.splitlines() if ln.startswith("## ")]
    for s in SECTIONS:
        assert any(h.startswith(s) for h in heads), (s, heads)
    for f in FIGURES:
        for ext in ("png", "pdf"):
            p = out / "figures" / f"{f}.{ext}"
            assert p.is_file() and p.stat().st_size > 1000, p
        assert f"figures/{f}.png" in md
    html = (out / "report.html").read_text()
    # self-contained: every figure embedded, no link to a PNG on disk
    assert html.count("data:image/png;base64,") == len(FIGURES)
    first = re.split(r"['\"]", html.split("data:image/png;base64,", 1)[1], maxsplit=1)[0]
    assert base64.b64decode(first)[:8] == b"\x89PNG\r\n\x1a\n"
    assert not re.search(r"src=['\"]figures/", html)
    for name in ("E1", "E2", "E3", "E4", "E5"):
        assert (out / "data" / f"{name}.parquet").is_file() or \
            any((out / "data").glob(f"{name}_*.parquet")), name


def test_each_section_reports_what_the_paper_asks_for(reduced):
    out, res = reduced
    md = (out / "report.md").read_text()
    sec = {h.split("\n", 1)[0]: h for h in md.split("\n## ")[1:]}
    e1 = next(v for k, v in sec.items() if k.startswith("E1"))
    assert "| d = 20 |" in e1 and "| d = 60 |" in e1  # both dimensions
    assert "samples the finite-step theory predicts for 0.9965" in e1
    assert "Literal spot check" in e1 and "z = " in e1
    e2 = next(v for k, v in sec.items() if k.startswith("E2"))
    assert "steps to 0.99" in e2 and "runs reaching 0.99" in e2
    assert e2.count("\n| 0.25 |") == 2 and e2.count("\n| 1 |") == 2  # θ × N/R cells
    e3 = next(v for k, v in sec.items() if k.startswith("E3"))
    assert "alignment → 1 does not imply filtering" in e3 and "p(|ρ|)" in e3
    e4 = next(v for k, v in sec.items() if k.startswith("E4"))
    assert "Fraction at +ξ" in e4 and "the ODE basins predict" in e4
    e5 = next(v for k, v in sec.items() if k.startswith("E5"))
    assert "Gap/η0" in e5 and "largest gap" in e5
    meas = json.loads((out / "measurements.json").read_text())
    assert len(meas["e5_gaps"]) == 2 and "e1_literal_z" in meas


def test_claims_table_parses_and_matches_claims_json(reduced):
    out, res = reduced
    rows = _claims_rows((out / "report.md").read_text())
    assert len(rows) == 6  # five claims of the paper and the literal spot check
    for claim, measured, tolerance, verdict in rows:
        assert claim and measured and tolerance
        assert VERDICT.match(verdict), verdict
    data = json.loads((out / "claims.json").read_text())
    assert [d["verdict"] for d in data] == [r[3] for r in rows]
    assert [d["failed"] for d in data] == [c.failed for c in res.claims]
    meas = json.loads((out / "measurements.json").read_text())
    assert meas["e1_runs"] == 4 and 0.0 <= meas["e1_mean_final_abs"] <= 1.0
    assert meas["quick"] is True


def test_a_second_run_resumes_from_the_stores(reduced, tmp_path):
    out, res = reduced
    again = reproduce(out, plan=tiny_plan(), progress=False, log=lambda s: None)
    assert [c.measured for c in again.claims] == [c.measured for c in res.claims]
    # nothing was simulated again: the sweep stages cost far less than the first time
    assert again.timings["E2"] < max(0.5 * res.timings["E2"], 0.5)


def test_cli_exits_1_when_a_claim_fails(monkeypatch, tmp_path):
    import attnsignal.reproduce as rp
    from attnsignal.claims import ClaimResult
    from attnsignal.cli import main

    class Fake:
        claims = [ClaimResult("c", "m", "t", "FAIL", True)]
        failed = claims
        timings = {"total": 0.0}

    monkeypatch.setattr(rp, "reproduce", lambda *a, **k: Fake())
    assert main(["reproduce", "--quick", "--quiet", "--out", str(tmp_path)]) == 1


@pytest.mark.parametrize("argv,field", [
    (["--executor", "spark"], "executor"),
    (["--workers", "0"], "workers"),
    (["--seed", "-3"], "seed"),
])
def test_cli_rejects_bad_options_with_one_line(argv, field, tmp_path, capsys):
    from attnsignal.cli import main

    code = main(["reproduce", "--quick", "--out", str(tmp_path / "r"), *argv])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert len(err.splitlines()) == 1 and err.startswith(f"attnsignal: error: {field}"), err
    assert not (tmp_path / "r").exists()


def test_sweeps_get_the_executor_options(monkeypatch, tmp_path):
    """Small sweeps run in-process (no workers to size); the others, and every Dask sweep,
    get the executor, scheduler and workers as given."""
    import attnsignal.sweep as sw
    from attnsignal.reproduce.context import Context, sweep_spec

    calls = []
    real = sw.run_sweep

    def spy(spec, out, **kw):
        calls.append(kw)
        return real(spec, out, **{**kw, "executor": "serial", "scheduler": None,
                                  "workers": None})

    monkeypatch.setattr(sw, "run_sweep", spy)
    spec = sweep_spec(ModelConfig(d=5, n_informative=2, n_nuisance=3, theta=1.0),
                      StepSize(0.05), seed=1, runs=2, steps=5)
    Context(tmp_path / "a", executor="local", workers=2, progress=False).sweep("S", spec, small=True)
    Context(tmp_path / "b", executor="local", workers=2, progress=False).sweep("S", spec)
    Context(tmp_path / "c", executor="dask", scheduler="tcp://h:8786",
            progress=False).sweep("S", spec, small=True)
    got = [(c["executor"], c["scheduler"], c["workers"]) for c in calls]
    assert got == [("serial", None, None), ("local", None, 2), ("dask", "tcp://h:8786", None)]


def test_cli_passes_the_executor_options_through(monkeypatch, tmp_path):
    import attnsignal.reproduce as rp
    from attnsignal.cli import main

    seen = {}

    class Fake:
        claims, failed, timings = [], [], {"total": 0.0}

    def fake(out, **kw):
        seen.update(kw)
        return Fake()

    monkeypatch.setattr(rp, "reproduce", fake)
    assert main(["reproduce", "--quick", "--quiet", "--out", str(tmp_path / "r"),
                 "--executor", "dask", "--scheduler", "tcp://h:8786"]) == 0
    assert (seen["executor"], seen["scheduler"], seen["workers"]) == ("dask", "tcp://h:8786", None)


@pytest.mark.parametrize("argv,field", [
    (["--scheduler", "tcp://h:8786"], "scheduler"),  # a scheduler needs --executor dask
    (["--executor", "dask", "--scheduler", "tcp://h:8786", "--workers", "2"], "workers"),
])
def test_bad_executor_combinations_fail_before_anything_is_written(argv, field, tmp_path, capsys):
    from attnsignal.cli import main

    assert main(["reproduce", "--quick", "--out", str(tmp_path / "r"), *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith(f"attnsignal: error: {field}"), err
    assert not (tmp_path / "r").exists()
