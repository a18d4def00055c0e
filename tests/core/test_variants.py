"""Variant axes: what each engine, the theory and the baselines declare they cover
(``supports``) is what they accept, and anything else is refused with one line naming the
field — for every registered engine, every variant field of the configs and every public
entry point that takes a model, found from the registries and the tables."""

from __future__ import annotations

import inspect
from dataclasses import replace

import pytest

import attnsignal as asg
import attnsignal.baselines as baselines
import attnsignal.theory as theory
from attnsignal.config import (ConfigError, ModelConfig, RunConfig, SupportedModel,
                               check_supported, check_supports, variant_fields)
from attnsignal.engines import engine_names, get_engine
from attnsignal.validation import Optional

MODEL = ModelConfig(d=6, n_informative=2, n_nuisance=3, theta=1.0)
STEP = asg.StepSize(0.05, k0=10.0, power=0.75)
AXES = variant_fields()


def _outside(field: str) -> str:
    """A value of ``field`` that no declaration can list (nor the config allow)."""
    return "not_" + "_".join(AXES[field][0])


def _with(obj, field, value):
    """``obj`` (a frozen config) with ``field`` forced to ``value``, past its validation, as a
    value the config may one day allow."""
    new = replace(obj)
    object.__setattr__(new, field, value)
    return new


def test_the_variant_fields_are_read_from_the_tables():
    assert AXES["signal_sign"] == (("fixed", "random"), "fixed")
    assert AXES["update"] == (("projected", "riemannian"), "projected")
    assert "engine" not in AXES and "method" not in AXES  # names resolved by registries


def test_a_declaration_names_only_variant_fields_and_their_values():
    with pytest.raises(TypeError, match="not a variant field"):
        check_supports({"colour": ("red",)})
    with pytest.raises(TypeError, match="has no value 'sideways'"):
        check_supports({"update": ("sideways",)})


def test_a_field_not_declared_accepts_only_its_default():
    check_supported("x", {}, model=MODEL, run=RunConfig(steps=1))  # defaults: accepted
    with pytest.raises(ConfigError, match=r"^signal_sign: must be 'fixed' for x; got 'random'$"):
        check_supported("x", {}, model=MODEL.replace(signal_sign="random"))
    with pytest.raises(ConfigError, match=r"^update: must be 'projected' for x; got "):
        check_supported("x", {}, update="riemannian")


@pytest.mark.parametrize("engine", engine_names())
@pytest.mark.parametrize("field", list(AXES))
def test_every_engine_accepts_what_it_declares_and_refuses_the_rest(engine, field):
    eng = get_engine(engine)
    run = RunConfig(steps=1, engine=engine)
    owner = "model" if field in ModelConfig.field_names() else "run"
    allowed = eng.capabilities.supports.get(field, (AXES[field][1],))
    for value in allowed:
        objs = {"model": MODEL, "run": run}
        objs[owner] = _with(objs[owner], field, value)
        eng.check(objs["model"], objs["run"])
    for value in [v for v in AXES[field][0] if v not in allowed] + [_outside(field)]:
        objs = {"model": MODEL, "run": run}
        objs[owner] = _with(objs[owner], field, value)
        with pytest.raises(ConfigError) as info:
            eng.check(objs["model"], objs["run"])
        assert info.value.field == field and f"the {engine!r} engine" in str(info.value)
        assert str(info.value).endswith(f"; got {value!r}")


def _model_constraint(fn):
    """The ``SupportedModel`` constraint of ``fn``'s model (inside an ``Optional``), or None."""
    for c in getattr(fn, "__constraints__", {}).values():
        c = c.c if isinstance(c, Optional) else c
        if isinstance(c, SupportedModel):
            return c
    return None


def _entry_points():
    """Every public function of the theory and the baselines that takes a model."""
    return [getattr(mod, name) for mod in (theory, baselines) for name in mod.__all__
            if _model_constraint(getattr(mod, name)) is not None]


ENTRY_POINTS = _entry_points()


def test_the_entry_points_that_take_a_model_declare_what_they_cover():
    names = {fn.__name__ for fn in ENTRY_POINTS}
    assert {"landscape", "solve_ode", "effective_dynamics", "advise_schedule",
            "samples_to_reach", "baseline", "baseline_theory", "efficiency"} <= names
    for mod in (theory, baselines):  # every public function with a model parameter
        for name in mod.__all__:
            fn = getattr(mod, name)
            if inspect.isfunction(fn) and "model" in inspect.signature(fn).parameters:
                assert fn in ENTRY_POINTS, name


@pytest.mark.parametrize("fn", ENTRY_POINTS, ids=lambda f: f"{f.__module__}.{f.__name__}")
@pytest.mark.parametrize("field", [f for f in AXES if f in ModelConfig.field_names()])
def test_every_entry_point_refuses_a_model_variant_it_does_not_cover(fn, field):
    c = _model_constraint(fn)
    bad = _with(MODEL, field, _outside(field))
    sig = inspect.signature(fn)
    args = {n: None for n, p in sig.parameters.items()
            if p.default is inspect.Parameter.empty and n != "model"}
    pool = [STEP, asg.simulate(MODEL, STEP, steps=2, engine="chain")]
    for n, con in fn.__constraints__.items():
        if n in args:
            ok = list(con.valid_examples()) or [v for v in pool if con.accepts(v)]
            args[n] = ok[0]
    with pytest.raises(ConfigError) as info:
        fn(model=bad, **args)
    assert info.value.field == field and c.who in str(info.value)


def test_the_theory_refuses_a_result_of_a_variant_it_does_not_cover():
    res = asg.simulate(MODEL, STEP, steps=3, engine="chain")
    res.model = _with(MODEL, "signal_sign", _outside("signal_sign"))
    with pytest.raises(ConfigError, match=r"^signal_sign: must be one of 'fixed', 'random' for "
                                          r"the theory"):
        theory.tracking(res)
