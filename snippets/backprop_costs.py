"""What backprop costs: flops as the parameter count grows, and the memory it keeps.

Counts the floating-point operations of one gradient of an MLP's loss by reverse mode, forward
mode and central differences, relative to one evaluation of the loss, as the number of
parameters n grows; then the values reverse mode stores as the network gets deeper, wider and
the batch larger, and what checkpointing saves. Quoted by docs/what-backprop-computes.md.
"""

# %% [markdown]
# Costs are counted, not timed: `gradlab.flops` charges $2mkn$ for an $(m, k) \times (k, n)$ matrix
# product and one flop per output entry of an elementwise op (forward mode also for the data's zero
# tangent), so the numbers are the same on every machine (they depend on shapes only).
# Each backward rule is charged its op's forward cost once per input it sends a gradient to, and
# like PyTorch's and JAX's the engine sends none to the data X (it does not require a gradient),
# so what the count measures is how many rules run and which products they skip. Wall-clock time,
# not deterministic, is left to `benchmarks/gradient_cost.py`.

# %%
import matplotlib.pyplot as plt
import numpy as np
from gradlab import engine, flops, forward, graph_memory, models, numerical, ops, snippet

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
X, y = rng.normal(size=(args.batch, n_inputs)), rng.normal(size=(args.batch, 1))
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
# The model's ceiling is 3: one evaluation plus a backward rule charged at most twice its op (two inputs).
flat = 2.5 < reverse_costs.min() and reverse_costs.max() <= 3
results.claim("reverse_flat", flat, "Reverse mode costs between 2.5 and 3 evaluations of the loss (the flop "
              "model's ceiling) at every n tried: bounded in n.", {"r": reverse_costs})  # fmt: skip
linear = bool(np.all(np.abs(central_per_param - 2) < 0.01) and np.all(np.abs(forward_per_pass - 3) < 0.1))
results.claim("others_linear", linear, "Central differences cost 2n evaluations and forward mode about 3n: "
              "linear in n.", {"f": forward_per_pass})  # fmt: skip
rises = "Across the widths tried, reverse mode's relative cost rises with n, below the ceiling of 3."
results.claim("reverse_rises", bool(np.all(np.diff(reverse_costs) > 0) and max(reverse_costs) <= 3), rises)
results.number("reverse_calls", calls["reverse"][-1], "reverse mode: evaluations of the loss per gradient")
results.number("central_calls_largest", calls["central"][-1], "central: evaluations, largest n")
results.number("batch", args.batch, "examples in the batch")

# %%
fig, ax = plt.subplots()
labels = ["reverse mode (backprop)", "forward mode (one pass per parameter)",
          "central differences (2n evaluations)"]  # fmt: skip
for name, label in zip(methods, labels, strict=True):
    ax.loglog(n_params, relative_cost[name], marker="o", label=label)
ax.set(title="One gradient's cost: reverse mode stays below 3 evaluations, the others grow with n",
       xlabel="number of parameters n (log scale)",
       ylabel="flops / flops of one evaluation (log scale)")  # fmt: skip
ax.legend()
alt = (f"On log-log axes, reverse mode's cost stays between {min(relative_cost['reverse']):.2f} and "
       f"{max(relative_cost['reverse']):.2f} evaluations of the loss for every n, while forward mode and "
       "central differences grow in proportion to n.")  # fmt: skip
results.figure(fig, "cost_vs_n", alt=alt)

# %% [markdown]
# ## Backward against forward, with and without the input's gradient
#
# The ratio above is forward plus backward. The backward pass alone costs two matrix products per
# forward product whose input needs a gradient (dL/dW and dL/dh) and one where it does not: the
# first layer's input X is data, and like PyTorch's autograd (`requires_grad=False`) and `jax.grad`
# (which differentiates only its argument) the engine skips dL/dX. Count both on an MNIST-shaped
# MLP, 784-128-128-10 with a batch of 256, where the first layer holds most of the products.

# %%
mnist_batch, mnist_params = 256, models.init_mlp([784, 128, 128, 10], "glorot", rng)
X_mnist, y_mnist = rng.normal(size=(mnist_batch, 784)), rng.normal(size=(mnist_batch, 10))
mnist_loss = lambda params, X_input: ops.mean((models.mlp(params, X_input) - y_mnist) ** 2)  # noqa: E731
with flops.counting() as mnist_forward:
    mnist_loss(mnist_params, X_mnist)
with flops.counting() as without_input:
    engine.grad(lambda p: mnist_loss(p, X_mnist), mnist_params)
