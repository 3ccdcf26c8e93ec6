"""Plateaus: a tiny gradient, and a gradient that is exactly zero

On f(x) = 1 - exp(-|x|^2) far from the minimum the gradient is tiny in every direction and the
function is concave along the way in: fixed-step gradient descent crawls; any method with a
strong-Wolfe line search, a trust region or saddle-free Newton walks out. Outside the basin of
f(x) = min(|x - c|^2, r^2) the gradient is exactly zero: every local method stalls where it
starts; random restarts and an evolution strategy (function values only) find the basin.
Quoted by docs/small-gradients.md.
"""

# %% [markdown]
# Both functions are written once with `gradlab.ops`; every optimizer gets $f$ and $\nabla f$
# from the engine's reverse mode (backprop).

# %%
import matplotlib.pyplot as plt
import numpy as np
from gradlab import check, hvp, ops, optim, snippet

parser = snippet.parser(__doc__)
parser.add_argument("--start", type=snippet.positive_float, default=3.0, help="distance r from the minimum")
parser.add_argument("--radius", type=snippet.positive_float, default=0.2, help="radius r of the basin")
args, results = snippet.parse(parser)
GTOL, TR_RADIUS, SIGMA, PAIRS = 1e-8, 1.0, 1.0, 500  # trust region's first radius; the ES's settings


def gaussian_well(params, scale=1.0):
    """scale * (1 - exp(-|x|^2)): a bowl of width 1 at 0, flat and concave for |x| > 1/sqrt(2)."""
    (x,) = params
    return scale * (1 - ops.exp(-ops.sum(x * x)))


# %% [markdown]
# ## Tiny in every direction
# The fixed step is $\eta = 1/\lambda_{\max} = 1/2$ at the minimum (the Hessian there is $2I$).
# Newton and BFGS run twice: with Armijo backtracking from $t = 1$, and with the strong-Wolfe
# search ($c_1 = 10^{-4}$, $c_2 = 0.9$) that every line-search method here uses.

# %%
start = np.array([args.start, 0.0])
fun = optim.reverse_mode(gaussian_well)
stop = {"gtol": GTOL, "max_iter": 50_000}
runs = {
    "gd": optim.gradient_descent(fun, start, lr=0.5, **stop),  # 1 / lambda_max
    "newton_armijo": optim.newton(fun, start, line_search="armijo", **stop),
    "bfgs_armijo": optim.bfgs(fun, start, line_search="armijo", **stop),
    "line_search": optim.gradient_descent_line_search(fun, start, **stop),
    "newton": optim.newton(fun, start, **stop),
    "bfgs": optim.bfgs(fun, start, **stop),
    "saddle_free_newton": optim.saddle_free_newton(fun, start, **stop),
    "trust_region": optim.trust_region(fun, start, radius=TR_RADIUS, **stop),
}
results.number("trust_radius", TR_RADIUS, "the trust region's initial radius")
results.number("start", args.start, "distance of the start from the minimum")
results.number("start_grad_norm", runs["gd"].grad_norms[0], "|grad f| at the start")
results.number("gtol", GTOL, "gradient tolerance")
results.number("well_lr", 0.5, "fixed step 1 / lambda_max at the minimum")
for name, trace in runs.items():
    print(f"{name:18s}: {trace.iterations:6d} iterations, {trace.evaluations:6d} evaluations")
    results.number(f"well_{name}_iterations", trace.iterations, f"{name} iterations from the plateau")
    results.number(f"well_{name}_evaluations", trace.evaluations, f"{name} evaluations from the plateau")
