"""Run every snippet once, as a notebook, and cache what it produced.

This is a plain module: the MkDocs hook (``pipeline/hooks.py``) calls :func:`run_many`, the
tests call it, and ``python -m pipeline.runner [NAME ...]`` runs it by itself. The runs
themselves happen in warm server processes, one per core (``pipeline/executor.py``).

A snippet's result lives in ``.cache/snippets/NAME/KEY/``: the executed notebook, its
``numbers.json`` and its figures. ``KEY`` hashes everything that can change the result: the
snippet, every file of the project library (``snippets/gradlab``), the pinned requirements,
this runner and its executor, and the Python version. An unchanged snippet is therefore never
re-run, and a result is only ever read from the folder of its current key: a stale result
cannot be published. A run writes into a temporary folder that is renamed into place only when
the run succeeded; publishing removes the results of earlier keys once they are old enough that
no process that started before the edit can still be reading them.
"""

import contextlib
import fcntl
import functools
import hashlib
import json
import os
import queue
import re
import shutil
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SNIPPETS = ROOT / "snippets"
LIBRARY = SNIPPETS / "gradlab"
FRAMEWORKS = SNIPPETS / "frameworks"  # PyTorch and JAX scripts, and modules they import
CACHE = ROOT / ".cache" / "snippets"
HASHED_FILES = [
    ROOT / "requirements.txt",
    Path(__file__).resolve(),
    ROOT / "pipeline" / "executor.py",
    ROOT / "pipeline" / "blas.py",
]
TIMEOUT_SECONDS = 300  # a snippet's limit; a line "# timeout: N" in the snippet sets its own
TIMEOUT_LINE = re.compile(r"^# timeout: (\d+)\s*$", re.M)
RUN_SECONDS = "run-seconds"  # in a result's folder: how long the run took
# an earlier key's result is marked when a newer one is published, and removed by a publish this
# long after: longer than a build or test session that may still read it, short enough not to pile up
STALE_AFTER_SECONDS = 15 * 60
SUPERSEDED = "superseded"  # the mark, a file in the result's folder


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

    @functools.cached_property  # a published result's folder never changes: read it once
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
    def reads_seed(self) -> bool:
        """Whether the run read ``--seed`` (a run that never does gives every seed's numbers)."""
        return self.document.get("reads_seed", True)

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


_DIGESTS: dict[Path, bytes] | None = None  # inside files_unchanged(): each file hashed once


@contextlib.contextmanager
def files_unchanged():
    """While one build checks its ~90 runs' keys, hash each file once, not once per run (the
    library's files are in every key): 0.25 s of every rebuild under `mkdocs serve`. Only for a
    span in which the files do not change; outside it every call reads the file again."""
    global _DIGESTS
    _DIGESTS = {}
    try:
        yield
    finally:
        _DIGESTS = None


def _file_digest(file: Path) -> bytes:
    digests = _DIGESTS  # read once: another thread (the tests' other seeds) may end the span
    if digests is None:
        return hashlib.sha256(file.read_bytes()).digest()
    if file not in digests:
        digests[file] = hashlib.sha256(file.read_bytes()).digest()
    return digests[file]


def cache_key(path: Path) -> str:
    """Hash of the snippet, the library, the pinned requirements, the runner, Python and the
    OpenBLAS kernels the runs ask for (pipeline/blas.py)."""
    from pipeline import blas

    digest = hashlib.sha256(f"{sys.version} {blas.cache_part()}".encode())
    library = sorted(LIBRARY.rglob("*.py"))
    if Path(path).resolve().parent == FRAMEWORKS.resolve():
        library += framework_modules()
    for file in [Path(path), *library, *HASHED_FILES]:
        digest.update(file.name.encode())
        digest.update(_file_digest(file))
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


def cell_line(path: Path, notebook, cell_index: int) -> int:
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


