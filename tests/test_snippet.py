"""gradlab/snippet.py: arguments, one-line errors, recorded numbers and figures."""

import json
import sys

import matplotlib.pyplot as plt
import pytest
from gradlab import snippet


def test_a_bad_argument_is_one_line_on_stderr(capsys, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["demo.py", "--depth", "-3"])
    monkeypatch.delenv(snippet.NAME_ENV, raising=False)
    monkeypatch.delitem(sys.modules, "ipykernel", raising=False)
    parser = snippet.parser("demo")
    parser.add_argument("--depth", type=snippet.positive_int, default=3)
    with pytest.raises(SystemExit) as leave:
        snippet.parse(parser)
    assert leave.value.code == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1
    assert error.startswith("demo.py: error: argument --depth: must be a positive integer, got -3")


def test_in_a_kernel_the_kernels_own_arguments_are_ignored(monkeypatch, tmp_path):
    monkeypatch.setattr(sys, "argv", ["ipykernel_launcher.py", "-f", "kernel-1.json"])
    monkeypatch.setitem(sys.modules, "ipykernel", object())
    monkeypatch.delenv(snippet.NAME_ENV, raising=False)
    monkeypatch.setenv(snippet.ARGV_ENV, f"--out {tmp_path} --seed 7")
    args, results = snippet.parse(snippet.parser())
    assert (args.seed, args.out, results.name) == (7, tmp_path, "notebook")


@pytest.mark.parametrize("reads", [False, True])
def test_numbers_json_says_whether_the_run_read_its_seed(reads, monkeypatch, tmp_path):
    """A run that never reads ``args.seed`` has no random draws ``--seed`` could move (the tests
    skip its other seeds); reading it anywhere, even through ``getattr``, counts."""
    monkeypatch.setattr(sys, "argv", ["demo.py", "--out", str(tmp_path), "--seed", "3"])
    monkeypatch.delenv(snippet.NAME_ENV, raising=False)
    monkeypatch.delitem(sys.modules, "ipykernel", raising=False)
    args, results = snippet.parse(snippet.parser())
    assert vars(args)["seed"] == 3 and not args.seed_read  # parsing, and vars(), read nothing
    if reads:
        snippet.seeds(getattr(args, "seed"))  # noqa: B009  (any way of reading it counts)
    assert args.seed_read is reads and "seed_read" not in vars(args) and "_seed_read" not in vars(args)
    results.number("one", 1, "one")
    results.save()
    assert json.loads((tmp_path / "numbers.json").read_text())["reads_seed"] is reads


def test_numbers_are_checked_and_saved_with_their_tolerances(tmp_path, capsys):
    results = snippet.Results("demo", tmp_path)
    results.number("ratio", 2.5e-7, "a ratio", atol=1e-9)
    results.number("count", 12, "a count")
    with pytest.raises(ValueError, match="recorded twice"):
        results.number("count", 13, "again")
    with pytest.raises(ValueError, match="lower_case"):
        results.number("Bad-Key", 1, "bad")
    with pytest.raises(TypeError, match="bool, int or float"):
        results.number("text", "1.0", "a string")
    results.save()
    saved = json.loads((tmp_path / "numbers.json").read_text())
    assert saved["numbers"]["ratio"] == {"value": 2.5e-7, "about": "a ratio", "rtol": 1e-6, "atol": 1e-9}
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].index("2.5e-07") + len("2.5e-07") == lines[2].index("12") + len("12"), (
        "values right-aligned"
    )


def test_a_figure_needs_a_title_and_alt_text(tmp_path):
    results = snippet.Results("demo", tmp_path)
    fig, ax = plt.subplots()
    ax.plot([1, 2], [3, 4])
    with pytest.raises(ValueError, match="needs a title"):
        results.figure(fig, "curve", alt="A rising line.")
    ax.set_title("A line")
    with pytest.raises(ValueError, match="alt text"):
        results.figure(fig, "curve", alt="  ")
    results.figure(fig, "curve", alt="A rising line.")
    assert results.figures == {"curve": {"alt": "A rising line.", "title": "A line"}}
    assert (tmp_path / "curve.svg").exists() and (tmp_path / "curve-dark.svg").exists()
    plt.close(fig)


def test_claims_are_recorded_and_a_failing_one_fails_the_run(tmp_path, capsys, monkeypatch):
    monkeypatch.delitem(sys.modules, "ipykernel", raising=False)
    results = snippet.Results("demo", tmp_path)
    results.number("ratio", 0.5, "a ratio")
    assert (
        results.claim("small", 0.5 < 1, "The ratio is below 1.", {"ratio": 0.5}) is None
    )  # no "True" cell output
    assert results.claims["small"]["holds"] is True
    with pytest.raises(TypeError, match="bool"):
        results.claim("not_bool", 0.5, "A number is not a condition.")
    with pytest.raises(ValueError, match="twice"):
        results.claim("ratio", True, "Same name as a number.")
    results.claim("large", 0.5 > 1, "The ratio exceeds 1.", {"ratio": 0.5})
    with pytest.raises(SystemExit) as leave:
        results.save()
    assert leave.value.code == 1
    error = capsys.readouterr().err
    assert "claim 'large' does not hold: The ratio exceeds 1." in error and "'ratio': 0.5" in error
    assert "small" not in error
    saved = json.loads((tmp_path / "numbers.json").read_text())
    assert saved["claims"] == {
        "small": {"holds": True, "statement": "The ratio is below 1."},
        "large": {"holds": False, "statement": "The ratio exceeds 1."},
    }


