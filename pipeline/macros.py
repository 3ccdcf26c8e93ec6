"""Numbers and figures in chapter prose, resolved from the snippets' results.

In a chapter's Markdown:

* ``{{ saturation.first_layer_ratio }}`` inserts a number; a Python format spec may follow a
  colon: ``{{ saturation.first_layer_ratio:.3g }}``, ``{{ dead_relu.dead_fraction:.1%}}``,
  ``{{ costs.n_params:,}}``. The spec ``.Nx`` writes scientific notation for prose,
  ``3.2 × 10⁻¹¹`` (``.2x``); ``.Nt`` writes it for math, ``3.2 \times 10^{-11}`` (``.1t``),
  to use inside ``$...$``.
* ``{{ figure saturation.depth_norms }}`` inserts the figure for both palettes, its alt text
  and a caption linking to the snippet's notebook page.

Write ``\\{{`` to show a macro literally (as the contributing guide does).

An unknown snippet, key or figure, or a bad format spec, raises :class:`MacroError` naming the
page, the line and what the snippet does have.
"""

import re

MACRO = re.compile(r"(?<!\\)\{\{\s*(figure\s+)?([a-z][a-z0-9_]*)\.([a-z][a-z0-9_]*)\s*(?::([^}]*?))?\s*\}\}")
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


def figure_markdown(snippet: str, key: str, figure: dict, page_depth: int) -> str:
    """Markdown for one figure: light and dark images, caption, link to the snippet's page."""
    up = "../" * page_depth
    alt = figure["alt"].replace("]", "\\]").replace("\n", " ")
    return (
        '<figure markdown="span">\n'
        f"  ![{alt}]({up}figures/{snippet}/{key}.svg#only-light){{ loading=lazy }}"
        f"![{alt}]({up}figures/{snippet}/{key}-dark.svg#only-dark){{ loading=lazy }}\n"
        f'  <figcaption markdown="span">Drawn by '
        f"[`snippets/{snippet}.py`]({up}notebooks/{snippet}.ipynb)</figcaption>\n"
        "</figure>"
    )


def substitute(markdown: str, results: dict, page: str) -> str:
    """Replace every macro in ``markdown``; ``results`` maps snippet name -> runner Result."""
    depth = page.count("/")

    def replace(match: re.Match) -> str:
        is_figure, snippet, key, spec = match.groups()
        line = markdown.count("\n", 0, match.start()) + 1
        where = f"{page}:{line}: {match.group(0)}"
        if snippet not in results:
            known = ", ".join(sorted(results)) or "none"
            raise MacroError(f"{where}: no snippet {snippet!r} (snippets: {known})")
        if is_figure:
            figures = results[snippet].figures
            if key not in figures:
                known = ", ".join(figures) or "none"
                raise MacroError(f"{where}: snippet {snippet!r} has no figure {key!r} ({known})")
            return figure_markdown(snippet, key, figures[key], depth)
        numbers = results[snippet].numbers
        if key not in numbers:
            known = ", ".join(numbers) or "none"
            raise MacroError(f"{where}: snippet {snippet!r} has no number {key!r} ({known})")
        try:
            return format_number(numbers[key], spec)
        except (ValueError, TypeError) as error:
            raise MacroError(f"{where}: bad format spec {spec!r}: {error}") from None

    return MACRO.sub(replace, markdown).replace("\\{{", "{{")


def quoted_keys(markdown: str) -> set[tuple[str, str]]:
    """Every ``(snippet, key)`` a page quotes as a number (figures excluded)."""
    return {(m.group(2), m.group(3)) for m in MACRO.finditer(markdown) if not m.group(1)}
