"""Every snippet: it meets the contract, and its numbers match the recorded ones."""

import json
import re
import subprocess
import sys

import pytest
from conftest import OTHER_SEEDS, ROOT

from pipeline import record, runner
from pipeline.seeds import answer_seed_args, draws_at_random, quoted_answer_claims

NAMES = [path.stem for path in runner.snippet_paths()]


@pytest.mark.parametrize("name", NAMES)
def test_numbers_match_recorded(name, snippet_results):
    result = snippet_results[name]
    recorded = record.load(name)
    assert recorded, f"{name}: no tests/recorded/{name}.json; run `make record` and commit it"
    problems = record.drift(result.document, recorded, claims=record.load_claims(name))
    if problems:
        pytest.fail(
            "\n".join(problems) + "\nIf the change is intended: `make record`, then commit the diff.",
            pytrace=False,
        )


@pytest.mark.parametrize("name", NAMES)
def test_snippet_contract(name, snippet_results):
    source = runner.snippet_path(name).read_text(encoding="utf-8")
    assert re.match(r'"""\S.*\n', source), (
        f"{name}.py must open with a docstring whose first line is its title"
    )
    assert "# %% [markdown]" in source, f"{name}.py needs Markdown cells that explain it"
    assert re.search(r"^results\.save\(\)", source, re.M), f"{name}.py must end with results.save()"
    legacy = re.findall(r"np\.random\.(?!default_rng)\w+", source)
    assert not legacy, f"{name}.py uses the legacy global RNG {legacy}: use np.random.default_rng(args.seed)"
    assert len(source.splitlines()) < 250, f"{name}.py is over 250 lines: move machinery into gradlab"
    result = snippet_results[name]
    assert result.numbers, f"{name}.py records no numbers"
    for key in result.figures:
        for stem in (key, f"{key}-dark"):
            svg = (result.folder / f"{stem}.svg").read_text(encoding="utf-8")
            assert svg.lstrip().startswith("<?xml") and "<svg" in svg, f"{name}: {stem}.svg is not an SVG"


@pytest.mark.parametrize("name", NAMES)
def test_every_snippet_checks_claims(name, snippet_results):
    """A chapter's qualitative sentences are claims its snippet checks; the site's run holds them
    (a failing claim would have failed the run) and records each with its statement."""
    claims = snippet_results[name].claims
    assert claims, f"{name}.py states no claims: state the chapter's sentences with results.claim()"
    for claim, entry in claims.items():
        if entry.get("answer"):  # about an exercise's settings; the answer's run checks it
            assert isinstance(entry["holds"], bool) and entry["statement"].strip(), f"{name}.{claim}: {entry}"
            continue
        assert entry["holds"] is True and entry["statement"].strip(), f"{name}.{claim}: {entry}"


@pytest.mark.parametrize("seed", OTHER_SEEDS)
@pytest.mark.parametrize("name", NAMES)
def test_claims_hold_on_other_seeds(name, seed, snippet_results, other_seed_results):
    """The same snippet with ``--seed S`` for S other than the site's: it runs, and every claim
    holds (the numbers may move; the sentences may not). A snippet whose source never names
    ``--seed`` has no random draws: another seed is the same run (see the next two tests)."""
    if not draws_at_random(name):
        pytest.skip(f"{name}.py never names --seed: its site run is its run on every seed")
    result = other_seed_results[seed][name]
    failed = {
        claim: entry["statement"]
        for claim, entry in result.claims.items()
        if not entry["holds"] and not entry.get("answer")
    }
    assert not failed, f"{name}.py --seed {seed}: claims do not hold: {failed}"
    assert set(result.claims) == set(snippet_results[name].claims), (
        f"{name}.py --seed {seed} checks other claims than the site's run"
    )


ANSWER_CLAIMS = quoted_answer_claims()


