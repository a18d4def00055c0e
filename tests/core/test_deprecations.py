"""The old names work, warn once per use naming what replaces them, and are not used by the
package itself (the suite's ``filterwarnings`` turns a use inside ``attnsignal`` into an
error; this file checks that the warning is attributed to the user's code)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import attnsignal as asg
from attnsignal import schedules
from attnsignal.deprecations import TABLE, OldNameWarning

STEP = asg.StepSize(0.1, k0=10.0, power=0.75)


def test_every_old_name_of_a_module_warns_and_still_works():
    ks = np.arange(5)
    with pytest.warns(OldNameWarning, match=r"schedules\.step_sizes is deprecated; use "
                                            r"Schedule\.eta\(k\)") as rec:
        np.testing.assert_array_equal(schedules.step_sizes(STEP, ks), STEP.eta(ks))
    assert rec[0].filename == __file__  # attributed to the code that used it
    with pytest.warns(OldNameWarning, match="ode_time"):
        np.testing.assert_array_equal(schedules.ode_time(STEP, ks), STEP.ode_time(ks))
    with pytest.warns(OldNameWarning, match="step_at_time"):
        assert schedules.step_at_time(STEP, 0.25) == STEP.step_at_time(0.25)
    with pytest.warns(OldNameWarning, match="step_sizes"):
        from attnsignal.schedules import step_sizes  # noqa: F401
    with pytest.raises(AttributeError):
        schedules.no_such_name  # noqa: B018


def test_result_step_warns_and_is_the_schedule():
    res = asg.simulate(asg.ModelConfig(d=4, n_informative=1, n_nuisance=2, theta=1.0), STEP,
                       steps=2)
    with pytest.warns(OldNameWarning, match=r"Result\.step is deprecated; use Result\.schedule"):
        assert res.step is res.schedule


def test_every_row_names_its_replacement():
    for key, (replacement, impl) in TABLE.items():
        module, _, name = key.partition(":")
        assert module.startswith("attnsignal.") and name and replacement
        assert impl is None or callable(impl)


def test_the_package_does_not_use_its_old_names():
    """The filter of pyproject.toml is what enforces it in every test; here, it is in force."""
    with warnings.catch_warnings():
        warnings.simplefilter("default")
        filters = [f for f in warnings.filters if f[2] is OldNameWarning]
    assert any(f[0] == "error" and f[3] is not None and f[3].match("attnsignal.results")
               for f in filters), filters
