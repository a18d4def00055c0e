"""Theory layer: the population landscape ``Φ(ρ)``, the limiting ODE, fixed points, the
finite-step correction and simulation-vs-ODE tracking (derived in docs/model.md and
docs/theory.md).

Modules (one concept each):

``landscape``      ``Φ(ρ)``, ``Φ'(ρ)`` by three methods (dispatching to ``exact``, ``landscape_mc``,
                   ``asymptotic``), with the ``σ`` and random-sign reductions
``field``          the vector field ``(1 − ρ²)Φ'(ρ)`` and fast ``Φ'``, ``Φ`` interpolants
``ode``            :func:`solve_ode` (in ``z = artanh ρ``) with hitting times; :func:`flow`
``fixed_points``   fixed points, stability, basins, verdict
``reduced``        a vectorised reduced-coordinate gradient sampler (docs/engines.md)
``finite_step``    Monte-Carlo drift and variance, the ``O(η²)`` correction, constant-step
                   plateau, samples needed to reach a target alignment
``effective``      the law of ``ρ_k`` at finite step and dimension (:func:`effective_dynamics`)
``advisor``        step sizes that reach a target fastest (:func:`advise_schedule`)
``tracking``       simulation vs ODE, stochastic-approximation diagnostics
``plots``          figures (PNG + PDF)
"""

from .advisor import Advice, advise_schedule
from .effective import EffectiveDynamics, effective_dynamics, one_step_moments
from .field import dphi_interpolant, phi_interpolant, vector_field
from .finite_step import (
    MonteCarloEstimate,
    SamplesToReach,
    constant_step_plateau,
    corrected_drift,
    drift_mc,
    drift_variance,
    gradient_variance,
    samples_to_reach,
    second_order_coefficient,
)
from .fixed_points import (
    Basin,
    Basins,
    FixedPoint,
    LandscapeVerdict,
    fixed_points,
    landscape_verdict,
)
from .landscape import METHODS, Landscape, landscape
from .ode import OdeSolution, flow, solve_ode
from .plots import plot_landscape, plot_ode, plot_sa_diagnostics
from .tracking import SADiagnostics, Tracking, sa_diagnostics, tracking

__all__ = [
    "METHODS",
    "Landscape",
    "landscape",
    "vector_field",
    "dphi_interpolant",
    "phi_interpolant",
    "drift_mc",
    "drift_variance",
    "MonteCarloEstimate",
    "FixedPoint",
    "fixed_points",
    "Basin",
    "Basins",
    "LandscapeVerdict",
    "landscape_verdict",
    "OdeSolution",
    "solve_ode",
    "flow",
    "gradient_variance",
    "second_order_coefficient",
    "corrected_drift",
    "constant_step_plateau",
    "SamplesToReach",
    "samples_to_reach",
    "Tracking",
    "EffectiveDynamics",
    "Advice",
    "advise_schedule",
    "effective_dynamics",
    "one_step_moments",
    "tracking",
    "SADiagnostics",
    "sa_diagnostics",
    "plot_landscape",
    "plot_ode",
    "plot_sa_diagnostics",
]
