"""Activation recomputation (gradient checkpointing): `checkpoint` recomputes a block's
forward in backward instead of keeping its activations, trading one more forward of the
block for its memory. Training-state files are another thing (they live with the Trainer)."""

from __future__ import annotations

import numbers
import weakref

from ..errors import AutogradError
from ..random import get_rng_state, set_rng_state
from ..tensor import Tensor
from . import autocast_state
from .engine import run_backward
from .function import Function
from .grad_mode import STATE

__all__ = ["checkpoint", "checkpoint_sequential"]


def checkpoint(function, *args, use_reentrant: bool = False, preserve_rng_state: bool = True,
               **kwargs):
    """`function(*args, **kwargs)`, keeping only its outputs for backward.

    The block's intermediate activations are freed as soon as it returns; when backward
    reaches the block, it calls `function` again on the same arguments and backpropagates
    through that recomputation. Gradients are those of the plain call, bit for bit, when
    `function` is deterministic: with `preserve_rng_state` the recomputation draws the same
    random numbers from dl's default generator (so dropout drops the same units), and it
    runs under the autocast settings of the forward.

    The tensors among `args` and `kwargs` get gradients, as do the leaves `function` uses
    (a module's parameters). It returns a tensor, or a tuple or list whose tensors are the
    outputs. Backward with `create_graph=True` works (the recomputation is recorded, and
    second derivatives flow through the arguments), and so does `dl.autograd.grad`. A
    non-leaf tensor that `function` reaches other than through its arguments (one it closes
    over, or one inside a list argument) gets a correct gradient too, at a cost: each call
    walks that tensor's history, and the recomputed block's activations are then kept until
    its backward ends; pass such tensors as arguments. Modifying an argument or a used weight
    in place between the forward and the backward is an error, as it would change the
    recomputation. `use_reentrant` is accepted for code written for torch; both values run
    this implementation, which does what torch's non-reentrant variant does.
    """
    if not callable(function):
        raise TypeError(f"checkpoint: function must be callable, got {type(function).__name__}")
    if not isinstance(use_reentrant, bool):
        raise TypeError(f"checkpoint: use_reentrant must be a bool, got {use_reentrant!r}")
    if not STATE.enabled:  # nothing is recorded, so there is nothing to save memory on
        return function(*args, **kwargs)
    block = _Block(function, args, kwargs, preserve_rng_state)
    result, aliases = block.call()
    kind = type(result)
    items = [result] if isinstance(result, Tensor) else \
        list(result) if isinstance(result, (tuple, list)) else []
    graded = [i for i, o in enumerate(items) if isinstance(o, Tensor) and o.requires_grad]
    if not graded:
        return result
    leaves, consumers = _walk([items[i] for i in graded], aliases)
    block.finish(graded, [items[i] for i in graded], leaves)
    arrays = [items[i]._data for i in graded]
    for i in graded:
        items[i] = None
    del result, aliases  # the last references to the block's graph: it is freed here
    outer = _outer_nodes(consumers)
    # the recomputation's backward passes through these nodes of graphs outside the block
    # (non-leaves it closes over): it must keep them, and the outer backward must reach
    # them only after this block, which edges to them (that carry no gradient) ensure
    block.retain, block.n_outer = bool(outer), len(outer)
    stand_ins = [Tensor._make(node.device.xp.empty(0), node.device, True, node)
                 for node in outer]
    whole = Checkpoint.apply(*[t for t in block.tensors if t.requires_grad], *leaves, *stand_ins,
                             block=block, n_outputs=len(graded))
    for k, (i, array) in enumerate(zip(graded, arrays, strict=True)):
        items[i] = Output.apply(whole, array=array, index=k)
    if issubclass(kind, Tensor):
        return items[0]
    return kind(*items) if hasattr(kind, "_fields") else kind(items)


