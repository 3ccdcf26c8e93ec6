"""The backward signal of an MLP, layer by layer, as the frames of an interactive figure over depth.

Each frame is ||dL/dz_l|| / ||dL/dz_D|| for l = 1..D (`backward_signal.layer_report`) of one weight
draw per depth, for several setups (activation and weight scale) that share the draw.
"""

import numpy as np

from .backward_signal import layer_report, rescaled


def depth_sweep(results, key, draw, depths, setups, names, *, default, command):
    """Record frames ``key`` over the depths: ``draw(depth) -> (X, y, unit)`` (inputs, targets and
    a standard-normal weight draw), ``setups = {name: (label, activation, init, multiple)}``
    (see `rescaled`), of which the frames show ``names``. Returns ``{name: array of layer 1's
    ratio, one per depth}``."""
    setups = {name: setups[name] for name in names}
    curves = {name: [] for name in setups}
    for depth in depths:
        X, y, unit = draw(depth)
        for name, (_, activation, init, multiple) in setups.items():
            signal = np.array(layer_report(rescaled(unit, init, multiple), X, y, activation)["signal"])
            curves[name].append(signal / signal[-1])
    ends = {name: np.array([c[0] for c in curves[name]]) for name in setups}
    results.frames(
        key,
        parameter="hidden layers D",
        values=depths,
        default=default,
        x=[list(range(1, d + 1)) for d in depths],
        series={setups[name][0]: curves[name] for name in setups},
        description=[
            f"{d} hidden layers: layer 1's backward signal, as a share of layer {d}'s, is "
            + ", ".join(f"{ends[name][i]:.2g} ({setups[name][0]})" for name in setups)
            for i, d in enumerate(depths)
        ],
        command=command,
        title="Backward signal per layer as the stack deepens",
        xlabel="layer l (1 = nearest the input)",
        ylabel="||dL/dz_l|| / ||dL/dz_D||",
        yscale="log",
        hlines=[(1.0, "layer D")],
    )
    return ends
