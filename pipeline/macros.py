"""Numbers and figures in chapter prose, resolved from the snippets' results.

In a chapter's Markdown:

* ``{{ saturation.first_layer_ratio }}`` inserts a number; a Python format spec may follow a
  colon: ``{{ saturation.first_layer_ratio:.3g }}``, ``{{ dead_relu.dead_fraction:.1%}}``,
  ``{{ costs.n_params:,}}``. The spec ``.Nx`` writes scientific notation for prose,
  ``3.2 × 10⁻¹¹`` (``.2x``); ``.Nt`` writes it for math, ``3.2 \times 10^{-11}`` (``.1t``),
  to use inside ``$...$``.
* ``{{ figure saturation.depth_norms }}`` inserts the figure for both palettes, its alt text
  and a caption linking to the snippet's notebook page.
* ``{{ interactive saturation.depth_sweep }}`` inserts a figure the reader moves with a slider:
  the frames the snippet recorded with ``results.frames`` (``depth_sweep.frames.json``), drawn
  by ``docs/assets/interactive.js`` when the figure nears the screen; without JavaScript the
  default frame's numbers show as a table.
* ``{{ range dying_relu.dead_end:.0% }}`` inserts the range over seeds of a quantity the snippet
  recorded with ``results.spread``: ``33–39%`` (one value when both ends print alike).
* ``{{ dying_relu.leaky_revives }}`` where ``leaky_revives`` is a claim inserts the claim's
  statement; a claim that does not hold never gets here (the snippet fails first). In a run
  with arguments (below) a claim may not hold (it is printed as a note): quoting it there fails
  the build, so an answer can state a claim only where it was checked.
* ``{{ dying_relu(--lr 0.05).dead_end_median:.0% }}`` quotes the snippet run with those
  command-line arguments (the answer to an exercise that gives that command): the build runs it
  too, cached like every run, so an answer can never disagree with its command.

Write ``\\{{`` to show a macro literally (as the contributing guide does).

An unknown snippet, key or figure, or a bad format spec, raises :class:`MacroError` naming the
page, the line and what the snippet does have.
"""

import json
import re
from pathlib import Path

MACRO = re.compile(
    r"(?<!\\)\{\{\s*(?P<kind>figure\s+|range\s+|interactive\s+)?(?P<snippet>[a-z][a-z0-9_]*)(?:\((?P<args>[^()}]*)\))?"
    r"\.(?P<key>[a-z][a-z0-9_]*)\s*(?::(?P<spec>[^}]*?))?\s*\}\}"
)
SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


class MacroError(Exception):
    pass


def format_number(value, spec: str | None) -> str:
    """Format ``value`` with a Python format spec, plus ``.Nx`` for ``a × 10ᵇ`` in prose and
    ``.Nt`` for ``a \\times 10^{b}`` in TeX math."""
    if not spec:
        spec = ".3g" if isinstance(value, float) else ""
    if spec.endswith(("x", "t")):
        if value == 0:  # exactly zero: "0", not "0.0", which would read as a rounded small number
            return "0"
        mantissa, exponent = f"{value:{spec[:-1]}e}".split("e")
        power = int(exponent)
        if power == 0:
            return mantissa
        if spec.endswith("t"):
            return f"10^{{{power}}}" if mantissa == "1" else f"{mantissa} \\times 10^{{{power}}}"
        return f"{mantissa} × 10{str(power).translate(SUPERSCRIPT)}"
    return format(value, spec)


def format_range(low, high, spec: str | None) -> str:
    """``low–high`` with one format spec; a shared unit (``%``) is written once."""
    first, last = format_number(low, spec), format_number(high, spec)
    if first == last:
        return first
    if first.endswith("%") and last.endswith("%"):
        first = first[:-1]
    return f"{first}–{last}"


def close_keys(key: str, known) -> str:
    """``did you mean …?`` with the closest known names, or ''."""
    import difflib

    near = difflib.get_close_matches(key, list(known), n=3, cutoff=0.6)
    return f"; did you mean {', '.join(near)}?" if near else ""


