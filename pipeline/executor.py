"""A warm process that runs snippets: it imports the heavy libraries once, then forks one child
per run.

Starting a Jupyter kernel for each notebook and a fresh interpreter for each script cost more
than most snippets compute: ~1 s for the kernel, ~0.8 s for matplotlib, ~1.5-3 s for PyTorch,
~1.3 s for JAX, paid again by every run. Here ``python -m pipeline.executor --preload torch,jax``
imports numpy, matplotlib, IPython, jupytext, gradlab (and the frameworks asked for) once; each run is a
``fork()`` of that process, so it starts with the libraries loaded and with nothing left over
from another run (its own globals, random state, matplotlib settings, torch default dtype).
Nothing in the server runs a computation before it forks: no thread pool of numpy, PyTorch or
JAX has started, which is what makes the fork safe (JAX warns only once its backend is up).

A notebook runs in an IPython shell inside the child, cell after cell, exactly as the kernel ran
it: the same display hook and figure formatting (matplotlib-inline), streams, tracebacks with
``Cell In[N], line L``; the child writes the executed ``.ipynb``. A script runs with ``runpy``
as ``python snippets/NAME.py ARGS`` would.

The protocol is one JSON line per request on stdin, ``{"kind": "notebook" | "script", "path",
"folder", "args"}``, and one JSON line per reply on stdout, ``{"error": str | null, "seconds"}``.
The parent's side is :class:`Server`; ``pipeline/runner.py`` decides what to run and caches it.
"""

import contextlib
import gc
import io
import json
import os
import re
import select
import shlex
import signal
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SNIPPETS = ROOT / "snippets"
FRAMEWORKS = SNIPPETS / "frameworks"
# snippets run in parallel, one per core: a multi-threaded BLAS in each of them only
# oversubscribes the cores (a small matmul measured 15x slower that way)
ONE_THREAD = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
# glibc hands a numpy temporary over 128 kB to mmap and back to the kernel when it is freed, so
# the next one page-faults again: (1 - z*z) on 28,000 floats measured 127 us that way, 7 us with
# the heap kept (a whole snippet: 5-10% of its time, and its system time 0.56 s -> 0.08 s)
KEEP_HEAP = {"MALLOC_MMAP_THRESHOLD_": str(1 << 28), "MALLOC_TRIM_THRESHOLD_": str(1 << 29)}
# XLA's compiled programs, kept across runs and builds (the key is the program, the versions and
# the flags, so an entry cannot go stale): a JAX script run again on another seed compiles
# nothing (ill_conditioning_jax: 4.3 s -> 1.7 s), and scripts share the small ops they all use
JAX_CACHE = {
    "JAX_COMPILATION_CACHE_DIR": str(ROOT / ".cache" / "jax"),
    "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
    "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "-1",
}
PRELOAD = ("numpy", "matplotlib.pyplot", "matplotlib_inline.backend_inline", "IPython", "jupytext")
# what the notebook shell imports the first time it starts, and the runner's helpers it calls
SHELL_MODULES = (
    *("IPython.core.magics.execution", "IPython.core.completer", "IPython.core.completerlib"),
    *("IPython.core.application", "IPython.core.logger", "pipeline.runner"),
)
# torch._dynamo is imported by the first torch.optim optimizer a run builds (its add_param_group
# is wrapped to disable dynamo), by torch.func.jacrev and by the flop counter: 0.67 CPU-s in each
# of 9 of the 15 PyTorch scripts, once here; forward mode then imports the jvp decompositions.
# Both leave one thread running (fork-safe).
FRAMEWORK_MODULES = {
    "torch": ("torch", "torch._dynamo", "torch._decomp.decompositions_for_jvp"),
    "jax": ("jax", "jax.numpy"),
}
# a child that ignores its alarm (stuck in C code) is killed this long after it
GRACE_SECONDS = float(os.environ.get("GRADLAB_GRACE_SECONDS", "30"))


class PastLimit(BaseException):
    """Raised in a run by its alarm (a BaseException: ``except Exception`` does not swallow it)."""


def kernel_path() -> list[str]:
    """snippets/ (gradlab), snippets/frameworks/ (the modules framework scripts import), and the
    caller's PYTHONPATH."""
    return [str(SNIPPETS), str(FRAMEWORKS), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]


