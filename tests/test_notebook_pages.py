"""pipeline/notebook_pages.py: CDN tags removed, real alt text, the stylesheet shared and slimmed."""

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


def test_the_stylesheet_is_shared_and_loses_unused_widget_rules(tmp_path):
    html = notebook_pages.clean(PAGE, {}, root="../..")
    assert "<style>" not in html and 'rel="stylesheet" href="../../assets/notebook.' in html
    (written,) = notebook_pages.write_stylesheets(tmp_path)
    css = written.read_text()
    assert ".jp-Cell" in css and ".jp-OutputArea" in css
    assert "bp3-" not in css and "lm-Widget" not in css


def test_drop_unused_rules_filters_inside_media_blocks_and_keeps_other_at_rules():
    css = ".a, .bp3-x { color: red }\n@media (x) { .lm-y {a:b} .k {c:d} }\n@font-face { src: x }\n.p { x:y }"
    assert (
        notebook_pages.drop_unused_rules(css)
        == ".a{ color: red }\n@media (x) { .k {c:d} }\n@font-face { src: x }\n.p { x:y }"
    )


def test_output_pngs_become_the_snippets_svgs_for_both_palettes():
    figures = {"loss": {"alt": "First."}, "second": {"alt": "Second."}}
    html = notebook_pages.clean(PAGE, figures, root="../..", snippet="demo")
    assert "data:image/png" not in html
    assert '<img alt="First." loading="lazy" src="../../figures/demo/loss.svg#only-light">' in html
    assert 'src="../../figures/demo/second-dark.svg#only-dark"' in html