def error_message(path: Path, notebook) -> str:
    """``snippets/NAME.py:LINE: ExcType: message`` and the traceback, without colour codes."""
    for index, cell in enumerate(notebook.cells):
        for output in cell.get("outputs", []):
            if output.get("output_type") != "error":
                continue
            text = re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(output["traceback"]))
            hits = re.findall(r"Cell In\[\d+\], line (\d+)", text)  # the frame in the cell
            line = cell_line(path, notebook, index) + (int(hits[-1]) - 1 if hits else 0)
            where = f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}:{line}"
            return f"{where}: {output['ename']}: {output['evalue']}\n{text}"
    return f"{path}: failed without an error output"


def time_limit(path: Path) -> int:
    """The snippet's limit in seconds: its ``# timeout: N`` line, else ``TIMEOUT_SECONDS``."""
    match = TIMEOUT_LINE.search(Path(path).read_text(encoding="utf-8"))
    return int(match.group(1)) if match else TIMEOUT_SECONDS


def _home(path: Path, cache: Path, args: tuple[str, ...]) -> Path:
    """``cache/NAME``; a run with extra arguments (another seed) lives beside it, in its own."""
    if not args:
        return Path(cache) / path.stem
    return Path(cache) / f"{path.stem}@{re.sub(r'[^A-Za-z0-9.=-]+', '_', '_'.join(args))}"


def run_one(path: Path, cache: Path = CACHE, args: tuple[str, ...] = ()) -> Result:
    """Run one snippet (with extra command-line ``args``, e.g. ``("--seed", "1")``) unless its
    current result is cached; return the result or raise its SnippetError."""
    path = Path(path).resolve()
    outcome = run_many([(path, tuple(args))], cache, jobs=1, progress=False)[(path.stem, tuple(args))]
    if isinstance(outcome, SnippetError):
        raise outcome
    return outcome


def run_scripts(path: Path, runs: list[tuple[str, ...]], cache: Path = CACHE) -> list:
    """Run one snippet once per tuple of arguments in ``runs`` (other seeds, the exercises'
    settings), one after another from one warm server (the libraries imported once). Returns a
    Result or a SnippetError per run."""
    path = Path(path).resolve()
    outcomes = run_many([(path, tuple(args)) for args in runs], cache, jobs=1, progress=False)
    return [outcomes[(path.stem, tuple(args))] for args in runs]


@contextlib.contextmanager
def _exclusive(cache: Path, path: Path, key: str, kind: str):
    """Hold the lock of one run of one key: a process (a build, a test session, a pytest-xdist
    worker, ``make check``) that needs the same run waits for it and reads the result, instead
    of running it a second time beside the first."""
    folder = Path(cache) / ".locks"
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / f"{kind}-{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _is_complete(final: Path, path: Path, args) -> bool:
    """A result is there: its numbers, and for the site's run (no arguments) its notebook."""
    return (final / "numbers.json").exists() and (bool(args) or (final / f"{path.stem}.ipynb").exists())


def _temporary(home: Path, key: str) -> Path:
    temporary = home / f"{key}.tmp-{os.getpid()}-{threading.get_ident()}"
    shutil.rmtree(temporary, ignore_errors=True)
    temporary.mkdir(parents=True)
    return temporary


def _publish(path: Path, home: Path, key: str, temporary: Path, seconds: float, args=()):
    """Rename a finished run into place (with its time) and remove what is stale beside it.
    Returns a Result, or a SnippetError if the result could not be put in place."""
    final = home / key
    (temporary / RUN_SECONDS).write_text(f"{seconds:.2f}\n", encoding="utf-8")
    _remove_stale(home, keep=(temporary, final))
    try:
        temporary.rename(final)
    except OSError as error:
        shutil.rmtree(temporary, ignore_errors=True)
        if not _is_complete(final, path, args):  # not another process's result of the same key
            from pipeline import executor

            return SnippetError(f"{executor.shown(path)}: could not store its result in {final}: {error}")
    return Result(path.stem, final, seconds, cached=False)


