"""Ill-conditioning: gradient descent zig-zags, and better optimizers use the same gradient

Gradient descent on a 2-D quadratic with condition number kappa (zig-zag, largest stable step,
iterations growing like kappa); a strong-Wolfe line search, the heavy ball, Newton and BFGS on it
and on the Rosenbrock valley, with gradients from the reverse-mode engine; Adam and RMSProp as
diagonal preconditioners, axis-aligned and rotated, on minibatches. Quoted by docs/small-gradients.md.
"""

# %% [markdown]
# $f(x) = \tfrac12 x^\top A x$ with $A = \mathrm{diag}(1, \kappa)$: minimum at $0$, condition
# number $\kappa$. Every optimizer gets $f$ and $\nabla f$ from `optim.reverse_mode(loss)` (backprop).

# %%
import matplotlib.pyplot as plt
import numpy as np
from gradlab import check, kappa_sweep, optim, snippet

parser = snippet.parser(__doc__)
parser.add_argument("--kappa", type=snippet.positive_float, default=100.0, help="condition number")
parser.add_argument("--tol", type=snippet.positive_float, default=1e-6, help="the sweep's relative tolerance")
args, results = snippet.parse(parser)
MAX_ITER, GTOL = 2000, 1e-6  # a cap, so that a crawling method ends; stop when |grad f| <= GTOL


def quadratic(kappa):
    """`fun` of f(x) = x^T diag(1, kappa) x / 2."""
    A = np.diag([1.0, kappa])
    return optim.reverse_mode(lambda params: 0.5 * (params[0] @ (A @ params[0])))


rosenbrock, rosenbrock_eigenvalues = optim.rosenbrock, optim.rosenbrock_eigenvalues
kappa, x0 = args.kappa, np.array([np.sqrt(args.kappa), 1.0])  # x0: both terms of f equal
lr_best = 2 / (1 + kappa)  # the best fixed step, 2 / (lambda_min + lambda_max)
gd = optim.gradient_descent(quadratic(kappa), x0, lr_best, gtol=GTOL, max_iter=MAX_ITER)
bfgs_path = optim.bfgs(quadratic(kappa), x0, gtol=GTOL)
results.number("kappa", kappa, "condition number of the quadratic")
results.number("lr_best", lr_best, "best fixed step 2 / (1 + kappa)")

# %% [markdown]
# With the best fixed step each coordinate is multiplied by $\pm(\kappa-1)/(\kappa+1)$ per step;
# the sign flips on the steep axis, so the path zig-zags across the valley.

# %%
fig, ax = plt.subplots()
grid = np.linspace(-1.15, 1.15, 200) * np.sqrt(2 * kappa)
X1, X2 = np.meshgrid(grid, grid / np.sqrt(kappa))
levels = np.geomspace(0.05, kappa, 8)
ax.contour(X1, X2, 0.5 * (X1**2 + kappa * X2**2), levels=levels, colors="#999999", linewidths=0.7)
path = np.array(gd.path[:60])
ax.plot(path[:, 0], path[:, 1], "o-", ms=2.5, lw=1, label=f"gradient descent, first {len(path) - 1} steps")
ax.plot(*np.array(bfgs_path.path).T, "s-", ms=4, label=f"BFGS, {bfgs_path.iterations} steps")
ax.set(title=f"Gradient descent zig-zags across a valley (kappa = {kappa:g})", xlabel="x1", ylabel="x2")
ax.legend(loc="upper left")
alt = "With the best fixed step, gradient descent flips across the narrow axis of the ellipses at every "
results.figure(fig, "zigzag", alt=alt + "step while creeping along the long axis; BFGS needs a few steps.")

# %% [markdown]
# The steep coordinate is multiplied by $1 - \eta\kappa$ per step, stable only for $\eta < 2/\lambda_{\max}$.

