"""Accumulation and memory layout: forks, repeated indices, copies, stale gradients, lost updates

A correct gradient lost on its way into the parameters: overwritten at a fork, dropped at a repeated
index, written into a copy, never reset, or lost by an Adam step whose in-place kernels miss
non-contiguous memory (a re-enactment of a PyTorch MPS bug). Quoted by docs/accumulation-and-memory.md.
"""

# %%
import functools
import itertools

import matplotlib.pyplot as plt
import numpy as np
from gradlab import engine, leaks, numerical, ops, snippet
from gradlab.check import normwise_rel_error
from gradlab.leaks import normwise_disagreement as disagreement

parser = snippet.parser(__doc__)
parser.add_argument("--batch", type=snippet.positive_int, default=32, help="embedding lookups per batch")
parser.add_argument("--vocab", type=snippet.positive_int, default=10, help="rows of the embedding table")
parser.add_argument("--steps", type=snippet.positive_int, default=60, help="training steps")
parser.add_argument("--lr", type=snippet.positive_float, default=0.05, help="learning rate")
parser.add_argument("--adam-lr", type=snippet.positive_float, default=0.01, help="Adam's learning rate")
args, results = snippet.parse(parser)
SEEDS = snippet.seeds(args.seed)

# %% [markdown]
# ## A fork: one weight, two paths
# $f(W) = \sum \tanh(W x) + \tfrac12 \lVert W y \rVert^2$ uses $W$ twice: $\partial f / \partial W$ is the sum
# of the two paths' gradients. A hand-written backward pass adds them (`+=`) or overwrites one (`=`).


# %%
def fork_errors(seed):
    """(+= error, = error, four-method disagreement, = minus the tanh path), vs central differences."""
    rng = np.random.default_rng(seed)
    W, x, y = rng.normal(size=(3, 4)), rng.normal(size=4), rng.normal(size=4)

    def fork(params):
        return ops.sum(ops.tanh(ops.matmul(params[0], x))) + 0.5 * ops.sum(ops.matmul(params[0], y) ** 2)

    path_tanh = np.outer(1 - np.tanh(W @ x) ** 2, x)  # d/dW of sum tanh(W x)
    path_square = np.outer(W @ y, y)  # d/dW of |W y|^2 / 2
    accumulated = np.zeros_like(W)
    accumulated += path_tanh
    accumulated += path_square
    overwritten = path_tanh
    overwritten = path_square  # the bug: the second path replaces the first
    reference = numerical.central_difference(fork, [W])
    errors = [normwise_rel_error([grad], reference) for grad in (accumulated, overwritten)]
    missing = normwise_rel_error([reference[0] - overwritten], [path_tanh])  # = drops exactly this path
    return *errors, disagreement(fork, [W], known={"central": reference}), missing


fork_add, fork_overwrite, fork_agree, fork_missing = zip(*map(fork_errors, SEEDS), strict=True)
results.spread("fork_add_error", fork_add, "fork: += vs central", atol=1e-7)
results.spread("fork_overwrite_error", fork_overwrite, "fork: = vs central")
results.spread("fork_max_disagreement", fork_agree, "fork: largest disagreement of four methods", atol=1e-7)

# %% [markdown]
# ## Repeated indices: an embedding lookup
# $L(E) = \sum_b \langle E_{i_b}, G_b \rangle$ looks up row $i_b$ once per batch entry, so row $r$
# receives $\sum_{b: i_b = r} G_b$. `grad[idx] += G` is buffered: for a repeated index only one
# write survives. `np.add.at(grad, idx, G)` is unbuffered and adds every contribution.


# %%
def lookup_errors(seed):
    """(distinct rows, buffered error, np.add.at error, disagreement, one write survives per row)."""
    rng = np.random.default_rng(seed)
    E, idx = rng.normal(size=(args.vocab, 4)), rng.integers(0, args.vocab, size=args.batch)
    G = rng.normal(size=(args.batch, 4))

    def lookup(params):
        return ops.sum(params[0][idx] * G)

    buffered, unbuffered = np.zeros_like(E), np.zeros_like(E)
    buffered[idx] += G
    np.add.at(unbuffered, idx, G)
    one_write = all(any(np.array_equal(buffered[r], G[b]) for b in np.flatnonzero(idx == r)) for r in idx)
    reference = numerical.central_difference(lookup, [E])
    errors = [normwise_rel_error([grad], reference) for grad in (buffered, unbuffered)]
    return len(np.unique(idx)), *errors, disagreement(lookup, [E], known={"central": reference}), one_write


