"""Small gradients in PyTorch: torch.optim.SGD, SGD with momentum and L-BFGS on the same problems.

The quadratic f(x) = x^T diag(1, kappa) x / 2, the Rosenbrock valley and the Gaussian well
1 - exp(-|x|^2) of snippets/ill_conditioning.py and snippets/plateaus.py, in float64, with the
same tuning: the fixed step and the heavy ball from the Hessian's eigenvalues at the minimum,
L-BFGS with PyTorch's strong-Wolfe search. Quoted by docs/small-gradients.md.
"""

# %%
import sys
from pathlib import Path

if "__file__" in globals():  # run as a script: gradlab lives one folder up
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
import torch
from gradlab import optim, snippet

parser = snippet.parser(__doc__)
args, results = snippet.parse(parser)
torch.set_num_threads(1)
torch.set_default_dtype(torch.float64)  # as gradlab
for part, name in zip(
    torch.__version__.split("+")[0].split(".")[:3], ("major", "minor", "patch"), strict=True
):
    results.number(f"torch_{name}", int(part), f"PyTorch version, {name}")
KAPPA, GTOL, MAX_ITER = 100.0, 1e-6, 2000  # ill_conditioning.py's defaults

# %% [markdown]
# ## The training loop a practitioner writes
# `torch.optim.SGD(momentum=beta)` keeps a buffer $b \leftarrow \beta b + g$ and steps
# $-\eta b$: exactly Polyak's heavy ball $x_{k+1} = x_k - \eta g_k + \beta(x_k - x_{k-1})$.
# `torch.optim.LBFGS` runs its whole loop inside one `step(closure)`.

# %%
A = torch.tensor([1.0, KAPPA])


def quadratic(x):
    return 0.5 * (x * A * x).sum()


