"""The hardened commands and calls: each ends in one line naming the field, its allowed range
and the value (exit status 2, ``ConfigError`` in Python) before any work, or in a correct
result — huge minibatches, the baselines' extreme scales, Slurm values read as Slurm reads
them, empty flag values, advise's options, validation before any progress output."""

from __future__ import annotations

import time

import numpy as np
import pytest

import attnsignal as asg
from attnsignal.baselines import baseline, baseline_theory
from attnsignal.baselines.theory import (
    _LAM_ASYMPTOTIC, _noncentral_mean_abs, _noncentral_mean_abs_large,
)
from attnsignal.config import ConfigError
from attnsignal.sweep.slurm import SlurmOptions, memory_bytes, walltime_seconds

from hostile_cases import SMALL, TINY_SPEC
from hostile_helpers import run_cli

M = asg.ModelConfig(d=4, n_informative=1, n_nuisance=2, theta=1.0)
STEP = asg.StepSize(eta0=0.1, k0=10, power=0.75)


@pytest.mark.parametrize("batch", [10**12, 2**63 - 1, 10**30])
@pytest.mark.parametrize("engine", ["chain", "projected", "literal"])
def test_a_huge_batch_is_refused_at_once_by_every_engine(engine, batch):
    t0 = time.perf_counter()
    with pytest.raises(ConfigError, match=rf"^batch: must .*; got {batch}$"):
        asg.simulate(M, STEP, steps=10, runs=1, batch=batch, engine=engine)
    assert time.perf_counter() - t0 < 5


def test_one_run_beyond_the_work_bound_names_steps():
    with pytest.raises(ConfigError, match=r"^steps: must keep one run of the 'projected' engine"):
        asg.simulate(M, STEP, steps=10**14, runs=1, engine="projected", record_every=10**14)


def test_baseline_names_samples_and_the_spawn_prefix():
    with pytest.raises(ConfigError, match=r"^samples: must be an integer in \[1, "):
        baseline(M, "oracle", samples=10**30)
    with pytest.raises(ConfigError, match=r"^spawn_prefix: "):
        baseline(M, "oracle", samples=2, spawn_prefix=("a",))


@pytest.mark.parametrize("method", ["mean", "pca", "oja", "oracle"])
@pytest.mark.parametrize("field, value", [("theta", 1e300), ("noise_std", 1e-300),
                                          ("noise_std", 1e300), ("theta", 1e-300)])
def test_baseline_scales_beyond_float64_are_refused(method, field, value):
    if field == "theta" and value < 1 and method != "oja":
        pytest.skip("a vanishing signal is a valid running average (no eigengap only for oja)")
    m = M.replace(**{field: value})
    with pytest.raises(ConfigError, match=rf"^{field}: must keep the baselines' "):
        baseline(m, method, samples=10, runs=1)
    with pytest.raises(ConfigError, match=rf"^{field}: "):
        baseline_theory(m, method, [10])


def test_mean_theory_at_a_huge_signal_to_noise_ratio_is_its_expansion():
    """Beyond λ = 10^7 the Poisson mixture gives way to E√B = 1 − (d−1)/(2λ) + O((d/λ)²);
    below it the two agree to the expansion's error, and a strong signal gives |ρ| → 1."""
    for lam in (1e6, 1e7):
        for d in (2, 100):
            series = _noncentral_mean_abs(np.array([lam]), d)[0]
            expansion = _noncentral_mean_abs_large(np.array([lam]), d)[0]
            assert abs(series - expansion) < 2 * (d / lam) ** 2 + 1e-8
    th = baseline_theory(M.replace(theta=1e6), "mean", [10, 100])
    assert np.all(th > 1 - 1e-9) and np.all(th <= 1)
    assert _LAM_ASYMPTOTIC == 1e7


@pytest.mark.parametrize("text, seconds", [("90", 5400), ("1:30", 90), ("01:00:00", 3600),
                                           ("1-00", 86400), ("2-23:59:59", 3 * 86400 - 1),
                                           ("100:00:00", 360000)])
def test_slurm_times_read_as_sbatch_reads_them(text, seconds):
    assert walltime_seconds(text) == seconds


@pytest.mark.parametrize("text", ["99:99:99", "1:60", "1:00:60", "1-24:00:00", "0", "00:00:00",
                                  "1:2:3:4", "-1", "1.5", "", str(10**30)])
def test_slurm_times_slurm_would_not_read_are_refused(text):
    with pytest.raises(ConfigError, match=r"^slurm.walltime: must be a Slurm time: .*; got "):
        walltime_seconds(text)


@pytest.mark.parametrize("text", ["99999999999", "0.0000001GB", "0GB", "-4GB", "4 GiB x",
                                  "2000000000TB", "nanGB"])
def test_slurm_memory_needs_a_unit_and_a_sensible_size(text):
    with pytest.raises(ConfigError, match=r"^slurm.memory: must be a positive size with a unit"):
        memory_bytes(text)
    assert memory_bytes("4G") == 4 * 2**30 and memory_bytes("500MB") == 500 * 10**6


@pytest.mark.parametrize("field, value", [("partition", "$(id)"), ("partition", "a;b"),
                                          ("partition", "part#1"), ("partition", "a,b,"),
                                          ("partition", ",a"), ("partition", "-p"),
                                          ("account", "a,b"), ("account", "$(id)")])