def figure_markdown(snippet: str, key: str, figure: dict, page_depth: int, source: str | None = None) -> str:
    """Markdown for one figure: light and dark images, caption, link to the snippet's page;
    ``source`` is the snippet's path under ``snippets/`` without ``.py`` (default: its name)."""
    up = "../" * page_depth
    source = source or snippet
    alt = figure["alt"].replace("]", "\\]").replace("\n", " ")
    return (
        '<figure markdown="span">\n'
        f"  ![{alt}]({up}figures/{snippet}/{key}.svg#only-light){{ loading=lazy }}"
        f"![{alt}]({up}figures/{snippet}/{key}-dark.svg#only-dark){{ loading=lazy }}\n"
        f'  <figcaption markdown="span">Drawn by '
        f"[`snippets/{source}.py`]({up}notebooks/{snippet}.ipynb)</figcaption>\n"
        "</figure>"
    )


def interactive_of(result) -> dict:
    """``{key: summary}`` of the interactive figures a snippet's result recorded."""
    found = getattr(result, "interactive", None)
    if found is None and hasattr(result, "document"):
        found = result.document.get("interactive")
    return found or {}


def _default_table(frames: dict) -> str:
    """The default frame's numbers as an HTML table: what a reader without JavaScript sees."""
    from html import escape

    at = frames["default"]
    xs = frames["x"] if frames.get("x") is not None else frames["x_frames"][at]
    head = "".join(f"<th>{escape(s['label'])}</th>" for s in frames["series"])
    rows = "".join(
        f"<tr><td>{x:g}</td>"
        + "".join(
            f"<td>{'' if s['y'][at][i] is None else format(s['y'][at][i], '.3g')}</td>"
            for s in frames["series"]
        )
        + "</tr>"
        for i, x in enumerate(xs)
    )
    return (
        f"<table><caption>{escape(frames['parameter'])} = {escape(frames['labels'][at])}: "
        f"{escape(frames['ylabel'])}</caption>"
        f"<thead><tr><th>{escape(frames['xlabel'])}</th>{head}</tr></thead><tbody>{rows}</tbody></table>"
    )


def interactive_html(
    snippet: str, key: str, summary: dict, page_depth: int, frames: dict | None = None
) -> str:
    """HTML for one interactive figure: the chart's place, the slider (shown once the script
    has drawn the chart), the current frame's description (a live region, and the chart's
    accessible name) and command; ``frames`` (the JSON) gives the no-JavaScript table."""
    from html import escape

    up = "../" * page_depth
    ident = f"gp-{snippet}-{key}".replace("_", "-")
    at, labels = summary["default"], summary["labels"]
    fallback = (
        f'\n<div class="gp-interactive__fallback"><noscript>{_default_table(frames)}</noscript></div>'
        if frames
        else ""
    )
    description, command = escape(summary["description"]), escape(summary["command"])
    return (
        f'<figure class="gp-interactive" id="{ident}" data-src="figures/{snippet}/{key}.frames.json"'
        ' markdown="block">\n'
        f'<p class="gp-interactive__title">{escape(summary["title"])}</p>\n'
        f'<div class="gp-interactive__chart" role="img" aria-labelledby="{ident}-desc"></div>{fallback}\n'
        '<div class="gp-interactive__legend"></div>\n'
        '<div class="gp-interactive__controls" hidden>'
        f'<label for="{ident}-input">{escape(summary["parameter"])}</label>'
        f'<input type="range" id="{ident}-input" min="0" max="{len(labels) - 1}" step="1" value="{at}"'
        f' aria-valuetext="{escape(labels[at])}">'
        f'<output for="{ident}-input" id="{ident}-value">{escape(labels[at])}</output>'
        "</div>\n"
        f'<p class="gp-interactive__desc" id="{ident}-desc" aria-live="polite">{description}</p>\n'
        f'<p class="gp-interactive__command">Reproduce this frame: <code>{command}</code></p>\n'
        f'<figcaption markdown="span">Every frame computed at build time by '
        f"[`snippets/{snippet}.py`]({up}notebooks/{snippet}.ipynb); move the slider, "
        "or focus it and use the arrow keys.</figcaption>\n"
        "</figure>"
    )


