"""The documentation site builds strictly, with every tutorial executed and its output shown,
and renders offline.

``mkdocs build --strict`` fails on a broken link (the tutorials' too: ``mkdocs_hooks.py``
resolves and checks them), a missing page in the nav, an object the API reference cannot find,
or a tutorial cell that raises (mkdocs-jupyter executes every notebook at build time). The
tests then read the built pages, so an empty page passes nothing: every page's math is in the
markup the bundled KaTeX typesets (no raw ``\\(`` or ``\\rho`` left in the text), no page loads a
script or a stylesheet from the network, and every link inside the site resolves to a file
and, where it names one, an anchor.
"""

from __future__ import annotations

import html as htmllib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytest.importorskip("mkdocs", reason="the docs toolchain is in the test extra")
pytest.importorskip("mkdocs_jupyter", reason="the docs toolchain is in the test extra")
pytest.importorskip("mkdocstrings_handlers.python", reason="the docs toolchain is in the test extra")

pytestmark = [pytest.mark.timeout(600), pytest.mark.slow]  # one build, ~30 s of CPU


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    # nbconvert's templates live under the interpreter's share/jupyter, which a virtual
    # environment built on it (--system-site-packages) does not search by itself
    jupyter_path = [os.environ.get("JUPYTER_PATH", ""),
                    *(str(Path(p) / "share" / "jupyter") for p in (sys.prefix, sys.base_prefix))]
    env = dict(os.environ, MPLBACKEND="Agg", NO_MKDOCS_2_WARNING="1",
               JUPYTER_PATH=os.pathsep.join(p for p in jupyter_path if p),
               PYTHONPATH=os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]))
    p = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                        str(out)], cwd=ROOT, env=env, capture_output=True, text=True,
                       timeout=590)
    assert p.returncode == 0, f"mkdocs build --strict failed:\n{p.stderr[-4000:]}"
    return out


def _text(site: Path, page: str) -> str:
    return (site / page / "index.html").read_text(encoding="utf-8")


def test_site_builds_strictly_with_every_page(site):
    for page in ("getting-started", "model", "engines", "theory", "sweeps", "reproduction",
                 "changelog", "development"):
        assert (site / page / "index.html").exists(), page
    assert (site / "index.html").exists()


def test_api_reference_is_generated_from_the_docstrings(site):
    config = _text(site, "reference/config")
    # ModelConfig's own docstring and a validated field, not just its name
    assert 'id="attnsignal.config.ModelConfig"' in config
    assert "ConfigError" in config
    sweeps = _text(site, "reference/sweeps")
    for name in ("attnsignal.sweep.runner.run_sweep", "attnsignal.sweep.slurm.SlurmOptions"):
        assert f'id="{name}"' in sweeps, name
    theory = _text(site, "reference/theory")
    for name in ("solve_ode", "landscape.landscape", "fixed_points.fixed_points"):
        assert f'id="attnsignal.theory.{name}"' in theory, name


def _figures(html: str) -> int:
    """Figures the notebook's cells drew (inline PNG images, not the theme's icons)."""
    return len(re.findall(r'<img[^>]+src="data:image/png;base64,', html))


def _outputs(html: str) -> str:
    return re.sub(r"<[^>]+>", " ", html)


def test_tutorials_appear_with_their_outputs(site):
    first = _text(site, "tutorials/01-first-simulation")
    assert _figures(first) == 2, "the landscape and the runs against the ODE are drawn"
    text = _outputs(first)
    assert "mean_abs_alignment" in text and "largest gap between the simulated mean" in text
    second_html = _text(site, "tutorials/02-landscape-two-signs")
    assert _figures(second_html) == 2
    second = _outputs(second_html)
    m = re.search(r"below ρ\*: start \S+, final ρ: mean ([+-][\d.]+), (\d+)% of the runs", second)
    n = re.search(r"above ρ\*: start \S+, final ρ: mean ([+-][\d.]+), (\d+)% of the runs", second)
    assert m and n, "the runs' outcome is printed"
    # the ODE basins predict the sign: below ρ* → −ξ, above → +ξ (16 runs each)
    assert float(m.group(1)) < -0.5 and int(m.group(2)) <= 10
    assert float(n.group(1)) > 0.5 and int(n.group(2)) >= 90
    third_html = _text(site, "tutorials/03-sweep-pandas")
    assert _figures(third_html) == 1
    third = _outputs(third_html)
    assert "24 computed, 0 already done" in third and "0 computed, 24 already done" in third
    assert "mean_abs_rho" in third
    fourth_html = _text(site, "tutorials/04-effective-dynamics-advisor")
    assert _figures(fourth_html) == 2, "the three descriptions of the runs; the advice checked"
    fourth = _outputs(fourth_html)
    gaps = dict(re.findall(r"(limiting ODE|effective dynamics): largest gap to the simulated "
                           r"mean \|ρ\| = ([\d.]+)", fourth))
    assert float(gaps["effective dynamics"]) < float(gaps["limiting ODE"])
    m = re.search(r"reaches 0\.9 at \S+ samples = ([\d.]+) × the prediction", fourth)
    assert m, "the advice is checked by simulation"
    assert 0.85 <= float(m.group(1)) <= 1.1  # issue 12's window for the advisor


