"""Scaffold a new chapter: ``make chapter NAME=dying_relu`` (``python -m pipeline.scaffold NAME``).

One command creates everything a chapter needs, so that the new chapter builds and passes the
tests at once:

* ``snippets/NAME.py``: a snippet that already meets the snippet contract: a seeded, tiny but
  real experiment (the weight gradients of a small tanh network, checked by four methods) with
  one number and one figure;
* ``docs/NAME-WITH-DASHES.md``: the chapter page, with the contract's seven sections as
  ``TODO(chapter)`` boxes (:func:`open_todos` finds them) that quote the snippet's number and
  figure;
* an entry for the page under "Drafts" in ``mkdocs.yml``'s ``nav``: a text edit that keeps the
  file's comments and formatting (never a round trip through a YAML dumper);
* ``tests/recorded/NAME.json``: the snippet's numbers, recorded by ``pipeline.record``.

Naming: ``NAME`` is the snippet's name, the one the prose quotes in ``{{ NAME.key }}``, so it
follows the macros' rule: lower-case letters, digits and ``_``, starting with a letter. The
page is the same name with dashes (``dying_relu`` -> ``docs/dying-relu.md``), as URLs prefer.

A bad name, a reserved name or a name already taken is refused with a one-line error (exit
status 2) before anything is written; if recording the numbers fails, everything written is
undone.
"""

import argparse
import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
NAME = re.compile(r"[a-z][a-z0-9_]{1,38}[a-z0-9]\Z")
RESERVED = {"gradlab", "index", "contributing", "notebooks", "figures", "assets", "drafts", "snippet"}
DRAFTS = "Drafts"
TODO_MARK = "TODO(chapter)"
TODO = re.compile(r"TODO\(chapter\):[ \t]*([^\"\n]*)")  # the marker and what is left to do


class ScaffoldError(Exception):
    """A refusal: the message is one line, printed as ``scaffold: error: MESSAGE``."""


def page_name(name: str) -> str:
    """The chapter page for snippet ``name``: ``dying_relu`` -> ``dying-relu.md``."""
    return name.replace("_", "-") + ".md"


def open_todos(markdown: str) -> list[str]:
    """The ``TODO(chapter)`` markers still in a chapter page: what is left to write."""
    return [match.group(1).strip() for match in TODO.finditer(markdown)]


# --------------------------------------------------------------------------- templates

SNIPPET = '''"""{title}.

TODO(chapter): say in a sentence what this snippet shows; it is quoted by docs/{page}.
Made by `make chapter NAME={name}`: a small tanh network whose weight gradients are computed
by reverse mode and checked by forward mode, central differences and the complex step.
"""

# %% [markdown]
# TODO(chapter): the experiment in two sentences, in the chapter's notation. For now: the
# gradient of a squared error through a stack of $L$ tanh layers, layer by layer,
# $\\lVert \\partial E / \\partial W_l \\rVert_F$ for $l = 1, \\dots, L$.

# %%
import matplotlib.pyplot as plt
import numpy as np

from gradlab import check, engine, models, ops, snippet

parser = snippet.parser(__doc__)
parser.add_argument("--depth", type=snippet.positive_int, default=4, help="hidden layers")
parser.add_argument("--width", type=snippet.positive_int, default=8, help="units per hidden layer")
args, results = snippet.parse(parser)

# %% [markdown]
# A batch of inputs and targets, and a network initialized with Glorot's scale; one draw per
# seed. Random draws are run on several seeds and the prose quotes the range.


# %%
def draw(seed):
    """Inputs, targets and Glorot-initialized parameters for one seed."""
    rng = np.random.default_rng(seed)
    X, y = rng.normal(size=(16, 3)), rng.normal(size=(16, 1))
    return X, y, models.init_mlp([3] + [args.width] * args.depth + [1], "glorot", rng)


def make_loss(X, y):
    """Mean squared error of the network on the batch."""
    return lambda params: ops.mean((models.mlp(params, X, activation="tanh") - y) ** 2)


# %% [markdown]
# Is it backprop? Reverse mode against three independent methods: their largest relative
# disagreement is at the level of rounding error, so the gradient is the function's.

# %%
disagreements, first_to_last = [], []
for seed in snippet.seeds(args.seed):
    X, y, params = draw(seed)
    disagreements.append(max(check.compare(make_loss(X, y), params).values()))
    norms = models.grad_norm_per_layer(engine.grad(make_loss(X, y), params))
    first_to_last.append(norms[0] / norms[-1])
results.number(
    "max_disagreement",
    max(disagreements),
    "largest relative disagreement of reverse mode with the other methods, over the seeds",
    rtol=0.0,
    atol=1e-6,  # rounding-level: compare with an absolute tolerance
)
results.spread("first_to_last", first_to_last, "first layer's gradient norm over the last's")
results.claim(
    "methods_agree",
    max(disagreements) < 1e-6,
    "Reverse mode agrees with forward mode, central differences and the complex step to 1e-6.",
    {{"disagreements": disagreements}},
)

# %% [markdown]
# The gradient's size, layer by layer (the first seed's network).

# %%
X, y, params = draw(snippet.seeds(args.seed)[0])
norms = models.grad_norm_per_layer(engine.grad(make_loss(X, y), params))
layers = np.arange(1, len(norms) + 1)
fig, ax = plt.subplots()
ax.semilogy(layers, norms, marker="o", label="tanh, Glorot initialization")
ax.set(
    title="Gradient norm per layer",
    xlabel="layer l (1 = first)",
    ylabel=r"$\\Vert \\partial E / \\partial W_l \\Vert_F$ (log scale)",
    xticks=layers,
)
ax.legend()
results.figure(
    fig,
    "grad_norms",
    alt=f"The Frobenius norm of the weight gradient of each of the {{len(norms)}} layers of a small "
    "tanh network, on a log scale.",
)

# %%
results.save()
'''

