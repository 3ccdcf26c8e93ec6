"""Accumulation and memory layout: forks, repeated indices, copies, stale gradients, lost updates

A correct gradient lost on its way into the parameters: overwritten at a fork, dropped at a repeated
index, written into a copy, never reset, or lost by an Adam step whose in-place kernels miss
non-contiguous memory (a re-enactment of a 2025 library bug). Quoted by docs/accumulation-and-memory.md.
"""

# %%
import functools

import matplotlib.pyplot as plt
import numpy as np
from gradlab import check, engine, numerical, ops, snippet
from gradlab.check import max_rel_error
from gradlab.leaks import InPlaceAdam, stuck_parameters, update_norms

parser = snippet.parser(__doc__)
parser.add_argument("--batch", type=snippet.positive_int, default=32, help="embedding lookups per batch")
parser.add_argument("--vocab", type=snippet.positive_int, default=10, help="rows of the embedding table")
parser.add_argument("--steps", type=snippet.positive_int, default=60, help="training steps")
parser.add_argument("--lr", type=snippet.positive_float, default=0.05, help="learning rate")
parser.add_argument("--adam-lr", type=snippet.positive_float, default=0.01, help="Adam's learning rate")
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
results.number("reset_final_loss", losses["reset every step"][-1], "final loss, grad reset every step")
results.number("stale_final_loss", losses["never reset"][-1], "final loss, grad never reset")
results.number("fit_initial_loss", losses["never reset"][0], "loss before the first step")
rises = {label: int(np.sum(np.diff(history) > 0)) for label, history in losses.items()}
results.number("loss_changes", args.steps - 1, "changes between consecutive recorded losses")
results.number("reset_rises", rises["reset every step"], "loss rises step to step, grad reset")
results.number("stale_rises", rises["never reset"], "loss rises step to step, grad never reset")

# %% [markdown]
# ## Adam whose in-place kernels miss non-contiguous memory (a re-enactment)
# The encoder is a layout-keeping copy of the decoder's transpose: it and its Adam buffers are not
# C-contiguous. `leaks.InPlaceAdam(flawed=True)`: `addcmul_`/`addcdiv_` write into a contiguous copy.


# %%
def autoencoder_loss(params, X):
    W_enc, W_dec = params
    return ops.mean((ops.matmul(ops.matmul(X, W_enc), W_dec) - X) ** 2)


RUNS = {  # key: (flawed kernels, encoder stored transposed, legend)
    "flawed": (True, True, "flawed kernels, transposed init"),
    "workaround": (True, False, "flawed kernels, contiguous init"),
    "fixed": (False, True, "correct kernels, transposed init"),
}
adam_steps, names = 10 * args.steps, ["encoder", "decoder"]
finals, stuck, curves, agreement = {key: [] for key in RUNS}, [], {}, []
for seed in snippet.seeds(args.seed):
    rng_ae = np.random.default_rng(seed)
    X_ae = rng_ae.normal(size=(64, 3)) @ rng_ae.normal(size=(3, 6)) + 0.05 * rng_ae.normal(size=(64, 6))
    W_dec0 = 0.1 * rng_ae.normal(size=(3, 6))
    loss_ae = functools.partial(autoencoder_loss, X=X_ae)
    agreement.append(max(check.compare(loss_ae, [W_dec0.T, W_dec0]).values()))
    for key, (flawed, transposed, legend) in RUNS.items():
        params = [np.copy(W_dec0.T) if transposed else np.ascontiguousarray(W_dec0.T), W_dec0.copy()]
        optimizer, history, start = InPlaceAdam(params, args.adam_lr, flawed), [], [p.copy() for p in params]
        for k in range(adam_steps):
            loss, grads = engine.value_and_grad(loss_ae, params)
            before = [p.copy() for p in params]
            optimizer.step(params, grads)
            if k == 0 and key == "flawed":  # the diagnostic, after the first step
                flagged = stuck_parameters(before, params, grads, names)
                first = (np.linalg.norm(grads[0]), update_norms(before, params)[0], flagged)
            history.append(loss)
        finals[key].append(history[-1])
        if key == "flawed":
            v, m = optimizer.exp_avg_sq, optimizer.exp_avg
            stuck.append(
                (*first, update_norms(start, params)[0], v[0].max(), v[1].min(), np.linalg.norm(m[0]))
            )
        if seed == snippet.seeds(args.seed)[0]:
            curves[legend] = history