with flops.counting() as with_input:
    engine.grad(lambda p: mnist_loss(p[1:], p[0]), [X_mnist, *mnist_params])
backward_ratio = {"skip": without_input.total / mnist_forward.total - 1,
                  "input": with_input.total / mnist_forward.total - 1}  # fmt: skip
first_share = 2 * mnist_batch * 784 * 128 / mnist_forward.total
results.number("mnist_batch", mnist_batch, "examples in the MNIST-shaped batch")
results.number("first_layer_share", first_share, "784-128-128-10: first matmul's share of the forward flops")
for key, ratio in backward_ratio.items():  # skip: X is data, no dL/dX; input: X requires a gradient
    results.number(f"backward_{key}", ratio, f"784-128-128-10: backward / forward flops ({key})")
    results.number(f"gradient_{key}", 1 + ratio, f"784-128-128-10: one gradient / one evaluation ({key})")
two = abs(backward_ratio["input"] - 2) < 0.005 and abs(backward_ratio["skip"] - (2 - first_share)) < 0.005
results.claim("backward_two_products", two, "The backward pass costs two forward passes when the input needs "
              "a gradient, and one first-layer product less when it does not: 2 minus the first layer's "
              "share of the flops.", backward_ratio | {"first layer share": first_share})  # fmt: skip

# %% [markdown]
# ## What reverse mode stores
#
# The rules need some of the forward pass's intermediates (the matmul its inputs, tanh its output):
# `values_rules_read` counts those, what gradlab's rules read. gradlab's graph keeps more: every
# node keeps its array until `backward()` has run (`stored_values`).


# %%
def mlp_storage(depth, width, batch):
    """(Values gradlab's graph stores, values the rules read, parameters) of an MLP of `depth` layers."""
    sizes = [3, *[width] * depth, 1]
    tensors = [engine.Tensor(p, requires_grad=True) for p in models.init_mlp(sizes, "glorot", rng)]
    loss_tensor = ops.mean(models.mlp(tensors, rng.normal(size=(batch, 3)), args.activation) ** 2)
    stored, read = graph_memory.stored_values(loss_tensor), graph_memory.values_rules_read(loss_tensor)
    return stored, read, sum(t.size for t in tensors)


depth, width, batch = args.store_depth, args.store_width, args.store_batch
shapes = {"base": (depth, width, batch), "depth": (2 * depth, width, batch)}
shapes |= {"batch": (depth, width, 2 * batch), "width": (depth, 2 * width, batch)}
storage = {key: mlp_storage(*shape) for key, shape in shapes.items()}

# %%
base_values, base_read, base_n = storage["base"]
for key in ("store_depth", "store_width", "store_batch"):  # hidden layers, units per layer, examples
    results.number(key, getattr(args, key), f"storage example: {key.removeprefix('store_')}")
results.number("stored_values", base_values, "values reverse mode stores for the storage example")
results.number("stored_bytes", 8 * base_values, "bytes of those values in float64")
results.number("store_per_unit", base_values / (depth * width * batch), "stored / (depth width batch)")
results.number("read_values", base_read, "values gradlab's backward rules read")
results.number("read_per_unit", base_read / (depth * width * batch), "read / (depth width batch)")
ratios = {key: storage[key][0] / base_values for key in ("depth", "batch", "width")}
for key, ratio in ratios.items():
    results.number(f"store_ratio_{key}", ratio, f"stored: {key} doubled / base")
doubles = all(abs(ratio - 2) < 0.05 for ratio in ratios.values())
results.claim("store_proportional", doubles, "Doubling depth, batch or width doubles storage.", ratios)
per_unit = base_values == 3 * batch * (depth * width + 1) + 2  # each unit: product, + bias, activation
per_unit_says = "The graph holds 3 values per unit per example, output unit included, and 2 for the loss."
results.claim("store_three_per_unit", per_unit, per_unit_says, {"stored": base_values})
reads = 1 if args.activation == "tanh" else 2  # tanh's rule reads its output; relu's, sigmoid's the input too
results.claim("read_per_hidden_unit", base_read == batch * (reads * depth * width + 1),
              f"The rules read {reads} value{'s' * (reads > 1)} per hidden unit per example "
              f"({args.activation}), and the output unit's.", {"read": base_read})  # fmt: skip

# %% [markdown]
# ### What the freed graph gives back
#
# `backward()` drops each node's closure and parent links once its rule has run (PyTorch frees
# each node's saved tensors, unless `retain_graph=True`), so each node's value and gradient go
# during the sweep. Measure the bytes (`tracemalloc`): at the peak of `backward()`, and after it
# while the caller holds the loss.


