"""MkDocs hooks: the thin layer between MkDocs and the snippet runner.

* ``on_config``: run every snippet (cached; see ``runner.py``) and list their notebook pages in
  the navigation. A failing snippet fails the build with its file, line and traceback.
* ``on_files``: add the executed notebooks, the figures and MathJax to the site.
* ``on_env``: Material's templates are compiled once, not in every build (a bytecode cache).
* ``on_page_markdown``: resolve ``{{ snippet.key }}`` numbers and ``{{ figure ... }}`` figures.
* ``on_post_page``: notebook pages are cleaned up by ``notebook_pages.py``; ``on_post_build``
  writes the notebook CSS they share.
* Material's search entries of a page are cached by what they are made of (``search_cache.py``).

Under ``mkdocs serve --dirty`` (``make serve``) only what changed is rebuilt: a notebook is copied
(keeping its time stamp) only when its content changed, and when a snippet's result changes, the
built pages that quote it are removed so that MkDocs rebuilds them too: a writer never previews
a stale number.
"""

import logging
import os
import re
import shutil
import sys
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.plugins import event_priority
from mkdocs.structure.files import File
from mkdocs.utils import get_relative_url

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from pipeline import macros, notebook_pages, runner, scaffold, search_cache

PAGES = runner.ROOT / ".cache" / "pages" / str(os.getpid())  # src_dir of the notebook pages
RESULTS: dict[str, runner.Result] = {}
ANSWERS: dict[tuple, runner.Result] = {}  # (name, args) -> a run with arguments
NOTEBOOK_NAV_TITLE = "Run it yourself"
COMMAND = {"name": "build", "dirty": False}  # set by on_startup
PREVIOUS: dict[str, Path] = {}  # snippet -> its result folder in the previous build (serve)


def _not_the_dirty_notice(record: logging.LogRecord) -> bool:
    return "A 'dirty' build is being performed" not in record.getMessage()


def on_startup(command, dirty):
    COMMAND.update(name=command, dirty=dirty)
    if dirty:  # `make serve` asks for it; in strict mode (mkdocs.yml) the notice would abort the build
        logging.getLogger("mkdocs.commands.build").addFilter(_not_the_dirty_notice)


def on_shutdown():
    shutil.rmtree(PAGES, ignore_errors=True)


def _title(path: Path) -> str:
    """A snippet's short title: its docstring's first line, up to a colon."""
    match = re.match(r'\s*r?"""\s*(.+)', path.read_text(encoding="utf-8"))
    return match.group(1).split(":")[0].strip().rstrip(".") if match else path.stem


def _chapter_order(config, names) -> list[str]:
    """Snippet names in the order the chapters in the navigation first quote them."""
    order = []
    for _, page in scaffold.walk_nav(config.nav):
        if page == "index.md":  # the start page quotes headline numbers out of chapter order
            continue
        path = Path(config.docs_dir) / page
        text = path.read_text(encoding="utf-8") if path.is_file() else ""
        for match in re.finditer(
            r"\{\{\s*(?:figure\s+)?([a-z][a-z0-9_]*)\.|notebooks/([a-z][a-z0-9_]*)\.ipynb", text
        ):
            name = match.group(1) or match.group(2)
            if name in names and name not in order:
                order.append(name)
    return order + sorted(set(names) - set(order))


def _run_snippets(config) -> None:
    """Every snippet's site run and the runs the exercises' answers quote
    (``{{ name(--lr 0.05).key }}``), in one pool across the cores, or their cached results."""
    RESULTS.clear()
    ANSWERS.clear()
    requests = runner.build_requests(Path(config.docs_dir))
    outcomes = runner.run_many(requests, on_result=notebook_pages.prerenderer(config))
    failures = [str(o) for o in outcomes.values() if isinstance(o, runner.SnippetError)]
    if failures:
        raise runner.SnippetError(f"{len(failures)} run(s) failed:\n\n" + "\n\n".join(failures))
    RESULTS.update({path.stem: outcomes[(path.stem, ())] for path, args in requests if not args})
    ANSWERS.update({(path.stem, args): outcomes[(path.stem, args)] for path, args in requests if args})


