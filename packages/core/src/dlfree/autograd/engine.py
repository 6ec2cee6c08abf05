"""Reverse-mode traversal: walk the graph from the outputs, summing gradients per node."""

from __future__ import annotations

from ..errors import AutogradError, ShapeError
from ..tensor import Tensor
from .anomaly import first_non_finite, where_non_finite
from .function import PROFILING, Function
from .grad_mode import STATE


def _topological_order(roots) -> list:
    """Nodes reachable from `roots`, every node after all nodes that consume it."""
    post: list = []
    seen: set = set()
    for root in roots:
        if root in seen:
            continue
        seen.add(root)
        stack = [(root, iter(root.next_edges))]
        while stack:
            node, edges = stack[-1]
            for e in edges:
                if e is not None and e not in seen and isinstance(e, Function):
                    seen.add(e)
                    stack.append((e, iter(e.next_edges)))
                    break
            else:
                stack.pop()
                post.append(node)
    post.reverse()
    return post


def _leading_to(order: list, targets: dict) -> list:
    """The nodes of `order` from which some target can be reached (autograd.grad skips the rest)."""
    useful: set = set()
    for node in reversed(order):  # inputs before their consumers
        if node in targets or any(e is not None and (e in useful or e in targets)
                                  for e in node.next_edges):
            useful.add(node)
    return [node for node in order if node in useful]


def _completed_leaves(order: list) -> dict:
    """For each node, the leaves whose gradient is complete once it has run: those it is the
    last node of `order` to feed. Delivering them then, not after the whole traversal, lets
    a post-accumulate hook (DistributedDataParallel's all-reduce) start during backward."""
    last: dict = {}
    for node in order:
        for e in node.next_edges:
            if e is not None and not isinstance(e, Function):
                last[e] = node
    ready: dict = {}
    for leaf, node in last.items():
        ready.setdefault(node, []).append(leaf)
    return ready


def _root_gradients(outputs, grad_outputs):
    grads = []
    for i, out in enumerate(outputs):
        g = grad_outputs[i] if grad_outputs is not None else None
        if g is None:
            if out._data.size != 1:
                raise AutogradError(
                    f"grad can be implicitly created only for scalar outputs, but output {i} "
                    f"has shape {tuple(out.shape)}; pass gradient= (a tensor of that shape), "
                    "or reduce the output first, e.g. out.sum().backward()"
                )
            g = Tensor._make(out._device.xp.ones_like(out._data), out._device)
        elif not isinstance(g, Tensor):
            g = Tensor._make(out._device.xp.asarray(g, dtype=out._data.dtype), out._device)
        if g.shape != out.shape:
            raise ShapeError(
                f"backward: gradient of shape {tuple(g.shape)} does not match output {i} of "
                f"shape {tuple(out.shape)}; valid: a gradient of shape {tuple(out.shape)}"
            )
        grads.append(g)
    return grads


def _check_finite(node, grads) -> None:
    for i, g in enumerate(grads):
        if g is None:
            continue
        found = first_non_finite(g._device.xp, g._data)
        if found is not None:
            trace = getattr(node, "_trace", "")
            raise AutogradError(
                f"{node.name} produced {where_non_finite(found, g.shape)} in the gradient "
                f"for input {i}"
                + (f"; the forward call that created it:\n{trace}" if trace else "")
            )


