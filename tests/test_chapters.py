"""Every chapter in the navigation meets the chapter contract (../shared/CHAPTERS.md) in its
source: the sections in order, a figure from a snippet, the snippet's notebook linked, and every
command line it gives the reader accepted by that snippet."""

import re

import pytest

from pipeline import macros, runner, scaffold

DOCS = runner.ROOT / "docs"
NOT_CHAPTERS = {"index.md", "contributing.md", "diagnose.md"}  # diagnose: symptom index, tested below
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


TRY_IT_COMMAND = re.compile(r"`python snippets/([a-z][a-z0-9_]*)\.py((?: [^`]*)?)`")


class _Parsed(Exception):
    """Raised once a snippet has parsed its arguments: the rest of it need not run."""


def try_it_commands() -> list:
    commands = []
    for page in [*chapters(), "index.md"]:
        for number, line in enumerate((DOCS / page).read_text(encoding="utf-8").splitlines(), 1):
            for match in TRY_IT_COMMAND.finditer(line):
                commands.append(pytest.param(match[1], match[2].strip(), id=f"{page}:{number}"))
    return commands


@pytest.mark.parametrize(("name", "arguments"), try_it_commands())
def test_every_command_a_chapter_gives_is_accepted_by_its_snippet(name, arguments, monkeypatch):
    """`python snippets/NAME.py ARGS` in a chapter's prose: the snippet exists and its own parser
    accepts ARGS (a renamed or removed option would leave an exercise that fails)."""
    import runpy

    from gradlab import snippet

    path = runner.snippet_path(name)
    assert path.is_file(), f"no snippet {path.name}"
    real_parse = snippet.parse

    def parse_then_stop(argument_parser):
        raise _Parsed(real_parse(argument_parser))

    monkeypatch.setattr(snippet, "parse", parse_then_stop)
    monkeypatch.setenv(snippet.NAME_ENV, name)
    monkeypatch.setenv(snippet.ARGV_ENV, arguments)
    with pytest.raises(_Parsed):  # it got as far as its parsed arguments
        try:
            runpy.run_path(str(path), run_name="__main__")
        except SystemExit as error:
            pytest.fail(f"{name}.py rejects '{arguments}' (exit {error.code}); see its --help")


MATH = re.compile(r"\$\$.*?\$\$|\$[^$\n]+\$", re.S)
PROSE_NOTATION = re.compile(r"\d[eE][-+]?\d|×|[⁻⁰¹²³⁴⁵⁶⁷⁸⁹]")


@pytest.mark.parametrize("page", [*chapters(), "index.md"])
def test_numbers_inside_math_are_written_for_tex(page, snippet_results):
    """A number quoted inside ``$...$`` uses ``.Nt`` (``3.2 \\times 10^{-11}``), not ``1e-06``
    (which TeX typesets as "1e − 06") or the prose notation ``.Nx`` (``3.2 × 10⁻¹¹``)."""
    text = (DOCS / page).read_text(encoding="utf-8")
    wrong = []
    for math in MATH.finditer(text):
        if macros.MACRO.search(math.group(0)):
            rendered = macros.substitute(math.group(0), snippet_results, page)
            if PROSE_NOTATION.search(rendered):
                line = text.count("\n", 0, math.start()) + 1
                wrong.append(f"{page}:{line}: {math.group(0)} renders as {rendered}")
    assert not wrong, "use .Nt for numbers in math:\n" + "\n".join(wrong)


def test_the_diagnose_page_has_ten_symptoms_each_with_probe_numbers_owner_fix_and_chapter():
    """Each symptom: a PyTorch probe beside its numpy version, broken and healthy numbers the
    build computed, whose property it is, the fix, and the chapter that measures it."""
    text = (DOCS / "diagnose.md").read_text(encoding="utf-8")
    sections = re.split(r"^## ", text, flags=re.M)[1:]
    symptoms = [s for s in sections if s.split("\n", 1)[0] not in ("The probe file", "Run it yourself")]
    assert len(symptoms) >= 10, f"diagnose.md has {len(symptoms)} symptoms"
    chapters_linked = set()
    for section in symptoms:
        title = section.split("\n", 1)[0]
        for part in (
            '=== "PyTorch"',
            '=== "numpy (gradlab)"',
            "**Owner**",
            "**Fix**",
            "**Broken and healthy.**",
        ):
            assert part in section, f"diagnose.md, {title!r}: no {part}"
        assert macros.MACRO.search(section), f"diagnose.md, {title!r}: no computed number"
    for match in re.finditer(r"\]\(([a-z-]+\.md)[)#]", text):
        chapters_linked.add(match.group(1))
    assert chapters_linked <= set(chapters()), chapters_linked - set(chapters())
    assert len(chapters_linked) >= 8, chapters_linked
