"""Notebook pages after rendering: what nbconvert and mkdocs-jupyter add that the site does not want.

* nbconvert's template loads mermaid from cdnjs and adds a MathJax 2 tag with an empty ``src``
  (and require.js from a CDN when asked): removed, the site loads nothing from another host.
  Its MathJax 2 configuration goes too: the site ships no TeX engine (pipeline/mathml.py renders
  the math at build time), and Material's instant navigation would run that
  ``text/x-mathjax-config`` script (``MathJax.Hub`` is undefined: an error on every notebook page
  reached by a link).
* nbconvert's alt text for every output image is "No description has been provided for this
  image": replaced by the alt text the snippet gave each figure, in the order they were saved.
* mkdocs-jupyter inlines the same ~575 kB of CSS (JupyterLab's theme and pygments) as ``<style>``
  blocks into every notebook page: moved into one shared file, ``assets/notebook.HASH.css``,
  that every notebook page links, so a browser downloads it once and caches it. It is purged
  to the rules and theme variables the notebook pages can use (197 kB of CSS become a few),
  and the hash in its name changes whenever it does, so a cached copy is never stale.
* A notebook code cell that is wider than the page scrolls sideways: it gets ``tabindex="0"``
  so that a keyboard can scroll it too (as Material does for its own code blocks).
* The cell that imports and parses the arguments (tagged ``setup`` by the runner) is folded
  into a ``<details>`` block, so the page opens with the experiment, not with argparse.
* Pygments wraps every token of the code in a ``<span>``: ~3,200 of a notebook page's ~4,000
  elements. A token whose class no rule of the page's CSS names (``n``, a name, is plain text)
  loses its span, and neighbouring tokens of one class share one: the same text in the same
  colours, with a third fewer elements for a browser (and axe-core) to lay out and check.

Before all that, :func:`prerender` converts each executed notebook to HTML as soon as its run
ends, while the other snippets still run, into mkdocs-jupyter's own cache: converting them one
after another when MkDocs renders the pages took ~7 s of a clean build's single-threaded tail.
"""

import contextlib
import hashlib
import json
import os
import re
from html import escape
from pathlib import Path
from types import SimpleNamespace

import tinycss2

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
SPACE = re.compile(r"\s*")
STYLESHEET_FOLDER = "assets"

#: ``{hash of the CSS: {"css": CSS, "classes": the classes of the pages that use it}}`` of the
#: current build.
STYLESHEETS: dict[str, dict] = {}
ROOT = Path(__file__).resolve().parents[1]
CSS_CACHE = ROOT / ".cache" / "notebook-css"
USED: set[Path] = set()  # the entries of CSS_CACHE this build read or wrote (see evict_unused)
TEMPLATE_CACHE = ROOT / ".cache" / "jinja"  # compiled Jinja templates


REMOTE_IMPORT = re.compile(r"import\(\s*[\"'`](?:https?:)?//")


def _module_script(match: re.Match) -> str:
    """Drop an inline module script that imports from another host (nbconvert's mermaid)."""
    return "" if REMOTE_IMPORT.search(match.group(0)) else match.group(0)


CLASS_ATTRIBUTE = re.compile(r'\bclass="([^"]*)"')
VAR_REFERENCE = re.compile(r"var\(\s*(--[\w-]+)")
PLACEHOLDER = "notebook.@{}@.css"  # the link's name until the stylesheet's final hash is known


def _selectors(prelude: list) -> list[list]:
    """A rule's selector list, split at its top-level commas (commas inside ``:is()`` stay)."""
    selectors = [[]]
    for token in prelude:
        if token.type == "literal" and token.value == ",":
            selectors.append([])
        else:
            selectors[-1].append(token)
    return selectors


def _classes(tokens: list) -> set[str]:
    """The class names a selector requires: ``.name`` anywhere except inside ``:not()``."""
    names, after_dot = set(), False
    for token in tokens:
        if token.type == "ident" and after_dot:
            names.add(token.value)
        elif token.type == "function" and token.lower_name != "not":
            names |= _classes(token.arguments)
        after_dot = token.type == "literal" and token.value == "."
    return names


def _declarations(rule) -> list:
    return [
        node
        for node in tinycss2.parse_blocks_contents(rule.content, skip_comments=True, skip_whitespace=True)
        if node.type == "declaration"
    ]


