"""Which of the site's numbers depend on OpenBLAS's kernels: ``make kernels [KERNEL=SkylakeX] [SEEDS=1,2]``.

The build pins OpenBLAS's Haswell kernels on Linux x86-64 with AVX2 (pipeline/blas.py), so the
site is the same on every such machine; a reader whose numpy picks other kernels (on a CPU with
AVX-512, or without AVX2) rounds some products differently. This runs every run a build makes
(site runs and the exercises' runs; with ``--seeds 1,2`` each also on those seeds, as the tests
do) twice: on the site's kernels (the usual cache) and with ``OPENBLAS_CORETYPE=KERNEL`` (a
temporary cache). It lists the runs and claims that fail where the build and the tests check
them (a site run's own claims, the claims an answer quotes), and every number outside its own
tolerance of the site's, the ones the pages show first. Default kernel: SkylakeX where the CPU
has AVX-512, else Sandybridge (AVX without FMA). Prints a report; with ``--check`` (CI) its exit
status is 1 if a run or a claim fails on the other kernels.
"""

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pipeline import blas, macros, record, runner  # noqa: E402


def shown_text(pages, results) -> dict:
    """``(page, macro) -> text`` of every number, range and claim the pages show from
    ``results`` (``{(name, args): Result}``), as the build writes it (figures left out)."""
    table = {(name, args) if args else name: result for (name, args), result in results.items()}
    shown = {}
    for page in pages:
        for match in macros.MACRO.finditer(page.read_text(encoding="utf-8")):
            if (match["kind"] or "").strip() in ("", "range"):
                try:
                    shown[(page.name, match.group(0))] = macros.substitute(match.group(0), table, page.name)
                except (macros.MacroError, AttributeError):  # a run that failed
                    pass
    return shown


def quoted_on_pages() -> dict:
    """``(name, args) -> {key, ...}``: the numbers and claims the pages quote from each run."""
    quoted: dict = {}
    for page in sorted((ROOT / "docs").rglob("*.md")):
        for run, key in macros.quoted_by_run(page.read_text(encoding="utf-8")):
            quoted.setdefault(run, set()).add(key)
    return quoted


def compare(label: str, outcome, reference, quoted_keys: set) -> tuple[list, list]:
    """The numbers of ``outcome`` outside their own tolerance of ``reference``'s, and the claims
    whose statements changed: (lines about what the pages quote, other lines)."""
    quoted, other = [], []
    for key, entry in outcome.document["numbers"].items():
        old = reference.numbers.get(key)
        if old is None or not record.close(entry["value"], old, entry["rtol"], entry["atol"]):
            tolerance = f"rtol {entry['rtol']:g}, atol {entry['atol']:g}"
            (quoted if key in quoted_keys else other).append(
                f"{label}: {key} {old!r} -> {entry['value']!r} ({tolerance})"
            )
    for claim, entry in outcome.claims.items():
        if entry["statement"] != reference.claims.get(claim, {}).get("statement"):
            line = f"{label}: claim {claim} now says {entry['statement']!r}"
            (quoted if claim in quoted_keys else other).append(line)
    return quoted, other


def run_all(requests, kernel: str, cache: Path | None = None) -> dict:
    """Every request with ``OPENBLAS_CORETYPE=kernel`` (each server checks OpenBLAS runs it), or
    with OpenBLAS's own choice for ``kernel=''``."""
    os.environ.pop(blas.VARIABLE, None)
    os.environ.update({blas.VARIABLE: kernel} if kernel else {})
    return runner.run_many(requests, **({"cache": cache} if cache else {}), progress=False)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "kernel",
        nargs="?",
        help="OpenBLAS's name for the kernels (default: SkylakeX with AVX-512, else Sandybridge)",
    )
    parser.add_argument("--seeds", default="", help="also these seeds, as the tests run them: --seeds 1,2")
    parser.add_argument("--check", action="store_true", help="exit with status 1 if a run or a claim fails")
    options = parser.parse_args(argv)
    seeds = [int(seed) for seed in options.seeds.split(",") if seed]
    kernel = options.kernel or ("SkylakeX" if "avx512f" in blas.cpu_flags() else "Sandybridge")
    site = runner.build_requests()  # what the pages show
    seed_runs = [(p, (*a, "--seed", str(s))) for p, a in site if "--seed" not in a for s in seeds]
    seed_runs = [run for run in seed_runs if run not in site]
    requests, quoted = site + seed_runs, quoted_on_pages()
    pages = sorted((ROOT / "docs").rglob("*.md"))
    site_kernels = blas.pinned_environment(environ={}).get(blas.VARIABLE, "")  # '' where none is pinned
    reference = run_all(requests, site_kernels)  # the site's kernels, in the usual cache
    running = subprocess.run(
        [sys.executable, "-c", "from pipeline import blas; print(blas.kernel())"],
        cwd=ROOT, env={**os.environ, blas.VARIABLE: kernel}, capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="kernels-") as cache:
        outcomes = run_all(requests, kernel, Path(cache))
        moved, beyond, failed = [], [], []
        for (name, args), outcome in sorted(outcomes.items()):
            label = f"{name} {' '.join(args)}".strip()
            for which, result in (("", outcome), (f" (on {blas.PINNED})", reference[(name, args)])):
                if isinstance(result, runner.SnippetError):
                    failed.append(f"{label}{which}: {str(result).splitlines()[0]}")
            if any(isinstance(r, runner.SnippetError) for r in (outcome, reference[(name, args)])):
                continue
            # the checks the build and the tests make: a site run's own claims, an answer's quoted ones
            shown = (runner.snippet_path(name), args) in site
            answer_args = args if shown else args[:-2]
            checked = quoted.get((name, answer_args), set()) if answer_args else None
            if checked is None:
                checked = {c for c, e in outcome.claims.items() if not e.get("answer")}
            failed += [
                f"{label}: claim {c} fails"
                for c, e in outcome.claims.items()
                if c in checked and not e["holds"]
            ]
            on_page = quoted.get((name, args), set()) if shown else set()
            more_quoted, more = compare(label, outcome, reference[(name, args)], on_page)
            beyond += more_quoted
            moved += more
        before, after = shown_text(pages, reference), shown_text(pages, outcomes)
        changed = [where for where in sorted(before) if before[where] != after.get(where)]
        text = [
            f"{page}: {macro}: {before[(page, macro)]} -> {after.get((page, macro))}"
            for page, macro in changed
        ]
    print(f"OpenBLAS kernels {kernel} (numpy's OpenBLAS runs {running}) against the site's {blas.PINNED}:")
    print(f"{len(outcomes)} runs: the build's" + (f", and each on seeds {seeds}" if seeds else ""))
    print(f"\nclaims that fail or runs that fail ({len(failed)}):", *failed, sep="\n  ")
    print(f"\nnumbers the pages quote, outside their tolerance ({len(beyond)}):", *beyond, sep="\n  ")
    print(f"\ntext the pages show that changes ({len(text)}):", *text, sep="\n  ")
    print(f"\nother numbers outside their tolerance ({len(moved)}):", *moved, sep="\n  ")
    return 1 if options.check and failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
