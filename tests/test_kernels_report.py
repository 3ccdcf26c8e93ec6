"""benchmarks/kernels.py (make kernels): what it reports, and its exit status under --check,
on made-up results (the real report runs every build run twice: minutes)."""

import importlib.util
import types

import pytest
from conftest import ROOT

from pipeline import blas, runner

spec = importlib.util.spec_from_file_location("kernels_report", ROOT / "benchmarks" / "kernels.py")
kernels = importlib.util.module_from_spec(spec)
spec.loader.exec_module(kernels)


def result(value: float, holds: bool):
    document = {
        "numbers": {"shown": {"value": value, "rtol": 1e-6, "atol": 0.0}},
        "claims": {"sentence": {"holds": holds, "statement": "A sentence."}},
    }
    numbers = {key: entry["value"] for key, entry in document["numbers"].items()}
    return types.SimpleNamespace(document=document, numbers=numbers, claims=document["claims"])


@pytest.fixture
def fake_runs(monkeypatch):
    """Each call of run_many returns the next made-up outcome for one site run."""
    monkeypatch.setenv(blas.VARIABLE, blas.PINNED)  # restored after the test (run_all sets it)
    request = (runner.snippet_path("four_methods"), ())
    monkeypatch.setattr(kernels.runner, "build_requests", lambda: [request])
    monkeypatch.setattr(kernels, "quoted_on_pages", lambda: {("four_methods", ()): {"shown"}})
    monkeypatch.setattr(
        kernels.subprocess, "run", lambda *a, **k: types.SimpleNamespace(stdout="Sandybridge\n")
    )
    outcomes = []
    monkeypatch.setattr(
        kernels.runner, "run_many", lambda requests, **k: {("four_methods", ()): outcomes.pop(0)}
    )
    return outcomes


def test_a_claim_that_fails_on_other_kernels_fails_the_check(fake_runs, capsys):
    fake_runs += [result(1.0, True), result(1.5, False)]
    assert kernels.main(["Sandybridge", "--check"]) == 1
    report = capsys.readouterr().out
    assert "four_methods: claim sentence fails" in report
    assert "four_methods: shown 1.0 -> 1.5" in report.split("numbers the pages quote")[1]


def test_numbers_that_move_are_reported_but_pass_the_check(fake_runs, capsys):
    fake_runs += [result(1.0, True), result(1.5, True)]
    assert kernels.main(["Sandybridge", "--check"]) == 0
    assert "claims that fail or runs that fail (0)" in capsys.readouterr().out


def test_without_check_the_status_is_0(fake_runs):
    fake_runs += [result(1.0, True), result(1.0, False)]
    assert kernels.main(["Sandybridge"]) == 0
