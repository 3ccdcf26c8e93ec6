"""``make seeds``: which runs it asks for, how it reads seeds, and what it reports."""

from types import SimpleNamespace

import pytest
from conftest import ROOT

from pipeline import runner, scaffold, seeds


def test_seeds_are_read_as_ranges_and_lists():
    assert seeds.parse_seeds("3-5") == [3, 4, 5]
    assert seeds.parse_seeds("4,5, 8") == [4, 5, 8]
    assert seeds.parse_seeds("3-4,4,9") == [3, 4, 9]
    for bad in ("x", "5-3", "3-", "-1", "3;4", ""):
        with pytest.raises(ValueError, match="SEEDS="):
            seeds.parse_seeds(bad)


def test_each_seed_of_the_snippet_and_of_its_quoted_answers_runs():
    answers = {
        ("demo", ("--gain", "3")): ["c"],
        ("demo", ("--seed", "1")): ["c"],
        ("other", ("--x", "1")): ["c"],
    }
    runs = seeds.requests(["demo"], [3, 4], answers)
    assert runs == [
        ("demo", ("--seed", "3")),
        ("demo", ("--seed", "4")),
        ("demo", ("--gain", "3", "--seed", "3")),
        ("demo", ("--gain", "3", "--seed", "4")),
    ]  # an exercise that sets its own seed, and another snippet's answers, are not run


def test_a_failed_run_and_a_quoted_answer_claim_that_fails_are_reported_with_their_command():
    holds = lambda value: {"holds": value, "statement": "it holds"}  # noqa: E731
    answers = {("dying_relu", ("--lr", "0.02")): ["revives", "absent"]}
    outcomes = {
        ("dying_relu", ("--seed", "3")): SimpleNamespace(claims={"site": holds(True)}),
        ("dying_relu", ("--seed", "4")): runner.SnippetError("claim 'site' does not hold: it holds"),
        ("dying_relu", ("--lr", "0.02", "--seed", "3")): SimpleNamespace(
            claims={"revives": holds(True), "absent": holds(True)}
        ),
        ("dying_relu", ("--lr", "0.02", "--seed", "4")): SimpleNamespace(claims={"revives": holds(False)}),
    }
    found = seeds.failures(outcomes, answers)
    assert len(found) == 2, found
    assert found[0].startswith("python snippets/dying_relu.py --lr 0.02 --seed 4\n")
    assert "claim 'revives' does not hold: it holds" in found[0] and "no claim 'absent'" in found[0]
    assert found[1].startswith("python snippets/dying_relu.py --seed 4\n") and "claim 'site'" in found[1]
    assert seeds.failures({k: v for k, v in outcomes.items() if "4" not in k[1]}, answers) == []


def test_the_weekly_workflow_and_the_make_target_run_it():
    workflow = scaffold.load_yaml((ROOT / ".github" / "workflows" / "seeds.yml").read_text("utf-8"))
    assert (
        "schedule" in workflow[True]
        and "make seeds SEEDS=3-9" in workflow["jobs"]["seeds"]["steps"][-1]["run"]
    )
    make = (ROOT / "Makefile").read_text(encoding="utf-8").split("\nseeds:")[1].split("\n\n")[0]
    assert "-m pipeline.seeds" in make and "$(NAME)" in make and "$(SEEDS)" in make


def test_the_answers_it_checks_are_the_ones_the_pages_quote():
    answers = seeds.quoted_answer_claims()
    assert ("diagnostics", ("--gain", "1")) in answers and "plain_sgd_trains" in answers[
        ("diagnostics", ("--gain", "1"))
    ]
