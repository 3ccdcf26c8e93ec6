"""Ill-conditioning: gradient descent zig-zags, and better optimizers use the same gradient

Gradient descent on a two-dimensional quadratic with condition number kappa: the zig-zag path,
the largest stable step, iterations growing in proportion to kappa; then line search, heavy-ball
momentum, Newton and BFGS on the same quadratic and on the Rosenbrock valley, all fed gradients
from the same reverse-mode engine. Quoted by docs/small-gradients.md.
"""

# %% [markdown]
# The quadratic $f(x) = \tfrac12 x^\top A x$ with $A = \mathrm{diag}(1, \kappa)$ has its minimum
# at $0$; the eigenvalues $\lambda_{\min} = 1$ and $\lambda_{\max} = \kappa$ make $\kappa$ its
# condition number. Every optimizer below gets $f$ and $\nabla f$ from one function, `fun`
# (`optim.reverse_mode(loss)`), which runs the engine's reverse mode (backprop).

# %%
import matplotlib.pyplot as plt
import numpy as np
from gradlab import check, optim, snippet

parser = snippet.parser(__doc__)
parser.add_argument("--kappa", type=snippet.positive_float, default=100.0, help="condition number")
parser.add_argument("--tol", type=snippet.positive_float, default=1e-6, help="the sweep's relative tolerance")
args, results = snippet.parse(parser)
rng = np.random.default_rng(args.seed)
MAX_ITER = 2000  # a cap, so that a method that crawls ends in bounded time
GTOL = 1e-6  # stop when |grad f| <= GTOL


def quadratic(kappa):
    """`fun` of f(x) = x^T diag(1, kappa) x / 2."""
    A = np.diag([1.0, kappa])
    return optim.reverse_mode(lambda params: 0.5 * (params[0] @ (A @ params[0])))