def test_readme_keeps_the_two_commands():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "pip install -e . && attnsignal reproduce --quick" in readme
    assert "pip install -e '.[test]' && python -m pytest" in readme
    for page in ("getting-started", "model", "engines", "theory", "sweeps", "reproduction"):
        assert f"(docs/{page}.md)" in readme, page


def test_scaling_page_and_tutorial_appear(site):
    page = _outputs(_text(site, "scaling"))
    assert "What is exact in" in page and "The escape law" in page
    fifth_html = _text(site, "tutorials/05-samples-at-my-d")
    assert _figures(fifth_html) == 2, "the escape law against the chain; samples against c"
    fifth = _outputs(fifth_html)
    rows = re.findall(r"d = +([\d,]+): law ([\d,]+), chain ([\d,]+) \[([\d,]+), ([\d,]+)\]", fifth)
    assert len(rows) == 2, "the law is checked against the chain at two dimensions"
    for _, law, chain, lo, hi in rows:
        law, lo, hi = (float(x.replace(",", "")) for x in (law, lo, hi))
        assert 0.85 * lo <= law <= 1.15 * hi  # 32 runs: the law within the interval, widened


def _pages(site: Path) -> list[Path]:
    return sorted(p for p in site.rglob("*.html") if p.name != "404.html")


_MATH_OR_CODE = re.compile(
    r"<(script|style|pre|code)\b.*?</\1>|<(span|div) class=\"arithmatex\">.*?</\2>", re.S | re.I)
_RAW_TEX = re.compile(r"\\[()\[\]]|\\[A-Za-z]{2,}|\$[^$\s<][^$<]*\$")


def test_math_is_in_the_typeset_markup_on_every_page(site):
    """Outside code, no TeX is left for the reader: each ``$…$`` (Markdown or notebook) became
    an ``.arithmatex`` element that ``vendor/math.js`` typesets with the bundled KaTeX."""
    raw = {}
    for page in _pages(site):
        text = htmllib.unescape(re.sub(r"<[^>]+>", " ", _MATH_OR_CODE.sub(" ", page.read_text(
            encoding="utf-8"))))
        found = _RAW_TEX.findall(text)
        if found:
            raw[str(page.relative_to(site))] = found[:5]
    assert not raw, f"raw TeX in the rendered text: {raw}"
    # the pages that carry math do carry it in that markup, and load the renderer
    for page in ("model", "effective-dynamics", "baselines", "tutorials/01-first-simulation",
                 "tutorials/04-effective-dynamics-advisor"):
        h = _text(site, page)
        assert h.count('class="arithmatex"') >= 5, page
        assert "vendor/katex/katex.min.js" in h and "vendor/math.js" in h, page
    for asset in ("katex/katex.min.js", "katex/katex.min.css", "math.js",
                  "katex/fonts/KaTeX_Main-Regular.woff2"):
        assert (site / "vendor" / asset).is_file(), asset


_REMOTE = re.compile(r"<script[^>]*\bsrc=\"(?:https?:)?//|<link[^>]*\bhref=\"(?:https?:)?//"
                     r"|import\(\s*[\"'](?:https?:)?//", re.I)


def test_no_page_loads_anything_from_the_network(site):
    remote = {str(p.relative_to(site)): _REMOTE.findall(p.read_text(encoding="utf-8"))
              for p in _pages(site)}
    assert not {k: v for k, v in remote.items() if v}


def test_every_link_inside_the_site_resolves(site):
    """Every relative ``href``/``src`` of every page names a file of the site, and an anchor
    it names is an ``id`` there (pages and tutorials alike)."""
    ids: dict[Path, set[str]] = {}

    def anchors(path: Path) -> set[str]:
        if path not in ids:
            ids[path] = set(re.findall(r'\bid="([^"]+)"', path.read_text(encoding="utf-8")))
        return ids[path]

    dead = []
    for page in _pages(site):
        for url in re.findall(r'\b(?:href|src)="([^"]*)"', page.read_text(encoding="utf-8")):
            url = htmllib.unescape(url)
            if re.match(r"^[a-z][a-z0-9+.-]*:|^//", url, re.I):
                continue  # absolute URLs (the repository, a citation) and data: URIs
            path, _, anchor = url.partition("#")
            target = (page.parent / path).resolve() if path else page
            if target.is_dir():
                target = target / "index.html"
            if not target.is_file():
                dead.append(f"{page.relative_to(site)}: {url}")
            elif anchor and target.suffix == ".html" and anchor not in anchors(target):
                dead.append(f"{page.relative_to(site)}: {url} (no such anchor)")
    assert not dead, "\n".join(dead[:40])
