"""MLP and RNN builders: shapes, initial scales, every method agrees on their gradients."""

import numpy as np
import pytest
from gradlab import check, engine, forward, models, ops
from gradlab.engine import Tensor
from gradlab.forward import Dual


@pytest.mark.parametrize(
    "init, expected_std",
    [("naive", 0.01), (0.3, 0.3), ("glorot", np.sqrt(2 / 500)), ("he", np.sqrt(2 / 200))],
)
def test_init_mlp_scales(init, expected_std):
    params = models.init_mlp([200, 300, 10], init, np.random.default_rng(0), bias=0.5)
    assert [p.shape for p in params] == [(200, 300), (300,), (300, 10), (10,)]
    assert params[0].std() == pytest.approx(expected_std, rel=0.02)
    assert np.all(params[1] == 0.5)


def test_init_mlp_dtype_and_bad_names():
    params = models.init_mlp([2, 3], "he", np.random.default_rng(0), dtype=np.float32)
    assert all(p.dtype == np.float32 for p in params)
    with pytest.raises(ValueError, match="unknown init"):
        models.init_mlp([2, 3], "xavier", np.random.default_rng(0))
    with pytest.raises(ValueError, match="unknown activation"):
        models.mlp(params, np.ones((1, 2)), activation="gelu")


def test_mlp_hidden_layers():
    rng = np.random.default_rng(0)
    params = models.init_mlp([3, 4, 5, 2], "glorot", rng)
    X = rng.normal(size=(7, 3))
    out, pre, post = models.mlp(params, X, "relu", return_hidden=True)
    assert out.shape == (7, 2)
    assert [z.shape for z in pre] == [h.shape for h in post] == [(7, 4), (7, 5)]
    np.testing.assert_allclose(pre[0], X @ params[0] + params[1])
    np.testing.assert_allclose(post[1], np.maximum(pre[1], 0))
    np.testing.assert_allclose(out, post[1] @ params[4] + params[5])


@pytest.mark.parametrize("activation", ["tanh", "sigmoid", "relu", "leaky_relu", "linear"])
def test_mlp_gradients_agree_across_methods(activation):
    rng = np.random.default_rng(1)
    params = models.init_mlp([3, 4, 4, 2], "he", rng, bias=0.1)
    X, y = rng.normal(size=(5, 3)), rng.normal(size=(5, 2))
    loss = lambda p: ops.mean((models.mlp(p, X, activation) - y) ** 2)  # noqa: E731
    check.assert_gradients_close(loss, params, rtol=1e-5, atol=1e-10)


def test_mlp_runs_on_every_type():
    rng = np.random.default_rng(2)
    params = models.init_mlp([3, 4, 2], "glorot", rng)
    X = rng.normal(size=(5, 3))
    value = models.mlp(params, X)
    np.testing.assert_allclose(models.mlp([Tensor(p) for p in params], X).data, value)
    np.testing.assert_allclose(models.mlp([Dual(p) for p in params], X).val, value)
    np.testing.assert_allclose(models.mlp([p + 0j for p in params], X).real, value)


def test_rnn_step_and_states():
    rng = np.random.default_rng(3)
    W_hh, W_xh, b = params = models.init_rnn(hidden=4, inputs=2, scale=0.9, rng=rng)
    assert (W_hh.shape, W_xh.shape, b.shape) == ((4, 4), (4, 2), (4,))
    xs, h0 = rng.normal(size=(6, 2)), rng.normal(size=4)
    h, states = models.rnn(params, xs, h0, return_states=True)
    assert len(states) == 6 and h is states[-1]
    np.testing.assert_allclose(states[0], np.tanh(W_hh @ h0 + W_xh @ xs[0] + b))
    batch = models.rnn(params, xs[:, None, :].repeat(3, axis=1), np.tile(h0, (3, 1)))
    np.testing.assert_allclose(batch, np.tile(h, (3, 1)))


def test_rnn_scale_sets_the_spectral_radius():
    W_hh = models.init_rnn(hidden=400, inputs=1, scale=1.5, rng=np.random.default_rng(0))[0]
    assert np.abs(np.linalg.eigvals(W_hh)).max() == pytest.approx(1.5, rel=0.05)


def test_rnn_gradients_agree_across_methods():
    rng = np.random.default_rng(4)
    params = models.init_rnn(hidden=3, inputs=2, scale=1.2, rng=rng)
    xs, h0 = rng.normal(size=(8, 2)), np.zeros(3)
    loss = lambda p: ops.sum(models.rnn(p, xs, h0) ** 2)  # noqa: E731
    check.assert_gradients_close(loss, params, rtol=1e-6, atol=1e-12)


def test_grad_norm_per_layer():
    rng = np.random.default_rng(5)
    params = models.init_mlp([3, 4, 4, 2], "glorot", rng)
    X = rng.normal(size=(5, 3))
    grads = engine.grad(lambda p: ops.mean(models.mlp(p, X, "sigmoid") ** 2), params)
    norms = models.grad_norm_per_layer(grads)
    assert norms == [pytest.approx(np.sqrt((g**2).sum())) for g in grads[0::2]]
    assert len(norms) == 3


def test_float32_mlp_gradients_stay_float32():
    rng = np.random.default_rng(6)
    params = models.init_mlp([3, 4, 2], "glorot", rng, dtype=np.float32)
    X = rng.normal(size=(5, 3)).astype(np.float32)
    loss = lambda p: ops.mean(models.mlp(p, X) ** 2)  # noqa: E731
    for grads in (engine.grad(loss, params), forward.grad(loss, params)):
        assert all(g.dtype == np.float32 for g in grads)
    # float32 rounding: a tiny entry (~2e-5) can differ by ~1e-4 relative, hence the atol
    check.assert_gradients_close(loss, params, rtol=1e-5, atol=1e-7, methods=("forward",))
