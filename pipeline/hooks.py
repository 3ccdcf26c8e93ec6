"""MkDocs hooks: the thin layer between MkDocs and the snippet runner.

* ``on_config``: run every snippet (cached; see ``runner.py``) and list their notebook pages in
  the navigation. A failing snippet fails the build with its file, line and traceback.
* ``on_files``: add the executed notebooks, the figures and MathJax to the site.
* ``on_page_markdown``: resolve ``{{ snippet.key }}`` numbers and ``{{ figure ... }}`` figures.
* ``on_post_page``: notebook pages are cleaned up by ``notebook_pages.py``.
"""

import os
import re
import shutil
import sys
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.plugins import event_priority
from mkdocs.structure.files import File

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from pipeline import macros, notebook_pages, runner

PAGES = runner.ROOT / ".cache" / "pages" / str(os.getpid())  # src_dir of the notebook pages
RESULTS: dict[str, runner.Result] = {}
NOTEBOOK_NAV_TITLE = "Run it yourself"


def _title(path: Path) -> str:
    """A snippet's title: the first line of its docstring."""
    match = re.match(r'\s*r?"""\s*(.+)', path.read_text(encoding="utf-8"))
    return match.group(1).strip().rstrip(".") if match else path.stem


def on_config(config):
    try:
        RESULTS.clear()
        RESULTS.update(runner.run_all())
    except runner.SnippetError as error:
        raise PluginError(f"a snippet failed, so nothing is published:\n{error}") from None
    notebooks = [{_title(runner.SNIPPETS / f"{name}.py"): f"notebooks/{name}.ipynb"} for name in RESULTS]
    nav = [entry for entry in (config.nav or []) if NOTEBOOK_NAV_TITLE not in entry]
    config.nav = [*nav, {NOTEBOOK_NAV_TITLE: notebooks}] if notebooks else nav
    return config


def _mathjax_files(config) -> list[File]:
    import mathjax

    source = Path(mathjax.__file__).parent / "static" / "mathjax" / "es5"
    wanted = [source / "tex-chtml.js", *source.glob("output/chtml/fonts/woff-v2/*.woff")]
    wanted += source.glob("input/tex/extensions/*.js")
    return [
        File.generated(
            config, f"assets/mathjax/{path.relative_to(source).as_posix()}", abs_src_path=str(path)
        )
        for path in wanted
    ]


@event_priority(100)  # before mkdocs-jupyter wraps the notebook files
def on_files(files, config):
    shutil.rmtree(PAGES / "notebooks", ignore_errors=True)
    (PAGES / "notebooks").mkdir(parents=True)
    for name, result in RESULTS.items():
        shutil.copyfile(result.notebook, PAGES / "notebooks" / f"{name}.ipynb")
        files.append(File(f"notebooks/{name}.ipynb", str(PAGES), config.site_dir, config.use_directory_urls))
        for key in result.figures:
            for stem in (key, f"{key}-dark"):
                path = result.folder / f"{stem}.svg"
                files.append(File.generated(config, f"figures/{name}/{stem}.svg", abs_src_path=str(path)))
    for file in _mathjax_files(config):
        files.append(file)
    return files


def on_page_markdown(markdown, page, config, files):
    try:
        return macros.substitute(markdown, RESULTS, page.file.src_uri)
    except macros.MacroError as error:
        raise PluginError(str(error)) from None


def _notebook_name(page) -> str | None:
    uri = page.file.src_uri
    return Path(uri).stem if uri.startswith("notebooks/") and uri.endswith(".ipynb") else None


def on_pre_page(page, config, files):
    name = _notebook_name(page)
    if name and config.repo_url and config.edit_uri:
        # the page is generated from the snippet: "edit this page" edits the snippet
        base = config.repo_url.rstrip("/") + "/" + config.edit_uri.strip("/")
        page.edit_url = re.sub(r"/docs$", "", base) + f"/snippets/{name}.py"
    return page


def on_post_page(output, page, config):
    name = _notebook_name(page)
    if name is None:
        return output
    return notebook_pages.clean(output, list(RESULTS[name].figures.values()))


def on_post_build(config):
    shutil.rmtree(PAGES, ignore_errors=True)
