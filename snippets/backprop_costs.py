"""What backprop costs: flops as the parameter count grows, and the memory it keeps.

Counts the floating-point operations of one gradient of an MLP's loss by reverse mode, forward
mode and central differences, relative to one evaluation of the loss, as the number of
parameters n grows; then the values reverse mode stores as the network gets deeper, wider and
the batch larger, and what checkpointing saves. Quoted by docs/what-backprop-computes.md.
"""

# %% [markdown]
# Costs are counted, not timed: `gradlab.flops` charges $2mkn$ for an $(m, k) \times (k, n)$
# matrix product and one flop per output entry of an elementwise op, in every method alike, so
# the numbers are the same on every machine (they depend on shapes only, not on random draws).
# Each backward rule is charged its op's forward cost once per input it sends a gradient to, so
# reverse mode's ratio of about 3 follows from the cost model; what the count measures is how many
# rules run. Wall-clock time, not deterministic, is left to `benchmarks/gradient_cost.py`.

# %%
import matplotlib.pyplot as plt
import numpy as np
from gradlab import engine, flops, forward, models, numerical, ops, snippet

parser = snippet.parser(__doc__)
parser.add_argument("--batch", type=snippet.positive_int, default=16, help="examples in the batch")
parser.add_argument("--activation", choices=["tanh", "sigmoid", "relu"], default="tanh", help="activation")
parser.add_argument("--max-width", type=snippet.positive_int, default=64, help="widest hidden layer tried")
parser.add_argument("--store-depth", type=snippet.positive_int, default=4, help="storage: hidden layers")
parser.add_argument("--store-width", type=snippet.positive_int, default=64, help="storage example: width")
parser.add_argument("--store-batch", type=snippet.positive_int, default=32, help="storage example: batch")
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
for name in ("reverse", "forward", "central"):
    results.number(f"{name}_cost_largest", relative_cost[name][-1], f"{name}: flops / one evaluation, n max")
reverse_costs, forward_per_pass, central_per_param = (
    np.array(relative_cost[name]) / (1 if name == "reverse" else np.array(n_params)) for name in methods
)
results.number("forward_cost_per_param", forward_per_pass[-1], "forward: flops / (n evaluations)")
flat = reverse_costs.max() < 3.5 and reverse_costs.max() / reverse_costs.min() < 1.1
results.claim("reverse_flat", flat, "Reverse mode costs under 3.5 evaluations of the loss at every n tried, "
              "within 10% from the smallest n to the largest: flat in n.", {"r": reverse_costs})  # fmt: skip
linear = bool(np.all(np.abs(central_per_param - 2) < 0.01) and np.all(np.abs(forward_per_pass - 3) < 0.1))
results.claim("others_linear", linear, "Central differences cost 2n evaluations and forward mode about 3n: "
              "linear in n.", {"f": forward_per_pass})  # fmt: skip
results.number("reverse_calls", calls["reverse"][-1], "reverse mode: evaluations of the loss per gradient")
results.number("central_calls_largest", calls["central"][-1], "central: evaluations, largest n")
results.number("forward_calls_largest", calls["forward"][-1], "forward mode: passes per gradient, largest n")
results.number("batch", args.batch, "examples in the batch")

# %%
fig, ax = plt.subplots()
labels = [
    "reverse mode (backprop)",
    "forward mode (one pass per parameter)",
    "central differences (2n evaluations)",
]
for name, label in zip(methods, labels, strict=True):
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
    alt=f"On log-log axes, reverse mode's cost stays between {min(relative_cost['reverse']):.2f} and "
    f"{max(relative_cost['reverse']):.2f} evaluations of the loss for every n, while forward mode and "
    "central differences grow in proportion to n.",
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


depth, width, batch = args.store_depth, args.store_width, args.store_batch
shapes = {"base": (depth, width, batch), "depth": (2 * depth, width, batch)}
shapes |= {"batch": (depth, width, 2 * batch), "width": (depth, 2 * width, batch)}
storage = {key: mlp_storage(*shape) for key, shape in shapes.items()}
for key, (values, n) in storage.items():
    shape = "depth {}, width {:>3}, batch {:>3}".format(*shapes[key])
    print(f"{shape}: stores {values:>7} values ({8 * values:>8} bytes), n = {n}")