wolfe = ["line_search", "newton", "bfgs", "saddle_free_newton", "trust_region"]
slowest = max(runs[m].iterations for m in wolfe)
claim = "every method with the strong-Wolfe search, the trust region and saddle-free Newton converge, "
claim += "in under a tenth of the iterations of fixed-step descent, Newton with Armijo or BFGS with Armijo"
armijo = min(runs[m].iterations for m in ("gd", "newton_armijo", "bfgs_armijo"))
holds = all(runs[m].converged for m in runs) and 10 * slowest < armijo
results.claim("wolfe_leaves_plateau", holds, claim, {m: runs[m].iterations for m in runs})
searched = max(runs[m].iterations for m in wolfe[:4])
claim = "every method with the strong-Wolfe search crosses the plateau within 2 iterations"
results.claim("wolfe_two_steps", searched <= 2, claim, {"slowest": searched})
claim = "Every method with the strong-Wolfe search still crosses the plateau within 2 iterations."
holds = searched <= 2 and all(runs[m].converged for m in wolfe[:4])
results.claim("wolfe_still_crosses", holds, claim, {"slowest": searched}, answer=True)
claim = "with Armijo steps BFGS meets y^T s < 0 on the plateau; with strong-Wolfe steps never"
holds = min(runs["bfgs_armijo"].curvatures) < 0 < min(runs["bfgs"].curvatures)
results.claim("wolfe_curvature_positive", holds, claim, {"armijo": min(runs["bfgs_armijo"].curvatures)})
R0 = parser.get_default("start")  # answer 2: the crawl's growth from the default start, against its law
from_r0 = runs["gd"] if args.start == R0 else optim.gradient_descent(fun, np.array([R0, 0.0]), lr=0.5, **stop)
crawl = runs["gd"].iterations / from_r0.iterations  # at the default start: the run above, not run twice
law = np.exp(args.start**2 - R0**2) * R0**2 / args.start**2  # iterations ~ e^(r^2) / (2 r^2)
results.number("gd_crawl_growth", crawl, f"fixed-step iterations over those from r = {R0:g}", rtol=1e-9)
results.number("gd_crawl_law", law, f"e^(r^2) / r^2 over its value at r = {R0:g}", rtol=1e-9)
claim = f"That is within 20% of the factor e^(r²)/r² predicts, {law:.3g}."
results.claim("crawl_follows_law", abs(crawl / law - 1) < 0.2, claim, {"growth": crawl}, answer=True)
# np.exp is not correctly rounded everywhere: a count is machine-independent if no stop is borderline
margin = min(min(1 - t.grad_norms[-1] / GTOL, t.grad_norms[-2] / GTOL - 1) for t in runs.values())
claim = "every run on the well stops with its last two gradient norms at least 10% away from the tolerance"
results.claim("stops_not_borderline", margin > 0.1, claim, {"relative margin": margin})
results.number("far_grad_norm", 10 * np.exp(-25.0), "|grad f| at distance 5: 2 * 5 * exp(-25)")
# Farther out exp(-|x|^2) rounds to exactly 0: below half the smallest subnormal, 2^-1075 or 2^-150
for dtype, bits in ((np.float64, 1075), (np.float32, 150)):
    edge, name = np.sqrt(bits * np.log(2)), np.dtype(dtype).name  # exp(-edge^2) = 2^-bits
    results.number(f"underflow_{name}", edge, f"|x| from which exp(-|x|^2) is exactly 0 in {name}")
    gone = [np.exp(-(dtype(edge * k) ** 2)) for k in (0.999, 1.001)]  # this machine's exp, in dtype
    claim = f"in {name} exp(-|x|^2) is non-zero 0.1% inside |x| = {edge:.2f} and exactly 0 0.1% outside"
    results.claim(f"underflow_{name}_holds", gone[0] > 0 and gone[1] == 0, claim, {"exp": gone})

# %% [markdown]
# Why Newton fails here: the curvature along the way in. Hessian-vector products $Hv$ by central
# differences of the reverse-mode gradient (`gradlab.hvp`), against the hand-derived
# $H = e^{-|x|^2}(2I - 4xx^\top)$: negative radially, positive sideways, so Newton's model has no
# minimum. On a scaled-down well, $10^{-6} f$, from inside the bowl (positive curvature), Newton
# takes the same steps as on $f$: it is invariant to the scale, so a tiny gradient is no obstacle.

# %%
r = args.start
radial = hvp.curvature_along(fun, start, [1.0, 0.0])
sideways = hvp.curvature_along(fun, start, [0.0, 1.0])
exact_radial = np.exp(-(r**2)) * (2 - 4 * r**2)
results.number("radial_curvature", radial, "v^T H v along the way in, by hvp", rtol=1e-4)
results.number("sideways_curvature", sideways, "v^T H v sideways, by hvp", rtol=1e-4)
results.number("hvp_error", abs(radial / exact_radial - 1), "hvp vs the exact radial curvature", atol=1e-6)
results.claim("concave_way_in", radial < 0 < sideways, "f is concave along the way in", {"radial": radial})
inside, SCALE = np.array([0.6, 0.0]), 1e-6
tiny = optim.reverse_mode(lambda p: gaussian_well(p, SCALE))
newton_full, newton_tiny = optim.newton(fun, inside, gtol=GTOL), optim.newton(tiny, inside, gtol=SCALE * GTOL)
gap = max(np.abs(a - b).max() for a, b in zip(newton_full.path, newton_tiny.path, strict=True))
results.number("tiny_scale", SCALE, "scale of the scaled-down well")
results.number("tiny_start", inside[0], "x_1 of the start inside the bowl")
results.number("tiny_grad_norm", newton_tiny.grad_norms[0], "|grad| of the scaled well at (0.6, 0)")
results.number("tiny_newton_iterations", newton_tiny.iterations, "Newton on the scaled well")
results.number("tiny_first_step", np.linalg.norm(newton_tiny.path[1] - inside), "its first step's length")
holds = newton_tiny.iterations == newton_full.iterations and gap < 1e-9
claim = "Newton takes the same iterates (to 1e-9) on the well and on the well scaled by 1e-6"
results.claim("newton_scale_invariant", holds, claim, {"gap": gap})

