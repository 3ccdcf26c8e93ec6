"""A cliff in a recurrent loss, and clipping: one step from the wall; by norm or by entry

A single recurrent unit, x_t = w sigmoid(x_{t-1}) + b, iterated T times, has a loss that is
flat on both sides of a steep wall in the bias b. One plain gradient-descent step taken at the
wall jumps far past the minimum; the same step with the gradient's norm clipped lowers the loss.
Then the tanh RNN of through_time.py, on five seeds: its gradient clipped by norm and by entry
(min-char-rnn's +-5) at the same threshold. Quoted by docs/gradients-through-time.md.
"""

# %% [markdown]
# ## The model
# $x_t = w\,\operatorname{sigmoid}(x_{t-1}) + b$ for $t = 1..T$ from $x_0 = 0$, with $w = 5$ fixed
# and the loss $L(b) = (x_T - y)^2$. At $b = -w/2$ the state $x = 0$ is a fixed point with slope
# $w\,\operatorname{sigmoid}'(0) = w/4 > 1$: unstable, so a bias just below it sends $x_T$ to the low branch
# and just above it to the high branch. The switch gets steeper as $T$ grows.

# %%
import matplotlib.pyplot as plt
import numpy as np
from gradlab import check, clipping, engine, ops, snippet
from gradlab import recurrent as rec
from gradlab.plot import FOREGROUND

parser = snippet.parser(__doc__)
parser.add_argument("--steps", type=snippet.positive_int, default=20, help="time steps T")
parser.add_argument("--lr", type=snippet.positive_float, default=0.1, help="learning rate")
parser.add_argument("--clip", type=snippet.positive_float, default=1.0, help="largest gradient norm")
parser.add_argument("--start", type=float, default=-2.503, help="starting bias b_0 (at the wall)")
parser.add_argument(
    "--rnn-clip", type=snippet.positive_float, default=5.0, help="c for the RNN, norm and entry"
)
args, results = snippet.parse(parser)

W, TARGET, X0 = 5.0, -3.0, 0.0
WALL = -W / 2  # the bias at which x = 0 is a fixed point
for name, value, about in (
    ("w", W, "recurrent weight w"),
    ("target", TARGET, "target y"),
    ("x0", X0, "initial state x_0"),
    ("steps", args.steps, "time steps T"),
    ("lr", args.lr, "learning rate"),
    ("clip", args.clip, "clipping threshold on the gradient norm"),
    ("start", args.start, "starting bias b_0"),
):
    results.number(name, value, about)


def loss(params, steps=args.steps):
    """(x_T - y)^2 for the bias params[0] (shape (1,)), written with ops for every method."""
    (b,) = params
    x = X0 + 0 * b
    for _ in range(steps):
        x = W * ops.sigmoid(x) + b
    return ops.sum((x - TARGET) ** 2)


def loss_at(b):
    return float(np.real(loss([np.array([b])])))


# %% [markdown]
# ## One step from the wall
# Plain gradient descent moves by $-\eta\, \partial L/\partial b$; the clipped step moves by
# $-\eta\, g \min(1, c/\lVert g \rVert)$: the same direction, at most $\eta c$ long.

