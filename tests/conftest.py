"""Shared fixtures: every snippet runs once per session, the site is built once per session.

Under pytest-xdist (``make test`` runs ``pytest -n``), the workers share both: the first worker to
ask runs the snippets (or builds the site) while holding a lock, and leaves the outcome in the
session's temporary folder; the others wait for the lock and read it, so nothing runs twice.
"""

import fcntl
import os
import pickle
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from hypothesis import settings

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "snippets"))  # import gradlab
sys.path.insert(0, str(ROOT))  # import pipeline

from pipeline import blas, runner  # noqa: E402
from pipeline.seeds import answer_seed_args, draws_at_random  # noqa: E402

blas.pin()  # before numpy loads: the OpenBLAS kernels the site's numbers were recorded with

OTHER_SEEDS = (1, 2)  # besides the site's seed 0: every claim must hold on these too


class Results(dict):
    """``name -> Result``; a snippet that failed to run fails only the tests that ask for it."""

    def __getitem__(self, name):
        outcome = super().__getitem__(name)
        if isinstance(outcome, runner.SnippetError):
            pytest.fail(f"snippets/{name}.py failed to run:\n{outcome}", pytrace=False)
        return outcome


SELECTED_FOR_OTHER_SEEDS: set[str] = set()  # the snippets whose other-seed tests were selected
SELECTED_ANSWER_RUNS: set[tuple[str, tuple[str, ...]]] = set()  # likewise, the exercises' runs


def pytest_collection_modifyitems(config, items):
    """The browser's modules first. ``make test`` hands each worker whole modules in this order
    (``--dist=loadfile --no-loadscope-reorder``), so each worker starts with one of the two
    longest (the browser visiting every page, ~45% of the suite's time) instead of one reaching
    it last, when the other has nothing left to do."""
    items.sort(key=lambda item: not item.nodeid.startswith("tests/test_browser"))


def pytest_collection_finish(session):
    """After every deselection (``-k``, ``-m``): only the tests that will run count."""
    for item in session.items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        if "other_seed_results" in getattr(item, "fixturenames", ()) and "name" in params:
            SELECTED_FOR_OTHER_SEEDS.add(params["name"])
        if "answer_run" in params:
            SELECTED_ANSWER_RUNS.add(params["answer_run"])


