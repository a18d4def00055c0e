"""The examples in the docstrings of the public entry points run and say what they show.

Each module below has examples (``>>>``) in its docstrings: of the model and step-size configs,
``simulate``, the landscape and the random streams. They run here, with the rest of the suite."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "attnsignal.config",
    "attnsignal.schedules",
    "attnsignal.simulate",
    "attnsignal.seeds",
    "attnsignal.theory.landscape",
]


@pytest.mark.parametrize("name", MODULES)
def test_the_examples_in_the_docstrings_hold(name):
    module = importlib.import_module(name)  # the module, not a function of the same name
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS,
                             raise_on_error=False, verbose=False)
    assert result.attempted > 0, f"{name} has no example"
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples of {name} fail"
