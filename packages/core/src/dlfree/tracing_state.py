"""The per-thread tracing state read by `Function.apply` and `Tensor.item`: the recorder of
this thread's active `dlfree.export.trace`, or None (then an op pays one attribute read).

`recorded` marks an op that is recorded whole, as one graph node, rather than through the
Functions it applies: ops whose results are not differentiable (comparisons, arg-max) never
reach `Function.apply`, and ops that compute index arrays from their input before applying
a Function (pooling windows, embedding rows, statistics) would leave those arrays frozen in
the graph."""

from __future__ import annotations

import functools
import threading


class _Tracing(threading.local):
    """`hook` is the active tracer (with `record(cls, inputs, params, result)`,
    `record_call(fn, args, kwargs)` and `python_value(tensor)`), or None outside tracing."""

    hook = None


TRACING = _Tracing()


def is_tracing() -> bool:
    """Whether this thread is being traced (`dlfree.export.trace`, `dlfree.onnx.export`): for
    checks of values (a bound on position ids, say) that a static graph cannot keep."""
    return TRACING.hook is not None


def recorded(fn):
    """Decorate an op so that tracing records each call of it as one node named after it:
    its Tensor arguments are the node's inputs, the others its attributes, and the graph
    runs the node by calling the op again. Outside tracing the call costs one attribute
    read."""

    @functools.wraps(fn)
    def op(*args, **kwargs):
        tracer = TRACING.hook
        if tracer is None:
            return fn(*args, **kwargs)
        return tracer.record_call(fn, args, kwargs)

    op.recorded = fn
    return op
