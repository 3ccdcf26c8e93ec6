"""``make check NAME=x``: everything about one chapter, fast, before the whole suite.

1. ruff formats and lints the chapter's snippet;
2. the snippet runs (or its cached result is read) and its numbers are compared with
   ``tests/recorded/NAME.json``; its claims hold (a failing claim fails the run);
3. it runs with ``--seed 1`` and ``--seed 2`` (cached apart) and the claims hold there too;
4. every page that quotes it resolves its macros;
5. the site builds with ``--strict``;
6. the tests about this snippet and its pages run.

Each step prints one line; the first failure stops with its message and exit status 1.
"""

import subprocess
import sys
import time

from pipeline import macros, record, runner, scaffold

OTHER_SEEDS = ("1", "2")


def step(label: str, started: float) -> None:
    print(f"  ok  {label:<58} {time.perf_counter() - started:6.1f} s", flush=True)


def fail(label: str, message: str) -> int:
    print(f"  FAIL {label}", flush=True)
    print(f"\n{message.rstrip()}", file=sys.stderr)
    return 1


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not argv[0]:
        print("usage: make check NAME=snippet_name", file=sys.stderr)
        return 2
    name = scaffold.normalize_name(argv[0])
    path = runner.snippet_path(name)
    if not path.exists():
        known = [p.stem for p in runner.snippet_paths()]
        print(f"no snippets/{name}.py{macros.close_keys(name, known)}", file=sys.stderr)
        return 2
    pages = [page for page in sorted(record.DOCS.rglob("*.md")) if f"{name}." in page.read_text("utf-8")]
    python, ruff = sys.executable, [sys.executable, "-m", "ruff"]
    print(f"make check NAME={name}: snippets/{name}.py, {', '.join(p.name for p in pages) or 'no page'}")

    started = time.perf_counter()
    for command in ([*ruff, "format", str(path)], [*ruff, "check", "--fix", str(path)]):
        done = subprocess.run(command, cwd=runner.ROOT, capture_output=True, text=True)
        if done.returncode:
            return fail("ruff", done.stdout + done.stderr)
    step("ruff format and lint", started)

    started = time.perf_counter()
    try:
        result = runner.run_one(path)
    except runner.SnippetError as error:
        return fail("the snippet", str(error))
    problems = record.drift(result.document, record.load(name), claims=record.load_claims(name))
    if problems:
        return fail("recorded numbers", "\n".join(problems) + f"\nIntended? `make record NAME={name}`.")
    step(f"runs; {len(result.numbers)} numbers as recorded, {len(result.claims)} claims hold", started)

    started = time.perf_counter()  # both seeds in one process (cached apart)
    for seed, other in zip(
        OTHER_SEEDS, runner.run_scripts(path, [("--seed", s) for s in OTHER_SEEDS]), strict=True
    ):
        if isinstance(other, runner.SnippetError):
            return fail(f"--seed {seed}", str(other))
        if set(other.claims) != set(result.claims):
            return fail(f"--seed {seed}", "the run checks other claims than the site's")
    step(f"--seed {', '.join(OTHER_SEEDS)}: its {len(result.claims)} claims hold on each", started)

    started = time.perf_counter()
    for page in pages:
        try:
            quoted = sorted({m["snippet"] for m in macros.MACRO.finditer(page.read_text("utf-8"))})
            results = runner.run_all(
                [runner.snippet_path(s) for s in quoted if runner.snippet_path(s).exists()]
            )
            results.update(macros.run_with_arguments(macros.argument_runs(page.read_text("utf-8"))))
            macros.substitute(page.read_text("utf-8"), results, page.relative_to(record.DOCS).as_posix())
        except (macros.MacroError, runner.SnippetError) as error:
            return fail(f"macros in {page.name}", str(error))
    step(f"macros resolve in {len(pages)} page(s)", started)

    started = time.perf_counter()
    site = runner.ROOT / ".cache" / "check-site"
    env = {"NO_MKDOCS_2_WARNING": "1"}
    build = subprocess.run(
        [python, "-m", "mkdocs", "build", "--strict", "--quiet", "-d", str(site)],
        cwd=runner.ROOT,
        capture_output=True,
        text=True,
        env={**__import__("os").environ, **env},
    )
    if build.returncode:
        return fail("mkdocs build --strict", build.stderr[-4000:])
    step("mkdocs build --strict", started)

    started = time.perf_counter()
    words = [name, *(page.stem for page in pages)]
    tests = [
        python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", " or ".join(words),
        "tests/test_snippets.py", "tests/test_chapters.py",
    ]  # fmt: skip
    done = subprocess.run(tests, cwd=runner.ROOT, capture_output=True, text=True)
    if done.returncode:
        return fail("tests", done.stdout[-6000:])
    step(f"tests about {name}: {done.stdout.strip().splitlines()[-1].strip('= ')}", started)
    print("all good; before the pull request run the whole suite: make test")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
