"""Random streams named by spawn keys: a stream is ``SeedSequence(seed, spawn_key=key)``,
wherever it is drawn — a simulation, a baseline, a sweep's run, a theory function."""

from __future__ import annotations

import numpy as np
import pytest

import attnsignal as asg
from attnsignal.config import ConfigError
from attnsignal.reproduce import EXPERIMENTS
from attnsignal.seeds import KeyNames, name_code, spawn_key, split, stream

MODEL = asg.ModelConfig(d=6, n_informative=2, n_nuisance=3, theta=1.0)
STEP = asg.StepSize(0.05, k0=10.0, power=0.75)


def test_a_name_is_a_stable_32_bit_word():
    assert name_code("E1") == name_code("E1") and 0 <= name_code("E1") < 2 ** 32
    assert spawn_key("E1", "runs", 3) == (name_code("E1"), name_code("runs"), 3)
    codes = [name_code(e.name) for e in EXPERIMENTS]
    assert len(set(codes)) == len(codes)
    with pytest.raises(TypeError):
        spawn_key(1.5)


def test_a_stream_is_the_seed_sequence_of_its_key():
    s = stream(2606, "E1", "literal")
    assert s.entropy == 2606 and s.spawn_key == spawn_key("E1", "literal")
    child = stream(s, "x", 4)
    assert child.entropy == 2606 and child.spawn_key == (*spawn_key("E1", "literal"), *spawn_key("x", 4))
    assert split(child) == (2606, child.spawn_key) and split(7) == (7, ())
    with pytest.raises(ConfigError, match=r"^seed: "):
        split(np.random.SeedSequence([1, 2]))


def test_a_simulation_seeded_by_a_stream_records_its_key():
    s = stream(11, "E9", "runs")
    a = asg.simulate(MODEL, STEP, steps=30, runs=3, engine="chain", seed=s)
    b = asg.simulate(MODEL, STEP, steps=30, runs=3, engine="chain", seed=11,
                     spawn_prefix=spawn_key("E9", "runs"))
    np.testing.assert_array_equal(a.alignment, b.alignment)
    assert a.run.seed == 11 and a.run.spawn_key == s.spawn_key
    # run r draws from SeedSequence(seed, spawn_key=(*key, r)): the same run alone
    c = asg.simulate(MODEL, STEP, steps=30, runs=1, first_run=2, engine="chain", seed=s)
    np.testing.assert_array_equal(c.alignment[0], a.alignment[2])
    # without a key the manifest is what it was
    assert "spawn_key" not in asg.simulate(MODEL, STEP, steps=2, seed=3).manifest()["run"]
    base = asg.baseline(MODEL, "mean", samples=40, runs=2, seed=stream(5, "b"))
    again = asg.baseline(MODEL, "mean", samples=40, runs=2, seed=5, spawn_prefix=spawn_key("b"))
    np.testing.assert_array_equal(base.alignment, again.alignment)


def test_a_sweep_keys_its_runs_by_point_after_its_spawn_key(tmp_path):
    from attnsignal.sweep import load_sweep, run_sweep

    key = list(spawn_key("E9", "grid"))
    spec = {"sweep": {"seed": 4, "runs": 3, "steps": 30, "engine": "chain", "record_every": 10,
                      "spawn_key": key},
            "model": MODEL.to_dict(), "step": STEP.to_dict(),
            "grid": {"model.theta": [0.5, 1.0]}}
    assert run_sweep(spec, tmp_path / "s", executor="serial", progress=False).ok
    frame = load_sweep(tmp_path / "s")
    for point, theta in enumerate((0.5, 1.0)):
        direct = asg.simulate(MODEL.replace(theta=theta), STEP, steps=30, runs=3, seed=4,
                              engine="chain", record_every=10, spawn_prefix=(*key, point))
        got = frame[frame["point"] == point].sort_values(["run", "step"])["alignment"]
        np.testing.assert_array_equal(got.to_numpy().reshape(3, -1), direct.alignment)


def test_the_theory_takes_a_stream_as_its_seed():
    from attnsignal.theory import landscape

    a = landscape(MODEL, [0.2, 0.6], "mc", n_samples=500, seed=stream(3, "mc"))
    b = landscape(MODEL, [0.2, 0.6], "mc", n_samples=500, seed=stream(3, "mc"))
    c = landscape(MODEL, [0.2, 0.6], "mc", n_samples=500, seed=stream(3, "other"))
    np.testing.assert_array_equal(a.phi, b.phi)
    assert not np.array_equal(a.phi, c.phi)


def test_two_names_with_one_code_are_refused(monkeypatch):
    import attnsignal.seeds as seeds

    names = KeyNames()
    assert names.key("E1", "runs", 2) == spawn_key("E1", "runs", 2)
    monkeypatch.setattr(seeds, "name_code", lambda name: 7)
    names.code("E2")
    names.code("E2")  # the same name again: its own code
    with pytest.raises(RuntimeError, match="'E2' and 'E3' have the same code"):
        names.code("E3")
