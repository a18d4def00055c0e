"""The docs' list of the reproduction's experiments names what the registry holds: a
registered experiment that the index or the reproduction page does not mention fails here (no
site build needed)."""

from __future__ import annotations

import re
from pathlib import Path

from attnsignal.reproduce import EXPERIMENTS

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _line_with(page: str, start: str) -> str:
    """The list item of ``page`` that starts with ``start`` (its continuation lines joined)."""
    text = (DOCS / page).read_text(encoding="utf-8")
    m = re.search(rf"^- {re.escape(start)}.*?(?=^- |^\s*$)", text, flags=re.M | re.S)
    assert m, f"{page}: no list item starting with {start!r}"
    return " ".join(m.group(0).split())


def test_the_index_and_the_reproduction_page_name_every_experiment():
    item = _line_with("index.md", "[The reproduction](reproduction.md)")
    reproduction = (DOCS / "reproduction.md").read_text(encoding="utf-8")
    for exp in EXPERIMENTS:
        assert re.search(rf"\b{exp.name}\b", item), (exp.name, item)
        assert f"- **{exp.name}**" in reproduction, exp.name
