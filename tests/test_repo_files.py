"""The repository's own files: workflows and issue forms valid against GitHub's schemas, every
YAML file parseable, the addresses written once, the contributing page in sync, and the Colab
notebooks and page buttons working."""

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from conftest import ROOT
from hypothesis import settings

from pipeline import runner, scaffold

sys.path.insert(0, str(ROOT / ".github" / "scripts"))
import colab_notebooks

SKIPPED_DIRS = {".git", ".venv", ".cache", ".hypothesis", ".pytest_cache", ".ruff_cache", "site", "out"}
SKIPPED_DIRS |= {"node_modules", "__pycache__", "test-artifacts"}
TEXT_SUFFIXES = {
    ".md",
    ".py",
    ".yml",
    ".yaml",
    ".toml",
    ".txt",
    ".html",
    ".js",
    ".css",
    ".cfg",
    ".json",
    ".sh",
}
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
ISSUE_FORMS = sorted(p for p in (ROOT / ".github" / "ISSUE_TEMPLATE").glob("*.yml") if p.name != "config.yml")
CONFIG = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")


def repo_files(suffixes, names=()):
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in SKIPPED_DIRS]
        for name in files:
            path = Path(folder) / name
            if path.suffix in suffixes or name in names:
                yield path


def check_jsonschema(schema: str, paths) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "check_jsonschema", "--builtin-schema", schema, *map(str, paths)]
    return subprocess.run(command, capture_output=True, text=True)


def setting(key: str) -> str:
    return scaffold.load_yaml(CONFIG)[key]


# ----------------------------------------------------------------------------- schemas and YAML


def test_there_are_workflows_and_issue_forms():
    assert {p.name for p in WORKFLOWS} >= {"test.yml", "deploy.yml"}
    assert {p.name for p in ISSUE_FORMS} >= {"chapter-proposal.yml", "wrong-number.yml"}


@pytest.mark.parametrize(
    ("schema", "paths"),
    [
        ("vendor.github-workflows", WORKFLOWS),
        ("vendor.github-issue-forms", ISSUE_FORMS),
        ("vendor.github-issue-config", [ROOT / ".github" / "ISSUE_TEMPLATE" / "config.yml"]),
    ],
    ids=["workflows", "issue-forms", "issue-config"],
)
def test_github_files_match_their_schemas(schema, paths):
    checked = check_jsonschema(schema, paths)  # vendored schemas: works offline
    assert checked.returncode == 0, checked.stdout + checked.stderr


@pytest.mark.parametrize(
    "path",
    sorted(p.relative_to(ROOT).as_posix() for p in repo_files({".yml", ".yaml"})),
)
def test_every_yaml_file_parses(path):
    assert scaffold.load_yaml((ROOT / path).read_text(encoding="utf-8")) is not None, f"{path} is empty"


def test_the_test_workflow_runs_make_test_on_pull_requests():
    workflow = scaffold.load_yaml((ROOT / ".github" / "workflows" / "test.yml").read_text("utf-8"))
    assert "pull_request" in workflow[True]  # YAML 1.1 reads the key `on` as True
    steps = workflow["jobs"]["test"]["steps"]
    python = next(s for s in steps if s.get("uses", "").startswith("actions/setup-python"))
    assert python["with"]["python-version"] == "3.11" and python["with"]["cache"] == "pip"
    assert python["with"]["cache-dependency-path"] == "requirements*.txt"
    runs = "\n".join(s.get("run", "") for s in steps)
    assert "sudo apt-get install -y chromium-headless-shell" in runs and "make test" in runs


def test_make_test_tries_the_same_hypothesis_examples_on_every_run():
    """Derandomized, with no example database: a run cannot fail at random or on what an earlier
    run saved. `make fuzz` (and the weekly workflow) explores new seeds."""
    assert settings.default.derandomize and settings.default.database is None  # ("site", or derived from it)
    fuzz = scaffold.load_yaml((ROOT / ".github" / "workflows" / "fuzz.yml").read_text("utf-8"))
    assert "schedule" in fuzz[True] and "make fuzz" in fuzz["jobs"]["fuzz"]["steps"][-1]["run"]
    make = (ROOT / "Makefile").read_text(encoding="utf-8").split("\nfuzz:")[1].split("\n\n")[0]
    assert "--hypothesis-profile=explore" in make and "--hypothesis-seed=" in make


def test_the_deploy_workflow_builds_strictly_and_publishes_pages_from_main():
    workflow = scaffold.load_yaml((ROOT / ".github" / "workflows" / "deploy.yml").read_text("utf-8"))
    assert workflow[True]["push"]["branches"] == ["main"]
    assert workflow["concurrency"]["group"]
    jobs = workflow["jobs"]
    uses = {s.get("uses", "").split("@")[0] for job in jobs.values() for s in job["steps"]}
    assert {"actions/upload-pages-artifact", "actions/deploy-pages"} <= uses
    assert jobs["deploy"]["permissions"] == {"pages": "write", "id-token": "write"}
    assert "make build" in "\n".join(s.get("run", "") for s in jobs["build"]["steps"])
    assert "--strict" in (ROOT / "Makefile").read_text(encoding="utf-8").split("\nbuild:")[1].split("\n\n")[0]