@pytest.mark.parametrize("seed", OTHER_SEEDS)
@pytest.mark.parametrize("answer_run", sorted(ANSWER_CLAIMS), ids=lambda run: f"{run[0]}({' '.join(run[1])})")
def test_the_claims_an_answer_quotes_hold_on_other_seeds(answer_run, seed, seed_runs):
    """An exercise's answer quotes claims from the run with the exercise's arguments (the build
    checks them on the site's seed); they must survive the reader's ``--seed S`` too."""
    name, args = answer_run
    if not draws_at_random(name):
        pytest.skip(f"{name}.py never names --seed: its run is the same on every seed")
    if "--seed" in args:
        pytest.skip("the exercise sets the seed itself")
    outcome = seed_runs[(name, answer_seed_args(args, seed))]
    if isinstance(outcome, runner.SnippetError):
        pytest.fail(f"snippets/{name}.py {' '.join(args)} --seed {seed} failed:\n{outcome}", pytrace=False)
    failed = {
        c: outcome.claims[c]["statement"] for c in ANSWER_CLAIMS[answer_run] if not outcome.claims[c]["holds"]
    }
    assert not failed, f"{name}.py {' '.join(args)} --seed {seed}: quoted claims do not hold: {failed}"


def test_answer_claims_are_found():
    """The scan above finds the claims the answers quote (so the test cannot pass vacuously)."""
    assert ANSWER_CLAIMS, "no page quotes a claim from a run with arguments"
    assert all(claims for claims in ANSWER_CLAIMS.values())


@pytest.mark.parametrize("name", NAMES)
def test_a_snippet_that_never_names_its_seed_never_reads_it(name, snippet_results):
    """The tests skip the other seeds of a snippet whose source never names the seed; its site
    run must agree that it never read ``args.seed`` (recorded at run time, however it is read)."""
    if not draws_at_random(name):
        assert not snippet_results[name].reads_seed, f"{name}.py read --seed without naming it"


def test_a_snippet_that_never_reads_its_seed_is_the_same_run_on_every_seed(snippet_results, tmp_path):
    """The premise of skipping the other seeds: the cheapest snippet whose site run never read
    ``--seed``, run on seed 1, records exactly the site's numbers and claims."""
    unseeded = [n for n in NAMES if not n.endswith(("_torch", "_jax")) and not snippet_results[n].reads_seed]
    assert unseeded, "every snippet reads --seed: pick another premise test"
    name = min(unseeded, key=lambda n: runner.last_seconds(runner.snippet_path(n)))
    (again,) = runner.run_scripts(runner.snippet_path(name), [("--seed", "1")], cache=tmp_path)
    site = snippet_results[name]
    assert again.numbers == site.numbers and again.claims == site.claims


def kind(name: str) -> str:
    """The libraries a snippet runs on: ``torch``, ``jax`` or ``numpy`` (numpy and matplotlib only)."""
    from pipeline import executor

    return next(iter(executor.frameworks_of(runner.snippet_path(name))), "numpy")


@pytest.fixture(scope="module")
def bad_argument_runs(tmp_path_factory):
    """Every snippet with ``--no-such-option``, run by the warm servers (the libraries already
    imported, so each costs a fork): ``name -> SnippetError``."""
    requests = [(runner.snippet_path(name), ("--no-such-option",)) for name in NAMES]
    outcomes = runner.run_many(requests, cache=tmp_path_factory.mktemp("bad-arguments"), progress=False)
    return {name: outcomes[(name, ("--no-such-option",))] for name in NAMES}


@pytest.mark.parametrize("name", NAMES)
def test_bad_argument_is_a_one_line_error(name, bad_argument_runs):
    """The snippet's parser is the snippet contract's: exit status 2 and one line naming the
    option (the process-level half, what a reader's terminal shows, is the next test's)."""
    failed = bad_argument_runs[name]
    assert isinstance(failed, runner.SnippetError), f"{name}.py ran with --no-such-option"
    said = str(failed).removeprefix(f"{runner.snippet_path(name).relative_to(ROOT)}: exited with status 2: ")
    assert said != str(failed), str(failed)
    assert said == f"{name}.py: error: unrecognized arguments: --no-such-option (see --help)", said


