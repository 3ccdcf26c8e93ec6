"""What reverse mode keeps: the values a graph stores, the bytes backward() holds, checkpointing.

Used by snippets/backprop_costs.py (the cost chapter's memory sections).
"""

import tracemalloc

from . import engine, ops


def stored_values(loss):
    """Entries held by the non-leaf nodes of the graph below the Tensor `loss` (the intermediates)."""
    seen, stack, total = set(), [loss], 0
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        total += node.data.size if node._parents else 0
        stack.extend(node._parents)
    return total


def backward_memory(make_loss, retain_graph):
    """Bytes traced by `tracemalloc` (numpy reports its arrays to it) from before `make_loss()`
    builds the graph: "graph" after the forward pass, "peak" during backward(), "after" once it
    returned, while the caller still holds the loss."""
    tracemalloc.start()
    loss = make_loss()
    graph = tracemalloc.get_traced_memory()[0]
    tracemalloc.reset_peak()
    loss.backward(retain_graph=retain_graph)
    after, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {"graph": graph, "peak": peak, "after": after}


def layer(h, W, b, activation, last):
    z = ops.linear(h, W, b)
    return z if last else getattr(ops, activation)(z)


def checkpointed_grad(params, X, segment, activation):
    """The MLP gradient of mean(output^2) with checkpointing: a graph-free forward pass keeps each
    segment's input; the backward pass rebuilds one segment's graph at a time from its checkpoint,
    seeded with the gradient the segment above sent down. Returns (grads, most values held at
    once: the checkpoints plus one segment's graph)."""
    n_layers = len(params) // 2
    starts = list(range(0, n_layers, segment))
    checkpoints, h = [], X
    for start in starts:  # forward pass on plain arrays: no graph
        checkpoints.append(h)
        for k in range(start, min(start + segment, n_layers)):
            h = layer(h, params[2 * k], params[2 * k + 1], activation, k == n_layers - 1)
    held = sum(c.size for c in checkpoints[1:])  # the input X is data, not a stored intermediate
    grads, upstream, peak = [None] * len(params), None, 0
    for start in reversed(starts):
        stop = min(start + segment, n_layers)
        h_in = engine.Tensor(checkpoints[starts.index(start)], requires_grad=start > 0)  # X: none
        tensors = [engine.Tensor(p, requires_grad=True) for p in params[2 * start : 2 * stop]]
        h = h_in
        for k in range(start, stop):
            h = layer(
                h, tensors[2 * (k - start)], tensors[2 * (k - start) + 1], activation, k == n_layers - 1
            )
        out = ops.mean(h**2) if upstream is None else ops.sum(h * upstream)  # seeds dL/dh
        peak = max(peak, held + stored_values(out))
        out.backward()
        upstream, grads[2 * start : 2 * stop] = h_in.grad, [t.grad for t in tensors]
    return grads, peak
