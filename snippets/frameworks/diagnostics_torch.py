"""Per-layer diagnostics in PyTorch: weight-gradient norms, hooks and update ratios of a deep tanh net.

The plain and residual networks of snippets/diagnostics.py (20 tanh layers of 16 units, gain 0.5,
the same arrays, built with gradlab from the same seeds) as torch.nn modules: per-layer
`.grad` norms after `loss.backward()`, activation gradients from `register_full_backward_hook`,
and the update/weight ratio of one torch.optim.SGD and one torch.optim.Adam step.
Quoted by docs/per-layer-diagnostics.md.
"""

# %%
import sys
from pathlib import Path

if "__file__" in globals():  # run as a script: gradlab lives one folder up
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
import torch
from gradlab import engine, models, ops, snippet
from torch import nn

parser = snippet.parser(__doc__)
args, results = snippet.parse(parser)
torch.set_num_threads(1)
for part, name in zip(
    torch.__version__.split("+")[0].split(".")[:3], ("major", "minor", "patch"), strict=True
):
    results.number(f"torch_{name}", int(part), f"PyTorch version, {name}")
DEPTH, WIDTH, GAIN, BATCH = 20, 16, 0.5, 32  # diagnostics.py's defaults
SGD_LR, ADAM_LR = 10**-0.5, 1e-3  # each optimizer's best learning rate on diagnostics.py's grid


def problem(seed):  # exactly diagnostics.py's problem(seed)
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(BATCH, 2))
    y = (np.sin(2 * X[:, 0]) * np.cos(X[:, 1]))[:, None]
    init = models.init_mlp([2] + [WIDTH] * DEPTH + [1], GAIN / np.sqrt(WIDTH), rng)
    init[0] = init[0] * np.sqrt(WIDTH / 2)  # the first layer's fan_in is 2
    return X, y, init


# %% [markdown]
# ## The network as torch.nn modules, with gradlab's weights ($W_l$ transposed: nn.Linear stores
# out × in); a backward hook on each Tanh records $\partial L/\partial h_l$


# %%
class Net(nn.Module):
    def __init__(self, init, residual=False):
        super().__init__()
        self.linears = nn.ModuleList()
        for W, b in zip(init[0::2], init[1::2], strict=True):
            linear = nn.Linear(*W.shape, dtype=torch.float64)
            with torch.no_grad():
                linear.weight.copy_(torch.from_numpy(W.T)), linear.bias.copy_(torch.from_numpy(b))
            self.linears.append(linear)
        self.tanhs, self.residual = nn.ModuleList(nn.Tanh() for _ in range(DEPTH)), residual

    def forward(self, x):
        for layer, (linear, tanh) in enumerate(zip(self.linears[:-1], self.tanhs, strict=True)):
            t = tanh(linear(x))
            x = x + t if self.residual and layer > 0 else t
        return self.linears[-1](x)


# --8<-- [start:core]
def layer_stats(net, X, y, lr):
    """Per hidden layer: ||dL/dW||, ||dL/dh|| (hook), std of h (hook), lr ||dL/dW|| / ||W||."""
    dh, h = {}, {}
    hooks = [m.register_forward_hook(lambda m, i, out: h.__setitem__(m, out.detach())) for m in net.tanhs]
    hooks += [
        m.register_full_backward_hook(lambda m, g_in, g_out: dh.__setitem__(m, g_out[0])) for m in net.tanhs
    ]
    net.zero_grad()
    nn.functional.mse_loss(net(X), y).backward()
    for hook in hooks:
        hook.remove()
    hidden = net.linears[:-1]
    return {
        "grad": [lin.weight.grad.norm().item() for lin in hidden],
        "dh": [dh[m].norm().item() for m in net.tanhs],
        "std": [h[m].std(unbiased=False).item() for m in net.tanhs],
        "update_ratio": [lr * lin.weight.grad.norm().item() / lin.weight.norm().item() for lin in hidden],
    }


def actual_update_ratio(net, X, y, optimizer):
    """||Delta W_1|| / ||W_1|| of one real optimizer step."""
    before = net.linears[0].weight.detach().clone()
    optimizer.zero_grad()
    nn.functional.mse_loss(net(X), y).backward()
    optimizer.step()
    return ((net.linears[0].weight.detach() - before).norm() / before.norm()).item()


# --8<-- [end:core]


def gradlab_grad_norms(init, X, y):
    """The same plain network in gradlab's engine: ||dL/dW_l|| per hidden layer, by its reverse mode."""

    def loss(params):
        h = X
        for W, b in zip(params[0:-2:2], params[1:-2:2], strict=True):
            h = ops.tanh(ops.linear(h, W, b))
        return ops.mean((ops.linear(h, params[-2], params[-1]) - y) ** 2)

    return np.array([np.linalg.norm(g) for g in engine.grad(loss, init)[0:-2:2]])


# %% [markdown]
# ## On every seed, against gradlab's per-layer report