@pytest.mark.parametrize("libraries", ["numpy", "torch", "jax"])
def test_started_as_a_reader_would_a_bad_argument_prints_one_line(libraries):
    """``python snippets/NAME.py --no-such-option`` in a fresh process, for the first snippet on
    each set of libraries: nothing else reaches the terminal (no warning from an import on the
    way), only the parser's line. A fresh process per snippet would cost 40 CPU-s."""
    name = next(n for n in NAMES if kind(n) == libraries)
    command = [sys.executable, str(runner.snippet_path(name)), "--no-such-option"]
    run = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr == f"{name}.py: error: unrecognized arguments: --no-such-option (see --help)\n", (
        run.stderr
    )


def test_drift_detector_fails_on_a_perturbed_number(snippet_results, tmp_path):
    name, result = next((n, r) for n, r in dict.items(snippet_results) if isinstance(r, runner.Result))
    document = result.document
    key, entry = next((k, e) for k, e in document["numbers"].items() if not isinstance(e["value"], bool))
    (tmp_path / "chapter.md").write_text(f"The value is {{{{ {name}.{key}:.3g }}}}.\n")
    assert record.drift(document, dict(result.numbers), docs=tmp_path) == []

    perturbed = dict(result.numbers)
    perturbed[key] = entry["value"] * (1 + 100 * entry["rtol"]) + 10 * entry["atol"] + 1
    problems = record.drift(document, perturbed, docs=tmp_path)
    assert len(problems) == 1
    assert f"{name}.{key} drifted" in problems[0] and "quoted by chapter.md" in problems[0]
    assert repr(perturbed[key]) in problems[0] and repr(entry["value"]) in problems[0]


def test_drift_detector_reports_new_and_vanished_numbers(snippet_results, tmp_path):
    _name, result = next((n, r) for n, r in dict.items(snippet_results) if isinstance(r, runner.Result))
    recorded = dict(result.numbers)
    vanished = recorded.pop(next(iter(recorded)))
    recorded["no_longer_computed"] = vanished
    problems = record.drift(result.document, recorded, docs=tmp_path)
    assert any("is new: not recorded yet" in p for p in problems)
    assert any("no_longer_computed was recorded but the snippet no longer computes it" in p for p in problems)


def test_changing_a_snippets_constant_fails_the_drift_test(tmp_path):
    """End to end: the same snippet with its random seed shifted by one, run by the runner,
    no longer matches its recorded numbers, and the message names the chapter that quotes them."""
    source = (runner.SNIPPETS / "saturation.py").read_text(encoding="utf-8")
    changed = source.replace("np.random.default_rng(args.seed)", "np.random.default_rng(args.seed + 1)")
    assert changed != source, "saturation.py no longer seeds its generator with args.seed"
    path = tmp_path / "saturation.py"  # same name, so the recorded numbers and quotes apply
    path.write_text(changed, encoding="utf-8")
    result = runner.run_one(path, cache=tmp_path / "cache")
    problems = record.drift(result.document, record.load("saturation"))
    assert problems, "a changed constant moved no recorded number"
    assert any("drifted" in p and "saturating-sigmoids.md" in p for p in problems), problems