unique_rows, buffered_err, add_at_err, lookup_agree, one_write = zip(*map(lookup_errors, SEEDS), strict=True)
results.spread("unique_rows", unique_rows, "distinct rows looked up")
results.spread("lost_contributions", args.batch - np.array(unique_rows), "dropped by grad[idx] += G")
results.spread("gather_buffered_error", buffered_err, "grad[idx] += G vs central")
results.spread("gather_add_at_error", add_at_err, "np.add.at vs central", atol=1e-7)
results.spread("gather_max_disagreement", lookup_agree, "lookup: largest disagreement", atol=1e-7)
p_repeat = 1 - np.prod(1 - np.arange(args.batch) / args.vocab)  # the birthday problem
results.number("repeat_probability", p_repeat, "P(a row repeats)")
n_repeat = sum(u < args.batch for u in unique_rows)
results.number("seeds_with_repeat", n_repeat, "seeds whose batch repeats a row")
results.number("all_seeds_repeat_probability", p_repeat ** len(SEEDS), "P(every seed's batch repeats a row)")

# %% [markdown]
# ## Views and copies
# A basic slice is a view of the parameter; a boolean or integer-array index is a copy, and an in-place
# update of a copy changes only the copy (`np.shares_memory` tells them apart); on every seed alike.

# %%
SELECTIONS = {"slice": lambda w: w[::2], "boolean": lambda w: w[w > 0], "integer": lambda w: w[[0, 2, 4]]}
shared, moved = {name: set() for name in SELECTIONS}, {name: [] for name in SELECTIONS}
for seed, (name, select) in itertools.product(SEEDS, SELECTIONS.items()):
    w = np.random.default_rng(seed).normal(size=8)
    before, part = w.copy(), select(w)
    part -= 0.1  # an "update" through the selected part
    shared[name].add(bool(np.shares_memory(w, part)))
    moved[name].append(np.linalg.norm(w - before))
for name in SELECTIONS:
    (flag,) = shared[name]  # the same on every seed
    results.number(f"{name}_shares_memory", flag, f"{name} index shares memory")
    results.spread(f"{name}_update_norm", moved[name], f"{name} index: how far the parameter moved")

# %% [markdown]
# ## Gradients that are never reset
# `.grad` accumulates across `backward()` calls by design (a fork's sum, micro-batches); a training
# loop resets it before each step, else step $k$ uses the sum of all $k$ gradients so far.


