"""Result.save is one atomic unit; Result.load checks format, version and checksums and names
the file in every error (issue 15, item 6)."""

from __future__ import annotations

import json
import os
import random
import signal
import time

import numpy as np
import pandas as pd
import pytest

import attnsignal as asg
from attnsignal.config import ConfigError
from attnsignal.persistence import ResultFileError, atomic_write

MODEL = asg.ModelConfig(d=5, n_informative=2, n_nuisance=3, theta=1.0)
STEP = asg.StepSize(0.1, k0=50, power=0.7)


def _result(seed: int, runs: int = 3) -> asg.Result:
    return asg.simulate(MODEL, STEP, steps=30, runs=runs, engine="projected", seed=seed,
                        record_every=3, record_q=True)


@pytest.fixture(scope="module")
def pair() -> tuple[asg.Result, asg.Result]:
    # different seeds and run counts: a manifest of one with the data of the other cannot load
    return _result(1, runs=3), _result(2, runs=4)


def _same(a: asg.Result, b: asg.Result) -> bool:
    return (a.seed == b.seed and a.run == b.run
            and a.to_frame().equals(b.to_frame())
            and np.array_equal(a.q_final, b.q_final) and np.array_equal(a.q_records, b.q_records)
            and np.array_equal(a.diverged_step, b.diverged_step))


def _manifest(out) -> dict:
    return json.loads((out / "manifest.json").read_text())


def _leftovers(path) -> list[str]:
    return sorted(p.name for p in path.iterdir() if p.name.endswith(".tmp"))


def test_save_over_a_result_replaces_it_and_leaves_only_its_own_files(pair, tmp_path):
    a, b = pair
    out = tmp_path / "r"
    a.save(out)
    b.save(out)
    assert _same(asg.Result.load(out), b)
    man = json.loads((out / "manifest.json").read_text())
    named = {f["name"] for f in man["files"].values()}
    assert sorted(named) == sorted(p.name for p in out.iterdir()
                                   if p.name not in ("manifest.json", ".result.lock"))


def test_stale_temporaries_are_removed_by_the_next_save(pair, tmp_path):
    a, _ = pair
    out = tmp_path / "r"
    a.save(out)
    for name in (".result.0123456789abcdef.parquet.x1.tmp", ".manifest.json.y2.tmp",
                 ".q_final.0123456789abcdef.npy.z.tmp", "result.parquet",
                 "result.fedcba9876543210.parquet"):
        (out / name).write_bytes(b"junk")
    (out / "notes.txt").write_text("the user's own file")
    a.save(out)
    assert _leftovers(out) == []
    assert not (out / "result.parquet").exists()
    assert not (out / "result.fedcba9876543210.parquet").exists()
    assert (out / "notes.txt").read_text() == "the user's own file"
    assert _same(asg.Result.load(out), a)


def test_sigkill_during_save_never_leaves_a_mixed_result(pair, tmp_path):
    """Fork a child that saves the two results over each other in a loop; SIGKILL it at a
    random moment; the directory must load as exactly one of the two, and the next save
    must leave no temporaries. 24 to 80 trials."""
    a, b = pair
    out = tmp_path / "r"
    a.save(out)
    t0 = time.perf_counter()
    b.save(out)
    one_save = time.perf_counter() - t0
    rng = random.Random(15)
    seen = {"a": 0, "b": 0, "mid_save": 0}
    # at least 24 trials; more (up to 80) until 3 kills landed mid-save (a loaded machine
    # stretches the child's start-up, so the kill window is widened as trials go on)
    for trial in range(80):
        if trial >= 24 and seen["mid_save"] >= 3:
            break
        pid = os.fork()
        if pid == 0:  # child: save, save, save... until killed
            try:
                for i in range(10_000):
                    (a if i % 2 else b).save(out)
            finally:
                os._exit(0)
        time.sleep(rng.uniform(0.0, (3.0 + trial / 8) * one_save))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        named = {f["name"] for f in _manifest(out)["files"].values()}
        if _leftovers(out) or any(p.name.startswith(("result.", "q_")) and p.name not in named
                                  for p in out.iterdir()):
            seen["mid_save"] += 1  # killed between its first write and its clean-up
        back = asg.Result.load(out)
        if _same(back, a):
            seen["a"] += 1
        else:
            assert _same(back, b), f"trial {trial}: a mixed result"
            seen["b"] += 1
    assert seen["mid_save"] >= 1, seen  # the kills did land inside saves
    a.save(out)
    assert _leftovers(out) == []
    assert _same(asg.Result.load(out), a)


