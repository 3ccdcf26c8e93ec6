"""pipeline/runner.py: caching by content hash, failures that name file and line, no stale results."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pipeline import runner

OK = '''"""A tiny snippet."""

# %% [markdown]
# Records one number.

# %%
from gradlab import snippet

args, results = snippet.parse(snippet.parser())
results.number("answer", {value}, "the answer")
results.save()
'''

BOOM = '''"""A snippet that fails."""

# %% [markdown]
# Fails in its second code cell.

# %%
x = 1

# %%
y = x + 1
raise RuntimeError("boom on purpose")
'''


def test_a_result_is_cached_until_the_snippet_changes(tmp_path):
    path = tmp_path / "tiny.py"
    path.write_text(OK.format(value=42))
    first = runner.run_one(path, cache=tmp_path / "cache")
    assert not first.cached and first.numbers == {"answer": 42}
    again = runner.run_one(path, cache=tmp_path / "cache")
    assert again.cached and again.folder == first.folder

    old = time.time() - runner.STALE_AFTER_SECONDS - 1
    os.utime(first.folder, (old, old))  # published long ago
    path.write_text(OK.format(value=43))
    changed = runner.run_one(path, cache=tmp_path / "cache")
    assert not changed.cached and changed.numbers == {"answer": 43}
    # a build or test session that started before the edit holds `first` and may still read it
    assert first.notebook.exists(), "an earlier key's result stays a while after a newer one"
    marked = first.folder / runner.SUPERSEDED
    os.utime(marked, (old, old))  # superseded long ago (however old the result itself is)
    path.write_text(OK.format(value=44))
    runner.run_one(path, cache=tmp_path / "cache")
    assert not first.folder.exists(), "a result superseded long ago is removed at the next publish"
    assert changed.notebook.exists() and (changed.folder / runner.SUPERSEDED).exists()

    path.write_text(OK.format(value=43))  # changed back: that result is current again
    again = runner.run_one(path, cache=tmp_path / "cache")
    assert again.cached and again.folder == changed.folder
    assert not (changed.folder / runner.SUPERSEDED).exists(), "a current result carries no mark"


def test_a_publish_leaves_the_runs_still_being_written_and_removes_the_dead_ones(tmp_path):
    path = tmp_path / "tiny.py"
    path.write_text(OK.format(value=1))
    home = runner.run_one(path, cache=tmp_path / "cache").folder.parent
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True)
    dead, alive = home / f"k1.tmp-{int(gone.stdout)}-1", home / f"k2.tmp-{os.getpid()}-1"
    for folder in (dead, alive):
        folder.mkdir()
    path.write_text(OK.format(value=2))
    assert runner.run_one(path, cache=tmp_path / "cache").numbers == {"answer": 2}
    assert alive.exists(), "another process's run in progress is not touched"
    assert not dead.exists(), "a run whose process died leaves nothing behind for long"


def test_files_are_hashed_once_inside_a_build_and_again_after_it(tmp_path, monkeypatch):
    path = tmp_path / "tiny.py"
    path.write_text(OK.format(value=1))
    reads = []
    real = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes", lambda self: reads.append(self) or real(self))
    with runner.files_unchanged():
        first = runner.cache_key(path)
        assert runner.cache_key(path) == first
        assert reads.count(path) == 1, "inside one build a file is read once"
    path.write_text(OK.format(value=2))  # same size, maybe the same timestamp: read again anyway
    assert runner.cache_key(path) != first


def test_the_key_covers_library_and_requirements(tmp_path, monkeypatch):
    path = tmp_path / "tiny.py"
    path.write_text(OK.format(value=1))
    library = tmp_path / "gradlab"
    library.mkdir()
    (library / "engine.py").write_text("x = 1\n")
    monkeypatch.setattr(runner, "LIBRARY", library)
    before = runner.cache_key(path)
    (library / "engine.py").write_text("x = 2\n")
    assert runner.cache_key(path) != before
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("numpy==1\n")
    monkeypatch.setattr(runner, "HASHED_FILES", [requirements])
    before = runner.cache_key(path)
    requirements.write_text("numpy==2\n")
    assert runner.cache_key(path) != before


def test_a_failing_snippet_names_file_line_and_error_and_publishes_nothing(tmp_path):
    path = tmp_path / "boom.py"
    path.write_text(OK.format(value=1))
    good = runner.run_one(path, cache=tmp_path / "cache")
    path.write_text(BOOM)
    with pytest.raises(runner.SnippetError) as failure:
        runner.run_all([path], cache=tmp_path / "cache")
    message = str(failure.value)
    line = BOOM.splitlines().index('raise RuntimeError("boom on purpose")') + 1
    assert f"boom.py:{line}: RuntimeError: boom on purpose" in message
    assert "Traceback" in message or "RuntimeError" in message.splitlines()[-1]
    leftovers = [p for p in (tmp_path / "cache" / "boom").iterdir() if p != good.folder]
    assert leftovers == [], "a failed run must leave no result behind"


def test_docstring_becomes_the_notebook_title_cell(tmp_path):
    path = tmp_path / "tiny.py"
    path.write_text(OK.format(value=1))
    notebook = runner.to_notebook(path)
    assert notebook.cells[0].cell_type == "markdown"
    assert notebook.cells[0].source == "# A tiny snippet"


SLOW = '''"""A snippet that hangs."""

# timeout: 3

# %% [markdown]
# Never finishes its second code cell.

# %%
import time

# %%
while True:
    time.sleep(0.1)
'''

CLAIM = '''"""A snippet whose claim depends on the seed."""

# %% [markdown]
# Claims the seed is 0.

# %%
from gradlab import snippet

args, results = snippet.parse(snippet.parser())
results.claim("seed_is_zero", args.seed == 0, "The seed is zero.", {"seed": args.seed})
results.save()
'''


def test_a_snippet_past_its_limit_names_the_cell_and_the_limit(tmp_path):
    path = tmp_path / "slow.py"
    path.write_text(SLOW)
    assert runner.time_limit(path) == 3
    with pytest.raises(runner.SnippetError) as failure:
        runner.run_one(path, cache=tmp_path / "cache")
    line = SLOW.splitlines().index("while True:") + 1
    assert str(failure.value) == f"{path}:{line}: ran past 3 s (the cell starting here)"


def test_another_seed_is_cached_apart_and_a_failing_claim_fails_the_run(tmp_path):
    path = tmp_path / "claims.py"
    path.write_text(CLAIM)
    site = runner.run_one(path, cache=tmp_path / "cache")
    assert site.claims == {"seed_is_zero": {"holds": True, "statement": "The seed is zero."}}
    outcomes = runner.run_all([path], cache=tmp_path / "cache", args=("--seed", "1"), strict=False)
    message = str(outcomes["claims"])
    assert "claim 'seed_is_zero' does not hold: The seed is zero." in message and "'seed': 1" in message
    assert runner.run_one(path, cache=tmp_path / "cache").cached, "the site's result is untouched"


def test_one_broken_snippet_fails_only_the_tests_that_ask_for_it(tmp_path):
    """The session's results hold the error in place of the broken snippet's result: a test about
    another snippet gets its result; a test about the broken one fails naming it."""
    from conftest import Results

    good, broken = tmp_path / "good.py", tmp_path / "broken.py"
    good.write_text(OK.format(value=7))
    broken.write_text(BOOM)
    results = Results(runner.run_all([good, broken], cache=tmp_path / "cache", strict=False))
    assert results["good"].numbers == {"answer": 7}
    failed = r"(?s)snippets/broken.py failed to run:.*boom on purpose"
    with pytest.raises(pytest.fail.Exception, match=failed):
        results["broken"]


PID = '''"""A snippet that records its process."""

# %% [markdown]
# Records which server ran it, whether the libraries were loaded before it started, and whether
# an earlier run left anything behind.

# %%
import os
import sys

warm = "matplotlib.pyplot" in sys.modules and "IPython" in sys.modules
# gradlab and what the notebook shell loads on first use, imported by the server too
warmed_up = {"gradlab.plot", "gradlab.stacked", "IPython.core.magics.execution"} <= set(sys.modules)
import gc

frozen = gc.get_freeze_count()
leftover = hasattr(sys, "gradlab_test_mark")
sys.gradlab_test_mark = True

from gradlab import snippet

args, results = snippet.parse(snippet.parser())
results.number("server", os.getppid(), "the process that forked this run")
results.number("warm", int(warm), "matplotlib and IPython were imported before the run")
results.number("leftover", int(leftover), "an earlier run's mark was seen")
results.number("warmed_up", int(warmed_up), "gradlab and the shell's modules were imported before the run")
results.number("frozen", frozen, "objects the server froze, outside the run's collections")
results.number("seed", args.seed, "the seed")
results.save()
'''


def test_runs_come_warm_from_one_server_start_clean_and_are_cached_apart(tmp_path):
    """Runs fork from one warm server (the libraries imported once, before any run), each starts
    from the server's state, not the previous run's, with its own arguments and its own cached
    result; a broken one names file and line."""
    path = tmp_path / "pid.py"
    path.write_text(PID)
    site, one, two = (
        runner.run_one(path, cache=tmp_path / "cache"),
        *runner.run_scripts(path, [("--seed", "1"), ("--seed", "2")], cache=tmp_path / "cache"),
    )
    assert one.numbers["seed"] == 1 and two.numbers["seed"] == 2
    assert one.numbers["server"] == two.numbers["server"] != site.numbers["server"]
    assert [r.numbers["warm"] for r in (site, one, two)] == [1, 1, 1], "imports paid by the server"
    assert [r.numbers["warmed_up"] for r in (site, one, two)] == [1, 1, 1], "first-use work done once"
    assert [r.numbers["leftover"] for r in (site, one, two)] == [0, 0, 0], "every run starts afresh"
    assert all(r.numbers["frozen"] > 10_000 for r in (site, one, two)), "the server's imports are frozen"
    assert one.folder != two.folder and not one.cached
    assert all(
        r.cached for r in runner.run_scripts(path, [("--seed", "1"), ("--seed", "2")], tmp_path / "cache")
    )

    path.write_text(BOOM)
    (failed,) = runner.run_scripts(path, [("--seed", "1")], cache=tmp_path / "cache")
    line = BOOM.splitlines().index('raise RuntimeError("boom on purpose")') + 1
    assert isinstance(failed, runner.SnippetError)
    assert str(failed).startswith(f"{path}:{line}: RuntimeError: boom on purpose")


LOADED = '''"""A snippet that records whether its server had imported PyTorch."""

# %%
import os
import sys

preloaded = "torch" in sys.modules
{framework}
from gradlab import snippet

args, results = snippet.parse(snippet.parser())
results.number("server", os.getppid(), "the process that forked this run")
results.number("preloaded", int(preloaded), "torch was imported before the run")
results.save()
'''


def test_one_server_imports_the_frameworks_and_runs_their_scripts(tmp_path):
    """With two cores, only one server pays PyTorch's import; the framework script runs there,
    a numpy run on the other server finds no PyTorch; on_result sees every run as it ends."""
    framework, numpy_runs = tmp_path / "uses_torch.py", [tmp_path / f"plain_{i}.py" for i in range(3)]
    framework.write_text(LOADED.format(framework="import torch  # noqa: F401"))
    for path in numpy_runs:
        path.write_text(LOADED.format(framework=""))
    seen = []
    outcomes = runner.run_many(
        [(p, ()) for p in (framework, *numpy_runs)], tmp_path / "cache", jobs=2, progress=False,
        on_result=lambda run, outcome: seen.append(run),
    )  # fmt: skip
    assert sorted(seen) == sorted(outcomes)
    numbers = {name: outcome.numbers for (name, _), outcome in outcomes.items()}
    loaded_server = numbers["uses_torch"]["server"]
    assert numbers["uses_torch"]["preloaded"] == 1
    for name, recorded in numbers.items():  # torch is loaded in exactly the one server
        assert recorded["preloaded"] == (recorded["server"] == loaded_server), name


OUTPUTS = '''"""A snippet with every kind of output."""

# %%
import matplotlib.pyplot as plt

from gradlab import snippet

args, results = snippet.parse(snippet.parser())

# %%
print("first line")
print("second line")
6 * 7

# %%
results.number("one", 1, "one")
figure, axes = plt.subplots(figsize=(2, 1))
axes.plot([0, 1], [1, 0])
figure.tight_layout()

# %%
figure, axes = plt.subplots(figsize=(2, 1))
axes.plot([0, 1], [1, 0])
axes.set_title("A line")
results.figure(figure, "line", alt="A line from (0, 1) to (1, 0).")

# %%
figure, axes = plt.subplots(figsize=(2, 1))
axes.set_title("Changed after saving")
results.figure(figure, "changed", alt="An empty plot.")
axes.plot([0, 1], [0, 1])
results.save()
'''


def test_a_notebook_keeps_its_outputs_as_a_kernel_gives_them(tmp_path):
    """Printed lines in one stream output, a cell's last value as its result, a figure shown
    inline as a PNG, a figure saved with results.figure as its SVG, execution counts; the page
    reads its outputs from this notebook."""
    import nbformat

    path = tmp_path / "outputs.py"
    path.write_text(OUTPUTS)
    result = runner.run_one(path, cache=tmp_path / "cache")
    cells = [c for c in nbformat.read(result.notebook, as_version=4).cells if c.cell_type == "code"]
    assert [c.execution_count for c in cells] == [1, 2, 3, 4, 5]
    printed, value = cells[1].outputs
    assert printed.output_type == "stream" and printed.text == "first line\nsecond line\n"
    assert value.output_type == "execute_result" and value.data == {"text/plain": "42"}
    (shown,) = cells[2].outputs
    assert shown.output_type == "display_data" and "<Figure size" in shown.data["text/plain"]
    assert shown.data["image/png"] and "image/svg+xml" not in shown.data  # never saved: a PNG
    saved = cells[3].outputs[-1].data  # saved with results.figure: shown as the SVG saving drew
    svg = (result.folder / "line.svg").read_text()
    assert (
        "image/png" not in saved
        and saved["image/svg+xml"].replace(' style="background-color: #ffffff"', "") == svg
    )
    kinds = [o.output_type for o in cells[4].outputs]
    assert kinds == ["stream", "display_data"], kinds  # save()'s table, then the figure
    changed = cells[4].outputs[-1].data  # changed after saving: drawn again, as a PNG
    assert "image/svg+xml" not in changed and changed["image/png"]


DIES = '''"""A snippet whose process dies."""

# %%
import os

os._exit(3)
'''


def failure_of(tmp_path, name: str, source: str) -> tuple[Path, str]:
    """Run ``source`` as snippet ``name``; return its path and the SnippetError's message."""
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    with pytest.raises(runner.SnippetError) as failure:
        runner.run_one(path, cache=tmp_path / "cache")
    return path, str(failure.value)


