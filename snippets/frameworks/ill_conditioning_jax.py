"""Small gradients in JAX: jax.grad in a plain loop, and BFGS from jax.scipy.optimize.

The quadratic f(x) = x^T diag(1, kappa) x / 2, the Rosenbrock valley and the Gaussian well
1 - exp(-|x|^2) of snippets/ill_conditioning.py and snippets/plateaus.py, in float64: gradient
descent and the heavy ball written as a loop over a jitted jax.grad step, with gradlab's tuning;
BFGS with JAX's strong-Wolfe search. Quoted by docs/small-gradients.md.
"""

# %%
import sys
from pathlib import Path

if "__file__" in globals():  # run as a script: gradlab lives one folder up
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax

jax.config.update("jax_enable_x64", True)  # float64, as gradlab
import jax.numpy as jnp
import jax.scipy.optimize
import numpy as np
from gradlab import optim, snippet

parser = snippet.parser(__doc__)
args, results = snippet.parse(parser)
for part, name in zip(jax.__version__.split(".")[:3], ("major", "minor", "patch"), strict=True):
    results.number(f"jax_{name}", int(part), f"JAX version, {name}")
KAPPA, GTOL, MAX_ITER = 100.0, 1e-6, 2000  # ill_conditioning.py's defaults

# %% [markdown]
# ## The loop: one jitted step, $x_{k+1} = x_k - \eta\nabla f(x_k) + \beta(x_k - x_{k-1})$
# ($\beta = 0$: gradient descent). optax is not needed for two lines of arithmetic.

# %%
A = jnp.array([1.0, KAPPA])


def quadratic(x):
    return 0.5 * jnp.sum(x * A * x)


