"""Build and test benchmark, measured as from a fresh clone: ``make bench``.

Everything runs in a fresh local clone of the committed ``HEAD`` in a temporary folder (using
this checkout's ``.venv``), never in the working tree, whose ``.cache`` it leaves alone:

1. clean build (every snippet runs: site runs, framework scripts, the exercises' answer runs);
2. no-change rebuild, and the ratio;
3. a prose edit under ``make serve``: a fresh ``mkdocs serve --dirty`` process, one sentence
   appended to a chapter, and the time until the served page contains it (waited on by
   polling the page for that condition, not by a fixed delay);
4. ``make check NAME=x`` on a chapter freshly scaffolded with ``make chapter`` in the clone;
5. each snippet's site-run time (from the runner's cache), and what the framework scripts add
   to the clean build: the build's runs once with and once without them, each into an empty
   cache (budget: +30%);
6. ``make test``: after the build, again with every result cached, and cold (no ``.cache``).

Prints a table and asserts nothing (timings belong in a benchmark, not in a test). The machine's
load changes every wall time: compare the ratios, and rerun before trusting one number.
``--quick`` skips the two test-suite runs (several minutes each) and prints their command.
"""

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
BIN = ROOT / ".venv" / "bin"
PYTHON = str(BIN / "python") if (BIN / "python").exists() else sys.executable
EDITED_PAGE = "saturating-sigmoids.md"


