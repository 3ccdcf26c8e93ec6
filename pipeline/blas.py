"""Which OpenBLAS kernels numpy's matrix products run on: the same ones on every x86-64 machine.

numpy's wheels ship OpenBLAS built for many CPUs at once; at load time it picks the kernels for
the CPU it finds: on a CPU with AVX-512 its SkylakeX kernels, on one with AVX2 only its Haswell
kernels. The two round some products differently (another blocking of the inner dimension, the
fused multiply-adds in another order), and a training run near the edge of stability amplifies a
last-bit difference: per-layer-diagnostics measured residual SGD's best learning rate 0.01 with
one and 0.0032 with the other, on the same seeds. The numbers the site prints must not depend on
the machine that built it, so every process that computes them (the runner's servers, the test
processes) loads OpenBLAS with ``OPENBLAS_CORETYPE=Haswell``: AVX2 and FMA, on every x86-64 CPU
of the last decade. A value already in the environment wins (to measure another kernel's effect:
``OPENBLAS_CORETYPE=SkylakeX make record`` then ``git diff``). Elsewhere (another architecture,
an x86-64 CPU without AVX2, a numpy on another BLAS) nothing is pinned.

No numpy import here: the variable counts only if it is set before numpy loads OpenBLAS.
"""

import functools
import os
import platform
import sys
from pathlib import Path

VARIABLE = "OPENBLAS_CORETYPE"
PINNED = "Haswell"
NEEDS = {"avx2", "fma"}  # the Haswell kernels' instructions


@functools.cache
def _cpu_flags() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return set()
    line = next((line for line in text.splitlines() if line.startswith("flags")), "")
    return set(line.partition(":")[2].split())


def pinned_environment(environ=None, machine: str | None = None, cpu_flags: set[str] | None = None) -> dict:
    """What to add to a process's environment, before numpy loads, so that OpenBLAS runs its
    Haswell kernels: ``{"OPENBLAS_CORETYPE": "Haswell"}``, or ``{}`` when the variable is set
    already or the CPU cannot run them (not x86-64, or no AVX2 and FMA in /proc/cpuinfo)."""
    environ = os.environ if environ is None else environ
    if environ.get(VARIABLE):
        return {}
    if (machine or platform.machine()).lower() not in ("x86_64", "amd64"):
        return {}
    if not NEEDS <= (_cpu_flags() if cpu_flags is None else cpu_flags):
        return {}
    return {VARIABLE: PINNED}


def wanted() -> str:
    """The kernel set the runs ask for: the variable's value, or '' (OpenBLAS's own choice)."""
    return os.environ.get(VARIABLE) or pinned_environment().get(VARIABLE, "")


def pin() -> None:
    """Set the variable in this process (its children inherit it); numpy must not be loaded yet."""
    if "numpy" in sys.modules:
        raise RuntimeError(f"numpy was imported before pipeline.blas.pin(): too late to set {VARIABLE}")
    os.environ.update(pinned_environment())


def kernel() -> str | None:
    """The kernel set the loaded numpy's OpenBLAS runs (``'Haswell'``, ``'SkylakeX'``...), or None
    when numpy's BLAS is not a bundled OpenBLAS. Imports numpy."""
    snippets = str(Path(__file__).resolve().parents[1] / "snippets")
    if snippets not in sys.path:
        sys.path.append(snippets)
    from gradlab.snippet import openblas_kernels

    return openblas_kernels()


def check() -> None:
    """Raise if OpenBLAS did not load the kernels asked for (OpenBLAS ignores a name it does not
    know, or one this CPU cannot run, and picks its own without a word)."""
    asked, running = wanted(), kernel()
    if asked and running is not None and running.lower() != asked.lower():
        raise RuntimeError(
            f"{VARIABLE}={asked} asked for OpenBLAS's {asked} kernels, but numpy's OpenBLAS runs "
            f"{running}: use a kernel name OpenBLAS knows and this CPU can run, or unset {VARIABLE}"
        )
