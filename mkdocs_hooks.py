"""MkDocs hooks: the site renders offline and every link is checked, the tutorials' included.

* **Math without a network.** KaTeX is vendored in the package (``src/attnsignal/assets``,
  also used by the reproduction's HTML report); :func:`on_files` serves it with the site under
  ``vendor/``, and ``vendor/math.js`` typesets every ``.arithmatex`` element (the markup
  ``pymdownx.arithmatex`` writes for ``$…$`` and ``$$…$$`` in the Markdown pages).
* **Notebooks.** mkdocs-jupyter converts a tutorial to HTML itself, so MkDocs neither sees its
  math nor validates its links, and its template loads MathJax and Mermaid from a CDN.
  :func:`on_page_content` turns the notebook's ``$…$`` and ``$$…$$`` into the same
  ``.arithmatex`` markup, drops the remote loaders, and resolves each relative link to a ``.md``
  or ``.ipynb`` source as MkDocs does for a Markdown page (``../theory.md#finite-steps`` →
  ``../../theory/#finite-steps``); a link to a missing page is a warning, so
  ``mkdocs build --strict`` fails, and :func:`on_post_build` checks the anchors once every page
  is written.
"""

from __future__ import annotations

import logging
import posixpath
import re
from pathlib import Path
from urllib.parse import urlsplit

from mkdocs.structure.files import File

log = logging.getLogger("mkdocs.hooks.attnsignal")

ASSETS = Path(__file__).resolve().parent / "src" / "attnsignal" / "assets"
VENDOR = "vendor"

# what mkdocs-jupyter's template loads from a CDN (MathJax 2, Mermaid): nothing here uses it
_REMOTE_LOADERS = [
    re.compile(r"<!-- Load mathjax -->.*?<!-- End of mathjax configuration -->", re.S),
    re.compile(r"<script type=\"module\">(?:(?!</script>).)*?https?://(?:(?!</script>).)*</script>",
               re.S),
]
# text between tags, outside code, preformatted output, scripts and styles
_SKIP = re.compile(r"(<(pre|code|script|style)\b.*?</\2>|<[^>]+>)", re.S | re.I)
_DISPLAY = re.compile(r"\$\$(.+?)\$\$", re.S)
_INLINE = re.compile(r"(?<![\\$\w])\$(?![\s$])([^$]+?)(?<![\s\\])\$(?![\w$])")
_HREF = re.compile(r'href="([^"]*)"')

# (page source, target's source, target file in the site, anchor)
_anchors: list[tuple[str, str, str, str]] = []


def on_config(config):
    _anchors.clear()
    return config


def on_files(files, config):
    """Serve the vendored KaTeX and ``math.js`` as ``vendor/…``."""
    for path in sorted(ASSETS.rglob("*")):
        if path.is_file() and path.suffix in {".js", ".css", ".woff2"}:
            uri = f"{VENDOR}/{path.relative_to(ASSETS).as_posix()}"
            files.append(File.generated(config, uri, abs_src_path=str(path)))
    return files


def _math(text: str) -> str:
    text = _DISPLAY.sub(lambda m: f'<div class="arithmatex">\\[{m.group(1)}\\]</div>', text)
    return _INLINE.sub(lambda m: f'<span class="arithmatex">\\({m.group(1)}\\)</span>', text)


def _typeset_markup(html: str) -> str:
    parts = _SKIP.split(html)
    out, i = [], 0
    # re.split with two groups yields: text, whole-match, inner-group, text, ...
    while i < len(parts):
        out.append(_math(parts[i]))
        if i + 1 < len(parts):
            out.append(parts[i + 1])
        i += 3
    return "".join(out)


def _resolve_links(html: str, page, files) -> str:
    src = page.file.src_uri

    def fix(m: re.Match) -> str:
        href = m.group(1)
        parts = urlsplit(href)
        if parts.scheme or parts.netloc or not parts.path:
            return m.group(0)
        if not parts.path.endswith((".md", ".ipynb")):
            return m.group(0)
        target = posixpath.normpath(posixpath.join(posixpath.dirname(src), parts.path))
        f = files.get_file_from_path(target)
        if f is None:
            log.warning("Doc file '%s' contains a link '%s', but the target '%s' is not found "
                        "among documentation files.", src, href, target)
            return m.group(0)
        if parts.fragment:
            _anchors.append((src, f.src_uri, f.abs_dest_path, parts.fragment))
        url = f.url_relative_to(page.file)
        return f'href="{url}{"#" + parts.fragment if parts.fragment else ""}"'

    return _HREF.sub(fix, html)


def on_page_content(html, page, config, files):
    if not page.file.src_uri.endswith(".ipynb"):
        return html
    for pattern in _REMOTE_LOADERS:
        html = pattern.sub("", html)
    html = _typeset_markup(html)
    return _resolve_links(html, page, files)


def on_post_build(config):
    for src, target, dest, anchor in _anchors:
        try:
            text = Path(dest).read_text(encoding="utf-8")
        except OSError:
            continue  # not written: MkDocs reported it
        if f'id="{anchor}"' not in text:
            log.warning("Doc file '%s' contains a link '%s#%s', but there is no such anchor on "
                        "that page.", src, target, anchor)