def seconds(command: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=ENV, capture_output=True, text=True)
    took = time.perf_counter() - start
    if done.returncode:
        print(f"FAILED ({took:.0f} s): {' '.join(command)}\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    return took


def line(label: str, value: float, unit: str = "s", target: str = "") -> None:
    print(f"{label:<44} {value:8.2f} {unit:<2} {target}", flush=True)


def fresh_clone(folder: Path) -> Path:
    clone = folder / "clone"
    subprocess.run(["git", "clone", "--quiet", "--shared", str(ROOT), str(clone)], check=True)
    (clone / ".venv").symlink_to(ROOT / ".venv")
    return clone


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def prose_edit_under_serve(clone: Path) -> float:
    """Seconds from saving a chapter to the served page carrying the edit (fresh serve process)."""
    port = free_port()
    (clone / ".cache" / "bench-serve.log").unlink(missing_ok=True)
    log = open(clone / ".cache" / "bench-serve.log", "a+")  # append: serve's writes never land mid-file
    serve = subprocess.Popen(
        [PYTHON, "-m", "mkdocs", "serve", "--dirty", "--livereload", "--dev-addr", f"127.0.0.1:{port}"],
        cwd=clone,
        env=ENV,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )

    def page() -> str:
        log.seek(0)
        served = re.search(r"Serving on (\S+)", log.read())  # the address includes site_url's path
        if not served:
            return ""
        url = served.group(1).rstrip("/") + f"/{EDITED_PAGE.removesuffix('.md')}/"
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                return response.read().decode("utf-8")
        except OSError:
            return ""

    try:
        deadline = time.monotonic() + 600
        while "</html>" not in page():  # served: the first build is done
            if serve.poll() is not None or time.monotonic() > deadline:
                log.seek(0)
                raise RuntimeError(f"mkdocs serve did not start:\n{log.read()[-3000:]}")
            time.sleep(0.05)
        marker = f"Benchmark sentence {time.time_ns()}."
        source = clone / "docs" / EDITED_PAGE
        start = time.perf_counter()
        source.write_text(source.read_text(encoding="utf-8") + f"\n{marker}\n", encoding="utf-8")
        while marker not in page():  # the condition: the served page shows the sentence
            if time.monotonic() > deadline:
                raise RuntimeError("the edit never appeared")
            time.sleep(0.02)
        return time.perf_counter() - start
    finally:
        if serve.poll() is None:
            os.killpg(serve.pid, signal.SIGTERM)
            serve.wait(timeout=30)
        log.close()


RUNS = """
import sys, time
from pathlib import Path
from mkdocs.config import load_config
from pipeline import notebook_pages, runner
requests = runner.build_requests()
if sys.argv[1] == "without":
    requests = [(p, a) for p, a in requests if p.parent != runner.FRAMEWORKS]
config = load_config("mkdocs.yml")  # each site run's notebook to HTML as it ends, as the build does
config.plugins["mkdocs-jupyter"].config["cache_dir"] = str(Path(sys.argv[2]).parent / "mkdocs-jupyter")
start = time.perf_counter()
outcomes = runner.run_many(
    requests, cache=Path(sys.argv[2]), progress=False, on_result=notebook_pages.prerenderer(config)
)
assert not any(isinstance(o, runner.SnippetError) for o in outcomes.values())
print(time.perf_counter() - start)
"""


def framework_share(clone: Path, folder: Path, clean: float) -> None:
    """The build's runs (site runs and answer runs) with and without the framework scripts, and
    the conversion of their notebooks to HTML as they end (as in the build), each into empty
    caches (XLA's compiled programs and the converted pages too), three times each,
    alternating, the shortest counted (on one 2-core machine samples of one kind spread by up
    to 7 s, and the share by several points): the difference is what the frameworks add to a
    clean build."""
    took: dict[str, list[float]] = {"with": [], "without": []}
    for attempt in range(3):
        for which in ("with", "without"):
            empty = folder / f"runs-{which}-{attempt}"
            env = {**ENV, "JAX_COMPILATION_CACHE_DIR": str(empty / "jax")}
            done = subprocess.run(
                [PYTHON, "-c", RUNS, which, str(empty / "snippets")],
                cwd=clone, env=env, capture_output=True, text=True, check=True,
            )  # fmt: skip
            took[which].append(float(done.stdout.split()[-1]))
    for which, seconds_ in took.items():
        spread = ", ".join(f"{t:.1f}" for t in seconds_)
        line(
            f"the build's snippet runs and notebook conversions, {which} the framework scripts",
            min(seconds_),
            "s",
            f"(best of {spread})",
        )
    took = {which: min(seconds_) for which, seconds_ in took.items()}
    added = took["with"] - took["without"]
    line("clean build without the framework scripts", clean - added, "s", "(the clean build less them)")
    line("growth from the framework scripts", 100 * added / (clean - added), "%", "budget <= 30 %")


def main(quick: bool) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-") as folder:
        clone = fresh_clone(Path(folder))
        build = [PYTHON, "-m", "mkdocs", "build", "--strict", "-d", str(Path(folder) / "site")]
        clean = seconds(build, clone)
        line("clean build (every snippet runs)", clean, "s", "target < 60 s")
        rebuild = min(seconds(build, clone) for _ in range(2))
        line("no-change rebuild (best of 2)", rebuild)
        line("ratio clean / rebuild", clean / rebuild, "x", "target >= 20 x")
        line(
            "prose edit under make serve, visible after", prose_edit_under_serve(clone), "s", "target <= 1 s"
        )

        made = subprocess.run(
            [PYTHON, "-m", "pipeline.scaffold", "bench_chapter"], cwd=clone, env=ENV, capture_output=True
        )
        if made.returncode:
            print(made.stdout.decode()[-2000:], made.stderr.decode()[-2000:])
        check = seconds([PYTHON, "-m", "pipeline.check", "bench_chapter"], clone)
        line("make check on a new chapter (make chapter)", check, "s", "target < 60 s")
        check = seconds([PYTHON, "-m", "pipeline.check", "bench_chapter"], clone)
        line("make check again, nothing changed", check, "s")
        subprocess.run(["git", "checkout", "-q", "--", "."], cwd=clone, check=True)
        subprocess.run(["git", "clean", "-qfd", "docs", "snippets", "tests"], cwd=clone, check=True)

        print()
        cache = clone / ".cache" / "snippets"
        times = []
        for home in sorted(p for p in cache.iterdir() if "@" not in p.name and not p.name.startswith(".")):
            run = [float(f.read_text()) for f in home.glob("*/run-seconds")]
            times.append((max(run, default=0.0), home.name))
        for took, name in sorted(times, reverse=True):
            line(f"snippet {name} (site run, in the build)", took)
        line("sum of the site runs", sum(t for t, _ in times), "s", "(2 cores share them)")
        framework_share(clone, Path(folder), clean)

        print()
        if quick:
            print(
                "make test: skipped (--quick); measure it with `time make test`, warm and after `make clean`"
            )
            return
        # `make test` itself, xdist workers included (the clone's .venv is this one's, installed)
        test = ["make", "test"]
        warm = seconds(test, clone)
        line("make test after the build (runs seeds 1, 2)", warm, "s", "target <= 180 s")
        again = seconds(test, clone)
        line("make test again (every result cached)", again, "s", "target <= 180 s")
        shutil.rmtree(clone / ".cache", ignore_errors=True)
        cold = seconds(test, clone)
        line("make test, cold (no .cache; venv installed)", cold, "s", "target <= 180 s")


if __name__ == "__main__":
    main(quick="--quick" in sys.argv[1:])
