"""Recorded numbers: the values the chapters quote, pinned in ``tests/recorded/NAME.json``.

``python -m pipeline.record [NAME ...]`` (``make record``) runs the snippets and rewrites their
recorded files; ``git diff tests/recorded`` then shows every number that moved. The test job
compares each run against these files with :func:`drift`.
"""

import json
import math
import sys
from pathlib import Path

from pipeline import macros, runner

RECORDED = runner.ROOT / "tests" / "recorded"
DOCS = runner.ROOT / "docs"


def recorded_path(name: str) -> Path:
    return RECORDED / f"{name}.json"


CLAIMS = "claims"  # the recorded file's one key that is not a number: {claim: statement}


def _document(name: str) -> dict:
    path = recorded_path(name)
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def load(name: str) -> dict:
    """The recorded numbers: ``{key: value}``."""
    return {key: value for key, value in _document(name).items() if key != CLAIMS}


def load_claims(name: str) -> dict:
    """The recorded claims: ``{name: statement}`` (a claim's statement is pinned like a number)."""
    return _document(name).get(CLAIMS, {})


def write(result: runner.Result, fresh: bool = False) -> Path:
    """Pin a result's numbers, one per line and sorted, so diffs read well. A recorded value
    that the new one matches within its tolerance is kept as it is, so ``git diff`` shows only
    the numbers that moved (not last-digit rounding noise); ``fresh`` records every value anew
    (after replacing the scaffold's experiment, say)."""
    RECORDED.mkdir(parents=True, exist_ok=True)
    path = recorded_path(result.name)
    recorded = {} if fresh else load(result.name)
    numbers = {}
    for key, entry in result.document["numbers"].items():
        old = recorded.get(key)
        kept = old is not None and close(entry["value"], old, entry["rtol"], entry["atol"])
        numbers[key] = old if kept else entry["value"]
    claims = {claim: entry["statement"] for claim, entry in result.document.get("claims", {}).items()}
    if claims:
        numbers[CLAIMS] = dict(sorted(claims.items()))
    path.write_text(
        json.dumps(numbers, indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    return path


def quoting_pages(snippet: str, key: str, docs: Path = DOCS) -> list[str]:
    """The chapters whose prose quotes ``{{ snippet.key }}``."""
    return [
        md.relative_to(docs).as_posix()
        for md in sorted(docs.rglob("*.md"))
        if (snippet, key) in macros.quoted_keys(md.read_text(encoding="utf-8"))
    ]


def close(new, old, rtol: float, atol: float) -> bool:
    if isinstance(new, bool) or isinstance(old, bool) or (isinstance(new, int) and isinstance(old, int)):
        return new == old
    if new == old:  # equal, infinities included
        return True
    if math.isnan(new) or math.isnan(old):
        return math.isnan(new) and math.isnan(old)
    return abs(new - old) <= atol + rtol * abs(old)


def drift(document: dict, recorded: dict, docs: Path = DOCS, claims: dict | None = None) -> list[str]:
    """Every difference between a run's numbers (and, given ``claims``, its claims' statements)
    and the recorded ones, as readable lines."""
    name = document["snippet"]
    problems = []
    if claims is not None:
        now = {claim: entry["statement"] for claim, entry in document.get("claims", {}).items()}
        for claim in sorted(set(now) | set(claims)):
            if claim not in claims:
                problems.append(f"{name}: claim {claim!r} is new: not recorded yet")
            elif claim not in now:
                problems.append(f"{name}: claim {claim!r} was recorded but the snippet no longer checks it")
            elif now[claim] != claims[claim]:
                problems.append(
                    f"{name}: claim {claim!r} now says {now[claim]!r}, recorded {claims[claim]!r}"
                )
    for key, entry in document["numbers"].items():
        if key not in recorded:
            problems.append(f"{name}.{key} = {entry['value']!r} is new: not recorded yet")
            continue
        new, old, rtol, atol = entry["value"], recorded[key], entry["rtol"], entry["atol"]
        if not close(new, old, rtol, atol):
            pages = ", ".join(quoting_pages(name, key, docs)) or "no chapter"
            problems.append(
                f"{name}.{key} drifted: recorded {old!r}, now {new!r} "
                f"(rtol {rtol:g}, atol {atol:g}); quoted by {pages}"
            )
    for key in sorted(set(recorded) - set(document["numbers"])):
        pages = ", ".join(quoting_pages(name, key, docs)) or "no chapter"
        problems.append(f"{name}.{key} was recorded but the snippet no longer computes it; quoted by {pages}")
    return problems


def main(argv: list[str]) -> int:
    fresh = "--fresh" in argv
    names = {name for name in argv if name != "--fresh"}
    paths = [p for p in runner.snippet_paths() if not names or p.stem in names]
    if names - {p.stem for p in paths}:
        print(f"unknown snippet(s): {', '.join(sorted(names - {p.stem for p in paths}))}", file=sys.stderr)
        return 2
    try:
        results = runner.run_all(paths)
    except runner.SnippetError as error:
        print(error, file=sys.stderr)
        return 1
    for result in results.values():
        changes = drift(result.document, load(result.name), claims=load_claims(result.name))
        path = write(result, fresh=fresh)
        print(f"{path.relative_to(runner.ROOT)}: {len(changes)} change(s)")
        for line in changes:
            print(f"  {line}")
    known = {p.stem for p in runner.snippet_paths()}
    for orphan in sorted(RECORDED.glob("*.json")):
        if orphan.stem not in known:
            print(f"{orphan.relative_to(runner.ROOT)}: no such snippet any more; delete it")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