PAGE = """# {title}

!!! todo "TODO(chapter): this page is a draft"
    Made by `make chapter NAME={name}`. Write each section below, then delete its box; when no
    `TODO(chapter)` is left, move the page from "Drafts" to its section in `mkdocs.yml`. How a
    chapter is built: [Write a chapter](contributing.md).

## The pitfall, shown

!!! todo "TODO(chapter): the pitfall, shown"
    Open with the phenomenon as a reader meets it in training, a number first, and the figure
    the snippet draws.

{{{{ figure {name}.grad_norms }}}}

## Is it backprop?

Reverse mode, forward mode, central differences and the complex step give the same gradient:
their largest relative disagreement is {{{{ {name}.max_disagreement:.1x }}}} on
{{{{ {name}.n_seeds }}}} seeds. {{{{ {name}.methods_agree }}}} The first layer's gradient norm is
{{{{ range {name}.first_to_last:.2g }}}} times the last layer's.

!!! todo "TODO(chapter): is it backprop?"
    Say plainly whose property the pitfall is: the function's, the optimizer's, the program's,
    the library interface's, or floating point's.

## Why

!!! todo "TODO(chapter): why"
    The math, short and exact, and the quantity that decides the outcome (a slope bound, a
    singular value, a condition number, a machine epsilon).

## Remedies, measured

!!! todo "TODO(chapter): remedies, measured"
    At least one remedy, the same experiment before and after, the effect quoted as numbers
    from the snippet. Say whether it changes the function, the optimizer or the program.

## Try it

!!! todo "TODO(chapter): try it"
    Two or three exercises: a command line that re-runs the snippet with another argument,
    such as `.venv/bin/python snippets/{name}.py --depth 12`, and a question the reader can
    answer from the chapter and then check.

## References

!!! todo "TODO(chapter): references"
    Primary sources (papers, the original post, library docs), with enough detail to find
    them. A number from a paper is that paper's number.

## Run it yourself

!!! todo "TODO(chapter): run it yourself"
    Check that the command below is the one to run, and name the arguments worth changing.

The snippet behind every number and figure on this page runs as a
[notebook](notebooks/{name}.ipynb), with a download of the `.ipynb`. Locally:

```bash
.venv/bin/python snippets/{name}.py          # prints its numbers, writes out/{name}/
.venv/bin/python snippets/{name}.py --help   # its arguments
```
"""


# --------------------------------------------------------------------------- mkdocs.yml nav


