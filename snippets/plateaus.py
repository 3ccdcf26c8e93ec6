"""Plateaus: a tiny gradient, and a gradient that is exactly zero

On f(x) = 1 - exp(-|x|^2) far from the minimum the gradient is tiny in every direction: fixed-step
gradient descent crawls, a line search whose trial step grows walks out. Outside the basin of
f(x) = min(|x - c|^2, r^2) the gradient is exactly zero: every local method stalls where it
starts, and only random restarts find the basin. Quoted by docs/small-gradients.md.
"""

# %% [markdown]
# Both functions are written once with `gradlab.ops`; every optimizer gets $f$ and $\nabla f$
# from the engine's reverse mode (backprop).

# %%
import matplotlib.pyplot as plt
import numpy as np
from gradlab import check, ops, optim, snippet

parser = snippet.parser(__doc__)
parser.add_argument(
    "--start", type=snippet.positive_float, default=3.0, help="distance of the start from the minimum"
)
parser.add_argument("--radius", type=snippet.positive_float, default=0.2, help="radius r of the basin")
args, results = snippet.parse(parser)
rng = np.random.default_rng(args.seed)
GTOL = 1e-8


def gaussian_well(params):
    """1 - exp(-|x|^2): a bowl of width 1 at 0, flat and concave for |x| > 1/sqrt(2)."""
    (x,) = params
    return 1 - ops.exp(-ops.sum(x * x))


# %% [markdown]
# ## Tiny in every direction
# The gradient $2x\,e^{-|x|^2}$ at distance `start` is below $10^{-3}$. The fixed step is
# $\eta = 1/\lambda_{\max} = 1/2$ at the minimum (the Hessian there is $2I$).

# %%
start = np.array([args.start, 0.0])
fun = optim.reverse_mode(gaussian_well)
runs = {
    "gd": optim.gradient_descent(fun, start, lr=0.5, gtol=GTOL, max_iter=50_000),  # 1 / lambda_max
    "line_search": optim.gradient_descent_line_search(fun, start, gtol=GTOL),
    "newton": optim.newton(fun, start, gtol=GTOL, max_iter=50_000),
    "bfgs": optim.bfgs(fun, start, gtol=GTOL, max_iter=50_000),
}
results.number("start", args.start, "distance of the start from the minimum")
results.number("start_grad_norm", runs["gd"].grad_norms[0], "|grad f| at the start")
results.number("gtol", GTOL, "gradient tolerance")
results.number("well_lr", 0.5, "fixed step 1 / lambda_max at the minimum")
for name, trace in runs.items():
    print(
        f"{name:11s}: {trace.iterations:6d} iterations, {trace.evaluations:6d} evaluations, "
        f"converged {trace.converged}"
    )
    results.number(f"well_{name}_iterations", trace.iterations, f"{name} iterations from the plateau")
    results.number(f"well_{name}_evaluations", trace.evaluations, f"{name} evaluations from the plateau")

fig, ax = plt.subplots()
for name, trace in runs.items():
    distance = np.linalg.norm(np.array(trace.path), axis=1)
    ax.semilogy(np.arange(len(distance)) + 1, distance, label=name.replace("_", " "))
ax.set(
    title="Leaving a plateau where the gradient is tiny",
    xlabel="iteration + 1 (log scale)",
    ylabel="distance to the minimum (log scale)",
    xscale="log",
)
ax.legend()
results.figure(
    fig,
    "well_distance",
    alt="From the plateau, the line search whose trial step doubles reaches "
    "the minimum in tens of iterations; fixed-step gradient descent, Newton and BFGS crawl for "
    "hundreds of iterations before the bowl's curvature takes over.",
)

# %% [markdown]
# ## Exactly zero
# $f(x) = \min(|x - c|^2, r^2)$ is constant, so its gradient is exactly $0$, outside the disc of
# radius $r$ around $c$. Is it backprop? At one point outside, four methods:

# %%
centre = np.array([0.5, -0.3])
radius = args.radius


def flat_outside(params):
    (x,) = params
    return ops.minimum(ops.sum((x - centre) ** 2), radius**2)


outside = np.array([-0.5, 0.6])
gradients = {name: method(flat_outside, [outside])[0] for name, method in check.METHODS.items()}
largest = max(float(np.abs(g).max()) for g in gradients.values())
print("gradient outside the basin:", ", ".join(f"{name} {g}" for name, g in gradients.items()))
results.number("flat_largest_gradient", largest, "largest |gradient entry| outside the basin, any method")

moved = {
    name: float(np.linalg.norm(run(optim.reverse_mode(flat_outside), outside).x - outside))
    for name, run in {
        "gd": lambda f, x: optim.gradient_descent(f, x, 0.5, GTOL),
        "line_search": lambda f, x: optim.gradient_descent_line_search(f, x, gtol=GTOL),
        "heavy_ball": lambda f, x: optim.momentum(f, x, 0.5, 0.9, GTOL),
        "newton": lambda f, x: optim.newton(f, x, gtol=GTOL),
        "bfgs": lambda f, x: optim.bfgs(f, x, GTOL),
    }.items()
}
results.number("flat_largest_move", max(moved.values()), "largest distance any local method moved")

# %% [markdown]
# A global strategy: restart BFGS from points drawn uniformly in the square $[-1, 1]^2$ until
# one lands in the basin. A start lands there with probability $p = \pi r^2 / 4$, so the
# number of restarts is geometric with mean $1/p$.

# %%
restarts, points = 0, []
while True:
    restarts += 1
    point = rng.uniform(-1, 1, size=2)
    points.append(point)
    trace = optim.bfgs(optim.reverse_mode(flat_outside), point, GTOL)
    if trace.values[-1] < radius**2 / 2:
        break
expected = 4 / (np.pi * radius**2)
results.number("restarts", restarts, "restarts until one found the basin (this seed)")
results.number("restarts_expected", expected, "expected restarts 4 / (pi r^2)")
results.number("radius", radius, "radius of the basin")
results.number("final_value", trace.values[-1], "f at the successful restart's end", atol=1e-12)
DRAWS = 20_000
draws = rng.uniform(-1, 1, size=(DRAWS, 2))
hit_fraction = float(np.mean(np.linalg.norm(draws - centre, axis=1) < radius))
results.number("hit_fraction", hit_fraction, "fraction of the uniform draws inside the basin")
results.number("draws", DRAWS, "uniform draws for the hit fraction")
results.number("hit_probability", np.pi * radius**2 / 4, "pi r^2 / 4")
print(f"restarts {restarts}, expected {expected:.1f}; fraction of starts in the basin {hit_fraction:.4f}")

fig, ax = plt.subplots(figsize=(4.6, 4.2))
points = np.array(points)
ax.add_patch(plt.Circle(centre, radius, color="#009e73", alpha=0.35, label="basin (gradient nonzero)"))
ax.plot(points[:-1, 0], points[:-1, 1], "x", color="#d55e00", label="starts that stalled (gradient 0)")
ax.plot(*points[-1], "o", color="#0072b2", label="the start that found the basin")
ax.set(
    title=f"Random restarts: {restarts} to find the basin",
    xlabel="x1",
    ylabel="x2",
    xlim=(-1, 1),
    ylim=(-1, 1),
    aspect="equal",
)
ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1))
results.figure(
    fig,
    "restarts",
    alt="Uniform random starts in the square: every start outside the small basin "
    "stalls where it begins, because the gradient there is exactly zero; the run ends at the "
    "first start that falls inside the basin.",
)

# %%
results.save()
