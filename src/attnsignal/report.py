"""A small report builder: Markdown and one self-contained HTML page to navigate.

A :class:`Report` is a title and a list of :class:`Section` objects; a section holds blocks in
order — paragraphs, tables (pandas frames or lists of rows) and figures (PNG files; the PDF twin
is linked). Text may carry ``**bold**``, inline ``code``, links ``[text](#anchor)`` and math
``$…$`` (TeX).

The HTML page works offline and alone: a sidebar table of contents (every section, and the
figures and tables under it, each with an anchor), figures embedded as PNG that enlarge on a
click, tables longer than :data:`COLLAPSE_ROWS` rows folded under their caption, and math
typeset by the KaTeX bundled with the package (script, style sheet and fonts inlined: the page
loads nothing from the network). The Markdown twin keeps ``$…$`` (GitHub renders it) and links
the figures on disk. Both files are written atomically.
"""

from __future__ import annotations

import base64
import html
import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Sequence, Union

import pandas as pd

from .results import atomic_write

__all__ = ["COLLAPSE_ROWS", "Report", "Section", "markdown_table", "slug"]

#: tables with more rows than this are folded (``<details>``) in the HTML page
COLLAPSE_ROWS = 12


@dataclass
class _Para:
    text: str


@dataclass
class _Table:
    header: list[str]
    rows: list[list[str]]
    caption: str = ""
    anchor: str = ""
    collapse: bool | None = None   # None: fold when longer than COLLAPSE_ROWS


@dataclass
class _Figure:
    png: Path
    caption: str
    anchor: str = ""


Block = Union[_Para, _Table, _Figure]


