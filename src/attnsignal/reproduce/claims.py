"""The claims of a reproduction: every experiment's claims, checked together.

The row type, the verdicts and the table are :mod:`attnsignal.claims` (the experiments
build their rows with them); this module runs the experiments' own checks over a set of
experiments and orders the rows as the report shows them.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from ..claims import ClaimResult

if TYPE_CHECKING:
    from .experiment import Experiment, Measurements
    from .plan import Plan

__all__ = ["check_claims"]


def check_claims(plan: "Plan", measurements: Mapping[str, "Measurements"],
                 experiments: "Iterable[Experiment[Any, Any]] | None" = None
                 ) -> list[ClaimResult]:
    """The claims of ``experiments`` (default: every registered one), each from its plan
    section and its typed measurements (``measurements[experiment.name]``); the paper's
    claims first, then the checks of this implementation, each group in the experiments'
    order; a row without ``evidence`` links to its experiment's section. Raises KeyError when an experiment's measurements are missing."""
    if experiments is None:
        from .registry import EXPERIMENTS as experiments
    rows: list[ClaimResult] = []
    for exp in experiments:
        rows += [r if r.evidence else replace(r, evidence=exp.name)
                 for r in exp.claims(plan.section(exp), measurements[exp.name])]
    return sorted(rows, key=lambda r: r.implementation_check)  # stable: experiment order kept
