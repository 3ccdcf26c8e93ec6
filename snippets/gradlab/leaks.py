"""Helpers for the "leaks" chapters: programs that differ from their function, and updates that
never land.

`primal` lets one program build a mask (``x > 0``) under every differentiation method;
`update_norms`, `frozen_parameters` and `stuck_parameters` are the check that catches an
optimizer step that silently did nothing: after a step, every trained parameter with a non-zero
gradient must have moved. `InPlaceAdam` re-enacts an Adam step whose in-place kernels missed
non-contiguous outputs (PyTorch's MPS backend before 2.4, issue #118115); `autoencoder_loss`,
`frozen_encoder_floor` and `autoencoder_optimum` are the linear autoencoder it is shown on.
`normwise_disagreement` compares reverse mode with the other methods, normwise.
"""

import numpy as np

from . import check, engine, ops
from .engine import Tensor
from .forward import Dual


def primal(x):
    """The value a program branches on: a Tensor's data, a Dual's value, the real part of an
    array (so a complex-step evaluation branches exactly like a real one)."""
    if isinstance(x, Tensor):
        return x.data
    if isinstance(x, Dual):
        return x.val
    return np.real(x)


def normwise_disagreement(f, params, methods=("forward", "central", "complex"), known=None):
    """The largest normwise relative error ||g - g_rev|| / ||g_rev|| of each method in `methods`
    against reverse mode. Normwise, because an entry near zero makes the elementwise relative
    error of central differences arbitrarily large (their rounding error is absolute). `known`:
    {method name: its gradients of f at params}, already computed by the caller and not recomputed."""
    known = known or {}

    def gradients(name):
        return known[name] if name in known else check.METHODS[name](f, params)

    reverse = gradients("reverse")
    return max(check.normwise_rel_error(gradients(name), reverse) for name in methods)


def autoencoder_loss(params, X):
    """mean((X W_enc W_dec - X)^2) for params = [W_enc, W_dec]: a linear autoencoder, no biases."""
    W_enc, W_dec = params
    return ops.mean((ops.matmul(ops.matmul(X, W_enc), W_dec) - X) ** 2)


def frozen_encoder_floor(X, W_enc):
    """min over W_dec of mean((X W_enc W_dec - X)^2): the least loss of a linear autoencoder whose
    encoder is frozen at W_enc (least squares on the features X W_enc)."""
    H = X @ W_enc
    W_dec = np.linalg.lstsq(H, X, rcond=None)[0]
    return float(np.mean((H @ W_dec - X) ** 2))


def autoencoder_optimum(X, width):
    """min over W_enc, W_dec of mean((X W_enc W_dec - X)^2) for a hidden layer of `width`: the
    error of the best rank-`width` approximation of X (Eckart-Young), sum of the trailing
    squared singular values over X.size."""
    singular_values = np.linalg.svd(X, compute_uv=False)
    return float(np.sum(singular_values[width:] ** 2) / X.size)


def update_norms(before, after):
    """||p_after - p_before|| (Frobenius) for each parameter, as a list of floats."""
    if len(before) != len(after):
        raise ValueError(f"{len(before)} parameters before the step, {len(after)} after")
    return [
        float(np.linalg.norm(np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)))
        for b, a in zip(before, after, strict=True)
    ]


def frozen_parameters(before, after, names):
    """The names of the parameters whose update norm is exactly zero: a step that did nothing.

    A zero update can be legitimate (a zero gradient, a frozen layer); a trained parameter
    that never moves is the signature of an update written somewhere else (a copy, a
    temporary that was never written back)."""
    norms = update_norms(before, after)
    if len(names) != len(norms):
        raise ValueError(f"{len(names)} names for {len(norms)} parameters")
    return [name for name, norm in zip(names, norms, strict=True) if norm == 0.0]


def stuck_parameters(before, after, grads, names):
    """The names of the parameters that did not move although their gradient is non-zero.

    The sharper form of `frozen_parameters`: a zero gradient explains a zero update; a
    non-zero gradient with a zero update means the step was written somewhere else."""
    norms = update_norms(before, after)
    if not (len(names) == len(norms) == len(grads)):
        raise ValueError(f"{len(names)} names, {len(norms)} parameters, {len(grads)} gradients")
    return [
        name
        for name, norm, grad in zip(names, norms, grads, strict=True)
        if norm == 0.0 and np.any(np.asarray(grad) != 0)
    ]


# --8<-- [start:kernels]
def addcmul_(out, a, b, value, flawed=False):
    """out += value * a * b in place, as torch.Tensor.addcmul_. ``flawed=True`` behaves like the
    MPS kernels of issue #118115: it computes into a contiguous copy of a non-contiguous `out`
    and never writes the copy back (for a contiguous `out`, the "copy" is `out` itself)."""
    target = np.ascontiguousarray(out) if flawed else out
    target += value * a * b


def addcdiv_(out, a, b, value, flawed=False):
    """out += value * a / b in place, as torch.Tensor.addcdiv_; ``flawed`` as in `addcmul_`."""
    target = np.ascontiguousarray(out) if flawed else out
    target += value * a / b


# --8<-- [end:kernels]


class InPlaceAdam:
    """torch.optim.Adam's single-tensor step (Kingma & Ba, ICLR 2015) on numpy arrays, in place:

    m.lerp_(g, 1 - beta1); v.mul_(beta2).addcmul_(g, g, 1 - beta2);
    p.addcdiv_(m, sqrt(v) / sqrt(1 - beta2^t) + eps, -lr / (1 - beta1^t)).

    The state buffers are ``np.zeros_like(p)``, which keeps p's memory layout (as
    ``torch.zeros_like`` does). ``flawed`` selects the kernels of `addcmul_` and `addcdiv_`."""

    def __init__(self, params, lr, flawed=False, beta1=0.9, beta2=0.999, eps=1e-8):
        self.lr, self.flawed, self.beta1, self.beta2, self.eps, self.t = lr, flawed, beta1, beta2, eps, 0
        self.exp_avg = [np.zeros_like(p) for p in params]
        self.exp_avg_sq = [np.zeros_like(p) for p in params]

    def step(self, params, grads):
        """Update `params` (and the state) in place."""
        self.t += 1
        for p, g, m, v in zip(params, grads, self.exp_avg, self.exp_avg_sq, strict=True):
            m += (1 - self.beta1) * (g - m)  # lerp_: an ordinary in-place update, any layout
            v *= self.beta2
            addcmul_(v, g, g, 1 - self.beta2, self.flawed)
            denom = np.sqrt(v) / np.sqrt(1 - self.beta2**self.t) + self.eps
            addcdiv_(p, m, denom, -self.lr / (1 - self.beta1**self.t), self.flawed)


def run_adam(loss, params, lr, flawed, steps, names):
    """Train `params` in place for `steps` steps of `InPlaceAdam`. Returns the loss before each
    step, the optimizer (its state), `stuck_parameters` after the first step (the diagnostic) and
    the gradients of the first step."""
    optimizer, history, start = InPlaceAdam(params, lr, flawed), [], [p.copy() for p in params]
    for k in range(steps):
        value, grads = engine.value_and_grad(loss, params)
        optimizer.step(params, grads)
        history.append(value)
        if k == 0:
            flagged, first_grads = stuck_parameters(start, params, grads, names), grads
    return history, optimizer, flagged, first_grads
