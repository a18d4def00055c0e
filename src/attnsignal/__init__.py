"""attnsignal — softmax attention discovering a hidden signal.

Model, exact simulation engines, theory and reproduction of "Asymptotic Signal Subspace
Recovery in Softmax Attention Models" (arXiv 2606.22406). ``import attnsignal as asg``.
"""

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
]


def __getattr__(name: str):
    # The theory layer, sweeps and the reproduction import scipy/dask; load them on first use.
    import importlib

    lazy = {
        "landscape": "theory", "Landscape": "theory", "vector_field": "theory",
        "drift_mc": "theory", "fixed_points": "theory", "FixedPoint": "theory",
        "solve_ode": "theory", "OdeSolution": "theory", "gradient_variance": "theory",
        "corrected_drift": "theory", "constant_step_plateau": "theory",
        "samples_to_reach": "theory", "tracking": "theory", "Tracking": "theory",
        "sa_diagnostics": "theory", "effective_dynamics": "theory",
        "EffectiveDynamics": "theory", "advise_schedule": "theory", "Advice": "theory", "landscape_verdict": "theory", "flow": "theory",
        "scaling_law": "theory", "ScalingLaw": "theory",
        "measure_samples": "measure", "SampleMeasurement": "measure",
        "load_sweep": "sweep", "run_sweep": "sweep", "SweepSpec": "sweep",
        "sweep_status": "sweep",
        "Plan": "reproduce",
        "check_claims": "reproduce", "ClaimResult": "claims",
        "baseline": "baselines", "baseline_theory": "baselines", "efficiency": "baselines",
    }
    if name in lazy:
        mod = importlib.import_module(f".{lazy[name]}", __name__)
        return getattr(mod, name)
    raise AttributeError(f"module 'attnsignal' has no attribute {name!r}")