def slug(text: str) -> str:
    """An anchor from a title: lower case, runs of anything but letters and digits → ``-``."""
    s = re.sub(r"[^0-9a-z]+", "-", text.lower()).strip("-")
    return s or "section"


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    esc = lambda s: str(s).replace("|", "\\|").replace("\n", " ")  # noqa: E731
    lines = ["| " + " | ".join(esc(h) for h in header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(esc(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


@dataclass
class Section:
    """One section: ``anchor`` is its id in the HTML page (default: :func:`slug` of the
    title); figures and tables get ``<anchor>-fig-<stem>`` and ``<anchor>-table-<n>``."""

    title: str
    blocks: list[Block] = field(default_factory=list)
    anchor: str = ""

    def __post_init__(self) -> None:
        self.anchor = self.anchor or slug(self.title)

    def para(self, text: str) -> "Section":
        self.blocks.append(_Para(text))
        return self

    def table(self, data: pd.DataFrame | Sequence[Sequence[object]], header: Sequence[str] | None = None,
              caption: str = "", float_format: str = "{:.4g}", *,
              collapse: bool | None = None) -> "Section":
        """A table; ``collapse`` folds it in the HTML page (default: when it has more than
        :data:`COLLAPSE_ROWS` rows)."""
        if isinstance(data, pd.DataFrame):
            header = [str(c) for c in data.columns]
            rows = [[_fmt(v, float_format) for v in r] for r in data.itertuples(index=False)]
        else:
            rows = [[_fmt(v, float_format) for v in r] for r in data]
        n = sum(isinstance(b, _Table) for b in self.blocks) + 1
        self.blocks.append(_Table(list(header or []), rows, caption, f"{self.anchor}-table-{n}",
                                  collapse))
        return self

    def figure(self, png: str | Path, caption: str) -> "Section":
        png = Path(png)
        self.blocks.append(_Figure(png, caption, f"{self.anchor}-fig-{slug(png.stem)}"))
        return self

    def set_anchor(self, anchor: str) -> "Section":
        """Give the section the id ``anchor``; its figures' and tables' ids follow."""
        old = self.anchor
        for b in self.blocks:
            if isinstance(b, (_Table, _Figure)) and b.anchor.startswith(old + "-"):
                b.anchor = anchor + b.anchor[len(old):]
        self.anchor = anchor
        return self

    @property
    def figure_anchors(self) -> list[tuple[str, str]]:
        """(anchor, figure file stem) of each figure, in order."""
        return [(b.anchor, b.png.stem) for b in self.blocks if isinstance(b, _Figure)]


def _fmt(v: object, float_format: str) -> str:
    if isinstance(v, float):
        return float_format.format(v)
    return str(v)


_MATH = re.compile(r"(?<![\\\w$])\$(?![\s$])([^$]+?)(?<![\s\\])\$(?![\w$])")


def _inline_html(text: str) -> str:
    """Paragraph or cell text to HTML: math first (kept verbatim for KaTeX), then escaping,
    bold, code and ``[text](#anchor)`` links."""
    out, last = [], 0
    for m in _MATH.finditer(text):
        out.append(_plain_html(text[last:m.start()]))
        out.append(f'<span class="arithmatex">\\({html.escape(m.group(1))}\\)</span>')
        last = m.end()
    out.append(_plain_html(text[last:]))
    return "".join(out)


def _plain_html(text: str) -> str:
    t = html.escape(text, quote=False)
    t = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", t)
    t = re.sub(r"`(.+?)`", r"<code>\1</code>", t)
    t = re.sub(r"\[([^\]]+)\]\((#[\w-]+)\)", r'<a href="\2">\1</a>', t)
    return t


_CSS = """
:root{--nav:15.5em}
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:0;color:#222;
line-height:1.45;font-size:16px}
nav#toc{position:fixed;top:0;left:0;bottom:0;width:var(--nav);overflow-y:auto;padding:1em .8em;
background:#f5f6fa;border-right:1px solid #dde;font-size:.86em;box-sizing:border-box}
nav#toc b{display:block;margin-bottom:.5em}nav#toc ul{list-style:none;padding-left:0;margin:0}
nav#toc ul ul{padding-left:1em;margin:.1em 0 .4em}nav#toc li{margin:.15em 0}
nav#toc a{color:#335;text-decoration:none}nav#toc a:hover{text-decoration:underline}
main{margin-left:var(--nav);padding:1em 2.5em 4em;max-width:1250px}
@media (max-width:900px){nav#toc{position:static;width:auto;border:0}main{margin-left:0}}
h1{border-bottom:2px solid #335;font-size:1.7em}
h2{margin-top:2em;border-bottom:1px solid #ccd}
h2 a.anchor,figure a.anchor{color:#99a;text-decoration:none;font-size:.8em;margin-left:.3em}
table{border-collapse:collapse;margin:.6em 0 1em;font-size:.92em}
th,td{border:1px solid #bbc;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#eef}td.num{text-align:right;font-variant-numeric:tabular-nums}
details{margin:.6em 0 1em}details>summary{cursor:pointer;color:#335}
figure{margin:1.5em 0}figure img{width:100%;border:1px solid #ddd;cursor:zoom-in;background:#fff}
.zoombox{position:fixed;inset:0;z-index:20;background:#fff;display:flex;
align-items:center;justify-content:center;cursor:zoom-out}
.zoombox img{max-width:99vw;max-height:99vh;width:auto;height:auto}
figcaption{font-size:.92em;color:#444}code{background:#f3f3f7;padding:0 3px}
.PASS{color:#070;font-weight:bold}.FAIL{color:#b00;font-weight:bold}
.note{background:#fff7e0;border-left:4px solid #e0a800;padding:.5em 1em}
.katex{font-size:1.05em}
"""

# a click on a figure shows it over the page, as large as the window allows; a click or Esc
# closes it
_ZOOM_JS = ("document.querySelectorAll('figure img').forEach(function(i){i.addEventListener("
            "'click',function(){var o=document.createElement('div');o.className='zoombox';"
            "o.appendChild(i.cloneNode());o.addEventListener('click',function(){o.remove()});"
            "document.body.appendChild(o)})});"
            "document.addEventListener('keydown',function(e){if(e.key==='Escape')"
            "document.querySelectorAll('.zoombox').forEach(function(o){o.remove()})});")


@lru_cache(maxsize=1)
def _katex_inline() -> tuple[str, str]:
    """The bundled KaTeX as (style sheet with its fonts as data URIs, scripts)."""
    root = resources.files("attnsignal") / "assets"
    css = (root / "katex" / "katex.min.css").read_text(encoding="utf-8")

    def font(m: re.Match) -> str:
        data = (root / "katex" / m.group(1)).read_bytes()
        return f"url(data:font/woff2;base64,{base64.b64encode(data).decode('ascii')})"

    css = re.sub(r"url\((fonts/[^)]+\.woff2)\)", font, css)
    js = ((root / "katex" / "katex.min.js").read_text(encoding="utf-8") + "\n"
          + (root / "math.js").read_text(encoding="utf-8"))
    return css, js.replace("</script", "<\\/script")


_NUM = re.compile(r"^[+−-]?[\d.,  ]+(e[+−-]?\d+)?( ?%| s| ×)?$")


@dataclass
class Report:
    title: str
    intro: str = ""
    sections: list[Section] = field(default_factory=list)
    #: a highlighted paragraph under the title (quick mode's warning)
    note: str = ""

    def section(self, title: str, anchor: str = "") -> Section:
        s = Section(title, anchor=anchor)
        self.sections.append(s)
        return s

    def to_markdown(self, base: Path) -> str:
        out = [f"# {self.title}", ""]
        if self.note:
            out += [f"> {self.note}", ""]
        if self.intro:
            out += [self.intro, ""]
        out += ["Contents: " + " · ".join(f"[{s.title}](#{s.anchor})" for s in self.sections), ""]
        for s in self.sections:
            out += [f'<a id="{s.anchor}"></a>', "", f"## {s.title}", ""]
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
                    out += [f'<a id="{b.anchor}"></a>', "", f"![{_alt(b.caption)}]({rel})", "",
                            f"*{b.caption}* ([PDF]({pdf}))", ""]
        return "\n".join(out)

    def to_html(self, base: Path | None = None) -> str:
        """The page; with ``base`` (the folder it is written to) each figure links its PDF."""
        css, js = _katex_inline()
        out = ["<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
               "<meta name='viewport' content='width=device-width,initial-scale=1'>",
               f"<title>{html.escape(self.title)}</title>",
               f"<style>{css}</style><style>{_CSS}</style></head><body>",
               self._toc(), "<main>", f"<h1 id='top'>{_inline_html(self.title)}</h1>"]
        if self.note:
            out.append(f"<p class='note'>{_inline_html(self.note)}</p>")
        if self.intro:
            out.append(f"<p>{_inline_html(self.intro)}</p>")
        for s in self.sections:
            out.append(f"<section id='{s.anchor}'><h2>{_inline_html(s.title)}"
                       f"<a class='anchor' href='#{s.anchor}'>¶</a></h2>")
            for b in s.blocks:
                if isinstance(b, _Para):
                    out.append(f"<p>{_inline_html(b.text)}</p>")
                elif isinstance(b, _Table):
                    out.append(_table_html(b))
                else:
                    data = base64.b64encode(b.png.read_bytes()).decode("ascii")
                    pdf = b.png.with_suffix(".pdf")
                    link = (f" (<a href='{html.escape(_rel(pdf, base))}'>PDF</a>)"
                            if base is not None and pdf.is_file() else "")
                    # shown at most at its drawn size (150 dpi → 100 CSS px per inch)
                    width = int.from_bytes(b.png.read_bytes()[16:20], "big") // 1.5
                    out.append(f"<figure id='{b.anchor}' style='max-width:{width:.0f}px'>"
                               f"<img alt='{html.escape(_alt(b.caption))}' "
                               f"title='click to enlarge (Esc or a click to close)' "
                               f"src='data:image/png;base64,{data}'>"
                               f"<figcaption>{_inline_html(b.caption)}{link} "
                               f"<a class='anchor' href='#{b.anchor}'>¶</a></figcaption></figure>")
            out.append("</section>")
        out.append("</main>")
        out.append(f"<script>{js}</script><script>{_ZOOM_JS}</script></body></html>")
        return "\n".join(out)

    def _toc(self) -> str:
        items = []
        for s in self.sections:
            sub = [f"<li><a href='#{b.anchor}'>{_toc_label(b)}</a></li>" for b in s.blocks
                   if isinstance(b, _Figure)]
            inner = f"<ul>{''.join(sub)}</ul>" if sub else ""
            items.append(f"<li><a href='#{s.anchor}'>{_inline_html(s.title)}</a>{inner}</li>")
        return ("<nav id='toc'><b><a href='#top'>Contents</a></b><ul>" + "".join(items)
                + "</ul></nav>")

    def write(self, out_dir: str | Path, stem: str = "report") -> tuple[Path, Path]:
        out_dir = Path(out_dir)
        md, page = out_dir / f"{stem}.md", out_dir / f"{stem}.html"
        text_md, text_html = self.to_markdown(out_dir), self.to_html(out_dir)
        atomic_write(md, lambda p: Path(p).write_text(text_md, encoding="utf-8"))
        atomic_write(page, lambda p: Path(p).write_text(text_html, encoding="utf-8"))
        return md, page


def _table_html(b: _Table) -> str:
    rows = ["<table id='%s'><tr>" % b.anchor
            + "".join(f"<th>{_inline_html(h)}</th>" for h in b.header) + "</tr>"]
    for r in b.rows:
        cells = []
        for c in r:
            cls = ("PASS" if c.endswith("PASS") else "FAIL" if c.endswith("FAIL")
                   else "num" if _NUM.match(c) else "")
            cells.append(f"<td class='{cls}'>{_inline_html(c)}</td>" if cls
                         else f"<td>{_inline_html(c)}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    table = "\n".join(rows) + "</table>"
    caption = f"<p><em>{_inline_html(b.caption)}</em></p>" if b.caption else ""
    fold = b.collapse if b.collapse is not None else len(b.rows) > COLLAPSE_ROWS
    if fold:
        label = _inline_html(b.caption) if b.caption else "table"
        return (f"<details><summary>{label} — {len(b.rows)} rows (click to show)</summary>"
                f"{table}</details>")
    return caption + table


def _alt(caption: str) -> str:
    """A caption without its math delimiters (image alt text, Markdown alt text)."""
    return caption.replace("$", "")


def _toc_label(b: _Figure) -> str:
    """The caption's first clause, shortened (the file's stem where that would cut math)."""
    first = re.split(r"(?<=[.:;,])\s", b.caption, maxsplit=1)[0].rstrip(".:;,")
    if len(first) > 48:
        first = first[:45].rsplit(" ", 1)[0] + " …"
    if first.count("$") % 2:
        first = b.png.stem.replace("_", " ")
    return _inline_html(first)


def _rel(p: Path, base: Path) -> str:
    try:
        return str(p.resolve().relative_to(base.resolve()))
    except ValueError:
        return str(p)