def test_in_a_kernel_a_failing_claim_raises(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ipykernel", object())
    results = snippet.Results("demo", tmp_path)
    results.claim("wrong", False, "Two is less than one.", {"two": 2})
    with pytest.raises(snippet.ClaimFailed, match="claim 'wrong' does not hold: Two is less than one"):
        results.save()


def test_seeds_of_two_runs_never_overlap():
    assert snippet.seeds(0) == [0, 1, 2, 3, 4]
    assert snippet.seeds(1) == [5, 6, 7, 8, 9]
    assert not set(snippet.seeds(2)) & set(snippet.seeds(3))


def test_spread_records_median_min_max_and_the_number_of_seeds(tmp_path):
    results = snippet.Results("demo", tmp_path)
    assert results.spread("dead", [0.3, 0.1, 0.2, 0.5, 0.4], "dead share") == (0.3, 0.1, 0.5)
    numbers = {key: entry["value"] for key, entry in results.numbers.items()}
    assert numbers == {"n_seeds": 5, "dead_median": 0.3, "dead_min": 0.1, "dead_max": 0.5}
    with pytest.raises(ValueError, match="n_seeds"):
        results.spread("other", [1.0, 2.0], "fewer seeds")


def test_with_a_setting_changed_a_failing_claim_is_a_note(tmp_path, capsys, monkeypatch):
    """A reader's exercise (`--lr 0.5`) may leave the chapter's setting: the claims are reported,
    the run succeeds. Only --seed keeps them binding."""
    monkeypatch.delitem(sys.modules, "ipykernel", raising=False)
    monkeypatch.delenv(snippet.NAME_ENV, raising=False)
    parser = snippet.parser("demo")
    parser.add_argument("--lr", type=float, default=0.1)
    for argv, fatal in ((["demo.py", "--lr", "0.5"], False), (["demo.py", "--seed", "3"], True)):
        monkeypatch.setattr(sys, "argv", [*argv, "--out", str(tmp_path)])
        _, results = snippet.parse(parser)
        results.claim("small", False, "The loss is small.")
        if fatal:
            with pytest.raises(SystemExit):
                results.save()
        else:
            results.save()
            assert "with --lr changed, these sentences of the chapter do not hold" in capsys.readouterr().err


def test_a_twin_is_a_number_with_what_it_mirrors_and_why(tmp_path):
    results = snippet.Results("demo_torch", tmp_path)
    results.twin(
        "ratio", 2.0, "a ratio", of="demo.ratio", rtol=1e-12, atol=0.0, reason="float64, same kernels"
    )
    assert results.numbers["ratio"]["value"] == 2.0
    assert results.twins == {
        "ratio": {"of": "demo.ratio", "rtol": 1e-12, "atol": 0.0, "reason": "float64, same kernels"}
    }
    with pytest.raises(ValueError, match=r"snippet\.key"):
        results.twin("other", 1.0, "x", of="ratio", rtol=0.1, atol=0.0, reason="r")
    with pytest.raises(ValueError, match="reason"):
        results.twin("third", 1.0, "x", of="demo.ratio", rtol=0.1, atol=0.0, reason=" ")


def test_a_twin_spread_mirrors_median_min_and_max(tmp_path):
    results = snippet.Results("demo_torch", tmp_path)
    assert results.twin_spread(
        "dead", [0.3, 0.1, 0.5], "dead share", of="demo.dead", rtol=0, atol=0, reason="exact"
    )
    assert set(results.twins) == {"dead_median", "dead_min", "dead_max"}
    assert results.twins["dead_min"] == {"of": "demo.dead_min", "rtol": 0.0, "atol": 0.0, "reason": "exact"}
    assert results.numbers["dead_max"]["value"] == 0.5 and results.numbers["n_seeds"]["value"] == 3


def test_an_answers_claim_fails_no_run_and_is_recorded_as_one(tmp_path, capsys, monkeypatch):
    """A claim only an exercise's answer states may be false at the defaults: the run still
    succeeds, the table says "no (answer)", and numbers.json marks it, for the build to check
    where a page quotes it."""
    monkeypatch.delitem(sys.modules, "ipykernel", raising=False)
    results = snippet.Results("demo", tmp_path)
    results.claim("trains", False, "Plain SGD trains at gain 1.", {"final": 0.99}, answer=True)
    results.claim("small", True, "The ratio is below 1.")
    results.save()  # no SystemExit
    shown = capsys.readouterr()
    assert "no (answer)  Plain SGD trains at gain 1." in shown.out and "does not hold" not in shown.err
    saved = json.loads((tmp_path / "numbers.json").read_text())
    assert saved["claims"]["trains"] == {
        "holds": False,
        "statement": "Plain SGD trains at gain 1.",
        "answer": True,
    }
    assert saved["claims"]["small"] == {"holds": True, "statement": "The ratio is below 1."}