def frameworks_of(path: Path) -> set[str]:
    """The frameworks a snippet imports (``torch``, ``jax``), read from its source."""
    text = Path(path).read_text(encoding="utf-8")
    return {name for name in FRAMEWORK_MODULES if re.search(rf"^\s*(?:import|from) {name}\b", text, re.M)}


def shown(path: Path):
    return path.relative_to(ROOT) if path.is_relative_to(ROOT) else path


# ----- the parent's side ---------------------------------------------------------------------


class Server:
    """One warm server process; :meth:`run` sends it a request and waits for the reply."""

    def __init__(self, preload=()):
        import subprocess

        from pipeline import blas

        env = {
            **JAX_CACHE,
            **os.environ,
            **blas.pinned_environment(),  # the site's OpenBLAS kernels (Linux x86-64 with AVX2)
            **ONE_THREAD,
            **KEEP_HEAP,
            "PYTHONPATH": os.pathsep.join(kernel_path()),
        }
        command = [sys.executable, "-m", "pipeline.executor", "--preload", ",".join(sorted(preload))]
        self.process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )

    def run(self, kind: str, path: Path, folder: Path, args=()) -> tuple[str | None, float]:
        """Run one snippet; return ``(error message or None, seconds)``."""
        request = {"kind": kind, "path": str(path), "folder": str(folder), "args": list(args)}
        try:
            self.process.stdin.write(json.dumps(request) + "\n")
            self.process.stdin.flush()
            line = self.process.stdout.readline()
        except (BrokenPipeError, OSError):
            line = ""
        if not line:
            return f"{shown(Path(path))}: the snippet runner stopped (exit status {self.process.poll()})", 0.0
        reply = json.loads(line)
        return reply["error"], reply["seconds"]

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.process.stdin.close()
        self.process.wait()


# ----- the server ----------------------------------------------------------------------------


def serve(preload: list[str]) -> int:
    """Import, then answer requests until stdin closes; each run in a forked child."""
    import importlib

    os.environ.update(ONE_THREAD)
    sys.path[:0] = kernel_path()
    os.chdir(ROOT)
    modules = [*PRELOAD, *(m for name in preload for m in FRAMEWORK_MODULES[name])]
    for module in modules:
        importlib.import_module(module)
    from pipeline import blas

    blas.check()  # numpy's OpenBLAS runs the kernels asked for, or no run starts
    _warm_up()
    # what the imports made lives as long as the server: the cyclic collector of each child would
    # walk those objects (~1 million with PyTorch and JAX) in every full collection, writing to
    # each one's header and so copying its page from the server (fork's copy-on-write). Frozen,
    # they are outside every collection (the gc module's documented recipe for fork()): the
    # build's runs took ~3 CPU-s less, the same numbers
    gc.collect()
    gc.freeze()
    replies = os.fdopen(os.dup(1), "w")  # the reply stream: nothing else may write to it, so
    os.dup2(2, 1)  # what a library prints (even from C) goes to stderr
    for line in sys.stdin:
        reply = _fork_and_wait(json.loads(line), replies)
        replies.write(json.dumps(reply) + "\n")
        replies.flush()
    return 0


def _warm_up() -> None:
    """Do once here what every run did first, at a cost paid again by each child (~0.05 s a
    run): import gradlab and the modules the notebook shell loads on first use, read the
    installed packages' matplotlib backends (``enable_matplotlib("inline")`` scans every
    package's entry points), build nbformat's schema validator. Nothing of it holds a thread,
    an open file or a run's state: gradlab's modules define functions and constants, and the
    figure style ``gradlab.plot`` sets on import is the one every run that draws sets first
    (the build's outputs are byte-identical with and without this, but for the bytes
    ``tracemalloc`` counts in backprop_costs, 0.3% fewer: no lazy import inside the measure)."""
    import importlib
    import pkgutil

    import nbformat
    from matplotlib.backends.registry import backend_registry

    for module in pkgutil.iter_modules([str(SNIPPETS / "gradlab")], "gradlab."):
        try:
            importlib.import_module(module.name)
        except Exception:  # a module being edited: the run that imports it names file and line
            sys.modules.pop(module.name, None)
    for module in SHELL_MODULES:
        importlib.import_module(module)
    backend_registry.resolve_gui_or_backend("inline")
    nbformat.validate(nbformat.v4.new_notebook())


