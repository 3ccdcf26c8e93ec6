"""What backprop costs, in PyTorch: backward against forward, with and without the input's gradient.

The MNIST-shaped MLP of the chapter (784-128-128-10, tanh, squared error, a batch of 256), built
from gradlab's arrays, differentiated by `loss.backward()`. `torch.utils.flop_counter` counts the
matrix products' flops of the forward and the backward pass: with `requires_grad=False` on the
input X (PyTorch's default for data) the backward pass skips dL/dX, one product of the first layer.
Then what autograd saves for backward() (`saved_tensors_hooks`), against what gradlab's rules read.
Quoted by docs/what-backprop-computes.md.
"""

# %%
import itertools
import sys
from pathlib import Path

if "__file__" in globals():  # run as a script: gradlab lives one folder up
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
import torch
from gradlab import check, engine, models, ops, snippet
from torch.utils.flop_counter import FlopCounterMode

parser = snippet.parser(__doc__)
args, results = snippet.parse(parser)
torch.set_num_threads(1)
for part, value in zip(("major", "minor"), torch.__version__.split("."), strict=False):
    results.number(f"torch_{part}", int(value), f"PyTorch version, {part}")

# %% [markdown]
# ## Forward and backward flops, the input needing a gradient or not


# %%
# --8<-- [start:core]
def flops(params, X, y, input_needs_grad):
    """Matrix-product flops of the forward pass and of loss.backward()."""
    X = X.detach().requires_grad_(input_needs_grad)  # data: False, as PyTorch's default
    with FlopCounterMode(display=False) as forward:
        h = X
        for W, b in zip(params[0:-2:2], params[1:-2:2], strict=True):
            h = torch.tanh(h @ W + b)
        loss = ((h @ params[-2] + params[-1] - y) ** 2).mean()
    with FlopCounterMode(display=False) as backward:
        loss.backward()
    return forward.get_total_flops(), backward.get_total_flops(), [p.grad for p in params]


# --8<-- [end:core]

# %%
errors, ratios, first_shares = [], {"skip": [], "input": []}, []
for seed in snippet.seeds(args.seed):
    rng = np.random.default_rng(seed)
    arrays = models.init_mlp([784, 128, 128, 10], "glorot", rng)
    X, y = rng.normal(size=(256, 784)), rng.normal(size=(256, 10))
    for key in ratios:
        params = [torch.tensor(a, requires_grad=True) for a in arrays]
        fwd, bwd, grads = flops(params, torch.tensor(X), torch.tensor(y), key == "input")
        ratios[key].append(bwd / fwd)
    first_shares.append(2 * 256 * 784 * 128 / fwd)  # X @ W1, the product whose dL/dX is skipped
    reference = engine.grad(lambda p, X=X, y=y: ops.mean((models.mlp(p, X) - y) ** 2), arrays)
    errors.append(check.normwise_rel_error([g.numpy() for g in grads], reference))
print(f"backward / forward matmul flops: {ratios}; gradient vs gradlab: {max(errors):.1e}")

# %%
reason = (
    "FlopCounterMode counts matrix products only; gradlab's flop model also charges the elementwise "
    "ops (0.22% of this network's forward flops; they move the ratio by less than 2e-3 relative); "
    "the products' counts are the same 2mkn"
)
for key, numpy_key in (("skip", "backward_skip"), ("input", "backward_input")):
    results.twin(f"backward_{key}", ratios[key][0], f"torch: backward / forward flops ({key})",
                 of=f"backprop_costs.{numpy_key}", rtol=3e-3, atol=0, reason=reason)  # fmt: skip
results.number(
    "grad_error", max(errors), "torch vs gradlab gradient, normwise relative, worst seed", atol=1e-12
)
results.claim(
    "torch_matches_gradlab",
    max(errors) < 1e-12 and all(len(set(v)) == 1 for v in ratios.values()),
    "On every seed PyTorch's loss.backward() and gradlab's reverse mode give the same gradient to 1e-12.",
    {"errors": errors},
)
results.claim(
    "requires_grad_saves_a_product",
    abs(ratios["input"][0] - 2) < 1e-12 and abs(ratios["skip"][0] - (2 - first_shares[0])) < 1e-12,
    "PyTorch's backward pass costs exactly two forward passes' matrix flops when X requires a gradient, "
    "and exactly the first layer's dL/dX product less when it does not.",
    {key: value[0] for key, value in ratios.items()} | {"first layer share": first_shares[0]},
)

# %% [markdown]
# ## What autograd saves for the backward pass
#
# `torch.autograd.graph.saved_tensors_hooks` sees every tensor an op saves for its backward rule.
# Count the distinct storages, leaving out the parameters and the data X (kept by the caller): the
# storage example of the chapter, 4 layers of 64 units and a batch of 32.


# %%
# --8<-- [start:saved]
def saved_values(activation, depth=4, width=64, batch=32):
    """Entries of the intermediates autograd saves for backward(), counted once per storage."""
    sizes = [3, *[width] * depth, 1]
    Ws = [torch.randn(a, b, dtype=torch.float64, requires_grad=True) for a, b in itertools.pairwise(sizes)]
    bs = [torch.zeros(b, dtype=torch.float64, requires_grad=True) for b in sizes[1:]]
    X, saved = torch.randn(batch, 3, dtype=torch.float64), {}
    kept_by_caller = {t.untyped_storage().data_ptr() for t in [X, *Ws, *bs]}

    def pack(tensor):
        saved[tensor.untyped_storage().data_ptr()] = tensor.numel()  # alive until backward(): no reuse
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        h = X
        for k, (W, b) in enumerate(zip(Ws, bs, strict=True)):
            h = h @ W + b if k == depth else activation(h @ W + b)
        loss = (h**2).mean()
    loss.backward()
    return sum(n for pointer, n in saved.items() if pointer not in kept_by_caller)


# --8<-- [end:saved]
torch.manual_seed(0)  # the count depends on the shapes only
saved = {name: saved_values(getattr(torch, name)) for name in ("tanh", "relu", "sigmoid")}
print("values autograd saves:", saved)
results.twin("saved_tanh", saved["tanh"], "torch: values autograd saves (tanh storage example)",
             of="backprop_costs.read_values", rtol=0, atol=0,
             reason="the same rules read the same values: tanh's output, which is the next product's "
             "input, and the output unit's value for the square")  # fmt: skip
results.number("saved_relu", saved["relu"], "torch: values autograd saves (relu)")
results.number("saved_sigmoid", saved["sigmoid"], "torch: values autograd saves (sigmoid)")
results.claim("saves_one_per_unit", len(set(saved.values())) == 1 and saved["tanh"] == 32 * (4 * 64 + 1),
              "PyTorch saves one value per hidden unit per example for tanh, relu and sigmoid alike (each "
              "saves its output), and the output unit's value.", saved)  # fmt: skip

# %%
results.save()
