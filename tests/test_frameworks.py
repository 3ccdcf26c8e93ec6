"""The framework scripts (snippets/frameworks/*_torch.py, *_jax.py) against their numpy twins:
every number a framework script records with ``results.twin`` agrees with the numpy snippet's
number it mirrors, within the tolerance and for the reason the script states."""

import math

import pytest

from pipeline import runner

FRAMEWORK_SCRIPTS = [p.stem for p in runner.snippet_paths() if p.parent == runner.FRAMEWORKS]


@pytest.mark.parametrize("name", FRAMEWORK_SCRIPTS)
def test_framework_numbers_agree_with_their_numpy_twins(name, snippet_results):
    result = snippet_results[name]
    problems = []
    for key, twin in result.twins.items():
        snippet, twin_key = twin["of"].split(".")
        mine, theirs = result.numbers[key], snippet_results[snippet].numbers.get(twin_key)
        if theirs is None:
            problems.append(f"{name}.{key}: its twin {twin['of']} is not recorded")
        elif not math.isclose(mine, theirs, rel_tol=twin["rtol"], abs_tol=twin["atol"]):
            problems.append(
                f"{name}.{key} = {mine!r} but {twin['of']} = {theirs!r} "
                f"(rtol {twin['rtol']:g}, atol {twin['atol']:g}: {twin['reason']})"
            )
    assert not problems, "\n".join(problems)


def test_every_torch_or_jax_script_has_twins(snippet_results):
    """A *_torch.py or *_jax.py script mirrors a chapter's numpy experiment: it says which numbers."""
    for name in FRAMEWORK_SCRIPTS:
        if name.endswith(("_torch", "_jax")) and name != "diagnose_torch":
            assert snippet_results[name].twins, f"{name} records no twins (results.twin)"
