"""pipeline/notebook_pages.py: CDN tags removed, real alt text, the stylesheet shared and purged."""

import hashlib
from pathlib import Path
from types import SimpleNamespace

import pytest

from pipeline import notebook_pages

PAGE = """<html><head></head><body><article>
<style>.jp-Cell { margin: 0 } .bp3-button, .jp-OutputArea { padding: 1px } .lm-Widget { x: y }</style>
<script src="https://cdnjs.cloudflare.com/ajax/libs/require.js/2.1.10/require.min.js"></script>
<script type="module">const m = await import("https://cdnjs.cloudflare.com/mermaid.esm.min.mjs");</script>
<img alt="No description has been provided for this image" src="data:image/png;base64,AAAA">
<img alt="No description has been provided for this image" src="data:image/png;base64,BBBB">
</article></body></html>"""


def test_clean_removes_cdn_tags_and_gives_each_figure_its_alt_text():
    figures = {"loss": {"alt": 'Loss "before" < after.'}, "second": {"alt": "Second figure."}}
    html = notebook_pages.clean(PAGE, figures)
    assert "cdnjs" not in html
    assert 'alt="Loss &quot;before&quot; &lt; after."' in html and 'alt="Second figure."' in html
    assert "No description" not in html


def test_the_stylesheet_is_shared_purged_and_named_by_its_hash(tmp_path, monkeypatch):
    monkeypatch.setattr(notebook_pages, "CSS_CACHE", tmp_path / "css-cache")
    html = notebook_pages.clean(PAGE.replace("<article>", '<article class="jp-Cell">'), {}, root="../..")
    assert "<style>" not in html and 'rel="stylesheet" href="../../assets/notebook.@' in html
    page = tmp_path / "notebooks" / "demo" / "index.html"
    page.parent.mkdir(parents=True)
    page.write_text(html)
    (written,) = notebook_pages.write_stylesheets(tmp_path)
    css = written.read_text()
    assert ".jp-Cell{margin:0}" in css  # the page uses it
    assert "jp-OutputArea" not in css and "bp3-" not in css and "lm-Widget" not in css
    assert written.name == f"notebook.{hashlib.sha256(css.encode()).hexdigest()[:8]}.css"
    assert f'href="../../assets/{written.name}"' in page.read_text()
    assert notebook_pages.STYLESHEETS == {}  # forgotten for the next build


def test_purge_keeps_the_selectors_whose_classes_a_page_uses():
    css = ".a, .b { color: red } .a .b, .a:not(.b) { x: y } .a:is(.c, .b) { z: w } p { m: n }"
    assert notebook_pages.purge(css, {"a"}) == ".a{color:red}\n.a:not(.b){x:y}\np{m:n}\n"
    assert ".a:is(.c, .b){z:w}" in notebook_pages.purge(css, {"a", "b", "c"})


def test_purge_filters_inside_media_blocks_and_keeps_other_at_rules():
    css = "@media (x) { .lm-y {a:b} .k {c:d} } @media (y) { .gone {a:b} } @font-face { src: url(a;b) }"
    assert notebook_pages.purge(css, {"k"}) == "@media (x){.k{c:d}}\n@font-face { src: url(a;b) }\n"


def test_purge_keeps_only_the_custom_properties_the_kept_rules_use():
    css = (
        ":root { --used: var(--through); --through: 1px; --unused: 2px; --also-unused: var(--used) }"
        " .k { margin: var(--used) } .gone { padding: var(--unused) } .empty { --unused: 3px }"
    )
    assert (
        notebook_pages.purge(css, {"k", "empty"})
        == ":root{--used:var(--through);--through:1px}\n.k{margin:var(--used)}\n"
    )


def test_output_images_become_the_snippets_svgs_for_both_palettes():
    """A saved figure's output is the SVG saving drew (nbconvert: an img with no alt), any
    other figure a PNG (nbconvert's placeholder alt); both become the files, in order."""
    figures = {"loss": {"alt": "First."}, "second": {"alt": "Second."}}
    page = PAGE.replace(
        '<img alt="No description has been provided for this image" src="data:image/png;base64,AAAA">',
        '<div class="jp-RenderedSVG jp-OutputArea-output " data-mime-type="image/svg+xml">\n'
        '<img src="data:image/svg+xml;base64,PHN2Zz4=">\n</div>',
    )
    html = notebook_pages.clean(page, figures, root="../..", snippet="demo")
    assert "data:image" not in html
    assert '<img alt="First." loading="lazy" src="../../figures/demo/loss.svg#only-light">' in html
    assert 'src="../../figures/demo/second-dark.svg#only-dark"' in html


def test_the_setup_cell_is_folded_with_its_nested_divs():
    page = (
        '<p>before</p><div class="jp-Cell jp-CodeCell jp-Notebook-cell celltag_setup">'
        '<div class="a"><div class="b">import numpy</div></div></div><div class="jp-Cell jp-CodeCell">x</div>'
    )
    folded = notebook_pages.fold_setup_cell(page)
    assert folded.startswith('<p>before</p><details class="snippet-setup"><summary>')
    assert 'import numpy</div></div></div>\n</details><div class="jp-Cell jp-CodeCell">x</div>' in folded
    assert notebook_pages.fold_setup_cell("<div>no setup</div>") == "<div>no setup</div>"


