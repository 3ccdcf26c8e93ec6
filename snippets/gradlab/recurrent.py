"""A tanh RNN through time: the Jacobian product, the weight gradient as a sum over lags.

The network is h_t = tanh(a_t), a_t = W_hh h_{t-1} + W_xh x_t + b for t = 1..T (as
`models.rnn`, written here in plain numpy so that every intermediate product can be measured).

* `jacobian_through_time`: dh_t/dh_0 = prod_s diag(tanh'(a_s)) W_hh, its spectral norm at every
  t, and the slopes tanh'(a_t) = 1 - h_t^2 the units actually have along the run.
* `weight_gradient_by_lag`: for L = v^T h_T, dL/dW_hh = sum_t delta_t h_{t-1}^T with
  delta_t = dL/da_t. The term at step t has passed through T - t step Jacobians: its *lag*.
  Truncated backpropagation through time with window k keeps the lags < k and drops the rest.
* `gradient_checks`, `clip_summary`, `lag_summary`: one network's measurements for the chapter's
  "Is it backprop?", clipping and truncation sections, as dicts of named numbers.
* `shifted_diagonal`: rho I + alpha J (J the upper shift), a non-normal matrix whose spectral
  radius rho and largest singular value (about rho + alpha) differ.
"""

import numpy as np

from . import batched_check, check, clipping, engine, forward, models, numerical, ops


def orthogonal(n, rng):
    """A random n x n orthogonal matrix: Q of the QR factorization of a Gaussian matrix, with the
    signs of R's diagonal moved into Q so that Q is uniformly (Haar) distributed."""
    q, r = np.linalg.qr(rng.normal(size=(n, n)))
    return q * np.sign(np.diag(r))


def states(W_hh, W_xh, b, xs, h0):
    """h_0, h_1, ..., h_T as an array of shape (T + 1, n)."""
    h, out = np.asarray(h0, dtype=float), [np.asarray(h0, dtype=float)]
    for x in xs:
        h = np.tanh(W_hh @ h + W_xh @ x + b)
        out.append(h)
    return np.array(out)


def jacobian_through_time(W_hh, W_xh, b, xs, h0, forget=None, every=1):
    """{"norms": ||dh_t/dh_0||_2 for t = 1..T, "mean_slope", "rms_slope", "final": h_T}.
    With ``every = k``, the norm (an SVD) is taken only at t = k, 2k, ... and at T, nan between.

    mean_slope is the mean of tanh'(a_t) over units and steps; rms_slope is the root mean square
    over the units at each step, averaged geometrically over the steps (a perturbation spread
    evenly over the units grows by sigma_max x that per step when W_hh is a scaled orthogonal
    matrix). With ``forget = f`` the cell is additive, m_t = f m_{t-1} + (1 - f) tanh(a_t), and its
    step Jacobian is f I + (1 - f) diag(tanh'(a_t)) W_hh.
    """
    n = len(h0)
    h, jacobian, slopes, log_rms = np.asarray(h0, dtype=float), np.eye(n), [], []
    jacobians = np.empty((len(xs), n, n))
    for t, x in enumerate(xs):
        new = np.tanh(W_hh @ h + W_xh @ x + b)
        slope = 1 - new**2  # tanh'(a_t), unit by unit
        slopes.append(slope.mean())
        log_rms.append(0.5 * np.log(np.mean(slope**2)))
        step = slope[:, None] * W_hh
        if forget is not None:
            step = forget * np.eye(n) + (1 - forget) * step
            new = forget * h + (1 - forget) * new
        h, jacobian = new, step @ jacobian
        jacobians[t] = jacobian
    norms, at = np.full(len(xs), np.nan), sorted({*range(every - 1, len(xs), every), len(xs) - 1})
    norms[at] = np.linalg.svd(jacobians[at], compute_uv=False)[:, 0]  # one batched SVD, the same per matrix
    return {
        "norms": norms,
        "mean_slope": float(np.mean(slopes)),
        "rms_slope": float(np.exp(np.mean(log_rms))),
        "final": h,
    }


