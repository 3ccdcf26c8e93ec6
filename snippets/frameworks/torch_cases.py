"""Twelve small PyTorch runs, each broken and healthy, for docs/diagnose.md.

Each function returns ``(broken, healthy)`` for one seed (or for none, where nothing is drawn at
random): the same run with the symptom and with its fix, measured the way a practitioner would,
mostly with probe_torch.py. snippets/frameworks/diagnose_torch.py runs them on five seeds.
"""

import numpy as np
import probe_torch
import torch
from torch import nn


def regression(seed, n=128, inputs=8):
    generator = torch.Generator().manual_seed(seed)
    X = torch.randn(n, inputs, generator=generator)
    return X, torch.sin(X @ torch.randn(inputs, 1, generator=generator) / 2)


def mlp(seed, depth=3, width=32, activation=nn.ReLU, bias=None, kaiming=False):
    torch.manual_seed(seed)
    layers, size = [], 8
    for _ in range(depth):
        linear = nn.Linear(size, width)
        if kaiming:
            nn.init.kaiming_normal_(linear.weight, nonlinearity="relu")
        if bias is not None:
            nn.init.constant_(linear.bias, bias)
        layers += [linear, activation()]
        size = width
    return nn.Sequential(*layers, nn.Linear(size, 1))


def report(model, seed, optimizer=None):
    X, y = regression(seed)
    return probe_torch.layer_report(model, nn.MSELoss(), X, y, optimizer)


def by_name(rows, name):
    return next(r for r in rows if r["name"] == name)


# %% [markdown]
# ## The cases


# %%
def nan_through_where(seed):
    """NaN share of dL/dw when the loss has where(z > 0, sqrt(z), 0); the double where."""
    X, _ = regression(seed)
    w = torch.randn(8, generator=torch.Generator().manual_seed(seed), requires_grad=True)
    z = X @ w
    torch.where(z > 0, torch.sqrt(z), 0.0).mean().backward()
    broken = float(torch.isnan(w.grad).float().mean())
    w.grad = None
    z = X @ w
    torch.where(z > 0, torch.sqrt(torch.where(z > 0, z, 1.0)), 0.0).mean().backward()
    return broken, float(torch.isnan(w.grad).float().mean())


def first_nan_op():
    """The op torch.autograd.detect_anomaly names for the masked square root."""
    x = torch.tensor([-1.0, 0.0, 1.0], requires_grad=True)
    with torch.autograd.detect_anomaly():
        try:
            torch.where(x > 0, torch.sqrt(x), 0.0).sum().backward()
        except RuntimeError as error:
            return str(error).split("'")[1]
    return ""


def saturated(seed):
    """Saturated share of the last sigmoid layer: weights N(0, 3^2) vs PyTorch's default init."""
    broken = mlp(seed, depth=6, activation=nn.Sigmoid)
    with torch.no_grad():
        for layer in broken[::2]:
            layer.weight.normal_(0.0, 3.0)
    healthy = mlp(seed, depth=6, activation=nn.Sigmoid)
    return [by_name(report(m, seed), "11")["saturated_fraction"] for m in (broken, healthy)]


def first_to_last(seed):
    """||dL/dW_1|| / ||dL/dW_out||: 10 sigmoid layers vs 10 ReLU layers with He init."""
    ratios = []
    for model in (mlp(seed, depth=10, activation=nn.Sigmoid), mlp(seed, depth=10, kaiming=True)):
        rows = report(model, seed)
        ratios.append(by_name(rows, "0.weight")["grad_norm"] / by_name(rows, "20.weight")["grad_norm"])
    return ratios


def dead(seed):
    """Dead share of the first ReLU layer: biases -2.5 vs 0 at initialization."""
    return [by_name(report(mlp(seed, bias=b), seed), "1")["dead_fraction"] for b in (-2.5, 0.0)]


def diverged(seed, steps=50, lr=2.0):
    """First SGD step (1-based) whose loss is inf or NaN at lr 2, without clipping and with
    clip_grad_norm_(1.0); ``steps + 1`` when every loss stays finite."""
    X, y = regression(seed)
    first = []
    for clip in (float("inf"), 1.0):
        model = mlp(seed)
        optimizer, bad = torch.optim.SGD(model.parameters(), lr=lr), steps + 1
        for step in range(1, steps + 1):
            optimizer.zero_grad()
            loss = nn.MSELoss()(model(X), y)
            if not torch.isfinite(loss):
                bad = step
                break
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), clip)  # returns the norm BEFORE clipping
            optimizer.step()
        first.append(bad)
    return first


class CopyingSGD(torch.optim.Optimizer):
    """SGD that writes each update into p.contiguous(): a copy when p is not contiguous."""

    def __init__(self, params, lr):
        super().__init__(params, {"lr": lr})

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                p.contiguous().add_(p.grad, alpha=-group["lr"])