def _keep(rules: list, used: set[str]) -> list:
    """``(selectors, declarations)`` of the rules a page can match and ``(at-rule, children)``."""
    kept = []
    for rule in rules:
        if rule.type == "qualified-rule":
            selectors = [s for s in _selectors(rule.prelude) if _classes(s) <= used]
            if selectors:
                text = ",".join(tinycss2.serialize(s).strip() for s in selectors)
                kept.append((text, _declarations(rule)))
        elif rule.type == "at-rule" and rule.lower_at_keyword in ("media", "supports") and rule.content:
            children = _keep(tinycss2.parse_rule_list(rule.content, True, True), used)
            if children:
                kept.append((rule, children))
        elif rule.type == "at-rule":
            kept.append((rule, None))
    return kept


def _walk(kept: list):
    for head, body in kept:
        if isinstance(head, str):
            yield head, body
        elif body is not None:
            yield from _walk(body)


def _referenced(kept: list) -> set[str]:
    """The custom properties (``--name``) that a kept rule uses, directly or through another one."""
    definitions: dict[str, list[str]] = {}
    wanted: set[str] = set()
    for head, body in kept:
        if not isinstance(head, str) and body is None:  # @font-face, @keyframes: used as they are
            wanted |= set(VAR_REFERENCE.findall(tinycss2.serialize([head])))
    for _, declarations in _walk(kept):
        for declaration in declarations:
            value = tinycss2.serialize(declaration.value)
            if declaration.name.startswith("--"):
                definitions.setdefault(declaration.name, []).append(value)
            else:
                wanted |= set(VAR_REFERENCE.findall(value))
    todo = list(wanted)
    while todo:
        for value in definitions.get(todo.pop(), []):
            for name in VAR_REFERENCE.findall(value):
                if name not in wanted:
                    wanted.add(name)
                    todo.append(name)
    return wanted


def _serialize(kept: list, wanted: set[str]) -> str:
    out = []
    for head, body in kept:
        if isinstance(head, str):
            declarations = [
                f"{d.name}:{tinycss2.serialize(d.value).strip()}{'!important' if d.important else ''}"
                for d in body
                if not d.name.startswith("--") or d.name in wanted
            ]
            if declarations:
                out.append(f"{head}{{{';'.join(declarations)}}}")
        elif body is None:
            out.append(tinycss2.serialize([head]))
        elif inner := _serialize(body, wanted):
            out.append(f"@{head.at_keyword}{tinycss2.serialize(head.prelude).rstrip()}{{{inner}}}")
    return "\n".join(out)


def purge(css: str, used: set[str]) -> str:
    """The stylesheet as far as pages using only the classes ``used`` can tell.

    JupyterLab's stylesheet styles a whole application: widget toolkits, editors, file browsers
    and some 900 theme variables. A static notebook page uses a few dozen of its classes. Kept:
    selectors whose classes are all in ``used`` (a class under ``:not()`` does not count), the
    ``@media`` and ``@supports`` blocks that still hold a rule, every other at-rule as it is,
    and the custom properties the kept rules use, directly or through one another.
    """
    kept = _keep(tinycss2.parse_stylesheet(css, skip_comments=True, skip_whitespace=True), used)
    return _serialize(kept, _referenced(kept)) + "\n"


def shared_stylesheet(html: str, root: str, sheets: dict | None = None) -> str:
    """Move the page content's ``<style>`` blocks into one shared stylesheet and link it.

    ``root`` is the relative URL from the page to the site root (``"../.."``). The CSS and the
    classes the page uses are kept in :data:`STYLESHEETS` until :func:`write_stylesheets`
    purges the CSS down to what the pages use and writes it; until then the link names a
    placeholder. mkdocs-jupyter also writes the repr of a Python list of its pygments CSS inside
    a ``<style>`` (``['pre {...}\\n...']``): its selectors are all invalid or escaped, so it styles
    nothing, and it is dropped.
    """
    start = html.find("<article")
    end = html.find("</article>", start)
    if start == -1 or end == -1:
        return html
    end += len("</article>")
    content = html[start:end]
    spans = _style_blocks(content)
    blocks = [content[a:b] for _, a, b, _ in spans if not content[a:b].lstrip().startswith("['")]
    if not blocks:
        return html
    css = "\n".join(block.strip() for block in blocks) + "\n"
    key = hashlib.sha256(css.encode()).hexdigest()[:8]
    classes = {name for names in CLASS_ATTRIBUTE.findall(html) for name in names.split()}
    _register(key, css, classes, sheets)
    href = f"{root.rstrip('/')}/{STYLESHEET_FOLDER}/{PLACEHOLDER.format(key)}"
    kept, at = [content[: spans[0][0]], f'<link rel="stylesheet" href="{href}">\n'], spans[0][0]
    for tag_start, _, _, tag_end in spans:  # every <style> block goes, with the space after it
        kept.append(content[at:tag_start])
        at = tag_end
    kept.append(content[at:])
    return html[:start] + "".join(kept) + html[end:]


