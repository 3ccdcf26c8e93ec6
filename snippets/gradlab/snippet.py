"""The snippet contract, in code: arguments, the output folder, numbers and figures.

A snippet is a script in jupytext percent format. It runs two ways and behaves the same:

* standalone, ``python snippets/NAME.py [--out DIR] [--seed N] [...]``: arguments from the
  command line, output in ``out/NAME/`` unless ``--out`` says otherwise;
* as a notebook, executed by the site's build (``pipeline/runner.py``): the runner puts the
  snippet's name and arguments in the environment variables below, because a kernel has no
  command line of its own.

Every snippet ends with ``results.save()``, which prints its numbers as an aligned table and
writes ``numbers.json`` (the named values the chapters quote, with the tolerance the test job
uses to compare them with their recorded values) next to its figures.

Two more things make a snippet's sentences trustworthy:

* **Claims.** Every qualitative sentence a chapter derives from the numbers ("vanishes",
  "larger than", "agree to 1e-9") is stated as ``results.claim(name, holds, statement,
  values)``. ``save()`` records all claims and then fails the run (exit status 1, or an
  exception in a notebook) naming every claim that does not hold, with its statement and
  values: a sentence the numbers stop supporting cannot be published. A sentence only an
  exercise's answer states, about other settings, is ``results.claim(..., answer=True)``: it
  fails no run, and the build fails if a page quotes it from a run where it does not hold.
* **Seeds.** An experiment with random draws runs on ``seeds(args.seed)`` (five seeds derived
  from ``--seed``: 0-4 for the site's seed 0, 5-9 for seed 1, ...) and records its spread with
  ``results.spread(key, values, about)``: ``key_median``, ``key_min``, ``key_max``. The prose
  quotes the range (``{{ range NAME.key:.0% }}``), and the claims must hold on every seed.

A figure the reader can move is a sweep the snippet computes: ``results.frames(key, ...)``
records one frame per value of a parameter (every frame a real computation, at build time) in
``key.frames.json`` beside the figures; the chapter shows it with ``{{ interactive NAME.key }}``
and a few lines of JavaScript draw the frame the reader picks with a slider.
"""

import argparse
import json
import math
import os
import platform
import re
import shlex
import sys
from pathlib import Path

from gradlab import plot

NAME_ENV = "GRADLAB_SNIPPET_NAME"
ARGV_ENV = "GRADLAB_SNIPPET_ARGV"
NOTEBOOK_ENV = "GRADLAB_SNIPPET_NOTEBOOK"
# set by the site's runner for runs whose figures nobody reads (other seeds, the exercises'
# settings: a run with arguments gives the chapters numbers only): figures are checked and
# recorded, not drawn, which is a third of a short run's time
NO_FIGURE_FILES_ENV = "GRADLAB_SNIPPET_NO_FIGURE_FILES"
KEY = re.compile(r"[a-z][a-z0-9_]*\Z")
SEEDS_PER_RUN = 5
# the OpenBLAS kernels the site's numbers come from: its build pins them on x86-64 (pipeline/blas.py)
SITE_KERNELS = "Haswell"


def openblas_kernels() -> str | None:
    """The kernel set numpy's bundled OpenBLAS runs here ('Haswell', 'SkylakeX', ...), chosen
    by the CPU unless OPENBLAS_CORETYPE named one before numpy loaded; None for another BLAS."""
    import ctypes

    import numpy

    for library in sorted(
        (Path(numpy.__file__).resolve().parent.parent / "numpy.libs").glob("*openblas*.so*")
    ):
        names = ctypes.CDLL(str(library))
        for symbol in (
            "scipy_openblas_get_corename64_",
            "scipy_openblas_get_corename",
            "openblas_get_corename",
        ):
            function = getattr(names, symbol, None)
            if function is not None:
                function.restype = ctypes.c_char_p
                return function().decode()
    return None


class ClaimFailed(AssertionError):
    """One or more of a snippet's claims do not hold: the sentence may not be published."""


