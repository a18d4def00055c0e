"""Simulation engines. Each is a module with ``init`` and ``advance`` (see :mod:`.base`).

- ``literal``: materialised tokens, ``O(B L d)`` per update — the reference.
- ``projected``: the full query vector at ``O(B (L + d))`` per update, exactly the law of the
  literal algorithm (DESIGN §2.2).
- ``chain``: the alignment Markov chain, ``O(B L)`` per update, ``d`` only a degree of freedom
  (DESIGN §2.1). It has no query vector.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from ..config import ENGINES, ConfigError

__all__ = ["get_engine", "ENGINES"]


def get_engine(name: str) -> ModuleType:
    """The engine module called ``name`` (one of ``ENGINES``)."""
    if name not in ENGINES:
        raise ConfigError("engine", "must be one of " + ", ".join(map(repr, ENGINES)), name)
    return importlib.import_module(f"{__name__}.{name}")
