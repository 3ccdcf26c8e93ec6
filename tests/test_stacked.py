"""gradlab.stacked: the hand-written stacked backward pass equals the engine's reverse mode."""

import itertools

import numpy as np
import pytest
from gradlab import engine, ops, stacked


def engine_loss(params, X, y, variant):
    h = X
    for layer, (W, b) in enumerate(zip(params[0:-2:2], params[1:-2:2], strict=True)):
        z = ops.linear(h, W, b)
        t = ops.tanh(ops.layer_norm(z) if variant == "normalized" else z)
        h = h + t if variant == "residual" and layer > 0 else t
    return ops.mean((ops.linear(h, params[-2], params[-1]) - y) ** 2)


@pytest.mark.parametrize("variant", stacked.VARIANTS)
def test_matches_engine_on_every_network_of_the_stack(variant):
    rng = np.random.default_rng(0)
    sizes, K, N = [3, 5, 5, 5, 1], 4, 7
    params = []
    for fan_in, fan_out in itertools.pairwise(sizes):
        params += [rng.normal(size=(K, fan_in, fan_out)), rng.normal(size=(K, 1, fan_out))]
    X, y = rng.normal(size=(K, N, 3)), rng.normal(size=(K, N, 1))
    losses, grads = stacked.value_and_grad(params, X, y, variant)
    for k in range(K):
        one = [p[k] for p in params]
        value, expected = engine.value_and_grad(lambda p, k=k: engine_loss(p, X[k], y[k], variant), one)
        assert np.isclose(losses[k], value, rtol=1e-12)
        for g, e in zip(grads, expected, strict=True):
            np.testing.assert_allclose(g[k], e, rtol=1e-10, atol=1e-13)


def test_unknown_variant_is_refused():
    with pytest.raises(ValueError, match="unknown variant"):
        stacked.value_and_grad([], None, None, "batchnorm")


def straightforward(params, X, y, variant, eps=1e-5):
    """The same pass in the (K, N, units) layout with numpy's own mean and var: the reference
    the units-first arrays must reproduce bit for bit."""
    t_ = lambda a: np.swapaxes(a, -1, -2)  # noqa: E731
    h, cache = X, []
    for layer, (W, b) in enumerate(zip(params[0:-2:2], params[1:-2:2], strict=True)):
        z = h @ W + b
        sigma = np.sqrt(z.var(-1, keepdims=True) + eps) if variant == "normalized" else 1.0
        u = (z - z.mean(-1, keepdims=True)) / sigma if variant == "normalized" else z
        t = np.tanh(u)
        cache.append((h, u, sigma, t))
        h = h + t if variant == "residual" and layer >= 1 else t
    residual = h @ params[-2] + params[-1] - y
    d = 2 * residual / residual.shape[-2]
    grads = [None] * (len(params) - 2) + [t_(h) @ d, d.sum(-2, keepdims=True)]
    dh = d @ t_(params[-2])
    for layer in reversed(range(len(cache))):
        h_prev, u, sigma, t = cache[layer]
        g = dh * (1 - t * t)
        if variant == "normalized":
            g = (g - g.mean(-1, keepdims=True) - u * (g * u).mean(-1, keepdims=True)) / sigma
        grads[2 * layer], grads[2 * layer + 1] = t_(h_prev) @ g, g.sum(-2, keepdims=True)
        back = g @ t_(params[2 * layer])
        dh = back + dh if variant == "residual" and layer >= 1 else back
    return (residual**2).mean(axis=(-2, -1)), grads


