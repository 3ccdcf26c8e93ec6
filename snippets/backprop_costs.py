"""What backprop costs: flops as the parameter count grows, and the memory it keeps.

Counts the floating-point operations of one gradient of an MLP's loss by reverse mode, forward
mode and central differences, relative to one evaluation of the loss, as the number of
parameters n grows; then counts the intermediate values that reverse mode stores for its
backward pass as the network gets deeper and the batch larger.
Quoted by docs/what-backprop-computes.md.
"""

# %% [markdown]
# Costs are counted, not timed: `gradlab.flops` charges $2mkn$ for an $(m, k) \times (k, n)$
# matrix product and one flop per output entry of an elementwise op, in every method alike, so
# the numbers are the same on every machine. (For wall-clock times see
# `benchmarks/gradient_cost.py`.)

# %%
import matplotlib.pyplot as plt
import numpy as np
from gradlab import engine, flops, forward, models, numerical, ops, snippet

parser = snippet.parser(__doc__)
parser.add_argument("--batch", type=snippet.positive_int, default=16, help="examples in the batch")
parser.add_argument(
    "--activation", choices=["tanh", "sigmoid", "relu"], default="tanh", help="hidden activation"
)
parser.add_argument("--max-width", type=snippet.positive_int, default=64, help="widest hidden layer tried")
args, results = snippet.parse(parser)
rng = np.random.default_rng(args.seed)

# %% [markdown]
# ## Cost against the number of parameters
#
# An MLP with 3 inputs, two hidden layers of width $w$ and one output has
# $n = w^2 + 6w + 1$ parameters. For each width, count one plain evaluation of the loss (numpy
# arrays through `gradlab.ops`), then each method's whole gradient computation.

# %%
n_inputs = 3
X = rng.normal(size=(args.batch, n_inputs))
y = rng.normal(size=(args.batch, 1))
widths = [w for w in (2, 4, 8, 16, 32, 64, 128) if w <= args.max_width]
methods = {"reverse": engine.grad, "forward": forward.grad, "central": numerical.central_difference}
n_params, relative_cost, calls = [], {m: [] for m in methods}, {m: [] for m in methods}
for width in widths:
    params = models.init_mlp([n_inputs, width, width, 1], "glorot", rng)

    def loss(params):
        return ops.mean((models.mlp(params, X, args.activation) - y) ** 2)

    with flops.counting() as one_evaluation:
        loss(params)
    n_params.append(sum(p.size for p in params))
    for name, gradient in methods.items():
        with flops.counting() as counter:
            gradient(loss, params)
        relative_cost[name].append(counter.total / one_evaluation.total)
        calls[name].append(counter.calls)
    print(
        f"n = {n_params[-1]:>5}: cost / one evaluation: reverse {relative_cost['reverse'][-1]:5.2f}, "
        f"forward {relative_cost['forward'][-1]:8.0f}, central {relative_cost['central'][-1]:8.0f}"
    )

# %%
results.number("n_smallest", n_params[0], "parameters of the smallest MLP")
results.number("n_largest", n_params[-1], "parameters of the largest MLP")
results.number("reverse_cost_min", min(relative_cost["reverse"]), "reverse: least flops / one evaluation")
results.number("reverse_cost_max", max(relative_cost["reverse"]), "reverse: most flops / one evaluation")
results.number(
    "forward_cost_largest", relative_cost["forward"][-1], "forward: flops / one evaluation, largest n"
)
results.number(
    "central_cost_largest",
    relative_cost["central"][-1],
    "central: flops / one evaluation, largest n",
)
forward_per_pass = np.array(relative_cost["forward"]) / np.array(n_params)
results.number("forward_cost_per_param", forward_per_pass[-1], "forward: flops / (n evaluations)")
results.number("reverse_calls", calls["reverse"][-1], "reverse mode: evaluations of the loss per gradient")
results.number("central_calls_largest", calls["central"][-1], "central: evaluations, largest n")
results.number("forward_calls_largest", calls["forward"][-1], "forward mode: passes per gradient, largest n")
results.number("batch", args.batch, "examples in the batch")

# %%
fig, ax = plt.subplots()
labels = {
    "reverse": "reverse mode (backprop)",
    "forward": "forward mode (one pass per parameter)",
    "central": "central differences (2 evaluations per parameter)",
}
for name, label in labels.items():
    ax.loglog(n_params, relative_cost[name], marker="o", label=label)
ax.set(
    title="One gradient's cost: reverse mode stays flat, the others grow with n",
    xlabel="number of parameters n (log scale)",
    ylabel="flops / flops of one evaluation (log scale)",
)
ax.legend()
results.figure(
    fig,
    "cost_vs_n",
    alt="On log-log axes, reverse mode's cost stays at about 3 evaluations of the loss for every n, "
    "while forward mode and central differences grow in proportion to n.",
)

# %% [markdown]
# ## What reverse mode stores
#
# The backward pass needs the forward pass's intermediates: the matmul's rule uses its inputs,
# tanh's rule its output. So every node of the graph keeps its array until `backward()` has run.
# Walk the graph from the loss and add up the sizes of the arrays the nodes hold (leaves, the
# parameters and the data, excluded).


# %%
def stored_values(loss_tensor):
    """Entries held by the non-leaf nodes of the graph below `loss_tensor` (the intermediates)."""
    seen, stack, total = set(), [loss_tensor], 0
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        total += node.data.size if node._parents else 0
        stack.extend(node._parents)
    return total


def mlp_storage(depth, width, batch):
    """Stored intermediates of one forward pass of a tanh MLP with `depth` hidden layers."""
    params = models.init_mlp([n_inputs] + [width] * depth + [1], "glorot", rng)
    X_batch = rng.normal(size=(batch, n_inputs))
    tensors = [engine.Tensor(p) for p in params]
    loss_tensor = ops.mean(models.mlp(tensors, X_batch, args.activation) ** 2)
    return stored_values(loss_tensor), sum(p.size for p in params)


storage = {}
for depth, width, batch in [(4, 64, 32), (8, 64, 32), (4, 64, 64), (4, 128, 32)]:
    storage[depth, width, batch] = mlp_storage(depth, width, batch)
    values, n = storage[depth, width, batch]
    shape = f"depth {depth}, width {width:>3}, batch {batch:>2}"
    print(f"{shape}: stores {values:>6} values ({8 * values:>7} bytes), n = {n}")

# %%
base_values, base_n = storage[4, 64, 32]
results.number("store_depth", 4, "hidden layers of the storage example")
results.number("store_width", 64, "hidden units per layer of the storage example")
results.number("store_batch", 32, "examples in the storage example's batch")
results.number("stored_values", base_values, "values reverse mode stores for the storage example")
results.number("stored_bytes", 8 * base_values, "bytes of those values in float64")
results.number("store_params", base_n, "parameters of the storage example")
results.number("store_per_unit", base_values / (4 * 64 * 32), "stored values / (depth x width x batch)")
results.number("store_ratio_depth", storage[8, 64, 32][0] / base_values, "stored: 8 layers / 4 layers")
results.number("store_ratio_batch", storage[4, 64, 64][0] / base_values, "stored: batch 64 / batch 32")
results.number("store_ratio_width", storage[4, 128, 32][0] / base_values, "stored: width 128 / width 64")

# %%
results.save()
