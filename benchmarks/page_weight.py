"""Page weight: the bytes a browser transfers for every page of the site.

Run with ``.venv/bin/python benchmarks/page_weight.py [--site DIR]``. Without ``--site`` it
builds the site into a temporary folder first. Serves the site like its host does (gzip, under
the path of ``site_url``; see ``tests/browser_checks.py``), visits every page in headless
Chromium and prints, per page, the bytes transferred on a first visit (nothing cached) and on a
next visit (the files every page shares already cached). ``tests/test_browser.py`` asserts the
targets on the first visits (``PAGE_LIMIT_BYTES``, ``MEDIAN_LIMIT_BYTES`` in browser_checks.py).
"""

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
import browser_checks as checks  # noqa: E402


def measure(site: Path) -> list[tuple[str, int, int, int]]:
    from playwright.sync_api import sync_playwright

    files = sorted(site.rglob("*.html"), key=lambda path: (path != site / "index.html", path))
    with checks.serve(site, checks.site_url(ROOT / "mkdocs.yml")) as base, sync_playwright() as playwright:
        browser = checks.launch(playwright, checks.chromium_executable())
        origin = "/".join(base.split("/", 3)[:3]) + "/"  # http://127.0.0.1:PORT/
        pages = []
        for path in files:
            relative = path.relative_to(site).as_posix()
            pages.append((relative.removesuffix("index.html") or "(start page)", base + relative, path))
        first, following = {}, {}
        context = browser.new_context()
        page = context.new_page()
        recorder = checks.Recorder(page, origin)
        recorder.cache(False)
        for name, url, path in pages:
            result = checks.visit(page, recorder, url, checks.expectation(path))
            first[name] = (result.requests, result.bytes)
        context.close()
        context = browser.new_context()
        page = context.new_page()
        recorder = checks.Recorder(page, origin)
        expected = {url: checks.expectation(path) for _, url, path in pages}
        checks.warm_up(page, expected)
        for name, url, _ in pages:
            following[name] = checks.next_visit_bytes(page, recorder, url, expected[url])
        context.close()
        browser.close()
    return [(name, *first[name], following[name]) for name, _, _ in pages]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site", type=Path, help="a built site (default: build one now)")
    args = parser.parse_args()
    if args.site:
        rows = measure(args.site)
    else:
        with tempfile.TemporaryDirectory() as folder:
            command = [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", folder]
            env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
            subprocess.run(command, cwd=ROOT, env=env, check=True, capture_output=True)
            rows = measure(Path(folder))
    print(checks.weight_table(rows, warm=True))


if __name__ == "__main__":
    main()