# %%
start = np.array([args.start])
loss_0, (gradient,) = engine.value_and_grad(loss, [start])
(clipped,), _ = clipping.clip_by_norm([gradient], args.clip)
plain_b = args.start - args.lr * gradient.item()
clipped_b = args.start - args.lr * clipped.item()
results.number("start_loss", loss_0, "loss at b_0", rtol=1e-4)
results.number("wall_gradient", gradient.item(), "dL/db at b_0", rtol=1e-4)
results.number("plain_step", -args.lr * gradient.item(), "plain step in b", rtol=1e-4)
results.number("plain_landing", plain_b, "b after the plain step", rtol=1e-4)
results.number("plain_loss_after", loss_at(plain_b), "loss after the plain step", rtol=1e-4)
results.number("clipped_step", -args.lr * clipped.item(), "clipped step in b", rtol=1e-4)
results.number("clipped_landing", clipped_b, "b after the clipped step", rtol=1e-4)
results.number("clipped_loss_after", loss_at(clipped_b), "loss after the clipped step", rtol=1e-4)
plateau, right = (engine.grad(loss, [np.array([WALL + side])])[0].item() for side in (-1.0, 1.0))
results.number("plateau_gradient", plateau, "dL/db one unit left of the wall", rtol=1e-4)
results.number("right_gradient", right, "dL/db one unit right of the wall", rtol=1e-4)
# the fair alternative to clipping: a learning rate small enough that the plain wall step is no longer
# than the clipped one; on the plateau it then moves b |g_wall| / c times less than the clipped step
matched_lr = args.lr * args.clip / abs(gradient.item())
matched_plateau_step = matched_lr * abs(plateau)
clipped_plateau_step = args.lr * min(abs(plateau), args.clip)
results.number("matched_lr", matched_lr, "learning rate whose plain wall step is as long as the clipped one")
results.number("matched_plateau_step", matched_plateau_step, "|plain step| at matched_lr, one unit left")
results.number("clipped_plateau_step", clipped_plateau_step, "|clipped step| at lr, one unit left")
# rounding-level disagreements: an atol that still fails if a method breaks (central differences
# resolve a wall of slope ~1e3 with a step of ~6e-6 only to ~1e-6 relative)
ATOL = {"forward": 1e-9, "complex": 1e-9, "central": 1e-4}
agreement = {pair.split()[-1]: error for pair, error in check.compare(loss, [start]).items()}
for method, error in agreement.items():
    results.number(f"wall_{method}", error, f"dL/db at b_0: reverse vs {method}", rtol=1.0, atol=ATOL[method])
(by_value,) = clipping.clip_by_value([gradient], args.clip)
# an exercise's answer compares this unroll with the default one (its T and b_0): that wall gradient, here
default_steps, default_start = parser.get_default("steps"), parser.get_default("start")
default_wall = engine.grad(lambda p: loss(p, default_steps), [np.array([default_start])])[0].item()
growth = results.number(
    "wall_gradient_vs_default",
    gradient.item() / default_wall,
    f"dL/db at b_0 over dL/db at T = {default_steps}, b_0 = {default_start:g}",
    rtol=1e-4,
)
results.claim(
    "wall_steeper_clipped_step_same",
    abs(growth) > 2 and min(abs(gradient.item()), abs(default_wall)) > args.clip,
    f"The clipped step is η c = {args.lr * args.clip:g} long both at T = {default_steps} from b_0 = "
    f"{default_start:g} and at T = {args.steps} from b_0 = {args.start:g}, though the wall's gradient at "
    f"T = {args.steps} is over twice as steep.",
    {"growth": growth, "wall": gradient.item(), "default wall": default_wall},
    answer=True,
)
for name, holds, statement, values in (
    (
        "wall_is_steep",
        abs(gradient.item()) > 30 * max(abs(plateau), abs(right)),
        "At b_0 |dL/db| is over 30 times its value one unit left or right of the wall.",
        {"wall": gradient.item(), "left": plateau, "right": right},
    ),
    (
        "plain_step_overshoots",
        loss_at(plain_b) > 100 * loss_0,
        "The plain step raises the loss over 100-fold.",
        {"before": loss_0, "after": loss_at(plain_b)},
    ),
    (
        "clipped_step_descends",
        loss_at(clipped_b) < loss_0,
        "The norm-clipped step lowers the loss.",
        {"before": loss_0, "after": loss_at(clipped_b)},
    ),
    (
        "methods_agree_at_the_wall",
        max(agreement["forward"], agreement["complex"]) < 1e-12 and agreement["central"] < 1e-4,
        "Forward mode and the complex step agree with reverse mode to 1e-12, central differences to 1e-4.",
        agreement,
    ),
    (
        "small_learning_rate_crawls_on_the_plateau",
        clipped_plateau_step > 100 * matched_plateau_step,
        "With the learning rate that makes the plain wall step as short as the clipped one, the plain step "
        "one unit left of the wall is over 100 times shorter than the clipped step there.",
        {"matched": matched_plateau_step, "clipped": clipped_plateau_step},
    ),
    (
        "one_parameter_clippings_coincide",
        bool(np.array_equal(by_value, clipped)),
        "With one parameter, clipping the norm and clipping the entry give the same update.",
        {"norm": clipped.item(), "value": by_value.item()},
    ),
):
    results.claim(name, holds, statement, values)

# %% [markdown]
# ## The loss along $b$

