"""Which of the site's numbers depend on OpenBLAS's kernels: ``make kernels [KERNEL=SkylakeX]``.

The build pins OpenBLAS's Haswell kernels on x86-64 (pipeline/blas.py), so the site is the same
on every machine; a reader whose numpy picks other kernels (an AVX-512 laptop, an older CPU)
rounds some products differently. This runs every run a build makes (site runs and the
exercises' runs) with ``OPENBLAS_CORETYPE=KERNEL`` into a temporary cache, then compares each
number with the recorded one at the number's own tolerance (tests/recorded/, as the drift test
does) and checks each claim. Default kernel: SkylakeX where the CPU has AVX-512, else Sandybridge
(AVX without FMA: every x86-64 CPU since 2011 runs it). Prints a report; asserts nothing.
"""

import os
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
            if not match["kind"] and (match["args"] or "").strip():
                quoted.setdefault(macros.run_key(match["snippet"], match["args"]), set()).add(match["key"])
    return quoted


def main(argv: list[str]) -> int:
    kernel = argv[0] if argv else ("SkylakeX" if "avx512f" in blas._cpu_flags() else "Sandybridge")
    os.environ[blas.VARIABLE] = kernel  # before any server starts: each checks OpenBLAS loaded it
    requests, answers = runner.build_requests(), quoted_with_arguments()
    with tempfile.TemporaryDirectory(prefix="kernels-") as cache:
        outcomes = runner.run_many(requests, cache=Path(cache), progress=False)
        moved, quoted, failed = [], [], []
        for (name, args), outcome in sorted(outcomes.items()):
            label = f"{name} {' '.join(args)}".strip()
            if isinstance(outcome, runner.SnippetError):
                failed.append(f"{label}: {str(outcome).splitlines()[0]}")
                continue
            # the checks the build and the tests make: a site run's own claims, an answer's quoted ones
            checked = (
                answers.get((name, args), set())
                if args
                else {c for c, e in outcome.claims.items() if not e.get("answer")}
            )
            failed += [
                f"{label}: claim {c} fails"
                for c, e in outcome.claims.items()
                if c in checked and not e["holds"]
            ]
            if not args:
                for line in record.drift(outcome.document, record.load(name)):
                    (moved if line.endswith("quoted by no chapter") else quoted).append(line)
    print(f"OpenBLAS kernels {kernel} against the site's {blas.PINNED}: {len(outcomes)} runs")
    print(f"\nclaims that fail or runs that fail ({len(failed)}):", *failed, sep="\n  ")
    print(f"\nquoted numbers outside their tolerance ({len(quoted)}):", *quoted, sep="\n  ")
    print(f"\nother numbers outside their tolerance ({len(moved)}):", *moved, sep="\n  ")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
