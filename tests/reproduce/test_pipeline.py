"""A reduced reproduction end to end: every section, every figure, a parseable claims table,
resumption from the stores, and the command line's exit statuses."""

from __future__ import annotations

import base64
import json
import math
import re
from dataclasses import replace

import numpy as np
import pytest

from attnsignal.claims import QUICK_PREFIX
from attnsignal.config import ModelConfig, StepSize
from attnsignal.reproduce import Plan, experiment_names, reproduce
from attnsignal.reproduce.e1_headline import E1
from attnsignal.reproduce.e2_robustness import E2
from attnsignal.reproduce.e3_filtering import E3
from attnsignal.reproduce.e4_landscape import E4
from attnsignal.reproduce.e5_tracking import E5
from attnsignal.reproduce.e6_baselines import E6
from attnsignal.reproduce.e7_scaling import E7

SECTIONS = [
    "Claims of the paper, checked",
    "E1 — headline",
    "E2 — robustness",
    "E3 — attention filtering",
    "E4 — landscape",
    "E5 — the recursion tracks the limiting ODE",
    "E6 — attention against simple estimators",
    "E7 — sample complexity over the dimension",
    "Timings",
]
FIGURES = ["e1_headline", "e2_robustness", "e3_filtering", "e4_landscape", "e4_basins",
           "e5_tracking", "e5_sa_diagnostics", "e6_baselines", "e7_scaling"]
VERDICT = re.compile(r"^((proxy )?(PASS|FAIL)|holds only when .+)$")


def tiny_plan(seed: int = 7) -> Plan:
    """Every experiment at toy size (seconds): same code paths, smaller models and budgets."""
    q = Plan.quick(seed=seed)
    return Plan(mode="quick", seed=seed, sections={
        "E1": replace(q.section(E1), model=ModelConfig(d=20, n_informative=10, n_nuisance=200, theta=0.25),
                      big_d=60, runs=4, big_runs=3, steps=1500, records=30, theory_samples=300,
                      step=StepSize(eta0=0.05, k0=300.0, power=1.0), literal_runs=2, literal_steps=20,
                      effective_samples=200),
        "E2": replace(q.section(E2), thetas=(0.25, 1.0), ratios=(1, 20), R=10, d=20, runs=3, steps=800),
        "E3": replace(q.section(E3), thetas=(0.25, 2.0), densities=(0.05, 1.0), N=40, runs=2, steps=300),
        "E4": replace(q.section(E4), runs=20, boundary_runs=4, steps=20_000),
        "E5": replace(q.section(E5), eta0s=(0.04, 0.02), runs=40, sa_T=5.0, effective_samples=200),
        "E6": replace(q.section(E6), runs=3, samples=3000, records=12, pca_big_runs=2,
                      attention_runs=2, attention_steps=300),
        "E7": replace(q.section(E7), dims=(40, 80), runs=4, law_samples=300, check_from=80,
                      tolerance=0.5),
    })


def _claims_rows(md: str) -> list[list[str]]:
    block = md.split("## Claims of the paper, checked", 1)[1].split("\n## ", 1)[0]
    lines = [ln for ln in block.splitlines() if ln.startswith("|")]
    assert lines[0].startswith("| claim | measured | tolerance | verdict")
    assert set(lines[1].replace("|", "")) <= {"-"}
    return [[c.strip() for c in ln.strip("|").split(" | ")] for ln in lines[2:]]


