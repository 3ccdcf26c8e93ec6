"""pipeline/search_cache.py: a page's search entries parsed once, read back identical."""

from types import SimpleNamespace

import pytest
from material.plugins.search import plugin
from mkdocs.structure.toc import AnchorLink

from pipeline import search_cache

HTML = '<h1 id="title">Title</h1><p>First words.</p><h2 id="part">Part</h2><p>More words.</p>'


def page(content: str = HTML, **meta):
    toc = [AnchorLink("Title", "title", 1)]
    toc[0].children = [AnchorLink("Part", "part", 2)]
    return SimpleNamespace(content=content, toc=toc, url="chapter/", title="Title", meta=meta)


@pytest.fixture
def index(tmp_path, monkeypatch):
    """A search index whose class has the cache installed, into tmp_path; unwrapped after."""
    original = getattr(
        plugin.SearchIndex.add_entry_from_context, "original", plugin.SearchIndex.add_entry_from_context
    )
    monkeypatch.setattr(plugin.SearchIndex, "add_entry_from_context", original)
    monkeypatch.setattr(search_cache, "CACHE", tmp_path)
    monkeypatch.setattr(search_cache, "USED", set())
    search_cache.install()
    return plugin.SearchIndex


def test_a_page_is_parsed_once_and_its_entries_read_back_identical(index, monkeypatch):
    uncached = plugin.SearchIndex()
    index.add_entry_from_context.original(uncached, page())
    first = index()
    first.add_entry_from_context(page())
    assert first.entries == uncached.entries and len(first.entries) == 2

    class NoParser:
        def __init__(self):
            raise AssertionError("parsed again")

    monkeypatch.setattr(plugin, "Parser", NoParser)
    again = index()
    again.add_entry_from_context(page())
    assert again.entries == first.entries
    for changed in (page(HTML.replace("More", "Other")), page(tags=["new"]), page(search={"boost": 2})):
        with pytest.raises(AssertionError, match="parsed again"):  # another input: another entry
            index().add_entry_from_context(changed)


def test_a_whole_build_evicts_the_entries_it_did_not_use(index, tmp_path):
    stale = tmp_path / "of-an-earlier-version.json"
    stale.write_text("[]")
    index().add_entry_from_context(page())
    kept = sorted(tmp_path.iterdir())
    assert search_cache.evict_unused() == [stale]
    assert sorted(tmp_path.iterdir()) == [path for path in kept if path != stale]
    assert search_cache.USED == set()