def rosenbrock(x):
    return (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2


def well(x):
    return 1 - jnp.exp(-jnp.sum(x * x))


# --8<-- [start:core]
def descent(f, x0, lr, beta=0.0, gtol=GTOL, max_iter=MAX_ITER):
    """Heavy ball (beta = 0: gradient descent) until ||grad f|| <= gtol; returns (steps, ||grad f||)."""
    grad = jax.jit(jax.grad(f))
    x = previous = jnp.asarray(x0)
    for k in range(max_iter + 1):
        g = grad(x)
        norm = float(jnp.linalg.norm(g))
        if norm <= gtol or not np.isfinite(x).all() or k == max_iter:
            return k, norm
        x, previous = x - lr * g + beta * (x - previous), x


def bfgs(f, x0, gtol=GTOL):
    """jax.scipy.optimize.minimize: BFGS, strong-Wolfe search, stops on max|g_i| < gtol.
    minimize ignores its `tol` argument: the tolerance goes in `options`; the search gets
    gradlab's budget of 60 trials (JAX's default: 10)."""
    options = {"gtol": gtol / 2**0.5, "line_search_maxiter": 60}
    minimize = jax.jit(lambda x0: jax.scipy.optimize.minimize(f, x0, method="BFGS", options=options))
    result = minimize(jnp.asarray(x0))
    return int(result.nit), int(result.nfev), float(jnp.linalg.norm(result.jac)), int(result.status), result


# --8<-- [end:core]


# %% [markdown]
# ## Fixed step and heavy ball: the same iterates as gradlab

# %%
lr_hb, beta_hb = optim.heavy_ball_parameters(1.0, KAPPA)
rosen_eigs = optim.rosenbrock_eigenvalues([1.0, 1.0])
x0, rosen0 = [np.sqrt(KAPPA), 1.0], [-1.2, 1.0]
runs = {
    "quadratic_gd_iterations": descent(quadratic, x0, 2 / (1 + KAPPA))[0],
    "quadratic_heavy_ball_iterations": descent(quadratic, x0, lr_hb, beta_hb)[0],
    "rosenbrock_heavy_ball_iterations": descent(
        rosenbrock, rosen0, *optim.heavy_ball_parameters(*rosen_eigs)
    )[0],
}
exact = "float64; the same arithmetic step by step, and no stop is borderline: the counts are equal"
for key, value in runs.items():
    results.twin(
        key, value, f"jax.grad loop: {key}", of=f"ill_conditioning.{key}", rtol=0, atol=0, reason=exact
    )
gd_rosen = descent(rosenbrock, rosen0, 2 / rosen_eigs.sum())
results.twin(
    "rosenbrock_gd_final_grad", gd_rosen[1], "||grad f|| after 2,000 steps on Rosenbrock",
    of="ill_conditioning.rosenbrock_gd_final_grad", rtol=1e-9, atol=0,
    reason="float64; the same formula, compiled by XLA, rounded in another order over 2,000 steps",
)  # fmt: skip
well_gd = descent(well, [3.0, 0.0], 0.5, gtol=1e-8, max_iter=50_000)[0]
results.twin(
    "well_gd_iterations", well_gd, "gradient descent on the Gaussian well from (3, 0)",
    of="plateaus.well_gd_iterations", rtol=0, atol=0,
    reason="an integer; plateaus.py checks that no stop is borderline (exp's last bit)",
)  # fmt: skip

# %% [markdown]
# ## BFGS with JAX's strong-Wolfe search (jax.scipy.optimize, the same $c_1$, $c_2$ as gradlab)
# `status` 0 is success; 2 + the line search's status is a line-search failure: 3 (its zoom stage
# failed) or 5 (it reached its iteration cap, which here is gradlab's 60 trials).

# %%
problems = {"quadratic": (quadratic, x0, GTOL), "rosenbrock": (rosenbrock, rosen0, GTOL)}
problems["well"] = (well, [3.0, 0.0], 1e-8)
bfgs_runs = {name: bfgs(f, start, gtol) for name, (f, start, gtol) in problems.items()}
for name, (iterations, evaluations, norm, status, _) in bfgs_runs.items():
    print(f"BFGS on {name:10s}: {iterations:3d} iterations, {evaluations:3d} evaluations, |g| {norm:.1e}, "
          f"status {status}")  # fmt: skip
    results.number(f"bfgs_{name}_iterations", iterations, f"jax.scipy BFGS iterations on {name}")
    results.number(f"bfgs_{name}_evaluations", evaluations, f"jax.scipy BFGS evaluations on {name}")
    results.number(f"bfgs_{name}_status", status, f"jax.scipy BFGS status on {name} (0: success)")
    results.number(f"bfgs_{name}_grad", norm, f"jax.scipy BFGS: final ||grad f|| on {name}", rtol=1e-4)
quad = bfgs_runs["quadratic"]
results.claim(
    "bfgs_quadratic", quad[3] == 0 and quad[2] <= GTOL and quad[0] < 0.1 * runs["quadratic_gd_iterations"],
    "On the quadratic, JAX's BFGS converges in under a tenth of fixed-step descent's iterations.",
    {"run": quad[:4]},
)  # fmt: skip
failed = [name for name in ("rosenbrock", "well") if bfgs_runs[name][3] == 3]
stuck = all(bfgs_runs[name][2] > 100 * problems[name][2] for name in failed)
results.claim(
    "bfgs_zoom_fails", failed == ["rosenbrock", "well"] and stuck and gd_rosen[0] == MAX_ITER,
    "On Rosenbrock and on the well, JAX's BFGS stops with a zoom failure (status 3) while "
    "its gradient norm is still over 100 times the tolerance; fixed-step descent stops at the cap on "
    "Rosenbrock.",
    {name: bfgs_runs[name][:4] for name in problems},
)  # fmt: skip
rosen = bfgs_runs["rosenbrock"]
results.claim(
    "same_as_pr_40228", rosen[0] == 8 and rosen[3] == 3 and abs(float(rosen[4].fun) - 1.74729) < 1e-5,
    "this run stops exactly where the pull request's does: after 8 iterations, status 3, f = 1.74729.",
    {"nit": rosen[0], "status": rosen[3], "fun": float(rosen[4].fun)},
)  # fmt: skip


def minimize_jitted(f, x0, **kwargs):  # one compiled program for the whole run, as bfgs() does
    return jax.jit(lambda x0: jax.scipy.optimize.minimize(f, x0, method="BFGS", **kwargs))(jnp.asarray(x0))


# from (5, 0) on the well with tol = 1e-300: a BFGS that honoured it could not report success there
ignored = minimize_jitted(well, [5.0, 0.0], tol=1e-300)


def program(**kwargs):  # the lowered program of that call, without compiling it
    call = jax.jit(lambda x0: jax.scipy.optimize.minimize(well, x0, method="BFGS", **kwargs))
    return call.lower(jnp.asarray([5.0, 0.0])).as_text()


same_program = program(tol=1e-300) == program() != program(options={"gtol": 1e-300})
grad = float(np.abs(ignored.jac).max())
results.claim(
    "tol_ignored",
    same_program and int(ignored.nit) == 0 and bool(ignored.success) and grad > 1e-100,
    "With tol = 1e-300 the program JAX compiles is the one without tol (with gtol = 1e-300 it is not), "
    f"and it reports success from (5, 0) without a step, at a gradient of {grad:.1e}.",
    {"same_program": same_program, "iterations": int(ignored.nit), "max_abs_grad": grad},
)  # fmt: skip
strict = minimize_jitted(well, [5.0, 0.0], options={"gtol": 1e-12})
moved = float(np.linalg.norm(np.asarray(strict.x) - [5.0, 0.0]))
results.claim(
    "gtol_below_gradient_fails",
    int(strict.status) == 3 and not bool(strict.success) and moved < 1e-9,
    f"with gtol = 1e-12, below that gradient of {grad:.1e}, it no longer reports success, but its line "
    "search fails (status 3) with x moved by less than 1e-9.",
    {"status": int(strict.status), "iterations": int(strict.nit), "moved": moved},
)  # fmt: skip
far = minimize_jitted(well, [5.0, 0.0])  # default tol: gtol 1e-5 (the program of the tol=1e-300 call)
results.number("far_bfgs_iterations", int(far.nit), "jax.scipy BFGS iterations from (5, 0), default tol")
results.claim(
    "bfgs_stops_on_plateau", int(far.nit) == 0 and bool(far.success) and np.array_equal(far.x, [5.0, 0.0]),
    "From (5, 0) on the well, jax.scipy.optimize.minimize's BFGS with its default tolerance reports "
    "success without a step.",
    {"iterations": int(far.nit), "x": np.asarray(far.x), "success": bool(far.success)},
)  # fmt: skip

# %%
results.save()