@pytest.fixture(scope="module")
def reduced(tmp_path_factory):
    """The reduced reproduction, in this process (as ``reproduce`` is called from Python)."""
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
    assert html.count("data:image/png;base64,") == len(set(re.findall(r"figures/[\w.-]+\.png",
                                                                     md))) >= len(FIGURES)
    # offline: no script, style sheet or font from the network; KaTeX and its fonts inlined
    assert not re.search(r"<(script|link)[^>]+(src|href)=['\"](https?:)?//", html)
    assert "katex" in html and html.count("data:font/woff2;base64,") >= 10
    assert "vendor/" not in html and "url(fonts/" not in html
    first = re.split(r"['\"]", html.split("data:image/png;base64,", 1)[1], maxsplit=1)[0]
    assert base64.b64decode(first)[:8] == b"\x89PNG\r\n\x1a\n"
    assert not re.search(r"src=['\"]figures/", html)
    for name in ("E1", "E2", "E3", "E4", "E5", "E6", "E7"):
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
    # both gaps at both dimensions
    assert "largest gap to the limiting ODE" in e1 and "largest gap to the effective dynamics" in e1
    assert len(re.findall(r"\| d = (20|60) \| [0-9.]+ \(SE [0-9.]+\) \| [0-9.]+ \(SE [0-9.]+\) \|",
                          e1)) == 2
    e2 = next(v for k, v in sec.items() if k.startswith("E2"))
    assert "steps to 0.99" in e2 and "runs reaching 0.99" in e2
    assert e2.count("\n| 0.25 |") == 2 and e2.count("\n| 1 |") == 2  # θ × N/R cells
    e3 = next(v for k, v in sec.items() if k.startswith("E3"))
    assert "alignment → 1 does not imply filtering" in e3 and "p(\\|ρ\\|)" in e3
    e4 = next(v for k, v in sec.items() if k.startswith("E4"))
    assert "Fraction at +ξ" in e4 and "the ODE basins predict" in e4
    e5 = next(v for k, v in sec.items() if k.startswith("E5"))
    assert "Gap/η0" in e5 and "largest gap" in e5
    assert "largest gap (effective dynamics)" in e5 and "The effective dynamics" in e5
    meas = json.loads((out / "measurements.json").read_text())
    assert len(meas["E5"]["gaps"]) == 2 and "literal_z" in meas["E1"]
    assert len(meas["E5"]["effective_gaps"]) == 2
    for k in ("effective_gap", "d1000_effective_gap", "d1000_effective_excess", "ode_gap_se"):
        assert 0.0 <= abs(meas["E1"][k]) < 1.0, k
    e6 = next(v for k, v in sec.items() if k.startswith("E6"))
    assert "samples to 0.99: measured / theory" in e6 and "× oracle at 0.9965" in e6
    # one row per (d, sign, method), the sign-blind PCA and Oja once per dimension: 2 × 8
    e6_rows = [ln for ln in e6.splitlines() if re.match(r"\| (20|60) \|", ln)]
    assert len(e6_rows) == 16 and sum("| either |" in ln for ln in e6_rows) == 4
    assert "not a claim of the paper" in e6  # the verdict
    rows = meas["E6"]["table"]  # 2 dimensions × 2 signs × 5 methods × 2 targets
    assert len(rows) == 40 and {r["method"] for r in rows} == {"sga", "mean", "pca", "oja",
                                                                "oracle"}
    oracle = {(r["d"], r["sign"], r["target"]): r["samples"] for r in rows
              if r["method"] == "oracle"}
    for r in rows:  # the oracle needs the fewest samples wherever both are measured
        o = oracle[r["d"], r["sign"], r["target"]]
        if r["samples"] is not None and o is not None:
            assert r["samples"] >= o


def test_claims_table_parses_and_matches_claims_json(reduced):
    out, res = reduced
    rows = _claims_rows((out / "report.md").read_text())
    # the claims of the paper, then the checks of this implementation (E1's literal spot
    # check and effective-dynamics check among them)
    assert len(rows) == len(res.claims) >= 7
    # quick mode: every row says it is a proxy, at its own tolerance, and links its evidence
    assert all(r[0].startswith(QUICK_PREFIX) and r[3] != "PASS" for r in rows)
    assert all(re.search(r"\(\[E\d+\]\(#e\d+\)\)$", r[0]) for r in rows)
    checks = [r[0][len(QUICK_PREFIX):].startswith("check of this implementation (not a claim "
                                                  "of the paper)") for r in rows]
    assert checks == sorted(checks) and sum(checks) >= 2
    eff = next(r for r in rows
               if "effective dynamics tracks the simulated mean |ρ|" in r[0].replace("\\|", "|"))
    assert "d = 60" in eff[0] and "+ 3 SE at every record" in eff[2]
    for claim, measured, tolerance, verdict in rows:
        assert claim and measured and tolerance
        assert VERDICT.match(verdict), verdict
    data = json.loads((out / "claims.json").read_text())
    assert [d["verdict"] for d in data] == [r[3].removeprefix("proxy ") for r in rows]
    assert [d["evidence"] for d in data] == [re.search(r"\[(E\d)\]", r[0]).group(1)
                                            for r in rows]
    assert [d["failed"] for d in data] == [c.failed for c in res.claims]
    meas = json.loads((out / "measurements.json").read_text())
    assert meas["E1"]["runs"] == 4 and 0.0 <= meas["E1"]["mean_final_abs"] <= 1.0
    assert meas["quick"] is True and meas["mode"] == "quick"