def test_slurm_names_outside_slurms_characters_are_refused(field, value):
    with pytest.raises(ConfigError, match=rf"^slurm.{field}: must be an? "):
        SlurmOptions(**{field: value})
    SlurmOptions(partition="short,long-1", account="lab_2.x")  # what Slurm accepts




@pytest.mark.parametrize("flag, value", [("--walltime", "99:99:99"), ("--memory", "99999999999"),
                                         ("--memory", "0.0000001GB"), ("--partition", "$(id)"),
                                         ("--partition", "a;b"), ("--partition", "part#1"),
                                         ("--partition", "a,b,"), ("--account", "a b")])
def test_slurm_flags_are_refused_before_any_job_script(flag, value, tmp_path, capsys):
    spec = tmp_path / "s.toml"
    spec.write_text(TINY_SPEC)
    end = run_cli(["sweep", str(spec), "--out", str(tmp_path / "o"), "--executor", "slurm",
                   "--dry-run", flag, value], capsys)
    assert end.how == "refused" and end.message.startswith(
        f"attnsignal: error: slurm.{flag[2:]}: must"), end
    assert not (tmp_path / "o").exists()



@pytest.mark.parametrize("argv, field", [
    (["run", *SMALL, "--record", ""], "record"),
    (["run", *SMALL, "--steps", " "], "steps"),
    (["advise", *SMALL, "--compare-k0", "5"], "compare_k0"),
    (["advise", *SMALL, "--compare-power", "2"], "compare_power"),
    (["advise", *SMALL, "--beta", "1e300"], "beta"),
    (["advise", *SMALL, "--n-nuisance", str(10**12)], "n_nuisance"),
    (["run", *SMALL, "--engine", "projected", "--batch", str(2**63 - 1)], "batch"),
    (["run", *SMALL, "--engine", "projected", "--batch", str(10**30)], "batch"),
    (["run", *SMALL, "--engine", "literal", "--batch", str(10**12)], "batch"),
    (["run", *SMALL, "--steps", str(10**14), "--record-every", "1"], "record_every"),
    (["ode", *SMALL, "--effective", "--compare", "--runs", str(10**30)], "runs"),
    (["baseline", *SMALL, "--method", "mean", "--theta", "1e300"], "theta"),
    (["baseline", *SMALL, "--method", "oja", "--noise-std", "1e-300"], "noise_std"),
])
def test_what_was_seen_ends_in_one_line_before_any_output(argv, field, tmp_path, capsys):
    """No progress bar, warning or note before the refusal: validation comes first."""
    t0 = time.perf_counter()
    end = run_cli(argv + ["--out", str(tmp_path / "o")], capsys)
    assert end.how == "refused" and end.message.startswith(f"attnsignal: error: {field}: "), end
    assert time.perf_counter() - t0 < 30  # the work would take minutes (a loaded machine: 10x)
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("change, kwargs, field", [
    ({"d": 10**12}, {}, "d"),
    ({"n_nuisance": 10**12}, {}, "n_nuisance"),
    ({}, {"diffusion_scale": 1e300}, "diffusion_scale"),
    ({}, {"grid_step": 1e-12}, "grid_step"),
    ({}, {"steps": 50_000_000, "record": "log"}, "steps"),
    ({}, {"steps": 50_000_000, "record": "log", "max_blocks": 10**9}, "max_blocks"),
])
def test_effective_dynamics_refuses_what_it_cannot_evolve_before_any_work(
        change, kwargs, field, monkeypatch):
    """Sizes the evolution cannot resolve or finish (a d its grid cannot resolve, a draw
    beyond memory, a grid finer than it bounds, more grid nodes × blocks than its work bound)
    are one line naming the field, before a single reduced draw."""
    from attnsignal.theory import effective, moments

    def no_draws(*a, **k):
        raise AssertionError("work started before the check")

    monkeypatch.setattr(moments, "_gradient_pool", no_draws)
    monkeypatch.setattr(effective, "build_table", no_draws)
    kw = {"steps": 100, **kwargs}
    with pytest.raises(ConfigError, match=rf"^{field}: must "):
        asg.effective_dynamics(M.replace(**change), STEP, **kw)


def test_advise_schedule_refuses_a_model_the_effective_dynamics_cannot_evolve():
    from attnsignal.theory.advisor import advise_schedule

    for change, field in (({"d": 10**30}, "d"), ({"n_nuisance": 10**12}, "n_nuisance")):
        with pytest.raises(ConfigError, match=rf"^{field}: must "):
            advise_schedule(M.replace(**change), 0.9)


@pytest.mark.parametrize("argv, field", [
    (["ode", *SMALL, "--theta", "1e30"], "theta/noise_std"),
    (["advise", *SMALL, "--theta", "1e30"], "theta/noise_std"),
    (["ode", *SMALL, "--effective", "--d", str(10**30)], "d"),
])
def test_huge_values_the_theory_cannot_compute_are_one_line(argv, field, tmp_path, capsys):
    """θ/σ beyond what the exact quadrature resolves in float64, a d the effective dynamics'
    grid cannot resolve: refused before any output (they ran past 20 s, or crashed in numba)."""
    end = run_cli(argv + ["--no-plot", "--out", str(tmp_path / "o")], capsys)
    assert end.how == "refused" and end.message.startswith(f"attnsignal: error: {field}: "), end
