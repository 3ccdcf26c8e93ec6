"""Math rendered at build time: TeX to MathML, so no page ships a TeX engine.

A mkdocs hooks module (mkdocs.yml lists it after pipeline/hooks.py). pymdownx.arithmatex marks
the math of a chapter (``<span class="arithmatex">\\(...\\)</span>``, ``<div class="arithmatex">
\\[...\\]</div>``); notebook pages keep their Markdown cells' ``$...$``. Both become MathML
(latex2mathml), which every current browser lays out and screen readers read natively, in the
text colour of either palette. The browser lays it out with STIX Two Math (SIL Open Font License;
the file ziamath ships), cut at build time to the glyphs the site's math uses and renamed, as the
licence asks of a modified font with a reserved name: one small woff2, fetched only by pages that
show math.

TeX that latex2mathml does not know fails the build, naming the page, the line and the command.
"""

import functools
import hashlib
import html
import json
import re
import shutil
from pathlib import Path

from latex2mathml.converter import convert
from mkdocs.exceptions import PluginError

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / ".cache" / "math"
FONT_URI = "assets/math/math.woff2"  # docs/assets/math.css names it
FONT_FAMILY = "Gradient Pitfalls Math"  # a subset of STIX Two Math, renamed

CHAPTER_MATH = re.compile(
    r'<(?P<tag>span|div) class="arithmatex">(?:\\\((?P<inline>.*?)\\\)|\\\[(?P<display>.*?)\\\])</(?P=tag)>',
    re.S,
)
# $$...$$ or $...$ in the text of a notebook's Markdown cells (nbconvert keeps them verbatim)
NOTEBOOK_MATH = re.compile(r"\$\$(?P<display>.+?)\$\$|(?<![\\$])\$(?P<inline>[^$\n]+?)\$", re.S)
NOTEBOOK_CELL = re.compile(r'(<div class="[^"]*jp-RenderedMarkdown[^"]*"[^>]*>)(.*?)(</div>)', re.S)
TAG = re.compile(r"(<[^>]+>)")
UNKNOWN = re.compile(r">[^<]*?(\\[A-Za-z]+|\\.)[^<]*<")  # TeX left in the output: not understood

# TeX that latex2mathml reads differently: after \big, \Big, ... it knows a delimiter only as a
# character, and \lVert, \rVert only as \|
SIZED = r"(\\(?:big|Big|bigg|Bigg)[lrm]?)\s*"
REWRITES = [
    (re.compile(SIZED + r"(?:\\\||\\[lr]?Vert(?![A-Za-z]))"), "\\1\u2016"),
    (re.compile(SIZED + r"\\[lr]?vert(?![A-Za-z])"), r"\1|"),
    (re.compile(r"\\[lr]Vert(?![A-Za-z])"), r"\\|"),
    (re.compile(r"\\[lr]vert(?![A-Za-z])"), "|"),
]

# a sign right after an operator, a relation, a comma or an opening bracket is unary, as TeX
# reads it: the browser spaces an <mo> by its form, so (-1, 1) would otherwise read "( - 1, 1)"
CLOSING = r"&#x00029;|\)|\]|&#x0005D;|\}|&#x0007D;|\||&#x0007C;|&#x02016;|\u2016|!"
UNARY = re.compile(
    r"(<mo(?: [^>]*)?>(?!(?:" + CLOSING + r")</mo>)[^<]*</mo>)<mo>(?=(?:&#x02212;|&#x0002B;|[-+\u2212])</mo>)"
)

# single letters in <mi> are shown in the font's mathematical italic (MathML's math-auto)
ITALIC = {
    **{chr(c): chr(0x1D434 + c - ord("A")) for c in range(ord("A"), ord("Z") + 1)},
    **{chr(c): chr(0x1D44E + c - ord("a")) for c in range(ord("a"), ord("z") + 1)},
    "h": "\u210e",
    **{chr(c): chr(0x1D6E2 + c - 0x391) for c in range(0x391, 0x3AA)},
    **{chr(c): chr(0x1D6FC + c - 0x3B1) for c in range(0x3B1, 0x3CA)},
}
CODEPOINTS: dict[str, set[int]] = {}  # page -> characters its math shows; the font is cut to their union
PAGES: set[str] = set()  # the pages of the current build


class MathError(ValueError):
    pass


@functools.cache
def to_mathml(tex: str, display: bool) -> str:
    source = html.unescape(tex).strip()
    for pattern, replacement in REWRITES:
        source = pattern.sub(replacement, source)
    source = re.sub(r"\\text\{[^{}]*\}", lambda text: text[0].replace("\\_", "_"), source)
    try:
        mathml = convert(source, display="block" if display else "inline")
    except Exception as error:  # latex2mathml raises its own exceptions for malformed TeX
        raise MathError(f"cannot read ${tex}$: {error}") from None
    unknown = UNKNOWN.search(mathml)
    if unknown:
        raise MathError(f"unknown TeX command {unknown.group(1)} in ${tex}$")
    mathml = UNARY.sub(r'\1<mo form="prefix">', mathml)
    return mathml.replace(' xmlns="http://www.w3.org/1998/Math/MathML"', "", 1)


