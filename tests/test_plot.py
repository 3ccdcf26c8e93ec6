"""gradlab/plot.py: deterministic SVG, and a dark variant with no light-theme chrome left."""

import matplotlib.pyplot as plt
from gradlab import plot


def make_figure():
    fig, ax = plt.subplots()
    ax.plot([0, 1, 2], [1, 4, 9], label="data")
    ax.set(title="Squares", xlabel="x", ylabel="x squared")
    ax.legend()
    return fig


def test_the_same_figure_gives_byte_identical_svg():
    first, second = make_figure(), make_figure()
    assert plot.render(first) == plot.render(second)
    plt.close("all")


def test_the_dark_variant_swaps_every_chrome_colour(tmp_path):
    fig = make_figure()
    light, dark = plot.save(fig, tmp_path / "squares")
    light_svg, dark_svg = light.read_text(), dark.read_text()
    assert plot.FOREGROUND in light_svg and plot.GRID in light_svg
    for light_colour in plot.DARK:
        assert light_colour not in dark_svg, f"{light_colour} left in the dark SVG"
    assert plot.DARK[plot.FOREGROUND] in dark_svg
    plt.close(fig)
