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


# What each op's backward rule in engine.py reads besides the upstream gradient: its output's
# value, its input's, or nothing. "@" and "*" read an input only for the OTHER input's gradient.
READS_OUTPUT = {"tanh", "exp", "sqrt", "softmax", "log_softmax", "layer_norm"}
READS_INPUT = {"**", "log", "relu", "leaky_relu", "abs", "clip", "/", "maximum", "minimum"}
READS_BOTH = {"sigmoid"}  # sigmoid(x) * sigmoid(-x): the output and the input
READS_NOTHING = {"+", "-", "sum", "reshape", "transpose", "getitem"}
READS_OTHER_INPUT = {"@", "*"}


def values_rules_read(loss):
    """Entries of the intermediates (non-leaf nodes) that some backward rule below `loss` reads:
    what gradlab's rules read, as opposed to `stored_values`, what gradlab's graph keeps (every
    node's array). A value two rules read (tanh's output, the next product's input) counts once.
    It counts neither the parameters nor the data (leaves), and it depends on how the rules are
    written: gradlab's relu rule reads its input, so with the next product's input, its output, a
    ReLU unit costs 2 values, where PyTorch's rule reads the output and keeps 1."""
    seen, stack, read = set(), [loss], {}
    while stack:
        node = stack.pop()
        if id(node) in seen or not node._parents:
            continue
        seen.add(id(node))
        op, parents = node._op, node._parents
        if op in READS_OUTPUT | READS_BOTH:
            read[id(node)] = node.data.size
        if op in READS_INPUT | READS_BOTH or (op in READS_OTHER_INPUT and len(parents) == 2):
            read |= {id(p): p.data.size for p in parents if p._parents}  # leaves are not intermediates
        elif op not in READS_OUTPUT | READS_NOTHING | READS_OTHER_INPUT:
            raise ValueError(f"values_rules_read: no entry for the op {op!r}")
        stack.extend(parents)
    return sum(read.values())


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
    once: the checkpoints plus one segment's graph, the same with only the values its rules read)."""
    n_layers = len(params) // 2
    starts = list(range(0, n_layers, segment))
    checkpoints, h = [], X
    for start in starts:  # forward pass on plain arrays: no graph
        checkpoints.append(h)
        for k in range(start, min(start + segment, n_layers)):
            h = layer(h, params[2 * k], params[2 * k + 1], activation, k == n_layers - 1)
    held = sum(c.size for c in checkpoints[1:])  # the input X is data, not a stored intermediate
    grads, upstream, peak, peak_read = [None] * len(params), None, 0, 0
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
        peak_read = max(peak_read, held + values_rules_read(out))
        out.backward()
        upstream, grads[2 * start : 2 * stop] = h_in.grad, [t.grad for t in tensors]
    return grads, peak, peak_read