def weight_gradient_by_lag(W_hh, W_xh, b, xs, h0, v):
    """The terms of dL/dW_hh for L = v^T h_T, indexed by lag: array (T, n, n) whose entry [k] is
    delta_t h_{t-1}^T at t = T - k. Their sum is dL/dW_hh.

    Backward recursion: delta_T = v * (1 - h_T^2), delta_{t-1} = (W_hh^T delta_t) * (1 - h_{t-1}^2).
    """
    h = states(W_hh, W_xh, b, xs, h0)
    T = len(h) - 1
    terms = np.empty((T, len(h0), len(h0)))
    delta = np.asarray(v, dtype=float) * (1 - h[T] ** 2)
    for lag in range(T):
        t = T - lag
        terms[lag] = np.outer(delta, h[t - 1])
        delta = (W_hh.T @ delta) * (1 - h[t - 1] ** 2)
    return terms


def share_beyond(terms, k):
    """||sum of the terms with lag >= k||_F / ||sum of all terms||_F: the part of the gradient
    that has crossed at least k step Jacobians, relative to the whole. Truncating
    backpropagation through time at k steps drops exactly that part, so this is also the
    truncated gradient's relative error."""
    return float(np.linalg.norm(terms[k:].sum(axis=0)) / np.linalg.norm(terms.sum(axis=0)))


def truncated(terms, k):
    """The gradient that truncated backpropagation through time with window k computes: the sum
    of the terms with lag < k."""
    return terms[:k].sum(axis=0)


def shifted_diagonal(n, rho, alpha):
    """rho I + alpha J with J the upper shift (ones above the diagonal). Triangular, so every
    eigenvalue is rho and the spectral radius is |rho|; its largest singular value is close to
    rho + alpha for large n. Non-normal: ||W^t|| can grow for many steps before rho^t wins."""
    return rho * np.eye(n) + alpha * np.eye(n, k=1)


def power_norms(W, steps):
    """||W^t||_2 for t = 1..steps."""
    power, norms = np.eye(len(W)), []
    for _ in range(steps):
        power = W @ power
        norms.append(np.linalg.norm(power, 2))
    return np.array(norms)


def draw_network(seed, hidden, inputs, steps, matrix="orthogonal"):
    """One seed's network and data: {"Q", "W_xh", "b", "xs", "h0", "v"}.

    Q has largest singular value 1 (orthogonal, or a Gaussian matrix divided by its spectral
    norm), W_xh ~ N(0, 1/inputs), b = 0, inputs x_t ~ N(0, 1) (scale them yourself),
    h_0 ~ N(0, 1/4), and v a random unit read-out vector.
    """
    rng = np.random.default_rng(seed)
    _, W_xh, b = models.init_rnn(hidden, inputs, 1.0, rng)
    gaussian = rng.normal(size=(hidden, hidden))
    Q = orthogonal(hidden, rng) if matrix == "orthogonal" else gaussian / np.linalg.norm(gaussian, 2)
    xs, h0, v = rng.normal(size=(steps, inputs)), 0.5 * rng.normal(size=hidden), rng.normal(size=hidden)
    return {"Q": Q, "W_xh": W_xh, "b": b, "xs": xs, "h0": h0, "v": v / np.linalg.norm(v)}


def verdict(norm, low=1e-2, high=1e2):
    """ "vanishes" below low, "explodes" above high, else "neither" (one value or all of an array:
    "mixed" when the values disagree)."""
    kinds = {"vanishes" if x < low else "explodes" if x > high else "neither" for x in np.ravel(norm)}
    return kinds.pop() if len(kinds) == 1 else "mixed"


