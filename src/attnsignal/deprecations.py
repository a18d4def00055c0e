"""The old names that still work, in one table: each warns (:class:`OldNameWarning`, a
``DeprecationWarning``) and says what replaces it.

``TABLE`` maps ``"module:name"`` to the replacement and, for a module-level name, the callable
that implements it on top of the replacement. A module with deprecated names answers them from
its ``__getattr__`` (:func:`module_attribute`), so they are not in its namespace. The warning is
attributed to the code that used the old name, and the test suite turns it into an error when
that code is the package's own (``filterwarnings`` in ``pyproject.toml``): nothing inside calls
an old name. Removing a name is removing its row.
"""

from __future__ import annotations

import warnings
from typing import Any, Callable

__all__ = ["TABLE", "OldNameWarning", "warn", "module_attribute"]


class OldNameWarning(DeprecationWarning):
    """A deprecated name of :data:`TABLE` was used."""


def _step_sizes(step: Any, k: Any) -> Any:
    return step.eta(k)


def _ode_time(step: Any, ks: Any) -> Any:
    return step.ode_time(ks)


def _step_at_time(step: Any, t: Any, k_max: int | None = None) -> Any:
    return step.step_at_time(t) if k_max is None else step.step_at_time(t, k_max)


#: ``"module:name" -> (replacement, implementation or None)``; None for an attribute whose
#: owner implements it (a property) and calls :func:`warn`.
TABLE: dict[str, tuple[str, Callable[..., Any] | None]] = {
    "attnsignal.results:Result.step": ("Result.schedule", None),
    "attnsignal.schedules:step_sizes": ("Schedule.eta(k)", _step_sizes),
    "attnsignal.schedules:ode_time": ("Schedule.ode_time(ks)", _ode_time),
    "attnsignal.schedules:step_at_time": ("Schedule.step_at_time(t)", _step_at_time),
}


def warn(key: str, stacklevel: int = 3) -> None:
    """Warn that ``key`` (a row of :data:`TABLE`) is deprecated, naming its replacement; the
    warning is attributed ``stacklevel`` frames up (3: the caller of the function that warns)."""
    module, _, name = key.partition(":")
    warnings.warn(f"{module}.{name} is deprecated; use {TABLE[key][0]}", OldNameWarning,
                  stacklevel=stacklevel)


def module_attribute(module: str, name: str) -> Any:
    """The deprecated ``module.name`` (warning once per access), for a module's
    ``__getattr__``; ``AttributeError`` for a name that is not in the table."""
    key = f"{module}:{name}"
    entry = TABLE.get(key)
    if entry is None or entry[1] is None:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    warn(key, stacklevel=4)  # the code that wrote ``module.name`` (past ``__getattr__``)
    return entry[1]