# %% The record, and the chapter's sentences as claims
shares = bool(np.shares_memory(np.ascontiguousarray(W_dec0.T), W_dec0))
results.number("transpose_copy_shares_memory", shares, "ascontiguousarray(W.T) shares W's memory")
results.number("encoder_contiguous", bool(np.copy(W_dec0.T).flags.c_contiguous), "encoder C-contiguous")
results.number("adam_max_disagreement", max(agreement), "autoencoder: largest disagreement", atol=1e-7)
results.number("adam_steps", adam_steps, "Adam steps of the autoencoder")
results.number("adam_lr", args.adam_lr, "Adam's learning rate")
grad_first, enc_first, flagged, enc_total, v_enc_max, v_dec_min, m_enc = zip(*stuck, strict=True)
results.spread("stuck_grad_norm", grad_first, "flawed run: encoder gradient norm at step 1")
for key, (_, _, legend) in RUNS.items():
    results.spread(f"{key}_final_loss", finals[key], f"final loss, {legend}")
ratio = np.array(finals["flawed"]) / np.array(finals["fixed"])
results.spread("stall_ratio", ratio, "final loss, flawed / correct kernels")
gap = np.abs(np.array(finals["workaround"]) - finals["fixed"]).max()
v = {key: entry["value"] for key, entry in results.numbers.items()}
right = max(v["fork_add_error"], v["gather_add_at_error"]) < 1e-6
wrong = v["fork_overwrite_error"] > 0.1 and (v["gather_buffered_error"] > 0.1 or v["lost_contributions"] == 0)
results.claim(
    "adding_is_right", right and wrong, "+= and np.add.at match central differences; = and [idx] += do not"
)
views = [v[f"{name}_update_norm"] > 0 for name in SELECTIONS]
results.claim("only_slice_moves", views == [True, False, False], "only the slice's update reaches w")
stale_ok = rises["reset every step"] == 0 < 10 < rises["never reset"]
stale = "reset: the loss never rises; never reset: it rises > 10 times and ends higher"
results.claim("stale_oscillates", stale_ok and v["stale_final_loss"] > v["reset_final_loss"], stale, rises)
stuck_ok = max(enc_first) == 0 == max(enc_total) == max(v_enc_max) and min(grad_first) > 0 and min(m_enc) > 0
stuck = "flawed: encoder and its exp_avg_sq stay exactly as they started; its gradient and exp_avg do not"
results.claim(
    "encoder_never_moves", stuck_ok and min(v_dec_min) > 0, stuck, {"update": enc_total, "v": v_enc_max}
)
flagged_ok = all(f == ["encoder"] for f in flagged)
results.claim(
    "diagnostic_flags_encoder", flagged_ok, "after step 1 the check flags the encoder alone", {"f": flagged}
)
results.claim(
    "stalls", ratio.min() > 5, "the stuck run ends > 5 times above the correct one", {"ratio": ratio}
)
workaround = "a contiguous encoder under the flawed kernels trains like the correct kernels (to 1e-9)"
results.claim("workaround_matches_fix", gap <= 1e-9 * max(finals["fixed"]), workaround, {"gap": gap})

fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
fig.suptitle("Correct gradients, lost updates")
for label, history in losses.items():
    axes[0].semilogy(history, label=label)
axes[0].set(title="Gradients never reset", xlabel="step", ylabel="loss (log scale)")
for label, history in curves.items():
    axes[1].semilogy(history, label=label)
axes[1].set(title=f"Adam, seed {snippet.seeds(args.seed)[0]}", xlabel="step", ylabel="loss (log scale)")
for ax in axes:
    ax.legend(fontsize=8)
results.figure(
    fig,
    "lost_updates",
    alt=f"Left: of {args.steps - 1} step-to-step changes of the loss, {rises['reset every step']} are "
    f"rises with the gradient reset every step and {rises['never reset']}, oscillating, with it never reset. "
    "Right: Adam on a linear autoencoder, encoder stored transposed; the loss ends at "
    + "; ".join(f"{curves[legend][-1]:.3g} ({legend})" for _, _, legend in RUNS.values())
    + ".",
)

# %%
results.save()
