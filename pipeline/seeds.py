"""``make seeds [NAME=x] [SEEDS=3-9]``: every claim on more seeds than ``make test`` tries.

``make test`` checks each claim of a snippet that draws at random on ``--seed 0`` (the site's
run), ``1`` and ``2``: five seeds each, 15 in all (``gradlab.snippet.seeds``). A reader who runs
``--seed 5`` draws five others, and a claim the prose states "on every seed" must hold there
too. This runs ``--seed S`` for every S in SEEDS (default 3-9: 35 more seeds) of every such
snippet (or of NAME alone), and of every exercise's run whose answer the pages quote a claim
from, across the cores and cached like every run; it prints each claim that fails with the
command that shows it, and exits 1 if any does. The weekly workflow
``.github/workflows/seeds.yml`` runs it on every snippet.
"""

import functools
import json
import re
import sys
from pathlib import Path

from pipeline import macros, runner, scaffold

DEFAULT_SEEDS = range(3, 10)


def draws_at_random(name: str) -> bool:
    """Whether the snippet can read ``--seed``: its source names the seed. One that does not has
    no random draws another seed could move (its site run's ``reads_seed``, recorded at run
    time, must agree: tests/test_snippets.py checks it)."""
    return "seed" in runner.snippet_path(name).read_text(encoding="utf-8")


def quoted_answer_claims(docs: Path = runner.ROOT / "docs") -> dict[tuple[str, tuple[str, ...]], list[str]]:
    """``(name, args) -> [claim, ...]``: the claims the pages quote from a run with arguments
    (an exercise's answer). A quoted key is a claim when the snippet's recorded file lists it
    (``tests/recorded/NAME.json``; every run of a snippet states the same claims), so this is
    known before anything runs."""

    @functools.cache
    def recorded_claims(name: str) -> dict:
        recorded = runner.ROOT / "tests" / "recorded" / f"{name}.json"
        return json.loads(recorded.read_text(encoding="utf-8")).get("claims", {}) if recorded.exists() else {}

    found: dict = {}
    for page in sorted(docs.rglob("*.md")):
        for match in macros.MACRO.finditer(page.read_text(encoding="utf-8")):
            if match["kind"] or not (match["args"] or "").strip():
                continue
            if match["key"] in recorded_claims(match["snippet"]):
                quoted = found.setdefault(macros.run_key(match["snippet"], match["args"]), [])
                if match["key"] not in quoted:
                    quoted.append(match["key"])
    return found


def parse_seeds(text: str) -> list[int]:
    """``"3-9"``, ``"4,5"`` or ``"3-5,8"`` -> the seeds, in order; a clear error otherwise."""
    seeds: list[int] = []
    for part in text.split(","):
        match = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", part)
        if not match or (match[2] is not None and int(match[2]) < int(match[1])):
            raise ValueError(f"SEEDS={text!r}: use seeds and ranges like 3-9 or 4,5,8")
        seeds += range(int(match[1]), int(match[2] or match[1]) + 1)
    return list(dict.fromkeys(seeds))


def answer_seed_args(args: tuple[str, ...], seed: int) -> tuple[str, ...]:
    """An exercise's arguments on another seed (the seed last: ``failures`` reads it there)."""
    return (*args, "--seed", str(seed))


def requests(names: list[str], seeds: list[int], answers: dict) -> list[tuple[str, tuple[str, ...]]]:
    """The runs: each name's ``--seed S``, and each quoted answer run of those names with
    ``--seed S`` added (an exercise that sets its seed itself is left as it is)."""
    runs = [(name, ("--seed", str(seed))) for name in names for seed in seeds]
    runs += [
        (name, answer_seed_args(args, seed))
        for name, args in sorted(answers)
        if name in names and "--seed" not in args
        for seed in seeds
    ]
    return runs


def failures(outcomes: dict, answers: dict) -> list[str]:
    """One message per run whose claims fail: a site claim fails the run itself (its error
    names the claim); an answer run fails when a claim its page quotes does not hold."""
    found = []
    for (name, args), outcome in sorted(outcomes.items()):
        command = f"python snippets/{runner.snippet_path(name).relative_to(runner.SNIPPETS)} {' '.join(args)}"
        if isinstance(outcome, runner.SnippetError):
            found.append(f"{command}\n    {str(outcome).strip().replace(chr(10), chr(10) + '    ')}")
            continue
        quoted = answers.get((name, args[:-2]), []) if args[:-2] else []
        claims = outcome.claims
        failed = [
            f"claim {c!r} does not hold: {claims[c]['statement']}" if c in claims else f"no claim {c!r}"
            for c in quoted
            if not claims.get(c, {}).get("holds")
        ]
        if failed:
            found.append(f"{command}\n    " + "\n    ".join(failed))
    return found


def main(argv: list[str]) -> int:
    name = scaffold.normalize_name(argv[0]) if argv and argv[0] else None
    try:
        seeds = parse_seeds(argv[1]) if len(argv) > 1 and argv[1] else list(DEFAULT_SEEDS)
    except ValueError as error:
        print(f"make seeds: {error}", file=sys.stderr)
        return 2
    known = [path.stem for path in runner.snippet_paths()]
    if name is not None and name not in known:
        print(f"make seeds: no snippets/{name}.py{macros.close_keys(name, known)}", file=sys.stderr)
        return 2
    names = [n for n in ([name] if name else known) if draws_at_random(n)]
    if not names:
        print(f"make seeds: snippets/{name}.py never names --seed: every seed is the same run")
        return 0
    answers = quoted_answer_claims()
    runs = requests(names, seeds, answers)
    shown = ",".join(map(str, seeds))
    if len(seeds) > 2 and seeds == list(range(seeds[0], seeds[-1] + 1)):
        shown = f"{seeds[0]}-{seeds[-1]}"
    print(f"make seeds: {len(runs)} runs, --seed {shown}, of {len(names)} snippet(s) and their answers")
    outcomes = runner.run_many([(runner.snippet_path(n), args) for n, args in runs])
    found = failures({run: outcomes[run] for run in runs}, answers)
    if found:
        print(f"\n{len(found)} run(s) with claims that do not hold:\n", file=sys.stderr)
        print("\n".join(found), file=sys.stderr)
        return 1
    print(f"every claim holds on --seed {shown} ({len(runs)} runs)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