# ---------------------------------------------------------------------- load errors


@pytest.fixture()
def saved(pair, tmp_path):
    out = tmp_path / "r"
    pair[0].save(out)
    return out


def _one_line_naming(exc: BaseException, name: str) -> str:
    msg = str(exc)
    assert "\n" not in msg, msg
    assert name in msg, msg
    assert isinstance(exc, ConfigError)
    return msg


def _expect_error(out, name: str, match: str) -> None:
    with pytest.raises(ResultFileError) as info:
        asg.Result.load(out)
    msg = _one_line_naming(info.value, name)
    assert match in msg, msg


def test_load_refuses_a_manifest_without_model(saved):
    man = _manifest(saved)
    del man["model"]
    (saved / "manifest.json").write_text(json.dumps(man))
    _expect_error(saved, "manifest.json", "lacks the key 'model'")


@pytest.mark.parametrize("text", ["", "{", "garbage", '{"format": "attnsignal.result/2", ',
                                  "[1, 2]", "\udcff"])
def test_load_refuses_garbage_or_truncated_manifest(saved, text):
    data = text.encode("utf-8", "surrogateescape")
    (saved / "manifest.json").write_bytes(data)
    _expect_error(saved, "manifest.json", "manifest.json")


def test_load_refuses_a_truncated_copy_of_a_real_manifest(saved):
    raw = (saved / "manifest.json").read_bytes()
    (saved / "manifest.json").write_bytes(raw[: len(raw) // 2])
    _expect_error(saved, "manifest.json", "not valid JSON")


@pytest.mark.parametrize("fmt", ["attnsignal.result/99", "attnsignal.sweep/1", None])
def test_load_checks_the_format(saved, fmt):
    man = _manifest(saved)
    man["format"] = fmt
    (saved / "manifest.json").write_text(json.dumps(man))
    _expect_error(saved, "manifest.json", "format must be one of")


def test_load_reports_a_bad_config_in_the_manifest(saved):
    man = _manifest(saved)
    man["model"]["theta"] = -1
    (saved / "manifest.json").write_text(json.dumps(man))
    _expect_error(saved, "manifest.json", "theta")


@pytest.mark.parametrize("key", ["frame", "q_final", "q_records"])
def test_a_flipped_byte_in_a_data_file_is_detected(saved, key):
    name = _manifest(saved)["files"][key]["name"]
    p = saved / name
    data = bytearray(p.read_bytes())
    data[len(data) // 2] ^= 0x01
    p.write_bytes(bytes(data))
    _expect_error(saved, name, "sha256 differs")


def test_a_missing_data_file_is_named(saved):
    name = _manifest(saved)["files"]["frame"]["name"]
    (saved / name).unlink()
    _expect_error(saved, name, "missing")


def test_a_manifest_naming_a_foreign_file_is_refused(saved):
    man = _manifest(saved)
    man["files"]["frame"]["name"] = "../../etc/passwd"
    (saved / "manifest.json").write_text(json.dumps(man))
    _expect_error(saved, "manifest.json", "files.frame")


def test_a_manifest_of_another_result_is_refused(pair, tmp_path):
    """The data of one result under the manifest of another (what item 6 found) cannot load:
    the checksums differ, and without them the run counts differ."""
    a, b = pair
    a.save(tmp_path / "a")
    b.save(tmp_path / "b")
    man_b = _manifest(tmp_path / "b")
    man_b["files"] = _manifest(tmp_path / "a")["files"]
    for f in man_b["files"].values():
        (tmp_path / "b" / f["name"]).write_bytes((tmp_path / "a" / f["name"]).read_bytes())
    (tmp_path / "b" / "manifest.json").write_text(json.dumps(man_b))
    _expect_error(tmp_path / "b", "manifest.json", "run_ids name 4 runs; result.")


def _edit_manifest(out, **changes) -> None:
    man = _manifest(out)
    man.update(changes)
    (out / "manifest.json").write_text(json.dumps(man))


def test_permuted_run_ids_are_refused_not_used_to_relabel_the_rows(saved):
    """The hand edit of the issue: run_ids [0, 1, 2] -> [2, 0, 1] (every run still there)."""
    assert _manifest(saved)["run_ids"] == [0, 1, 2]
    _edit_manifest(saved, run_ids=[2, 0, 1])
    _expect_error(saved, "manifest.json", "run_ids [2, 0, 1] do not match result.")


def test_renumbered_or_miscounted_run_ids_are_refused(saved):
    _edit_manifest(saved, run_ids=[0, 1, 5])
    _expect_error(saved, "manifest.json", "run_ids [0, 1, 5] do not match result.")
    _edit_manifest(saved, run_ids=[0, 1], diverged_step=[-1, -1])
    _expect_error(saved, "manifest.json", "run_ids name 2 runs; result.")


def test_has_q_final_without_its_file_is_refused(pair, tmp_path):
    """The other hand edit of the issue: a result saved without queries, then
    ``has_q_final: true``."""
    res = asg.simulate(MODEL, STEP, steps=30, runs=3, engine="chain", seed=1, record_every=3)
    assert res.q_final is None
    res.save(tmp_path / "r")
    _edit_manifest(tmp_path / "r", has_q_final=True)
    _expect_error(tmp_path / "r", "manifest.json", "has_q_final is true, but the manifest names "
                                                   "no q_final file")


def test_a_query_file_that_has_q_denies_is_refused(saved):
    _edit_manifest(saved, has_q_records=False)
    _expect_error(saved, "manifest.json", "has_q_records is false, but the manifest names a "
                                          "q_records file")


def test_queries_of_the_wrong_shape_are_refused(pair, tmp_path):
    """Each file matches its own checksum, but not the manifest's runs."""
    a, b = pair
    a.save(tmp_path / "a")
    b.save(tmp_path / "b")
    man_a, man_b = _manifest(tmp_path / "a"), _manifest(tmp_path / "b")
    man_a["files"]["q_final"] = man_b["files"]["q_final"]
    name = man_b["files"]["q_final"]["name"]
    (tmp_path / "a" / name).write_bytes((tmp_path / "b" / name).read_bytes())
    (tmp_path / "a" / "manifest.json").write_text(json.dumps(man_a))
    _expect_error(tmp_path / "a", "manifest.json", "q_final has shape (4, 5); the manifest's")


def test_a_corrupted_data_file_under_a_valid_manifest_is_refused(saved):
    """A data file replaced by other valid bytes (the same frame, a value changed): its
    checksum no longer matches."""
    name = _manifest(saved)["files"]["frame"]["name"]
    frame = pd.read_parquet(saved / name)
    frame.loc[0, "alignment"] += 1e-12
    frame.to_parquet(saved / name, index=False)
    _expect_error(saved, name, "sha256 differs from manifest.json")


def _format_1_directory(a: asg.Result, out):
    """``a`` saved as the older format wrote it: fixed names, no checksums."""
    out.mkdir()
    man = {**a.manifest(), "format": "attnsignal.result/1"}
    (out / "manifest.json").write_text(json.dumps(man))
    a.to_frame().to_parquet(out / "result.parquet", index=False)
    np.save(out / "q_final.npy", a.q_final)
    np.save(out / "q_records.npy", a.q_records)
    return out, man


def test_a_format_1_directory_is_checked_for_rows_and_ids(pair, tmp_path):
    """Old manifests have no checksums: they load with the row, id and shape checks only."""
    out, man = _format_1_directory(pair[0], tmp_path / "old")
    (out / "manifest.json").write_text(json.dumps({**man, "run_ids": [2, 0, 1]}))
    _expect_error(out, "manifest.json", "run_ids [2, 0, 1] do not match result.parquet")
    (out / "q_final.npy").unlink()
    (out / "manifest.json").write_text(json.dumps(man))
    _expect_error(out, "q_final.npy", "missing (named by manifest.json)")


def test_a_format_1_directory_still_loads_and_damage_is_one_line(pair, tmp_path):
    a, _ = pair
    out, _ = _format_1_directory(a, tmp_path / "old")
    assert _same(asg.Result.load(out), a)
    data = bytearray((out / "result.parquet").read_bytes())
    data[4:40] = b"\xff" * 36
    (out / "result.parquet").write_bytes(bytes(data))
    with pytest.raises(ResultFileError) as info:
        asg.Result.load(out)
    msg = _one_line_naming(info.value, "result.parquet")
    assert "Parquet" in msg or "frame" in msg


def test_load_of_a_missing_manifest_is_still_a_file_not_found_error(tmp_path):
    (tmp_path / "half").mkdir()
    with pytest.raises(FileNotFoundError, match="no manifest.json"):
        asg.Result.load(tmp_path / "half")


def test_old_name_step_is_the_schedule(pair):
    a, _ = pair
    assert a.step is a.schedule == STEP
    assert a.steps[0] == 0


def test_atomic_write_is_importable_from_results_during_the_transition():
    from attnsignal.results import atomic_write as old

    assert old is atomic_write
