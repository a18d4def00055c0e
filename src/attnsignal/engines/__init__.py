"""Simulation engines, one per module, all behind the :class:`Engine` interface (:mod:`.base`)
and listed in one registry (:mod:`.registry`).

- ``literal``: materialised tokens, ``O(B L d)`` per update — the reference.
- ``projected``: the full query vector at ``O(B (L + d))`` per update, exactly the law of the
  literal algorithm (docs/engines.md#the-projected-engine).
- ``chain``: the alignment Markov chain, ``O(B L)`` per update, ``d`` only a degree of freedom
  (docs/engines.md#the-update-of-rho). It has no query vector (``capabilities.has_query`` is False).
- ``chain32``: the same chain with its per-sample arithmetic in float32 — opt-in, equal in
  law but not bit-identical to ``chain``; 0.9–1.1× its speed since ``chain``'s kernel got
  faster (:mod:`.chain32`).

Importing this package does not import numba: the compiled kernels load on an engine's first
``init``/``advance``.
"""

from __future__ import annotations

from .base import Capabilities, Engine, EngineState, StepStats
from .chain import ChainEngine
from .chain32 import Chain32Engine
from .literal import LiteralEngine
from .projected import ProjectedEngine
from .registry import engine_names, engines_with, get_engine, register

__all__ = [
    "Engine",
    "Capabilities",
    "EngineState",
    "StepStats",
    "get_engine",
    "engine_names",
    "engines_with",
    "register",
]

register(LiteralEngine())
register(ProjectedEngine())
register(ChainEngine())
register(Chain32Engine())
