"""layer_norm: reverse mode against forward mode, central differences and the complex step."""

import numpy as np
import pytest
import strategies as S
from gradlab import check, engine, forward, ops
from gradlab.engine import Tensor
from gradlab.forward import Dual
from hypothesis import given, settings
from hypothesis import strategies as st

# Rows of at least 2 entries along the normalized axis: with one entry x - mean x is 0 and
# the gradient is 0 by every method, which tests nothing.
matrices = st.tuples(st.integers(1, 4), st.integers(2, 5)).flatmap(S.arrays)


def spread(x, axis):
    """Add a ramp along `axis`, so no slice is nearly constant: a constant slice has variance 0
    and y = 0 / sqrt(eps), smooth but too badly scaled for finite differences to check. The ramp's
    step exceeds twice the largest |x| by 1, so neighbours differ by at least 1 whatever x is (a
    unit step once cancelled x = [0, -0.996] to [0, 0.004], variance 4e-6 beside eps = 1e-5, and
    central differences missed by 1.5e-5)."""
    ramp = np.arange(x.shape[axis], dtype=float) * (1 + 2 * np.abs(x).max(initial=0.0))
    return x + (ramp if axis == -1 else ramp[:, None])


def weighted_layer_norm(axis, eps=1e-5):
    """A scalar of layer_norm with uneven weights (sum(y) alone is 0 by construction)."""

    def loss(params):
        (x,) = params
        y = ops.layer_norm(x, axis, eps)
        weights = 0.3 + (np.arange(x.size) % 5).reshape(x.shape) / 5
        return ops.sum(y * y * weights + y * weights[::-1])

    return loss


@pytest.mark.parametrize("axis", [-1, 0])
@settings(max_examples=30, deadline=None)
@given(x=matrices)
def test_reverse_matches_forward_central_and_complex_step(axis, x):
    x = spread(x, axis)
    check.assert_gradients_close(weighted_layer_norm(axis), [x], rtol=1e-6, atol=1e-9)
    loss = weighted_layer_norm(axis)
    np.testing.assert_allclose(engine.grad(loss, [x])[0], forward.grad(loss, [x])[0], rtol=1e-9, atol=1e-12)


@settings(max_examples=30, deadline=None)
@given(x=S.shapes.filter(lambda s: len(s) >= 1 and s[-1] >= 2).flatmap(S.arrays), data=st.data())
def test_same_value_and_tangent_on_every_type(x, data):
    x = x + np.arange(x.shape[-1])  # no constant rows
    v = data.draw(S.arrays(x.shape))
    value = ops.layer_norm(x)
    np.testing.assert_allclose(Tensor(x).layer_norm().data, value, rtol=1e-13, atol=1e-14)
    dual = ops.layer_norm(Dual(x, v))
    np.testing.assert_allclose(dual.val, value, rtol=1e-13, atol=1e-14)
    h = 1e-20
    complex_value = ops.layer_norm(x + 1j * h * v)
    np.testing.assert_allclose(complex_value.real, value, rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(complex_value.imag / h, dual.tan, rtol=1e-10, atol=1e-10)


def test_output_has_zero_mean_and_unit_variance():
    x = np.random.default_rng(0).normal(3.0, 5.0, size=(4, 50))
    y = ops.layer_norm(x, eps=0.0)
    np.testing.assert_allclose(y.mean(axis=-1), 0, atol=1e-14)
    np.testing.assert_allclose(y.std(axis=-1), 1, rtol=1e-13)
    np.testing.assert_allclose(ops.layer_norm(x, axis=0, eps=0.0).std(axis=0), 1, rtol=1e-13)


def test_gradient_is_scale_invariant():
    """Scaling x by c leaves y unchanged and divides dL/dx by c (eps = 0): the property that
    lets a normalized layer train with any weight scale."""
    x = np.random.default_rng(1).normal(size=(3, 6))
    loss = weighted_layer_norm(-1, eps=0.0)
    (g,) = engine.grad(loss, [x])
    (g_scaled,) = engine.grad(loss, [1e-3 * x])
    np.testing.assert_allclose(g_scaled, 1e3 * g, rtol=1e-9)


def test_float32_kept():
    x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    t = Tensor(x, requires_grad=True)
    y = t.layer_norm()
    assert y.dtype == np.float32
    (y * y * np.float32(2)).sum().backward()
    assert t.grad.dtype == np.float32