def test_the_runner_tags_the_argument_cell_as_setup(tmp_path):
    from pipeline import runner

    path = tmp_path / "tiny.py"
    path.write_text(
        '"""Tiny."""\n\n# %%\nfrom gradlab import snippet\n\n'
        "args, results = snippet.parse(snippet.parser())\n\n# %%\nx = 1\n"
    )
    tagged = [c.metadata.get("tags", []) for c in runner.to_notebook(path).cells if c.cell_type == "code"]
    assert tagged == [["setup"], []]


def test_token_spans_without_a_style_go_and_neighbours_of_one_class_join():
    css = ".highlight-ipynb .p{color:red}\n.highlight-ipynb .k{color:blue}"
    code = (
        '<div tabindex="0" class="highlight-ipynb hl-python"><pre><span></span>'
        '<span class="k">for</span> <span class="n">x</span> <span class="ow">in</span> '
        '<span class="n">xs</span><span class="p">)</span><span class="p">)</span>'
        '<span class="p">:</span></pre></div>'
    )
    outside = '<p><span class="n">kept</span></p>'
    out = notebook_pages.simplify_tokens(outside + code, css)
    assert out == outside + (
        '<div tabindex="0" class="highlight-ipynb hl-python"><pre><span></span>'
        '<span class="k">for</span> x in xs<span class="p">)):</span></pre></div>'
    )


def test_a_prerendered_notebook_is_a_cache_hit_for_its_page(tmp_path, monkeypatch):
    """prerender writes mkdocs-jupyter's cache entry; the plugin, rendering the page from a copy
    of the notebook at another path, finds it and converts nothing."""
    import nbformat
    from mkdocs.config import load_config
    from mkdocs_jupyter import convert
    from nbconvert.exporters.templateexporter import TemplateExporter

    from pipeline import runner

    unwrapped(TemplateExporter, monkeypatch)
    monkeypatch.setattr(notebook_pages, "TEMPLATE_CACHE", tmp_path / "jinja")  # prerender shares it
    config = load_config(str(runner.ROOT / "mkdocs.yml"))
    plugin = config.plugins["mkdocs-jupyter"]
    plugin.config["cache_dir"] = str(tmp_path / "cache")
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# Demo\n\n## Section")])
    first, copy = tmp_path / "run" / "demo.ipynb", tmp_path / "pages" / "demo.ipynb"
    for path in (first, copy):
        path.parent.mkdir()
        nbformat.write(notebook, path)
    assert notebook_pages.prerender(first, config)
    (entry,) = (tmp_path / "cache").glob("*.json")
    assert "Section" in entry.read_text()
    assert not notebook_pages.prerender(first, config)  # already there

    def no_conversion(*args, **kwargs):
        raise AssertionError("the page converted its notebook again")

    monkeypatch.setattr(convert, "nb2html", no_conversion)
    page = notebook_pages.SimpleNamespace(
        file=notebook_pages.SimpleNamespace(abs_src_path=str(copy), src_path="notebooks/demo.ipynb"),
        abs_url="/notebooks/demo/",
        title=None,
    )
    plugin.on_pre_page(page, config, None)
    page.render(config, None)
    assert "Section" in page.content


def test_a_purged_stylesheet_is_cached_by_its_css_and_classes(tmp_path, monkeypatch):
    monkeypatch.setattr(notebook_pages, "CSS_CACHE", tmp_path)
    css = ".a { color: red } .b { color: blue }"
    first = notebook_pages._purged(css, {"a"})
    assert ".a{color:red}" in first.replace(" ", "") and ".b" not in first

    def no_purge(*args):
        raise AssertionError("purged again")

    monkeypatch.setattr(notebook_pages, "purge", no_purge)
    assert notebook_pages._purged(css, {"a"}) == first  # from the cache
    with pytest.raises(AssertionError, match="purged again"):  # other classes: another entry
        notebook_pages._purged(css, {"a", "b"})


def test_a_cleaned_page_is_cached_with_what_it_adds_to_the_shared_stylesheet(tmp_path, monkeypatch):
    monkeypatch.setattr(notebook_pages, "CSS_CACHE", tmp_path)
    monkeypatch.setattr(notebook_pages, "STYLESHEETS", {})
    page = PAGE.replace("<article>", '<article class="jp-Cell">')
    figures = {"loss": {"alt": "Loss."}, "second": {"alt": "Second."}}
    first = notebook_pages.clean_page(page, figures, "../..", "demo")
    assert first == notebook_pages.clean(page, figures, "../..", "demo", {})
    registered = {k: (e["css"], set(e["classes"])) for k, e in notebook_pages.STYLESHEETS.items()}
    assert registered and all("jp-Cell" in classes for _, classes in registered.values())

    def no_clean(*args):
        raise AssertionError("cleaned again")

    monkeypatch.setattr(notebook_pages, "clean", no_clean)
    notebook_pages.STYLESHEETS.clear()  # the next build: the page and its stylesheet from the cache
    assert notebook_pages.clean_page(page, figures, "../..", "demo") == first
    assert {k: (e["css"], set(e["classes"])) for k, e in notebook_pages.STYLESHEETS.items()} == registered
    with pytest.raises(AssertionError, match="cleaned again"):  # other figures: another entry
        notebook_pages.clean_page(page, {"loss": {"alt": "Other."}}, "../..", "demo")