def _fork_and_wait(request: dict, replies) -> dict:
    """Fork a child for the request; read its progress (the cell it is in) and its status."""
    from pipeline.runner import time_limit

    path = Path(request["path"])
    limit = time_limit(path)
    read_end, write_end = os.pipe()
    start = time.perf_counter()
    pid = os.fork()
    if pid == 0:  # the child: run, report, and leave without running the server's exit code
        os.close(read_end)
        replies.close()
        with os.fdopen(write_end, "w") as channel:
            try:
                error = _run_in_child(request, limit, channel)
            except BaseException:
                error = f"{shown(path)}: the snippet runner failed:\n{traceback.format_exc()}"
            channel.write(json.dumps({"error": error}) + "\n")
        os._exit(0)
    os.close(write_end)
    received, deadline, killed = b"", time.monotonic() + limit + GRACE_SECONDS, False
    while True:
        ready, _, _ = select.select([read_end], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:  # the alarm did not stop it (stuck in C code): stop it
            os.kill(pid, signal.SIGKILL)
            killed = True
            break
        chunk = os.read(read_end, 65536)
        if not chunk:
            break
        received += chunk
    os.close(read_end)
    os.waitpid(pid, 0)
    seconds = time.perf_counter() - start
    lines = [json.loads(text) for text in received.decode("utf-8", "replace").splitlines() if text.strip()]
    final = next((entry for entry in reversed(lines) if "error" in entry), None)
    if final is not None:
        return {"error": final["error"], "seconds": seconds}
    where = next((entry["at"] for entry in reversed(lines) if "at" in entry), str(shown(path)))
    if killed:
        return {"error": f"{where}: ran past {limit} s and did not stop", "seconds": seconds}
    return {"error": f"{where}: the run ended without a result (the process died)", "seconds": seconds}


def _run_in_child(request: dict, limit: int, channel) -> str | None:
    from gradlab import snippet  # the contract's variables (the child has snippets/ on its path)

    path, folder, args = Path(request["path"]), Path(request["folder"]), request["args"]
    argv = ["--out", str(folder), *args]
    os.environ[snippet.NAME_ENV] = path.stem
    os.environ[snippet.ARGV_ENV] = shlex.join(argv)
    sys.argv = [str(path), *argv]

    def alarm(*_):
        raise PastLimit

    signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, limit)
    try:
        if request["kind"] == "notebook":
            os.environ[snippet.NOTEBOOK_ENV] = "1"
            error = _notebook(path, folder, limit, channel)
        else:  # a run with arguments: the chapters quote its numbers, never its figures
            os.environ[snippet.NO_FIGURE_FILES_ENV] = "1"
            error = _script(path, limit)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    if error is None and not (folder / "numbers.json").exists():
        error = f"{shown(path)}: finished without results.save() (no numbers.json)"
    return error


def _script(path: Path, limit: int) -> str | None:
    """``python snippets/NAME.py ARGS``: its tables are dropped, its stderr names a failure."""
    import runpy

    import matplotlib

    matplotlib.use("Agg")
    printed, complaints = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(complaints):
            runpy.run_path(str(path), run_name="__main__")
    except SystemExit as exit_:
        if exit_.code not in (None, 0):
            said = complaints.getvalue().strip()
            return f"{shown(path)}: exited with status {exit_.code}" + (f": {said}" if said else "")
    except PastLimit:
        return f"{_where_in(path, traceback.extract_tb(sys.exc_info()[2]))}: ran past {limit} s (here)"
    except BaseException as failure:  # the message names the snippet's line, as a notebook's does
        frames = traceback.extract_tb(failure.__traceback__)
        text = "".join(traceback.format_exception(failure))
        return f"{_where_in(path, frames)}: {type(failure).__name__}: {failure}\n{text}"
    return None


def _where_in(path: Path, frames) -> str:
    """``snippets/NAME.py:LINE`` of the snippet's innermost frame in a traceback."""
    lines = [frame.lineno for frame in frames if Path(frame.filename).resolve() == path.resolve()]
    return f"{shown(path)}:{lines[-1]}" if lines else str(shown(path))