def _register(key: str, css: str, classes: set[str], sheets: dict | None = None) -> None:
    """Note a page's stylesheet (by the hash of its CSS) and the classes the page uses, in
    ``sheets`` (default: the build's :data:`STYLESHEETS`)."""
    sheets = STYLESHEETS if sheets is None else sheets
    sheets.setdefault(key, {"css": css, "classes": set()})["classes"].update(classes)


def _style_blocks(text: str) -> list[tuple[int, int, int, int]]:
    """``(tag start, CSS start, CSS end, end)`` of each ``<style>`` block in ``text``; the end
    includes the whitespace after ``</style>``. ``str.find``, not a regular expression: every
    notebook page carries ~575 kB of CSS, and a lazy ``.*?`` walks it a character at a time."""
    found, at = [], 0
    while (tag := text.find("<style", at)) != -1:
        css_start = text.find(">", tag) + 1
        css_end = text.find("</style>", css_start)
        if css_start == 0 or css_end == -1:
            break
        end = SPACE.match(text, css_end + len("</style>")).end()
        found.append((tag, css_start, css_end, end))
        at = end
    return found


def _code() -> bytes:
    """What the cached pages and stylesheets also depend on: this module's code, tinycss2's version."""
    return Path(__file__).read_bytes() + tinycss2.__version__.encode()


def _purged(css: str, used: set[str]) -> str:
    """:func:`purge`, cached in ``.cache/notebook-css`` by the CSS, the classes, this module's
    code and tinycss2's version: parsing JupyterLab's stylesheet took 0.65 s of every build,
    a fifth of a build with nothing changed."""
    key = hashlib.sha256(_code() + css.encode() + "\0".join(sorted(used)).encode()).hexdigest()
    cached = CSS_CACHE / f"{key}.css"
    USED.add(cached)
    with contextlib.suppress(OSError):  # absent (or evicted by another build meanwhile): purge
        return cached.read_text(encoding="utf-8")
    purged = purge(css, used)
    write_whole(cached, purged)
    return purged


def write_stylesheets(site_dir: str | Path) -> list[Path]:
    """Write each shared stylesheet collected during the build, purged to the classes its pages
    use and named by the hash of what is written (a cached copy is never stale); point the
    pages' links at it; forget the stylesheets for the next build."""
    site, written, names = Path(site_dir), [], {}
    for key, entry in STYLESHEETS.items():
        css = _purged(entry["css"], entry["classes"])
        target = site / STYLESHEET_FOLDER / f"notebook.{hashlib.sha256(css.encode()).hexdigest()[:8]}.css"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(css, encoding="utf-8")
        written.append(target)
        names[PLACEHOLDER.format(key)] = target.name
    if names:
        for page in site.rglob("*.html"):
            html = page.read_text(encoding="utf-8")
            if "notebook.@" in html:
                for placeholder, name in names.items():
                    html = html.replace(placeholder, name)
                page.write_text(html, encoding="utf-8")
    STYLESHEETS.clear()
    return written


# a figure output: a PNG (with nbconvert's placeholder alt) or the SVG a saved figure is shown as
OUTPUT_IMAGE = re.compile(r'<img (?:alt="[^"]*" )?src="data:image/(?:png|svg\+xml);[^"]*"[^>]*>')


def _figure_images(html: str, snippet: str, figures: dict, root: str) -> str:
    """Each output image becomes the snippet's own SVG files of that figure, for both palettes:
    the same figure the run saved (in the same order), a fraction of the bytes, cached across
    pages."""
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

    return OUTPUT_IMAGE.sub(replace, html)


SETUP_CELL = re.compile(r'<div class="jp-Cell jp-CodeCell[^"]*\bcelltag_setup\b[^"]*">')
DIV_TAG = re.compile(r"<div\b|</div>")
SETUP_SUMMARY = "Imports and command-line arguments"


def fold_setup_cell(html: str) -> str:
    """Wrap the cell tagged ``setup`` (the whole ``<div>``, found by balancing its nested
    divs) in ``<details><summary>…</summary>…</details>``."""
    match = SETUP_CELL.search(html)
    if match is None:
        return html
    depth = 0
    for tag in DIV_TAG.finditer(html, match.start()):
        depth += 1 if tag.group(0) == "<div" else -1
        if depth == 0:
            end = tag.end()
            cell = html[match.start() : end]
            folded = f'<details class="snippet-setup"><summary>{SETUP_SUMMARY}</summary>\n{cell}\n</details>'
            return html[: match.start()] + folded + html[end:]
    return html