# %%
mem_sizes, X_mem = [3, *[width] * depth, 1], rng.normal(size=(batch, n_inputs))
mem_params = [engine.Tensor(p, requires_grad=True) for p in models.init_mlp(mem_sizes, "glorot", rng)]


def make_loss():
    for t in mem_params:
        t.grad = None  # each run allocates the parameters' gradients afresh
    return ops.mean(models.mlp(mem_params, X_mem, args.activation) ** 2)


memory = {key: graph_memory.backward_memory(make_loss, key == "retained") for key in ("retained", "freed")}
param_bytes = 8 * base_n  # the parameters' gradients, kept in both cases
for key, field in [(key, field) for key, m in memory.items() for field in m]:
    results.number(f"mem_{key}_{field}", float(memory[key][field]), f"{key} graph: bytes, {field}", rtol=0.1)
results.number("mem_param_bytes", param_bytes, "bytes of the parameters' gradients")
freed, retained = memory["freed"], memory["retained"]
returns = freed["after"] < 1.05 * param_bytes and freed["peak"] < 0.8 * retained["peak"]
results.claim("freed_graph_returns_memory", returns, "With the graph freed, backward() ends holding the "
              "parameters' gradients and under 5% more, and its peak is lower than with retain_graph=True.",
              {"freed": freed, "retained": retained})  # fmt: skip
held, explained = retained["after"], retained["graph"] + 8 * base_values + param_bytes  # + all grads
results.claim("retained_is_values_and_grads", abs(held - explained) < 0.05 * held,
              "With retain_graph=True, backward() ends holding the graph, a gradient for every interior "
              "node and the parameters' gradients, to 5%.", {"held": held, "sum": explained})  # fmt: skip

# %% [markdown]
# ## A remedy for memory: checkpointing
#
# Keep only every segment's input in a graph-free forward pass; rebuild one segment's graph at a
# time in the backward pass (`gradlab.graph_memory.checkpointed_grad`). With $\sqrt{L}$ segments
# of $\sqrt{L}$ layers, at most the checkpoints and one segment's graph are held at once.


# %%
deep, segment = 16, 4  # deep enough that sqrt(L) segments of sqrt(L) layers pay off
params = models.init_mlp([n_inputs] + [width] * deep + [1], "glorot", rng)
X_batch = rng.normal(size=(batch, n_inputs))
deep_loss = lambda params: ops.mean(models.mlp(params, X_batch, args.activation) ** 2)  # noqa: E731
with flops.counting() as one_evaluation:
    deep_loss(params)
with flops.counting() as plain_flops:
    plain = engine.grad(deep_loss, params)
with flops.counting() as checkpointed_flops:
    checkpointed, peak, peak_read = graph_memory.checkpointed_grad(params, X_batch, segment, args.activation)
graph = deep_loss([engine.Tensor(p, requires_grad=True) for p in params])
plain_values, plain_read = graph_memory.stored_values(graph), graph_memory.values_rules_read(graph)
difference = max(float(np.abs(a - b).max()) for a, b in zip(plain, checkpointed, strict=True))
results.number("ckpt_depth", deep, "hidden layers of the checkpointing example")
results.number("ckpt_segment", segment, "layers per checkpointed segment")
results.number("ckpt_plain_values", plain_values, "plain reverse mode: values stored")
results.number("ckpt_values", peak, "checkpointed: most values held at once")
results.number("ckpt_plain_read", plain_read, "plain reverse mode: values the rules read")
results.number("ckpt_read", peak_read, "checkpointed: most values held at once that the rules read")
results.number("ckpt_plain_cost", plain_flops.total / one_evaluation.total, "plain: flops / one evaluation")
results.number("ckpt_cost", checkpointed_flops.total / one_evaluation.total, "checkpointed: flops / one eval")
results.number("ckpt_difference", difference, "largest |plain - checkpointed| entry", rtol=0, atol=1e-12)
extra, share = (checkpointed_flops.total - plain_flops.total) / one_evaluation.total, peak_read / plain_read
read_ok, says = (abs(share - 0.5) < 0.01, "half (to 1%)") if reads == 1 else (share < 0.5, "under half")
ok = peak < plain_values / 2 and read_ok and abs(extra - 1) < 0.05 and difference == 0.0
results.claim("ckpt_tradeoff", ok, f"Checkpointing holds under half of the graph's values and {says} of "
              "those the rules read, for one extra evaluation, identical gradients.",
              {"held": (peak, peak_read), "plain": (plain_values, plain_read), "extra": extra})  # fmt: skip
results.save()