def once_per_session(tmp_path_factory, name: str, compute):
    """``compute()``, once for the whole session: without xdist, directly; under xdist, by the
    first worker that asks (holding a lock), its outcome pickled for the others."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return compute()
    shared = tmp_path_factory.getbasetemp().parent  # the session's folder, common to the workers
    session = os.environ.get("PYTEST_XDIST_TESTRUNUID", "")  # never read another session's outcome
    with open(shared / f"{name}-{session}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = shared / f"{name}-{session}.pickle"
        if done.exists():
            return pickle.loads(done.read_bytes())
        outcome = compute()
        done.write_bytes(pickle.dumps(outcome))
        return outcome


@pytest.fixture(scope="session")
def site_runs(tmp_path_factory, request):
    """Each snippet's site run (a notebook) and the runs with the exercises' arguments the
    chapters quote (the build reads them), in one pool across the cores or read from the cache:
    ``(name, args) -> Result or SnippetError``. The build and the browser tests need only
    these, so they start while the other seeds still run."""
    capture = request.config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled():  # the runner's progress lines show live
        return once_per_session(tmp_path_factory, "site-runs", _site_runs)


def _site_runs():
    from mkdocs.config import load_config

    from pipeline import notebook_pages

    requests = runner.build_requests(ROOT / "docs")
    # the notebooks to HTML as their runs end, not one after another inside the build's test
    config = load_config(str(ROOT / "mkdocs.yml"))
    return runner.run_many(requests, on_result=notebook_pages.prerenderer(config))


def _seed_requests() -> list:
    names = [name for name in sorted(SELECTED_FOR_OTHER_SEEDS) if draws_at_random(name)]
    runs = [(name, ()) for name in names]
    runs += [(name, args) for name, args in sorted(SELECTED_ANSWER_RUNS) if draws_at_random(name)]
    return [
        (runner.snippet_path(name), answer_seed_args(args, seed))
        for name, args in runs
        for seed in OTHER_SEEDS
    ]


SEED_RUNS = "seed-runs"
_BACKGROUND: dict = {}  # this process's thread running (or waiting for) the other seeds, and its outcome


@pytest.fixture(scope="session", autouse=True)
def _other_seeds_in_the_background(tmp_path_factory):
    """Start the other seeds' runs when the session starts, in a background thread: under xdist
    the first worker to take ``once_per_session``'s lock runs them while the others' threads
    wait for its outcome, so they run while the build, the browser and every other test go on,
    instead of holding up the worker whose test asks for them first."""
    if not SELECTED_FOR_OTHER_SEEDS or not _seed_requests():
        yield
        return

    def run():
        compute = lambda: runner.run_many(_seed_requests(), progress=False)  # noqa: E731
        _BACKGROUND["outcome"] = once_per_session(tmp_path_factory, SEED_RUNS, compute)

    # the worker's temporary folder is made on first use, by removing and creating it: made by
    # this thread and by the first test's fixtures at once, one removed the other's or found it
    # there (FileExistsError in every test of that worker). Made here, before the thread starts.
    tmp_path_factory.getbasetemp()
    _BACKGROUND["thread"] = thread = threading.Thread(target=run, name="other seeds", daemon=True)
    thread.start()
    yield
    thread.join()


@pytest.fixture(scope="session")
def seed_runs(tmp_path_factory):
    """The other seeds of the snippets whose tests were selected (``-k NAME`` runs only that
    one's) and that draw at random: ``(name, ("--seed", S)) -> Result or SnippetError``."""
    thread = _BACKGROUND.get("thread")
    if thread is not None:
        thread.join()
        if "outcome" in _BACKGROUND:
            return _BACKGROUND["outcome"]
    return once_per_session(tmp_path_factory, SEED_RUNS, lambda: runner.run_many(_seed_requests()))


@pytest.fixture(scope="session")
def snippet_results(site_runs):
    """Every snippet's site result, run in parallel (or read from the cache) once per session."""
    return Results({name: outcome for (name, args), outcome in site_runs.items() if not args})


@pytest.fixture(scope="session")
def other_seed_results(seed_runs):
    """``seed -> name -> Result`` for the seeds in OTHER_SEEDS (cached like the site's), for the
    snippets whose tests were selected and that draw at random."""
    runs = {
        seed: {name: (name, ("--seed", str(seed))) for name in SELECTED_FOR_OTHER_SEEDS}
        for seed in OTHER_SEEDS
    }
    return {
        seed: Results({n: seed_runs[k] for n, k in keys.items() if k in seed_runs})
        for seed, keys in runs.items()
    }


@pytest.fixture(scope="session")
def built_site(snippet_results, tmp_path_factory):
    """A clean ``mkdocs build --strict`` into a temporary folder; snippets come from the cache."""
    failed = [
        name for name, outcome in dict.items(snippet_results) if isinstance(outcome, runner.SnippetError)
    ]
    if failed:
        pytest.fail(f"the site cannot be built: snippet(s) {', '.join(failed)} failed", pytrace=False)

    def build():
        site = tmp_path_factory.mktemp("site")
        env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
        command = [sys.executable, "-m", "mkdocs", "build", "--strict", "--clean", "-d", str(site)]
        done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
        return site, done.returncode, done.stderr[-4000:]

    site, status, stderr = once_per_session(tmp_path_factory, "site", build)
    assert status == 0, f"mkdocs build --strict failed:\n{stderr}"
    return site


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium for the browser tests (test_browser.py, test_browser_interactive.py)."""
    import browser_checks as checks
    from playwright.sync_api import sync_playwright

    try:
        executable = checks.chromium_executable()
    except RuntimeError as error:
        pytest.fail(str(error), pytrace=False)
    with sync_playwright() as playwright:
        browser = checks.launch(playwright, executable)
        yield browser
        browser.close()


# `make test` tries the same Hypothesis examples on every run and every machine (derandomized: a
# hash of each test picks them), so it never fails at random. `make fuzz` explores new examples:
# the "explore" profile, with the seed it prints (``--hypothesis-profile=explore --hypothesis-seed=N``).
settings.register_profile("site", derandomize=True, deadline=None, print_blob=True, database=None)
settings.register_profile("explore", derandomize=False, deadline=None, print_blob=True, database=None)
settings.load_profile("site")