def rosenbrock(params):
    (x,) = params
    return (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2


def rosenbrock_eigenvalues(x):
    """Eigenvalues (ascending) of Rosenbrock's Hessian at x, differentiated by hand."""
    return np.linalg.eigvalsh([[2 - 400 * (x[1] - 3 * x[0] ** 2), -400 * x[0]], [-400 * x[0], 200]])


kappa = args.kappa
x0 = np.array([np.sqrt(kappa), 1.0])  # on the level set's diagonal: both terms of f equal
lr_best = 2 / (1 + kappa)  # the best fixed step, 2 / (lambda_min + lambda_max)
gd = optim.gradient_descent(quadratic(kappa), x0, lr_best, gtol=GTOL, max_iter=MAX_ITER)
bfgs_path = optim.bfgs(quadratic(kappa), x0, gtol=GTOL)
results.number("kappa", kappa, "condition number of the quadratic")
results.number("lr_best", lr_best, "best fixed step 2 / (1 + kappa)")
results.number("contraction", (kappa - 1) / (kappa + 1), "contraction per step (kappa - 1) / (kappa + 1)")

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
bfgs_xy = np.array(bfgs_path.path)
ax.plot(bfgs_xy[:, 0], bfgs_xy[:, 1], "s-", ms=4, label=f"BFGS, {bfgs_path.iterations} steps")
ax.set(title=f"Gradient descent zig-zags across a valley (kappa = {kappa:g})", xlabel="x1", ylabel="x2")
ax.legend(loc="upper left")
results.figure(
    fig,
    "zigzag",
    alt="With the best fixed step, gradient descent flips across the narrow axis "
    "of the ellipses at every step while creeping along the long axis; BFGS reaches the "
    "minimum in a few steps.",
)

# %% [markdown]
# The steep coordinate is multiplied by $1 - \eta\kappa$ per step: stable only for
# $\eta < 2/\lambda_{\max}$. Just below, at, and just above that step:

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
for k in kappas:
    fun, start = quadratic(k), np.array([np.sqrt(k), 1.0])
    gtol = args.tol * np.linalg.norm(fun(start)[1])
    sweep["gradient descent"].append(optim.gradient_descent(fun, start, 2 / (1 + k), gtol, 20_000).iterations)
    sweep["heavy ball"].append(
        optim.momentum(fun, start, *optim.heavy_ball_parameters(1, k), gtol, 20_000).iterations
    )
    sweep["BFGS"].append(optim.bfgs(fun, start, gtol).iterations)
theory = np.log(1 / args.tol) / np.log((kappas + 1) / (kappas - 1))
for k, measured, predicted in zip(kappas, sweep["gradient descent"], theory, strict=True):
    print(f"kappa {k:6.0f}: gradient descent {measured:5d} iterations, theory {predicted:8.1f}")
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
ax.set(
    title="Iterations to tolerance grow with the condition number",
    xlabel="condition number kappa (log scale)",
    ylabel="iterations (log scale)",
)
ax.legend()
results.figure(
    fig,
    "iterations_vs_kappa",
    alt="Gradient descent's iteration count grows in proportion to kappa "
    "and lies on the theory line; heavy-ball momentum grows like the square root of kappa; "
    "BFGS stays at a handful of iterations.",
)

# %% [markdown]
# The same five optimizers on the quadratic and on the Rosenbrock function
# $f(x) = (1 - x_1)^2 + 100 (x_2 - x_1^2)^2$ from $(-1.2, 1)$, to $\|\nabla f\| \le$ `GTOL`.
# Fixed steps and momentum are tuned with the Hessian's eigenvalues at the minimum.

# %%
rosen_min_eigs = rosenbrock_eigenvalues([1.0, 1.0])
problems = {
    "quadratic": (quadratic(kappa), x0, 1.0, kappa),
    "rosenbrock": (optim.reverse_mode(rosenbrock), np.array([-1.2, 1.0]), *rosen_min_eigs),
}
stop = {"gtol": GTOL, "max_iter": MAX_ITER}
methods = {
    "gd": lambda f, x, lo, hi: optim.gradient_descent(f, x, 1 / hi, **stop),
    "line_search": lambda f, x, lo, hi: optim.gradient_descent_line_search(f, x, **stop),
    "heavy_ball": lambda f, x, lo, hi: optim.momentum(f, x, *optim.heavy_ball_parameters(lo, hi), **stop),
    "newton": lambda f, x, lo, hi: optim.newton(f, x, **stop),
    "bfgs": lambda f, x, lo, hi: optim.bfgs(f, x, **stop),
}
traces = {}
with np.errstate(over="ignore", invalid="ignore"):  # the heavy ball may diverge on Rosenbrock
    for problem, (fun, start, lo, hi) in problems.items():
        for method, run in methods.items():
            trace = traces[problem, method] = run(fun, start, lo, hi)
            for what in ("iterations", "evaluations", "converged"):
                key = f"{problem}_{method}_{what}"
                results.number(key, getattr(trace, what), f"{method} on {problem}: {what}")
            status = "converged" if trace.converged else "stopped  "
            print(
                f"{problem:10s} {method:11s}: {status} after {trace.iterations:5d} iterations, "
                f"{trace.evaluations:5d} evaluations, |grad f| {trace.grad_norms[-1]:.1e}"
            )
results.number("max_iter", MAX_ITER, "iteration cap")
results.number("gtol", GTOL, "gradient tolerance of the table")
gd_predicted = np.log(np.sqrt(kappa) / GTOL) / -np.log1p(-1 / kappa)  # step 1/kappa from x0
results.number("quadratic_gd_predicted", gd_predicted, "theory for the table's GD on the quadratic")
gd_final_grad = traces["rosenbrock", "gd"].grad_norms[-1]
results.number("rosenbrock_gd_final_grad", gd_final_grad, "GD's |grad f| at the cap", rtol=1e-4)
results.number("rosenbrock_lambda_max", rosen_min_eigs[1], "Rosenbrock: largest Hessian eigenvalue at (1, 1)")
results.number(
    "rosenbrock_lambda_min", rosen_min_eigs[0], "Rosenbrock: smallest Hessian eigenvalue at (1, 1)"
)
start_lambda_max = rosenbrock_eigenvalues([-1.2, 1.0])[1]
results.number("rosenbrock_start_lambda_max", start_lambda_max, "the largest at the start (-1.2, 1)")
lr_hb, beta_hb = optim.heavy_ball_parameters(*rosen_min_eigs)
results.number("hb_curvature_limit", 2 * (1 + beta_hb) / lr_hb, "heavy ball stable for curvature below")
hb = traces["rosenbrock", "heavy_ball"]
escape = 1 + max(k for k, g in enumerate(hb.grad_norms) if g <= hb.grad_norms[0])
results.number("hb_escape_iteration", escape, "heavy ball: from here on |grad f| > its start value")
results.number("hb_escape_lambda_max", rosenbrock_eigenvalues(hb.path[escape])[1], "lambda_max there")

fig, ax = plt.subplots()
for method in methods:
    norms = np.array(traces["rosenbrock", method].grad_norms)
    ax.semilogy(np.where(np.isfinite(norms), norms, np.nan), label=method.replace("_", " "))
ax.set(
    title="Rosenbrock: the same gradients, used five ways",
    xlabel="iteration",
    ylabel="|grad f| (log scale)",
    xscale="symlog",
)
ax.legend()
results.figure(
    fig,
    "rosenbrock_grad_norms",
    alt=f"On the Rosenbrock valley Newton and BFGS reach |grad f| <= {GTOL:g} in "
    f"{traces['rosenbrock', 'newton'].iterations} and {traces['rosenbrock', 'bfgs'].iterations} iterations; "
    f"fixed-step and line-search gradient descent are still above it at the cap of {MAX_ITER} iterations; "
    f"the heavy ball tuned at the minimum diverges after {traces['rosenbrock', 'heavy_ball'].iterations}.",
)

# %% [markdown]
# Is it backprop? The gradient at one BFGS iterate on the Rosenbrock function, by reverse mode,
# forward mode, central differences and the complex step.

# %%
iterate = traces["rosenbrock", "bfgs"].path[5]
agreement = check.compare(rosenbrock, [iterate])
for method, about, atol in (
    ("forward", "reverse vs forward", 1e-13),
    ("central", "reverse vs central differences", 1e-6),
    ("complex", "reverse vs complex step", 1e-13),
):
    results.number(f"backprop_vs_{method}", agreement[f"reverse vs {method}"], about, atol=atol)

# %%
results.save()