fig, ax = plt.subplots()
labels = {"gd": "gd, fixed step", "line_search": "gd, Wolfe"} | {m: f"{m}, Wolfe" for m in ("newton", "bfgs")}
for name, trace in runs.items():
    distance = np.linalg.norm(np.array(trace.path), axis=1)
    style = "--" if name in ("gd", "newton_armijo", "bfgs_armijo") else "-"  # dashed: no Wolfe search
    ax.semilogy(np.arange(len(distance)) + 1, distance, style, label=labels.get(name, name.replace("_", " ")))
ax.set(title="Leaving a plateau where the gradient is tiny", xlabel="iteration + 1 (log scale)", xscale="log")
ax.set_ylabel("distance to the minimum (log scale)")
ax.legend(fontsize="small")
alt = f"From distance {args.start:g}, fixed-step descent and Newton and BFGS with Armijo backtracking "
alt += "from t = 1 crawl for hundreds of iterations; with the strong-Wolfe search, a trust region or "
alt += f"saddle-free Newton every method reaches the minimum within {slowest} iterations."
results.figure(fig, "well_distance", alt=alt)

# %% [markdown]
# ## Exactly zero
# $f(x) = \min(|x - c|^2, r^2)$ is constant, so its gradient is exactly $0$, outside the disc of
# radius $r$ around $c$. Is it backprop? At one point outside, four methods:

# %%
centre, radius = np.array([0.5, -0.3]), args.radius


def flat_outside(params):
    (x,) = params
    return ops.minimum(ops.sum((x - centre) ** 2), radius**2)


def flat_batch(X):
    """The same f on a batch of points (rows), in plain numpy, for the evolution strategy."""
    return np.minimum(np.sum((X - centre) ** 2, axis=-1), radius**2)


outside = np.array([-0.5, 0.6])
gradients = {name: method(flat_outside, [outside])[0] for name, method in check.METHODS.items()}
largest = max(float(np.abs(g).max()) for g in gradients.values())
print("gradient outside the basin:", ", ".join(f"{name} {g}" for name, g in gradients.items()))
results.number("flat_largest_gradient", largest, "largest |gradient entry| outside the basin, any method")
flat = optim.reverse_mode(flat_outside)
local = [
    optim.gradient_descent(flat, outside, 0.5, GTOL),
    optim.gradient_descent_line_search(flat, outside, gtol=GTOL),
    optim.momentum(flat, outside, 0.5, 0.9, GTOL),
    optim.newton(flat, outside, gtol=GTOL),
    optim.bfgs(flat, outside, GTOL),
    optim.trust_region(flat, outside, gtol=GTOL),
]
moved = max(float(np.linalg.norm(trace.x - outside)) for trace in local)
results.number("flat_largest_move", moved, "largest distance any local method moved")
holds = largest == 0 and moved == 0
results.claim("flat_stalls", holds, "every gradient is exactly 0 and no local method moves", {"moved": moved})

# %% [markdown]
# Two global strategies, on every seed. Restarts: BFGS from points drawn uniformly in
# $[-1, 1]^2$ until one lands in the basin, which a start does with probability $p = \pi r^2/4$
# (so the count is geometric with mean $1/p$). An evolution strategy: steps of length $r$ (so
# it cannot jump over the disc) against the gradient of the Gaussian smoothing
# $f_\sigma(x) = \mathbb{E}\,f(x + \sigma u)$, $\sigma = 1$, estimated from antithetic pairs of
# function values, $500\,(0.2/r)^2$ of them so that about as many samples land in the basin at any $r$.

