"""The figures of snippets/initialization.py: variances per layer, Jacobian spectra, and the frames
of an interactive figure over the weight scale.

``variance_figure`` and ``spectrum_figure`` draw the first seed's runs (``init.propagate``'s dicts,
keyed by (activation, init)) and return the figure with its alt text. ``signal_frames`` turns runs
at several weight standard deviations into the keyword arguments of ``Results.frames``: per frame,
Var[z_l] relative to the first hidden layer and Var[dL/dh_l] relative to the last.
"""

import matplotlib.pyplot as plt
import numpy as np

from .plot import PALETTE


def variance_figure(first, labels, activations, seed):
    """Var[z_l] (top) and Var[dL/dh_l] (bottom) per layer, one panel per activation."""
    inits, depth = list(labels), len(next(iter(first.values()))["var_z"])
    colors = dict(zip(inits, PALETTE, strict=False))
    fig, axes = plt.subplots(2, 2, figsize=(8.4, 6.6), sharex=True)
    rows = [("var_z", "Var[$z_l$]"), ("var_grad_h", r"Var[$\partial L/\partial h_l$]")]
    for row, (key, name) in enumerate(rows):
        for ax, act in zip(axes[row], activations, strict=True):
            for init in inits:
                style = {
                    "c": colors[init],
                    "ls": "--" if init == "orthogonal" else "-",
                    "label": labels[init],
                }
                ax.semilogy(range(1, depth + 1), first[act, init][key], **style)
            ax.set(title=f"{act}: {name}", xlabel="hidden layer l" * row, ylabel=f"{name} (log scale)")
    axes[0, 0].legend(fontsize=8)
    fig.suptitle(f"Variance per layer at initialization, forward and backward (seed {seed})")
    ends = {(k, a): ", ".join(f"{labels[i]} {first[a, i][k][-1] / first[a, i][k][0]:.1e}" for i in inits)
            for k, _ in rows for a in activations}  # fmt: skip
    alt = f"Var[z_l] (top) and Var[dL/dh_l] (bottom) over {depth} layers, seed {seed}. Last layer "
    alt += f"over first, forward: ReLU {ends['var_z', 'relu']}; tanh {ends['var_z', 'tanh']}. Backward: ReLU "
    alt += f"{ends['var_grad_h', 'relu']}; tanh {ends['var_grad_h', 'tanh']}. Orthogonal (dashed) lies "
    alt += "close to Glorot's line for tanh and to He's for ReLU."
    return fig, alt


def spectrum_figure(first, labels, activations, spectrum, seed):
    """Singular values of the input-output Jacobian for the (activation, init) pairs of ``spectrum``
    (tanh + Glorot, tanh + orthogonal, ReLU + He, ReLU + orthogonal, in that order)."""
    colors = dict(zip(labels, PALETTE, strict=False))
    fig, axes = plt.subplots(1, 2, figsize=(8.4, 4.0), sharey=True)
    for ax, act in zip(axes, activations, strict=True):
        for init in [i for a, i in spectrum if a == act]:
            singular = np.maximum(first[act, init]["singular"], 1e-300)
            ax.semilogy(range(1, len(singular) + 1), singular, c=colors[init], label=labels[init])
        ax.set(title=act, xlabel="index (largest first)", ylim=(1e-20, 1e3))
        ax.legend(loc="lower left")
    axes[0].set_ylabel(r"singular value of $\partial h_D/\partial h_0$")
    fig.suptitle(f"Input-output Jacobian at one input (seed {seed})")
    tanh_g, tanh_o, relu_h, relu_o = [first[pair] for pair in spectrum]
    depth = len(tanh_g["var_z"])
    alt = f"Singular values of the {depth}-layer input-output Jacobian. Tanh: Glorot's fall over many orders "
    alt += (
        f"of magnitude (largest over median {tanh_g['sv_spread']:.1e}), orthogonal's stay nearly level but "
    )
    alt += f"for the last few (largest over median {tanh_o['sv_spread']:.2g}). ReLU: {relu_h['sv_zero']:.0%} "
    alt += f"(He) and {relu_o['sv_zero']:.0%} (orthogonal) of them are numerically zero."
    return fig, alt


def signal_frames(stds, runs, width, command):
    """``Results.frames`` keywords for ReLU runs at weight std ``stds[i]`` (``runs[i]``: the dict of
    ``init.propagate``, with ``var_z``, ``var_grad_h``, ``forward`` and ``backward``)."""
    depth = len(runs[0]["var_z"])
    forward = [list(np.asarray(r["var_z"]) / r["var_z"][0]) for r in runs]
    backward = [list(np.asarray(r["var_grad_h"]) / r["var_grad_h"][-1]) for r in runs]
    description = [
        f"σ = {s:g} (n σ²/2 = {width * s**2 / 2:.3g}): per layer, Var[z] × {r['forward']:.3g} and the "
        f"gradient's variance × {r['backward']:.3g}; layer {depth}'s Var[z] is {f[-1]:.1e} of layer 1's, "
        f"layer 1's gradient variance {b[0]:.1e} of layer {depth}'s"
        for s, r, f, b in zip(stds, runs, forward, backward, strict=True)
    ]
    return dict(
        values=list(stds),
        x=list(range(1, depth + 1)),
        series={"Var[z_l] / Var[z_1] (forward)": forward, "Var[dL/dh_l] / Var[dL/dh_D] (backward)": backward},
        description=description,
        command=command,
        parameter="weight std σ",
        title="ReLU signal per layer as the weight scale moves",
        xlabel="hidden layer l",
        ylabel="variance relative to its start",
        yscale="log",
        hlines=[(1.0, "unchanged")],
    )