def _notebook(path: Path, folder: Path, limit: int, channel) -> str | None:
    """Execute the snippet as a notebook in an IPython shell; write the executed ``.ipynb``."""
    import platform

    import nbformat

    from pipeline.runner import cell_line, error_message, to_notebook

    notebook = to_notebook(path)
    shell = _shell()
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "code":
            continue
        channel.write(json.dumps({"at": f"{shown(path)}:{cell_line(path, notebook, index)}"}) + "\n")
        channel.flush()
        shell.outputs = cell.outputs = []
        try:
            with (
                contextlib.redirect_stdout(_Stream(shell, "stdout")),
                contextlib.redirect_stderr(_Stream(shell, "stderr")),
            ):
                result = shell.run_cell(cell.source, store_history=True)
        except PastLimit:  # the alarm rang in the shell's own code, between two statements
            result = None
        cell.execution_count = shell.execution_count - 1
        failure = None if result is None else (result.error_before_exec or result.error_in_exec)
        if result is None or isinstance(failure, PastLimit):
            where = f"{shown(path)}:{cell_line(path, notebook, index)}"
            return f"{where}: ran past {limit} s (the cell starting here)"
        if failure is not None:
            return error_message(path, notebook)
    notebook.metadata["language_info"] = {
        "codemirror_mode": {"name": "ipython", "version": 3},
        "file_extension": ".py",
        "mimetype": "text/x-python",
        "name": "python",
        "nbconvert_exporter": "python",
        "pygments_lexer": "ipython3",
        "version": platform.python_version(),
    }
    nbformat.write(notebook, folder / f"{path.stem}.ipynb")
    return None


class _Stream(io.TextIOBase):
    """``sys.stdout`` / ``sys.stderr`` of a cell: text joins the cell's last output of the same
    stream, as a notebook shows it."""

    def __init__(self, shell, name: str):
        self.shell, self.name = shell, name

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        outputs = self.shell.outputs
        if not text:
            return 0
        if outputs and outputs[-1].get("output_type") == "stream" and outputs[-1]["name"] == self.name:
            outputs[-1]["text"] += text
        else:
            import nbformat

            outputs.append(nbformat.v4.new_output("stream", name=self.name, text=text))
        return len(text)


def _shell():
    """An IPython shell whose results, displays and errors become the current cell's outputs."""
    import nbformat
    from IPython.core.displayhook import DisplayHook
    from IPython.core.displaypub import DisplayPublisher
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    class Results(DisplayHook):
        def write_output_prompt(self):
            pass

        def write_format_data(self, format_dict, md_dict=None):
            data, metadata, count = format_dict, md_dict or {}, self.prompt_count
            output = nbformat.v4.new_output("execute_result", data=data, metadata=metadata)
            output.execution_count = count
            self.shell.outputs.append(output)

    class Displays(DisplayPublisher):
        def publish(self, data, metadata=None, source=None, *, transient=None, update=False, **_):
            output = nbformat.v4.new_output("display_data", data=data, metadata=metadata or {})
            self.shell.outputs.append(output)

        def clear_output(self, wait=False):
            self.shell.outputs.clear()

    class Shell(InteractiveShell):
        displayhook_class = Results
        display_pub_class = Displays
        outputs = None  # the current cell's, set before it runs

        def enable_gui(self, gui=None):  # inline figures need no event loop
            pass

        def _showtraceback(self, etype, evalue, stb):
            self.outputs.append(
                nbformat.v4.new_output(
                    "error", ename=getattr(etype, "__name__", str(etype)), evalue=str(evalue), traceback=stb
                )
            )

    config = Config()
    config.HistoryManager.enabled = False  # no SQLite file, no saving thread
    config.InteractiveShell.colors = "NoColor"
    shell = Shell.instance(config=config)
    shell.enable_matplotlib("inline")
    _show_saved_figures_as_svg(shell)
    return shell


def _show_saved_figures_as_svg(shell) -> None:
    """A figure the snippet saved with ``results.figure`` (and did not change since) is shown as
    the SVG that saving drew, not drawn again as a PNG: the page replaces it with the snippet's
    SVG files anyway, and the second drawing was an eighth of a site run's time. Any other
    figure is a PNG, as the inline backend makes it."""
    from gradlab import plot
    from matplotlib.figure import Figure

    formatters = shell.display_formatter.formatters
    draw_png = formatters["image/png"].lookup_by_type(Figure)
    formatters["image/png"].for_type(Figure, lambda fig: None if plot.saved_svg(fig) else draw_png(fig))
    formatters["image/svg+xml"].for_type(Figure, plot.saved_svg)


def main(argv: list[str]) -> int:
    preload = [] if len(argv) < 2 or argv[0] != "--preload" else [n for n in argv[1].split(",") if n]
    return serve(preload)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
