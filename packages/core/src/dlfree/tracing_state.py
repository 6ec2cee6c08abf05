"""The per-thread tracing state read by `Function.apply` and `Tensor.item`: the recorder of
this thread's active `dlfree.export.trace`, or None (then an op pays one attribute read)."""

from __future__ import annotations

import threading


class _Tracing(threading.local):
    """`hook` is the active tracer (with `record(cls, inputs, params, result)` and
    `python_value(tensor)`), or None outside tracing."""

    hook = None


TRACING = _Tracing()