def on_config(config):
    if logging.getLogger("mkdocs").getEffectiveLevel() > logging.DEBUG:  # unless `mkdocs -v`
        logging.getLogger("mkdocs.plugins.mkdocs_jupyter").setLevel(logging.WARNING)  # "Copied ..."
        logging.getLogger("mkdocs.mkdocs-jupyter").setLevel(logging.WARNING)  # "Converting notebook ..."
    notebook_pages.STYLESHEETS.clear()  # left over if the previous build under `serve` failed
    notebook_pages.share_compiled_templates()  # for the notebooks converted when their page renders
    search_cache.install()  # a page's search entries are parsed from its HTML once, not every build
    notebook_pages.evict_without_racing(config, COMMAND["dirty"])  # two builds at once, dirty serve
    try:
        with runner.files_unchanged():  # the snippets' keys hash each file once
            _run_snippets(config)
    except runner.SnippetError as error:
        raise PluginError(f"a snippet failed, so nothing is published:\n{error}") from None
    notebooks = [
        {_title(runner.snippet_path(name)): f"notebooks/{name}.ipynb"}
        for name in _chapter_order(config, RESULTS)
    ]
    nav = [entry for entry in (config.nav or []) if NOTEBOOK_NAV_TITLE not in entry]
    if notebooks:  # after the chapters, before "Contributing"
        at = next((i for i, entry in enumerate(nav) if "Contributing" in entry), len(nav))
        nav.insert(at, {NOTEBOOK_NAV_TITLE: notebooks})
    config.nav = nav
    return config


@event_priority(100)  # before mkdocs-jupyter wraps the notebook files
def on_files(files, config):
    folder = PAGES / "notebooks"
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.ipynb"):
        if old.stem not in RESULTS:
            old.unlink()
    changed = {name for name, result in RESULTS.items() if PREVIOUS.get(name, result.folder) != result.folder}
    PREVIOUS.clear()
    PREVIOUS.update({name: result.folder for name, result in RESULTS.items()})
    if changed:  # a dirty rebuild must redo the pages that quote a changed result
        for page in files.documentation_pages():
            text = Path(page.abs_src_path).read_text(encoding="utf-8") if page.abs_src_path else ""
            if any(f"{name}." in text or f"{name}(" in text for name in changed):
                Path(page.abs_dest_path).unlink(missing_ok=True)
    for name, result in RESULTS.items():
        target = folder / f"{name}.ipynb"
        if not target.exists() or target.read_bytes() != result.notebook.read_bytes():
            shutil.copy2(result.notebook, target)  # unchanged notebooks keep their time stamp
        files.append(File(f"notebooks/{name}.ipynb", str(PAGES), config.site_dir, config.use_directory_urls))
        for key in result.figures:
            for stem in (key, f"{key}-dark"):
                path = result.folder / f"{stem}.svg"
                files.append(File.generated(config, f"figures/{name}/{stem}.svg", abs_src_path=str(path)))
        for key in macros.interactive_of(result):  # the frames of an interactive figure, fetched lazily
            path = result.folder / f"{key}.frames.json"
            files.append(File.generated(config, f"figures/{name}/{key}.frames.json", abs_src_path=str(path)))
    return files


def on_page_markdown(markdown, page, config, files):
    try:
        return macros.substitute(markdown, {**RESULTS, **ANSWERS}, page.file.src_uri)
    except macros.MacroError as error:
        raise PluginError(str(error)) from None


def on_env(env, config, files):
    env.bytecode_cache = notebook_pages.template_cache()  # Material's templates, compiled once
    return env


def _notebook_name(page) -> str | None:
    uri = page.file.src_uri
    return Path(uri).stem if uri.startswith("notebooks/") and uri.endswith(".ipynb") else None


def on_pre_page(page, config, files):
    name = _notebook_name(page)
    if name and config.repo_url and config.edit_uri:
        # the page is generated from the snippet: "edit this page" edits the snippet
        base = config.repo_url.rstrip("/") + "/" + config.edit_uri.strip("/")
        page.edit_url = (
            re.sub(r"/docs$", "", base) + "/" + runner.snippet_path(name).relative_to(runner.ROOT).as_posix()
        )
    return page


@event_priority(100)  # before Material's search plugin indexes the page
def on_page_context(context, page, config, nav):
    if _notebook_name(page):
        # the chapters carry the words; a notebook's code and outputs would triple the index
        page.meta["search"] = {"exclude": True}
    return context


def on_post_page(output, page, config):
    name = _notebook_name(page)
    if name is None:
        return output
    root = get_relative_url(".", page.url)  # the shared CSS and the figures live under the root
    return notebook_pages.clean_page(output, RESULTS[name].figures, root, name)


def on_post_build(config):
    notebook_pages.write_stylesheets(config.site_dir)
    if COMMAND["name"] != "serve":  # serve keeps its notebook copies for the next rebuild
        shutil.rmtree(PAGES, ignore_errors=True)
    if not COMMAND["dirty"]:  # a dirty rebuild renders only some pages: it cannot tell what is stale
        notebook_pages.evict_unused()
        search_cache.evict_unused()