TOKEN = re.compile(r'<span class="([a-z0-9]{1,3})">([^<]*)</span>')
NEIGHBOURS = re.compile(r'(<span class="([a-z0-9]{1,3})">[^<]*)</span><span class="\2">')


CSS_CLASS = re.compile(r"\.([a-z0-9]{1,3})(?![\w-])")
_NAMED: dict[str, set[str]] = {}  # hash of a page's CSS -> the short class names it names


def simplify_tokens(html: str, css: str) -> str:
    """Unwrap the pygments token spans whose class ``css`` never names, and join neighbouring
    spans of one class (only inside notebook code cells: pygments' short class names)."""
    key = hashlib.sha256(css.encode()).hexdigest()
    if key not in _NAMED:  # every notebook page has the same ~575 kB of CSS: read it once
        _NAMED[key] = set(CSS_CLASS.findall(css))
    named = _NAMED[key]

    def unwrap(match: re.Match) -> str:
        return match.group(0) if match.group(1) in named else match.group(2)

    parts = re.split(r'(<div tabindex="0" class="highlight-ipynb.*?</pre>)', html, flags=re.S)
    for index in range(1, len(parts), 2):
        code = TOKEN.sub(unwrap, parts[index])
        while True:
            joined = NEIGHBOURS.sub(r"\1", code)
            if joined == code:
                break
            code = joined
        parts[index] = code
    return "".join(parts)


def clean(
    html: str, figures: dict, root: str | None = None, snippet: str | None = None, sheets: dict | None = None
) -> str:
    """The page without CDN tags and with each figure's own alt text. Given ``root`` (the
    relative URL of the site root) and the ``snippet``'s name, its figures are the snippet's
    SVGs and its inline notebook CSS moves to a shared file. ``figures`` maps figure keys to
    ``{"alt": ...}`` in the order the snippet saved them."""
    html = CDN_TAGS.sub("", html)
    html = MODULE_SCRIPTS.sub(_module_script, html)
    html = html.replace(CODE_CELL, '<div tabindex="0" class="highlight-ipynb')
    html = simplify_tokens(html, "\n".join(html[a:b] for _, a, b, _ in _style_blocks(html)))
    html = fold_setup_cell(html)
    if root is not None and snippet is not None:
        html = _figure_images(html, snippet, figures, root)
    for figure in list(figures.values())[: html.count(DEFAULT_ALT)]:
        alt = escape(figure["alt"], quote=True)
        html = html.replace(DEFAULT_ALT, f'alt="{alt}"', 1)
    if root is not None:
        html = shared_stylesheet(html, root, sheets)
    return html


def template_cache():
    """One Jinja bytecode cache for every template environment of the build (Material's and
    nbconvert's). Jinja names an entry by the template's name and a checksum of its source, and
    checks its own and Python's versions when it loads one, so an entry cannot go stale."""
    import jinja2

    TEMPLATE_CACHE.mkdir(parents=True, exist_ok=True)
    return jinja2.FileSystemBytecodeCache(str(TEMPLATE_CACHE))


def share_compiled_templates() -> None:
    """nbconvert makes a new Jinja environment for every notebook (mkdocs-jupyter makes a new
    exporter for each page) and compiled its templates again each time: 42% of a conversion.
    Each such environment gets the shared bytecode cache. nbconvert has no option for it, so
    this wraps its ``TemplateExporter._create_environment`` (the pinned version's; tested)."""
    from nbconvert.exporters.templateexporter import TemplateExporter

    original = TemplateExporter._create_environment
    if getattr(original, "shares_compiled_templates", False):
        return
    cache = template_cache()

    def _create_environment(self):
        environment = original(self)
        environment.bytecode_cache = cache
        return environment

    _create_environment.shares_compiled_templates = True
    _create_environment.original = original
    TemplateExporter._create_environment = _create_environment


def evict_without_racing(config, dirty: bool = False) -> None:
    """mkdocs-jupyter's ``on_post_build`` removes the cached pages its build did not use with
    ``unlink()``: when two builds share ``.cache`` (``make serve`` and ``make check`` after an
    edit, or ``make test`` beside them), both remove the same stale page and the second build
    fails on the file the first removed (FileNotFoundError). Its entry in the build's
    ``post_build`` events is replaced by the same eviction, which lets a file already be gone,
    and which a dirty rebuild skips (it renders only the changed pages, so it would evict every
    other notebook's page, to be converted again by the next whole build)."""
    plugins = getattr(config, "plugins", None)
    plugin = plugins.get("mkdocs-jupyter") if plugins is not None else None
    if plugin is None:
        return
    events = plugins.events["post_build"]
    for index, method in enumerate(events):
        if getattr(method, "__self__", None) is plugin and method.__name__ == "on_post_build":

            def on_post_build(config, plugin=plugin):
                folder = Path(plugin.config["cache_dir"])
                if plugin.config["cache"] and not dirty and folder.is_dir():
                    remove_unused(folder.glob("*.json"), plugin._used_cache_paths)

            events[index] = on_post_build


