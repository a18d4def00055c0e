"""Integer widths and sizes (issue 15.1): every size an engine cannot handle is refused before
work starts with one line naming the field, the allowed range and the value — never a silent
NaN or a frozen ρ — through Python, a sweep spec and the command line."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import attnsignal as asg
from attnsignal.cli import main
from attnsignal.config import ConfigError
from attnsignal.engines import Engine, StepStats, engine_names, get_engine, register
from attnsignal.engines.base import MAX_STEPS

STEP = asg.StepSize(0.1)


def _model(**kw):
    base = dict(d=5, n_informative=2, n_nuisance=3, theta=1.0)
    return asg.ModelConfig(**{**base, **kw})


@pytest.mark.parametrize("engine", ["chain", "projected"])
@pytest.mark.parametrize("n_nuisance", [2**31 - 12, 2**31, 10**10, 2**63])
def test_token_counts_beyond_memory_are_refused_before_work(engine, n_nuisance):
    """L >= 2^31 - 10 used to return ρ frozen at its start and NaN mass, unflagged."""
    with pytest.raises(ConfigError) as err:
        asg.simulate(_model(n_nuisance=n_nuisance), STEP, steps=5, runs=2, engine=engine)
    msg = str(err.value)
    assert err.value.field == "n_nuisance" and err.value.value == n_nuisance
    assert msg.startswith(f"n_nuisance: must be small enough for the '{engine}' engine to fit "
                          "in memory: 5 float64 vectors of L = ")
    assert "GiB" in msg or "TiB" in msg or "PiB" in msg or "EiB" in msg
    assert msg.endswith(f"; got {n_nuisance}") and "\n" not in msg


@pytest.mark.parametrize("engine, field, kw", [
    ("projected", "n_informative", dict(n_informative=2**63)),
    ("literal", "d", dict(d=2**63)),
    ("literal", "n_nuisance", dict(n_nuisance=10**9)),
    ("projected", "d", dict(d=10**12)),
    ("chain", "d", dict(d=10**30)),
])
def test_other_model_sizes_are_refused(engine, field, kw):
    with pytest.raises(ConfigError, match=rf"^{field}: must .*; got {kw[field]}$"):
        asg.simulate(_model(**kw), STEP, steps=2, runs=2, engine=engine)


def test_the_chain_takes_any_64_bit_dimension():
    r = asg.simulate(_model(d=2**63 - 1), STEP, steps=3, runs=2, engine="chain", seed=1)
    assert np.isfinite(r.alignment).all() and not r.diverged.any()
    assert np.isfinite(r.informative_mass[:, 1:]).all()


@pytest.mark.parametrize("engine", engine_names())
def test_run_sizes_and_counters_are_refused(engine):
    m = _model()
    with pytest.raises(ConfigError, match=r"^steps: must be an integer in \[1, 2\^62\]"):
        asg.simulate(m, STEP, steps=MAX_STEPS + 1, runs=1, engine=engine)
    with pytest.raises(ConfigError, match=r"^runs: must be small enough .*; got 100000000000$"):
        asg.simulate(m, STEP, steps=1, runs=10**11, engine=engine)
    with pytest.raises(ConfigError, match=r"^first_run: .*; got 1180591620717411303424$"):
        asg.simulate(m, STEP, steps=1, runs=1, engine=engine, first_run=2**70)
    with pytest.raises(ConfigError, match=r"^record_every: must keep the records \(2 runs × 1000000000001 records .*; got 1$"):
        asg.simulate(m, STEP, steps=10**12, runs=2, engine=engine, record_every=1)


def test_batch_beyond_memory_is_refused():
    with pytest.raises(ConfigError, match=r"^batch: must be small enough .*; got 10000000000000$"):
        asg.simulate(_model(), STEP, steps=1, runs=1, batch=10**13, engine="chain")


@pytest.mark.parametrize("engine", engine_names())
def test_step_sizes_are_materialised_in_bounded_blocks(monkeypatch, engine):
    """10^12 steps recorded every 10^12 needed 7.28 TiB of step sizes at once; simulate now
    hands the engine at most _ETA_BLOCK of them per call, with the same bits."""
    sim = sys.modules["attnsignal.simulate"]  # (the package exports the function simulate)
    m = _model(signal_sign="random")
    kw = dict(steps=11, runs=3, batch=2, engine=engine, seed=3, record_every=11)
    whole = asg.simulate(m, STEP, **kw)
    eng = get_engine(engine)
    sizes = []
    advance = eng.advance

    def spy(model, run, state, etas):
        sizes.append(len(etas))
        return advance(model, run, state, etas)

    monkeypatch.setattr(sim, "_ETA_BLOCK", 4)
    monkeypatch.setattr(eng, "advance", spy)
    split = asg.simulate(m, STEP, **kw)
    assert sizes == [4, 4, 3]
    np.testing.assert_array_equal(whole.alignment, split.alignment)
    np.testing.assert_array_equal(whole.informative_mass, split.informative_mass)


class _NanStats(Engine):
    name = "nan_stats_for_tests"
    capabilities = get_engine("chain").capabilities

    def init(self, model, run, seeds):
        return get_engine("chain").init(model, run, seeds)

    def advance(self, model, run, state, etas):
        n = state.rho.shape[0]
        mass = np.where(np.arange(n) == 1, np.nan, 0.5)
        return state.replace(k=state.k + len(etas)), StepStats(mass, np.full(n, 0.1))


def test_a_run_with_nan_statistics_is_flagged_not_returned(monkeypatch):
    from attnsignal.engines import registry

    monkeypatch.setattr(registry, "_ENGINES", dict(registry._ENGINES))
    register(_NanStats())
    with pytest.warns(asg.DivergenceWarning, match="1 of 3 runs diverged"):
        r = asg.simulate(_model(), STEP, steps=4, runs=3, engine="nan_stats_for_tests",
                         record_every=2)
    assert r.diverged.tolist() == [False, True, False]
    assert r.diverged_step.tolist() == [-1, 2, -1]
    assert np.isnan(r.alignment[1, 1:]).all() and np.isfinite(r.alignment[[0, 2]]).all()


def test_a_sweep_refuses_an_impossible_grid_point_before_writing(tmp_path):
    from attnsignal.sweep import run_sweep

    spec = {"sweep": {"seed": 1, "runs": 2, "steps": 5, "engine": "chain"},
            "model": {"d": 5, "n_informative": 2, "n_nuisance": 3, "theta": 1.0},
            "step": {"eta0": 0.1},
            "grid": {"model.n_nuisance": [3, 10**10]}}
    with pytest.raises(ConfigError, match=r"^n_nuisance: must be small enough .*; got 10000000000$"):
        run_sweep(spec, tmp_path / "sw", executor="serial", progress=False)
    assert not (tmp_path / "sw").exists()


def test_cli_refuses_the_issue_command_with_one_line_and_exit_2(tmp_path):
    out = tmp_path / "run"
    res = subprocess.run(
        [sys.executable, "-m", "attnsignal", "run", "--engine", "chain", "--n-nuisance",
         "10000000000", "--steps", "5", "--runs", "2", "--out", str(out)],
        capture_output=True, text=True, timeout=120)
    assert res.returncode == 2, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in res.stderr
    assert lines[0].startswith("attnsignal: error: n_nuisance: must be small enough for the "
                               "'chain' engine to fit in memory")
    assert lines[0].endswith("got 10000000000") and not out.exists()


@pytest.mark.parametrize("args", [
    ["--engine", "projected", "--n-informative", "9223372036854775808"],
    ["--engine", "chain", "--d", "1" + "0" * 30],
    ["--engine", "literal", "--d", "9223372036854775808"],
])
def test_cli_refuses_other_impossible_sizes(tmp_path, capsys, args):
    rc = main(["run", *args, "--steps", "5", "--runs", "2", "--out", str(tmp_path / "o"),
               "--quiet"])
    assert rc == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "must" in err[0]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS and /proc")
def test_a_run_whose_kernel_allocation_fails_raises_instead_of_returning_its_start():
    """Bypassing the pre-flight check, the compiled driver loses its scratch allocation under
    an address-space limit: the engine raises MemoryError, it does not return the frozen ρ."""
    script = textwrap.dedent("""
        import resource, numpy as np, attnsignal as asg
        from attnsignal.engines import get_engine
        from attnsignal.engines.base import run_seeds
        eng = get_engine("chain")
        run = asg.RunConfig(steps=1, runs=2, engine="chain")
        small = asg.ModelConfig(d=5, n_informative=1, n_nuisance=3, theta=1.0)
        eng.advance(small, run, eng.init(small, run, run_seeds(0, 2)), np.array([0.1]))
        vm = [l for l in open("/proc/self/status") if l.startswith("VmSize")][0]
        limit = int(vm.split()[1]) * 1024 + 3 * 2**30
        resource.setrlimit(resource.RLIMIT_AS, (limit, resource.RLIM_INFINITY))
        big = asg.ModelConfig(d=5, n_informative=1, n_nuisance=2**28, theta=1.0)
        try:
            eng.advance(big, run, eng.init(big, run, run_seeds(0, 2)), np.array([0.1]))
        except MemoryError as e:
            print("MemoryError:", e)
    """)
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120, env={**os.environ, "NUMBA_NUM_THREADS": "2"})
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("MemoryError: the compiled engine did not complete 2 of 2 runs")


def test_records_beyond_memory_are_refused_naming_the_record_option():
    m = _model()
    with pytest.raises(ConfigError, match=r"^record_every: must keep the records \(1000000 runs "
                                          r"× 100000001 records .*; got 10$"):
        asg.simulate(m, STEP, steps=10**9, runs=10**6, engine="chain", record_every=10)
    # log-spaced and listed records are counted too (and work)
    r = asg.simulate(m, STEP, steps=1000, runs=2, engine="chain", record="log")
    assert r.steps[0] == 0 and r.steps[-1] == 1000 and len(r.steps) == 200
