"""One figure style for the whole site.

Every snippet draws with this style and saves through :func:`save`, which writes two SVGs per
figure: ``NAME.svg`` for the light palette and ``NAME-dark.svg`` for the dark one. The dark file
is the light file with its neutral colours swapped (text, axes, grid, legend box), so the two can
never disagree about the data. The data colours are the Okabe-Ito palette, which stays
distinguishable under the common forms of colour blindness (Okabe & Ito, "Color Universal
Design", 2008).

SVG output is byte-for-byte deterministic: a fixed ``svg.hashsalt`` and no date in the metadata.
"""

import io
from pathlib import Path

import matplotlib.pyplot as plt
from matplotlib import cycler

#: Okabe-Ito, without black (the foreground) and yellow (too light on white).
PALETTE = ["#0072b2", "#e69f00", "#009e73", "#d55e00", "#cc79a7", "#56b4e9"]
FOREGROUND = "#262626"
GRID = "#cfcfcf"
LEGEND_FACE = "#fdfdfd"

#: Light colour -> dark-palette colour. Keys must be colours only the style uses for chrome.
DARK = {
    FOREGROUND: "#e2e2e2",
    GRID: "#4b4f5a",
    LEGEND_FACE: "#23262e",
    "#0072b2": "#4aa3e0",  # the deep blue is too dark on a dark background; lighten it
}

STYLE = {
    "figure.figsize": (6.4, 3.8),
    "figure.dpi": 80,
    "figure.facecolor": "white",
    "axes.prop_cycle": cycler(color=PALETTE),
    "axes.edgecolor": FOREGROUND,
    "axes.labelcolor": FOREGROUND,
    "axes.titlecolor": FOREGROUND,
    "axes.titlesize": "medium",
    "axes.titleweight": "bold",
    "axes.grid": True,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "grid.color": GRID,
    "grid.linewidth": 0.6,
    "xtick.color": FOREGROUND,
    "ytick.color": FOREGROUND,
    "text.color": FOREGROUND,
    "legend.facecolor": LEGEND_FACE,
    "legend.edgecolor": GRID,
    "legend.framealpha": 1.0,
    "legend.fontsize": "small",
    "lines.linewidth": 1.8,
    "savefig.bbox": "tight",
    "svg.hashsalt": "gradient-pitfalls",
    "svg.fonttype": "path",
}

plt.rcParams.update(STYLE)


def to_dark(svg: str) -> str:
    """Return the dark-palette version of an SVG drawn with :data:`STYLE`."""
    for light, dark in DARK.items():
        svg = svg.replace(light, dark)
    return svg


def render(fig) -> str:
    """The figure as deterministic SVG text, with a transparent background."""
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", transparent=True, metadata={"Date": None})
    return buffer.getvalue()


def save(fig, stem: Path) -> tuple[Path, Path]:
    """Write ``stem.svg`` (light) and ``stem-dark.svg`` (dark); return both paths.

    The light SVG stays with the figure until the figure changes (see :func:`saved_svg`)."""
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    svg = render(fig)
    light, dark = stem.with_suffix(".svg"), stem.parent / f"{stem.name}-dark.svg"
    light.write_text(svg, encoding="utf-8")
    dark.write_text(to_dark(svg), encoding="utf-8")
    # saving leaves the figure marked changed; unmarked, an interactive session (a notebook)
    # does not draw it again after the cell, and a later change marks it (and forgets the SVG)
    fig.stale = False
    if not hasattr(fig, "gradlab_svg"):
        fig.stale_callback = _forgets_svg(fig.stale_callback)
    fig.gradlab_svg = svg
    return light, dark


def _forgets_svg(previous):
    def changed(fig, value):
        if value:
            fig.gradlab_svg = None
        if previous is not None:
            previous(fig, value)

    return changed


def saved_svg(fig) -> str | None:
    """The SVG :func:`save` wrote for ``fig``, on a white background (a notebook's output must
    read in a dark notebook theme too), or None if the figure was never saved or has changed
    since. A notebook shows this instead of drawing the figure again as a PNG."""
    svg = getattr(fig, "gradlab_svg", None)
    return None if svg is None else svg.replace("<svg ", '<svg style="background-color: #ffffff" ', 1)