def prerender(notebook: Path, config) -> bool:
    """Convert an executed notebook as mkdocs-jupyter will, into its cache; True if it converted.

    The conversion is the plugin's own code: its ``on_pre_page`` installs its ``render`` on a
    stand-in page for the notebook, and ``render`` writes the cache entry, keyed by the
    notebook's bytes and the plugin's options (not its path). When MkDocs later renders the
    notebook's page from the identical copy, the plugin finds the entry and converts nothing."""
    from mkdocs_jupyter.plugin import _compute_cache_key, _get_cache_path

    plugin = config.plugins.get("mkdocs-jupyter")
    if plugin is None or not plugin.config["cache"]:
        return False
    key = _compute_cache_key(str(notebook), plugin.config, plugin.config["execute"])
    if _get_cache_path(plugin.config["cache_dir"], key).exists():
        return False
    share_compiled_templates()
    uri = f"notebooks/{Path(notebook).name}"
    page = SimpleNamespace(
        file=SimpleNamespace(abs_src_path=str(notebook), src_path=uri, src_uri=uri),
        abs_url=f"/{uri}",
        title=None,
    )
    if not hasattr(plugin, "_used_cache_paths"):  # set by its on_pre_build, which comes later
        plugin._used_cache_paths = set()
    plugin.on_pre_page(page, config, None)
    page.render(config, None)
    return True


def prerenderer(config):
    """``runner.run_many``'s ``on_result``: each site run's notebook (a run without arguments)
    to HTML as soon as it ends, while the other runs go on (the build and the test suite's site
    runs use it, so the build that follows finds every notebook page converted)."""
    from pipeline import runner

    def prerender_run(run, outcome):
        if not run[1] and isinstance(outcome, runner.Result):
            prerender(outcome.notebook, config)

    return prerender_run


def clean_page(html: str, figures: dict, root: str, snippet: str) -> str:
    """:func:`clean`, cached in ``.cache/notebook-css`` by its arguments and this module's code
    (0.85 s of every build for 46 pages), with what the page adds to the shared stylesheets."""
    arguments = json.dumps([html, figures, root, snippet], sort_keys=True).encode()
    cached = CSS_CACHE / f"page-{hashlib.sha256(_code() + arguments).hexdigest()}.json"
    USED.add(cached)
    with contextlib.suppress(OSError):  # absent (or evicted by another build meanwhile): clean
        page = json.loads(cached.read_text(encoding="utf-8"))
        sources = {key: CSS_CACHE / f"source-{key}.css" for key in page["stylesheets"]}
        USED.update(sources.values())
        css = {key: source.read_text(encoding="utf-8") for key, source in sources.items()}
        for key, classes in page["stylesheets"].items():
            _register(key, css[key], set(classes))
        return page["html"]
    sheets: dict = {}
    cleaned = clean(html, figures, root, snippet, sheets)
    for key, entry in sheets.items():
        _register(key, entry["css"], entry["classes"])
        write_whole(CSS_CACHE / f"source-{key}.css", entry["css"])
        USED.add(CSS_CACHE / f"source-{key}.css")
    stylesheets = {key: sorted(entry["classes"]) for key, entry in sheets.items()}
    write_whole(cached, json.dumps({"html": cleaned, "stylesheets": stylesheets}))
    return cleaned


def write_whole(path: Path, text: str) -> None:
    """Write a cache file whole or not at all, even with two builds at once."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(f".{os.getpid()}.tmp")
    partial.write_text(text, encoding="utf-8")
    partial.replace(path)


def remove_unused(files, used) -> list[Path]:
    """Remove the cache ``files`` not in ``used``; one another build removed first is no error."""
    removed = [path for path in files if path not in used]
    for path in removed:
        path.unlink(missing_ok=True)
    return removed


def evict_unused() -> list[Path]:
    """After a whole build: remove the entries of ``.cache/notebook-css`` it did not use (a page
    or stylesheet of an earlier version), as mkdocs-jupyter evicts its own; forget the set."""
    removed = remove_unused((path for path in CSS_CACHE.glob("*") if path.is_file()), USED)
    USED.clear()
    return removed
