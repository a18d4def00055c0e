"""The reproduction's effective-dynamics overlay returns its accuracy warnings as report text."""

from __future__ import annotations

import functools
import warnings

import numpy as np

import attnsignal.theory.effective as effective
from attnsignal import ModelConfig, StepSize
from attnsignal.reproduce.effective_overlay import accuracy_notes, effective_path

SMALL = ModelConfig(d=30, n_informative=10, n_nuisance=30, theta=0.8)
STEP = StepSize(eta0=0.05, k0=300.0, power=0.75)


def test_overlay_catches_accuracy_warnings_and_reports_each_once(monkeypatch):
    """A prediction whose diagnostic warns (a tolerance its few draws cannot meet) returns the
    warning's text, once, and nothing reaches the caller's warnings; the report paragraph
    names the prediction and quotes the diagnostic; a quiet prediction adds no paragraph."""
    tight = functools.partial(effective.effective_dynamics, tolerance=1e-4, max_samples=400,
                              rtol=None)
    monkeypatch.setattr(effective, "effective_dynamics", tight)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        path = effective_path(SMALL, STEP, steps=300, record_every=100, initial_alignment=None,
                              n_samples=400, seed=3)
    assert len(path.warnings) == 1 and "Monte-Carlo" in path.warnings[0]
    assert np.array_equal(path.at(path.steps[1:]).steps, path.steps[1:])
    assert path.at(path.steps[1:]).warnings == path.warnings
    note = accuracy_notes({"d = 30": path})
    assert note is not None and "d = 30: " + path.warnings[0] in note
    assert accuracy_notes({"d = 30": path.__class__(**{**path.__dict__, "warnings": ()})}) is None
