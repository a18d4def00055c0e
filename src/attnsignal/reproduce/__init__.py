"""The one-command reproduction of the paper (``attnsignal reproduce``).

One experiment per module (:mod:`.e1_headline` … :mod:`.e6_baselines`), each an
:class:`Experiment` with its plan section, typed measurements, figures, report section and
claims; :data:`EXPERIMENTS` lists them; :func:`reproduce` runs them (or a subset, ``only``)
as one task graph and :func:`check_claims` checks their claims.
How to add an experiment: :mod:`attnsignal.reproduce.experiment`.
"""

from .claims import check_claims
from .experiment import Experiment, Measurements, PlanSection
from .pipeline import ExperimentError, ReproductionResult, reproduce
from .plan import Plan
from .registry import EXPERIMENTS, experiment_names, get_experiment, select

__all__ = ["reproduce", "ReproductionResult", "ExperimentError", "Plan", "Experiment", "PlanSection",
           "Measurements", "EXPERIMENTS", "get_experiment", "experiment_names", "select",
           "check_claims"]
