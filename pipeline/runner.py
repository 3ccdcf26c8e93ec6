"""Run every snippet once, as a notebook, and cache what it produced.

This is a plain module: the MkDocs hook (``pipeline/hooks.py``) calls :func:`run_all`, the
tests call it, and ``python -m pipeline.runner [NAME ...]`` runs it by itself.

A snippet's result lives in ``.cache/snippets/NAME/KEY/``: the executed notebook, its
``numbers.json`` and its figures. ``KEY`` hashes everything that can change the result: the
snippet, every file of the project library (``snippets/gradlab``), the pinned requirements, this
runner and the Python version. An unchanged snippet is therefore never re-run, and a result is
only ever read from the folder of its current key: a stale result cannot be published. A run
writes into a temporary folder that is renamed into place only when the run succeeded.
"""

import hashlib
import json
import os
import re
import shlex
import shutil
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SNIPPETS = ROOT / "snippets"
LIBRARY = SNIPPETS / "gradlab"
FRAMEWORKS = SNIPPETS / "frameworks"  # PyTorch and JAX scripts, and modules they import
CACHE = ROOT / ".cache" / "snippets"
HASHED_FILES = [ROOT / "requirements.txt", Path(__file__).resolve()]
TIMEOUT_SECONDS = 300  # a snippet's limit; a line "# timeout: N" in the snippet sets its own
TIMEOUT_LINE = re.compile(r"^# timeout: (\d+)\s*$", re.M)


class SnippetError(Exception):
    """A snippet failed to run: the message names its file, line and traceback."""


@dataclass(frozen=True)
class Result:
    name: str
    folder: Path  # .cache/snippets/NAME/KEY
    seconds: float  # run time; 0.0 when read from the cache
    cached: bool

    @property
    def notebook(self) -> Path:
        return self.folder / f"{self.name}.ipynb"

    @property
    def document(self) -> dict:
        return json.loads((self.folder / "numbers.json").read_text(encoding="utf-8"))

    @property
    def numbers(self) -> dict:
        """``{key: value}`` of every number the snippet recorded."""
        return {key: entry["value"] for key, entry in self.document["numbers"].items()}

    @property
    def claims(self) -> dict:
        """``{name: {"holds": bool, "statement": str}}`` of every claim the snippet checked."""
        return self.document.get("claims", {})

    @property
    def twins(self) -> dict:
        """``{key: {"of": "snippet.key", "rtol", "atol", "reason"}}`` of a framework script."""
        return self.document.get("twins", {})

    @property
    def figures(self) -> dict:
        """``{key: {"alt": ..., "title": ...}}``; files are ``key.svg`` and ``key-dark.svg``."""
        return self.document["figures"]


def is_snippet(path: Path) -> bool:
    """A snippet ends with ``results.save()``; other files (``frameworks/probe_torch.py``) are
    modules that snippets import."""
    return not path.name.startswith("_") and re.search(r"^results\.save\(\)", path.read_text("utf-8"), re.M)


def snippet_paths(folder: Path = SNIPPETS) -> list[Path]:
    """Every snippet: the ``*.py`` files directly in ``snippets/`` not starting with ``_``, and
    the framework scripts in ``snippets/frameworks/`` (names are unique across both)."""
    paths = [p for p in Path(folder).glob("*.py") if not p.name.startswith("_")]
    if Path(folder) == SNIPPETS:
        paths += [p for p in FRAMEWORKS.glob("*.py") if is_snippet(p)]
    return sorted(paths, key=lambda p: p.stem)


def snippet_path(name: str) -> Path:
    """``snippets/NAME.py``, or ``snippets/frameworks/NAME.py`` for a framework script."""
    framework = FRAMEWORKS / f"{name}.py"
    return (
        framework
        if framework.exists() and not (SNIPPETS / f"{name}.py").exists()
        else SNIPPETS / f"{name}.py"
    )


def framework_modules() -> list[Path]:
    """The modules in ``snippets/frameworks/`` that framework scripts import (not snippets)."""
    return sorted(p for p in FRAMEWORKS.glob("*.py") if not is_snippet(p))


def cache_key(path: Path) -> str:
    """Hash of the snippet, the library, the pinned requirements, the runner and Python."""
    digest = hashlib.sha256(sys.version.encode())
    library = sorted(LIBRARY.rglob("*.py"))
    if Path(path).resolve().parent == FRAMEWORKS.resolve():
        library += framework_modules()
    for file in [Path(path), *library, *HASHED_FILES]:
        digest.update(file.name.encode())
        digest.update(file.read_bytes())
    return digest.hexdigest()[:16]


