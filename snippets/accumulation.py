"""Accumulation and memory layout: forks, repeated indices, copies, stale gradients, lost updates

Five ways a correct gradient is lost or corrupted on its way into the parameters: a backward pass
that overwrites at a fork, `grad[idx] += g` with repeated indices, an update written into a copy,
gradients that are never reset, and an in-place optimizer step on non-contiguous memory that
updates a temporary instead of the parameter. Quoted by docs/accumulation-and-memory.md.
"""

# %% [markdown]
# Each section computes one gradient correctly (checked against central differences), then
# shows what a plausible piece of code does with it.

# %%
import matplotlib.pyplot as plt
import numpy as np
from gradlab import check, engine, numerical, ops, snippet
from gradlab.check import max_rel_error
from gradlab.leaks import frozen_parameters, update_norms

parser = snippet.parser(__doc__)
parser.add_argument("--batch", type=snippet.positive_int, default=32, help="embedding lookups per batch")
parser.add_argument("--vocab", type=snippet.positive_int, default=10, help="rows of the embedding table")
parser.add_argument("--steps", type=snippet.positive_int, default=60, help="training steps")
parser.add_argument("--lr", type=snippet.positive_float, default=0.05, help="learning rate")
args, results = snippet.parse(parser)
rng = np.random.default_rng(args.seed)

# %% [markdown]
# ## A fork: one weight, two paths
# $f(W) = \sum \tanh(W x) + \tfrac12 \lVert W y \rVert^2$ uses $W$ twice, so
# $\partial f / \partial W$ is the sum of the two paths' gradients. A hand-written backward pass
# either adds them (`+=`) or, by mistake, lets the second overwrite the first (`=`).

# %%
W = rng.normal(size=(3, 4))
x, y = rng.normal(size=4), rng.normal(size=4)


def fork(params):
    (W,) = params
    return ops.sum(ops.tanh(ops.matmul(W, x))) + 0.5 * ops.sum(ops.matmul(W, y) ** 2)


path_tanh = np.outer(1 - np.tanh(W @ x) ** 2, x)  # d/dW of sum tanh(W x)
path_square = np.outer(W @ y, y)  # d/dW of |W y|^2 / 2
accumulated = np.zeros_like(W)
accumulated += path_tanh
accumulated += path_square
overwritten = path_tanh
overwritten = path_square  # the bug: the second path replaces the first
reference = numerical.central_difference(fork, [W])
errors = {"engine": engine.grad(fork, [W]), "add": [accumulated], "overwrite": [overwritten]}
for name, grad in errors.items():
    results.number(
        f"fork_{name}_error", max_rel_error(grad, reference), f"fork: {name} vs central", atol=1e-7
    )
disagreement = max(check.compare(fork, [W]).values())
results.number("fork_max_disagreement", disagreement, "fork: largest rel. disagreement", atol=1e-7)

# %% [markdown]
# ## Repeated indices: an embedding lookup
# $L(E) = \sum_b \langle E_{i_b}, G_b \rangle$ looks up row $i_b$ once per batch entry, so row $r$
# receives $\sum_{b: i_b = r} G_b$. `grad[idx] += G` is buffered: for a repeated index only one
# write survives. `np.add.at(grad, idx, G)` is unbuffered and adds every contribution.

# %%
E = rng.normal(size=(args.vocab, 4))
idx = rng.integers(0, args.vocab, size=args.batch)
G = rng.normal(size=(args.batch, 4))


def lookup(params):
    return ops.sum(params[0][idx] * G)


buffered = np.zeros_like(E)
buffered[idx] += G
unbuffered = np.zeros_like(E)
np.add.at(unbuffered, idx, G)
reference = numerical.central_difference(lookup, [E])
results.number("batch", args.batch, "embedding lookups per batch")
results.number("vocab", args.vocab, "rows of the embedding table")
results.number("unique_rows", len(np.unique(idx)), "distinct rows looked up")
results.number("lost_contributions", args.batch - len(np.unique(idx)), "dropped by grad[idx] += G")
for name, grad in {"buffered": buffered, "add_at": unbuffered}.items():
    results.number(f"gather_{name}_error", max_rel_error([grad], reference), f"{name} vs central", atol=1e-7)
disagreement = max(check.compare(lookup, [E]).values())
results.number("gather_max_disagreement", disagreement, "lookup: largest rel. disagreement", atol=1e-7)

# %% [markdown]
# ## Views and copies
# A basic slice is a view of the parameter; a boolean or integer-array index is a copy. An
# in-place update of a copy changes the copy, silently. `np.shares_memory` tells them apart.

# %%
SELECTIONS = {"slice": lambda w: w[::2], "boolean": lambda w: w[w > 0], "integer": lambda w: w[[0, 2, 4]]}
for name, select in SELECTIONS.items():
    w = rng.normal(size=8)
    before, part = w.copy(), select(w)
    part -= 0.1  # an "update" through the selected part
    changed, shared = float(np.linalg.norm(w - before)), bool(np.shares_memory(w, part))
    print(f"{name:>8} index: shares memory {shared!s:>5}, parameter moved by {changed:.3g}")
    results.number(f"{name}_shares_memory", shared, f"{name} index shares memory")
    results.number(f"{name}_update_norm", changed, f"{name} index: how far the parameter moved")

# %% [markdown]
# ## Gradients that are never reset
# The engine's `.grad` accumulates across `backward()` calls, by design (it is how a fork gets
# the sum). A training loop must reset it before each step; otherwise step $k$ uses the sum of
# all $k$ gradients so far.

