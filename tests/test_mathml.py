"""Math rendered at build time (pipeline/mathml.py): every formula of the site converts, unknown
TeX fails with page and line, notebook cells keep their code, and the font subset is a math font."""

import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from mkdocs.exceptions import PluginError

from pipeline import mathml

ROOT = Path(__file__).resolve().parents[1]


def page(src_uri, abs_src_path=None):
    return SimpleNamespace(file=SimpleNamespace(src_uri=src_uri, abs_src_path=abs_src_path))


def formulas(markdown: str) -> list[tuple[str, bool]]:
    text = re.sub(r"```.*?```", " ", markdown, flags=re.S)
    text = re.sub(r"\{\{.*?\}\}", "1.5", text)  # a macro becomes a number
    display = re.findall(r"\$\$(.+?)\$\$", text, flags=re.S)
    text = re.sub(r"\$\$.+?\$\$", " ", text, flags=re.S)
    inline = re.findall(r"(?<![\\$`])\$([^$\n]+?)\$(?!\$)", text)
    return [(tex, True) for tex in display] + [(tex, False) for tex in inline]


@pytest.mark.parametrize("path", sorted((ROOT / "docs").glob("*.md")), ids=lambda path: path.name)
def test_every_formula_of_the_site_converts(path):
    found = formulas(path.read_text(encoding="utf-8"))
    for tex, display in found:
        out = mathml.to_mathml(tex, display)
        assert out.startswith("<math") and "\\" not in re.sub(r"<[^>]+>", "", out), tex


def test_chapter_math_becomes_mathml_and_display_math_scrolls():
    html = (
        '<p>Slope <span class="arithmatex">\\(\\sigma(z) &lt; \\tfrac14\\)</span>.</p>'
        '<div class="arithmatex">\\[\\lVert g \\rVert = \\sqrt{\\textstyle\\sum_i g_i^2}\\]</div>'
    )
    out = mathml.on_page_content(html, page("x.md"), None, None)
    assert "arithmatex" not in out and out.count("<math") == 2
    assert "<mo>&#x0003C;</mo>" in out  # the < stays escaped inside MathML
    assert '<div class="math-display" tabindex="0"><math display="block">' in out
    assert ord("\u2016") in mathml.CODEPOINTS["x.md"]  # the norm bars are in the font subset
    assert 0x1D454 in mathml.CODEPOINTS["x.md"]  # and the italic g that <mi>g</mi> shows


def test_unknown_tex_fails_with_page_and_line(tmp_path):
    source = tmp_path / "broken.md"
    source.write_text("# Title\n\nText $\\frobnicate x$ here.\n", encoding="utf-8")
    html = '<span class="arithmatex">\\(\\frobnicate x\\)</span>'
    with pytest.raises(PluginError, match=r"docs/broken.md:3: unknown TeX command \\frobnicate"):
        mathml.on_page_content(html, page("broken.md", str(source)), None, None)


def test_notebook_cells_convert_math_but_not_code():
    html = (
        '<div class="jp-RenderedMarkdown jp-MarkdownOutput"><p>With $x_1$ and</p>'
        "<pre><code>cost = $5</code></pre><p>$$\\frac{a}{b}$$</p></div>"
        '<div class="jp-OutputArea"><pre>$ not math $</pre></div>'
    )
    out = mathml.on_post_page(html, page("notebooks/x.ipynb"), None)
    assert out.count("<math") == 2
    assert "cost = $5" in out and "$ not math $" in out


def test_font_subset_is_a_renamed_math_font_with_the_glyphs_asked_for(tmp_path, monkeypatch):
    from fontTools import ttLib

    monkeypatch.setattr(mathml, "CACHE", tmp_path)
    wanted = {ord("x"), 0x1D465, ord("\u2211"), ord("(")}
    font = ttLib.TTFont(mathml.font_subset(wanted))
    assert "MATH" in font  # the table that lets the browser stretch (, ∑ and radicals
    assert wanted <= set(font.getBestCmap())
    assert font["name"].getDebugName(1) == mathml.FONT_FAMILY
    assert "STIX Fonts Project" in font["name"].getDebugName(0)  # the copyright notice is kept


def test_a_dirty_build_keeps_the_characters_of_pages_it_did_not_render(tmp_path, monkeypatch):
    """Under `mkdocs serve` only the edited page is rendered again: the font subset must still
    carry the other pages' characters (it is cut to the union of every page's)."""
    monkeypatch.setattr(mathml, "CACHE", tmp_path)
    monkeypatch.setattr(mathml, "CODEPOINTS", {})
    files = SimpleNamespace(
        documentation_pages=lambda: [SimpleNamespace(src_uri=u) for u in ("a.md", "b.md")]
    )
    mathml.on_files(files, None)
    mathml.on_page_content('<span class="arithmatex">\\(\\alpha\\)</span>', page("a.md"), None, None)
    mathml.on_page_content('<span class="arithmatex">\\(\\beta\\)</span>', page("b.md"), None, None)
    clean = set().union(*mathml.page_codepoints().values())
    assert ord("\u03b1") in clean and ord("\u03b2") in clean

    mathml.CODEPOINTS.clear()  # the dirty build: only b.md is rendered, and its alpha became gamma
    mathml.on_files(files, None)
    mathml.on_page_content('<span class="arithmatex">\\(\\gamma\\)</span>', page("b.md"), None, None)
    dirty = mathml.page_codepoints()
    assert ord("\u03b1") in dirty["a.md"]  # kept from the last time a.md was rendered
    assert ord("\u03b3") in dirty["b.md"] and ord("\u03b2") not in dirty["b.md"]

    gone = SimpleNamespace(documentation_pages=lambda: [SimpleNamespace(src_uri="b.md")])
    mathml.CODEPOINTS.clear()  # a.md deleted: its characters leave the font
    mathml.on_files(gone, None)
    assert set(mathml.page_codepoints()) == {"b.md"}


def test_a_sign_after_an_operator_or_an_opening_bracket_is_unary():
    """TeX reads the minus in (-1, 1) and x = -2 as a sign; MathML spaces an <mo> by its form, so
    it must say prefix, or the browser shows "( - 1, 1)". After a closing bracket it stays binary."""
    assert '<mo stretchy="false">&#x00028;</mo><mo form="prefix">&#x02212;</mo>' in mathml.to_mathml(
        "(-1, 1)", False
    )
    assert '<mo>&#x0003D;</mo><mo form="prefix">&#x02212;</mo>' in mathml.to_mathml("x = -2", False)
    assert 'form="prefix"' not in mathml.to_mathml("f(x) - 1", False)
    assert 'form="prefix"' not in mathml.to_mathml("a - b", False)
