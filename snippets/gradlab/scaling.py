"""Low-precision helpers: bfloat16 emulation and a dynamic loss scaler, in plain numpy.

* :func:`to_bfloat16` rounds float32 to bfloat16 (1 sign, 8 exponent, 7 fraction bits), the
  top 16 bits of a float32, with round-to-nearest-even; the result is stored as float32. numpy
  has no bfloat16 type, so this is how the site emulates it.
* :func:`to_bfloat16_stochastic` rounds up or down at random, with probabilities that make the
  expected result the exact input: small updates survive on average.
* :class:`DynamicLossScaler` models ``torch.amp.GradScaler``'s scale schedule: the scale S is a
  float32, starts at 2**16, is multiplied by ``growth_factor`` = 2 after ``growth_interval`` =
  2000 consecutive steps with finite gradients, and multiplied by ``backoff_factor`` = 0.5 (the
  step skipped) whenever a gradient is inf or NaN (PyTorch documentation, "Automatic Mixed
  Precision package - torch.amp", GradScaler).
"""

import numpy as np


def to_bfloat16(x):
    """float32 -> the nearest bfloat16 (ties to even), as float32. inf stays inf, NaN stays NaN;
    values past bfloat16's largest finite value round to inf, as IEEE rounding does."""
    x = np.asarray(x, dtype=np.float32)
    bits = x.view(np.uint32).astype(np.uint64)
    lsb = (bits >> 16) & 1  # the last kept bit: a tie rounds to make it 0
    rounded = ((bits + 0x7FFF + lsb) & 0xFFFF0000).astype(np.uint32).view(np.float32)
    return np.where(np.isnan(x), x, rounded).astype(np.float32)


def to_bfloat16_stochastic(x, rng):
    """float32 -> bfloat16 (as float32), rounding away from the truncated value with probability
    (discarded bits) / 2**16, so that E[result] = x for finite x not near overflow."""
    x = np.asarray(x, dtype=np.float32)
    bits = x.view(np.uint32).astype(np.uint64)
    noise = rng.integers(0, 1 << 16, size=x.shape, dtype=np.uint64)
    rounded = ((bits + noise) & 0xFFFF0000).astype(np.uint32).view(np.float32)
    return np.where(np.isfinite(x), rounded, x).astype(np.float32)


def bfloat16_spacing(x):
    """The distance from |x| to the next larger bfloat16 (one ulp), for normal bfloat16 x:
    2**(e - 7) with 2**e <= |x| < 2**(e + 1)."""
    exponent = np.floor(np.log2(np.abs(np.asarray(x, dtype=np.float64))))
    return 2.0 ** (exponent - 7)


class DynamicLossScaler:
    """The scale schedule of torch.amp.GradScaler (defaults as in PyTorch), S held in float32.

    Call :meth:`update` once per step with whether any scaled gradient was inf or NaN; it
    returns True if the optimizer step is taken, False if it is skipped.
    """

    def __init__(self, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000):
        self.scale = np.float32(init_scale)
        self.growth_factor, self.backoff_factor = np.float32(growth_factor), np.float32(backoff_factor)
        self.growth_interval = growth_interval
        self.clean_steps = 0

    def update(self, found_inf: bool) -> bool:
        if found_inf:
            self.scale = np.float32(self.scale * self.backoff_factor)
            self.clean_steps = 0
            return False
        self.clean_steps += 1
        if self.clean_steps == self.growth_interval:
            self.scale = np.float32(self.scale * self.growth_factor)
            self.clean_steps = 0
        return True


def tanh_slope_from_output(y):
    """tanh'(z) written as 1 - y**2 from the rounded output y = tanh(z): it cancels
    catastrophically where |y| is near 1 (large |z|)."""
    return 1 - y * y


def sech_squared(z):
    """tanh'(z) = sech(z)**2 = 4 / (e**z + e**-z)**2, computed from z: no cancellation; it
    underflows to 0 only where the true value is below the format's smallest number."""
    z = np.abs(z)
    e = np.exp(-z)  # e**z (1 + e**-2z) without overflow: 4 e**-2z / (1 + e**-2z)**2
    return 4 * e * e / (1 + e * e) ** 2


def mlp_scaled_grads(params, X, y, scale, activation="sigmoid"):
    """Mixed-precision backward pass of an MLP (``models.mlp``'s layout, mean squared error).

    The forward and backward passes run in the parameters' dtype (float16, say); the loss and
    its scaling stay in float32 (float64 for float64 parameters, so that a float64 run is a
    float64 reference), as under autocast: the backward pass starts from
    dL/d(output) = S * 2 (output - y) / N computed in that precision and rounded to the
    parameters' dtype (so it overflows to inf where that value exceeds the format). Returns (the float32
    loss, the *scaled* gradients [S dL/dW_1, S dL/db_1, ...] in the parameters' dtype, the
    scaled deltas S dL/dz_l of the hidden layers).
    """
    return mlp_scaled_grads_over(params, X, y, [scale], activation)[0]


def mlp_scaled_grads_over(params, X, y, scales, activation="sigmoid"):
    """``[mlp_scaled_grads(params, X, y, S, activation) for S in scales]``, bit for bit, with the
    forward pass (which does not depend on S) run once."""
    dtype = params[0].dtype
    loss_dtype = np.promote_types(dtype, np.float32)
    act = {"sigmoid": lambda z: 1 / (1 + np.exp(-z)), "tanh": np.tanh}[activation]
    slope = {"sigmoid": lambda h: h * (1 - h), "tanh": lambda h: 1 - h * h}[activation]
    hs = [np.asarray(X, dtype)]
    for W, b in zip(params[0:-2:2], params[1:-2:2], strict=True):
        hs.append(act(hs[-1] @ W + b).astype(dtype))
    out = (hs[-1] @ params[-2] + params[-1]).astype(loss_dtype)
    residual = out - np.asarray(y, loss_dtype)
    slopes = [slope(h) for h in hs[1:]]  # slopes[layer] belongs to hs[layer + 1]
    loss, results = float(np.mean(residual * residual)), []
    for scale in scales:
        with np.errstate(over="ignore", invalid="ignore"):
            d = (loss_dtype.type(scale) * 2 * residual / residual.shape[0]).astype(dtype)
            grads, deltas = [hs[-1].T @ d, d.sum(0)], []
            dh = d @ params[-2].T
            for layer in range(len(hs) - 2, -1, -1):
                g = (dh * slopes[layer]).astype(dtype)
                deltas.insert(0, g)
                grads = [hs[layer].T @ g, g.sum(0), *grads]
                dh = g @ params[2 * layer].T
        results.append((loss, grads, deltas))
    return results


def significant_bits(x, dtype=np.float16):
    """Bits of precision a value keeps in ``dtype``: the full significand (11 for float16) for
    normal numbers, fewer for subnormals (floor(log2(|x| / smallest subnormal)) + 1), 0 for 0."""
    info = np.finfo(dtype)
    x = np.abs(np.asarray(x, dtype=np.float64))
    full = info.nmant + 1
    with np.errstate(divide="ignore"):
        sub = np.floor(np.log2(x / float(info.smallest_subnormal))) + 1
    return np.where(x >= float(info.smallest_normal), full, np.where(x > 0, np.minimum(sub, full), 0))
