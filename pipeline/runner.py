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

import contextlib
import fcntl
import functools
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
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
RUN_SECONDS = "run-seconds"  # in a result's folder: how long the run took
STATUS = "run-status.json"  # written by a script run into its folder (removed when published)
# snippets already run in parallel, one per core: a multi-threaded BLAS in each of them only
# oversubscribes the cores (a small matmul measured 15x slower that way)
_ENV_ONE_THREAD = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


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
    if _DIGESTS is None:
        return hashlib.sha256(file.read_bytes()).digest()
    if file not in _DIGESTS:
        _DIGESTS[file] = hashlib.sha256(file.read_bytes()).digest()
    return _DIGESTS[file]


def cache_key(path: Path) -> str:
    """Hash of the snippet, the library, the pinned requirements, the runner and Python."""
    digest = hashlib.sha256(sys.version.encode())
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


def _kernel_path() -> list[str]:
    """snippets/ (gradlab), snippets/frameworks/ (the modules framework scripts import), and the
    caller's PYTHONPATH."""
    return [str(SNIPPETS), str(FRAMEWORKS), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]


def _execute(path: Path, folder: Path, args: tuple[str, ...] = ()) -> None:
    """Execute the snippet as a notebook with its output folder set to ``folder``."""
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError

    kernel_env = {
        **os.environ,
        "GRADLAB_SNIPPET_NAME": path.stem,  # read by gradlab.snippet.parse()
        "GRADLAB_SNIPPET_ARGV": shlex.join(["--out", str(folder), *args]),
        "PYTHONPATH": os.pathsep.join(_kernel_path()),  # the kernel imports gradlab from snippets/
        "MPLBACKEND": "module://matplotlib_inline.backend_inline",
        **_ENV_ONE_THREAD,
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
    if _is_complete(final, path, args):
        return Result(path.stem, final, 0.0, cached=True)
    if args:
        return run_scripts(path, [tuple(args)], cache)[0]
    with _exclusive(cache, path, key, "notebook"):
        if _is_complete(final, path, args):  # another process ran it while we waited
            return Result(path.stem, final, 0.0, cached=True)
        temporary = _temporary(home, key)
        start = time.perf_counter()
        try:
            _execute(path, temporary, tuple(args))
        except BaseException:
            shutil.rmtree(temporary, ignore_errors=True)
            raise
        return _publish(path, home, key, temporary, time.perf_counter() - start)


@contextlib.contextmanager
def _exclusive(cache: Path, path: Path, key: str, kind: str):
    """Hold the lock of one snippet's runs of one key: a process (a build, a test session, a
    pytest-xdist worker, ``make check``) that needs the same runs waits for them and reads the
    result, instead of running them a second time beside the first."""
    folder = Path(cache) / ".locks"
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / f"{path.stem}-{key}-{kind}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _is_complete(final: Path, path: Path, args) -> bool:
    """A result is there: its numbers, and for the site's run (no arguments) its notebook."""
    return (final / "numbers.json").exists() and (bool(args) or (final / f"{path.stem}.ipynb").exists())


def _temporary(home: Path, key: str) -> Path:
    temporary = home / f"{key}.tmp-{os.getpid()}"
    shutil.rmtree(temporary, ignore_errors=True)
    temporary.mkdir(parents=True)
    return temporary


def _publish(path: Path, home: Path, key: str, temporary: Path, seconds: float) -> Result:
    """Rename a finished run into place (with its time) and remove the results of earlier keys."""
    final = home / key
    (temporary / RUN_SECONDS).write_text(f"{seconds:.2f}\n", encoding="utf-8")
    for old in home.iterdir():  # results of earlier keys are stale: remove them
        if old not in (temporary, final) and not old.name.startswith(f"{key}.tmp-"):
            shutil.rmtree(old, ignore_errors=True)
    try:
        temporary.rename(final)
    except OSError:  # another process finished the same key first: keep its result
        shutil.rmtree(temporary, ignore_errors=True)
    return Result(path.stem, final, seconds, cached=False)


def last_seconds(path: Path, cache: Path = CACHE, args: tuple[str, ...] = ()) -> float:
    """How long the snippet's latest run with these arguments took (0 if never run; a result of
    an earlier key counts until the new one replaces it): the pool starts the longest runs
    first, so that no core idles at the end while one long run finishes."""
    times = []
    for file in _home(Path(path), cache, args).glob(f"*/{RUN_SECONDS}"):
        try:
            times.append(float(file.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            pass
    return max(times, default=0.0)


def run_scripts(path: Path, runs: list[tuple[str, ...]], cache: Path = CACHE) -> list:
    """Run one snippet as a script, once per tuple of arguments in ``runs`` (other seeds, the
    exercises' settings), one after another in ONE Python process: the interpreter, numpy,
    matplotlib and PyTorch or JAX are imported once, not once per run. Each run executes the
    script afresh (``runpy``, new globals) with its own ``--out`` and arguments, exactly as
    ``python snippets/NAME.py ARGS`` does; only a notebook needs a kernel, and only the site's
    run (no arguments) is published as one. Returns a Result or a SnippetError per run."""
    path = Path(path).resolve()
    key = cache_key(path)
    with _exclusive(cache, path, key, "scripts"):
        return _run_scripts(path, key, runs, cache)


def _run_scripts(path: Path, key: str, runs: list[tuple[str, ...]], cache: Path) -> list:
    outcomes: dict[tuple, object] = {}
    todo = []
    for args in runs:
        final = _home(path, cache, args) / key
        if _is_complete(final, path, args):
            outcomes[args] = Result(path.stem, final, 0.0, cached=True)
        else:
            todo.append((args, _temporary(_home(path, cache, args), key)))
    if todo:
        limit = time_limit(path)
        plan = [[str(folder), list(args)] for args, folder in todo]
        command = [sys.executable, "-m", "pipeline.runner", "--scripts", str(path), json.dumps(plan)]
        env = {**os.environ, **_ENV_ONE_THREAD, "MPLBACKEND": "Agg"}
        env["PYTHONPATH"] = os.pathsep.join(_kernel_path())
        try:
            done = subprocess.run(
                command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=limit * len(todo) + 60
            )
            output = done.stdout[-2000:] + done.stderr[-4000:]
        except subprocess.TimeoutExpired:
            output = f"{_shown(path)}: ran past {limit} s and did not stop"
        for args, folder in todo:
            status_file = folder / STATUS
            status = json.loads(status_file.read_text("utf-8")) if status_file.exists() else None
            if status is not None and status.get("error") is None:
                status_file.unlink()
                home = _home(path, cache, args)
                outcomes[args] = _publish(path, home, key, folder, status["seconds"])
                continue
            shutil.rmtree(folder, ignore_errors=True)
            message = status["error"] if status else f"{_shown(path)}: the run did not finish\n{output}"
            outcomes[args] = SnippetError(message)
    return [outcomes[tuple(args)] for args in runs]


def _shown(path: Path):
    return path.relative_to(ROOT) if path.is_relative_to(ROOT) else path


class _PastLimit(BaseException):
    """Raised in a script run by the alarm at its time limit (not catchable as an Exception)."""


def _script_worker(path: Path, plan: list) -> int:
    """``python -m pipeline.runner --scripts PATH PLAN``: the runs of :func:`run_scripts`."""
    import contextlib
    import io
    import runpy
    import signal
    import traceback

    sys.path[:0] = _kernel_path()
    limit = time_limit(path)

    def alarm(*_):
        raise _PastLimit

    signal.signal(signal.SIGALRM, alarm)
    for folder, args in plan:
        argv = ["--out", folder, *args]
        os.environ["GRADLAB_SNIPPET_NAME"] = path.stem
        os.environ["GRADLAB_SNIPPET_ARGV"] = shlex.join(argv)
        sys.argv = [str(path), *argv]
        start = time.perf_counter()
        error = None
        printed, complaints = io.StringIO(), io.StringIO()  # the tables; stderr for a failure
        signal.setitimer(signal.ITIMER_REAL, limit)
        try:
            with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(complaints):
                runpy.run_path(str(path), run_name="__main__")
        except SystemExit as exit_:
            if exit_.code not in (None, 0):
                said = complaints.getvalue().strip()
                error = f"{_shown(path)}: exited with status {exit_.code}" + (f": {said}" if said else "")
        except _PastLimit:
            error = f"{_where_in(path, traceback.extract_tb(sys.exc_info()[2]))}: ran past {limit} s (here)"
        except BaseException as failure:  # the message names the snippet's line, as a notebook's does
            frames = traceback.extract_tb(failure.__traceback__)
            text = "".join(traceback.format_exception(failure))
            error = f"{_where_in(path, frames)}: {type(failure).__name__}: {failure}\n{text}"
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        if "matplotlib.pyplot" in sys.modules:
            sys.modules["matplotlib.pyplot"].close("all")
        if error is None and not (Path(folder) / "numbers.json").exists():
            error = f"{_shown(path)}: finished without results.save() (no numbers.json)"
        status = {"error": error, "seconds": time.perf_counter() - start}
        (Path(folder) / STATUS).write_text(json.dumps(status), encoding="utf-8")
    return 0


def _where_in(path: Path, frames) -> str:
    """``snippets/NAME.py:LINE`` of the snippet's innermost frame in a traceback."""
    lines = [frame.lineno for frame in frames if Path(frame.filename).resolve() == path]
    return f"{_shown(path)}:{lines[-1]}" if lines else str(_shown(path))


def _run_task(path: Path, cache: Path, runs: list[tuple[str, ...]]) -> list:
    """One pool task: the site's run of a snippet as a notebook, or all of its runs with
    arguments as scripts in one process. A SnippetError is returned, not raised."""
    if runs == [()]:
        try:
            return [run_one(path, cache)]
        except SnippetError as error:
            return [error]
    return run_scripts(path, runs, cache)


def _say(progress: bool, line: str) -> None:
    if progress:
        print(line, file=sys.stderr, flush=True)


def run_many(requests, cache: Path = CACHE, jobs: int | None = None, progress: bool = True) -> dict:
    """Run every ``(path, args)`` in ``requests`` that is not cached, in ONE pool across the cores:
    each site's run as a notebook, and each snippet's runs with arguments (other seeds, the
    exercises' settings) as scripts in one process per snippet. The longest tasks (by their
    previous run's time) start first. Returns ``{(name, args): Result or SnippetError}``.
    ``progress``: one line per run (done in N s / failed) and a summary, on stderr."""
    requests = [(Path(path), tuple(args)) for path, args in requests]
    jobs = jobs or os.cpu_count() or 1
    stale = [(p, a) for p, a in requests if not _is_complete(_home(p, cache, a) / cache_key(p), p, a)]
    tasks: dict[tuple, list] = {}  # (path, notebook?) -> the arguments of its runs
    for path, args in stale:
        runs = tasks.setdefault((path, not args), [])
        if args not in runs:
            runs.append(args)
    order = sorted(tasks, key=lambda t: -sum(last_seconds(t[0], cache, a) for a in tasks[t]))
    if stale:
        kinds = sorted({" ".join(a) or "site" for _, a in stale})
        _say(
            progress,
            f"snippets: {len(requests) - len(stale)} cached, running {len(stale)} "
            f"({', '.join(kinds)}) on {min(jobs, len(tasks))} core(s)",
        )
    start = time.perf_counter()
    outcomes: dict[tuple, object] = {}

    def report(path: Path, runs: list, results: list) -> None:
        for args, outcome in zip(runs, results, strict=True):
            outcomes[(path.stem, args)] = outcome
            label = f"{path.stem} {' '.join(args)}".strip()
            if isinstance(outcome, SnippetError):
                _say(progress, f"  failed   {label}: {str(outcome).splitlines()[0]}")
            elif not outcome.cached:
                _say(progress, f"  done     {label:<40} {outcome.seconds:6.1f} s")

    if len(tasks) <= 1 or jobs == 1:
        for path, notebook in order:
            report(path, tasks[(path, notebook)], _run_task(path, cache, tasks[(path, notebook)]))
    else:
        with ProcessPoolExecutor(max_workers=min(jobs, len(tasks))) as pool:
            futures = {pool.submit(_run_task, t[0], cache, tasks[t]): t for t in order}
            for future in as_completed(futures):
                path, notebook = futures[future]
                report(path, tasks[(path, notebook)], future.result())
    failures = [o for o in outcomes.values() if isinstance(o, SnippetError)]
    if stale:
        _say(
            progress,
            f"snippets: {len(stale) - len(failures)} ran, {len(failures)} failed, "
            f"{time.perf_counter() - start:.1f} s",
        )
    for path, args in requests:  # the cached ones
        if (path.stem, args) not in outcomes:
            outcomes[(path.stem, args)] = Result(
                path.stem, _home(path, cache, args) / cache_key(path), 0.0, True
            )
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
    if argv[:1] == ["--scripts"]:  # a worker of run_scripts
        return _script_worker(Path(argv[1]).resolve(), json.loads(argv[2]))
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