# %%
def fit(seed, reset):
    """The loss before each gradient-descent step on least squares, `.grad` reset or not."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(50, 3))
    y = X @ np.array([1.0, -2.0, 0.5]) + 0.1 * rng.normal(size=50)
    w, history = engine.Tensor(np.zeros(3), requires_grad=True), []
    for _ in range(args.steps):
        loss = ops.mean((X @ w - y) ** 2)
        history.append(loss.data.item())
        loss.backward()
        w.data -= args.lr * w.grad
        if reset:
            w.grad = np.zeros_like(w.data)  # what optimizer.zero_grad() does
    return history


losses, rises = {}, {}
for reset, label in ((True, "reset"), (False, "stale")):
    losses[label] = np.array([fit(seed, reset) for seed in SEEDS])
    rises[label] = np.sum(np.diff(losses[label]) > 1e-12 * losses[label][:, :-1], axis=1)  # beyond rounding
    results.spread(f"{label}_final_loss", losses[label][:, -1], f"final loss, grad {label}")
    results.spread(f"{label}_rises", rises[label], f"loss rises step to step, grad {label}")
results.number("loss_changes", args.steps - 1, "changes between consecutive recorded losses")
results.spread("fit_initial_loss", losses["reset"][:, 0], "loss before the first step")

# %% [markdown]
# ## Adam whose in-place kernels miss non-contiguous memory (a re-enactment)
# The encoder, a layout-keeping copy of the decoder's transpose, and its Adam buffers are not C-contiguous;
# `leaks.InPlaceAdam(flawed=True)`'s `addcmul_`/`addcdiv_` write into a contiguous copy. With the encoder
# frozen no decoder beats `frozen_encoder_floor`; the optimum is the best rank-3 approximation of $X$.

# %%
RUNS = {  # key: (flawed kernels, encoder stored transposed, legend)
    "flawed": (True, True, "flawed kernels, transposed init"),
    "workaround": (True, False, "flawed kernels, contiguous init"),
    "fixed": (False, True, "correct kernels, transposed init"),
}
adam_steps, names = 10 * args.steps, ["encoder", "decoder"]
finals, stuck, curves, agreement, floors = {key: [] for key in RUNS}, [], {}, [], []
for seed in SEEDS:
    rng_ae = np.random.default_rng(seed)
    X_ae = rng_ae.normal(size=(64, 3)) @ rng_ae.normal(size=(3, 6)) + 0.05 * rng_ae.normal(size=(64, 6))
    W_dec0 = 0.1 * rng_ae.normal(size=(3, 6))
    loss_ae = functools.partial(leaks.autoencoder_loss, X=X_ae)
    agreement.append(disagreement(loss_ae, [W_dec0.T, W_dec0]))
    floors.append((leaks.frozen_encoder_floor(X_ae, W_dec0.T), leaks.autoencoder_optimum(X_ae, 3)))
    for key, (flawed, transposed, legend) in RUNS.items():
        params = [np.copy(W_dec0.T) if transposed else np.ascontiguousarray(W_dec0.T), W_dec0.copy()]
        start = [p.copy() for p in params]
        history, opt, flagged, grads = leaks.run_adam(
            loss_ae, params, args.adam_lr, flawed, adam_steps, names
        )
        finals[key].append(history[-1])
        if key == "flawed":  # flagged after step 1; the encoder's gradient then, its state at the end
            v, m, falling = opt.exp_avg_sq, opt.exp_avg, floors[-1][0] <= history[-1] < history[-args.steps]
            moved_enc, grad_enc = leaks.update_norms(start, params)[0], np.linalg.norm(grads[0])
            stuck.append((grad_enc, flagged, moved_enc, v[0].max(), v[1].min(), np.any(m[0] != 0), falling))
        curves.setdefault(legend, history)  # the first seed's

# %% The record, and the chapter's sentences as claims
shares = bool(np.shares_memory(np.ascontiguousarray(W_dec0.T), W_dec0))
results.number("transpose_copy_shares_memory", shares, "ascontiguousarray(W.T) shares W's memory")
results.number("encoder_contiguous", bool(np.copy(W_dec0.T).flags.c_contiguous), "encoder C-contiguous")
results.spread("adam_max_disagreement", agreement, "autoencoder: largest disagreement", atol=1e-7)
results.number("adam_steps", adam_steps, "Adam steps of the autoencoder")
for key in ("batch", "vocab", "steps", "lr", "adam_lr"):  # the settings the chapter quotes
    results.number(key, getattr(args, key), f"setting: {key}")
grad_first, flagged, enc_total, v_enc_max, v_dec_min, m_enc, falling = zip(*stuck, strict=True)
results.spread("stuck_grad_norm", grad_first, "flawed run: encoder gradient norm at step 1")
for key, (_, _, legend) in RUNS.items():
    results.spread(f"{key}_final_loss", finals[key], f"final loss, {legend}")
ratio = np.array(finals["flawed"]) / np.array(finals["fixed"])
results.spread("stall_ratio", ratio, "final loss, flawed / correct kernels")
floor, optimum = np.array(floors).T
results.spread("frozen_floor", floor, "least loss with the encoder frozen at its start")
results.spread("floor_ratio", floor / optimum, "frozen floor / optimum (best rank-3 approximation)")
gap = np.abs(np.array(finals["workaround"]) - finals["fixed"]).max()
v = {key: entry["value"] for key, entry in results.numbers.items()}
right = max(v["fork_add_error_max"], v["gather_add_at_error_max"]) < 1e-8 and max(fork_missing) < 1e-6
wrong = v["gather_buffered_error_min"] > 0.1 or max(unique_rows) == args.batch
adding = "every seed: += and add.at match central to 1e-8; = drops exactly one path; [idx] += is > 0.1 off"
results.claim("adding_is_right", right and wrong, adding)
results.claim("one_write_survives", all(one_write), "grad[idx] += G keeps one contribution per row")
exact = [e > 0.01 if u < args.batch else e < 1e-8 for u, e in zip(unique_rows, buffered_err, strict=True)]
repeat = "On every seed `grad[idx] += G` errs by over 1% if a row repeats and by under 1e-8 if none does."
results.claim("buffered_wrong_iff_repeat", all(exact), repeat, {"error": buffered_err})
only_slice = min(moved["slice"]) > 0 == max(moved["boolean"] + moved["integer"])
results.claim("only_slice_moves", only_slice, "on every seed, only the slice's update reaches w", moved)
stale_ok = max(rises["reset"]) == 0 and min(rises["stale"]) > 10 and v["stale_final_loss_min"] > 0
stale_ok = stale_ok and np.all(losses["stale"][:, -1] > losses["reset"][:, -1])
stale = "every seed, reset: loss never rises by 1e-12 relative; never reset: > 10 times, ends higher"
results.claim("stale_oscillates", stale_ok, stale)
stale = "On every seed the loss without the reset rises more than 10 times; with it, never beyond rounding."
results.claim("reset_still_needed", max(rises["reset"]) == 0 < 10 < min(rises["stale"]), stale, answer=True)
stuck_ok = max(enc_total) == 0 == max(v_enc_max) and min(grad_first) > 0 and all(m_enc)
stuck = "flawed: encoder and its exp_avg_sq stay exactly as they started; its gradient and exp_avg do not"
results.claim("encoder_never_moves", stuck_ok and min(v_dec_min) > 0, stuck, {"update": enc_total})
results.claim("stuck", stuck_ok, "On every seed the encoder stays put; its gradient is not 0.", answer=True)
flagged_ok = all(f == ["encoder"] for f in flagged)
results.claim("diagnostic_flags_encoder", flagged_ok, "after step 1 the check flags the encoder alone")
results.claim("stalls", ratio.min() > 3, "the stuck run ends > 3 times above the correct one", {"r": ratio})
fall = "the stuck run's loss still falls over its last tenth of steps and stays above the frozen floor"
results.claim("still_falling", all(falling), fall)
results.claim("floor_above_optimum", min(floor / optimum) > 1.2, "the frozen floor is > 1.2 x the optimum")
workaround = "a contiguous encoder under the flawed kernels trains like the correct kernels (to 1e-9)"
results.claim("workaround_matches_fix", gap <= 1e-9 * max(finals["fixed"]), workaround, {"gap": gap})

fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
fig.suptitle(f"Correct gradients, lost updates (seed {SEEDS[0]})")
for label, legend in (("reset", "reset every step"), ("stale", "never reset")):
    axes[0].semilogy(losses[label][0], label=legend)
axes[0].set(title="Gradients never reset", xlabel="step", ylabel="loss (log scale)")
for legend, history in curves.items():
    axes[1].semilogy(history, label=legend, **({"ls": "--", "zorder": 3} if "contiguous" in legend else {}))
axes[1].axhline(floor[0], color="0.5", linestyle=":", label="floor with the encoder frozen")
axes[1].set(title="Adam on a linear autoencoder", xlabel="step", ylabel="loss (log scale)")
axes[0].legend(fontsize=8), axes[1].legend(fontsize=8)
alt = (
    f"Seed {SEEDS[0]}. Left: of {args.steps - 1} step-to-step changes of the loss, "
    f"{rises['reset'][0]} are rises with the gradient reset every step and {rises['stale'][0]}, "
    "oscillating, with it never reset. Right: Adam on a linear autoencoder; the loss ends at "
    + "; ".join(f"{curves[legend][-1]:.3g} ({legend})" for _, _, legend in RUNS.values())
    + f"; with the encoder frozen, no decoder gets below {floor[0]:.3g}."
)
results.figure(fig, "lost_updates", alt=alt)
results.save()