def test_record_keeps_values_within_tolerance_and_rewrites_the_others(tmp_path, monkeypatch):
    """`make record` leaves a number that only moved by rounding as it was recorded, so the diff
    shows the numbers that really moved; new numbers are added, vanished ones dropped."""
    monkeypatch.setattr(record, "RECORDED", tmp_path / "recorded")
    record.RECORDED.mkdir()
    record.recorded_path("demo").write_text(json.dumps({"steady": 1.0, "moved": 1.0, "gone": 5.0}))
    entry = {"about": "", "rtol": 1e-6, "atol": 0.0}
    numbers = {"steady": 1.0 + 1e-12, "moved": 2.0, "new": 3}
    document = {"snippet": "demo", "numbers": {k: {**entry, "value": v} for k, v in numbers.items()}}
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "numbers.json").write_text(json.dumps({**document, "figures": {}}))
    record.write(runner.Result("demo", tmp_path / "run", 0.0, False))
    assert record.load("demo") == {"steady": 1.0, "moved": 2.0, "new": 3}


ALLOWED_IMPORTS = {"numpy", "matplotlib", "gradlab"} | set(sys.stdlib_module_names)
FRAMEWORK_IMPORTS = ALLOWED_IMPORTS | {"torch", "jax"} | {p.stem for p in runner.framework_modules()}


def imported_modules(path) -> set[str]:
    import ast

    tree = ast.parse(path.read_text(encoding="utf-8"))
    modules = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    modules |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and not node.level}
    return modules


@pytest.mark.parametrize(
    "path",
    sorted(p for p in runner.SNIPPETS.rglob("*.py") if runner.FRAMEWORKS not in p.parents),
    ids=lambda p: p.name,
)
def test_snippets_and_gradlab_import_only_numpy_matplotlib_and_the_standard_library(path):
    """A reader runs a snippet with nothing but numpy and matplotlib installed."""
    foreign = sorted(m for m in imported_modules(path) if m.split(".")[0] not in ALLOWED_IMPORTS)
    assert not foreign, f"{path.relative_to(ROOT)} imports {foreign}: snippets need only numpy and matplotlib"


@pytest.mark.parametrize("path", sorted(runner.FRAMEWORKS.glob("*.py")), ids=lambda p: p.name)
def test_framework_scripts_import_one_framework_and_numpy(path):
    """A framework script runs with its framework, numpy and matplotlib; a *_torch.py file does
    not need JAX and a *_jax.py file does not need PyTorch."""
    modules = {m.split(".")[0] for m in imported_modules(path)}
    foreign = sorted(modules - FRAMEWORK_IMPORTS)
    assert not foreign, f"{path.relative_to(ROOT)} imports {foreign}"
    assert not (path.stem.endswith("_torch") and "jax" in modules), f"{path.name} imports jax"
    assert not (path.stem.endswith("_jax") and "torch" in modules), f"{path.name} imports torch"


def test_claims_are_recorded_and_a_changed_or_vanished_claim_is_drift(tmp_path, monkeypatch):
    """A claim's statement is pinned like a number: a sentence that changes, vanishes or appears
    shows in `git diff tests/recorded` and fails the drift test until it is recorded."""
    monkeypatch.setattr(record, "RECORDED", tmp_path / "recorded")
    claims = {"vanishes": {"holds": True, "statement": "It vanishes."}}
    document = {"snippet": "demo", "numbers": {}, "claims": claims, "figures": {}}
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "numbers.json").write_text(json.dumps(document))
    record.write(runner.Result("demo", tmp_path / "run", 0.0, False))
    assert record.load_claims("demo") == {"vanishes": "It vanishes."} and record.load("demo") == {}
    assert record.drift(document, {}, docs=tmp_path, claims=record.load_claims("demo")) == []
    changed = {
        **document,
        "claims": {"vanishes": {"holds": True, "statement": "It explodes."}, "new": claims["vanishes"]},
    }
    problems = record.drift(changed, {}, docs=tmp_path, claims=record.load_claims("demo"))
    assert any("claim 'vanishes' now says 'It explodes.'" in p for p in problems)
    assert any("claim 'new' is new" in p for p in problems)
    gone = record.drift({**document, "claims": {}}, {}, docs=tmp_path, claims=record.load_claims("demo"))
    assert gone == ["demo: claim 'vanishes' was recorded but the snippet no longer checks it"]
