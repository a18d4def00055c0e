"""The one-command reproduction of the paper (``attnsignal reproduce``)."""

from .pipeline import ReproductionResult, reproduce
from .plan import Plan

__all__ = ["reproduce", "ReproductionResult", "Plan"]