# %%
base_values, base_n = storage["base"]
results.number("store_depth", depth, "hidden layers of the storage example")
results.number("store_width", width, "hidden units per layer of the storage example")
results.number("store_batch", batch, "examples in the storage example's batch")
results.number("stored_values", base_values, "values reverse mode stores for the storage example")
results.number("stored_bytes", 8 * base_values, "bytes of those values in float64")
results.number("store_params", base_n, "parameters of the storage example")
results.number("store_per_unit", base_values / (depth * width * batch), "stored / (depth width batch)")
ratios = {key: storage[key][0] / base_values for key in ("depth", "batch", "width")}
for key, ratio in ratios.items():
    results.number(f"store_ratio_{key}", ratio, f"stored: {key} doubled / base")
doubles = all(abs(ratio - 2) < 0.05 for ratio in ratios.values())
results.claim("store_proportional", doubles, "Doubling depth, batch or width doubles storage.", ratios)

# %% [markdown]
# ## A remedy for memory: checkpointing
#
# Keep only every segment's input during a graph-free forward pass; in the backward pass,
# rebuild one segment's graph at a time from its checkpoint and backpropagate through it, seeded
# with the gradient that the segment above sent down. With $\sqrt{L}$ segments of $\sqrt{L}$
# layers, at most the checkpoints and one segment's graph are held at once, for the price of
# one more forward pass.


# %%
def layer(h, W, b, last):
    z = ops.linear(h, W, b)
    return z if last else getattr(ops, args.activation)(z)


def checkpointed_grad(params, X_batch, segment):
    """The same gradient, and the most values held at once: checkpoints plus one segment's graph."""
    n_layers = len(params) // 2
    starts = list(range(0, n_layers, segment))
    checkpoints, h = [], X_batch
    for start in starts:  # forward pass on plain arrays: no graph
        checkpoints.append(h)
        for k in range(start, min(start + segment, n_layers)):
            h = layer(h, params[2 * k], params[2 * k + 1], k == n_layers - 1)
    held = sum(c.size for c in checkpoints[1:])  # the input X is data, not a stored intermediate
    grads, upstream, peak = [None] * len(params), None, 0
    for start in reversed(starts):
        stop = min(start + segment, n_layers)
        h_in = engine.Tensor(checkpoints[starts.index(start)])
        tensors = [engine.Tensor(p) for p in params[2 * start : 2 * stop]]
        h = h_in
        for k in range(start, stop):
            h = layer(h, tensors[2 * (k - start)], tensors[2 * (k - start) + 1], k == n_layers - 1)
        out = ops.mean(h**2) if upstream is None else ops.sum(h * upstream)  # seeds dL/dh
        peak = max(peak, held + stored_values(out))
        out.backward()
        upstream, grads[2 * start : 2 * stop] = h_in.grad, [t.grad for t in tensors]
    return grads, peak


deep = 16  # deep enough that sqrt(L) segments pay off
params = models.init_mlp([n_inputs] + [width] * deep + [1], "glorot", rng)
X_batch = rng.normal(size=(batch, n_inputs))


def deep_loss(params):
    return ops.mean(models.mlp(params, X_batch, args.activation) ** 2)


with flops.counting() as one_evaluation:
    deep_loss(params)
with flops.counting() as plain_flops:
    plain = engine.grad(deep_loss, params)
with flops.counting() as checkpointed_flops:
    checkpointed, peak = checkpointed_grad(params, X_batch, int(np.sqrt(deep)))
plain_values = stored_values(deep_loss([engine.Tensor(p) for p in params]))
difference = max(float(np.abs(a - b).max()) for a, b in zip(plain, checkpointed, strict=True))
print(f"depth {deep}: plain stores {plain_values}, checkpointed at most {peak}; max |diff| {difference:.1e}")
results.number("ckpt_depth", deep, "hidden layers of the checkpointing example")
results.number("ckpt_segment", int(np.sqrt(deep)), "layers per checkpointed segment")
results.number("ckpt_plain_values", plain_values, "plain reverse mode: values stored")
results.number("ckpt_values", peak, "checkpointed: most values held at once")
results.number("ckpt_plain_cost", plain_flops.total / one_evaluation.total, "plain: flops / one evaluation")
results.number("ckpt_cost", checkpointed_flops.total / one_evaluation.total, "checkpointed: flops / one eval")
results.number("ckpt_difference", difference, "largest |plain - checkpointed| entry", rtol=0, atol=1e-12)
extra = (checkpointed_flops.total - plain_flops.total) / one_evaluation.total
results.claim(
    "ckpt_tradeoff",
    peak < plain_values / 2 and abs(extra - 1) < 0.05 and difference == 0.0,
    "Checkpointing holds less than half the values for one extra evaluation, with identical gradients.",
    {"held": peak, "plain": plain_values, "extra evaluations": extra, "difference": difference},
)

# %%
results.save()