def test_a_run_whose_process_dies_names_the_cell(tmp_path):
    path, message = failure_of(tmp_path, "dies", DIES)
    line = DIES.splitlines().index("import os") + 1
    assert message == f"{path}:{line}: the run ended without a result (the process died)"


DEAF = '''"""A snippet that ignores its alarm."""

# timeout: 1

# %%
import signal

signal.signal(signal.SIGALRM, signal.SIG_IGN)
while True:
    pass
'''


def test_a_run_that_ignores_its_alarm_is_killed(tmp_path, monkeypatch):
    monkeypatch.setenv("GRADLAB_GRACE_SECONDS", "1")  # read by the server: 30 s otherwise
    path, message = failure_of(tmp_path, "deaf", DEAF)
    line = DEAF.splitlines().index("import signal") + 1
    assert message == f"{path}:{line}: ran past 1 s and did not stop"


def test_a_script_run_past_its_limit_names_the_line(tmp_path):
    path = tmp_path / "slow.py"
    path.write_text(SLOW)
    (failed,) = runner.run_scripts(path, [("--seed", "1")], cache=tmp_path / "cache")
    lines = [SLOW.splitlines().index(text) + 1 for text in ("while True:", "    time.sleep(0.1)")]
    assert any(str(failed) == f"{path}:{n}: ran past 3 s (here)" for n in lines), str(failed)


