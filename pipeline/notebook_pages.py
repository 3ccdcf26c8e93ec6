"""Notebook pages after rendering: what nbconvert and mkdocs-jupyter add that the site does not want.

* nbconvert's template loads mermaid from cdnjs and adds a MathJax 2 tag with an empty ``src``
  (and require.js from a CDN when asked): removed, the site loads nothing from another host.
  Its MathJax 2 configuration goes too: the site runs MathJax 3 with its own, and Material's
  instant navigation would run that ``text/x-mathjax-config`` script (``MathJax.Hub`` is
  undefined: an error on every notebook page reached by a link).
* nbconvert's alt text for every output image is "No description has been provided for this
  image": replaced by the alt text the snippet gave each figure, in the order they were saved.
* mkdocs-jupyter inlines the same ~575 kB of CSS (JupyterLab's theme and pygments) as ``<style>``
  blocks into every notebook page: moved into one shared file, ``assets/notebook.HASH.css``,
  that every notebook page links, so a browser downloads it once and caches it. The hash in
  the name changes whenever the CSS does, so a cached copy is never stale.
* A notebook code cell that is wider than the page scrolls sideways: it gets ``tabindex="0"``
  so that a keyboard can scroll it too (as Material does for its own code blocks).
"""

import hashlib
import re
from html import escape
from pathlib import Path

CDN_TAGS = re.compile(
    r"<script[^>]*\bsrc=\"(?:https?:)?//[^\"]*\"[^>]*>\s*</script>"  # require.js and friends
    r"|<script[^>]*\bsrc=\"\"[^>]*>\s*</script>"  # MathJax 2 tag with an empty src
    r"|<script type=\"text/x-mathjax-config\">.*?</script>",  # and its configuration
    re.S,
)
# Inline module scripts; the mermaid loader contains "<" (XML strings), so match up to </script>.
MODULE_SCRIPTS = re.compile(r"<script type=\"module\">.*?</script>", re.S)
CODE_CELL = '<div class="highlight-ipynb'
DEFAULT_ALT = 'alt="No description has been provided for this image"'
ARTICLE = re.compile(r"<article\b.*?</article>", re.S)
STYLE = re.compile(r"<style[^>]*>(.*?)</style>\s*", re.S)
STYLESHEET_FOLDER = "assets"

#: ``{site-relative path: CSS}`` of the shared notebook stylesheets of the current build.
STYLESHEETS: dict[str, str] = {}


REMOTE_IMPORT = re.compile(r"import\(\s*[\"'`](?:https?:)?//")


def _module_script(match: re.Match) -> str:
    """Drop an inline module script that imports from another host (nbconvert's mermaid)."""
    return "" if REMOTE_IMPORT.search(match.group(0)) else match.group(0)


# JupyterLab's stylesheet styles a whole application; a static notebook page uses none of its
# widget toolkits (Blueprint, Lumino) or editor and file-browser chrome: two thirds of its bytes.
UNUSED_CLASS_PREFIXES = (
    "bp3-", "lm-", "p-", "CodeMirror", "cm-", "jp-Dialog", "jp-DirListing", "jp-FileBrowser",
    "jp-Toolbar", "jp-Statusbar", "jp-switch", "jp-JSONEditor", "jp-MainAreaWidget", "jp-dragImage",
)  # fmt: skip
CLASS = re.compile(r"\.(-?[_a-zA-Z][\w-]*)")


def drop_unused_rules(css: str) -> str:
    """The stylesheet without selectors that name a class of UNUSED_CLASS_PREFIXES; a rule
    whose selectors all go is dropped, @media and @supports blocks are filtered inside."""
    out, i = [], 0
    while (brace := css.find("{", i)) != -1:
        prelude = css[i:brace]
        if prelude.strip().startswith("@"):
            depth, end = 0, brace
            for end in range(brace, len(css)):
                depth += {"{": 1, "}": -1}.get(css[end], 0)
                if depth == 0:
                    break
            body = css[brace + 1 : end]
            if prelude.strip().startswith(("@media", "@supports")):
                body = drop_unused_rules(body)
                if body.strip():
                    out.append(f"{prelude}{{{body}}}")
            else:
                out.append(css[i : end + 1])
            i = end + 1
            continue
        end = css.find("}", brace)
        end = len(css) - 1 if end == -1 else end
        selectors = [
            selector
            for selector in prelude.split(",")
            if not any(name.startswith(UNUSED_CLASS_PREFIXES) for name in CLASS.findall(selector))
        ]
        if selectors:
            out.append(",".join(selectors) + css[brace : end + 1])
        i = end + 1
    out.append(css[i:])
    return "".join(out)