def test_effective_dynamics_uses_the_runs_records_and_tracks_them(reduced):
    """E1's and E5's effective dynamics are computed at exactly the runs' records (E1 from
    the exact law of a uniform start, E5 from the runs' ρ0), as pool tasks; at E5's largest
    η0 they remove most of the limiting ODE's bias. (Their accuracy at E1's sizes is measured
    by tests/theory and benchmarks/effective_accuracy.py; the toy E1 here has 4 runs.)"""
    out, res = reduced
    e1, e5 = res.measurements["E1"], res.measurements["E5"]
    np.testing.assert_array_equal(e1.eff.steps, e1.headline.steps)
    np.testing.assert_array_equal(e1.big_eff.steps, e1.big.steps)
    for eff, tr in zip(e5.effs, e5.tracks):
        np.testing.assert_array_equal(eff.steps, tr.steps)
    # the predicted band holds the mean and is ordered
    for eff in (e1.eff, e1.big_eff):
        assert np.all(eff.q10 <= eff.mean_abs + 1e-12) and np.all(eff.mean_abs <= eff.q90 + 1e-12)
    # the uniform start's law: E|ρ0| = Γ(d/2) / (√π Γ((d + 1)/2)) on the sphere S^{d−1}
    for eff, d in ((e1.eff, 20), (e1.big_eff, 60)):
        exact = math.exp(math.lgamma(d / 2) - math.lgamma((d + 1) / 2)) / math.sqrt(math.pi)
        assert eff.mean_abs[0] == pytest.approx(exact, rel=0.01)
    assert e5.effs[0].mean[0] == pytest.approx(0.1, abs=0.01)
    # E5's largest η0: the limiting ODE's O(η) bias (0.12 with this seed) is over twice the
    # effective dynamics' gap (0.06, 40 runs: SE 0.02)
    assert e5.effective_gaps[0] < 0.6 * e5.gaps[0]
    prof = res.profile["experiments"]
    # E1: the effective dynamics and the samples-to-reach prediction at each d; E5: the
    # effective dynamics at each η0
    assert (prof["E1"]["theory_tasks"], prof["E5"]["theory_tasks"]) == (4, 2)
    assert prof["E1"]["theory_seconds"] > 0
    # CPU of the worker's one compute thread: positive, at most its wall time (+ clock ticks)
    assert 0 < prof["E1"]["theory_cpu"] <= prof["E1"]["theory_seconds"] + 0.05