def checkpoint_sequential(functions, segments: int, input, use_reentrant: bool = False,
                          preserve_rng_state: bool = True):
    """Run `functions` (a Sequential or a list of callables) one after the other on
    `input`, checkpointing `segments` - 1 runs of consecutive functions, as torch: the
    last segment runs plainly, since backward needs its activations at once."""
    children = getattr(functions, "children", None)
    functions = list(children() if callable(children) else functions)
    valid = f"an int in [1, {len(functions)}] (the number of functions)"
    if isinstance(segments, bool) or not isinstance(segments, numbers.Integral):
        raise TypeError(f"checkpoint_sequential: segments must be {valid}, got {segments!r}")
    if not 1 <= segments <= len(functions):
        raise ValueError(f"checkpoint_sequential: segments must be {valid}, got {segments}")
    size = len(functions) // segments
    for k in range(segments - 1):
        input = checkpoint(_chain(functions[k * size:(k + 1) * size]), input,
                           use_reentrant=use_reentrant, preserve_rng_state=preserve_rng_state)
    return _chain(functions[(segments - 1) * size:])(input)


def _chain(functions: list):
    def run(x):
        for f in functions:
            x = f(x)
        return x

    return run


class _Block:
    """A checkpointed call: what its recomputation needs, and the recomputation itself.
    `retain` and `n_outer` say whether the block's graph reaches nodes outside it, and how
    many of those its node has edges to."""

    def __init__(self, function, args: tuple, kwargs: dict, preserve_rng_state: bool):
        self.function, self.args, self.kwargs = function, args, kwargs
        self.rng = get_rng_state() if preserve_rng_state else None
        self.autocast = autocast_state.snapshot()
        self.tensors = [a for a in (*args, *kwargs.values()) if isinstance(a, Tensor)]
        self.versions = [t._vc[0] for t in self.tensors]

    def call(self, linked: bool = False) -> tuple:
        """The function's result on aliases of the tensor arguments, and those aliases.
        The aliases are cut from the arguments' history, so that the block's graph ends at
        them; `linked` ones are joined to it by a `Link` instead (see there)."""
        aliases = []
        for t in self.tensors:
            if linked and t.requires_grad:
                aliases.append(Link.apply(t))
                continue
            alias = t.detach()
            alias.requires_grad = t.requires_grad
            aliases.append(alias)
        given = iter(aliases)
        args = tuple(next(given) if isinstance(a, Tensor) else a for a in self.args)
        kwargs = {k: next(given) if isinstance(v, Tensor) else v for k, v in self.kwargs.items()}
        return self.function(*args, **kwargs), aliases

    def finish(self, graded: list, outputs: list, leaves: list) -> None:
        """Note which outputs the node stands for, and the state to check at backward."""
        self.graded = graded
        self.layout = [(tuple(o.shape), o.dtype) for o in outputs]
        self.leaves = leaves
        self.leaf_versions = [t._vc[0] for t in leaves]

    def backward(self, grads: list) -> tuple:
        """Recompute, then backpropagate `grads` (one per output, None where none came)
        to the arguments that need gradients and to the leaves the block uses."""
        leaves = self.leaves
        self._check_versions()
        create_graph = STATE.enabled
        result, aliases = self._recompute(linked=create_graph)
        items = [result] if isinstance(result, Tensor) else list(result)
        outputs = [items[i] for i in self.graded if i < len(items)]
        layout = [(tuple(o.shape), o.dtype) for o in outputs]
        if layout != self.layout or not all(o.requires_grad for o in outputs):
            raise AutogradError(
                f"checkpoint: recomputing the block gave outputs {layout}, but its forward gave "
                f"{self.layout} (shapes, dtypes, all requiring grad); the function must compute "
                "the same thing when called again"
            )
        roots = [(o, g) for o, g in zip(outputs, grads, strict=True) if g is not None]
        targets = [a for a in aliases if a.requires_grad] + leaves
        # the outer backward runs the leaves' hooks on their summed gradient; not here too
        hidden = [(leaf, leaf._hooks) for leaf in leaves if leaf._hooks]
        for leaf, _ in hidden:
            leaf._hooks = None
        try:
            # with create_graph the gradients' own graph runs through the recomputed nodes
            found = run_backward([o for o, _ in roots], [g for _, g in roots],
                                 self.retain or create_graph, create_graph, inputs=targets,
                                 allow_unused=True)
        finally:
            for leaf, hooks in hidden:
                leaf._hooks = hooks
            for a in aliases:
                if isinstance(a.grad_fn, Link):
                    a.grad_fn.cut = False
        return found + (None,) * self.n_outer

    def _check_versions(self) -> None:
        for i, (t, v) in enumerate(zip(self.tensors, self.versions, strict=True)):
            if t._vc[0] != v:
                raise AutogradError(
                    f"checkpoint: tensor argument {i} (shape {tuple(t.shape)}) was modified in "
                    "place after the checkpointed forward, so recomputing it would differ; "
                    "modify a clone() instead"
                )
        for t, v in zip(self.leaves, self.leaf_versions, strict=True):
            if t._vc[0] != v:
                raise AutogradError(
                    f"checkpoint: a leaf tensor of shape {tuple(t.shape)} that the block uses "
                    "(a weight) was modified in place after the checkpointed forward, so "
                    "recomputing the block would differ; call backward before updating it"
                )

    def _recompute(self, linked: bool) -> tuple:
        """`call` again as in the forward: recording, same random numbers and autocast."""
        outer = STATE.enabled, STATE.quiet, STATE.backward
        now = get_rng_state() if self.rng is not None else None
        STATE.enabled, STATE.quiet, STATE.backward = True, False, False
        try:
            if self.rng is not None:
                set_rng_state(self.rng)
            with autocast_state.restored(self.autocast):
                return self.call(linked)
        finally:
            STATE.enabled, STATE.quiet, STATE.backward = outer
            if now is not None:
                set_rng_state(now)