# %%
in_basin = lambda x: flat_batch(x[None])[0] < radius**2  # noqa: E731
restarts, fractions, es_runs, cosines, restart_costs = [], [], [], [], []
DRAWS, samples = 20_000, int(np.ceil(PAIRS * (0.2 / radius) ** 2))
for seed in snippet.seeds(args.seed):
    rng, points = np.random.default_rng(seed), []
    while not points or not in_basin(trace.x):
        points.append(rng.uniform(-1, 1, size=2))
        trace = optim.bfgs(flat, points[-1], GTOL)
        restart_costs.append(trace.evaluations + (restart_costs.pop() if len(points) > 1 else 0))
    restarts.append(len(points))
    fractions.append(np.mean(np.linalg.norm(rng.uniform(-1, 1, (DRAWS, 2)) - centre, axis=1) < radius))
    es_runs.append(optim.evolution_strategy(flat_batch, outside, SIGMA, radius, samples, rng, in_basin))
    first = es_runs[-1].path[1] - outside
    cosines.append(first @ (centre - outside) / np.linalg.norm(first) / np.linalg.norm(centre - outside))
    if seed == snippet.seeds(args.seed)[0]:
        shown = np.array(points)
expected = 4 / (np.pi * radius**2)
results.spread("restarts", restarts, "restarts until one found the basin")
results.number("restarts_expected", expected, "expected restarts 4 / (pi r^2)")
results.number("radius", radius, "radius of the basin")
results.spread("hit_fraction", fractions, "fraction of the uniform draws inside the basin")
results.number("draws", DRAWS, "uniform draws for the hit fraction")
results.number("es_sigma", SIGMA, "the evolution strategy's smoothing sigma")
results.number("es_pairs", samples, "antithetic pairs per ES step, 500 (0.2 / r)^2")
p = np.pi * radius**2 / 4
results.number("hit_probability", p, "pi r^2 / 4")
sd = np.sqrt(p * (1 - p) / DRAWS)
holds = bool(np.all(np.abs(np.array(fractions) - p) < 4 * sd))
results.claim(
    "hit_fraction_matches", holds, "every seed's hit fraction is within 4 sd of p", {"f": fractions}
)
results.spread("es_iterations", [t.iterations for t in es_runs], "ES steps to enter the basin")
results.spread("es_evaluations", [t.evaluations for t in es_runs], "ES function evaluations")
results.spread("es_first_cosine", cosines, "cosine of ES's first step with the direction to c")
holds = all(t.converged for t in es_runs) and min(cosines) > 0.9
claim = "on every seed the evolution strategy's first step points at the basin (cosine > 0.9) "
claim += "and it enters the basin"
results.claim("es_finds_basin", holds, claim, {"cosines": cosines})
results.spread("restart_evaluations", restart_costs, "evaluations of all restarts until the basin")
holds = all(t.evaluations > cost for t, cost in zip(es_runs, restart_costs, strict=True))
claim = "on every seed the evolution strategy spends more evaluations than the restarts"
results.claim("es_costs_more", holds, claim, {"restarts": restart_costs})
print(f"restarts {restarts}, expected {expected:.1f}; ES steps {[t.iterations for t in es_runs]}")

fig, ax = plt.subplots(figsize=(4.6, 4.2))
ax.add_patch(plt.Circle(centre, radius, color="#009e73", alpha=0.35, label="basin (gradient nonzero)"))
ax.plot(shown[:-1, 0], shown[:-1, 1], "x", color="#d55e00", label="starts that stalled (gradient 0)")
ax.plot(*shown[-1], "o", color="#0072b2", label="the start that found the basin")
es_path = np.array(es_runs[0].path)
ax.plot(es_path[:, 0], es_path[:, 1], "s-", color="#cc79a7", ms=3, label="evolution strategy")
title = f"Seed {snippet.seeds(args.seed)[0]}: {len(shown)} restarts; ES from a flat point"
ax.set(title=title, xlabel="x1", ylabel="x2", xlim=(-1, 1), ylim=(-1, 1), aspect="equal")
ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1))
alt = "Uniform random starts in the square: every start outside the small basin stalls where it "
alt += "begins, because the gradient there is exactly zero, until one falls inside; the evolution "
alt += f"strategy walks from the flat point ({outside[0]:g}, {outside[1]:g}) straight into the basin."
results.figure(fig, "restarts", alt=alt)

# %%
results.save()