JITTED = '''"""A JAX script."""

# %%
import jax
import jax.numpy as jnp

from gradlab import snippet

args, results = snippet.parse(snippet.parser())
results.number("twice", float(jax.jit(lambda x: 2.0 * x)(jnp.float32(1.5))), "twice 1.5")
results.save()
'''


def test_xla_keeps_its_compiled_programs_for_the_next_run(tmp_path, monkeypatch):
    """JAX's persistent compilation cache: the first run fills it, a run on another seed compiles
    nothing new (the same programs), and the numbers are the same."""
    monkeypatch.setenv("JAX_COMPILATION_CACHE_DIR", str(tmp_path / "xla"))
    path = tmp_path / "jitted.py"
    path.write_text(JITTED)
    first = runner.run_one(path, cache=tmp_path / "cache")
    kept = sorted(p.name for p in (tmp_path / "xla").iterdir())
    assert kept, "nothing compiled was kept"
    (again,) = runner.run_scripts(path, [("--seed", "1")], cache=tmp_path / "cache")
    assert sorted(p.name for p in (tmp_path / "xla").iterdir()) == kept
    assert again.numbers["twice"] == first.numbers["twice"] == 3.0


def test_a_broken_library_module_does_not_stop_the_server(tmp_path, monkeypatch):
    """The server imports every gradlab module before the runs; one that fails to import (being
    edited) is left to the run that imports it, which names its file and line."""
    from pipeline import executor

    (tmp_path / "gradlab").mkdir()
    (tmp_path / "gradlab" / "being_edited.py").write_text("def broken(:\n")
    monkeypatch.setattr(executor, "SNIPPETS", tmp_path)
    executor._warm_up()
    assert "gradlab.being_edited" not in sys.modules