class _AnyTagLoader(yaml.SafeLoader):
    """A safe loader that reads MkDocs' own tags (``!ENV``, ``!!python/name:``) as nothing."""


_AnyTagLoader.add_multi_constructor("!", lambda loader, suffix, node: None)
_AnyTagLoader.add_multi_constructor("tag:yaml.org,2002:python/", lambda loader, suffix, node: None)


def load_yaml(text: str):
    return yaml.load(text, Loader=_AnyTagLoader)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _is_content(line: str) -> bool:
    return bool(line.strip()) and not line.lstrip().startswith("#")


def add_to_nav(text: str, page: str, section: str = DRAFTS) -> str:
    """``mkdocs.yml`` text with ``page`` appended to the nav section ``section``.

    The section is created if missing: just before a "Contributing" section if there is one,
    else at the end of the nav. Only lines are inserted; everything else is kept byte for byte.
    """
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    starts = [i for i, line in enumerate(lines) if re.match(r"nav:\s*(#.*)?$", line)]
    if not starts:
        raise ScaffoldError("mkdocs.yml has no block-style 'nav:' list to add the page to")
    start = starts[0]
    end = start + 1  # the nav block: up to the next top-level key
    while end < len(lines) and not (_is_content(lines[end]) and _indent(lines[end]) == 0):
        end += 1
    while end > start + 1 and not _is_content(lines[end - 1]):
        end -= 1  # trailing blank lines and comments belong to what follows
    items = [i for i in range(start + 1, end) if _is_content(lines[i])]
    if not items or not lines[items[0]].lstrip().startswith("- "):
        raise ScaffoldError("mkdocs.yml's nav is not a block list of '- ' entries")
    top = _indent(lines[items[0]])
    nested = [_indent(lines[i]) for i in items if _indent(lines[i]) > top]
    child = " " * (min(nested) if nested else top + 4)
    headers = {
        lines[i].strip()[2:].rstrip(":").strip().strip("\"'"): i
        for i in items
        if _indent(lines[i]) == top and re.match(r"\s*- [^:]+:\s*(#.*)?$", lines[i])
    }
    entry = f"{child}- {page}\n"
    if section in headers:
        at = headers[section] + 1
        while at < end and (not _is_content(lines[at]) or _indent(lines[at]) > top):
            at += 1
        while not _is_content(lines[at - 1]):
            at -= 1
        lines.insert(at, entry)
    else:
        at = headers.get("Contributing", end)
        lines[at:at] = [f"{' ' * top}- {section}:\n", entry]
    return "".join(lines)


def walk_nav(nav, section=None):
    """Every ``(section title, page path)`` in a loaded nav."""
    for item in nav or []:
        if isinstance(item, str):
            yield section, item
        elif isinstance(item, dict):
            for title, value in item.items():
                if isinstance(value, list):
                    yield from walk_nav(value, title if section is None else section)
                else:
                    yield section, value


def nav_pages(mkdocs_text: str) -> list[tuple[str | None, str]]:
    """``[(top-level section, page)]`` for every page in ``mkdocs.yml``'s nav."""
    return list(walk_nav((load_yaml(mkdocs_text) or {}).get("nav")))


# --------------------------------------------------------------------------- the contributing guide

CONTRIBUTING_HEADER = (
    "<!-- A copy of CONTRIBUTING.md with every macro escaped (a backslash before each pair of braces).\n"
    "     Edit CONTRIBUTING.md, then run: .venv/bin/python -m pipeline.scaffold --sync-contributing -->\n\n"
)


def contributing_page(contributing: str) -> str:
    """docs/contributing.md from CONTRIBUTING.md: the same guide, its macros shown literally."""
    return CONTRIBUTING_HEADER + contributing.replace("{{", "\\{{")


def sync_contributing(root: Path = ROOT) -> Path:
    page = root / "docs" / "contributing.md"
    page.write_text(contributing_page((root / "CONTRIBUTING.md").read_text("utf-8")), encoding="utf-8")
    return page


# --------------------------------------------------------------------------- the command


def title_of(name: str) -> str:
    return name.replace("_", " ").capitalize()


def normalize_name(name: str) -> str:
    """What people type, as a snippet name: ``label-noise`` -> ``label_noise`` (a module name
    cannot hold a dash; the page gets its dashes back from :func:`page_name`)."""
    return (name or "").strip().replace("-", "_")


