"""The browser suite (both test_browser files) three times while two busy processes load both cores.

``make bench-flaky`` (or ``.venv/bin/python benchmarks/browser_under_load.py [RUNS]``). A test
that waits on a fixed delay instead of an event passes on an idle machine and fails here; every
run must pass. Prints one line per run and exits non-zero if any failed.
"""

import multiprocessing
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def burn() -> None:
    while True:  # a core's worth of load until the parent stops us
        sum(i * i for i in range(10_000))


def main(runs: int) -> int:
    workers = [multiprocessing.Process(target=burn, daemon=True) for _ in range(os.cpu_count() or 2)]
    for worker in workers:
        worker.start()
    failures = 0
    try:
        for run in range(1, runs + 1):
            start = time.perf_counter()
            done = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pytest",
                    "-q",
                    "-p",
                    "no:cacheprovider",
                    "tests/test_browser.py",
                    "tests/test_browser_interactive.py",
                ],
                cwd=ROOT,
                capture_output=True,
                text=True,
            )
            summary = (done.stdout.strip().splitlines() or ["(no output)"])[-1]
            print(f"run {run}/{runs} under load: {summary} ({time.perf_counter() - start:.0f} s)", flush=True)
            if done.returncode:
                failures += 1
                print(done.stdout[-3000:], file=sys.stderr)
    finally:
        for worker in workers:
            worker.terminate()
    print(f"{runs - failures} of {runs} runs passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 3))
