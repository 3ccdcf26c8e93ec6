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
"""

import argparse
import json
import math
import os
import re
import shlex
import sys
from pathlib import Path

from gradlab import plot

NAME_ENV = "GRADLAB_SNIPPET_NAME"
ARGV_ENV = "GRADLAB_SNIPPET_ARGV"
KEY = re.compile(r"[a-z][a-z0-9_]*\Z")


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line: ``NAME.py: error: ... (see --help)``."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def in_kernel() -> bool:
    """Running inside a Jupyter kernel, whose command line belongs to the kernel, not to us."""
    return "ipykernel" in sys.modules


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


def parse(argument_parser: argparse.ArgumentParser):
    """Parse the snippet's arguments and return ``(args, results)``."""
    if NAME_ENV in os.environ or in_kernel():  # the runner's kernel, or a downloaded notebook
        argv = shlex.split(os.environ.get(ARGV_ENV, ""))
    else:
        argv = sys.argv[1:]
    args = argument_parser.parse_args(argv)
    return args, Results(snippet_name(), args.out)


class Results:
    """The named numbers and figures one snippet run produces."""

    def __init__(self, name: str, out: Path):
        self.name = name
        self.out = Path(out)
        self.numbers: dict[str, dict] = {}
        self.figures: dict[str, dict] = {}

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
        if hasattr(value, "item"):  # numpy scalar -> Python scalar
            value = value.item()
        if not isinstance(value, (bool, int, float)):
            raise TypeError(f"number {key!r} must be a bool, int or float, not {type(value)}")
        self.numbers[key] = {"value": value, "about": about, "rtol": float(rtol), "atol": float(atol)}
        return value

    def figure(self, fig, key: str, alt: str):
        """Save a figure as ``key.svg`` and ``key-dark.svg``; ``alt`` says what it shows."""
        if not KEY.match(key):
            raise ValueError(f"figure key {key!r}: use lower_case letters, digits and _")
        if not alt.strip():
            raise ValueError(f"figure {key!r} needs alt text that states what it shows")
        title = fig.axes[0].get_title() if fig.axes else ""
        if not (title or fig.get_suptitle()):
            raise ValueError(f"figure {key!r} needs a title")
        plot.save(fig, self.out / key)
        self.figures[key] = {"alt": alt.strip(), "title": fig.get_suptitle() or title}

    def table(self) -> str:
        """The numbers as an aligned table, the way the chapter quotes them."""
        width = max([len(key) for key in self.numbers] + [6])
        lines = [f"{'number':<{width}}  {'value':>12}  about"]
        for key, entry in self.numbers.items():
            value = entry["value"]
            shown = f"{value:>12.4g}" if isinstance(value, float) else f"{value!s:>12}"
            lines.append(f"{key:<{width}}  {shown}  {entry['about']}")
        return "\n".join(lines)

    def save(self):
        """Print the table and write ``numbers.json``."""
        self.out.mkdir(parents=True, exist_ok=True)
        print(self.table())
        document = {"snippet": self.name, "numbers": self.numbers, "figures": self.figures}
        path = self.out / "numbers.json"
        path.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
        where = "" if in_kernel() else f" to {self.out}"  # in a notebook the folder is the build's
        print(f"\nwrote numbers.json and {2 * len(self.figures)} figure files{where}")