# %%
STEPS = 300
for factor, key in [(0.99, "below"), (1.0, "at"), (1.01, "above")]:
    run = optim.gradient_descent(quadratic(kappa), x0, factor * 2 / kappa, gtol=0.0, max_iter=STEPS)
    growth = np.linalg.norm(run.x) / np.linalg.norm(x0)
    results.number(f"distance_ratio_{key}", growth, f"|x_300| / |x_0| at {factor} x 2/lambda_max")
results.number("stable_steps", STEPS, "steps in the stability test")

# %% [markdown]
# Iterations to shrink $\|\nabla f\|$ by the factor `tol`, against the theory: each step of gradient
# descent with the best fixed step contracts by $(\kappa-1)/(\kappa+1)$, so
# $k = \ln(1/\mathrm{tol}) / \ln\frac{\kappa+1}{\kappa-1} \approx \frac{\kappa}{2}\ln(1/\mathrm{tol})$.

# %%
kappas = np.array([10.0, 30.0, 100.0, 300.0, 1000.0])
sweep = {"gradient descent": [], "heavy ball": [], "BFGS": []}
for k in kappas:  # the fixed-step methods take grad f = A x directly, vectorized (fast)
    A, start = np.diag([1.0, k]), np.array([np.sqrt(k), 1.0])
    lr_hb, beta_hb = optim.heavy_ball_parameters(1, k)
    sweep["gradient descent"] += [*optim.quadratic_iterations(A, start, "gd", [2 / (1 + k)], 0, args.tol)]
    sweep["heavy ball"] += [*optim.quadratic_iterations(A, start, "heavy_ball", [lr_hb], beta_hb, args.tol)]
    sweep["BFGS"].append(optim.bfgs(quadratic(k), start, args.tol * np.linalg.norm(A @ start)).iterations)
theory = np.log(1 / args.tol) / np.log((kappas + 1) / (kappas - 1))
slope = {n: np.polyfit(np.log(kappas), np.log(c), 1)[0] for n, c in sweep.items()}  # log-log
holds = 0.9 < slope["gradient descent"] < 1.1 and 0.4 < slope["heavy ball"] < 0.65
results.claim("sweep_slopes", holds, "iterations grow like kappa (GD) and sqrt(kappa) (heavy ball)", slope)
for key, value, about in (
    ("sweep_gd_iterations_max", sweep["gradient descent"][-1], "GD iterations at the largest kappa"),
    ("sweep_theory_max", theory[-1], "theory ln(1/tol)/ln((k+1)/(k-1)) at the largest kappa"),
    ("sweep_kappa_max", kappas[-1], "largest kappa of the sweep"),
    ("sweep_hb_iterations_max", sweep["heavy ball"][-1], "heavy-ball iterations at the largest kappa"),
    ("sweep_bfgs_iterations_max", sweep["BFGS"][-1], "BFGS iterations at the largest kappa"),
    ("sweep_tol", args.tol, "relative gradient tolerance of the sweep"),
):
    results.number(key, value, about)

fig, ax = plt.subplots()
for name, counts in sweep.items():
    ax.loglog(kappas, counts, "o-", label=name)
ax.loglog(kappas, theory, "k--", lw=1, label="theory for gradient descent")
ax.set(title="Iterations to tolerance grow with the condition number", ylabel="iterations (log scale)")
ax.set_xlabel("condition number kappa (log scale)")
ax.legend()
alt = "Gradient descent's iteration count grows in proportion to kappa and lies on the theory line; "
alt += "heavy-ball momentum grows like the square root of kappa; BFGS stays at a handful of iterations."
results.figure(fig, "iterations_vs_kappa", alt=alt)

# %% [markdown]
# The same optimizers on the quadratic and on the Rosenbrock function
# $f(x) = (1 - x_1)^2 + 100 (x_2 - x_1^2)^2$ from $(-1.2, 1)$, to $\|\nabla f\| \le$ `GTOL`.
# The fixed step and the heavy ball get their theory-optimal tuning from the Hessian's
# eigenvalues at the minimum; every line search is the same strong-Wolfe search.

