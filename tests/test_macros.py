"""pipeline/macros.py: numbers and figures in prose; unknown names fail with page and line."""

from types import SimpleNamespace

import pytest
from mkdocs.exceptions import PluginError

from pipeline import hooks, macros

RESULTS = {
    "demo": SimpleNamespace(
        numbers={
            "ratio": 3.2e-11,
            "count": 1234567,
            "share": 0.4321,
            "tol": 1e-6,
            "zero": 0.0,
            "dead_min": 0.331,
            "dead_max": 0.392,
            "same_min": 2.0,
            "same_max": 2.0,
        },
        claims={"vanishes": {"holds": True, "statement": "The first layer's gradient vanishes."}},
        figures={"curve": {"alt": "A falling curve.", "title": "Curve"}},
    )
}


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("{{ demo.ratio }}", "3.2e-11"),
        ("{{ demo.ratio:.2x }}", "3.20 × 10⁻¹¹"),
        ("{{ demo.ratio:.1t }}", r"3.2 \times 10^{-11}"),
        ("{{ demo.tol:.0t }}", "10^{-6}"),
        ("{{ demo.zero:.1x }} {{ demo.zero:.2t }}", "0 0"),
        ("{{ demo.share:.2t }}", "4.32 \\times 10^{-1}"),
        ("{{demo.share:.1%}}", "43.2%"),
        ("{{ demo.count:, }}", "1,234,567"),
        ("{{ demo.count }}", "1234567"),
        (r"\{{ demo.count }}", "{{ demo.count }}"),
        ("{{ range demo.dead:.0% }}", "33–39%"),
        ("{{ range demo.dead:.2f }}", "0.33–0.39"),
        ("{{ range demo.same }}", "2"),
        ("{{ demo.vanishes }}", "The first layer's gradient vanishes."),
    ],
)
def test_numbers_are_formatted(source, expected):
    assert macros.substitute(source, RESULTS, "page.md") == expected


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("{{ demo.count }}. Then", "1234567\\. Then"),  # at a line's start: not an ordered list
        ("text\n    {{ demo.count }}) more", "text\n    1234567\\) more"),
        ("{{ demo.count }}.", "1234567\\."),
        ("a {{ demo.count }}. Then", "a 1234567. Then"),  # inside a line nothing changes
        ("{{ demo.count }}.5", "1234567.5"),
        ("{{ demo.share:.2f }}. Then", "0.43. Then"),  # not a list marker: "0." then a digit
    ],
)
def test_a_number_at_a_lines_start_does_not_start_a_list(source, expected):
    import markdown

    out = macros.substitute(source, RESULTS, "page.md")
    assert out == expected
    assert "<ol>" not in markdown.markdown(out)


def test_figure_has_both_palettes_alt_text_and_a_link_to_its_snippet():
    markdown = macros.substitute("{{ figure demo.curve }}", RESULTS, "part/page.md")
    assert "![A falling curve.](../figures/demo/curve.svg#only-light)" in markdown
    assert "![A falling curve.](../figures/demo/curve-dark.svg#only-dark)" in markdown
    assert "(../notebooks/demo.ipynb)" in markdown and "loading=lazy" in markdown


@pytest.mark.parametrize(
    ("source", "message"),
    [
        (
            "one\ntwo {{ demo.missing }}",
            "page.md:2: {{ demo.missing }}: snippet 'demo' has no number or claim 'missing' "
            "(ratio, count, share, tol, zero, dead_min, dead_max, same_min, same_max, vanishes)",
        ),
        ("{{ nope.ratio }}", "page.md:1: {{ nope.ratio }}: no snippet 'nope' (snippets: demo)"),
        (
            "\n\n{{ figure demo.nope }}",
            "page.md:3: {{ figure demo.nope }}: snippet 'demo' has no figure 'nope' (curve)",
        ),
        ("{{ demo.ratio:q }}", "page.md:1: {{ demo.ratio:q }}: bad format spec 'q'"),
    ],
)
def test_unknown_names_fail_with_page_and_line(source, message):
    with pytest.raises(macros.MacroError) as failure:
        macros.substitute(source, RESULTS, "page.md")
    assert str(failure.value).startswith(message)