def _walk(outputs: list, aliases: list) -> tuple:
    """The leaves needing grad that `outputs` depend on, other than `aliases`, and, for
    each node of the graph, weak references to its consumers (None for an output's node).
    Only weak references to nodes are kept, so the graph dies with its outputs."""
    found = {id(a) for a in aliases}
    leaves: list = []
    consumers = weakref.WeakKeyDictionary()
    stack = []
    for o in outputs:
        if o.grad_fn is not None:
            consumers.setdefault(o.grad_fn, []).append(None)
            stack.append(o.grad_fn)
        elif id(o) not in found:
            found.add(id(o))
            leaves.append(o)
    visited: set = set()
    while stack:
        node = stack.pop()
        if node in visited:
            continue
        visited.add(node)
        ref = weakref.ref(node)
        for edge in node.next_edges:
            if isinstance(edge, Function):
                consumers.setdefault(edge, []).append(ref)
                stack.append(edge)
            elif edge is not None and id(edge) not in found:
                found.add(id(edge))
                leaves.append(edge)
    return leaves, consumers


def _outer_nodes(consumers) -> list:
    """The nodes that outlived the block's graph and that it used directly: nodes of
    graphs outside the block (of tensors it closes over, or that it returns)."""
    return [node for node, refs in consumers.items()
            if any(ref is None or ref() is None for ref in refs)]


class Checkpoint(Function):
    """The node of a checkpointed block. Its inputs are the block's tensor arguments that
    need gradients, the leaves it uses, then stand-ins for the nodes outside it that it
    reaches (edges that get no gradient and only order the backward); its outputs are
    `Output` nodes, whose gradients the engine hands its backward together."""

    def forward(self, *arrays, block, n_outputs):
        self.block, self.n_outputs = block, n_outputs
        return self.xp.empty(0)

    def backward(self, grads):
        return self.block.backward(grads)

    def release(self) -> None:
        """Drop the block (its arguments and function); keep the outputs' count, which a
        second backward needs to report that the graph was freed."""
        n_outputs = self.n_outputs
        super().release()
        self.n_outputs = n_outputs


class Output(Function):
    """One output of a checkpointed block: its value, its gradient going to the block."""

    def forward(self, whole, array, index):
        self.output_index = index
        return array


class Link(Function):
    """An argument as the recomputation made for `create_graph=True` sees it: the identity,
    whose backward passes nothing while that recomputation's own backward runs (its result
    goes out through the block's node instead) and passes gradients afterwards, so that
    derivatives of the block's gradients reach what its arguments depend on."""

    def forward(self, x):
        self.cut = True
        return x

    def backward(self, g):
        return (None if self.cut else g,)