# %%
rosen_min_eigs = rosenbrock_eigenvalues([1.0, 1.0])
problems = {"quadratic": (quadratic(kappa), x0, 1.0, kappa)}
problems["rosenbrock"] = (optim.reverse_mode(rosenbrock), np.array([-1.2, 1.0]), *rosen_min_eigs)
stop = {"gtol": GTOL, "max_iter": MAX_ITER}
methods = {
    "gd": lambda f, x, lo, hi: optim.gradient_descent(f, x, 2 / (lo + hi), **stop),
    "line_search": lambda f, x, lo, hi: optim.gradient_descent_line_search(f, x, **stop),
    "heavy_ball": lambda f, x, lo, hi: optim.momentum(f, x, *optim.heavy_ball_parameters(lo, hi), **stop),
    "newton": lambda f, x, lo, hi: optim.newton(f, x, **stop),
    "bfgs": lambda f, x, lo, hi: optim.bfgs(f, x, **stop),
}
traces = {("quadratic", "gd"): gd}  # the zigzag's run above is this one: the same call, not run twice
with np.errstate(over="ignore", invalid="ignore"):  # the heavy ball may diverge on Rosenbrock
    for problem, (fun, start, lo, hi) in problems.items():
        for method, run in methods.items():
            trace = traces[problem, method] = traces.get((problem, method)) or run(fun, start, lo, hi)
            for what in ("iterations", "evaluations", "converged"):
                results.number(f"{problem}_{method}_{what}", getattr(trace, what), f"{method} on {problem}")
results.number("max_iter", MAX_ITER, "iteration cap")
results.number("gtol", GTOL, "gradient tolerance of the table")
# x0 = (sqrt(kappa), 1), lr = 2/(1 + kappa): |grad f_k| = q^k |grad f_0|, k = ceil(ln(|g_0| / gtol) / ln(1/q))
gd_predicted = np.log(np.linalg.norm([np.sqrt(kappa), kappa]) / GTOL) / -np.log((kappa - 1) / (kappa + 1))
results.number("quadratic_gd_predicted", gd_predicted, "theory for the table's GD on the quadratic")
measured = traces["quadratic", "gd"].iterations
claim = "the fixed-step count on the quadratic is the predicted one, rounded up (or the cap)"
results.claim("gd_matches_theory", measured == min(np.ceil(gd_predicted), MAX_ITER), claim, {"k": measured})
bfgs_curvatures = np.concatenate([traces[p, "bfgs"].curvatures for p in problems])
claim, holds = "every BFGS step from the strong-Wolfe search has y^T s > 0", bool(np.all(bfgs_curvatures > 0))
results.claim("wolfe_keeps_bfgs_curvature", holds, claim, {"yTs": bfgs_curvatures})
it = {f"{p}_{m}": trace.iterations for (p, m), trace in traces.items()}
table = {m: traces["quadratic", m].iterations for m in ("gd", "heavy_ball", "bfgs")}  # the slider (below)
kappa_sweep.record(results, kappa, GTOL, MAX_ITER, table)
order = [it[f"quadratic_{m}"] for m in ("newton", "bfgs", "line_search", "heavy_ball", "gd")]
converged = [m for m in methods if traces["rosenbrock", m].converged]
diverged = not np.isfinite(traces["rosenbrock", "heavy_ball"].grad_norms[-1])
claim = "quadratic: Newton < BFGS < Wolfe descent < heavy ball < fixed step; Rosenbrock: only "
claim += "Newton and BFGS converge, the heavy ball diverges"
holds = bool(np.all(np.diff(order) > 0)) and converged == ["newton", "bfgs"] and diverged
results.claim("table_order", holds, claim, it)
k0 = parser.get_default("kappa")  # answer 1 compares BFGS with itself at the default kappa (2-D: cheap)
bfgs, bfgs0 = traces["quadratic", "bfgs"], optim.bfgs(quadratic(k0), np.array([np.sqrt(k0), 1.0]), gtol=GTOL)
others = all(traces["quadratic", m].converged for m in methods if m != "gd")
capped = gd_predicted > 10 * MAX_ITER and measured == MAX_ITER and not traces["quadratic", "gd"].converged
results.claim("gd_capped_others_converge", capped and others, "The prediction is over ten times the cap: "
              "fixed-step descent stops at the cap, short of the tolerance, and every other method reaches "
              "the tolerance before the cap.", answer=True)  # fmt: skip
