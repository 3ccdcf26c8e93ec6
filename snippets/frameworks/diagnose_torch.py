"""Diagnose a training run: twelve symptoms, each broken and healthy, measured in PyTorch.

Each case builds a small run that shows one symptom, the same run with the fix, and the probe
that tells them apart (probe_torch.py, the file readers copy, for most of them). Random draws
(data, initialization) run on five seeds; the page quotes ranges. Quoted by docs/diagnose.md.
"""

# %% [markdown]
# The runs live in `torch_cases.py` beside this file, one function per symptom; each returns its
# broken and healthy number. Random draws (data, initialization) use the seed it is given.

# %%
import sys
import warnings
from pathlib import Path

if "__file__" in globals():  # run as a script: gradlab lives one folder up
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
import torch
import torch_cases as cases
from gradlab import snippet

parser = snippet.parser(__doc__)
args, results = snippet.parse(parser)
SEEDS = snippet.seeds(args.seed)
torch.set_num_threads(1)
warnings.filterwarnings("ignore")  # detect_anomaly warns with a traceback; the error is the point
torch_major, torch_minor = (int(part) for part in torch.__version__.split(".")[:2])  # 2.10 is not 2.1
results.number("torch_version_major", torch_major, "PyTorch major version")
results.number("torch_version_minor", torch_minor, "PyTorch minor version")


# %% [markdown]
# ## Broken and healthy, on every seed

# %%
PER_SEED = {
    "nan_where": cases.nan_through_where,
    "saturated": cases.saturated,
    "first_to_last": cases.first_to_last,
    "dead": cases.dead,
    "first_nonfinite_step": cases.diverged,
    "update_ratio": cases.frozen,
    "fp16_zero": cases.fp16_zero,
    "clipped_zero": cases.clipped_error,
    "steps_to_1e6": cases.sgd_vs_adam,
}
measured = {key: np.array([case(seed) for seed in SEEDS]) for key, case in PER_SEED.items()}
print(f"{'symptom':<16} {'broken: min, max':>24} {'healthy: min, max':>24}")
for key, values in measured.items():
    (b_low, h_low), (b_high, h_high) = values.min(axis=0), values.max(axis=0)
    print(f"{key:<16} {b_low:11.3g} {b_high:11.3g}  {h_low:11.3g} {h_high:11.3g}")
    results.spread(f"{key}_broken", values[:, 0], f"{key}: broken run", rtol=1e-4, atol=1e-12)
    results.spread(f"{key}_healthy", values[:, 1], f"{key}: healthy run", rtol=1e-4, atol=1e-12)
accumulation = [cases.accumulated(seed) for seed in SEEDS]
results.spread("accumulated_ratio", accumulation, "grad after two backward() calls / one", rtol=1e-6)
scales, taken = cases.scale_collapse()
results.number("scale_broken", scales[0], "GradScaler scale after 10 steps with NaN gradients")
results.number("scale_healthy", scales[1], "GradScaler scale after 10 finite steps")
results.number("steps_taken_broken", taken[0], "optimizer steps GradScaler let through, NaN gradients")
results.number("steps_taken_healthy", taken[1], "optimizer steps GradScaler let through, finite")
kink = cases.gradcheck_at_kink()
results.number("kink_error", kink[0], "|analytic - numeric| of relu' at 1e-7", rtol=1e-4)
results.number("smooth_error", kink[1], "|analytic - numeric| of relu' at 0.5", atol=1e-9)
results.number("step_limit", 1000, "steps after which a run counts as not converged")
anomaly = cases.first_nan_op()

# %% [markdown]
# ## Claims: each symptom separates broken from healthy on every seed

# %%
broken, healthy = ({key: values[:, i] for key, values in measured.items()} for i in (0, 1))
CLAIMS = [
    ("nan_where", min(broken["nan_where"]) == 1 and max(healthy["nan_where"]) == 0,
     "Every entry of dL/dw is NaN with the single where and none with the double where."),
    ("anomaly_names_sqrt", anomaly == "SqrtBackward0",
     "torch.autograd.detect_anomaly names SqrtBackward0 as the first backward op returning NaN."),
    ("saturated", min(broken["saturated"]) > 0.5 > max(healthy["saturated"]),
     "With N(0, 3^2) weights over half of the last sigmoid layer is saturated; with the default "
     "initialization under half."),
    ("first_to_last", max(broken["first_to_last"]) < 1e-3 * min(healthy["first_to_last"]),
     "The first layer's gradient, relative to the output layer's, is over 1,000 times smaller in "
     "the sigmoid stack than in the He-initialized ReLU stack."),
    ("dead", min(broken["dead"]) > 0.5 > max(healthy["dead"]),
     "Biases of -2.5 leave over half of the first ReLU layer dead on the batch; biases of 0 under half."),
    ("first_nonfinite_step",
     max(broken["first_nonfinite_step"]) <= 50 and min(healthy["first_nonfinite_step"]) == 51,
     "At learning rate 2 the loss turns inf or NaN within 50 SGD steps; with clip_grad_norm_(1.0) "
     "at the same rate it stays finite for all 50."),
    ("frozen", max(broken["update_ratio"]) == 0 < min(healthy["update_ratio"]),
     "The update written into a copy leaves the transposed weight exactly unchanged; the "
     "contiguous one moves."),
    ("fp16_zero", min(broken["fp16_zero"]) > max(healthy["fp16_zero"]),
     "Scaling the loss by 2^16 leaves fewer float16 gradient entries at zero."),
    ("scale_collapse", scales == [2.0**6, 2.0**16] and taken == [0, 10],
     "With a NaN gradient GradScaler halves the scale and skips the step every time (2^16 to 2^6 in "
     "ten steps, none taken); with finite gradients it keeps 2^16 and takes all ten."),
    ("clipped_zero", min(broken["clipped_zero"]) > 0.5 and max(healthy["clipped_zero"]) == 0,
     "Clamping the error before squaring gives over half of the examples a zero gradient; Huber none."),
    ("kink_check", kink[0] > 0.1 > 1e-6 > kink[1],
     "A central difference with eps = 1e-6 is off by over 0.1 at a kink 1e-7 away, within 1e-6 away."),
    ("steps_to_1e6", min(broken["steps_to_1e6"]) == 1000 and max(healthy["steps_to_1e6"]) < 300,
     "On a quadratic with condition number 1e4, SGD at its best learning rate of the grid does not "
     "get within 1e-6 in 1,000 steps; Adam at its best does in under 300."),
    ("accumulates", max(abs(np.array(accumulation) - 2)) < 1e-6,
     "Two backward() calls without zero_grad() give twice the gradient."),
]  # fmt: skip
for name, holds, statement in CLAIMS:
    values = {"broken": broken.get(name), "healthy": healthy.get(name)}
    results.claim(name, bool(holds), statement + (" (every seed)" if name in broken else ""), values)

# %%
results.save()
