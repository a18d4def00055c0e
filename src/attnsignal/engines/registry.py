"""The one registry of engines: every place that lists or inspects engines asks it.

``get_engine(name)`` returns the registered :class:`~.base.Engine`; ``engine_names()`` the
names in registration order (the built-in ones first: ``literal``, ``projected``, ``chain``);
``register(engine)`` adds one. Config validation (``RunConfig.engine``), the command line's
choices and help, ``Result.q``, ``simulate(record_q=True)``, the benchmarks and the tests derive
from it, so a new engine is one module plus one ``register`` call.

Registration is per process: an engine registered at run time is not known to the worker
processes of a sweep unless the module that registers it is imported there too (the built-in
engines are registered when :mod:`attnsignal.engines` is imported).
"""

from __future__ import annotations

from typing import Any

from ..validation import OneOf
from .base import Engine

__all__ = ["register", "get_engine", "engine_names", "engines_with", "fastest_engine"]

_ENGINES: dict[str, Engine] = {}
#: a registered engine's name (read from the registry at each check)
_NAME = OneOf(lambda: tuple(_ENGINES))


def register(engine: Engine, *, replace: bool = False) -> Engine:
    """Add ``engine`` under ``engine.name``; returns it (usable as a class decorator's
    helper). Raises ``ValueError`` when the name is taken (unless ``replace``) or not a
    non-empty identifier, ``TypeError`` when ``engine`` is not an :class:`Engine`."""
    if not isinstance(engine, Engine):
        raise TypeError(f"engine: must be an attnsignal.engines.Engine; got {type(engine).__name__}")
    name = getattr(engine, "name", None)
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"engine.name: must be a non-empty identifier; got {name!r}")
    if name in _ENGINES and not replace and _ENGINES[name] is not engine:
        raise ValueError(f"engine.name: {name!r} is already registered; pass replace=True")
    _ENGINES[name] = engine
    return engine


def engine_names() -> tuple[str, ...]:
    """The registered engine names, in registration order."""
    return tuple(_ENGINES)


def get_engine(name: str) -> Engine:
    """The engine called ``name``; ``ConfigError`` naming the registered ones otherwise."""
    return _ENGINES[_NAME.check("engine", name)]


def engines_with(**capabilities: object) -> tuple[str, ...]:
    """Names of the engines whose :class:`~.base.Capabilities` have the given values, e.g.
    ``engines_with(has_query=True)``."""
    return tuple(n for n, e in _ENGINES.items()
                 if all(getattr(e.capabilities, k) == v for k, v in capabilities.items()))


def fastest_engine(model: Any, run: Any) -> str:
    """The engine a run uses when none is named: among the registered engines that are exact
    in law, not opt-in, and accept ``model`` and ``run`` (:meth:`~.base.Engine.check`: the
    variants they support, their sizes), the one of least declared cost per update
    (:meth:`~.base.Capabilities.cost_of` at the run's ``B``, ``L``, ``d``); the first
    registered among equals. The ``engine`` field of ``run`` is ignored. Raises the first
    candidate's ConfigError when none accepts the configuration."""
    from dataclasses import replace

    from ..config import ConfigError

    best: tuple[float, str] | None = None
    first_error: ConfigError | None = None
    for name, engine in _ENGINES.items():
        caps = engine.capabilities
        if caps.opt_in or not caps.exact_in_law:
            continue
        try:
            engine.check(model, replace(run, engine=name))
        except ConfigError as exc:
            first_error = first_error or exc
            continue
        cost = caps.cost_of(run.batch, model.n_informative + model.n_nuisance, model.d)
        if best is None or cost < best[0]:
            best = (cost, name)
    if best is None:
        if first_error is not None:
            raise first_error
        raise ConfigError("engine", "must name a registered engine (none is registered)", None)
    return best[1]