def rosenbrock(x):
    return (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2


def well(x):
    return 1 - torch.exp(-(x * x).sum())


# --8<-- [start:core]
def sgd(f, x0, lr, momentum=0.0, gtol=GTOL, max_iter=MAX_ITER):
    """Steps until ||grad f|| <= gtol (or non-finite, or the cap); returns (steps, ||grad f||)."""
    x = torch.tensor(x0, requires_grad=True)
    opt = torch.optim.SGD([x], lr=lr, momentum=momentum)
    for k in range(max_iter + 1):
        opt.zero_grad()
        f(x).backward()
        norm = x.grad.norm().item()
        if norm <= gtol or not torch.isfinite(x).all() or k == max_iter:
            return k, norm
        opt.step()


def lbfgs(f, x0, gtol=GTOL, max_iter=MAX_ITER, **options):
    """One LBFGS.step runs the whole loop; returns (iterations, evaluations, ||grad f||, x)."""
    x = torch.tensor(x0, requires_grad=True)
    options = {"tolerance_grad": gtol / 2**0.5, "tolerance_change": 0.0, **options}  # max|g_i| test
    opt = torch.optim.LBFGS([x], max_iter=max_iter, line_search_fn="strong_wolfe", **options)

    def closure():
        opt.zero_grad()
        loss = f(x)
        loss.backward()
        return loss

    opt.step(closure)
    x.grad = None
    f(x).backward()
    state = opt.state[x]
    return state.get("n_iter", 0), state.get("func_evals", 1), x.grad.norm().item(), x.detach().numpy()


# --8<-- [end:core]


# %% [markdown]
# ## Fixed step and heavy ball: the same iterates as gradlab

# %%
lr_hb, beta_hb = optim.heavy_ball_parameters(1.0, KAPPA)
rosen_eigs = optim.rosenbrock_eigenvalues([1.0, 1.0])
x0, rosen0 = [np.sqrt(KAPPA), 1.0], [-1.2, 1.0]
runs = {
    "quadratic_gd_iterations": sgd(quadratic, x0, 2 / (1 + KAPPA))[0],
    "quadratic_heavy_ball_iterations": sgd(quadratic, x0, lr_hb, beta_hb)[0],
    "rosenbrock_heavy_ball_iterations": sgd(rosenbrock, rosen0, *optim.heavy_ball_parameters(*rosen_eigs))[0],
}
exact = "float64; the same arithmetic step by step, and no stop is borderline: the counts are equal"
for key, value in runs.items():
    results.twin(
        key, value, f"torch.optim.SGD: {key}", of=f"ill_conditioning.{key}", rtol=0, atol=0, reason=exact
    )
gd_rosen = sgd(rosenbrock, rosen0, 2 / rosen_eigs.sum())
results.twin(
    "rosenbrock_gd_final_grad", gd_rosen[1], "SGD's ||grad f|| after 2,000 steps on Rosenbrock",
    of="ill_conditioning.rosenbrock_gd_final_grad", rtol=1e-9, atol=0,
    reason="float64; the same formula, rounded in another order over 2,000 steps",
)  # fmt: skip
well_gd = sgd(well, [3.0, 0.0], 0.5, gtol=1e-8, max_iter=50_000)[0]
results.twin(
    "well_gd_iterations", well_gd, "SGD on the Gaussian well from (3, 0)", of="plateaus.well_gd_iterations",
    rtol=0, atol=0, reason="an integer; plateaus.py checks that no stop is borderline (np.exp's last bit)",
)  # fmt: skip

# %% [markdown]
# ## L-BFGS with PyTorch's strong-Wolfe search
# PyTorch's L-BFGS scales its *first* trial step to $1/\|g\|_1$, so from a tiny gradient it
# starts with a step of length about 1, and stops when $\max_i |g_i| \le$ `tolerance_grad`
# (default $10^{-7}$), not on $\|g\|_2$.

# %%
problems = {"quadratic": (quadratic, x0, GTOL), "rosenbrock": (rosenbrock, rosen0, GTOL)}
problems["well"] = (well, [3.0, 0.0], 1e-8)
lbfgs_runs = {name: lbfgs(f, start, gtol) for name, (f, start, gtol) in problems.items()}
for name, (iterations, evaluations, norm, _x) in lbfgs_runs.items():
    print(f"L-BFGS on {name:10s}: {iterations:3d} iterations, {evaluations:3d} evaluations, |g| {norm:.1e}")
    results.number(f"lbfgs_{name}_iterations", iterations, f"L-BFGS iterations on {name}")
    results.number(f"lbfgs_{name}_evaluations", evaluations, f"L-BFGS evaluations on {name}")
converged = all(norm <= problems[name][2] for name, (_, _, norm, _) in lbfgs_runs.items())
fast = max(lbfgs_runs[name][0] for name in problems) < 0.1 * min(runs["quadratic_gd_iterations"], well_gd)
results.claim(
    "lbfgs_converges", converged and fast and gd_rosen[0] == MAX_ITER,
    "L-BFGS with the strong-Wolfe search reaches the tolerance on all three problems, each in under a tenth "
    "of fixed-step SGD's iterations on the quadratic and the well; on Rosenbrock SGD stops at the cap.",
    {name: run[:3] for name, run in lbfgs_runs.items()},
)  # fmt: skip

# %% [markdown]
# ## Iterations or evaluations: L-BFGS against gradlab's BFGS
# gradlab's BFGS tries $t = 1$ along $-\nabla f$ first, far too long on the quadratic, so its
# search zooms by cubic interpolation (exact on a quadratic) to the minimizer along the line.
# PyTorch's first trial, $t = 1/\|g\|_1$, already meets both Wolfe conditions and is taken.
# Counted in evaluations (one forward and one backward pass each), the two cost about the same.

# %%
A_np, calls = np.array([1.0, KAPPA]), []


def quadratic_np(x):  # (f, grad f) for gradlab's optimizers; every call is logged
    calls.append(np.array(x))
    return 0.5 * x @ (A_np * x), A_np * x


def rosenbrock_np(x):
    r = x[1] - x[0] ** 2
    return (1 - x[0]) ** 2 + 100 * r**2, np.array([-2 * (1 - x[0]) - 400 * x[0] * r, 200 * r])


gradlab_bfgs = {"quadratic": optim.bfgs(quadratic_np, x0, gtol=GTOL)}
gradlab_bfgs["rosenbrock"] = optim.bfgs(rosenbrock_np, rosen0, gtol=GTOL, max_iter=MAX_ITER)
first_evals = next(i for i, x in enumerate(calls) if np.array_equal(x, gradlab_bfgs["quadratic"].path[1]))
g0 = A_np * np.array(x0)  # both methods' first direction is -g0; slope ratio |g(x_1)^T g0| / |g0|^2
slope = {"gradlab": abs(A_np * gradlab_bfgs["quadratic"].path[1] @ g0) / (g0 @ g0)}
one = torch.tensor(x0, requires_grad=True)
opt = torch.optim.LBFGS([one], max_iter=1, line_search_fn="strong_wolfe", tolerance_change=0.0)


def closure():
    opt.zero_grad()
    loss = quadratic(one)
    loss.backward()
    return loss


opt.step(closure)
slope["torch"] = abs(A_np * one.detach().numpy() @ g0) / (g0 @ g0)
results.number(
    "gradlab_first_search_evaluations", first_evals, "gradlab BFGS: evaluations of its first search"
)
for name, value in slope.items():
    results.number(f"first_step_slope_{name}", value, f"{name}: |g(x_1)^T g_0| / |g_0|^2", atol=1e-12)
for name in ("quadratic", "rosenbrock"):
    results.twin(
        f"gradlab_{name}_evaluations", gradlab_bfgs[name].evaluations, f"gradlab BFGS evaluations on {name}",
        of=f"ill_conditioning.{name}_bfgs_evaluations", rtol=0, atol=0,
        reason="the same optimizer; a hand-written gradient equal to the engine's, no stop borderline",
    )  # fmt: skip
ratios = {name: lbfgs_runs[name][1] / gradlab_bfgs[name].evaluations for name in ("quadratic", "rosenbrock")}
quad_lbfgs = lbfgs_runs["quadratic"]
results.claim(
    "lbfgs_costs_as_bfgs",
    quad_lbfgs[1] == quad_lbfgs[0] + 1 and first_evals >= 4 and all(2 / 3 < r < 1.5 for r in ratios.values()),
    "On the quadratic every L-BFGS line search takes its first trial (evaluations = iterations + 1), while "
    "gradlab's first search alone spends at least 4 evaluations; counted in evaluations, L-BFGS and "
    "gradlab's BFGS are within a factor 1.5 of each other on the quadratic and on Rosenbrock.",
    {"lbfgs": quad_lbfgs[:2], "first_search": first_evals, "ratios": ratios},
)  # fmt: skip
results.claim(
    "line_minimum", slope["gradlab"] < 1e-6 < 0.01 < slope["torch"] <= 0.9,
    "After the first step the slope along -g_0 is below 1e-6 of its start for gradlab (the line's minimum) "
    "and between 0.01 and 0.9 of it for PyTorch (a step the strong Wolfe conditions accept).",
    slope,
)  # fmt: skip
far = lbfgs(well, [5.0, 0.0], tolerance_grad=1e-7)  # PyTorch's default tolerance_grad
results.number("far_grad_norm", 10 * np.exp(-25), "||grad f|| of the well at distance 5, 10 exp(-25)")
results.number("far_lbfgs_iterations", far[0], "L-BFGS iterations from (5, 0) with default tolerance_grad")
results.claim(
    "lbfgs_stops_on_plateau", far[0] == 0 and np.array_equal(far[3], [5.0, 0.0]),
    "From (5, 0) on the well, L-BFGS with its default tolerance_grad = 1e-7 returns without a step.",
    {"iterations": far[0], "x": far[3]},
)  # fmt: skip

# %%
results.save()