def to_notebook(path: Path):
    """Read a percent-format script as a notebook; its docstring becomes a Markdown cell whose
    first line is the notebook's title (a heading)."""
    import jupytext
    import nbformat

    notebook = jupytext.read(path)
    first = notebook.cells[0] if notebook.cells else None
    source = first.source if first is not None and first.cell_type == "code" else ""
    docstring = re.fullmatch(r'\s*r?"""(.*?)"""\s*', source, re.S)
    if docstring:
        title, _, rest = docstring.group(1).strip().partition("\n")
        text = f"# {title.strip().rstrip('.')}\n\n{rest.strip()}".strip()  # the page's heading
        notebook.cells[0] = nbformat.v4.new_markdown_cell(text)
    setup = next((c for c in notebook.cells if c.cell_type == "code" and "snippet.parse(" in c.source), None)
    if setup is not None:  # imports and argparse: the notebook page folds this cell away
        setup.metadata.setdefault("tags", []).append("setup")
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    return notebook


def _cell_line(path: Path, notebook, cell_index: int) -> int:
    """The 1-based line in ``path`` where the source of cell ``cell_index`` starts."""
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("# %%")]
    preamble = lines[: starts[0]] if starts else lines
    if any(line.strip() for line in preamble):
        starts.insert(0, -1)  # text before the first marker is a cell of its own
    marker = starts[cell_index] if cell_index < len(starts) else 0
    first = (notebook.cells[cell_index].source.splitlines() or [""])[0]
    for number in range(marker + 1, len(lines)):
        if lines[number] == first:
            return number + 1
    return marker + 2


def _error_message(path: Path, notebook, error) -> str:
    """``snippets/NAME.py:LINE: ExcType: message`` and the traceback, without colour codes."""
    for index, cell in enumerate(notebook.cells):
        for output in cell.get("outputs", []):
            if output.get("output_type") != "error":
                continue
            text = re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(output["traceback"]))
            hits = re.findall(r"Cell In\[\d+\], line (\d+)", text)  # the frame in the cell
            line = _cell_line(path, notebook, index) + (int(hits[-1]) - 1 if hits else 0)
            where = f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}:{line}"
            return f"{where}: {output['ename']}: {output['evalue']}\n{text}"
    return f"{path}: {error}"


def time_limit(path: Path) -> int:
    """The snippet's limit in seconds: its ``# timeout: N`` line, else ``TIMEOUT_SECONDS``."""
    match = TIMEOUT_LINE.search(Path(path).read_text(encoding="utf-8"))
    return int(match.group(1)) if match else TIMEOUT_SECONDS


def _where(path: Path, notebook, cell_index: int) -> str:
    shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    return f"{shown}:{_cell_line(path, notebook, cell_index)}"


def _execute(path: Path, folder: Path, args: tuple[str, ...] = ()) -> None:
    """Execute the snippet as a notebook with its output folder set to ``folder``."""
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError

    paths = [
        str(SNIPPETS),
        str(FRAMEWORKS),
        *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep)),
    ]
    kernel_env = {
        **os.environ,
        "GRADLAB_SNIPPET_NAME": path.stem,  # read by gradlab.snippet.parse()
        "GRADLAB_SNIPPET_ARGV": shlex.join(["--out", str(folder), *args]),
        "PYTHONPATH": os.pathsep.join(paths),  # the kernel imports gradlab from snippets/
        "MPLBACKEND": "module://matplotlib_inline.backend_inline",
        # snippets already run in parallel, one per core: a multi-threaded BLAS in each of
        # them only oversubscribes the cores (a small matmul measured 15x slower that way)
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
    }
    notebook = to_notebook(path)
    limit, start, current = time_limit(path), time.monotonic(), [0]

    def remaining(cell) -> int:  # the limit is the snippet's, not each cell's
        return max(1, round(limit - (time.monotonic() - start)))

    def started(cell, cell_index, **_):
        current[0] = cell_index

    client = NotebookClient(
        notebook,
        timeout_func=remaining,
        on_cell_start=started,
        kernel_name="python3",
        extra_arguments=["--IPKernelApp.log_level=ERROR"],  # not the TCP-encryption notice
        allow_errors=False,  # a failing cell fails the build, it is never rendered
        resources={"metadata": {"path": str(ROOT)}},
    )
    try:
        client.execute(env=kernel_env)
    except CellExecutionError as error:
        raise SnippetError(_error_message(path, notebook, error)) from None
    except (CellTimeoutError, TimeoutError):
        raise SnippetError(
            f"{_where(path, notebook, current[0])}: ran past {limit} s (the cell starting here)"
        ) from None
    if not (folder / "numbers.json").exists():
        raise SnippetError(f"{path}: finished without results.save() (no numbers.json)")
    import nbformat

    nbformat.write(notebook, folder / f"{path.stem}.ipynb")