holds = bfgs.iterations == bfgs0.iterations and bfgs.evaluations > bfgs0.evaluations
claim = f"BFGS takes as many iterations as at κ = {k0:g}, and more evaluations of f and ∇f."
results.claim("bfgs_cares_in_evaluations", holds, claim, answer=True)
starts = [x0 * optim.rotation(a)[0] for a in np.linspace(0.1, 1.5, 8)]  # (sqrt(kappa) cos a, -sin a)
wolfe_starts = [optim.gradient_descent_line_search(quadratic(kappa), x, **stop).iterations for x in starts]
for key, value in (("min", min(wolfe_starts)), ("max", max(wolfe_starts)), ("count", len(starts))):
    results.number(f"wolfe_starts_{key}", value, f"Wolfe descent from other starts on the quadratic: {key}")
gd_final_grad = traces["rosenbrock", "gd"].grad_norms[-1]
results.number("rosenbrock_gd_final_grad", gd_final_grad, "GD's |grad f| at the cap", rtol=1e-4)
results.number("rosenbrock_lambda_max", rosen_min_eigs[1], "Rosenbrock: largest eigenvalue at (1, 1)")
results.number("rosenbrock_lambda_min", rosen_min_eigs[0], "Rosenbrock: smallest eigenvalue at (1, 1)")
start_lambda_max = rosenbrock_eigenvalues([-1.2, 1.0])[1]
results.number("rosenbrock_start_lambda_max", start_lambda_max, "the largest at the start (-1.2, 1)")
lr_hb, beta_hb = optim.heavy_ball_parameters(*rosen_min_eigs)
results.number("hb_curvature_limit", 2 * (1 + beta_hb) / lr_hb, "heavy ball stable for curvature below")
hb = traces["rosenbrock", "heavy_ball"]
escape = 1 + max(k for k, g in enumerate(hb.grad_norms) if g <= hb.grad_norms[0])
results.number("hb_escape_iteration", escape, "heavy ball: from here on |grad f| > its start value")
results.number("hb_escape_lambda_max", rosenbrock_eigenvalues(hb.path[escape])[1], "lambda_max there")

fig, ax = plt.subplots()
for method in methods:  # a diverged run's infinite norms are not drawn
    norms = np.array(traces["rosenbrock", method].grad_norms)
    label = {"gd": "gd, fixed step", "line_search": "gd, Wolfe"}.get(method, method.replace("_", " "))
    ax.semilogy(np.where(np.isfinite(norms), norms, np.nan), label=label)
ax.set(ylim=(1e-9, 1e5), xlim=(0, MAX_ITER), ylabel="|grad f| (log scale)")  # the heavy ball leaves it
ax.set(title="Rosenbrock: the same gradients, used five ways", xlabel="iteration", xscale="symlog")
ax.legend()
iterations = {m: traces["rosenbrock", m].iterations for m in methods}
alt = f"On the Rosenbrock valley Newton and BFGS reach |grad f| <= {GTOL:g} in {iterations['newton']} and "
alt += f"{iterations['bfgs']} iterations; fixed-step and line-search descent are still above it at the cap "
alt += f"of {MAX_ITER}; the heavy ball tuned at the minimum diverges after {iterations['heavy_ball']}."
results.figure(fig, "rosenbrock_grad_norms", alt=alt)

# %% [markdown]
# Tuned against tuned: every method on the same grid of 15 step sizes (the heavy ball also on
# three values of beta); then Adam and RMSProp, diagonal preconditioners, on the quadratic as it
# is (axis-aligned) and rotated by 45 degrees, which leaves gradient descent unchanged.