def test_a_run_after_a_kill_resumes_and_leaves_no_temporary_file(reduced, tmp_path):
    """What a SIGKILL leaves (no report or claims yet, a sweep short of a shard, a figure
    missing, temporaries of atomic writes in every directory, the workers' profile records);
    the next run resumes from the stores to the same claims — it simulates only the lost
    shard — and leaves only its results."""
    import shutil

    from attnsignal.persistence import TEMPORARY_NAME

    src, res = reduced
    out = tmp_path / "killed"
    shutil.copytree(src, out)
    for name in ("report.md", "report.html", "claims.json", "figures/e6_baselines.pdf"):
        (out / name).unlink()
    store = next((out / "data").glob("E2-*"))
    shard = sorted((store / "shards").glob("*.parquet"))[0]
    shard.unlink()
    planted = [out / ".claims.json.k1ll3d00.tmp", out / "figures" / ".e1_headline.pdf.a1b2c3d4.tmp",
               out / "figures" / ".e6_baselines.pdf.zz_99zz9.tmp",
               out / "data" / ".E2.parquet.q9q9q9q9.tmp", store / f".sweep.json.abcd1234.tmp",
               store / "shards" / f".{shard.name}.x1x1x1x1.tmp", out / ".profile" / "worker-1.json"]
    for p in planted:
        p.parent.mkdir(exist_ok=True)
        p.write_bytes(b"partial")
    (out / "figures" / "my-notes.txt").write_text("the user's own file")

    again = reproduce(out, plan=tiny_plan(), progress=False, log=lambda s: None)
    assert [(c.measured, c.verdict) for c in again.claims] == [(c.measured, c.verdict)
                                                              for c in res.claims]
    prof = again.profile["experiments"]
    assert prof["E2"]["tasks"] == 1  # only the lost shard
    # no other sweep was simulated again: the only other simulation task is E1's chain spot
    # check (short runs beside the literal ones, kept in memory only, as the literal runs are)
    assert all(e["worker_seconds"] == 0 for name, e in prof.items() if name not in ("E1", "E2"))
    assert prof["E1"]["tasks"] == 1 and res.profile["experiments"]["E1"]["tasks"] > 1
    assert shard.is_file() and (out / "figures" / "e6_baselines.pdf").is_file()
    assert [p for p in out.rglob("*") if TEMPORARY_NAME.match(p.name) or p.suffix == ".tmp"] == []
    assert not (out / ".profile").exists()
    assert (out / "figures" / "my-notes.txt").read_text() == "the user's own file"


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
    """With the local executor every sweep's tasks go to the reproduction's one shared pool
    (no workers to size per sweep); a Dask sweep gets the executor and scheduler as given."""
    import attnsignal.sweep as sw
    from attnsignal.reproduce.context import ExperimentContext, Shared, sweep_spec

    calls = []
    real = sw.run_sweep

    def spy(spec, out, **kw):
        calls.append(kw)
        return real(spec, out, **{**kw, "executor": "serial", "scheduler": None,
                                  "workers": None})

    monkeypatch.setattr(sw, "run_sweep", spy)
    spec = sweep_spec(ModelConfig(d=5, n_informative=2, n_nuisance=3, theta=1.0),
                      StepSize(0.05), seed=1, runs=2, steps=5)
    pool = object()
    plan = Plan.quick()
    ExperimentContext(E5, plan, Shared(tmp_path / "a", workers=2, pool=pool)).sweep("S", spec)
    ExperimentContext(E5, plan, Shared(tmp_path / "c", executor="dask",
                                       scheduler="tcp://h:8786")).sweep("S", spec)
    got = [(getattr(c["executor"], "pool", c["executor"]), c["scheduler"], c["workers"])
           for c in calls]
    assert got == [(pool, None, None), ("dask", "tcp://h:8786", None)]


def test_every_stream_is_keyed_by_its_experiment_and_purpose(reduced):
    """Every sweep of the reproduction runs with the plan's seed and its own spawn key
    ``(experiment, purpose, ...)``; the results record both; no two sweeps share a key."""
    from attnsignal.seeds import spawn_key

    out, res = reduced
    m = res.measurements
    assert m["E1"].headline.run.seed == m["E1"].big.run.seed == m["E1"].seed == 7
    assert m["E1"].headline.run.spawn_key == spawn_key("E1", "runs", 20)
    assert m["E1"].big.run.spawn_key == spawn_key("E1", "runs", 60)
    keys = {}
    for manifest in (out / "data").glob("*/sweep.json"):
        sweep = json.loads(manifest.read_text())["spec"]["sweep"]
        assert sweep["seed"] == 7, manifest
        key = tuple(sweep["spawn_key"])
        assert key not in keys, (manifest, keys.get(key))
        keys[key] = manifest.parent.name
    expected = {("E1", "runs", 20), ("E1", "runs", 60), ("E2", "runs"), ("E3", "runs"),
                ("E4", "uniform"), ("E4", "boundary"), ("E5", "runs", 0), ("E5", "runs", 1),
                ("E5", "sa"), ("E6", "attention")}
    assert {spawn_key(*k) for k in expected} <= set(keys)
    stored = json.loads((out / "measurements.json").read_text())
    assert all(stored[name]["seed"] == 7 for name in ("E1", "E2", "E3", "E4", "E5", "E6"))


