"""Every constraint table refuses what it must, generated from the tables themselves.

As scikit-learn's ``check_param_validation`` feeds every estimator's parameters invalid values,
these tests find every table of the package — the config classes (``Config`` subclasses: the
model, the run, each schedule family), the Slurm options, each registered experiment's plan
section and every function checked by :func:`attnsignal.validation.validated` — and give each
field, one at a time, every value its constraint lists as one to refuse
(``Constraint.invalid_examples``), the others valid: the result must be one
:class:`ConfigError` naming that field. A new table, field or constraint is covered without a
line here; a constraint that lists nothing to refuse fails ``test_every_field_has_values_to_refuse``.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import itertools
import pkgutil
from typing import Any, Callable

import numpy as np
import pytest

import attnsignal
from attnsignal.config import ModelConfig, StepSize
from attnsignal.reproduce import EXPERIMENTS
from attnsignal.sweep.slurm import _TABLE as SLURM_TABLE, SlurmOptions
from attnsignal.validation import Config, ConfigError, Constraint


def _import_all() -> list[Any]:
    mods = []
    for info in pkgutil.walk_packages(attnsignal.__path__, "attnsignal."):
        if info.name.endswith("__main__"):
            continue
        mods.append(importlib.import_module(info.name))
    return mods


MODULES = _import_all()
MODEL = ModelConfig(d=6, n_informative=2, n_nuisance=3, theta=1.0)
STEP = StepSize(0.05, k0=10.0, power=0.75)
#: objects an ``Instance`` constraint may ask for (the first one it accepts is used)
POOL: list[Any] = [MODEL, STEP]


def _result() -> Any:
    return attnsignal.simulate(MODEL, STEP, steps=2, engine="chain")


def _subclasses(cls: type) -> list[type]:
    out = []
    for sub in cls.__subclasses__():
        out += [sub, *_subclasses(sub)]
    return out


def _valid(c: Constraint) -> list[Any]:
    vals = list(c.valid_examples())
    if not vals:
        vals = [v for v in POOL if c.accepts(v)]
    return vals


# --------------------------------------------------------------------------- the tables


def _dataclass_cases(cls: type, table: dict[str, Constraint]) -> tuple[Callable, dict]:
    """A builder ``make(**kwargs)`` and valid keyword arguments for a dataclass whose fields
    the table checks: the defaults, and for each required field a value its constraint
    accepts (the first combination that builds)."""
    fields = [f for f in dataclasses.fields(cls) if f.init]
    required = [f.name for f in fields if f.default is dataclasses.MISSING
                and f.default_factory is dataclasses.MISSING]  # type: ignore[misc]
    choices = [_valid(table[n]) for n in required]
    for combo in itertools.product(*choices):
        kwargs = dict(zip(required, combo))
        try:
            cls(**kwargs)
        except ConfigError:
            continue
        return cls, kwargs
    raise AssertionError(f"{cls.__name__}: no valid example from its table's constraints")


def _plan_section_case(section: Any) -> tuple[Callable, dict]:
    return (lambda **kw: dataclasses.replace(section, **kw)), {}


def _function_case(fn: Callable) -> tuple[Callable, dict]:
    """Valid arguments for every checked parameter; a placeholder for the others (the
    decorator checks before the function runs, so it is never called with them)."""
    sig = inspect.signature(fn)
    kwargs: dict[str, Any] = {}
    for name, p in sig.parameters.items():
        c = fn.__constraints__.get(name)
        if c is not None:
            vals = _valid(c)
            assert vals, f"{fn.__qualname__}: no valid example for {name}"
            kwargs[name] = vals[0]
        elif p.default is inspect.Parameter.empty and p.kind not in (
                p.VAR_POSITIONAL, p.VAR_KEYWORD):
            kwargs[name] = None
    return fn, kwargs


def tables() -> dict[str, tuple[dict[str, Constraint], Callable[[], tuple[Callable, dict]]]]:
    """``{label: (table, case)}`` for every table of the package."""
    out: dict[str, Any] = {}
    for cls in _subclasses(Config):
        if cls.__module__.startswith("attnsignal.") and not inspect.isabstract(cls) \
                and cls._table:
            out[cls.__qualname__] = (cls._table, lambda cls=cls: _dataclass_cases(cls, cls._table))
    out["SlurmOptions"] = (SLURM_TABLE, lambda: _dataclass_cases(SlurmOptions, SLURM_TABLE))
    for exp in EXPERIMENTS:
        sec = exp.Plan.full()
        out[f"{exp.name} plan"] = (type(sec)._table, lambda sec=sec: _plan_section_case(sec))
    seen = set()
    for mod in MODULES:
        for name, fn in vars(mod).items():
            cons = getattr(fn, "__constraints__", None)
            if cons and callable(fn) and id(fn) not in seen and \
                    getattr(fn, "__module__", "").startswith("attnsignal."):
                seen.add(id(fn))
                out[f"{fn.__module__}.{fn.__qualname__}"] = (cons, lambda fn=fn: _function_case(fn))
    return out


TABLES = tables()
FIELDS = [(label, field) for label, (table, _) in TABLES.items() for field in table]


def test_the_tables_are_found():
    labels = set(TABLES)
    assert {"ModelConfig", "RunConfig", "StepSize", "ConstantStep", "PiecewiseStep",
            "TabulatedStep", "SlurmOptions"} <= labels
    assert {f"{e.name} plan" for e in EXPERIMENTS} <= labels
    assert "attnsignal.theory.landscape.landscape" in labels
    assert "attnsignal.theory.effective.effective_dynamics" in labels
    assert len(FIELDS) > 100


@pytest.mark.parametrize("label, field", FIELDS, ids=[f"{a}:{b}" for a, b in FIELDS])
def test_every_field_has_values_to_refuse(label, field):
    table, _ = TABLES[label]
    assert table[field].invalid_examples(), (
        f"{label}.{field}: its constraint ({type(table[field]).__name__}) lists no value to "
        "refuse; give it counterexamples")


@pytest.mark.parametrize("label, field", FIELDS, ids=[f"{a}:{b}" for a, b in FIELDS])
def test_every_invalid_value_is_one_line_naming_its_field(label, field):
    table, case = TABLES[label]
    if "Result" in table[field].describe() and not POOL[2:]:
        POOL.append(_result())
    make, valid = case()
    for bad in table[field].invalid_examples():
        with pytest.raises(ConfigError) as info:
            make(**{**valid, field: bad})
        err = info.value
        msg = str(err)
        assert err.field == field or err.field.endswith("." + field), (label, field, bad, msg)
        assert "\n" not in msg and "; got " in msg and isinstance(err, ValueError), msg


def test_a_table_of_a_new_config_class_is_covered():
    """The generation itself: a Config subclass defined now is found and checked."""
    from attnsignal.validation import Integer

    @dataclasses.dataclass(frozen=True)
    class Probe(Config):
        n: int
        _table = {"n": Integer(ge=3)}

    make, valid = _dataclass_cases(Probe, Probe._table)
    assert valid == {"n": 3}
    for bad in Probe._table["n"].invalid_examples():
        with pytest.raises(ConfigError, match=r"^n: must be an integer >= 3; got "):
            make(n=bad)
    assert np.isfinite(valid["n"])


# --------------------------------------------------------------------------- the command line


def _as_text(v: Any) -> str | None:
    """A counterexample as a command-line value (None when it has no text form)."""
    if isinstance(v, (bool, np.bool_)) or v is None:
        return None
    if isinstance(v, (int, float, str)):
        return str(v)
    if isinstance(v, tuple) and all(isinstance(x, (int, float)) for x in v) and v:
        return ",".join(map(str, v))
    return None


def _run_flag_cases() -> list[tuple[str, str, list[str]]]:
    from attnsignal.cli._common import FIELD_TABLE, MODEL_FIELDS, RUN_FIELDS, STEP_FIELDS
    from attnsignal.schedules import SCHEDULES

    cases = []
    for name in (*MODEL_FIELDS, *STEP_FIELDS, *RUN_FIELDS):
        c = FIELD_TABLE[name]
        extra: list[str] = []
        if name in STEP_FIELDS and name != "schedule":
            kind = next(k for k, cls in SCHEDULES.items() if name in cls.field_names())
            extra = ["--schedule", kind]
            # the family's other required fields at a valid value, so that the one bad
            # flag is what the command refuses
            for f in dataclasses.fields(SCHEDULES[kind]):
                if f.name != name and f.default is dataclasses.MISSING \
                        and f.default_factory is dataclasses.MISSING:
                    good = _as_text(FIELD_TABLE[f.name].valid_examples()[0])
                    assert good is not None, f.name
                    extra += ["--" + f.name.replace("_", "-"), good]
        for bad in c.invalid_examples():
            text = _as_text(bad)
            if text is None or c.accepts(c.parse(text)):
                continue
            cases.append((name, text, extra))
    return cases


RUN_FLAGS = _run_flag_cases()


@pytest.mark.parametrize("field, text, extra", RUN_FLAGS,
                         ids=[f"{f}={t}" for f, t, _ in RUN_FLAGS])
def test_every_flag_of_run_refuses_its_invalid_values(field, text, extra, tmp_path, capsys):
    from attnsignal.cli import main

    out = tmp_path / "o"
    flag = "--" + field.replace("_", "-")
    assert main(["run", *extra, flag, text, "--out", str(out)]) == 2
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(err) == 1, err
    assert err[0].startswith((f"attnsignal: error: {field}:",
                              f"attnsignal: error: step.{field}:")), err[0]
    assert not out.exists()