# %%
lr_grid, grid = np.geomspace(1e-3, 10**0.5, 15), {}  # 4 per decade
results.number("grid_size", lr_grid.size, "step sizes on the tuning grid")
for angle, label in ((0.0, "axis"), (np.pi / 4, "rotated")):
    R = optim.rotation(angle)
    for method, count in optim.grid_tuned_iterations(R @ np.diag([1, kappa]) @ R.T, R @ x0, lr_grid).items():
        grid[label, method] = results.number(f"grid_{label}_{method}", count, f"best on the grid: {method}")
holds = all(grid["rotated", m] > 1.1 * grid["axis", m] for m in ("rmsprop", "adam"))
claim = "Adam and RMSProp need more iterations on the rotated quadratic; gradient descent the same"
results.claim("rotation_hurts_adaptive", holds and grid["rotated", "gd"] == grid["axis", "gd"], claim, grid)
theory = optim.quadratic_iterations(np.diag([1, kappa]), x0, "gd", [lr_best], max_iter=5000).min()
results.number("grid_axis_gd_theory_step", theory, "GD at 2 / (1 + kappa), with the grid's stopping rule")
holds = grid["axis", "heavy_ball"] < grid["axis", "gd"] < theory or grid["axis", "gd"] == np.inf
claim = "on the grid the heavy ball beats GD, and GD beats the theory-optimal step's count (or GD "
claim += "never converges within the grid's cap, possible only at kappa far above the default)"
results.claim("grid_tuning", bool(holds), claim, {**grid, "theory": theory})

# %% [markdown]
# Minibatches: least squares whose features' scales span a factor 100 (Hessian condition
# number about 10^4), minibatch SGD against Adam, each with its best step on the same grid (best
# median over seeds), on every seed of `snippet.seeds`; then with the features rotated.

# %%
stochastic, ratio, seeds, inside_grid = {}, {}, snippet.seeds(args.seed), True
for key, value in optim.MINIBATCH.items():
    results.number(f"minibatch_{key}", value, "design of the minibatch experiment")
for rot in ("axis", "rotated"):
    for method in ("sgd", "adam"):
        stochastic[rot, method], lr = optim.tuned_minibatch_losses(seeds, rot == "rotated", method, lr_grid)
        key = f"minibatch_{rot}_{method}"
        results.spread(key, stochastic[rot, method], f"excess loss, {method}", rtol=1e-3)
        inside_grid = results.number(f"{key}_lr", lr, "tuned step") < lr_grid[-1] and inside_grid
    ratio[rot] = np.median(stochastic[rot, "sgd"]) / np.median(stochastic[rot, "adam"])
    results.number(f"minibatch_{rot}_ratio", ratio[rot], "median SGD / median Adam", rtol=1e-3)
values = {f"{m}_{r}": v for (r, m), v in stochastic.items()}
claim = "with axis-aligned features, Adam's median excess loss is below a third of SGD's "
claim += "(steps inside the grid)"
results.claim("adam_wins_axis_aligned_minibatch", ratio["axis"] > 3 and inside_grid, claim, values)
claim = "with rotated features, Adam's and SGD's medians lie within a factor 2 of each other"
results.claim("adam_not_better_rotated_minibatch", 0.5 < ratio["rotated"] < 2, claim, values)

# %% [markdown]
# Is it backprop? The gradient at one BFGS iterate on the Rosenbrock function, by reverse mode,
# forward mode, central differences and the complex step.

# %%
agreement = check.compare(rosenbrock, [traces["rosenbrock", "bfgs"].path[5]])
for method, atol in (("forward", 1e-13), ("central", 1e-6), ("complex", 1e-13)):
    error = agreement[f"reverse vs {method}"]
    results.number(f"backprop_vs_{method}", error, f"reverse vs {method}", atol=atol)
results.save()
