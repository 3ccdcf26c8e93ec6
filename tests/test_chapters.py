"""Every chapter in the navigation meets the chapter contract (../shared/CHAPTERS.md) in its
source: the sections in order, a figure from a snippet, the snippet's notebook linked."""

import re

import pytest

from pipeline import macros, runner, scaffold

DOCS = runner.ROOT / "docs"
NOT_CHAPTERS = {"index.md", "contributing.md"}
SECTIONS = [
    "## Is it backprop?",
    "## Why",
    "## Remedies, measured",
    "## Try it",
    "## References",
    "## Run it yourself",
]


def chapters() -> list[str]:
    config = (runner.ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    return [page for _, page in scaffold.nav_pages(config) if page not in NOT_CHAPTERS]


@pytest.mark.parametrize("page", chapters())
def test_chapter_has_the_contracts_sections_in_order(page):
    text = (DOCS / page).read_text(encoding="utf-8")
    assert re.match(r"# \S", text), f"{page} must open with its H1 title"
    headings = [line for line in text.splitlines() if line.startswith("## ")]
    positions = []
    for section in SECTIONS:
        found = [i for i, heading in enumerate(headings) if heading.startswith(section)]
        assert found, f"{page} has no section '{section}' (the chapter contract's sections: {SECTIONS})"
        positions.append(found[0])
    assert positions == sorted(positions), f"{page}: sections out of the contract's order {SECTIONS}"


@pytest.mark.parametrize("page", chapters())
def test_chapter_shows_a_figure_and_links_its_notebooks(page):
    text = (DOCS / page).read_text(encoding="utf-8")
    assert re.search(r"\{\{\s*figure\s", text), f"{page} shows no figure computed by a snippet"
    quoted = {name for name, _ in macros.quoted_keys(text)}
    run_it = text[text.index("## Run it yourself") :]
    for name in sorted(quoted):
        assert f"notebooks/{name}.ipynb" in run_it, (
            f"{page} quotes {name} but 'Run it yourself' does not link it"
        )