def shared_stylesheet(html: str, root: str) -> str:
    """Move the page content's ``<style>`` blocks into one shared stylesheet and link it.

    ``root`` is the relative URL from the page to the site root (``"../.."``). The CSS is kept
    in :data:`STYLESHEETS` until :func:`write_stylesheets` writes it. mkdocs-jupyter also writes
    the repr of a Python list of its pygments CSS inside a ``<style>`` (``['pre {...}\\n...']``):
    its selectors are all invalid or escaped, so it styles nothing, and it is dropped.
    """
    article = ARTICLE.search(html)
    if article is None:
        return html
    blocks = [block for block in STYLE.findall(article.group(0)) if not block.lstrip().startswith("['")]
    if not blocks:
        return html
    css = drop_unused_rules("\n".join(block.strip() for block in blocks)) + "\n"
    path = f"{STYLESHEET_FOLDER}/notebook.{hashlib.sha256(css.encode()).hexdigest()[:8]}.css"
    STYLESHEETS[path] = css
    link = f'<link rel="stylesheet" href="{root.rstrip("/")}/{path}">\n'
    content = article.group(0)
    first = STYLE.search(content)
    content = content[: first.start()] + link + STYLE.sub("", content[first.start() :])
    return html[: article.start()] + content + html[article.end() :]


def write_stylesheets(site_dir: str | Path) -> list[Path]:
    """Write the shared stylesheets collected during the build; forget them for the next one."""
    written = []
    for path, css in STYLESHEETS.items():
        target = Path(site_dir) / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(css, encoding="utf-8")
        written.append(target)
    STYLESHEETS.clear()
    return written


OUTPUT_PNG = re.compile(
    r'<img alt="No description has been provided for this image"[^>]*?src="data:image/png;[^"]*"[^>]*>'
)


def _figure_images(html: str, snippet: str, figures: dict, root: str) -> str:
    """Each output PNG becomes the snippet's own SVG of that figure, for both palettes: the
    same figure the run saved (in the same order), a fraction of the bytes, cached across pages."""
    keys = iter(figures)

    def replace(match: re.Match) -> str:
        key = next(keys, None)
        if key is None:
            return match.group(0)
        alt = escape(figures[key]["alt"], quote=True)
        stem = f"{root.rstrip('/')}/figures/{snippet}/{key}"
        return (
            f'<img alt="{alt}" loading="lazy" src="{stem}.svg#only-light">'
            f'<img alt="{alt}" loading="lazy" src="{stem}-dark.svg#only-dark">'
        )

    return OUTPUT_PNG.sub(replace, html)


def clean(html: str, figures: dict, root: str | None = None, snippet: str | None = None) -> str:
    """The page without CDN tags and with each figure's own alt text. Given ``root`` (the
    relative URL of the site root) and the ``snippet``'s name, its figures are the snippet's
    SVGs and its inline notebook CSS moves to a shared file. ``figures`` maps figure keys to
    ``{"alt": ...}`` in the order the snippet saved them."""
    html = CDN_TAGS.sub("", html)
    html = MODULE_SCRIPTS.sub(_module_script, html)
    html = html.replace(CODE_CELL, '<div tabindex="0" class="highlight-ipynb')
    if root is not None and snippet is not None:
        html = _figure_images(html, snippet, figures, root)
    for figure in list(figures.values())[: html.count(DEFAULT_ALT)]:
        alt = escape(figure["alt"], quote=True)
        html = html.replace(DEFAULT_ALT, f'alt="{alt}"', 1)
    if root is not None:
        html = shared_stylesheet(html, root)
    return html