def frozen(seed):
    """update/weight of a transposed (non-contiguous) first-layer weight vs a contiguous one."""
    ratios = []
    for transposed in (True, False):
        model = mlp(seed)
        if transposed:
            model[0].weight = nn.Parameter(model[0].weight.detach().t().contiguous().t())
        rows = report(model, seed, CopyingSGD(model.parameters(), lr=0.1))
        ratios.append(by_name(rows, "0.weight")["update_ratio"])
    return ratios


def fp16_zero(seed, scale=2.0**16):
    """Zero share of a float16 gradient with a small loss, unscaled vs scaled by 2^16."""
    X, y = regression(seed)
    shares = []
    for s in (1.0, scale):
        model = mlp(seed).half()
        (nn.MSELoss()(model(X.half()), y.half()) * 1e-4 * s).backward()
        grads = torch.cat([p.grad.float().flatten() / s for p in model.parameters()])
        shares.append(float((grads == 0).float().mean()))
    return shares


def scale_collapse(steps=10):
    """GradScaler's scale and the steps it took, after `steps` steps whose gradient is NaN (a
    masked square root) and after `steps` finite ones: (scales, steps taken)."""
    scales, taken = [], []
    for broken in (True, False):
        w = torch.full((4,), 0.5, requires_grad=True)
        optimizer, scaler = torch.optim.SGD([w], lr=0.1), torch.amp.GradScaler("cpu", init_scale=2.0**16)
        moved = 0
        for _ in range(steps):
            optimizer.zero_grad()
            z = w - 1.0 if broken else w + 1.0  # negative: the untaken branch's sqrt is NaN
            before = w.detach().clone()
            scaler.scale(torch.where(z > 0, torch.sqrt(z), 0.0).sum() + w.sum()).backward()
            scaler.step(optimizer)  # skipped when a gradient is inf or NaN
            scaler.update()
            moved += int(not torch.equal(before, w.detach()))
        scales.append(scaler.get_scale())
        taken.append(moved)
    return scales, taken


def clipped_error(seed):
    """Share of examples with zero gradient: clamp(delta, -1, 1)^2 vs nn.HuberLoss."""
    generator = torch.Generator().manual_seed(seed)
    q = torch.zeros(256, requires_grad=True)
    target = 3 * torch.randn(256, generator=generator)
    shares = []
    for loss in (lambda d: (d.clamp(-1, 1) ** 2).sum(), lambda d: nn.HuberLoss(reduction="sum")(d, 0 * d)):
        q.grad = None
        loss(target - q).backward()
        shares.append(float((q.grad == 0).float().mean()))
    return shares


def gradcheck_at_kink():
    """Worst |analytic - numeric| of relu's derivative at x = 1e-7 (within eps) and at x = 0.5."""
    errors = []
    for x0 in (1e-7, 0.5):
        x = torch.tensor([x0], dtype=torch.float64, requires_grad=True)
        numeric = (torch.relu(x + 1e-6) - torch.relu(x - 1e-6)) / 2e-6  # gradcheck's eps
        (analytic,) = torch.autograd.grad(torch.relu(x).sum(), x)
        errors.append(float((analytic - numeric).abs()))
    return errors


def sgd_vs_adam(seed, grid=(1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1, 3e-1, 1.0), kappa=1e4, limit=1000):
    """Steps to reduce f(w) = sum(c_i w_i^2) / 2, c log-spaced from 1 to kappa, from a random
    start to 1e-6 of its start value, each optimizer at its best learning rate of the same grid
    (``limit`` when none gets there)."""
    curvature = torch.logspace(0, np.log10(kappa), 8, dtype=torch.float64)
    start = torch.randn(8, dtype=torch.float64, generator=torch.Generator().manual_seed(seed))
    target = 1e-6 * float((curvature * start**2).sum()) / 2
    best = []
    for make in (torch.optim.SGD, torch.optim.Adam):  # one param group per learning rate
        ws = [start.clone().requires_grad_(True) for _ in grid]
        optimizer = make([{"params": [w], "lr": lr} for w, lr in zip(ws, grid, strict=True)])
        reached = [limit] * len(grid)
        for step in range(1, limit + 1):
            optimizer.zero_grad()
            losses = (curvature * torch.stack(ws) ** 2).sum(dim=1) / 2  # one graph for every group
            losses.sum().backward()  # the groups are independent: one backward for all
            optimizer.step()
            for i, loss in enumerate(losses.tolist()):
                if reached[i] == limit and loss < target:
                    reached[i] = step
            if min(reached) < limit:
                break  # the best learning rate of the grid has arrived
        best.append(min(reached))
    return best


def accumulated(seed):
    """||grad|| after two backward() calls without zero_grad, over ||grad|| of one call."""
    model, (X, y) = mlp(seed), regression(seed)
    for _ in range(2):
        nn.MSELoss()(model(X), y).backward()
    twice = float(model[0].weight.grad.norm())
    model.zero_grad()
    nn.MSELoss()(model(X), y).backward()
    return twice / float(model[0].weight.grad.norm())
