"""probe_torch: one file you copy into your PyTorch project to see where the gradient goes wrong.

    from probe_torch import layer_report, flags, print_report

    rows = layer_report(model, loss_fn, inputs, targets, optimizer)  # one forward/backward
    print_report(rows)                                               # one aligned line each
    for name, symptom in flags(rows):                                # what looks broken
        print(name, symptom)

``layer_report`` leaves your model (its parameters, their gradients and its buffers, such as
BatchNorm's running statistics), your optimizer's state and torch's global random number
generators (CPU, and CUDA's if initialized) as it found them: with an optimizer it takes one step,
measures what the step did, and puts everything back. It cannot restore what it does not see: a
torch.Generator of your own that the forward pass draws from, or state a module keeps in plain
Python attributes. The copies it keeps cost memory: one of the parameters, one of the buffers and
one of the optimizer's state (Adam's: twice the parameters), on the parameters' device.
Needs only torch. From Gradient Pitfalls (docs/diagnose.md); MIT licence.

Rows, one per parameter (``kind == "parameter"``):
  name, ndim, grad_norm ||g||, param_norm ||w||, update_ratio ||Δw|| / ||w|| of one optimizer step
  (None without an optimizer; the ACTUAL update, so it is right for Adam as for SGD),
  changed (whether any entry of w changed in the step), nan, inf (in w or g).
Rows, one per activation module (ReLU, LeakyReLU, GELU, Tanh, Sigmoid; ``kind == "activation"``):
  name, module, dead_fraction (units whose input is <= 0 on EVERY example of the batch: a ReLU
  outputs exactly 0 there and passes no gradient) or saturated_fraction (entries where tanh or
  sigmoid is flat: |tanh| > 0.97, |2 sigmoid - 1| > 0.97, local slope below 6% of its maximum).
"""

import copy
import math

import torch
from torch import nn

#: Thresholds of ``flags``; why each is where it is: docs/diagnose.md.
DEAD = 0.5  # more than half of a ReLU layer's units dead on the whole batch
SATURATED = 0.5  # more than half of a tanh/sigmoid layer's entries in the flat tails
SATURATION_LEVEL = 0.97  # |tanh| above this: slope 1 - 0.97**2 < 6% of the maximum
VANISHING = 1e-3  # a weight matrix's ||g||/||w|| three orders below the model's largest
EXPLODING = 1e2  # ||g|| above 100 ||w||: one SGD step at lr 0.01 would move w by more than ||w||
ACTIVATIONS = (nn.ReLU, nn.LeakyReLU, nn.GELU, nn.Tanh, nn.Sigmoid)


def _units_by_examples(tensor):
    """Rows are units (dimension 1), columns every example and position."""
    tensor = tensor.detach()
    if tensor.dim() == 1:
        return tensor[:, None]
    return tensor.transpose(0, 1).reshape(tensor.shape[1], -1)


def _activation_row(name, module, inputs, output):
    row = {"kind": "activation", "name": name, "module": type(module).__name__}
    if isinstance(module, (nn.Tanh, nn.Sigmoid)):
        flat = output.detach() if isinstance(module, nn.Tanh) else 2 * output.detach() - 1
        row["saturated_fraction"] = float((flat.abs() > SATURATION_LEVEL).float().mean())
    else:
        off = _units_by_examples(inputs[0]) <= 0
        row["dead_fraction"] = float(off.all(dim=1).float().mean())
    return row