def characters(mathml: str) -> set[int]:
    found = set()
    for element, text in re.findall(r"<(mi|mo|mn|mtext|ms)[^>]*>([^<]*)<", mathml):
        text = html.unescape(text)
        found.update(map(ord, text))
        if element == "mi" and len(text) == 1 and text in ITALIC:
            found.add(ord(ITALIC[text]))
    return found


def _line_of(page, tex: str) -> int | None:
    """The source line of a formula, for the error message (macros may have changed its text)."""
    if not page.file.abs_src_path or not Path(page.file.abs_src_path).suffix == ".md":
        return None
    lines = Path(page.file.abs_src_path).read_text(encoding="utf-8").splitlines()
    probe = html.unescape(tex).strip().split("{{")[0].strip()[:40]
    return next((number for number, line in enumerate(lines, 1) if probe and probe in line), None)


def _render(page, tex: str, display: bool, used: set[int]) -> str:
    try:
        mathml = to_mathml(tex, display)
    except MathError as error:
        line = _line_of(page, tex)
        raise PluginError(f"docs/{page.file.src_uri}:{line or '?'}: {error}") from None
    used |= characters(mathml)
    return mathml


def on_page_content(html_text, page, config, files):
    used: set[int] = set()

    def chapter(match):
        display = match["display"] is not None
        mathml = _render(page, match["display"] if display else match["inline"], display, used)
        if display:  # wide display math scrolls sideways, and the keyboard can reach it
            return f'<div class="math-display" tabindex="0">{mathml}</div>'
        return mathml

    html_text = CHAPTER_MATH.sub(chapter, html_text)
    CODEPOINTS[page.file.src_uri] = used
    return html_text


def on_post_page(output, page, config):
    if not page.file.src_uri.endswith(".ipynb"):
        return output
    used = CODEPOINTS.setdefault(page.file.src_uri, set())

    def text(segment: str) -> str:
        def one(match):
            display = match["display"] is not None
            mathml = _render(page, match["display"] if display else match["inline"], display, used)
            return f'<div class="math-display" tabindex="0">{mathml}</div>' if display else mathml

        return NOTEBOOK_MATH.sub(one, segment)

    def cell(match):
        parts = TAG.split(match[2])
        inside_code = 0
        for i, part in enumerate(parts):
            if part.startswith("<"):
                name = re.match(r"</?(\w+)", part)
                if name and name[1] in ("code", "pre"):
                    inside_code += -1 if part.startswith("</") else 1
            elif not inside_code and "$" in part:
                parts[i] = text(part)
        return match[1] + "".join(parts) + match[3]

    return NOTEBOOK_CELL.sub(cell, output)


def font_subset(codepoints: set[int]) -> Path:
    """STIX Two Math cut to `codepoints` (with the size variants and parts its MATH table
    needs to stretch them), as woff2; cached by the set of characters and this file's text."""
    recipe = json.dumps(sorted(codepoints)).encode() + Path(__file__).read_bytes()
    key = hashlib.sha256(recipe).hexdigest()[:16]
    target = CACHE / f"math-{key}.woff2"
    if target.exists():
        return target
    from importlib.util import find_spec

    from fontTools import subset, ttLib

    source = Path(find_spec("ziamath").submodule_search_locations[0]) / "fonts" / "STIXTwoMath-Regular.ttf"
    options = subset.Options()
    # no OpenType features (the script-size variants 'ssty' would double the glyphs: scripts are
    # shown scaled instead) and no hinting: 43 kB instead of 150 kB; the MATH table stays, with the
    # size variants and parts that stretch brackets, radicals and big operators
    options.layout_features = []
    options.hinting = False
    options.flavor = "woff2"
    options.name_IDs = ["*"]  # keep the copyright and licence records
    font = ttLib.TTFont(source)
    subsetter = subset.Subsetter(options)
    subsetter.populate(unicodes=sorted(codepoints | {0x20}))
    subsetter.subset(font)
    names = font["name"]
    for record in names.names:
        if record.nameID in (1, 3, 4, 16):
            record.string = FONT_FAMILY
        elif record.nameID == 6:
            record.string = FONT_FAMILY.replace(" ", "")
    CACHE.mkdir(parents=True, exist_ok=True)
    font.save(target)
    return target


def on_files(files, config):
    PAGES.clear()
    PAGES.update(file.src_uri for file in files.documentation_pages())
    return files


def page_codepoints() -> dict[str, set[int]]:
    """This build's pages' characters: the ones rendered now, the others as last rendered (a
    dirty build, `mkdocs serve` or `--dirty`, renders only the edited pages, and the font must
    still carry the characters of the others); kept in CACHE/codepoints.json."""
    shown = CACHE / "codepoints.json"
    try:
        known = {page: set(chars) for page, chars in json.loads(shown.read_text("utf-8")).items()}
    except (OSError, ValueError):
        known = {}
    known.update(CODEPOINTS)
    known = {page: chars for page, chars in known.items() if page in PAGES or page in CODEPOINTS}
    CACHE.mkdir(parents=True, exist_ok=True)
    shown.write_text(json.dumps({page: sorted(chars) for page, chars in sorted(known.items())}), "utf-8")
    return known


def on_post_build(config):
    known = page_codepoints()
    used = set().union(*known.values()) if known else set()
    target = Path(config.site_dir) / FONT_URI
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(font_subset(used), target)