def run_key(snippet: str, args: str | None):
    """The key of a run in ``results``: the name, or ``(name, (arg, ...))`` with arguments."""
    import shlex

    return (snippet, tuple(shlex.split(args))) if args and args.strip() else snippet


def argument_runs(markdown: str) -> set[tuple[str, tuple[str, ...]]]:
    """Every ``(snippet, args)`` a page quotes with arguments: the runs the build must add."""
    return {
        run_key(m["snippet"], m["args"]) for m in MACRO.finditer(markdown) if m["args"] and m["args"].strip()
    }


def substitute(markdown: str, results: dict, page: str) -> str:
    """Replace every macro in ``markdown``; ``results`` maps snippet name -> runner Result, and
    ``(name, args)`` -> the Result of a run with arguments."""
    depth = page.count("/")

    def replace(match: re.Match) -> str:
        is_figure, snippet, key, spec = match["kind"], match["snippet"], match["key"], match["spec"]
        line = markdown.count("\n", 0, match.start()) + 1
        where = f"{page}:{line}: {match.group(0)}"
        table = results
        if match["args"] and match["args"].strip():
            run = run_key(snippet, match["args"])
            if run not in results:
                raise MacroError(f"{where}: the run {snippet}.py {match['args'].strip()} was not made")
            if is_figure and is_figure.startswith("figure"):
                raise MacroError(f"{where}: a run with arguments gives numbers, not figures")
            table = {**results, snippet: results[run]}
        if snippet not in table:
            known = ", ".join(sorted(k for k in table if isinstance(k, str))) or "none"
            raise MacroError(f"{where}: no snippet {snippet!r} (snippets: {known})")
        if is_figure and is_figure.startswith("interactive"):
            if (match["args"] and match["args"].strip()) or spec:
                raise MacroError(f"{where}: an interactive figure takes no arguments and no format spec")
            found = interactive_of(table[snippet])
            if key not in found:
                hint = close_keys(key, found)
                known = ", ".join(found) or "none"
                raise MacroError(
                    f"{where}: snippet {snippet!r} has no interactive figure {key!r}{hint} ({known})"
                )
            folder = getattr(table[snippet], "folder", None)
            path = Path(folder) / f"{key}.frames.json" if folder is not None else None
            frames = json.loads(path.read_text(encoding="utf-8")) if path and path.exists() else None
            return interactive_html(snippet, key, found[key], depth, frames)
        if is_figure and is_figure.startswith("figure"):
            figures = table[snippet].figures
            if key not in figures:
                known = ", ".join(figures) or "none"
                hint = close_keys(key, figures)
                raise MacroError(f"{where}: snippet {snippet!r} has no figure {key!r}{hint} ({known})")
            folder = getattr(table[snippet], "folder", None)
            framework = (
                folder is not None
                and (
                    Path(__file__).resolve().parents[1] / "snippets" / "frameworks" / f"{snippet}.py"
                ).exists()
            )
            return figure_markdown(
                snippet, key, figures[key], depth, f"frameworks/{snippet}" if framework else None
            )
        numbers = table[snippet].numbers
        claims = getattr(table[snippet], "claims", {})
        if is_figure:  # range
            ends = [f"{key}_min", f"{key}_max"]
            if not all(end in numbers for end in ends):
                spreads = sorted(
                    k[: -len("_min")] for k in numbers if k.endswith("_min") and f"{k[:-4]}_max" in numbers
                )
                hint = close_keys(key, spreads)
                raise MacroError(
                    f"{where}: snippet {snippet!r} records no spread {key!r}{hint} "
                    f"(spreads: {', '.join(spreads) or 'none'})"
                )
            try:
                return format_range(numbers[ends[0]], numbers[ends[1]], spec)
            except (ValueError, TypeError) as error:
                raise MacroError(f"{where}: bad format spec {spec!r}: {error}") from None
        if key in claims and key not in numbers:
            if spec:
                raise MacroError(f"{where}: {key!r} is a claim: it has a statement, no format spec")
            if not claims[key].get("holds", False):  # only a run with arguments gets here with one
                run = f"{snippet}.py {match['args'].strip()}" if match["args"] else f"{snippet}.py"
                raise MacroError(
                    f"{where}: the claim does not hold in the run {run}, so its statement "
                    f"would be false here: {claims[key]['statement']}"
                )
            return claims[key]["statement"]
        if key not in numbers:
            known = ", ".join([*numbers, *claims]) or "none"
            hint = close_keys(key, [*numbers, *claims])
            raise MacroError(f"{where}: snippet {snippet!r} has no number or claim {key!r}{hint} ({known})")
        try:
            return format_number(numbers[key], spec)
        except (ValueError, TypeError) as error:
            raise MacroError(f"{where}: bad format spec {spec!r}: {error}") from None

    def replace_in_place(match: re.Match) -> str:
        text = replace(match)
        # a number that starts a line and is followed by ". " or ") " would start an ordered list
        # ("{{ s.batch }}. Then" -> "32. Then"): escape the delimiter, as Markdown allows
        line_start = markdown.rfind("\n", 0, match.start()) + 1
        if (
            not markdown[line_start : match.start()].strip()
            and re.fullmatch(r"\d{1,9}", text)
            and re.match(r"[.)](\s|$)", markdown[match.end() :])
        ):
            return text + "\\"
        return text

    return MACRO.sub(replace_in_place, markdown).replace("\\{{", "{{")