def unpack(net, W, input_scale):
    """(params [W_hh, W_xh, b], inputs, h_0, v) of a `draw_network` net with W_hh = W Q for a
    number W, or W_hh = W for a matrix, and inputs scaled by input_scale."""
    W_hh = W * net["Q"] if np.isscalar(W) else np.asarray(W)
    return [W_hh, net["W_xh"], net["b"]], input_scale * net["xs"], net["h0"], net["v"]


def jacobian_summary(net, W, input_scale, forget=None, every=1):
    """`jacobian_through_time` on a net, plus "norm" = ||dh_T/dh_0||_2 and the per-step factor
    "rate" = norm^(1/T)."""
    params, xs, h0, _ = unpack(net, W, input_scale)
    run = jacobian_through_time(*params, xs, h0, forget, every)
    return run | {"norm": run["norms"][-1], "rate": run["norms"][-1] ** (1 / len(xs))}


def gradient_checks(net, W, input_scale, step_scan=()):
    """The gradient of L = v^T h_T with respect to h_0 by four methods, and why they differ.

    Returns {"grad_norm", "forward", "complex", "central" (largest relative disagreement with
    reverse mode), "central_zeros" (entries exactly 0), "noise_ratio" (smallest nonzero central
    entry / largest gradient entry), "loss_spacing" (float spacing at L), "central_change"
    (2 h max|dL/dh_0| at the default step h), "rounding_gap" (max |h_T - Re h_T| between the real
    and the complex forward pass)}, plus "central_best" and "central_best_step" over step_scan.
    """
    params, xs, h0, v = unpack(net, W, input_scale)

    def loss(p):  # L(h_0) = v^T h_T, written with ops: reverse and forward mode trace it
        return ops.sum(models.rnn(params, xs, p[0]) * v)

    values = loss_rows(params, xs, v)  # the same L on every perturbed h_0 at once, bit for bit
    gradient = engine.grad(loss, [h0])[0]
    central = batched_check.central_difference(values, [h0])[0]
    real, complex_ = models.rnn(params, xs, h0), models.rnn(params, xs, h0.astype(complex))
    out = {
        "grad_norm": np.linalg.norm(gradient),
        "forward": check.max_rel_error([gradient], forward.grad(loss, [h0])),
        "complex": check.max_rel_error([gradient], batched_check.complex_step(values, [h0])),
        "central": check.max_rel_error([gradient], [central]),
        "central_zeros": int(np.sum(central == 0)),
        "noise_ratio": np.abs(central[central != 0]).min(initial=np.inf) / np.abs(gradient).max(),
        "loss_spacing": np.spacing(abs(float(loss([h0])))),
        "central_change": 2 * numerical.default_step() * np.abs(gradient).max(),
        "rounding_gap": np.abs(real - complex_.real).max(),
    }
    if len(step_scan):
        scan = [
            check.max_rel_error([gradient], batched_check.central_difference(values, [h0], h))
            for h in step_scan
        ]
        out["central_best"], out["central_best_step"] = min(scan), step_scan[int(np.argmin(scan))]
    return out


def loss_rows(params, xs, v):
    """values([H_0]) -> L = v^T h_T for every row of H_0 (real or complex), in one pass: the
    ``f_stacked`` of `batched_check` for L(h_0). numpy's matmul of the (rows, 1, n) stack runs one
    matrix-vector product per row, the product `models.rnn` makes for a single h_0, and every other
    operation is elementwise or a sum along the row: each row's L is, bit for bit, the value of
    `models.rnn` (ops on plain arrays) for that row alone."""
    W_hh_T, drive = params[0].T, [x @ params[1].T + params[2] for x in xs]  # ops.linear's operations

    def values(stacked):
        H = stacked[0][:, None, :]
        for d in drive:
            H = np.tanh(H @ W_hh_T + d)
        return (H * v).sum(-1)[:, 0]

    return values