def layer_report(model, loss_fn, inputs, targets, optimizer=None):
    """One forward and backward pass (and one optimizer step, undone) -> a list of rows."""
    activations, hooks = [], []
    for name, module in model.named_modules():
        if isinstance(module, ACTIVATIONS):
            hooks.append(
                module.register_forward_hook(
                    lambda m, i, o, name=name: activations.append(_activation_row(name, m, i, o))
                )
            )
    params = dict(model.named_parameters())
    saved_grads = {name: p.grad for name, p in params.items()}
    saved_values = {name: p.detach().clone() for name, p in params.items()}
    # state_dict() holds references to the state tensors (step, exp_avg, exp_avg_sq, momentum
    # buffers), which step() updates in place: only a deep copy still holds them as they were.
    saved_state = copy.deepcopy(optimizer.state_dict()) if optimizer is not None else None
    # The forward pass in training mode updates BatchNorm's running statistics and draws dropout masks.
    saved_buffers = {name: b.detach().clone() for name, b in model.named_buffers()}
    saved_rng = torch.get_rng_state()
    saved_cuda_rng = torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None
    try:
        for p in params.values():
            p.grad = None
        loss = loss_fn(model(inputs), targets)
        loss.backward()
        grads = {
            name: (p.grad.detach().clone() if p.grad is not None else None) for name, p in params.items()
        }
        if optimizer is not None:
            optimizer.step()
        rows = []
        for name, p in params.items():
            g, w = grads[name], saved_values[name]
            delta = p.detach() - w
            rows.append(
                {
                    "kind": "parameter",
                    "name": name,
                    "ndim": w.dim(),
                    "grad_norm": float(g.norm()) if g is not None else 0.0,
                    "param_norm": float(w.norm()),
                    "update_ratio": float(delta.norm() / w.norm())
                    if optimizer is not None and w.norm() > 0
                    else None,
                    "changed": bool((delta != 0).any()) if optimizer is not None else None,
                    "nan": bool(torch.isnan(w).any() or (g is not None and torch.isnan(g).any())),
                    "inf": bool(torch.isinf(w).any() or (g is not None and torch.isinf(g).any())),
                }
            )
        return rows + activations
    finally:
        for hook in hooks:
            hook.remove()
        with torch.no_grad():
            for name, p in params.items():
                p.copy_(saved_values[name])
                p.grad = saved_grads[name]
            for name, b in model.named_buffers():
                b.copy_(saved_buffers[name])
        if optimizer is not None:
            optimizer.load_state_dict(saved_state)
        torch.set_rng_state(saved_rng)
        if saved_cuda_rng is not None:
            torch.cuda.set_rng_state_all(saved_cuda_rng)


def flags(rows):
    """``[(name, symptom)]`` with symptom in nan, dead, saturated, vanishing, exploding, frozen."""
    found = []
    # weight matrices and kernels only: a bias's norm can be near 0, so its ratio says little
    weights = [r for r in rows if r["kind"] == "parameter" and r["param_norm"] > 0 and r["ndim"] >= 2]
    relative = [r["grad_norm"] / r["param_norm"] for r in weights if math.isfinite(r["grad_norm"])]
    largest = max(relative, default=0.0)
    for row in rows:
        name = row["name"]
        if row["kind"] == "activation":
            if row.get("dead_fraction", 0) > DEAD and row["module"] == "ReLU":
                found.append((name, "dead"))
            if row.get("saturated_fraction", 0) > SATURATED:
                found.append((name, "saturated"))
            continue
        if row["nan"] or row["inf"]:
            found.append((name, "nan"))
            continue
        if row["param_norm"] > 0 and row["grad_norm"] > EXPLODING * row["param_norm"]:
            found.append((name, "exploding"))
        elif (
            row["param_norm"] > 0
            and largest > 0
            and row["grad_norm"] / row["param_norm"] < VANISHING * largest
        ):
            found.append((name, "vanishing"))
        if row["changed"] is False and row["grad_norm"] > 0:
            found.append((name, "frozen"))
    return found


def _cell(value):
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return f"{value:.2e}" if isinstance(value, float) else str(value)


def print_report(rows):
    """One aligned line per parameter and per activation module."""
    width = max([len(r["name"]) for r in rows] + [4])
    for r in rows:
        if r["kind"] == "parameter":
            print(
                f"{r['name']:<{width}}  grad {_cell(r['grad_norm']):>9}  weight {_cell(r['param_norm']):>9}  "
                f"update/weight {_cell(r['update_ratio']):>9}  nan/inf {_cell(r['nan'] or r['inf'])}"
            )
        else:
            kind, value = next((k, v) for k, v in r.items() if k.endswith("_fraction"))
            print(f"{r['name']:<{width}}  {r['module']:<9} {kind.replace('_fraction', ''):>9} {value:6.1%}")
