"""Fixtures of the sweep tests: tiny specs (literal engine, milliseconds per task)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from attnsignal.sweep import SweepSpec, load_sweep, run_sweep

from sweep_helpers import TINY, TINY_TOML  # noqa: E402


@pytest.fixture
def tiny_spec() -> SweepSpec:
    return SweepSpec.from_dict(TINY)


@pytest.fixture
def tiny_toml(tmp_path: Path) -> Path:
    p = tmp_path / "spec.toml"
    p.write_text(TINY_TOML)
    return p


@pytest.fixture(scope="session")
def tiny_reference(tmp_path_factory) -> pd.DataFrame:
    """The tiny sweep computed in this process, one task per point."""
    out = tmp_path_factory.mktemp("ref") / "sweep"
    report = run_sweep(SweepSpec.from_dict(TINY), out, executor="serial", chunk_runs=4,
                       progress=False)
    assert report.ok
    return load_sweep(out)
