"""pipeline/blas.py: the runs and the tests compute on the same OpenBLAS kernels on every Linux
x86-64 machine with AVX2, and kernels asked for but not loaded stop the runs."""

import json

import pytest
from conftest import ROOT

from pipeline import blas, executor, runner

X86 = blas.pinned_environment(environ={}) == {blas.VARIABLE: blas.PINNED}
needs_x86 = pytest.mark.skipif(not X86, reason="not an x86-64 CPU with AVX2 and FMA: nothing is pinned")


@pytest.mark.parametrize(
    ("environ", "machine", "flags", "expected"),
    [
        ({}, "x86_64", {"avx2", "fma", "sse2"}, {"OPENBLAS_CORETYPE": "Haswell"}),
        (
            {"OPENBLAS_CORETYPE": ""},
            "x86_64",
            {"avx2", "fma"},
            {"OPENBLAS_CORETYPE": "Haswell"},
        ),  # empty: none
        ({}, "AMD64", {"avx2", "fma"}, {}),  # Windows: no /proc/cpuinfo to read the flags from
        ({}, "x86_64", {"avx", "sse2"}, {}),  # no AVX2: the Haswell kernels would not run
        ({}, "aarch64", {"asimd"}, {}),
        ({"OPENBLAS_CORETYPE": "SkylakeX"}, "x86_64", {"avx2", "fma"}, {}),  # set already: it wins
    ],
)
def test_the_pin_depends_on_the_cpu_and_yields_to_the_environment(environ, machine, flags, expected):
    assert blas.pinned_environment(environ=environ, machine=machine, flags=flags) == expected


@needs_x86
def test_this_test_process_runs_the_pinned_kernels():
    """conftest.py set the variable before numpy loaded (on a CPU whose own choice is Haswell
    the kernels alone would not show a missing pin; the variable does)."""
    import os

    assert os.environ[blas.VARIABLE] == blas.PINNED
    assert blas.kernel() == blas.wanted() == blas.PINNED


@needs_x86
def test_a_kernel_asked_for_but_not_loaded_is_an_error(monkeypatch):
    blas.check()  # the one loaded is the one asked for
    monkeypatch.setenv(blas.VARIABLE, "haswell")  # OpenBLAS ignores the case
    blas.check()
    for known in ("Zen", "Excavator"):  # names OpenBLAS knows and reports as Haswell, Sandybridge
        monkeypatch.setenv(blas.VARIABLE, known)
        blas.check()
    monkeypatch.setenv(blas.VARIABLE, "NoSuchCore")  # OpenBLAS would ignore it and pick its own
    with pytest.raises(RuntimeError, match=r"NoSuchCore: OpenBLAS does not know the name"):
        blas.check()


@needs_x86
def test_a_server_whose_openblas_runs_other_kernels_starts_no_run(tmp_path, monkeypatch):
    """The runner's server checks the kernels after importing numpy: a name OpenBLAS ignores
    stops it before any run, with the reason on stderr."""
    monkeypatch.setenv(blas.VARIABLE, "NoSuchCore")
    folder = tmp_path / "out"
    folder.mkdir()
    server = executor.Server()
    try:
        error, _ = server.run("script", ROOT / "snippets" / "four_methods.py", folder)
    finally:
        server.close()
    assert error is not None and "the snippet runner stopped" in error
    assert not (folder / "numbers.json").exists()


def test_pin_does_nothing_where_nothing_is_pinned(monkeypatch):
    """numpy is loaded in this process: pinning again is a no-op, not an error, where there is
    nothing to pin (the variable set already; another architecture)."""
    import os

    monkeypatch.setenv(blas.VARIABLE, "SkylakeX")
    blas.pin()
    assert os.environ[blas.VARIABLE] == "SkylakeX"
    monkeypatch.delenv(blas.VARIABLE)
    monkeypatch.setattr(blas.platform, "machine", lambda: "aarch64")
    blas.pin()
    assert blas.VARIABLE not in os.environ