def test_nbconvert_environments_share_compiled_templates(tmp_path, monkeypatch):
    """After share_compiled_templates, a conversion stores its compiled templates in the cache
    and gives the same HTML as one that compiles them; a second conversion loads them."""
    import nbformat
    from mkdocs_jupyter import convert
    from nbconvert.exporters.templateexporter import TemplateExporter

    notebook = tmp_path / "demo.ipynb"
    cells = [nbformat.v4.new_markdown_cell("# Demo"), nbformat.v4.new_code_cell("x = 1")]
    nbformat.write(nbformat.v4.new_notebook(cells=cells), notebook)
    unwrapped(TemplateExporter, monkeypatch)
    plain = convert.nb2html(str(notebook))
    monkeypatch.setattr(notebook_pages, "TEMPLATE_CACHE", tmp_path / "jinja")
    notebook_pages.share_compiled_templates()
    assert convert.nb2html(str(notebook)) == plain
    stored = sorted((tmp_path / "jinja").iterdir())
    assert len(stored) > 5  # nbconvert's HTML templates
    before = [path.stat().st_mtime_ns for path in stored]
    assert convert.nb2html(str(notebook)) == plain
    assert sorted((tmp_path / "jinja").iterdir()) == stored
    assert [path.stat().st_mtime_ns for path in stored] == before  # loaded, not compiled again


def unwrapped(exporter, monkeypatch):
    """nbconvert's own _create_environment for this test (the suite's site runs may have wrapped
    it already in this process), put back as it was afterwards."""
    current = exporter._create_environment
    monkeypatch.setattr(exporter, "_create_environment", getattr(current, "original", current))


def test_a_whole_build_evicts_the_cache_entries_it_did_not_use(tmp_path, monkeypatch):
    monkeypatch.setattr(notebook_pages, "CSS_CACHE", tmp_path)
    monkeypatch.setattr(notebook_pages, "STYLESHEETS", {})
    monkeypatch.setattr(notebook_pages, "USED", set())
    stale = tmp_path / "page-of-an-earlier-version.json"
    stale.write_text("{}")
    page = PAGE.replace("<article>", '<article class="jp-Cell">')
    notebook_pages.clean_page(page, {}, "../..", "demo")
    notebook_pages._purged(".jp-Cell { margin: 0 }", {"jp-Cell"})
    kept = sorted(tmp_path.iterdir())
    assert notebook_pages.evict_unused() == [stale]
    assert sorted(tmp_path.iterdir()) == [path for path in kept if path != stale]
    assert notebook_pages.USED == set()


def test_two_builds_removing_the_same_stale_page_do_not_fail_each_other(tmp_path, monkeypatch):
    from mkdocs.plugins import PluginCollection
    from mkdocs_jupyter.plugin import Plugin

    plugin = Plugin()
    assert plugin.load_config({"cache": True, "cache_dir": str(tmp_path)}) == ([], [])
    plugins = PluginCollection()
    plugins["mkdocs-jupyter"] = plugin
    used, stale = tmp_path / "used.json", tmp_path / "stale.json"
    used.write_text("{}")
    plugin._used_cache_paths = {used}
    # the race: this build lists the stale page, another build removes it, this one removes it
    listed = Path.glob
    monkeypatch.setattr(
        Path, "glob", lambda self, pattern: [used, stale] if self == tmp_path else listed(self, pattern)
    )
    with pytest.raises(FileNotFoundError):  # mkdocs-jupyter's own eviction
        plugin.on_post_build(SimpleNamespace())
    notebook_pages.evict_without_racing(SimpleNamespace(plugins=plugins))
    assert plugin.on_post_build not in plugins.events["post_build"]
    plugins.run_event("post_build", config=SimpleNamespace())  # the build goes on
    assert used.exists()
    stale.write_text("{}")
    monkeypatch.setattr(Path, "glob", listed)
    plugins.run_event("post_build", config=SimpleNamespace())
    assert used.exists() and not stale.exists(), "a stale page is still evicted"

    stale.write_text("{}")  # a dirty rebuild rendered only the changed pages: it evicts nothing
    dirty = PluginCollection()
    dirty["mkdocs-jupyter"] = plugin
    notebook_pages.evict_without_racing(SimpleNamespace(plugins=dirty), dirty=True)
    dirty.run_event("post_build", config=SimpleNamespace())
    assert stale.exists()
    without = PluginCollection()  # no mkdocs-jupyter: nothing replaced (a hook is a plain function)
    without.events["post_build"].append(lambda config: None)
    events = {name: list(methods) for name, methods in without.events.items()}
    notebook_pages.evict_without_racing(SimpleNamespace(plugins=without))
    assert without.events == events