def test_profile_accounts_for_every_experiment(reduced):
    from attnsignal.reproduce.pipeline import profile_table

    out, res = reduced
    assert (out / "profile.json").is_file()  # (a later test's resumed run rewrites it)
    prof = res.profile
    assert set(prof["experiments"]) == set(experiment_names())
    for e in prof["experiments"].values():
        assert 0 <= e["start"] <= e["end"] <= prof["total_wall"] + 1e-6
        assert e["tasks"] >= 1 and e["worker_seconds"] > 0
    assert 1 <= len(prof["kernel_warmup"]) <= prof["workers"]
    assert len(prof["kernel_warmup_cpu"]) == len(prof["kernel_warmup"])
    rows = profile_table(prof)
    assert rows[-1][0] == "total" and all(len(r) == 4 for r in rows)


@pytest.mark.parametrize("make,field", [
    (lambda: Plan(mode="fast"), "plan.mode"),
    (lambda: Plan.quick(seed=-1), "plan.seed"),
    (lambda: Plan(sections={"E9": None}), "plan.E9"),
    (lambda: Plan(sections={"E1": Plan.quick().section(E2)}), "plan.E1"),
    (lambda: replace(Plan.quick().section(E1), runs=1), "e1.runs"),
    (lambda: replace(Plan.quick().section(E2), thetas=()), "e2.thetas"),
    (lambda: replace(Plan.quick().section(E5), rho0=2.0), "e5.rho0"),
    (lambda: replace(Plan.quick().section(E4), model="d=50"), "e4.model"),
])
def test_a_bad_plan_fails_with_one_line_naming_the_field(make, field):
    from attnsignal.config import ConfigError

    with pytest.raises(ConfigError) as info:
        make()
    assert info.value.field == field and "\n" not in str(info.value)


def test_registry_plans_are_valid_and_dependencies_come_first():
    from attnsignal.config import ConfigError
    from attnsignal.reproduce import EXPERIMENTS, get_experiment

    seen = set()
    for exp in EXPERIMENTS:
        assert isinstance(exp.Plan.full(), exp.Plan) and isinstance(exp.Plan.quick(), exp.Plan)
        assert all(d.name in seen for d in exp.needs)
        assert get_experiment(exp.name) is exp
        seen.add(exp.name)
    assert Plan.quick().section(E3).runs < Plan.full().section(E3).runs
    assert Plan.full().section(E5).schedule.k0 == 100.0  # a schedule object, not loose fields
    with pytest.raises(ConfigError, match=r"^experiment: must be one of 'E1', .*; got 'E0'$"):
        get_experiment("E0")


def test_a_plan_whose_sizes_an_experiment_would_refuse_is_refused_when_built():
    """E6 checks its baselines' sizes when the plan is built, not after E1's runs (the full
    plan once failed that way 25 minutes in): PCA at d = 20 000 is refused by Plan itself."""
    from attnsignal.config import ConfigError

    full = Plan.full()
    with pytest.raises(ConfigError, match="pca"):
        full.with_section(E1, replace(full.section(E1), big_d=20_000))
    # and the PCA work at E6's full size (6 runs, d = 1000: about 3 s a run) is accepted
    assert full.section(E6).pca_big_runs > 0 and full.section(E1).big_d == 1000


def test_e1_sweeps_each_dimension_with_its_own_runs(reduced):
    from attnsignal.reproduce.e1_headline import sweep_groups

    full, quick = Plan.full().section(E1), Plan.quick().section(E1)
    assert sweep_groups(full) == {"E1": (30, 100), "E1_big": (10, 1000)}
    assert sweep_groups(quick) == {"E1": (6, 100), "E1_big": (4, 1000)}
    _, res = reduced
    m = res.measurements["E1"]
    assert (m.headline.alignment.shape[0], m.big.alignment.shape[0]) == (4, 3)
    assert (m.headline.model.d, m.big.model.d) == (20, 60)


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


