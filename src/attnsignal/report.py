"""A small report builder: Markdown and a self-contained HTML page (figures embedded).

A :class:`Report` is a title and a list of :class:`Section` objects; a section holds blocks in
order — paragraphs (plain text, with ``**bold**`` and inline ``code``), tables (pandas frames or
lists of rows) and figures (PNG files; the PDF twin is linked). Both files are written
atomically.
"""

from __future__ import annotations

import base64
import html
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence, Union

import pandas as pd

from .results import atomic_write

__all__ = ["Report", "Section", "markdown_table"]


@dataclass
class _Para:
    text: str


@dataclass
class _Table:
    header: list[str]
    rows: list[list[str]]
    caption: str = ""


@dataclass
class _Figure:
    png: Path
    caption: str


Block = Union[_Para, _Table, _Figure]


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    esc = lambda s: str(s).replace("|", "\\|").replace("\n", " ")  # noqa: E731
    lines = ["| " + " | ".join(esc(h) for h in header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(esc(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


@dataclass
class Section:
    title: str
    blocks: list[Block] = field(default_factory=list)

    def para(self, text: str) -> "Section":
        self.blocks.append(_Para(text))
        return self

    def table(self, data: pd.DataFrame | Sequence[Sequence[object]], header: Sequence[str] | None = None,
              caption: str = "", float_format: str = "{:.4g}") -> "Section":
        if isinstance(data, pd.DataFrame):
            header = [str(c) for c in data.columns]
            rows = [[_fmt(v, float_format) for v in r] for r in data.itertuples(index=False)]
        else:
            rows = [[_fmt(v, float_format) for v in r] for r in data]
        self.blocks.append(_Table(list(header or []), rows, caption))
        return self

    def figure(self, png: str | Path, caption: str) -> "Section":
        self.blocks.append(_Figure(Path(png), caption))
        return self


def _fmt(v: object, float_format: str) -> str:
    if isinstance(v, float):
        return float_format.format(v)
    return str(v)


def _inline_html(text: str) -> str:
    t = html.escape(text)
    t = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", t)
    t = re.sub(r"`(.+?)`", r"<code>\1</code>", t)
    return t


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;max-width:1100px;
margin:2em auto;padding:0 1em;color:#222;line-height:1.45}
h1{border-bottom:2px solid #335}h2{margin-top:2em;border-bottom:1px solid #ccd}
table{border-collapse:collapse;margin:1em 0;font-size:0.92em}
th,td{border:1px solid #bbc;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#eef}figure{margin:1.5em 0}img{max-width:100%;border:1px solid #ddd}
figcaption{font-size:0.9em;color:#444}code{background:#f3f3f7;padding:0 3px}
.PASS{color:#070;font-weight:bold}.FAIL{color:#b00;font-weight:bold}
"""


@dataclass
class Report:
    title: str
    intro: str = ""
    sections: list[Section] = field(default_factory=list)

    def section(self, title: str) -> Section:
        s = Section(title)
        self.sections.append(s)
        return s

    def to_markdown(self, base: Path) -> str:
        out = [f"# {self.title}", ""]
        if self.intro:
            out += [self.intro, ""]
        for s in self.sections:
            out += [f"## {s.title}", ""]
            for b in s.blocks:
                if isinstance(b, _Para):
                    out += [b.text, ""]
                elif isinstance(b, _Table):
                    if b.caption:
                        out += [f"*{b.caption}*", ""]
                    out += [markdown_table(b.header, b.rows), ""]
                else:
                    rel = _rel(b.png, base)
                    pdf = _rel(b.png.with_suffix(".pdf"), base)
                    out += [f"![{b.caption}]({rel})", "", f"*{b.caption}* ([PDF]({pdf}))", ""]
        return "\n".join(out)

    def to_html(self) -> str:
        out = ["<!DOCTYPE html><html><head><meta charset='utf-8'>",
               f"<title>{html.escape(self.title)}</title><style>{_CSS}</style></head><body>",
               f"<h1>{html.escape(self.title)}</h1>"]
        if self.intro:
            out.append(f"<p>{_inline_html(self.intro)}</p>")
        for s in self.sections:
            out.append(f"<h2>{html.escape(s.title)}</h2>")
            for b in s.blocks:
                if isinstance(b, _Para):
                    out.append(f"<p>{_inline_html(b.text)}</p>")
                elif isinstance(b, _Table):
                    if b.caption:
                        out.append(f"<p><em>{_inline_html(b.caption)}</em></p>")
                    out.append("<table><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in b.header) + "</tr>")
                    for r in b.rows:
                        cells = []
                        for c in r:
                            cls = c if c in ("PASS", "FAIL") else ""
                            cells.append(f"<td class='{cls}'>{_inline_html(c)}</td>")
                        out.append("<tr>" + "".join(cells) + "</tr>")
                    out.append("</table>")
                else:
                    data = base64.b64encode(b.png.read_bytes()).decode("ascii")
                    out.append(f"<figure><img alt='{html.escape(b.caption)}' "
                               f"src='data:image/png;base64,{data}'>"
                               f"<figcaption>{_inline_html(b.caption)}</figcaption></figure>")
        out.append("</body></html>")
        return "\n".join(out)

    def write(self, out_dir: str | Path, stem: str = "report") -> tuple[Path, Path]:
        out_dir = Path(out_dir)
        md, page = out_dir / f"{stem}.md", out_dir / f"{stem}.html"
        text_md, text_html = self.to_markdown(out_dir), self.to_html()
        atomic_write(md, lambda p: Path(p).write_text(text_md, encoding="utf-8"))
        atomic_write(page, lambda p: Path(p).write_text(text_html, encoding="utf-8"))
        return md, page


def _rel(p: Path, base: Path) -> str:
    try:
        return str(p.resolve().relative_to(base.resolve()))
    except ValueError:
        return str(p)