def full_gradient(params, xs, h0, v):
    """dL/d[W_hh, W_xh, b] for L = v^T h_T, by reverse mode."""
    return engine.grad(lambda p: ops.sum(models.rnn(p, xs, h0) * v), list(params))


def clip_summary(net, W, input_scale, c):
    """Norm clipping to c against clipping every entry to [-c, c], on dL/d[W_hh, W_xh, b].

    "ratio_spread" is (max - min) / max|.| of the entrywise ratios clipped/original under norm
    clipping: 0 means one common factor, i.e. the direction kept exactly.
    """
    grads = full_gradient(*unpack(net, W, input_scale))
    by_norm, norm = clipping.clip_by_norm(grads, c)
    by_value = clipping.clip_by_value(grads, c)
    ratios = np.concatenate([a[g != 0] / g[g != 0] for a, g in zip(by_norm, grads, strict=True)])
    return {
        "full_grad_norm": norm,
        "ratio_spread": np.ptp(ratios) / np.abs(ratios).max(),
        "cosine_norm_clip": clipping.cosine(grads, by_norm),
        "cosine_value_clip": clipping.cosine(grads, by_value),
        "clipped_fraction": clipping.clipped_fraction(grads, c),
        "value_clipped_norm": clipping.global_norm(by_value),
    }


def lag_summary(net, W, input_scale, k):
    """{"weight_grad_norm": ||dL/dW_hh||_F, "share_beyond": share of lags >= k, "truncated_norm":
    ||truncated BPTT with window k||_F, "truncated_cosine": its cosine with the full gradient,
    "lag_sum_error": normwise relative difference between the sum of the lag terms and reverse
    mode's dL/dW_hh}."""
    params, xs, h0, v = unpack(net, W, input_scale)
    terms = weight_gradient_by_lag(*params, xs, h0, v)
    total, cut = terms.sum(axis=0), truncated(terms, k)
    return {
        "weight_grad_norm": np.linalg.norm(total),
        "share_beyond": share_beyond(terms, k),
        "truncated_norm": np.linalg.norm(cut),
        "truncated_cosine": clipping.cosine([cut], [total]),
        "lag_sum_error": check.normwise_rel_error([total], full_gradient(params, xs, h0, v)[:1]),
    }


def power_summary(W, steps, horizon=2000):
    """Eigenvalues against singular values for the linear recurrence h_t = W h_{t-1}:
    {"radius": max |eigenvalue|, "sigma": sigma_max(W), "power_at_t": ||W^steps||_2, "peak":
    max_t ||W^t||_2 over t <= horizon, "peak_step": its t, "below_one_step": the first t after
    the peak with ||W^t||_2 < 1 (horizon + 1 if none)}."""
    powers = power_norms(W, horizon)
    peak = int(powers.argmax())
    after = np.flatnonzero(powers[peak:] < 1)
    return {
        "radius": float(np.abs(np.linalg.eigvals(W)).max()),
        "sigma": float(np.linalg.norm(W, 2)),
        "power_at_t": float(powers[steps - 1]),
        "peak": float(powers[peak]),
        "peak_step": peak + 1,
        "below_one_step": peak + 1 + int(after[0]) if after.size else horizon + 1,
    }


def per_seed(nets, measure, *args):
    """{name: [value on each net]} for measure(net, *args) -> {name: value}."""
    runs = [measure(net, *args) for net in nets]
    return {key: [run[key] for run in runs] for key in runs[0]}


def record(results, prefix, stats, suffix="", **tolerance):
    """Record {name: [value per seed]} as spreads PREFIX+NAME+SUFFIX (dots as p, default rtol 1e-3);
    returns the values as arrays under their plain names."""
    for key, values in stats.items():
        name = f"{prefix}{key}{suffix}".replace(".", "p")
        results.spread(name, values, name.replace("_", " "), **({"rtol": 1e-3} | tolerance))
    return {key: np.array(values, dtype=float) for key, values in stats.items()}