def _remove_stale(home: Path, keep) -> None:
    """Mark the results of earlier keys as superseded, and remove those marked over
    STALE_AFTER_SECONDS ago; remove the half-written results of runs whose process is gone. A
    result superseded a short while ago stays: a build or test session that started before the
    snippet changed may still hold it and read it (removing it at once failed such a build)."""
    now = time.time()
    for old in home.iterdir():
        if old in keep:
            continue
        try:
            if ".tmp-" in old.name:  # KEY.tmp-PID-THREAD: another run's, still being written?
                stale = not _process_alive(int(old.name.split(".tmp-")[1].split("-")[0]))
            else:
                marker = old / SUPERSEDED
                if not marker.exists():
                    marker.touch()  # from now on it is an earlier version's result
                    continue
                stale = now - marker.stat().st_mtime > STALE_AFTER_SECONDS
        except (OSError, ValueError):  # removed meanwhile by another process; not a run's name
            continue
        if stale:
            shutil.rmtree(old, ignore_errors=True)


def _still_current(final: Path) -> None:
    """A cached result that is current again (its snippet was changed back) is no longer an
    earlier version's: its mark goes."""
    (final / SUPERSEDED).unlink(missing_ok=True)


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        pass
    return True


def last_seconds(path: Path, cache: Path = CACHE, args: tuple[str, ...] = ()) -> float:
    """How long the snippet's latest run with these arguments took (0 if never run; a result of
    an earlier key counts until it is removed): the longest runs start first, so that
    no core idles at the end while one long run finishes."""
    times = []
    for file in _home(Path(path), cache, args).glob(f"*/{RUN_SECONDS}"):
        try:
            times.append(float(file.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            pass
    return max(times, default=0.0)


def _run_task(server, path: Path, args: tuple[str, ...], key: str, cache: Path):
    """One run on a warm server: the site's run (no arguments) as a notebook, a run with
    arguments as a script. Returns a Result or a SnippetError (not raised)."""
    home = _home(path, cache, args)
    final = home / key
    with _exclusive(cache, path, key, home.name):
        if _is_complete(final, path, args):  # another process ran it while we waited
            _still_current(final)
            return Result(path.stem, final, 0.0, cached=True)
        temporary = _temporary(home, key)
        error, seconds = server.run("script" if args else "notebook", path, temporary, args)
        if error is not None:
            shutil.rmtree(temporary, ignore_errors=True)
            return SnippetError(error)
        return _publish(path, home, key, temporary, seconds, args)


def _say(progress: bool, line: str) -> None:
    if progress:
        print(line, file=sys.stderr, flush=True)


def build_requests(docs: Path = ROOT / "docs") -> list[tuple[Path, tuple[str, ...]]]:
    """What a build runs: every snippet's site run, then each run with arguments that the pages
    in ``docs`` quote (``{{ name(--lr 0.05).key }}``) of a snippet that exists."""
    from pipeline import macros

    runs = set()
    for page in Path(docs).rglob("*.md"):
        runs |= macros.argument_runs(page.read_text(encoding="utf-8"))
    requests = [(path, ()) for path in snippet_paths()]
    return requests + [(snippet_path(n), args) for n, args in sorted(runs) if snippet_path(n).exists()]


def run_many(
    requests, cache: Path = CACHE, jobs: int | None = None, progress: bool = True, on_result=None
) -> dict:
    """Run every ``(path, args)`` in ``requests`` that is not cached, across the cores: one warm
    server per core (``pipeline/executor.py``: the libraries imported once, a fork per run),
    each site's run as a notebook, each run with arguments (other seeds, the exercises'
    settings) as a script. The longest runs (by their previous time) start first. Only one
    server imports PyTorch and JAX (~4 s of CPU each): it takes the framework scripts, and the
    others start on the numpy runs at once. Returns ``{(name, args): Result or SnippetError}``.
    ``on_result(run, outcome)`` is called in this thread as each run finishes, while the others
    go on (the build converts a notebook to HTML there). ``progress``: one line per run (done
    in N s / failed) and a summary, on stderr."""
    from pipeline import executor

    requests = [(Path(path).resolve(), tuple(args)) for path, args in requests]
    keys = {path: cache_key(path) for path, _ in requests}
    stale = []
    for path, args in requests:
        if (path, args) not in stale and not _is_complete(_home(path, cache, args) / keys[path], path, args):
            stale.append((path, args))
    stale.sort(key=lambda run: -last_seconds(run[0], cache, run[1]))
    jobs = min(jobs or os.cpu_count() or 1, len(stale))
    outcomes: dict[tuple, object] = {}
    if stale:
        kinds = sorted({" ".join(a) or "site" for _, a in stale})
        _say(
            progress,
            f"snippets: {len(requests) - len(stale)} cached, running {len(stale)} "
            f"({', '.join(kinds)}) on {jobs} core(s)",
        )
        needs = {path: executor.frameworks_of(path) for path, _ in stale}
        preload = set().union(*needs.values())
        start = time.perf_counter()
        # one server imports the frameworks, or every server when there are only framework runs
        loaded = jobs if all(needs[path] for path, _ in stale) else 1
        started = [executor.Server(preload if i < loaded else ()) for i in range(jobs)]
        pending = list(stale)  # longest first
        lock = threading.Lock()

        def next_run(server_index: int):
            """The longest pending run this server can take: a server with the frameworks
            loaded prefers the framework scripts (only it can run them fast); the others take
            numpy runs only."""
            with lock:
                for wanted in (True, False) if server_index < loaded else (False,):
                    for i, (path, _) in enumerate(pending):
                        if bool(needs[path]) == wanted:
                            return pending.pop(i)
            return None

        def work(server_index: int) -> None:
            while (run := next_run(server_index)) is not None:
                path, args = run
                try:
                    outcome = _run_task(started[server_index], path, args, keys[path], cache)
                except Exception as error:  # a bug here must not leave the caller waiting
                    outcome = SnippetError(f"{executor.shown(path)}: the runner failed: {error!r}")
                finished.put(((path, args), outcome))

        finished = queue.SimpleQueue()
        try:
            with ThreadPoolExecutor(max_workers=jobs) as pool:
                for i in range(jobs):
                    pool.submit(work, i)
                for _ in range(len(stale)):
                    (path, args), outcome = finished.get()
                    outcomes[(path.stem, args)] = outcome
                    label = f"{path.stem} {' '.join(args)}".strip()
                    if isinstance(outcome, SnippetError):
                        _say(progress, f"  failed   {label}: {str(outcome).splitlines()[0]}")
                    elif not outcome.cached:
                        _say(progress, f"  done     {label:<40} {outcome.seconds:6.1f} s")
                    if on_result is not None:
                        on_result((path.stem, args), outcome)
        finally:
            for server in started:
                server.close()
        failures = [o for o in outcomes.values() if isinstance(o, SnippetError)]
        _say(
            progress,
            f"snippets: {len(stale) - len(failures)} ran, {len(failures)} failed, "
            f"{time.perf_counter() - start:.1f} s",
        )
    for path, args in requests:  # the cached ones
        if (path.stem, args) not in outcomes:
            final = _home(path, cache, args) / keys[path]
            _still_current(final)
            outcomes[(path.stem, args)] = Result(path.stem, final, 0.0, True)
    return outcomes


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
    """
    paths = snippet_paths() if paths is None else [Path(p) for p in paths]
    outcomes = run_many([(p, tuple(args)) for p in paths], cache, jobs, progress)
    results = {path.stem: outcomes[(path.stem, tuple(args))] for path in paths}
    failures = [str(o) for o in results.values() if isinstance(o, SnippetError)]
    if failures and strict:
        raise SnippetError(f"{len(failures)} snippet(s) failed:\n\n" + "\n\n".join(failures))
    return results


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