def _home(path: Path, cache: Path, args: tuple[str, ...]) -> Path:
    """``cache/NAME``; a run with extra arguments (another seed) lives beside it, in its own."""
    if not args:
        return Path(cache) / path.stem
    return Path(cache) / f"{path.stem}@{re.sub(r'[^A-Za-z0-9.=-]+', '_', '_'.join(args))}"


def run_one(path: Path, cache: Path = CACHE, args: tuple[str, ...] = ()) -> Result:
    """Run one snippet (with extra command-line ``args``, e.g. ``("--seed", "1")``) unless its
    current result is cached; return the result."""
    path = Path(path).resolve()
    key = cache_key(path)
    home = _home(path, cache, args)
    final = home / key
    if (final / "numbers.json").exists() and (final / f"{path.stem}.ipynb").exists():
        return Result(path.stem, final, 0.0, cached=True)
    temporary = home / f"{key}.tmp-{os.getpid()}"
    shutil.rmtree(temporary, ignore_errors=True)
    temporary.mkdir(parents=True)
    start = time.perf_counter()
    try:
        _execute(path, temporary, tuple(args))
    except BaseException:
        shutil.rmtree(temporary, ignore_errors=True)
        raise
    seconds = time.perf_counter() - start
    for old in home.iterdir():  # results of earlier keys are stale: remove them
        if old not in (temporary, final) and not old.name.startswith(f"{key}.tmp-"):
            shutil.rmtree(old, ignore_errors=True)
    try:
        temporary.rename(final)
    except OSError:  # another process finished the same key first: keep its result
        shutil.rmtree(temporary, ignore_errors=True)
    return Result(path.stem, final, seconds, cached=False)


def _run_quietly(path: Path, cache: Path, args: tuple[str, ...] = ()):
    try:
        return run_one(path, cache, args)
    except SnippetError as error:
        return error


def _say(progress: bool, line: str) -> None:
    if progress:
        print(line, file=sys.stderr, flush=True)


def run_all(
    paths=None,
    cache: Path = CACHE,
    jobs: int | None = None,
    args: tuple[str, ...] = (),
    strict: bool = True,
    progress: bool = True,
) -> dict:
    """Run every snippet (in parallel across cores), each with the extra ``args``.

    ``strict``: raise one SnippetError naming all failures; otherwise map a failed snippet's
    name to its SnippetError, so one broken snippet fails only what depends on it.
    ``progress``: one line per snippet that runs (done in N s / failed) and a summary, on stderr.
    """
    paths = snippet_paths() if paths is None else [Path(p) for p in paths]
    jobs = jobs or os.cpu_count() or 1
    stale = [p for p in paths if not (_home(p, cache, args) / cache_key(p) / "numbers.json").exists()]
    label = f" ({' '.join(args)})" if args else ""
    if stale:
        _say(
            progress,
            f"snippets{label}: {len(paths) - len(stale)} cached, "
            f"running {len(stale)} on {min(jobs, len(stale))} core(s)",
        )
    start = time.perf_counter()
    outcomes: dict[str, object] = {}

    def report(path: Path, outcome) -> None:
        outcomes[path.stem] = outcome
        if isinstance(outcome, SnippetError):
            _say(progress, f"  failed   {path.stem}: {str(outcome).splitlines()[0]}")
        elif not outcome.cached:
            _say(progress, f"  done     {path.stem:<28} {outcome.seconds:6.1f} s")

    if len(stale) <= 1 or jobs == 1:
        for path in paths:
            report(path, _run_quietly(path, cache, args))
    else:
        with ProcessPoolExecutor(max_workers=min(jobs, len(stale))) as pool:
            futures = {pool.submit(_run_quietly, p, cache, tuple(args)): p for p in paths}
            for future in as_completed(futures):
                report(futures[future], future.result())
    failures = [str(o) for o in outcomes.values() if isinstance(o, SnippetError)]
    if stale:
        _say(
            progress,
            f"snippets{label}: {len(stale) - len(failures)} ran, {len(failures)} failed, "
            f"{time.perf_counter() - start:.1f} s",
        )
    if failures and strict:
        raise SnippetError(f"{len(failures)} snippet(s) failed:\n\n" + "\n\n".join(failures))
    return {path.stem: outcomes[path.stem] for path in paths}


def main(argv: list[str]) -> int:
    names = set(argv)
    paths = [p for p in snippet_paths() if not names or p.stem in names]
    unknown = names - {p.stem for p in paths}
    if unknown:
        print(f"unknown snippet(s): {', '.join(sorted(unknown))}", file=sys.stderr)
        return 2
    try:
        results = run_all(paths)
    except SnippetError as error:
        print(error, file=sys.stderr)
        return 1
    for result in results.values():
        state = "cached" if result.cached else f"{result.seconds:6.2f} s"
        print(f"{result.name:<32} {state:>9}  {result.folder.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
