"""Material's search index entries of a page, cached by what they are made of.

Material's search plugin parses every page's HTML into sections on every build (0.3 s of the
~2.7 s a no-change rebuild takes). A page's entries depend only on its HTML, its table of
contents, its URL, its title, the ``title``, ``tags`` and ``search`` of its front matter, and the
plugin's code: :func:`install` wraps ``SearchIndex.add_entry_from_context`` so that a page whose
inputs hashed the same reads its entries from ``.cache/search`` instead. The index written is
byte-identical (tests/test_search_cache.py). A whole build removes the entries it did not use.
"""

import contextlib
import hashlib
import json
import sys
from pathlib import Path

from pipeline import notebook_pages

CACHE = Path(__file__).resolve().parents[1] / ".cache" / "search"
USED: set[Path] = set()  # the entries this build read or wrote (see evict_unused)


def _toc(items) -> list:
    return [[item.id, item.url, item.title, _toc(item.children)] for item in items]


def _key(page, code: str) -> str:
    meta = {name: page.meta.get(name) for name in ("title", "tags", "search")}
    made_of = [code, page.content, _toc(page.toc), page.url, str(page.title), meta]
    # repr for what JSON has no type for (a YAML date is not the string of it: tags keep only strings)
    return hashlib.sha256(json.dumps(made_of, sort_keys=True, default=repr).encode()).hexdigest()


def install() -> None:
    """Wrap Material's ``SearchIndex.add_entry_from_context`` (once; the original is kept as
    ``.original``)."""
    import material
    from material.plugins.search import plugin

    index = plugin.SearchIndex
    original = getattr(index.add_entry_from_context, "original", index.add_entry_from_context)
    # the plugin's own code and whether it segments Chinese: what else shapes an entry
    code = f"{material.__version__} {hashlib.sha256(Path(plugin.__file__).read_bytes()).hexdigest()}"
    code += f" jieba={plugin.jieba is not None} {sys.version}"  # its parser is the stdlib's html.parser

    def add_entry_from_context(self, page):
        cached = CACHE / f"{_key(page, code)}.json"
        USED.add(cached)
        with contextlib.suppress(OSError, ValueError):  # absent, or evicted by another build
            self.entries.extend(json.loads(cached.read_text(encoding="utf-8")))
            return
        start = len(self.entries)
        original(self, page)
        notebook_pages.write_whole(cached, json.dumps(self.entries[start:], default=str))

    add_entry_from_context.original = original
    index.add_entry_from_context = add_entry_from_context


def evict_unused() -> list[Path]:
    """After a whole build: remove the entries it did not use; forget the set."""
    removed = notebook_pages.remove_unused(CACHE.glob("*.json"), USED)
    USED.clear()
    return removed
