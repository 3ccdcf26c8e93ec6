"""Build benchmark: clean build, no-change rebuild, per-snippet and test-suite seconds.

Run with ``make bench``. Prints a table; asserts nothing (timings belong in a benchmark, not
in a test). Targets on a 2-core machine: clean build under 60 s, rebuild at least 20 times
faster than a clean build, ``make check NAME=...`` under 60 s after the first build.
"""

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from pipeline import runner  # noqa: E402

ENV = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}


def seconds(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, cwd=ROOT, env=ENV, check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> None:
    with tempfile.TemporaryDirectory() as site:
        build = [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", site]
        shutil.rmtree(ROOT / ".cache", ignore_errors=True)
        clean = seconds(build)
        rebuild = seconds(build)
    print(f"{'clean build (snippets run)':<34} {clean:8.2f} s   target < 60 s")
    print(f"{'no-change rebuild (all cached)':<34} {rebuild:8.2f} s")
    print(f"{'ratio clean / rebuild':<34} {clean / rebuild:8.1f} x   target >= 20 x")
    # a contributor's loop: one chapter checked after the first build (its other seeds included)
    check = seconds([sys.executable, "-m", "pipeline.check", "program_gradients"])
    print(
        f"{'make check NAME=program_gradients':<34} {check:8.2f} s   target < 60 s (first: other seeds run)"
    )
    check = seconds([sys.executable, "-m", "pipeline.check", "program_gradients"])
    print(f"{'make check, again':<34} {check:8.2f} s   target < 60 s")
    print()
    with tempfile.TemporaryDirectory() as out:
        for path in runner.snippet_paths():
            took = seconds([sys.executable, str(path), "--out", f"{out}/{path.stem}"])
            print(f"{'snippet ' + path.stem:<34} {took:8.2f} s   (standalone)")
    print()
    suite = seconds([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"])
    print(f"{'test suite (warm cache)':<34} {suite:8.2f} s   target < 180 s")


if __name__ == "__main__":
    main()
