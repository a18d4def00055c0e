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

__all__ = ["CLAIMS_HEADER", "QUICK_PREFIX", "ClaimResult", "claims_failed",
           "claims_table_markdown", "claims_table_rows", "passed", "plain_math", "verdict_label"]


@dataclass(frozen=True)
class ClaimResult:
    """One row of the claims table. ``verdict`` is "PASS", "FAIL" or "holds only when …";
    ``must_hold`` claims make the reproduction exit non-zero on FAIL;
    ``implementation_check`` marks a check of this implementation (listed after the paper's
    claims); ``evidence`` names the experiment whose section holds the measurement (set by
    :func:`check_claims`)."""

    claim: str
    measured: str
    tolerance: str
    verdict: str
    must_hold: bool = True
    implementation_check: bool = False
    evidence: str = ""

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


#: what quick mode's claim rows say they are: a reduced run checked at its own tolerance
QUICK_PREFIX = "Smoke-test proxy (quick mode, its own tolerance) of: "


def verdict_label(r: ClaimResult, quick: bool = False) -> str:
    """The verdict as shown: in quick mode "proxy PASS" / "proxy FAIL" — a smoke test of the
    code path at reduced size, not the paper's claim reproduced."""
    if quick and r.verdict in ("PASS", "FAIL"):
        return f"proxy {r.verdict}"
    return r.verdict


def claims_table_rows(rows: list[ClaimResult], quick: bool = False,
                      links: bool = False) -> list[list[str]]:
    """The cells of the claims table, in :data:`CLAIMS_HEADER` order. ``quick`` marks every
    row as a smoke-test proxy (:data:`QUICK_PREFIX`, :func:`verdict_label`); ``links`` adds a
    Markdown link to the evidence's section (anchor: the experiment's name in lower case)."""
    out = []
    for r in rows:
        claim = (QUICK_PREFIX + r.claim[0].lower() + r.claim[1:]) if quick else r.claim
        if links and r.evidence:
            claim += f" ([{r.evidence}](#{r.evidence.lower()}))"
        out.append([claim, r.measured, r.tolerance, verdict_label(r, quick)])
    return out


def plain_math(text: str) -> str:
    """Text with its ``$…$`` math delimiters dropped (a terminal shows the TeX source)."""
    return text.replace("$", "")


def claims_table_markdown(rows: list[ClaimResult]) -> str:
    """The claims table in Markdown (``|`` inside a cell escaped)."""
    from .report import markdown_table

    return markdown_table(CLAIMS_HEADER, claims_table_rows(rows))


