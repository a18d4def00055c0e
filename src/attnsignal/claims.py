"""The paper's claims, each checked against typed measurements with a stated tolerance.

Each experiment of the reproduction (:mod:`attnsignal.reproduce`) checks its own claims from
its typed measurements and its plan section's tolerances (``Experiment.claims(p, m)``); this
module holds what they share — the row (:class:`ClaimResult`), the verdicts, the table — and
:func:`check_claims`, which evaluates every registered experiment's claims. Keeping a check a
pure function of numbers makes it testable on its own: feed it measurements that violate a
claim and it must say FAIL.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Mapping

if TYPE_CHECKING:
    from .reproduce.experiment import Measurements
    from .reproduce.plan import Plan

__all__ = ["CLAIMS_HEADER", "ClaimResult", "check_claims", "claims_failed",
           "claims_table_markdown", "claims_table_rows", "passed"]


@dataclass(frozen=True)
class ClaimResult:
    """One row of the claims table. ``verdict`` is "PASS", "FAIL" or "holds only when …";
    ``must_hold`` claims make the reproduction exit non-zero on FAIL;
    ``implementation_check`` marks a check of this implementation (listed after the paper's
    claims)."""

    claim: str
    measured: str
    tolerance: str
    verdict: str
    must_hold: bool = True
    implementation_check: bool = False

    @property
    def failed(self) -> bool:
        return self.must_hold and self.verdict == "FAIL"


def passed(ok: bool) -> str:
    """``"PASS"`` or ``"FAIL"``."""
    return "PASS" if ok else "FAIL"


def check_claims(plan: "Plan", measurements: Mapping[str, "Measurements"]) -> list[ClaimResult]:
    """Every registered experiment's claims, from its plan section and its typed measurements
    (``measurements[experiment.name]``); the paper's claims first, then the checks of this
    implementation. Raises KeyError when an experiment's measurements are missing."""
    from .reproduce.registry import EXPERIMENTS

    rows: list[ClaimResult] = []
    for exp in EXPERIMENTS:
        rows += exp.claims(plan.section(exp), measurements[exp.name])
    return sorted(rows, key=lambda r: r.implementation_check)  # stable: registry order kept


def claims_failed(rows: list[ClaimResult]) -> list[ClaimResult]:
    """The claims that should hold and do not."""
    return [r for r in rows if r.failed]


#: Columns of the claims table (the report's and :func:`claims_table_markdown`'s).
CLAIMS_HEADER = ("claim", "measured", "tolerance", "verdict")


def claims_table_rows(rows: list[ClaimResult]) -> list[list[str]]:
    """The cells of the claims table, in :data:`CLAIMS_HEADER` order."""
    return [[r.claim, r.measured, r.tolerance, r.verdict] for r in rows]


def claims_table_markdown(rows: list[ClaimResult]) -> str:
    """The claims table in Markdown (``|`` inside a cell escaped)."""
    from .report import markdown_table

    return markdown_table(CLAIMS_HEADER, claims_table_rows(rows))