def check_name(name: str, root: Path = ROOT) -> None:
    """Raise ScaffoldError (one line) unless ``name`` is a good, unused chapter name."""
    if not NAME.match(name or ""):
        raise ScaffoldError(
            f"bad NAME {name!r}: use 3-40 lower-case letters, digits and _ (or -), starting with a "
            "letter and not ending with _ (e.g. make chapter NAME=label_noise)"
        )
    if name in RESERVED:
        raise ScaffoldError(f"NAME {name!r} is reserved ({', '.join(sorted(RESERVED))}); choose another")
    taken = [
        path.relative_to(root).as_posix()
        for path in (
            root / "snippets" / f"{name}.py",
            root / "snippets" / name,
            root / "docs" / page_name(name),
            root / "docs" / name,
            root / "tests" / "recorded" / f"{name}.json",
        )
        if path.exists()
    ]
    if taken:
        verb = "exists" if len(taken) == 1 else "exist"
        raise ScaffoldError(f"NAME {name!r} is taken: {', '.join(taken)} already {verb}")
    if page_name(name) in {page for _, page in nav_pages((root / "mkdocs.yml").read_text("utf-8"))}:
        raise ScaffoldError(f"NAME {name!r} is taken: mkdocs.yml's nav already lists {page_name(name)}")


def scaffold(
    name: str, title: str | None = None, root: Path = ROOT, record_numbers: bool = True
) -> list[Path]:
    """Create the chapter ``name`` under ``root``; return the files written or changed."""
    name = normalize_name(name)
    check_name(name, root)
    title = (title or title_of(name)).strip().rstrip(".")
    if not title or "\n" in title or '"""' in title:
        raise ScaffoldError(f"bad title {title!r}: one line of text")
    page = page_name(name)
    config = root / "mkdocs.yml"
    old_config = config.read_text(encoding="utf-8")
    new_config = add_to_nav(old_config, page)
    if (DRAFTS, page) not in nav_pages(new_config):
        raise ScaffoldError(f"could not add {page} to mkdocs.yml's nav; add it under '{DRAFTS}' by hand")
    snippet_path = root / "snippets" / f"{name}.py"
    page_path = root / "docs" / page
    fields = {"name": name, "title": title, "page": page}
    written = []
    try:
        snippet_path.write_text(SNIPPET.format(**fields), encoding="utf-8")
        written.append(snippet_path)
        page_path.write_text(PAGE.format(**fields), encoding="utf-8")
        written.append(page_path)
        config.write_text(new_config, encoding="utf-8")
        if record_numbers:
            from pipeline import record

            if record.main([name]) != 0:
                raise ScaffoldError(f"running snippets/{name}.py failed (above); nothing was kept")
            written.append(record.recorded_path(name))
    except BaseException:
        for path in written:
            path.unlink(missing_ok=True)
        config.write_text(old_config, encoding="utf-8")
        raise
    return [snippet_path, page_path, config, *written[2:]]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="make chapter NAME=...", description="Scaffold a chapter: page, snippet, nav entry, numbers."
    )
    parser.add_argument("name", nargs="?", default="", help="snippet name, e.g. dying_relu")
    parser.add_argument("--title", help="the chapter's title (default: from the name)")
    parser.add_argument(
        "--sync-contributing", action="store_true", help="rewrite docs/contributing.md from CONTRIBUTING.md"
    )
    args = parser.parse_args(argv)
    if args.sync_contributing:
        print(f"wrote {sync_contributing().relative_to(ROOT)}")
        return 0
    args.name = normalize_name(args.name)
    try:
        paths = scaffold(args.name, args.title)
    except ScaffoldError as error:
        print(f"scaffold: error: {error}", file=sys.stderr)
        return 2
    page = page_name(args.name)
    print(f"\nNew chapter {args.name!r}:")
    for path in paths:
        print(f"  {path.relative_to(ROOT)}")
    print(
        f"\nNext: `make serve` and open docs/{page} (under '{DRAFTS}'); edit snippets/{args.name}.py "
        f"and the page; `make record NAME={args.name}` after changing a number; `make test`."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
