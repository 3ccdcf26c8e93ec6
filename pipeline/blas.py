"""Which OpenBLAS kernels numpy's matrix products run on: the same ones on every Linux x86-64
machine with AVX2.

numpy's wheels ship OpenBLAS built for many CPUs at once; at load time it picks the kernels for
the CPU it finds: on a CPU with AVX-512 its SkylakeX kernels, on one with AVX2 only its Haswell
kernels, on one without AVX2 older ones. They round some products differently (another blocking
of the inner dimension, the fused multiply-adds in another order), and a long training run can
amplify a last-bit difference: per-layer-diagnostics measured residual SGD's best learning rate
0.01 with the Haswell kernels and 0.0032 with the SkylakeX and the Sandybridge ones, on the same
seeds. The numbers the site prints must not depend on the machine that built it, so every
process that computes them (the runner's servers, the test processes) loads OpenBLAS with
``OPENBLAS_CORETYPE=Haswell`` where the CPU can run those kernels (AVX2 and FMA, read from
/proc/cpuinfo: Linux). A non-empty value already in the environment wins (to measure another
kernel's effect: ``make kernels KERNEL=SkylakeX``). Elsewhere (another architecture or system, an
x86-64 CPU without AVX2, a numpy on another BLAS) nothing is pinned, and the cache key names the
machine instead. numpy's own vectorized loops (exp, log, ...) also follow the CPU: between AVX2
and AVX-512 they differ in the last bits of a few numbers, within the recorded tolerances.

No numpy import here: the variable counts only if it is set before numpy loads OpenBLAS.
"""

import functools
import os
import platform
import subprocess
import sys
from pathlib import Path

VARIABLE = "OPENBLAS_CORETYPE"
PINNED = "Haswell"
NEEDS = {"avx2", "fma"}  # the Haswell kernels' instructions


@functools.cache
def cpu_flags() -> set[str]:
    """The CPU's flags as Linux lists them in /proc/cpuinfo (empty elsewhere)."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return set()
    line = next((line for line in text.splitlines() if line.startswith("flags")), "")
    return set(line.partition(":")[2].split())


def pinned_environment(environ=None, machine: str | None = None, flags: set[str] | None = None) -> dict:
    """What to add to a process's environment, after its own variables and before numpy loads,
    so that OpenBLAS runs its Haswell kernels: ``{"OPENBLAS_CORETYPE": "Haswell"}``, or ``{}``
    when the variable has a value already or the CPU cannot run them (not x86-64, or no AVX2 and
    FMA in /proc/cpuinfo). An empty value counts as none."""
    environ = os.environ if environ is None else environ
    if environ.get(VARIABLE):
        return {}
    if (machine or platform.machine()).lower() != "x86_64":
        return {}
    if not NEEDS <= (cpu_flags() if flags is None else flags):
        return {}
    return {VARIABLE: PINNED}


def wanted() -> str:
    """The kernel set the runs ask for: the variable's value, or '' (OpenBLAS's own choice)."""
    return os.environ.get(VARIABLE) or pinned_environment().get(VARIABLE, "")


def cache_part() -> str:
    """What the snippet cache key holds about the arithmetic: the kernels asked for (OpenBLAS
    ignores the name's case) or, when none are asked for, the ones OpenBLAS picked here; and the
    CPU features numpy's own vectorized loops dispatch on (exp, log, ... round differently in the
    last bits with AVX-512 than with AVX2). A cache shared between machines then never serves
    one machine's numbers to another."""
    return f"{wanted().lower() or f'auto {kernel()}'} {_numpy_features()}"


@functools.cache
def _numpy_features() -> str:
    import numpy

    _snippets_on_path()
    from gradlab.snippet import cpu_features

    return f"{platform.machine()} numpy {numpy.__version__} " + ",".join(sorted(cpu_features()))


def _snippets_on_path() -> None:
    snippets = str(Path(__file__).resolve().parents[1] / "snippets")
    if snippets not in sys.path:
        sys.path.append(snippets)


def pin() -> None:
    """Set the variable in this process (its children inherit it). numpy must not be loaded yet
    unless there is nothing to pin or it already runs the pinned kernels."""
    needed = pinned_environment()
    if not needed:
        return
    if "numpy" in sys.modules and kernel() not in (None, PINNED):
        raise RuntimeError(f"numpy was imported before pipeline.blas.pin(): too late to set {VARIABLE}")
    os.environ.update(needed)


def kernel() -> str | None:
    """The kernel set the loaded numpy's OpenBLAS runs (``'Haswell'``, ``'SkylakeX'``...), or None
    when numpy's BLAS is not a bundled OpenBLAS found on Linux. Imports numpy."""
    _snippets_on_path()
    from gradlab.snippet import openblas_kernels

    return openblas_kernels()


def check() -> None:
    """Raise if numpy's OpenBLAS does not run the kernels asked for: the pinned ones must be what
    it reports; another name must be one OpenBLAS knows (it reports some under another name, Zen
    as Haswell, and ignores one it does not know without a word unless OPENBLAS_VERBOSE is set,
    which a fresh interpreter here sets to ask)."""
    asked, running = wanted(), kernel()
    if not asked or running is None:
        return
    if asked.lower() == PINNED.lower():
        if running != PINNED:
            raise RuntimeError(f"{VARIABLE}={asked}, but numpy's OpenBLAS runs its {running} kernels")
        return
    said = subprocess.run(
        [sys.executable, "-c", "import numpy"],
        env={**os.environ, "OPENBLAS_VERBOSE": "1"}, capture_output=True, text=True, check=False,
    ).stderr  # fmt: skip
    if "Core not found" in said:
        raise RuntimeError(
            f"{VARIABLE}={asked}: OpenBLAS does not know the name and runs its {running} kernels"
        )