def quoted_by_run(markdown: str) -> set[tuple[tuple[str, tuple[str, ...]], str]]:
    """Every ``((snippet, args), key)`` a page quotes as a number or claim (figures excluded),
    ``args`` ``()`` for the site's run; a range quotes ``key_min`` and ``key_max``."""
    keys = set()
    for match in MACRO.finditer(markdown):
        kind, key = match["kind"], match["key"]
        run = run_key(match["snippet"], match["args"])
        run = run if isinstance(run, tuple) else (run, ())
        if not kind:
            keys.add((run, key))
        elif kind.startswith("range"):
            keys |= {(run, f"{key}_min"), (run, f"{key}_max")}
    return keys


def quoted_keys(markdown: str) -> set[tuple[str, str]]:
    """Every ``(snippet, key)`` a page quotes from a snippet's site run (not a run with arguments)."""
    return {(snippet, key) for (snippet, args), key in quoted_by_run(markdown) if not args}


def run_with_arguments(runs) -> dict:
    """Run each ``(name, args)`` (cached apart, in parallel per set of arguments)."""
    from pipeline import runner

    found = {}
    for args in sorted({args for _, args in runs}):
        names = sorted(name for name, a in runs if a == args)
        outcomes = runner.run_all([runner.snippet_path(n) for n in names], args=args)
        found.update({(name, args): outcomes[name] for name in names})
    return found


def main(argv: list[str]) -> int:
    """``python -m pipeline.macros docs/PAGE.md ...``: run (or read from the cache) only the
    snippets a page quotes and resolve its macros; print the first error or ``ok``."""
    import sys
    from pathlib import Path

    from pipeline import runner

    status = 0
    for name in argv:
        path = Path(name)
        text = path.read_text(encoding="utf-8")
        quoted = sorted({m["snippet"] for m in MACRO.finditer(text)})
        paths = [runner.snippet_path(snippet) for snippet in quoted]
        try:
            results = runner.run_all([p for p in paths if p.exists()])
            results.update(run_with_arguments(argument_runs(text)))
            substitute(text, results, path.name)
        except (MacroError, runner.SnippetError) as error:
            print(error, file=sys.stderr)
            status = 1
            continue
        print(f"{path}: ok ({len(MACRO.findall(text))} macros from {', '.join(quoted) or 'no snippet'})")
    return status


if __name__ == "__main__":
    import sys

    sys.exit(main(sys.argv[1:]))