def test_report_is_navigable(reduced):
    """A sidebar lists every section and figure; every in-page link has its anchor; the
    claims link to the experiments; long tables fold; math is marked up for the bundled
    KaTeX (no raw TeX such as ``^{`` or ``\\rho`` outside it); the timings add up."""
    from attnsignal.reproduce import EXPERIMENTS

    out, res = reduced
    html = (out / "report.html").read_text()
    ids = set(re.findall(r"id='([^']+)'", html)) | set(re.findall(r'id="([^"]+)"', html))
    links = set(re.findall(r"href=['\"]#([^'\"]+)['\"]", html))
    assert {"claims", "timings"} | {e.name.lower() for e in EXPERIMENTS} <= links
    assert links <= ids, links - ids
    toc = html.split("<nav id='toc'>", 1)[1].split("</nav>", 1)[0]
    assert toc.count("href='#e") >= len(EXPERIMENTS) + len(FIGURES)  # sections and figures
    text = re.sub(r"<(script|style|code)\b.*?</\1>|<span class=\"arithmatex\">.*?</span>", " ",
                  html, flags=re.S)
    text = re.sub(r"<[^>]+>", " ", text)
    assert not re.search(r"\\[a-zA-Z]{2,}|\^\{|\$", text), \
        re.search(r".{40}(\\[a-zA-Z]{2,}|\^\{|\$).{40}", text, re.S)
    assert html.count('class="arithmatex"') > 20
    # the timings: the shares of the wall time add up to the total
    md = (out / "report.md").read_text()
    block = md.split("## Timings", 1)[1]
    shares = [float(ln.split("|")[-2]) for ln in block.splitlines()
              if re.match(r"\| E\d+ \|", ln)]
    total = float(re.search(r"\| all \|.*\| ([\d.]+) \|$", block, re.M).group(1))
    # each share rounded to 0.1 s: their sum within 0.05 s a row of the total
    n = len(EXPERIMENTS)
    assert len(shares) == n and sum(shares) == pytest.approx(total, abs=0.05 * n + 1e-9)


def test_only_runs_the_named_experiments_and_those_they_need(reduced, tmp_path):
    """``only=["E3"]``: E3 and E1 (which it needs) run — resumed from a copy of the reduced
    reproduction's stores — and the report, the claims and the measurements hold them only."""
    import shutil

    from attnsignal.reproduce import get_experiment

    out, _ = reduced
    shutil.copytree(out / "data", tmp_path / "data")
    res = reproduce(tmp_path, plan=tiny_plan(), only=["E3"], progress=False, log=lambda s: None)
    assert set(res.measurements) == {"E1", "E3"}
    plan = tiny_plan()
    expected = sum(len(e.claims(plan.section(e), res.measurements[e.name]))
                   for e in map(get_experiment, ("E1", "E3")))
    assert len(res.claims) == expected
    md = (tmp_path / "report.md").read_text()
    heads = [ln[3:] for ln in md.splitlines() if ln.startswith("## ")]
    assert any(h.startswith("E1") for h in heads) and any(h.startswith("E3") for h in heads)
    assert not any(h.startswith(("E2", "E4", "E5", "E6")) for h in heads)
    assert "Experiments run: E1, E3" in md
    meas = json.loads((tmp_path / "measurements.json").read_text())
    assert {"E1", "E3"} <= set(meas) and not {"E2", "E4", "E5", "E6"} & set(meas)


def test_cli_only_refuses_an_unknown_experiment_and_the_help_lists_them(tmp_path, capsys):
    import subprocess
    import sys

    from attnsignal.cli import main
    from attnsignal.reproduce import EXPERIMENTS

    assert main(["reproduce", "--quick", "--only", "E1,E99", "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("attnsignal: error: only: must be") and "'E1'" in err
    assert len(err.splitlines()) == 1 and not (tmp_path / "r").exists()
    assert main(["reproduce", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    for exp in EXPERIMENTS:
        assert " ".join(exp.title.split()) in text
    # the root help shows the short help without importing the experiments
    code = ("import sys; from attnsignal.cli import main; main(['--help']); "
            "sys.exit('attnsignal.reproduce.registry' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True).returncode == 0
