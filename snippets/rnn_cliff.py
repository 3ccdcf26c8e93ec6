"""A cliff in a recurrent loss: one gradient step from the wall, plain and norm-clipped

A single recurrent unit, x_t = w sigmoid(x_{t-1}) + b, iterated T times, has a loss that is
flat on both sides of a steep wall in the bias b. One plain gradient-descent step taken at the
wall jumps far past the minimum; the same step with the gradient's norm clipped lands near it.
Quoted by docs/gradients-through-time.md.
"""

# %% [markdown]
# ## The model
# $x_t = w\,\sigma(x_{t-1}) + b$ for $t = 1..T$ from $x_0 = 0$, with $w = 5$ fixed and the
# loss $L(b) = (x_T - y)^2$. At $b = -w/2$ the state $x = 0$ is a fixed point with slope
# $w\,\sigma'(0) = w/4 > 1$: unstable, so a bias just below it sends $x_T$ to the low branch
# and just above it to the high branch. The switch gets steeper as $T$ grows.

# %%
import matplotlib.pyplot as plt
import numpy as np
from gradlab import check, clipping, engine, ops, snippet
from gradlab.plot import FOREGROUND

parser = snippet.parser(__doc__)
parser.add_argument("--steps", type=snippet.positive_int, default=20, help="time steps T")
parser.add_argument("--lr", type=snippet.positive_float, default=0.1, help="learning rate")
parser.add_argument("--clip", type=snippet.positive_float, default=1.0, help="largest gradient norm")
parser.add_argument("--start", type=float, default=-2.503, help="starting bias b_0 (at the wall)")
args, results = snippet.parse(parser)
rng = np.random.default_rng(args.seed)

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


def loss(params):
    """(x_T - y)^2 for the bias params[0] (shape (1,)), written with ops for every method."""
    (b,) = params
    x = X0 + 0 * b
    for _ in range(args.steps):
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
plateau = engine.grad(loss, [np.array([WALL - 1.0])])[0].item()
results.number("plateau_gradient", plateau, "dL/db one unit left of the wall", rtol=1e-4)
# rounding-level disagreements: an atol that still fails if a method breaks (central differences
# resolve a wall of slope ~1e3 with a step of ~6e-6 only to ~1e-6 relative)
ATOL = {"forward": 1e-9, "complex": 1e-9, "central": 1e-4}
for pair, error in check.compare(loss, [start]).items():
    method = pair.split()[-1]
    results.number(f"wall_{method}", error, f"dL/db at b_0: {pair}", rtol=1.0, atol=ATOL[method])

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
        f"The loss jumps from the low plateau to the high one across a wall near b = {WALL:g}; one plain "
        f"step from the wall moves b by {plain_b - args.start:.3g} and the loss rises to "
        f"{loss_at(plain_b):.3g}, while the norm-clipped step lands at loss {loss_at(clipped_b):.3g}."
    ),
)

# %%
results.save()