def test_the_kernel_asked_for_is_part_of_the_cache_key(monkeypatch):
    path = ROOT / "snippets" / "saturation.py"
    monkeypatch.setenv(blas.VARIABLE, "Haswell")
    haswell = runner.cache_key(path)
    monkeypatch.setenv(blas.VARIABLE, "haswell")  # the same kernels: the same key
    assert runner.cache_key(path) == haswell
    monkeypatch.setenv(blas.VARIABLE, "SkylakeX")
    assert runner.cache_key(path) != haswell


def test_the_key_names_what_decides_the_rounding(monkeypatch):
    """Where nothing is pinned, the kernels OpenBLAS picked; always, the CPU features numpy's own
    loops dispatch on: a shared cache must not serve one machine's results to another."""
    import numpy as np

    monkeypatch.delenv(blas.VARIABLE, raising=False)
    monkeypatch.setattr(blas, "pinned_environment", lambda *a, **k: {})
    part = blas.cache_part()
    assert (
        f"auto {blas.kernel()}" in part
        and ("AVX2" in part) == np._core._multiarray_umath.__cpu_features__["AVX2"]
    )
    monkeypatch.setattr(blas, "kernel", lambda: "SomeOtherKernels")
    assert blas.cache_part() != part


@needs_x86
def test_the_runners_children_run_the_pinned_kernels(tmp_path, monkeypatch):
    """A run in the runner's server (started from an environment without the variable) computes
    on the Haswell kernels."""
    monkeypatch.delenv(blas.VARIABLE)
    script = tmp_path / "which_kernel.py"
    script.write_text(
        "import json, os, sys\nfrom pathlib import Path\nfrom pipeline import blas\n"
        "out = Path(sys.argv[sys.argv.index('--out') + 1])\n"
        "seen = {'kernel': blas.kernel(), 'asked': os.environ.get(blas.VARIABLE)}\n"
        "(out / 'numbers.json').write_text(json.dumps(seen))\n",
        encoding="utf-8",
    )
    folder = tmp_path / "out"
    folder.mkdir()
    server = executor.Server()
    try:
        error, _ = server.run("script", script, folder)
    finally:
        server.close()
    assert error is None
    seen = json.loads((folder / "numbers.json").read_text())
    assert seen == {"kernel": blas.PINNED, "asked": blas.PINNED}  # asked: a CPU may pick Haswell itself


@needs_x86
@pytest.mark.parametrize("kernels", ["Sandybridge", "Haswell"])
def test_a_readers_run_says_when_its_kernels_are_not_the_sites(kernels, tmp_path):
    """``python snippets/NAME.py`` on other OpenBLAS kernels (AVX without FMA: every x86-64 CPU
    with AVX runs them) prints one note on stderr naming them and how to get the site's numbers;
    on the site's kernels it prints none."""
    import os
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "snippets/four_methods.py", "--out", str(tmp_path)],
        cwd=ROOT, env={**os.environ, blas.VARIABLE: kernels}, capture_output=True, text=True, check=True,
    )  # fmt: skip
    notes = [line for line in done.stderr.splitlines() if line.startswith("note: numpy's OpenBLAS")]
    if kernels == blas.PINNED:
        assert notes == []
    else:
        assert len(notes) == 1 and f"runs its {kernels} kernels" in notes[0]
        assert "OPENBLAS_CORETYPE=Haswell python snippets/four_methods.py" in notes[0]


def test_the_note_on_a_cpu_that_cannot_run_the_sites_kernels_gives_no_command():
    from gradlab import snippet

    assert "OPENBLAS_CORETYPE=Haswell python snippets/" in snippet.kernels_note("SkylakeX", runnable=True)
    note = snippet.kernels_note("Sandybridge", runnable=False)
    assert "cannot run the Haswell kernels" in note and "OPENBLAS_CORETYPE" not in note


def test_the_note_names_the_kernels_the_build_pins():
    """gradlab (numpy and matplotlib only) cannot import pipeline: the name is written twice."""
    from gradlab import snippet

    assert snippet.SITE_KERNELS == blas.PINNED
