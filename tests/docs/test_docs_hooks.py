"""``mkdocs_hooks.py`` on a two-page site (no notebook executed, seconds): a tutorial's links
are resolved like a Markdown page's and a dead one fails the strict build; its ``$…$`` becomes
the markup the bundled KaTeX typesets; the CDN loaders of mkdocs-jupyter's template are gone."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytest.importorskip("mkdocs", reason="the docs toolchain is in the test extra")
nbformat = pytest.importorskip("nbformat", reason="the docs toolchain is in the test extra")
pytest.importorskip("mkdocs_jupyter", reason="the docs toolchain is in the test extra")

pytestmark = pytest.mark.timeout(300)


def _build(tmp_path: Path, cell: str) -> subprocess.CompletedProcess:
    docs = tmp_path / "docs"
    (docs / "tutorials").mkdir(parents=True)
    (docs / "index.md").write_text("# Home\n\n## Real anchor\n\nText.\n", encoding="utf-8")
    nb = nbformat.v4.new_notebook()
    nb.cells.append(nbformat.v4.new_markdown_cell(cell))
    nbformat.write(nb, docs / "tutorials" / "t.ipynb")
    (tmp_path / "mkdocs.yml").write_text(
        "site_name: t\nstrict: true\ntheme: {name: material, font: false}\n"
        "markdown_extensions:\n  - pymdownx.arithmatex: {generic: true}\n"
        f"hooks: [{ROOT / 'mkdocs_hooks.py'}]\n"
        "plugins:\n  - mkdocs-jupyter: {execute: false, include: ['tutorials/*.ipynb'], "
        "cache: false}\n", encoding="utf-8")
    jupyter = [os.environ.get("JUPYTER_PATH", ""),
               *(str(Path(p) / "share" / "jupyter") for p in (sys.prefix, sys.base_prefix))]
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1",
               JUPYTER_PATH=os.pathsep.join(p for p in jupyter if p))
    return subprocess.run([sys.executable, "-m", "mkdocs", "build"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=280)


def test_a_tutorials_links_are_resolved_and_its_math_marked_up(tmp_path):
    p = _build(tmp_path, r"See [home](../index.md#real-anchor); inline $\rho_k$ and "
                         r"$$\frac{d\rho}{dt} = \Phi'(\rho)$$ but not `$x$` in code.")
    assert p.returncode == 0, p.stderr[-3000:]
    html = (tmp_path / "site" / "tutorials" / "t" / "index.html").read_text(encoding="utf-8")
    assert 'href="../../#real-anchor"' in html
    assert '<span class="arithmatex">\\(\\rho_k\\)</span>' in html
    assert '<div class="arithmatex">\\[\\frac{d\\rho}{dt} = \\Phi\'(\\rho)\\]</div>' in html
    assert "<code>$x$</code>" in html
    assert "cdnjs" not in html and "Load mathjax" not in html
    for asset in ("katex/katex.min.js", "katex/katex.min.css", "math.js"):
        assert (tmp_path / "site" / "vendor" / asset).is_file()


def test_a_dead_link_in_a_tutorial_fails_the_strict_build(tmp_path):
    """A missing page and a missing anchor, each named with the tutorial that links it."""
    p = _build(tmp_path, "A [page](../missing.md) and an [anchor](../index.md#nope).")
    assert p.returncode != 0
    assert "'tutorials/t.ipynb' contains a link '../missing.md', but the target 'missing.md' " \
           "is not found" in p.stderr
    assert "'tutorials/t.ipynb' contains a link 'index.md#nope', but there is no such anchor" \
        in p.stderr