def test_the_hook_turns_a_macro_error_into_a_build_failure(monkeypatch):
    monkeypatch.setattr(hooks, "RESULTS", RESULTS)
    page = SimpleNamespace(file=SimpleNamespace(src_uri="chapter.md"))
    with pytest.raises(PluginError, match=r"chapter\.md:1"):
        hooks.on_page_markdown("{{ demo.absent }}", page, None, None)


def test_the_hook_turns_a_failing_snippet_into_a_build_failure(monkeypatch, tmp_path):
    def run_many(requests, on_result=None):  # every run fails as a failing snippet does: its error
        return {
            (path.stem, args): hooks.runner.SnippetError("snippets/x.py:7: ValueError: bad")
            for path, args in requests
        }

    monkeypatch.setattr(hooks.runner, "run_many", run_many)
    with pytest.raises(PluginError, match=r"snippets/x.py:7: ValueError: bad"):
        hooks.on_config(SimpleNamespace(nav=[], docs_dir=str(tmp_path)))


def test_an_unknown_key_suggests_the_closest_ones():
    with pytest.raises(
        macros.MacroError, match=r"page.md:2: .*no number or claim 'ration'; did you mean ratio"
    ):
        macros.substitute("text\n{{ demo.ration }}", RESULTS, "page.md")
    with pytest.raises(macros.MacroError, match=r"no spread 'deda'; did you mean dead"):
        macros.substitute("{{ range demo.deda }}", RESULTS, "page.md")
    with pytest.raises(macros.MacroError, match=r"no figure 'curv'; did you mean curve"):
        macros.substitute("{{ figure demo.curv }}", RESULTS, "page.md")


def test_a_range_quotes_both_ends():
    assert macros.quoted_keys("{{ range demo.dead:.0% }} and {{ demo.vanishes }}") == {
        ("demo", "dead_min"),
        ("demo", "dead_max"),
        ("demo", "vanishes"),
    }


def test_a_run_with_arguments_is_quoted_from_its_own_result():
    """An exercise's answer: the same snippet run with the exercise's arguments."""
    other = SimpleNamespace(
        numbers={"ratio": 7.0e-3, "dead_min": 0.1, "dead_max": 0.2}, claims={}, figures={}
    )
    text = (
        "{{ demo(--lr 0.05 --seed 1).ratio:.1x }} vs {{ demo.ratio:.1x }}; "
        "{{ range demo(--lr 0.05  --seed 1).dead:.0% }}"
    )
    assert macros.argument_runs(text) == {("demo", ("--lr", "0.05", "--seed", "1"))}
    results = {**RESULTS, ("demo", ("--lr", "0.05", "--seed", "1")): other}
    assert macros.substitute(text, results, "page.md") == "7.0 × 10⁻³ vs 3.2 × 10⁻¹¹; 10–20%"
    assert macros.quoted_keys(text) == {("demo", "ratio")}, "an answer is not a recorded number"
    with pytest.raises(macros.MacroError, match=r"the run demo.py --lr 1 was not made"):
        macros.substitute("{{ demo(--lr 1).ratio }}", results, "page.md")


def test_a_claim_that_does_not_hold_in_the_quoted_run_fails_the_build():
    """A run with arguments records a claim that fails as a note; its statement would be false
    in an answer that quoted it, so quoting it is an error naming the run; one that holds there
    is quoted."""
    run = SimpleNamespace(
        numbers={},
        claims={
            "stalls": {"holds": False, "statement": "SGD stalls at every learning rate."},
            "moves": {"holds": True, "statement": "Adam moves every layer."},
        },
        figures={},
    )
    results = {**RESULTS, ("demo", ("--depth", "10")): run}
    assert macros.substitute("{{ demo(--depth 10).moves }}", results, "page.md") == "Adam moves every layer."
    with pytest.raises(macros.MacroError, match=r"page.md:1: .*does not hold in the run demo.py --depth 10"):
        macros.substitute("{{ demo(--depth 10).stalls }}", results, "page.md")