# %%
X_fit = rng.normal(size=(50, 3))
y_fit = X_fit @ np.array([1.0, -2.0, 0.5]) + 0.1 * rng.normal(size=50)
w_leaf, stale_calls = engine.Tensor(np.zeros(3)), 10
for _ in range(stale_calls):
    ops.mean((X_fit @ w_leaf - y_fit) ** 2).backward()
single = engine.grad(lambda p: ops.mean((X_fit @ p[0] - y_fit) ** 2), [np.zeros(3)])[0]
results.number("stale_calls", stale_calls, "backward() calls without a reset")
ratio = np.linalg.norm(w_leaf.grad) / np.linalg.norm(single)
results.number("stale_grad_ratio", ratio, "|accumulated grad| / |one grad|")

losses = {}
for reset in (True, False):
    w_leaf, history = engine.Tensor(np.zeros(3)), []
    for _ in range(args.steps):
        loss = ops.mean((X_fit @ w_leaf - y_fit) ** 2)
        history.append(loss.data.item())
        loss.backward()
        w_leaf.data -= args.lr * w_leaf.grad
        if reset:
            w_leaf.grad = np.zeros_like(w_leaf.data)  # what optimizer.zero_grad() does
    losses["reset every step" if reset else "never reset"] = history
results.number("steps", args.steps, "training steps")
results.number("lr", args.lr, "learning rate")
results.number("reset_final_loss", losses["reset every step"][-1], "final loss, grad reset every step")
results.number("stale_final_loss", losses["never reset"][-1], "final loss, grad never reset")
results.number("fit_initial_loss", losses["never reset"][0], "loss before the first step")
rises = {label: int(np.sum(np.diff(history) > 0)) for label, history in losses.items()}
results.number("loss_changes", args.steps - 1, "changes between consecutive recorded losses")
results.number("reset_rises", rises["reset every step"], "loss rises step to step, grad reset")
results.number("stale_rises", rises["never reset"], "loss rises step to step, grad never reset")

# %% [markdown]
# ## An in-place step that never lands
# A two-layer model whose first weight is stored transposed (column-major), so `W1` is not
# C-contiguous. The buggy step copies each parameter into a contiguous buffer, updates the
# buffer in place, and never writes it back: for a contiguous parameter the "copy" is the
# parameter itself, for `W1` it is a temporary. The check: after a step, every parameter's
# update norm must be non-zero.

# %%
X_in = rng.normal(size=(64, 5))
y_out = np.tanh(X_in @ rng.normal(size=(5, 4))) @ rng.normal(size=4)


def model_loss(params):
    W1, w2 = params
    return ops.mean((ops.matmul(ops.tanh(ops.matmul(X_in, W1)), w2) - y_out) ** 2)


def step_in_place(param, grad):
    param -= args.lr * grad  # writes into the parameter's own storage


def step_via_contiguous_buffer(param, grad):
    buffer = np.ascontiguousarray(param)  # a copy when param is not contiguous
    buffer -= args.lr * grad  # updated in place... and never copied back


names, curves = ["W1", "w2"], {}
for label, step in (("in-place", step_in_place), ("contiguous buffer", step_via_contiguous_buffer)):
    rng_init = np.random.default_rng(args.seed)
    params = [rng_init.normal(size=(4, 5)).T * 0.5, rng_init.normal(size=4) * 0.5]  # W1: column-major
    history = []
    for k in range(10 * args.steps):
        loss, grads = engine.value_and_grad(model_loss, params)
        before = [p.copy() for p in params]
        for p, g in zip(params, grads, strict=True):
            step(p, g)
        if k == 0:
            norms, frozen = update_norms(before, params), frozen_parameters(before, params, names)
            shown = ", ".join(f"{n} {v:.2e}" for n, v in zip(names, norms, strict=True))
            print(f"{label:>18}: update norms {shown}; frozen: {frozen}")
        history.append(loss)
    key = label.split()[0].replace("-", "_")
    results.number(f"{key}_w1_update", norms[0], f"{label}: W1 update norm after step 1")
    results.number(f"{key}_w2_update", norms[1], f"{label}: w2 update norm after step 1")
    results.number(f"{key}_frozen", len(frozen), f"{label}: parameters flagged frozen")
    results.number(f"{key}_final_loss", history[-1], f"{label}: final loss")
    curves[label] = history
results.number("model_steps", 10 * args.steps, "training steps of the two-layer model")
results.number("w1_contiguous", bool(params[0].flags.c_contiguous), "W1 is C-contiguous")

fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
fig.suptitle("Correct gradients, lost updates")
for label, history in losses.items():
    axes[0].semilogy(history, label=label)
axes[0].set(title="Gradients never reset", xlabel="step", ylabel="loss (log scale)")
for label, history in curves.items():
    axes[1].semilogy(history, label=f"{label} step")
axes[1].set(title="Update into a contiguous copy", xlabel="step", ylabel="loss (log scale)")
for ax in axes:
    ax.legend()
results.figure(
    fig,
    "lost_updates",
    alt=f"Left: of {args.steps - 1} step-to-step changes of the loss, {rises['reset every step']} are "
    f"rises with the gradient reset every step and {rises['never reset']}, oscillating, with it never reset. "
    "Right: when the first layer's update lands in a temporary copy, only the second layer trains "
    f"and the loss ends at {curves['contiguous buffer'][-1]:.3f}, against "
    f"{curves['in-place'][-1]:.3f} for the in-place run.",
)

# %%
results.save()
