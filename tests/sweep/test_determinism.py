"""The frame of a sweep is bit-identical whatever the executor, workers and chunk size."""

from __future__ import annotations


import numpy as np
import pandas as pd
import pytest

import attnsignal as asg
from attnsignal.results import FRAME_COLUMNS
from attnsignal.sweep import SweepSpec, load_sweep, run_sweep

from sweep_helpers import TINY, spec_dict


def _sweep(tmp_path, name, spec=TINY, **kw):
    report = run_sweep(spec, tmp_path / name, progress=False, **kw)
    assert report.ok, report.failed
    assert report.computed == report.tasks and report.skipped == 0
    return load_sweep(tmp_path / name)


def test_frame_layout_and_order(tiny_reference):
    f = tiny_reference
    assert list(f.columns) == ["point", "model.theta", "model.n_nuisance", *FRAME_COLUMNS]
    assert len(f) == 4 * 4 * 4  # points × runs × records (0, 10, 20, 30)
    assert f.index.equals(pd.RangeIndex(len(f)))
    keys = list(zip(f["point"], f["run"], f["step"]))
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    assert f["point"].dtype == np.int64 and f["model.n_nuisance"].dtype == np.int64
    assert f["model.theta"].dtype == np.float64
    got = f.groupby("point")[["model.theta", "model.n_nuisance"]].first()
    assert got.to_numpy().tolist() == [[0.5, 4], [0.5, 8], [1.0, 4], [1.0, 8]]


def test_a_point_is_simulate_with_the_point_index_as_spawn_prefix(tiny_reference, tiny_spec):
    p = tiny_spec.points()[2]
    res = asg.simulate(p.model, p.step, spawn_prefix=(2,), **p.run_kwargs)
    got = tiny_reference[tiny_reference["point"] == 2][FRAME_COLUMNS].reset_index(drop=True)
    pd.testing.assert_frame_equal(got, res.to_frame(), check_exact=True)


def test_serial_chunks_of_one_match(tmp_path, tiny_reference):
    pd.testing.assert_frame_equal(_sweep(tmp_path, "c1", executor="serial", chunk_runs=1),
                                  tiny_reference, check_exact=True)


def test_local_pool_one_worker_chunks_of_four(tmp_path, tiny_reference):
    f = _sweep(tmp_path, "w1", executor="local", workers=1, chunk_runs=4)
    pd.testing.assert_frame_equal(f, tiny_reference, check_exact=True)


def test_local_pool_two_workers_chunks_of_one(tmp_path, tiny_reference):
    f = _sweep(tmp_path, "w2", executor="local", workers=2, chunk_runs=1)
    pd.testing.assert_frame_equal(f, tiny_reference, check_exact=True)


def test_dask_local_cluster_two_workers(tmp_path, tiny_reference):
    pytest.importorskip("distributed")
    f = _sweep(tmp_path, "dask", executor="dask", workers=2, chunk_runs=3)
    pd.testing.assert_frame_equal(f, tiny_reference, check_exact=True)


def test_chain_engine_pool_vs_in_process(tmp_path):
    spec = SweepSpec.from_dict(spec_dict(engine="chain", steps=200, runs=6))
    a = _sweep(tmp_path, "a", spec, executor="serial", chunk_runs=6)
    b = _sweep(tmp_path, "b", spec, executor="local", workers=2, chunk_runs=1)
    pd.testing.assert_frame_equal(a, b, check_exact=True)
    assert np.isfinite(a["alignment"]).all()


def test_runs_and_seed_can_be_grid_axes(tmp_path):
    d = spec_dict()
    d["grid"] = {"sweep.runs": [2, 5], "sweep.seed": [1, 2]}
    f = _sweep(tmp_path, "g", d, executor="serial", chunk_runs=2)
    assert f.groupby("point")["run"].nunique().tolist() == [2, 2, 5, 5]
    g = _sweep(tmp_path, "h", d, executor="serial", chunk_runs=5)
    pd.testing.assert_frame_equal(f, g, check_exact=True)
    # run r of a point does not depend on how many runs the point has
    a = f[(f["point"] == 0)].drop(columns=["point", "sweep.runs"]).reset_index(drop=True)
    b = f[(f["point"] == 2) & (f["run"] < 2)].drop(columns=["point", "sweep.runs"])
    assert not a["alignment"].equals(b.reset_index(drop=True)["alignment"])  # other point index
