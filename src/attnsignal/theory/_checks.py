"""Input checks shared by the theory layer. Every failure is a one-line
:class:`~attnsignal.config.ConfigError` (a ``ValueError``): ``field: allowed; got value``."""

from __future__ import annotations

import numbers
from typing import Any, Sequence

import numpy as np

from ..config import ConfigError, ModelConfig, StepSize

__all__ = [
    "check_model",
    "check_step",
    "check_rho",
    "check_choice",
    "check_int",
    "check_real",
]


def check_model(model: Any) -> ModelConfig:
    """``model`` must be a :class:`ModelConfig`."""
    if not isinstance(model, ModelConfig):
        raise ConfigError("model", "must be a ModelConfig", type(model).__name__)
    return model


def check_step(step: Any, field: str = "step") -> StepSize:
    """``step`` must be a :class:`StepSize`."""
    if not isinstance(step, StepSize):
        raise ConfigError(field, "must be a StepSize", type(step).__name__)
    return step


def check_rho(rho: Any, field: str = "rho", open_interval: bool = False) -> np.ndarray:
    """``rho`` as a float64 array (a scalar gives a 0-d array); every entry finite and in
    ``[−1, 1]`` (``(−1, 1)`` with ``open_interval``). Raises ``ConfigError`` naming the first
    offending value."""
    try:
        arr = np.asarray(rho, dtype=np.float64)
    except (TypeError, ValueError):
        raise ConfigError(field, "must be a number or an array of numbers in [-1, 1]", rho) from None
    if arr.size == 0:
        raise ConfigError(field, "must contain at least one value", rho)
    if open_interval:
        bad = ~np.isfinite(arr) | (np.abs(arr) >= 1.0)
        allowed = "must be finite numbers in (-1, 1)"
    else:
        bad = ~np.isfinite(arr) | (np.abs(arr) > 1.0)
        allowed = "must be finite numbers in [-1, 1]"
    if bad.any():
        raise ConfigError(field, allowed, float(arr[bad].flat[0]))
    return arr


def check_choice(value: Any, field: str, choices: Sequence[str]) -> str:
    """``value`` must be one of ``choices``."""
    if not isinstance(value, str) or value not in choices:
        raise ConfigError(field, "must be one of " + ", ".join(repr(c) for c in choices), value)
    return value


def check_int(value: Any, field: str, lo: int) -> int:
    """``value`` must be an integer ``>= lo``."""
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < lo:
        raise ConfigError(field, f"must be an integer >= {lo}", value)
    return int(value)


def check_real(value: Any, field: str, lo: float | None = None, hi: float | None = None,
               lo_open: bool = False, hi_open: bool = False) -> float:
    """``value`` must be a finite real in the stated (half-)open or closed range."""
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and np.isfinite(value)
    if ok and lo is not None:
        ok = value > lo if lo_open else value >= lo
    if ok and hi is not None:
        ok = value < hi if hi_open else value <= hi
    if not ok:
        parts = []
        if lo is not None:
            parts.append(("> " if lo_open else ">= ") + f"{lo:g}")
        if hi is not None:
            parts.append(("< " if hi_open else "<= ") + f"{hi:g}")
        rng = " and ".join(parts)
        raise ConfigError(field, "must be a finite number" + (f" {rng}" if rng else ""), value)
    return float(value)
