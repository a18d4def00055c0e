"""attnsignal — softmax attention discovering a hidden signal.

Model, exact simulation engines, theory and reproduction of "Asymptotic Signal Subspace
Recovery in Softmax Attention Models" (arXiv 2606.22406). ``import attnsignal as asg``.

The configs, ``simulate`` and ``Result`` load with the package; the theory, the sweeps, the
reproduction and the baselines (scipy, dask, ...) on first use of one of their names
(:data:`_LAZY`). Every name is in ``__all__`` and ``dir(attnsignal)``, and visible to type
checkers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._version import __version__
from .config import (
    ConfigError,
    ModelConfig,
    NotRobbinsMonroWarning,
    RunConfig,
    StepSize,
)
from .results import Result
from .simulate import DivergenceWarning, simulate

if TYPE_CHECKING:
    from .baselines import baseline, baseline_theory, efficiency
    from .claims import ClaimResult
    from .measure import SampleMeasurement, measure_samples
    from .reproduce import Plan, check_claims
    from .sweep import SweepSpec, load_sweep, run_sweep, sweep_status
    from .theory import (
        Advice,
        EffectiveDynamics,
        FixedPoint,
        Landscape,
        OdeSolution,
        ScalingLaw,
        Tracking,
        advise_schedule,
        constant_step_plateau,
        corrected_drift,
        drift_mc,
        effective_dynamics,
        fixed_points,
        flow,
        gradient_variance,
        landscape,
        landscape_verdict,
        sa_diagnostics,
        samples_to_reach,
        scaling_law,
        solve_ode,
        tracking,
        vector_field,
    )

#: The names loaded on first use, and the subpackage or module of each.
_LAZY: dict[str, str] = {
    **dict.fromkeys(
        ("landscape", "Landscape", "vector_field", "drift_mc", "fixed_points", "FixedPoint",
         "solve_ode", "OdeSolution", "gradient_variance", "corrected_drift",
         "constant_step_plateau", "samples_to_reach", "tracking", "Tracking", "sa_diagnostics",
         "effective_dynamics", "EffectiveDynamics", "advise_schedule", "Advice",
         "landscape_verdict", "flow", "scaling_law", "ScalingLaw"), "theory"),
    **dict.fromkeys(("measure_samples", "SampleMeasurement"), "measure"),
    **dict.fromkeys(("load_sweep", "run_sweep", "SweepSpec", "sweep_status"), "sweep"),
    **dict.fromkeys(("Plan", "check_claims"), "reproduce"),
    "ClaimResult": "claims",
    **dict.fromkeys(("baseline", "baseline_theory", "efficiency"), "baselines"),
}

__all__ = [
    "__version__",
    "ConfigError",
    "DivergenceWarning",
    "ModelConfig",
    "NotRobbinsMonroWarning",
    "Result",
    "RunConfig",
    "StepSize",
    "simulate",
    *_LAZY,
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value  # later uses are plain lookups
        return value
    raise AttributeError(f"module 'attnsignal' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
