"""Interactive figures: ``results.frames`` writes a sweep's frames, the macro shows them."""

import json
from types import SimpleNamespace

import pytest
from gradlab import snippet

from pipeline import macros

DEPTHS = [2, 4, 6]


def record(tmp_path, results=None, **changes):
    results = results or snippet.Results("demo", tmp_path)
    arguments = dict(
        parameter="hidden layers D",
        values=DEPTHS,
        default=4,
        x=[list(range(1, d + 1)) for d in DEPTHS],
        series={"sigmoid": [[0.25 ** (d - i) for i in range(1, d + 1)] for d in DEPTHS]},
        description=[f"depth {d}: first layer {0.25 ** (d - 1):.1e} of the last" for d in DEPTHS],
        command="python snippets/demo.py --depth {value}",
        title="Signal per layer",
        xlabel="layer",
        ylabel="ratio",
        yscale="log",
        hlines=[(1, "layer D")],
    )
    results.frames("depth_sweep", **(arguments | changes))
    return results


def test_frames_are_written_beside_the_figures_and_summarized_in_numbers_json(tmp_path, capsys):
    results = record(tmp_path)
    results.save()
    frames = json.loads((tmp_path / "depth_sweep.frames.json").read_text())
    assert frames["labels"] == ["2", "4", "6"] and frames["default"] == 1
    assert frames["x"] is None and frames["x_frames"][2] == [1, 2, 3, 4, 5, 6]
    assert frames["series"][0]["y"][0] == [0.25, 1.0]
    assert frames["command"][1] == "python snippets/demo.py --depth 4"
    assert frames["hlines"] == [{"y": 1.0, "label": "layer D"}]
    summary = json.loads((tmp_path / "numbers.json").read_text())["interactive"]["depth_sweep"]
    assert summary["description"] == "depth 4: first layer 1.6e-02 of the last"
    assert summary["labels"] == ["2", "4", "6"] and summary["default"] == 1


def test_shared_x_and_gaps(tmp_path):
    results = record(
        tmp_path,
        x=[1, 2],
        series={"a": [[1.0, float("nan")], [2.0, 3.0], [None, 4.0]]},
    )
    frames = json.loads((tmp_path / "depth_sweep.frames.json").read_text())
    assert frames["x"] == [1, 2] and frames["x_frames"] is None
    assert frames["series"][0]["y"] == [[1.0, None], [2.0, 3.0], [None, 4.0]]
    assert "depth_sweep" in results.interactive


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"values": [1]}, "2 to 40"),
        ({"values": [1.0, 1.0000001, 2.0]}, "print alike"),
        ({"description": ["a", "b"]}, "one non-empty description"),
        ({"description": ["a", "a", "b"]}, "same description"),
        ({"command": ["x", "y"]}, "one command per value"),
        ({"series": {"a": [[1.0], [2.0]]}}, "frames, not 3"),
        ({"x": [1, 2, 3], "series": {"a": [[1.0], [2.0], [3.0]]}}, "differ in length"),
        ({"default": 5}, "not one of the values"),
        ({"title": " "}, "needs a title"),
        ({"yscale": "symlog"}, "'linear' or 'log'"),
        ({"series": {"a": [[-1.0, -2.0]] * 3}, "x": [1, 2]}, "nothing to draw"),
    ],
)
def test_a_bad_sweep_is_refused(tmp_path, changes, message):
    with pytest.raises(ValueError, match=message):
        record(tmp_path, **changes)


def test_a_key_is_recorded_once(tmp_path):
    results = record(tmp_path)
    with pytest.raises(ValueError, match="recorded twice"):
        record(tmp_path, results)


def demo_results(tmp_path):
    record(tmp_path).save()
    document = json.loads((tmp_path / "numbers.json").read_text())
    result = SimpleNamespace(
        numbers={}, claims={}, figures={}, folder=tmp_path, interactive=document["interactive"]
    )
    return {"demo": result}


def test_the_macro_emits_a_labelled_slider_a_live_description_and_a_fallback(tmp_path, capsys):
    html = macros.substitute("{{ interactive demo.depth_sweep }}", demo_results(tmp_path), "part/page.md")
    assert 'data-src="figures/demo/depth_sweep.frames.json"' in html
    assert '<label for="gp-demo-depth-sweep-input">hidden layers D</label>' in html
    assert 'type="range"' in html and 'min="0" max="2"' in html and 'value="1"' in html
    assert '<output for="gp-demo-depth-sweep-input"' in html and ">4</output>" in html
    assert 'role="img" aria-labelledby="gp-demo-depth-sweep-desc"' in html
    assert 'aria-live="polite">depth 4: first layer 1.6e-02 of the last</p>' in html
    assert "<code>python snippets/demo.py --depth 4</code>" in html
    assert "<noscript><table>" in html and "<tr><td>2</td><td>0.0625</td></tr>" in html
    assert "(../notebooks/demo.ipynb)" in html


def test_an_unknown_interactive_figure_fails_with_did_you_mean(tmp_path, capsys):
    results = demo_results(tmp_path)
    with pytest.raises(
        macros.MacroError, match=r"no interactive figure 'depth_swep'; did you mean depth_sweep"
    ):
        macros.substitute("text\n{{ interactive demo.depth_swep }}", results, "page.md")
    with pytest.raises(macros.MacroError, match=r"page.md:1: .*no format spec"):
        macros.substitute("{{ interactive demo.depth_sweep:.2g }}", results, "page.md")
    with pytest.raises(macros.MacroError, match="no snippet 'nothing'"):
        macros.substitute("{{ interactive nothing.depth_sweep }}", results, "page.md")


def test_interactive_figures_are_not_quoted_numbers():
    assert macros.quoted_keys("{{ interactive demo.depth_sweep }} {{ demo.ratio }}") == {("demo", "ratio")}
