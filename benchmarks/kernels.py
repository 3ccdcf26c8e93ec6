"""Which of the site's numbers depend on OpenBLAS's kernels: ``make kernels [KERNEL=SkylakeX] [SEEDS=1,2]``.

The build pins OpenBLAS's Haswell kernels on Linux x86-64 with AVX2 (pipeline/blas.py), so the
site is the same on every such machine; a reader whose numpy picks other kernels (on a CPU with
AVX-512, or without AVX2) rounds some products differently. This runs every run a build makes
(site runs and the exercises' runs; with ``--seeds 1,2`` each also on those seeds, as the tests
do) twice: on the site's kernels (the usual cache) and with ``OPENBLAS_CORETYPE=KERNEL`` (a
temporary cache). It lists the runs and claims that fail where the build and the tests check
them (a site run's own claims, the claims an answer quotes), and every number outside its own
tolerance of the site's, the ones the pages show first. Default kernel: SkylakeX where the CPU
has AVX-512, else Sandybridge (AVX without FMA). Prints a report; asserts nothing.
"""

import argparse
import functools
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pipeline import blas, macros, record, runner  # noqa: E402


def quoted_with_arguments() -> dict:
    """``(name, args) -> {key, ...}``: what the pages quote from runs with arguments (the answers)."""
    quoted: dict = {}
    for page in sorted((ROOT / "docs").rglob("*.md")):
        for match in macros.MACRO.finditer(page.read_text(encoding="utf-8")):
            kind, key = match["kind"] or "", match["key"]
            if (match["args"] or "").strip() and (not kind or kind.startswith("range")):
                keys = {f"{key}_min", f"{key}_max"} if kind else {key}
                quoted.setdefault(macros.run_key(match["snippet"], match["args"]), set()).update(keys)
    return quoted


def with_seeds(requests, seeds) -> list:
    """The requests on more seeds, as the tests run them: each run again with ``--seed S``."""
    more = [
        (path, (*args, "--seed", str(seed)))
        for path, args in requests
        if "--seed" not in args
        for seed in seeds
    ]
    return requests + more


def compare(label: str, outcome, reference, quoted_keys: set) -> tuple[list, list]:
    """The numbers of ``outcome`` outside their own tolerance of ``reference``'s, and the claims
    whose statements changed: (quoted lines, other lines)."""
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
            quoted.append(f"{label}: claim {claim} now says {entry['statement']!r}")
    return quoted, other


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kernel", nargs="?", help="OpenBLAS's name for the kernels (default: see above)")
    parser.add_argument("--seeds", default="", help="also these seeds, as the tests run them: --seeds 1,2")
    options = parser.parse_args(argv)
    seeds = [int(seed) for seed in options.seeds.split(",") if seed]
    kernel = options.kernel or ("SkylakeX" if "avx512f" in blas._cpu_flags() else "Sandybridge")
    requests, answers = with_seeds(runner.build_requests(), seeds), quoted_with_arguments()
    reference = runner.run_many(requests, progress=False)  # the site's kernels, in the usual cache
    os.environ[blas.VARIABLE] = kernel  # before the next servers start: each checks OpenBLAS loaded it
    running = subprocess.run(
        [sys.executable, "-c", "from pipeline import blas; print(blas.kernel())"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="kernels-") as cache:
        outcomes = runner.run_many(requests, cache=Path(cache), progress=False)
        moved, quoted, failed = [], [], []
        for (name, args), outcome in sorted(outcomes.items()):
            label = f"{name} {' '.join(args)}".strip()
            if isinstance(outcome, runner.SnippetError):
                failed.append(f"{label}: {str(outcome).splitlines()[0]}")
                continue
            # the checks the build and the tests make: a site run's own claims, an answer's quoted ones
            site_args = tuple(args[:-2]) if args[-2:-1] == ("--seed",) and seeds else args
            answer = answers.get((name, site_args), set())
            checked = answer if site_args else {c for c, e in outcome.claims.items() if not e.get("answer")}
            failed += [
                f"{label}: claim {c} fails"
                for c, e in outcome.claims.items()
                if c in checked and not e["holds"]
            ]
            on_page = set() if site_args != args else (answer if args else quoted_keys(name))
            more_quoted, more = compare(label, outcome, reference[(name, args)], on_page)
            quoted += more_quoted
            moved += more
    print(f"OpenBLAS kernels {kernel} (numpy's OpenBLAS runs {running}) against the site's {blas.PINNED}:")
    print(f"{len(outcomes)} runs: the build's" + (f", and each on seeds {seeds}" if seeds else ""))
    print(f"\nclaims that fail or runs that fail ({len(failed)}):", *failed, sep="\n  ")
    print(f"\nnumbers the pages show, outside their tolerance ({len(quoted)}):", *quoted, sep="\n  ")
    print(f"\nother numbers outside their tolerance ({len(moved)}):", *moved, sep="\n  ")
    return 0


@functools.cache
def quoted_keys(name: str) -> set:
    """The keys of a snippet's site run that the pages quote."""
    found = set()
    for page in sorted((ROOT / "docs").rglob("*.md")):
        found |= {
            key for snippet, key in macros.quoted_keys(page.read_text(encoding="utf-8")) if snippet == name
        }
    return found


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
