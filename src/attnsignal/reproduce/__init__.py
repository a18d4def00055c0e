"""The one-command reproduction of the paper (``attnsignal reproduce``).

One experiment per module (:mod:`.e1_headline` … :mod:`.e5_tracking`), each an
:class:`Experiment` with its plan section, typed measurements, figures, report section and
claims; :data:`EXPERIMENTS` lists them; :func:`reproduce` runs them as one task graph.
How to add an experiment: :mod:`attnsignal.reproduce.experiment`.
"""

from .experiment import Experiment, Measurements, PlanSection
from .pipeline import ExperimentError, ReproductionResult, reproduce
from .plan import Plan
from .registry import EXPERIMENTS, get_experiment

__all__ = ["reproduce", "ReproductionResult", "ExperimentError", "Plan", "Experiment", "PlanSection",
           "Measurements", "EXPERIMENTS", "get_experiment"]
