"""The paper's claims, each checked against typed measurements with a stated tolerance.

Each experiment of the reproduction (:mod:`attnsignal.reproduce`) checks its own claims from
its typed measurements and its plan section's tolerances (``Experiment.claims(p, m)``); this
module holds what they share — the row (:class:`ClaimResult`), the verdicts, the table.
:func:`attnsignal.reproduce.check_claims` evaluates the claims of a set of experiments.
Keeping a check a pure function of numbers makes it testable on its own: feed it measurements
that violate a claim and it must say FAIL.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CLAIMS_HEADER", "ClaimResult", "claims_failed", "claims_table_markdown",
           "claims_table_rows", "passed"]


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