def blas_orientation_agrees(sizes, K=6, N=32):
    """Does this BLAS round each product of every hidden layer, forward h @ W and backward
    h^T @ g and g @ W^T, the same when the (examples x units) operands are stored transposed
    (units first)? Kernels may split the inner dimension differently per orientation and shape."""
    rng = np.random.default_rng(0)
    first, view = stacked._units_first, stacked._matrices  # (K, N, units) -> (units, K, N) and back
    for fan_in, fan_out in set(itertools.pairwise(sizes[:-1])):
        h, g = rng.normal(size=(K, N, fan_in)), rng.normal(size=(K, N, fan_out))
        W = rng.normal(size=(K, fan_in, fan_out))
        forward, backward = np.empty((fan_out, K, N)), np.empty((fan_in, K, N))
        np.matmul(view(first(h)), W, out=view(forward))
        np.matmul(view(first(g)), np.swapaxes(W, -1, -2), out=view(backward))
        weights = np.matmul(first(h).transpose(1, 0, 2), view(first(g)))
        if not (
            np.array_equal(view(forward), h @ W)
            and np.array_equal(weights, np.swapaxes(h, -1, -2) @ g)
            and np.array_equal(view(backward), g @ np.swapaxes(W, -1, -2))
        ):
            return False
    return True


@pytest.mark.parametrize("variant", stacked.VARIANTS)
@pytest.mark.parametrize("width", [3, 8, 13, 16, 20, 40, 130])
def test_units_first_layout_is_the_straightforward_pass(variant, width):
    """Bit for bit wherever the BLAS rounds both orientations of every product alike (with the
    OpenBLAS Haswell kernels the site pins, every width but 13 and 130 here, and the chapter's
    16; with its SkylakeX kernels none; with its Sandybridge kernels all); otherwise equal to
    rounding."""
    rng = np.random.default_rng(width)
    sizes, K, N = [2, width, width, width, 1], 6, 32
    params = []
    for fan_in, fan_out in itertools.pairwise(sizes):
        params += [rng.normal(size=(K, fan_in, fan_out)) / np.sqrt(fan_in), rng.normal(size=(K, 1, fan_out))]
    params[2][0] *= 1e200  # network 0 overflows (inf and nan); network 1 saturates every unit
    params[2][1] *= 1e6
    X, y = rng.uniform(-2, 2, size=(K, N, 2)), rng.normal(size=(K, N, 1))
    with np.errstate(all="ignore"):
        losses, grads = stacked.value_and_grad(params, X, y, variant)
        expected_losses, expected = straightforward(params, X, y, variant)
    if blas_orientation_agrees(sizes):
        assert np.array_equal(losses, expected_losses, equal_nan=True)
        for g, e in zip(grads, expected, strict=True):
            assert g.shape == e.shape and np.array_equal(g, e, equal_nan=True)
            assert np.array_equal(np.signbit(g), np.signbit(e))  # even the signs of zeros
    np.testing.assert_allclose(losses[2:], expected_losses[2:], rtol=1e-12)
    for g, e in zip(grads, expected, strict=True):
        np.testing.assert_allclose(g[2:], e[2:], rtol=1e-9, atol=1e-14)


def test_unit_sum_is_numpys_sum_bit_for_bit():
    rng = np.random.default_rng(1)
    for n in (1, 7, 8, 9, 16, 17, 64, 100, 128, 129, 300):
        x = rng.normal(size=(4, 5, n)) * np.exp(rng.uniform(-30, 30, size=(4, 5, n)))
        x[0, 0] = -0.0
        got = stacked.unit_sum(np.ascontiguousarray(x.transpose(2, 0, 1)))
        expected = x.sum(-1)[None]
        assert np.array_equal(got, expected) and np.array_equal(np.signbit(got), np.signbit(expected))


def test_one_network_without_the_stack_axis():
    rng = np.random.default_rng(5)
    params = [
        rng.normal(size=(2, 4)),
        rng.normal(size=(1, 4)),
        rng.normal(size=(4, 1)),
        rng.normal(size=(1, 1)),
    ]
    X, y = rng.normal(size=(9, 2)), rng.normal(size=(9, 1))
    value, grads = stacked.value_and_grad(params, X, y, "plain")
    stacked_value, stacked_grads = stacked.value_and_grad(
        [p[None] for p in params], X[None], y[None], "plain"
    )
    assert value == stacked_value[0] and all(
        np.array_equal(g, s[0]) for g, s in zip(grads, stacked_grads, strict=True)
    )
    assert [g.shape for g in grads] == [p.shape for p in params]