def seeds(seed: int, count: int = SEEDS_PER_RUN) -> list[int]:
    """The ``count`` seeds an experiment runs on for ``--seed seed``: ``count*seed ... count*seed
    + count - 1``, so the sets of two ``--seed`` values never overlap."""
    return [count * seed + i for i in range(count)]


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line: ``NAME.py: error: ... (see --help)``."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def in_kernel() -> bool:
    """Running as a notebook, whose command line is not ours: in a Jupyter kernel (a downloaded
    .ipynb), or in the site's runner, which executes notebooks in an IPython shell of its own and
    says so in ``GRADLAB_SNIPPET_NOTEBOOK``."""
    return "ipykernel" in sys.modules or os.environ.get(NOTEBOOK_ENV) == "1"


def snippet_name() -> str:
    """The running snippet's name: the runner's variable, the script's file stem, or "notebook"
    in a kernel started by hand (a downloaded .ipynb)."""
    return os.environ.get(NAME_ENV) or ("notebook" if in_kernel() else Path(sys.argv[0]).stem)


def parser(description: str | None = None) -> Parser:
    """An argument parser with the options every snippet has: ``--out`` and ``--seed``."""
    name = snippet_name()
    result = Parser(prog=f"{name}.py", description=description)
    result.add_argument(
        "--out",
        type=Path,
        default=Path("out") / name,
        help="folder for numbers.json and the figures (default: out/%(prog)s without .py)",
    )
    result.add_argument("--seed", type=int, default=0, help="seed of the random generator")
    return result


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def positive_float(text: str) -> float:
    """argparse type: a finite float > 0."""
    value = float(text)
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text}")
    return value


class Arguments(argparse.Namespace):
    """The parsed arguments; they note whether the run ever read ``seed``. A run that never
    does has no random draws that ``--seed`` could move: every seed gives the same numbers,
    so the tests do not run it on other seeds."""

    __slots__ = ("_seed_read",)  # a slot, not an entry of vars(args), which snippets iterate

    def __getattribute__(self, name):
        if name == "seed":
            object.__setattr__(self, "_seed_read", True)
        return super().__getattribute__(name)

    @property
    def seed_read(self) -> bool:
        try:
            return object.__getattribute__(self, "_seed_read")
        except AttributeError:
            return False


def cpu_features() -> set[str]:
    """The CPU features numpy's own probe found (``'AVX2'``, ``'FMA3'``, ``'AVX512F'``...)."""
    import numpy

    return {f for f, on in getattr(numpy._core._multiarray_umath, "__cpu_features__", {}).items() if on}


def can_run_site_kernels() -> bool:
    """Whether this CPU has what OpenBLAS's Haswell kernels use (AVX2 and FMA), by numpy's probe."""
    return {"AVX2", "FMA3"} <= cpu_features()


def kernels_note(kernels: str, runnable: bool) -> str:
    """The line a reader's run prints when numpy's OpenBLAS runs other kernels than the site's."""
    note = (
        f"note: numpy's OpenBLAS runs its {kernels} kernels here; the site's numbers come from its "
        f"{SITE_KERNELS} kernels, which round some products differently: numbers at the level of "
        f"rounding and a few results of long training runs can differ."
    )
    if not runnable:
        return f"{note} This CPU cannot run the {SITE_KERNELS} kernels (they need AVX2 and FMA)."
    how = "`%env OPENBLAS_CORETYPE=" + SITE_KERNELS + "` in a fresh kernel, before numpy loads"
    if not in_kernel():
        how = f"OPENBLAS_CORETYPE={SITE_KERNELS} python snippets/{snippet_name()}.py"
    return f"{note} The site's numbers, to their recorded tolerances: {how}."