# %%
stats, residual_first, sgd_ratio, adam_ratio, formula_gap, grad_gap = [], [], [], [], [], []
for seed in snippet.seeds(args.seed):
    X, y, init = problem(seed)
    reference = gradlab_grad_norms(init, X, y)
    X, y = torch.from_numpy(X), torch.from_numpy(y)
    net = Net(init)
    stats.append(layer_stats(net, X, y, SGD_LR))
    grad_gap.append(np.abs(np.array(stats[-1]["grad"]) / reference - 1).max())
    residual_first.append(layer_stats(Net(init, residual=True), X, y, SGD_LR)["grad"][0])
    # the hook's dL/dh_l gives layer l's weight gradient by the chapter's formula h_{l-1}^T delta_l
    h_prev = torch.tanh(net.linears[0](X)).detach()
    dh_2 = {}
    handle = net.tanhs[1].register_full_backward_hook(
        lambda m, g_in, g_out, store=dh_2: store.__setitem__(0, g_out[0])
    )
    net.zero_grad()
    nn.functional.mse_loss(net(X), y).backward()
    handle.remove()
    h_2 = torch.tanh(net.linears[1](h_prev)).detach()
    by_formula = h_prev.T @ (dh_2[0] * (1 - h_2**2))
    formula_gap.append(((by_formula.T - net.linears[1].weight.grad).norm() / by_formula.norm()).item())
    sgd_ratio.append(actual_update_ratio(net, X, y, torch.optim.SGD(net.parameters(), lr=SGD_LR)))
    net = Net(init)
    adam_ratio.append(actual_update_ratio(net, X, y, torch.optim.Adam(net.parameters(), lr=ADAM_LR)))
grad = np.array([s["grad"] for s in stats])
print("seed  layer-1 grad   layer-20 grad  last std    SGD ratio   Adam ratio")
for seed, s, r, a in zip(snippet.seeds(args.seed), stats, sgd_ratio, adam_ratio, strict=True):
    print(
        f"{seed:4d}  {s['grad'][0]:.3e}      {s['grad'][-1]:.3e}      {s['std'][-1]:.2e}  {r:.2e}    {a:.2e}"
    )
same = "float64, the same formulas; torch's tanh and matmul kernels round differently through 20 layers"
results.number(
    "grad_gap", max(grad_gap), "largest relative gap of a layer's ||dL/dW|| to gradlab's", atol=1e-12
)
results.claim(
    "autograd_matches_gradlab", max(grad_gap) < 1e-12,
    "In every layer and on every seed, PyTorch's .grad norms agree with gradlab's reverse mode to 1e-12.",
    {"gap": grad_gap},
)  # fmt: skip
for key, values, about in (
    ("plain_first_grad", grad[:, 0], "layer 1 ||dL/dW|| from .grad"),
    ("plain_last_grad", grad[:, -1], "layer 20 ||dL/dW|| from .grad"),
    ("plain_last_std", [s["std"][-1] for s in stats], "std of the last tanh outputs (forward hook)"),
    ("plain_first_ratio", [s["update_ratio"][0] for s in stats], "layer 1 lr ||dL/dW|| / ||W||"),
    ("residual_first_grad", residual_first, "residual network: layer 1 ||dL/dW||"),
    ("adam_first_ratio", adam_ratio, "torch.optim.Adam: layer 1 ||Delta W|| / ||W||, first step"),
):
    results.twin_spread(key, values, about, of=f"diagnostics.{key}", rtol=1e-12, atol=0, reason=same)
results.spread("sgd_step_ratio", sgd_ratio, "torch.optim.SGD: layer 1 ||Delta W|| / ||W||, first step")
results.number(
    "formula_gap", max(formula_gap), "h^T (dL/dh * (1 - h^2)) vs .grad, layer 2, worst seed", atol=1e-12
)
dh = np.array([s["dh"] for s in stats])
results.spread("dh_first", dh[:, 0], "||dL/dh_1|| from the backward hook")
results.spread("dh_last", dh[:, -1], "||dL/dh_20|| from the backward hook")
results.claim(
    "hook_formula", max(formula_gap) < 1e-12,
    "On every seed, h_1^T (dL/dh_2 * (1 - h_2^2)) from the hooks equals layer 2's .grad to 1e-12.",
    {"gap": formula_gap},
)  # fmt: skip
results.claim(
    "sgd_step_is_lr_grad", bool(np.allclose(sgd_ratio, [s["update_ratio"][0] for s in stats], rtol=1e-9)),
    "A real torch.optim.SGD step changes layer 1 by exactly lr ||dL/dW|| / ||W|| (to 1e-9).",
    {"step": sgd_ratio},
)  # fmt: skip
results.claim(
    "adam_moves_weights", min(adam_ratio) > 1e3 * max(sgd_ratio),
    "On every seed torch.optim.Adam's first step changes layer 1 over 1,000 times more than SGD's.",
    {"adam": adam_ratio, "sgd": sgd_ratio},
)  # fmt: skip

# %%
results.save()
