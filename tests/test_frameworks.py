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


def test_every_chapters_framework_scripts_have_twins(snippet_results):
    """A chapter's *_torch.py / *_jax.py scripts mirror its numpy experiment and say which numbers
    (results.twin). A script may check a quantity that has no numpy twin (JAX's check_grads tests
    one random direction, not gradcheck's entries) as a claim instead, but not both of a pair."""
    chapters = {name.rsplit("_", 1)[0] for name in FRAMEWORK_SCRIPTS if name.endswith(("_torch", "_jax"))}
    for chapter in sorted(chapters - {"diagnose"}):
        pair = [n for n in (f"{chapter}_torch", f"{chapter}_jax") if n in FRAMEWORK_SCRIPTS]
        assert any(snippet_results[n].twins for n in pair), f"{' and '.join(pair)} record no twins"
