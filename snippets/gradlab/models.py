"""Small models, written with `ops` so every differentiation method runs them.

Parameters are flat lists of numpy arrays; rows of X are examples, so a layer is X @ W + b with
W of shape (fan_in, fan_out).
"""

from itertools import pairwise

import numpy as np

from . import ops

ACTIVATIONS = {
    "tanh": ops.tanh,
    "sigmoid": ops.sigmoid,
    "relu": ops.relu,
    "leaky_relu": ops.leaky_relu,
    "linear": lambda z: z,
}


def _activation(name):
    if name not in ACTIVATIONS:
        raise ValueError(f"unknown activation {name!r}; choose from {sorted(ACTIVATIONS)}")
    return ACTIVATIONS[name]


def weight_std(init, fan_in, fan_out):
    """Standard deviation of a layer's weights under an initialization scheme:

    "naive": 0.01;  a number s: s;  "glorot": sqrt(2 / (fan_in + fan_out));  "he": sqrt(2 / fan_in).
    """
    if isinstance(init, (int, float)) and not isinstance(init, bool):
        return float(init)
    schemes = {
        "naive": 0.01,
        "glorot": np.sqrt(2 / (fan_in + fan_out)),
        "he": np.sqrt(2 / fan_in),
    }
    if init not in schemes:
        raise ValueError(f"unknown init {init!r}; choose from {sorted(schemes)} or a number")
    return schemes[init]


def init_mlp(sizes, init, rng, dtype=np.float64, bias=0.0):
    """[W1, b1, W2, b2, ...] for layer sizes [n_in, n_hidden, ..., n_out].

    W_l ~ N(0, std^2) with std = weight_std(init, fan_in, fan_out) (normal, not uniform);
    b_l = bias everywhere.
    """
    params = []
    for fan_in, fan_out in pairwise(sizes):
        std = weight_std(init, fan_in, fan_out)
        params.append(rng.normal(0.0, std, size=(fan_in, fan_out)).astype(dtype))
        params.append(np.full(fan_out, bias, dtype=dtype))
    return params


def mlp(params, X, activation="tanh", return_hidden=False):
    """z_l = h_{l-1} @ W_l + b_l, h_l = activation(z_l), with h_0 = X; the last layer is linear.

    With return_hidden=True, returns (output, pre_activations, activations): lists of z_l and
    h_l for the hidden layers only.
    """
    act = _activation(activation)
    weights, biases = params[0::2], params[1::2]
    h, pre_activations, activations = X, [], []
    for W, b in zip(weights[:-1], biases[:-1], strict=True):
        z = ops.linear(h, W, b)
        h = act(z)
        pre_activations.append(z)
        activations.append(h)
    output = ops.linear(h, weights[-1], biases[-1])
    return (output, pre_activations, activations) if return_hidden else output


def init_rnn(hidden, inputs, scale, rng, dtype=np.float64):
    """[W_hh, W_xh, b] for a vanilla RNN.

    W_hh ~ N(0, scale^2 / hidden), so its spectral radius is close to `scale` (circular law):
    above 1 gradients through time tend to explode, below 1 to vanish.
    W_xh ~ N(0, 1 / inputs), b = 0.
    """
    W_hh = rng.normal(0.0, scale / np.sqrt(hidden), size=(hidden, hidden)).astype(dtype)
    W_xh = rng.normal(0.0, 1 / np.sqrt(inputs), size=(hidden, inputs)).astype(dtype)
    return [W_hh, W_xh, np.zeros(hidden, dtype=dtype)]


def rnn(params, xs, h0, activation="tanh", return_states=False):
    """h_t = activation(W_hh h_{t-1} + W_xh x_t + b) for t = 1..T, from h0.

    xs is a sequence (or an array with time on axis 0) of inputs x_t of shape (inputs,) or
    (batch, inputs); h0 has shape (hidden,) or (batch, hidden). Returns h_T, or
    (h_T, [h_1, ..., h_T]) with return_states=True.
    """
    W_hh, W_xh, b = params
    act = _activation(activation)
    h, states = h0, []
    for x in xs:  # row-vector form of W_hh h + W_xh x + b, so a batch works too
        h = act(ops.matmul(h, W_hh.T) + ops.linear(x, W_xh.T, b))
        states.append(h)
    return (h, states) if return_states else h


def grad_norm_per_layer(grads):
    """||dL/dW_l||_F for each layer of an MLP: the Frobenius norms of the weight gradients,
    i.e. of every second entry of [dW1, db1, dW2, db2, ...] (biases are skipped)."""
    return [float(np.linalg.norm(g)) for g in grads[0::2]]
