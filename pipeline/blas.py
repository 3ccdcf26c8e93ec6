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
    """What to add to a process's environment, after its own variables and before numpy loads,
    so that OpenBLAS runs its Haswell kernels: ``{"OPENBLAS_CORETYPE": "Haswell"}``, or ``{}``
    when the variable has a value already or the CPU cannot run them (not x86-64, or no AVX2 and
    FMA in /proc/cpuinfo). An empty value counts as none."""
    environ = os.environ if environ is None else environ
    if environ.get(VARIABLE):
        return {}
    if (machine or platform.machine()).lower() != "x86_64":
        return {}
    if not NEEDS <= (_cpu_flags() if cpu_flags is None else cpu_flags):
        return {}
    return {VARIABLE: PINNED}


def wanted() -> str:
    """The kernel set the runs ask for: the variable's value, or '' (OpenBLAS's own choice)."""
    return os.environ.get(VARIABLE) or pinned_environment().get(VARIABLE, "")


def cache_part() -> str:
    """What the snippet cache key holds about the kernels: the name asked for (OpenBLAS ignores
    its case), or, when nothing is asked, the machine and its CPU's features, which then decide."""
    asked = wanted().lower()
    return asked or f"{platform.system()} {platform.machine()} {' '.join(sorted(_cpu_flags()))}"


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
    snippets = str(Path(__file__).resolve().parents[1] / "snippets")
    if snippets not in sys.path:
        sys.path.append(snippets)
    from gradlab.snippet import openblas_kernels

    return openblas_kernels()


# names OpenBLAS accepts for kernels it reports under another name (measured with numpy 2.4's)
ALIASES = {"zen": "haswell", "cooperlake": "skylakex", "sapphirerapids": "skylakex", "zen4": "skylakex"}


def check() -> None:
    """Raise if numpy's OpenBLAS does not run the kernels asked for: OpenBLAS ignores a name it
    does not know, or kernels this CPU cannot run, and picks its own without a word."""
    asked, running = wanted(), kernel()
    if not asked or running is None:
        return
    if running.lower() != ALIASES.get(asked.lower(), asked.lower()):
        raise RuntimeError(
            f"{VARIABLE}={asked}, but numpy's OpenBLAS runs its {running} kernels: OpenBLAS ignores "
            f"a name it does not know, or kernels this CPU cannot run"
        )
