"""pipeline/scaffold.py: `make chapter NAME=...` makes a chapter that builds and passes the tests.

The scaffold runs into a temporary copy of the repository (only what a build needs, plus the
snippet cache so that only the new snippet runs); the copy is then built with
``mkdocs build --strict`` and its snippet tests are run there.
"""

import json
import os
import re
import shutil
import subprocess
import sys

import pytest
import test_chapters
from conftest import ROOT

from pipeline import macros, record, scaffold

NAME = "demo_chapter"
PAGE = "demo-chapter.md"
COPIED = [
    "mkdocs.yml",
    "docs",
    "snippets",
    "pipeline",
    "overrides",
    "requirements.txt",
    "requirements-dev.txt",
]
SECTIONS = ["## The pitfall, shown", *test_chapters.SECTIONS]  # the template adds the opening
# the copy's own pytest is a session of its own, not one of this session's xdist workers
ENV = {key: value for key, value in os.environ.items() if not key.startswith("PYTEST_XDIST_")}
ENV["NO_MKDOCS_2_WARNING"] = "1"


def recorded(copy):
    """The scaffolded snippet's recorded numbers (its claims aside)."""
    document = json.loads((copy / "tests" / "recorded" / f"{NAME}.json").read_text(encoding="utf-8"))
    return {key: value for key, value in document.items() if key != record.CLAIMS}


def run(command, cwd, **kwargs):
    return subprocess.run(command, cwd=cwd, env=ENV, capture_output=True, text=True, **kwargs)


@pytest.fixture(scope="module")
def repo_copy(tmp_path_factory, snippet_results):
    """A copy of what the build reads, with the caches of snippet results, converted notebook
    pages and math (all keyed by content): ``snippet_results`` fills the snippet cache first, so
    only the new snippet runs in the copy, and only its notebook page is converted."""
    copy = tmp_path_factory.mktemp("repo")
    ignore = shutil.ignore_patterns("__pycache__", "*.tmp-*")
    for name in COPIED:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, copy / name, ignore=ignore)
        elif source.exists():
            shutil.copy2(source, copy / name)
    shutil.copytree(ROOT / "tests" / "recorded", copy / "tests" / "recorded")
    for name in ("conftest.py", "test_snippets.py"):
        shutil.copy2(ROOT / "tests" / name, copy / "tests" / name)
    for cache in ("snippets", "mkdocs-jupyter", "math"):  # keyed by content: only the new chapter's miss
        if (ROOT / ".cache" / cache).is_dir():
            shutil.copytree(ROOT / ".cache" / cache, copy / ".cache" / cache, ignore=ignore)
    return copy


@pytest.fixture(scope="module")
def scaffolded(repo_copy):
    before = (repo_copy / "mkdocs.yml").read_text(encoding="utf-8")
    made = run([sys.executable, "-m", "pipeline.scaffold", NAME, "--title", "A demo chapter"], repo_copy)
    assert made.returncode == 0, f"make chapter failed:\n{made.stdout}\n{made.stderr}"
    return repo_copy, before


def test_the_scaffold_writes_snippet_page_nav_entry_and_numbers(scaffolded):
    copy, before = scaffolded
    assert (copy / "snippets" / f"{NAME}.py").is_file()
    page = (copy / "docs" / PAGE).read_text(encoding="utf-8")
    assert page.startswith("# A demo chapter\n")
    positions = [page.index(heading + "\n") for heading in SECTIONS]
    assert positions == sorted(positions), "the seven sections must come in the contract's order"
    todos = scaffold.open_todos(page)
    assert len(todos) == 1 + len(SECTIONS), todos  # one box for the draft, one per section
    assert set(recorded(copy)) == {
        "max_disagreement",
        "n_seeds",
        *(f"first_to_last_{end}" for end in ("median", "min", "max")),
    }

    after = (copy / "mkdocs.yml").read_text(encoding="utf-8")
    assert (scaffold.DRAFTS, PAGE) in scaffold.nav_pages(after)
    added = after.splitlines()
    for line in before.splitlines():  # only lines were inserted: comments and layout are kept
        assert line in added, f"mkdocs.yml lost the line {line!r}"
        added.remove(line)
    assert len(added) <= 2 and f"- {PAGE}" in added[-1]


def test_the_scaffolded_chapter_builds_strictly(scaffolded):
    copy, _ = scaffolded
    site = copy / "site"
    build = run([sys.executable, "-m", "mkdocs", "build", "--strict", "--clean", "-d", str(site)], copy)
    problems = [line for line in build.stderr.splitlines() if not line.startswith("INFO")]
    assert build.returncode == 0, "mkdocs build --strict failed in the copy:\n" + "\n".join(problems)[-4000:]
    html = (site / "demo-chapter" / "index.html").read_text(encoding="utf-8")
    value = recorded(copy)["max_disagreement"]
    assert macros.format_number(value, ".1x") in html, "the page must show the snippet's number"
    assert f"figures/{NAME}/grad_norms.svg" in html, "the page must show the snippet's figure"
    assert (site / "notebooks" / NAME / f"{NAME}.ipynb").is_file()