def parse(argument_parser: argparse.ArgumentParser):
    """Parse the snippet's arguments and return ``(args, results)``."""
    if NAME_ENV in os.environ or in_kernel():  # the runner's kernel, or a downloaded notebook
        argv = shlex.split(os.environ.get(ARGV_ENV, ""))
    else:
        argv = sys.argv[1:]
    args = argument_parser.parse_args(argv, namespace=Arguments())
    kernels = None if NAME_ENV in os.environ or platform.machine() != "x86_64" else openblas_kernels()
    if kernels not in (None, SITE_KERNELS):  # a reader's run: say why a few numbers may differ
        print(kernels_note(kernels, can_run_site_kernels()), file=sys.stderr)
    object.__setattr__(args, "_seed_read", False)  # argparse itself looked: only the run's reads count
    defaults = vars(argument_parser.parse_args([]))
    changed = sorted(k for k, v in vars(args).items() if k not in ("out", "seed") and v != defaults.get(k))
    return args, Results(snippet_name(), args.out, changed_settings=changed, arguments=args)


class Results:
    """The named numbers and figures one snippet run produces."""

    def __init__(self, name: str, out: Path, changed_settings=(), arguments: Arguments | None = None):
        self.name = name
        self.out = Path(out)
        self.arguments = arguments  # for save(): did the run read --seed?
        # the options set away from their defaults (--out and --seed aside): the chapter's claims
        # are about its own setting, so elsewhere a claim that fails is reported, not fatal
        self.changed_settings = list(changed_settings)
        self.numbers: dict[str, dict] = {}
        self.figures: dict[str, dict] = {}
        self.claims: dict[str, dict] = {}
        self.twins: dict[str, dict] = {}
        self.interactive: dict[str, dict] = {}

    def number(self, key: str, value, about: str, rtol: float = 1e-6, atol: float = 0.0):
        """Record a number the chapter may quote as ``{{ NAME.key }}``.

        ``rtol``/``atol`` are the tolerances of the drift test, as in ``numpy.isclose``:
        the default fits a deterministic computation; a value at the level of rounding
        error (a relative disagreement of 1e-12, say) needs an ``atol`` instead.
        """
        if not KEY.match(key):
            raise ValueError(f"number key {key!r}: use lower_case letters, digits and _")
        if key in self.numbers:
            raise ValueError(f"number key {key!r} recorded twice")
        if key == "claims":
            raise ValueError("number key 'claims' is taken: the recorded file keeps the claims there")
        if hasattr(value, "item"):  # numpy scalar -> Python scalar
            value = value.item()
        if not isinstance(value, (bool, int, float)):
            raise TypeError(f"number {key!r} must be a bool, int or float, not {type(value)}")
        self.numbers[key] = {"value": value, "about": about, "rtol": float(rtol), "atol": float(atol)}
        return value

    def spread(self, key: str, values, about: str, rtol: float = 1e-6, atol: float = 0.0):
        """Record a quantity measured once per seed as ``key_median``, ``key_min`` and
        ``key_max`` (and ``n_seeds``, the number of seeds, once); returns ``(median, min, max)``.
        Quote it as ``{{ range NAME.key }}``, never as one seed's value."""
        import numpy as np

        values = np.asarray([float(v) for v in values])
        if values.size == 0:
            raise ValueError(f"spread {key!r}: no values")
        if "n_seeds" not in self.numbers:
            self.number("n_seeds", int(values.size), "seeds each experiment with random draws runs on")
        elif self.numbers["n_seeds"]["value"] != values.size:
            raise ValueError(
                f"spread {key!r}: {values.size} values, but n_seeds is {self.numbers['n_seeds']['value']}"
            )
        summary = float(np.median(values)), float(values.min()), float(values.max())
        for suffix, value in zip(("median", "min", "max"), summary, strict=True):
            self.number(f"{key}_{suffix}", value, f"{about} ({suffix} over seeds)", rtol=rtol, atol=atol)
        return summary

    def twin(self, key: str, value, about: str, of: str, rtol: float, atol: float, reason: str):
        """Record a framework script's number that mirrors a numpy snippet's number ``of``
        (``"snippet.key"``): the tests compare the two within ``rtol``/``atol``, and ``reason``
        says why that tolerance (dtype, another kernel's rounding, a chaotic forward pass)."""
        self._check_twin(key, of, reason)
        value = self.number(key, value, about, rtol=max(rtol, 1e-6), atol=atol)
        self.twins[key] = {"of": of, "rtol": float(rtol), "atol": float(atol), "reason": reason.strip()}
        return value

    def twin_spread(self, key: str, values, about: str, of: str, rtol: float, atol: float, reason: str):
        """:meth:`spread` for a quantity measured once per seed whose median, min and max mirror
        the numpy snippet's spread ``of`` (``"snippet.key"``, recorded there with ``spread``)."""
        self._check_twin(key, of, reason)
        summary = self.spread(key, values, about, rtol=max(rtol, 1e-6), atol=atol)
        for suffix in ("median", "min", "max"):
            twin = {
                "of": f"{of}_{suffix}",
                "rtol": float(rtol),
                "atol": float(atol),
                "reason": reason.strip(),
            }
            self.twins[f"{key}_{suffix}"] = twin
        return summary

    @staticmethod
    def _check_twin(key: str, of: str, reason: str) -> None:
        if not re.fullmatch(r"[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*", of):
            raise ValueError(f"twin {key!r}: of={of!r} must be 'snippet.key'")
        if not reason.strip():
            raise ValueError(f"twin {key!r} needs the reason for its tolerance")

    def claim(
        self, name: str, holds, statement: str, values: dict | None = None, *, answer: bool = False
    ) -> None:
        """State a sentence the chapter derives from the numbers, as a checked condition.

        ``holds`` is the condition's outcome (for a random experiment: on every seed);
        ``statement`` the one-line sentence, quotable as ``{{ NAME.name }}``; ``values`` the
        numbers behind it, shown when it fails. Failing claims fail ``save()``. Returns
        nothing, so a notebook cell that ends with a claim shows no stray ``True``.

        ``answer=True``: a sentence only an exercise's answer states, about the run with the
        exercise's arguments (``{{ NAME(--gain 1).name }}``); it may be false at the defaults,
        so it fails no run, and quoting it from a run where it does not hold fails the build.
        """
        if not KEY.match(name):
            raise ValueError(f"claim {name!r}: use lower_case letters, digits and _")
        if name in self.claims or name in self.numbers:
            raise ValueError(f"claim {name!r} recorded twice (or as a number)")
        if hasattr(holds, "item"):
            holds = holds.item()
        if not isinstance(holds, bool):
            raise TypeError(f"claim {name!r}: holds must be a bool, not {type(holds).__name__}")
        if not statement.strip():
            raise ValueError(f"claim {name!r} needs a statement")
        shown = {key: _plain(value) for key, value in (values or {}).items()}
        self.claims[name] = {"holds": holds, "statement": statement.strip(), "values": shown}
        if answer:
            self.claims[name]["answer"] = True

    def figure(self, fig, key: str, alt: str):
        """Save a figure as ``key.svg`` and ``key-dark.svg``; ``alt`` says what it shows."""
        if not KEY.match(key):
            raise ValueError(f"figure key {key!r}: use lower_case letters, digits and _")
        if not alt.strip():
            raise ValueError(f"figure {key!r} needs alt text that states what it shows")
        title = fig.axes[0].get_title() if fig.axes else ""
        if not (title or fig.get_suptitle()):
            raise ValueError(f"figure {key!r} needs a title")
        if os.environ.get(NO_FIGURE_FILES_ENV) != "1":
            plot.save(fig, self.out / key)
        self.figures[key] = {"alt": alt.strip(), "title": fig.get_suptitle() or title}

    def frames(
        self,
        key: str,
        *,
        parameter: str,
        values,
        series: dict,
        description,
        command,
        title: str,
        xlabel: str,
        ylabel: str,
        x=None,
        xscale: str = "linear",
        yscale: str = "linear",
        default=None,
        value_format: str = "g",
        hlines=(),
    ) -> None:
        """Record a figure the reader moves with a slider: one frame per value of a parameter.

        ``values``: the parameter's values (the slider's stops, 2 to 40, in order);
        ``series``: ``{label: frames}``, ``frames[i]`` the y values of frame i (NaN or None: a gap);
        ``x``: the x values shared by every frame, or one list per frame (say, layers 1..depth);
        default ``1..len(y)``; ``description``: one sentence per frame for screen readers and
        the figure's accessible name ("depth 10: first-layer gradient 2.9e-7 of the last");
        ``command``: the command that reproduces a frame, ``"python snippets/NAME.py --depth
        {value}"`` (``{value}`` is the formatted value) or one string per frame; ``default``:
        the value shown first (default: the first); ``hlines``: ``[(y, label), ...]`` reference
        lines. Written as ``key.frames.json`` beside the figures; quote as
        ``{{ interactive NAME.key }}``.
        """
        import numpy as np

        if not KEY.match(key):
            raise ValueError(f"frames key {key!r}: use lower_case letters, digits and _")
        if key in self.interactive or key in self.figures:
            raise ValueError(f"frames key {key!r} recorded twice (or as a figure)")
        values = [_plain(v) for v in values]
        n = len(values)
        if not 2 <= n <= 40 or not all(isinstance(v, (int, float)) and math.isfinite(v) for v in values):
            raise ValueError(f"frames {key!r}: 2 to 40 finite values, got {values!r}")
        labels = [format(v, value_format) for v in values]
        if len(set(labels)) != n:
            raise ValueError(f"frames {key!r}: values print alike with format {value_format!r}: {labels}")
        if xscale not in ("linear", "log") or yscale not in ("linear", "log"):
            raise ValueError(f"frames {key!r}: scales are 'linear' or 'log'")
        for text, what in (
            (title, "title"),
            (xlabel, "xlabel"),
            (ylabel, "ylabel"),
            (parameter, "parameter"),
        ):
            if not str(text).strip():
                raise ValueError(f"frames {key!r} needs a {what}")
        description = [str(d).strip() for d in description]
        if len(description) != n or not all(description):
            raise ValueError(f"frames {key!r}: one non-empty description per value ({n})")
        if len(set(description)) != n:
            raise ValueError(f"frames {key!r}: two frames have the same description")
        commands = [command.format(value=label) for label in labels] if isinstance(command, str) else command
        if len(commands) != n:
            raise ValueError(f"frames {key!r}: one command per value ({n})")

        def cell(v):
            v = float(v) if v is not None else math.nan
            return float(f"{v:.5g}") if math.isfinite(v) else None

        if not series:
            raise ValueError(f"frames {key!r}: no series")
        lines, lengths = [], []
        for label, frames in series.items():
            frames = [np.asarray(f, dtype=float).ravel() for f in frames]
            if len(frames) != n:
                raise ValueError(f"frames {key!r}: series {label!r} has {len(frames)} frames, not {n}")
            lines.append({"label": str(label), "y": [[cell(v) for v in f] for f in frames]})
            lengths.append([f.size for f in frames])
        if any(row != lengths[0] for row in lengths):
            raise ValueError(f"frames {key!r}: the series' frames differ in length")
        if x is None:
            xs = [list(range(1, size + 1)) for size in lengths[0]]
        elif np.ndim(x[0]) == 1:  # one list per frame
            if len(x) != n:
                raise ValueError(f"frames {key!r}: {len(x)} lists of x for {n} values")
            xs = [[cell(v) for v in row] for row in x]
        else:
            xs = [[cell(v) for v in x]] * n
        if [len(row) for row in xs] != lengths[0]:
            raise ValueError(f"frames {key!r}: x and the series' frames differ in length")
        drawn = [v for line in lines for f in line["y"] for v in f if v is not None]
        if yscale == "log":
            drawn = [v for v in drawn if v > 0]
        if not drawn:
            raise ValueError(f"frames {key!r}: nothing to draw")
        at = 0 if default is None else int(np.argmin([abs(v - default) for v in values]))
        if default is not None and values[at] != default:
            raise ValueError(f"frames {key!r}: default {default!r} is not one of the values")
        document = {
            "snippet": self.name,
            "key": key,
            "title": title.strip(),
            "parameter": parameter.strip(),
            "values": values,
            "labels": labels,
            "default": at,
            "xlabel": xlabel,
            "ylabel": ylabel,
            "xscale": xscale,
            "yscale": yscale,
            "x": xs[0] if all(row == xs[0] for row in xs) else None,
            "x_frames": None if all(row == xs[0] for row in xs) else xs,
            "series": lines,
            "hlines": [{"y": float(y), "label": str(label)} for y, label in hlines],
            "description": description,
            "command": commands,
        }
        self.out.mkdir(parents=True, exist_ok=True)
        text = json.dumps(document, separators=(",", ":"), allow_nan=False)
        if len(text) > 200_000:
            raise ValueError(f"frames {key!r}: {len(text)} bytes of JSON; keep a sweep under 200 kB")
        (self.out / f"{key}.frames.json").write_text(text + "\n", encoding="utf-8")
        print(f"frames {key}: {n} values of {parameter}; the first shown: {description[at]}")
        self.interactive[key] = {
            "title": document["title"],
            "parameter": document["parameter"],
            "labels": labels,
            "default": at,
            "description": description[at],
            "command": commands[at],
        }

    def table(self) -> str:
        """The numbers as an aligned table, the way the chapter quotes them."""
        width = max([len(key) for key in self.numbers] + [6])
        lines = [f"{'number':<{width}}  {'value':>12}  about"]
        for key, entry in self.numbers.items():
            value = entry["value"]
            shown = f"{value:>12.4g}" if isinstance(value, float) else f"{value!s:>12}"
            lines.append(f"{key:<{width}}  {shown}  {entry['about']}")
        if self.claims:
            lines.append("")
            lines.append(f"{'claim':<{width}}  {'holds':>12}  statement")
            for name, entry in self.claims.items():
                holds = "yes" if entry["holds"] else ("no" if entry.get("answer") else "NO")
                holds += " (answer)" if entry.get("answer") else ""
                lines.append(f"{name:<{width}}  {holds:>12}  {entry['statement']}")
        return "\n".join(lines)

    def failed_claims(self) -> str:
        """The claims that do not hold, one paragraph each, or '' (an answer's claims aside)."""
        return "\n".join(
            f"claim {name!r} does not hold: {entry['statement']}\n  values: {entry['values']}"
            for name, entry in self.claims.items()
            if not entry["holds"] and not entry.get("answer")
        )

    def save(self):
        """Print the table and write ``numbers.json``; then fail if any claim does not hold."""
        self.out.mkdir(parents=True, exist_ok=True)
        print(self.table())
        document = {
            "snippet": self.name,
            "numbers": self.numbers,
            "claims": {
                name: {
                    "holds": c["holds"],
                    "statement": c["statement"],
                    **({"answer": True} if c.get("answer") else {}),
                }
                for name, c in self.claims.items()
            },
            "figures": self.figures,
            **({"interactive": self.interactive} if self.interactive else {}),
            **({"twins": self.twins} if self.twins else {}),
            "reads_seed": bool(getattr(self.arguments, "seed_read", True)),  # unknown: assume it does
        }
        path = self.out / "numbers.json"
        path.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
        where = "" if in_kernel() else f" to {self.out}"  # in a notebook the folder is the build's
        print(f"\nwrote numbers.json and {2 * len(self.figures)} figure files{where}")
        failed = self.failed_claims()
        if failed and self.changed_settings:  # an exploration: the sentences may not apply
            options = ", ".join(f"--{k.replace('_', '-')}" for k in self.changed_settings)
            print(
                f"\nnote: with {options} changed, these sentences of the chapter do not hold here:\n{failed}",
                file=sys.stderr,
            )
        elif failed:
            message = f"{self.name}.py: {failed}"
            if in_kernel():
                raise ClaimFailed(message)
            print(message, file=sys.stderr)
            sys.exit(1)


def _plain(value):
    """A claim's value as JSON-friendly Python: numpy scalars and arrays become floats/lists."""
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value