# %%
biases = np.linspace(WALL - 2.5, WALL + 2.5, 1001)
fig, ax = plt.subplots()
ax.plot(biases, [loss_at(b) for b in biases], label="loss $L(b)$")
ax.plot([args.start], [loss_0], "o", label=f"start $b_0$ = {args.start:.4g}")
ax.plot([clipped_b], [loss_at(clipped_b)], "s", label=f"clipped step lands: L = {loss_at(clipped_b):.3g}")
ax.annotate(
    f"plain step: Δb = {plain_b - args.start:.3g},\nlands at b = {plain_b:.3g}, L = {loss_at(plain_b):.3g}",
    xy=(biases[0], loss_0),
    xytext=(WALL - 2.3, 0.6 * ax.get_ylim()[1]),
    arrowprops={"arrowstyle": "->", "color": FOREGROUND},  # the chrome colour: swapped in dark mode
    fontsize="small",
)
ax.set(
    title=f"A cliff in a one-unit RNN loss (T = {args.steps})",
    xlabel="bias $b$",
    ylabel="loss $L(b) = (x_T - y)^2$",
)
ax.legend(loc="lower right")
results.figure(
    fig,
    "cliff",
    alt=(
        f"The loss rises steeply across a wall near b = {WALL:g}, nearly flat to its left and rising gently "
        f"to its right; one plain step from the wall moves b by {plain_b - args.start:.3g} and the loss "
        f"rises to {loss_at(plain_b):.3g}, while the norm-clipped step reaches loss {loss_at(clipped_b):.3g}."
    ),
)

# %% [markdown]
# ## Clipping the RNN's gradient: by norm or by entry
# The tanh RNN of `through_time.py` (32 units, 100 steps, inputs of scale 1), $L = v^\top h_T$,
# gradient with respect to $W_{hh}$, $W_{xh}$, $b$ at largest singular value 1 (vanishing) and 3
# (exploding), clipped to norm $c$ or every entry to $[-c, c]$ (min-char-rnn: `np.clip(dparam, -5, 5)`).

# %%
RNN_SCALES = {"vanishing": 1.0, "exploding": 3.0}  # sigma_max, as in through_time.py
c, nets = args.rnn_clip, [rec.draw_network(seed, 32, 4, 100) for seed in snippet.seeds(args.seed)]
summary = {}
for name, scale in RNN_SCALES.items():
    runs = [rec.clip_summary(net, scale, 1.0, c) for net in nets]
    summary[name] = {key: np.array([run[key] for run in runs]) for key in runs[0]}
    for key, values in summary[name].items():
        results.spread(f"{name}_{key}", values, f"{name}: {key.replace('_', ' ')}", rtol=1e-3, atol=1e-12)
results.number("rnn_clip", c, "c for the RNN gradient")
for name, scale in RNN_SCALES.items():
    results.number(f"{name}_scale", scale, f"sigma_max of the {name} RNN")
results.number("parameter_count", 32 * 32 + 32 * 4 + 32, "entries P of the RNN gradient")
results.number("value_clip_bound", c * np.sqrt(32 * 32 + 32 * 4 + 32), "c sqrt(P)")
small, big = summary["vanishing"], summary["exploding"]
results.claim(
    "norm_clipping_keeps_the_direction",
    max(small["ratio_spread"].max(), big["ratio_spread"].max()) < 1e-14,
    "Norm clipping multiplies every entry by one factor (to 1e-14 relative): the direction is kept.",
)
results.claim(
    "value_clipping_turns_the_direction",
    0 < big["cosine_value_clip"].min() <= big["cosine_value_clip"].max() < 0.9 < big["clipped_fraction"].min()
    and big["value_clipped_norm"].min() > 10 * c,
    f"At sigma_max 3, clipping entries to +-{c:g} clips over 90% of them, turns the gradient "
    "(0 < cosine < 0.9) and leaves a norm over 10 c, on every seed.",
    big,
)
results.claim(
    "vanishing_gradient_barely_clipped",
    small["clipped_fraction"].max() == 0 and small["full_grad_norm"].max() < 1.25 * c,
    f"At sigma_max 1 no entry exceeds c = {c:g} on any seed (entry clipping does not act), and the norm is "
    "under 1.25 c (norm clipping, where it acts, scales by at least 0.8).",
    small,
)

# %%
results.save()
