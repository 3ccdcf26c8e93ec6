"""What backprop computes: four methods, one gradient.

Computes the gradient of two small losses, a tanh MLP's squared error and a vanilla RNN's
final-state energy, by reverse mode (backpropagation), forward mode (dual numbers), central
differences and the complex step, and measures how far the last three are from reverse mode.
Quoted by docs/what-backprop-computes.md.
"""

# %% [markdown]
# Every gradient on this site is computed by `gradlab.engine`, a reverse-mode engine of a few
# hundred lines. Before trusting it, check it against three methods that share none of its
# code: forward mode pushes a tangent through the computation alongside the value, central
# differences evaluate the function at $x \pm h e_k$, and the complex step reads the
# derivative off $\operatorname{Im} f(x + i h e_k) / h$.

# %%
import numpy as np
from gradlab import check, engine, models, ops, snippet

parser = snippet.parser(__doc__)
parser.add_argument("--width", type=snippet.positive_int, default=8, help="hidden units of the MLP")
parser.add_argument("--batch", type=snippet.positive_int, default=16, help="examples in the batch")
parser.add_argument("--steps", type=snippet.positive_int, default=6, help="time steps of the RNN")
parser.add_argument(
    "--activation", choices=["tanh", "sigmoid", "relu"], default="tanh", help="the MLP's hidden activation"
)
args, results = snippet.parse(parser)
rng = np.random.default_rng(args.seed)

# %% [markdown]
# ## Accumulation at a fork
#
# In $f(x) = x \cdot x + x$ the input $x$ is used three times. Each use sends its own
# contribution back, and the engine *adds* them into `x.grad`: $x + x + 1 = 2x + 1$, which is
# 7 at $x = 3$.

# %%
x = engine.Tensor(3.0)
(x * x + x).backward()
results.number("fork_grad", x.grad.item(), "d(x*x + x)/dx at x = 3, summed over the three uses of x")

# %% [markdown]
# ## An MLP's loss
#
# Two hidden layers, a linear output, squared error against random targets. The loss is
# written once with `gradlab.ops`, so the same Python function runs on reverse-mode tensors,
# dual numbers, real arrays and complex arrays.

# %%
n_inputs = 3
X = rng.normal(size=(args.batch, n_inputs))
y = rng.normal(size=(args.batch, 1))
mlp_params = models.init_mlp([n_inputs, args.width, args.width, 1], "glorot", rng)


def mlp_loss(params):
    return ops.mean((models.mlp(params, X, args.activation) - y) ** 2)


mlp_n = sum(p.size for p in mlp_params)
results.number("mlp_params", mlp_n, "parameters of the MLP")
results.number("mlp_width", args.width, "hidden units per layer of the MLP")
results.number("batch", args.batch, "examples in the MLP's batch")

# %% [markdown]
# ## A small RNN's loss
#
# $h_t = \tanh(W_{hh} h_{t-1} + W_{xh} x_t + b)$ for a few steps, loss $\tfrac12 \lVert h_T \rVert^2$
# averaged over the batch. The same weights are used at every step, so each gradient is a sum
# over time steps: accumulation at forks again.

# %%
hidden, rnn_inputs = 4, 3
rnn_params = models.init_rnn(hidden, rnn_inputs, scale=1.0, rng=rng)
xs = rng.normal(size=(args.steps, args.batch, rnn_inputs))
h0 = np.zeros((args.batch, hidden))


def rnn_loss(params):
    h_T = models.rnn(params, xs, h0)
    return 0.5 * ops.mean(ops.sum(h_T * h_T, axis=1))


results.number("rnn_params", sum(p.size for p in rnn_params), "parameters of the RNN")
results.number("rnn_steps", args.steps, "time steps of the RNN")

# %% [markdown]
# ## Agreement
#
# Two measures for each method against reverse mode. The *elementwise* one is the largest
# $|a_k - b_k| / \max(|a_k|, |b_k|)$ over all entries (`gradlab.check.rel_error`): strict, and
# dominated by the smallest gradient entries. The *scaled* one divides the largest
# $|a_k - b_k|$ by the largest $|a_k|$. Forward mode and the complex step subtract no nearly
# equal numbers, so they agree to a few units of the last place; central differences carry
# truncation and rounding errors near $\epsilon^{2/3} \approx 10^{-10}$ relative to the
# gradient's scale (see `gradlab/numerical.py`). The tolerances fail the test job if a method is
# off by more than rounding explains.

# %%
tolerance = {"forward": 1e-12, "complex": 1e-12, "central": 1e-5}
worst_exact = 0.0
for model, loss, params in (("mlp", mlp_loss, mlp_params), ("rnn", rnn_loss, rnn_params)):
    reference = engine.grad(loss, params)
    scale = max(np.abs(g).max() for g in reference)
    for method in ("forward", "central", "complex"):
        grads = check.METHODS[method](loss, params)
        elementwise = check.max_rel_error(reference, grads)
        scaled = max(np.abs(a - b).max() for a, b in zip(reference, grads, strict=True)) / scale
        print(f"{model}: reverse vs {method:<8} elementwise {elementwise:.1e}, scaled {scaled:.1e}")
        about = f"{model.upper()}: reverse vs {method}, largest relative disagreement"
        results.number(
            f"{model}_{method}_error", elementwise, f"{about}, elementwise", rtol=0, atol=tolerance[method]
        )
        results.number(
            f"{model}_{method}_scaled", scaled, f"{about}, scaled", rtol=0, atol=tolerance[method] / 10
        )
        if method != "central":
            worst_exact = max(worst_exact, elementwise)
results.number(
    "worst_exact_error",
    worst_exact,
    "largest elementwise disagreement of forward mode or complex step",
    rtol=0,
    atol=1e-12,
)

# %%
results.save()