def test_the_scaffolded_snippet_passes_the_snippet_tests(scaffolded):
    copy, _ = scaffolded
    tests = run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "tests/test_snippets.py",
            "-k",
            NAME,
        ],
        copy,
    )
    assert tests.returncode == 0, f"the snippet tests failed in the copy:\n{tests.stdout[-4000:]}"
    assert " passed" in tests.stdout and "deselected" in tests.stdout


def test_a_standalone_run_gives_the_recorded_numbers(scaffolded, tmp_path):
    copy, _ = scaffolded
    out = tmp_path / "out"
    standalone = run([sys.executable, f"snippets/{NAME}.py", "--out", str(out)], copy)
    assert standalone.returncode == 0, standalone.stderr
    assert "max_disagreement" in standalone.stdout, "the snippet prints its numbers as a table"
    document = json.loads((out / "numbers.json").read_text(encoding="utf-8"))
    assert record.drift(document, recorded(copy), docs=copy / "docs") == []


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("Bad-Name", "bad NAME"),
        ("1chapter", "bad NAME"),
        ("ab", "bad NAME"),
        ("trailing_", "bad NAME"),
        ("", "bad NAME"),
        ("gradlab", "is reserved"),
        ("contributing", "is reserved"),
        ("trailing-", "bad NAME"),
        (NAME, "is taken"),
        (NAME.replace("_", "-"), f"NAME '{NAME}' is taken"),  # dashes are read as underscores
        ("only_page", "is taken: docs/only-page.md already exists"),
    ],
)
def test_bad_and_existing_names_are_refused_in_one_line(scaffolded, name, reason):
    copy, _ = scaffolded
    (copy / "docs" / "only-page.md").write_text("# Only a page\n", encoding="utf-8")
    config = (copy / "mkdocs.yml").read_bytes()
    snippets = sorted((copy / "snippets").iterdir())
    refused = run([sys.executable, "-m", "pipeline.scaffold", name], copy)
    assert refused.returncode == 2
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("scaffold: error: ") and reason in lines[0], refused.stderr
    assert (copy / "mkdocs.yml").read_bytes() == config and sorted((copy / "snippets").iterdir()) == snippets


# ----------------------------------------------------------------------------- the nav edit

CONFIG = """\
site_name: X  # a comment
nav:
  # the chapters
  - Start here:
      - index.md
      - "What backprop computes": costs.md
  - Pitfalls:
      - a.md
{extra}
# after the nav
extra:
  generator: false
"""


def test_a_new_drafts_section_goes_before_contributing_and_keeps_everything_else():
    text = CONFIG.format(extra="  - Contributing:\n      - contributing.md")
    edited = scaffold.add_to_nav(text, "new.md")
    assert edited == text.replace("  - Contributing:", "  - Drafts:\n      - new.md\n  - Contributing:")
    assert [p for s, p in scaffold.nav_pages(edited) if s == "Drafts"] == ["new.md"]


def test_pages_are_appended_to_an_existing_drafts_section():
    text = CONFIG.format(extra="  - Drafts:\n      - old.md\n\n  # comment before Contributing")
    edited = scaffold.add_to_nav(scaffold.add_to_nav(text, "new.md"), "newer.md")
    assert "      - old.md\n      - new.md\n      - newer.md\n\n  # comment before" in edited
    assert [p for s, p in scaffold.nav_pages(edited) if s == "Drafts"] == ["old.md", "new.md", "newer.md"]


def test_without_contributing_drafts_go_at_the_end_of_the_nav():
    edited = scaffold.add_to_nav(CONFIG.format(extra=""), "new.md")
    assert "      - a.md\n  - Drafts:\n      - new.md\n\n# after the nav" in edited
    assert scaffold.load_yaml(edited)["extra"] == {"generator": False}


def test_a_flow_style_nav_is_refused():
    with pytest.raises(scaffold.ScaffoldError, match="block"):
        scaffold.add_to_nav("nav: [index.md]\n", "new.md")


def test_the_real_mkdocs_yml_takes_a_draft():
    text = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    edited = scaffold.add_to_nav(text, "new-draft.md")
    assert (scaffold.DRAFTS, "new-draft.md") in scaffold.nav_pages(edited)
    assert len(edited.splitlines()) - len(text.splitlines()) in (1, 2)


def test_no_page_outside_drafts_has_an_open_todo():
    for section, page in scaffold.nav_pages((ROOT / "mkdocs.yml").read_text(encoding="utf-8")):
        path = ROOT / "docs" / page
        if section == scaffold.DRAFTS or not path.is_file():
            continue
        todos = scaffold.open_todos(path.read_text(encoding="utf-8"))
        assert not todos, f"docs/{page} is under {section!r} but has TODO(chapter) boxes: {todos}"


def test_the_guides_example_names_are_free_on_a_fresh_clone():
    """The first command CONTRIBUTING shows must work as typed: its NAME is valid and unused."""
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    names = set(re.findall(r"make chapter NAME=([\w-]+)", text))
    assert names, "CONTRIBUTING.md shows no `make chapter NAME=...` command"
    for name in names:
        scaffold.check_name(scaffold.normalize_name(name), ROOT)