def test_pre_commit_uses_the_pinned_ruff():
    pinned = re.search(r"^ruff==(\S+)", (ROOT / "requirements-dev.txt").read_text(), re.M).group(1)
    config = scaffold.load_yaml((ROOT / ".pre-commit-config.yaml").read_text(encoding="utf-8"))
    ruff = next(r for r in config["repos"] if r["repo"].endswith("/ruff-pre-commit"))
    assert ruff["rev"] == f"v{pinned}", f"ruff-pre-commit rev {ruff['rev']} != ruff=={pinned}"
    assert {hook["id"] for hook in ruff["hooks"]} == {"ruff-check", "ruff-format"}
    assert tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["ruff"], "ruff settings live there"


# ----------------------------------------------------------------------------- written once


def test_the_addresses_are_written_only_in_mkdocs_yml():
    repo_url = setting("repo_url").rstrip("/")
    owner_repo = repo_url.removeprefix("https://github.com/")
    site = setting("site_url").rstrip("/").removeprefix("https://")
    needles = [repo_url.removeprefix("https://"), site]
    if "/" in owner_repo:
        needles.append(owner_repo)
    offenders = []
    for path in repo_files(TEXT_SUFFIXES, names={"Makefile", "run", "LICENSE", "LICENSE-TEXT"}):
        if path == ROOT / "mkdocs.yml":
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        offenders += [f"{path.relative_to(ROOT)}: {n}" for n in needles if n in text]
    assert not offenders, "addresses belong in mkdocs.yml only (site_url, repo_url, edit_uri):\n" + "\n".join(
        offenders
    )


def test_the_contributing_page_is_contributing_md():
    page = (ROOT / "docs" / "contributing.md").read_text(encoding="utf-8")
    expected = scaffold.contributing_page((ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8"))
    assert page == expected, (
        "docs/contributing.md is stale: .venv/bin/python -m pipeline.scaffold --sync-contributing"
    )
    assert (scaffold.DRAFTS, "contributing.md") not in scaffold.nav_pages(CONFIG)
    assert ("Contributing", "contributing.md") in scaffold.nav_pages(CONFIG)


def test_contributing_starts_with_the_three_commands():
    head = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8").split("\n## ")[0]
    for command in ("make chapter NAME=", "make serve", "make test"):
        assert command in head, f"CONTRIBUTING.md must open with `{command}`"
    assert re.search(r"^chapter:.*## ", (ROOT / "Makefile").read_text(), re.M), "no `make chapter` target"


def test_the_licences_exist_and_the_readme_names_them():
    assert "MIT License" in (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert "Attribution 4.0 International" in (ROOT / "LICENSE-TEXT").read_text(encoding="utf-8")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "(LICENSE)" in readme and "(LICENSE-TEXT)" in readme
    assert "## [Unreleased]" in (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")


# ----------------------------------------------------------------------------- Colab and the buttons


def test_colab_notebooks_run_outside_the_repository(tmp_path):
    """The branch's notebook runs in a plain kernel, with gradlab from the branch itself."""
    numpy_only = [path for path in runner.snippet_paths() if path.parent == runner.SNIPPETS]
    shortest = min(numpy_only, key=lambda path: len(path.read_bytes()))
    result = runner.run_one(shortest, cache=tmp_path / "cache")  # its own cache: no race with a build
    name = result.name
    source = tmp_path / "site" / "notebooks" / name
    source.mkdir(parents=True)
    (source / f"{name}.ipynb").write_bytes(result.notebook.read_bytes())
    branch, names = colab_notebooks.build(tmp_path / "site", tmp_path / "branch", commit="a" * 40)
    assert names == [name] and branch == colab_notebooks.colab_branch()
    assert (tmp_path / "branch" / "gradlab" / "__init__.py").is_file()
    assert 'name = "gradlab"' in (tmp_path / "branch" / "pyproject.toml").read_text()

    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.read(tmp_path / "branch" / f"{name}.ipynb", as_version=4)
    nbformat.validate(notebook)
    setup = notebook.cells[1].source
    assert f"git+{setting('repo_url').rstrip('/')}@{branch}" in setup
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.outputs = []
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRADLAB_")}
    env["PYTHONPATH"] = str(tmp_path / "branch")  # what the setup cell's pip install provides
    workdir = tmp_path / "elsewhere"
    workdir.mkdir()
    client = NotebookClient(
        notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(workdir)}}
    )
    client.execute(env=env)
    assert (workdir / "out" / name / "numbers.json").is_file(), "the snippet did not save its numbers"
    numbers = json.loads((workdir / "out" / name / "numbers.json").read_text())["numbers"]
    assert {k: v["value"] for k, v in numbers.items()} == pytest.approx(result.numbers, rel=1e-6, abs=1e-6)


def test_notebook_pages_offer_the_download_and_colab(built_site):
    colab = (
        setting("repo_url")
        .rstrip("/")
        .replace("https://github.com/", "https://colab.research.google.com/github/")
    )
    branch = colab_notebooks.colab_branch()
    notebook_pages = sorted((built_site / "notebooks").glob("*/index.html"))
    assert notebook_pages
    for page in notebook_pages:
        name = page.parent.name
        html = page.read_text(encoding="utf-8")
        assert f'href="{colab}/blob/{branch}/{name}.ipynb"' in html, f"{name}: no Colab link"
        assert re.search(rf'href="{name}\.ipynb"\s+download', html), f"{name}: no .ipynb download"
        source = runner.snippet_path(name).relative_to(ROOT).as_posix()  # snippets/[frameworks/]NAME.py
        assert f"/{source}" in html, f"{name}: 'edit this page' must edit the snippet"
    index = (built_site / "index.html").read_text(encoding="utf-8")
    assert "data-colab-link" not in index and 'rel="edit"' in index