def run_backward(outputs, grad_outputs, retain_graph, create_graph, inputs=None,
                 allow_unused=False):
    """Propagate from `outputs`; accumulate into leaves' `.grad`, or return grads of `inputs`."""
    outputs = list(outputs)
    for i, out in enumerate(outputs):
        if not out.requires_grad:
            raise AutogradError(
                f"element {i} of tensors does not require grad and does not have a grad_fn; "
                "call requires_grad_() on the inputs you want gradients for before computing"
            )
    root_grads = _root_gradients(outputs, grad_outputs)
    if retain_graph is None:
        retain_graph = create_graph

    grads: dict = {}
    roots = []
    for out, g in zip(outputs, root_grads):
        key = out.grad_fn if out.grad_fn is not None else out
        grads[key] = g if key not in grads else grads[key] + g
        if out.grad_fn is not None:
            roots.append(out.grad_fn)

    # autograd.grad: capture at the tensors asked for instead of accumulating into .grad
    targets = None
    if inputs is not None:
        targets = {}
        for t in inputs:
            if not t.requires_grad:
                raise AutogradError(
                    f"autograd.grad: an input of shape {tuple(t.shape)} does not require grad"
                )
            targets[t.grad_fn if t.grad_fn is not None else t] = None

    order = _topological_order(roots)
    if targets is not None:
        order = _leading_to(order, targets)
    anomaly = STATE.anomaly
    profiler = PROFILING.hook
    prev_mode, prev_quiet, prev_backward = STATE.enabled, STATE.quiet, STATE.backward
    STATE.enabled = create_graph
    STATE.quiet = STATE.backward = True
    quiet = outputs[0]._device.context()
    quiet.__enter__()
    delivered = {id(g._data) for g in root_grads}
    leaves = []
    ready = _completed_leaves(order)
    complete = ()
    try:
        for node in order:
            for leaf in complete:  # the previous node was the last to feed these
                if leaf in grads:
                    _deliver(leaf, grads.pop(leaf), targets, create_graph, delivered)
            complete = ready.get(node, ())
            g = grads.pop(node, None)
            if g is None:
                continue
            hooks = node.pre_hooks
            if hooks:
                for hook in list(hooks.values()):
                    new = hook(g)
                    if new is not None:
                        g = new
            if targets is not None and node in targets:
                targets[node] = g
            if node.output_index is not None:  # one output of a multi-output op
                op = node.next_edges[0]
                slots = grads.get(op)
                if slots is None:
                    slots = grads[op] = [None] * op.n_outputs
                slots[node.output_index] = g
                continue
            if node._freed:
                raise AutogradError(
                    f"{node.name}: trying to backward through the graph a second time (its "
                    "saved tensors were freed by the first backward); pass retain_graph=True "
                    "to the first backward() or autograd.grad() call to keep them"
                )
            if profiler is not None:
                event = profiler.begin_backward(node, g)
            in_grads = node.backward(g)
            if profiler is not None:
                profiler.end_backward(event, in_grads)
            if anomaly:
                _check_finite(node, in_grads)
            if not retain_graph:
                node.release()
            for edge, gi in zip(node.next_edges, in_grads):
                if gi is None or edge is None:
                    continue
                prev = grads.get(edge)
                if prev is None:
                    grads[edge] = gi
                    if not isinstance(edge, Function):
                        leaves.append(edge)
                else:
                    grads[edge] = prev + gi
        for leaf in [o for o in outputs if o.grad_fn is None]:
            if leaf not in leaves:
                leaves.append(leaf)
        for leaf in leaves:  # those not delivered on the way: fed by the last node, or roots
            if leaf in grads:
                _deliver(leaf, grads.pop(leaf), targets, create_graph, delivered)
    finally:
        STATE.enabled, STATE.quiet, STATE.backward = prev_mode, prev_quiet, prev_backward
        quiet.__exit__(None, None, None)

    if targets is None:
        return None
    result = []
    for t in inputs:
        g = targets[t.grad_fn if t.grad_fn is not None else t]
        if g is None and not allow_unused:
            raise AutogradError(
                f"autograd.grad: an input of shape {tuple(t.shape)} was not used in computing "
                "the outputs; pass allow_unused=True to get None for it"
            )
        result.append(g)
    return tuple(result)


def _deliver(leaf: Tensor, g: Tensor, targets: dict | None, create_graph: bool,
             delivered: set) -> None:
    """Hand a leaf its complete gradient: through its hooks, then into `.grad` (or into
    `targets` for autograd.grad)."""
    if leaf._hooks:
        for hook in list(leaf._hooks.values()):
            new = hook(g)
            if new is not None:
                g = new
    if targets is not None:
        if leaf in targets:
            targets[leaf] = g
        return
    accumulate_grad(leaf, g, create_graph, delivered)


def accumulate_grad(leaf: Tensor, g: Tensor, create_graph: bool = False,
                    delivered: set | None = None) -> None:
    """Add the gradient `g` into `leaf.grad`, as backward does for every leaf it reaches,
    then call the leaf's post-accumulate-grad hooks.

    `g` is cast and expanded to the leaf's dtype and shape, and detached unless
    `create_graph`. The result never aliases an array another tensor owns: `delivered`
    holds the ids of the arrays this backward pass already handed out (its root gradients,
    earlier leaves' `.grad`); such an array, a read-only one or a view is copied first.
    """
    if delivered is None:
        delivered = set()
    if g._data.dtype != leaf._data.dtype:
        g = g.to(leaf.dtype)
    if g.shape != leaf.shape:
        g = g.expand(leaf.shape)
    if not create_graph and g.requires_grad:
        g = g.detach()
    data = g._data
    # CuPy arrays have no `writeable` flag; they are never read-only broadcast views
    writeable = getattr(data.flags, "writeable", True)
    if id(data) in delivered or not writeable or data.base is not None:
        g = Tensor._make(data.copy(), g._device, g.requires_grad, g.grad_fn) \
            if not create_graph else g.clone()
    delivered.add(id(g._data))
    if leaf.grad is None:
        leaf.grad = g
    elif create_graph:
        leaf.grad = leaf.grad + g
    else:
        leaf.grad._data += g._data
        leaf.grad._vc[0] += 1
    if leaf._post_hooks:
        for hook in list(leaf._post_hooks.values()):
            hook(leaf)
