"""The built site: strict build, every quoted number resolved, every image present with alt
text, nothing loaded from another host."""

import json
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from pipeline import runner


class PageParser(HTMLParser):
    """Collects the resources a page loads and its visible text."""

    def __init__(self):
        super().__init__()
        self.images, self.loads, self.text = [], [], []
        self._skip = 0

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "img":
            self.images.append(attrs)
        if tag in ("script", "img", "iframe", "source", "audio", "video") and attrs.get("src"):
            self.loads.append(attrs["src"])
        if (
            tag == "link"
            and attrs.get("href")
            and {"stylesheet", "preload", "icon", "modulepreload"} & set((attrs.get("rel") or "").split())
        ):
            self.loads.append(attrs["href"])
        if tag in ("script", "style", "code", "pre"):
            self._skip += 1

    def handle_endtag(self, tag):
        if tag in ("script", "style", "code", "pre"):
            self._skip -= 1

    def handle_data(self, data):
        if not self._skip:
            self.text.append(data)


def pages(site: Path) -> list[Path]:
    return sorted(site.rglob("*.html"))


# mkdocs-jupyter keeps each cell's raw source in a hidden div for its copy button
COPY_BUFFER = re.compile(r'<div class="clipboard-copy-txt"[^>]*>.*?</div>', re.S)


def parse(page: Path) -> PageParser:
    parser = PageParser()
    parser.feed(COPY_BUFFER.sub("", page.read_text(encoding="utf-8")))
    return parser


def is_external(url: str) -> bool:
    return url.startswith("//") or bool(urlsplit(url).scheme not in ("", "data"))


def test_every_page_is_built(built_site):
    names = {page.relative_to(built_site).as_posix() for page in pages(built_site)}
    assert "index.html" in names
    for path in runner.snippet_paths():
        assert f"notebooks/{path.stem}/index.html" in names, f"no notebook page for {path.name}"
        assert (built_site / "notebooks" / path.stem / f"{path.stem}.ipynb").exists(), "no .ipynb download"


def test_every_quoted_number_is_resolved(built_site):
    for page in pages(built_site):
        text = " ".join(parse(page).text)
        leftover = re.findall(r"\{\{[^}]*\}\}", text)
        assert not leftover, f"{page.relative_to(built_site)}: unresolved {leftover}"


def test_every_image_exists_and_has_alt_text(built_site):
    for page in pages(built_site):
        for image in parse(page).images:
            where = f"{page.relative_to(built_site)}: <img src={image.get('src', '')[:60]!r}>"
            alt = (image.get("alt") or "").strip()
            assert alt and alt != "No description has been provided for this image", (
                f"{where} has no alt text"
            )
            source = image.get("src", "")
            if source.startswith("data:"):
                continue
            assert not is_external(source), f"{where} loads from another host"
            target = (page.parent / unquote(urlsplit(source).path)).resolve()
            assert target.is_file(), f"{where} points to a missing file {target}"


def test_nothing_is_loaded_from_another_host(built_site):
    for page in pages(built_site):
        external = [url for url in parse(page).loads if is_external(url)]
        assert not external, f"{page.relative_to(built_site)} loads {external}"
    for css in built_site.rglob("*.css"):
        urls = re.findall(r"url\(\s*['\"]?((?:https?:)?//[^'\")]+)", css.read_text(encoding="utf-8"))
        assert not urls, f"{css.relative_to(built_site)} loads {urls}"


@pytest.mark.parametrize("name", [path.stem for path in runner.snippet_paths()])
def test_notebook_pages_show_their_outputs_and_figures(built_site, snippet_results, name):
    folder = built_site / "notebooks" / name
    notebook = json.loads((folder / f"{name}.ipynb").read_text(encoding="utf-8"))
    outputs = [output for cell in notebook["cells"] for output in cell.get("outputs", [])]
    assert outputs, f"{name}.ipynb has no outputs: it was not executed"
    bad = [o for o in outputs if o["output_type"] == "error" or o.get("name") == "stderr"]
    assert not bad, f"{name}.ipynb shows an error or stderr output: {bad[0]}"
    html = (folder / "index.html").read_text(encoding="utf-8")
    assert re.search(r'class="[^"]*jp-OutputArea-output', html), f"notebook page {name} shows no outputs"
    sources = [image.get("src", "") for image in parse(folder / "index.html").images]
    # the output PNGs are replaced by the snippet's SVGs, one light and one dark copy each
    figures = sum(1 for src in sources if f"figures/{name}/" in src and "-dark.svg" not in src)
    expected = len(snippet_results[name].figures)
    assert figures == expected, f"notebook page {name} shows {figures} figures, the snippet saved {expected}"


def test_glossary_terms_are_marked_on_every_page(built_site):
    """The glossary (docs/includes/glossary.md) is appended to every page: a term that a page
    uses is an <abbr> with its definition there."""
    glossary = (runner.ROOT / "docs" / "includes" / "glossary.md").read_text(encoding="utf-8")
    terms = re.findall(r"^\*\[([^\]]+)\]:", glossary, re.M)
    assert len(terms) >= 12, terms
    checked = 0
    for page in pages(built_site):
        if "notebooks/" in page.as_posix() or page.name == "404.html":
            continue
        html = page.read_text(encoding="utf-8")
        article = html[html.find("<article") : html.find("</article>")]
        # an interactive figure's title, legend and frame descriptions are data written by its
        # snippet (raw HTML, which the abbr extension does not mark); the prose around it is checked
        article = re.sub(r'<figure class="gp-interactive".*?</figure>', " ", article, flags=re.S)
        prose = re.sub(r"<(code|pre|script|abbr|math)\b.*?</\1>|<[^>]+>", " ", article, flags=re.S)
        unmarked = [t for t in terms if re.search(rf"(?<![\w-]){re.escape(t)}(?![\w-])", prose)]
        assert not unmarked, f"{page.relative_to(built_site)}: glossary terms not marked: {unmarked}"
        checked += "<abbr" in article
    assert checked >= 10, f"only {checked} pages use a glossary term"
