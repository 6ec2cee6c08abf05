"""`Function`: one differentiable op, its forward on arrays and its backward on Tensors."""

from __future__ import annotations

import threading
import traceback

from ..dtypes import BFLOAT16, bfloat16_dtype, float32
from ..errors import AutogradError, DeviceError, DTypeError, ShapeError
from ..tensor import Tensor
from ..tracing_state import TRACING
from .anomaly import CHECK_FORWARD, check_forward
from .autocast_state import AUTOCAST
from .grad_mode import STATE


class _Profiling(threading.local):
    """Per-thread profiler hook: the recorder of this thread's active `dlfree.profiler.profile`,
    or None (then an op pays one attribute read for profiling)."""

    hook = None


PROFILING = _Profiling()


class Function:
    """A node of the define-by-run graph.

    Subclasses write `forward(self, *arrays, **params)` with `self.xp` and return one
    array, and `backward(self, grad)` with Tensor ops returning one gradient (or None)
    per input, so that backward is itself differentiable. `saves` lists the indices of
    inputs kept for backward and `save_output` keeps the result; forward may set them
    per call. `self.needs_input_grad` tells forward and backward which inputs need one.

    An op with several outputs is a node whose result its outputs' nodes take as their one
    input; each output's node sets `output_index`, and the op's node `n_outputs`. The
    engine then calls no backward on the outputs' nodes: it hands the op's backward one
    list with each output's gradient (None where an output got none), so that the op can
    combine them in one go (split writes all pieces into one array).

    `autocast` declares the op's autocast policy: "lower", "float32", "promote" or None
    (see `autocasting`); inside an autocast region `apply` casts the inputs by it first.

    `complex_grad` declares that backward is right for complex tensors too (torch's
    convention: the gradient of a real loss L at z = x + iy is dL/dx + i dL/dy). Recording
    an op with a complex result that does not declare it is an error, not a wrong gradient.

    `keeps_bfloat16`: an op whose only floating inputs are bfloat16 returns bfloat16, as in
    torch, even where its kernel widened to float32 (ml_dtypes' matmul does); the casts,
    whose result dtype is the one asked for, set it False.
    """

    autocast: str | None = None
    complex_grad = False
    keeps_bfloat16 = True
    saves: tuple = ()
    save_output = False
    output_index = None
    pre_hooks: dict | None = None
    """Hooks called, in order, with the gradient of this node's output before its backward
    runs (a hook may return a replacement); `Tensor.register_hook` and `retain_grad` add
    them on a non-leaf's node. None until the first is added."""

    @classmethod
    def apply(cls, *inputs, **params):
        if AUTOCAST.on and cls.autocast is not None:
            from .autocasting import cast_inputs  # the casts are Functions themselves

            inputs = cast_inputs(cls.autocast, inputs)
        profiler = PROFILING.hook
        if profiler is not None:
            event = profiler.begin_op(cls, inputs)
        device = inputs[0]._device
        record = False
        for t in inputs:
            if t._device is not device:
                raise DeviceError(
                    f"{cls.__name__.lower()}: expected all tensors on one device, got "
                    f"{device} and {t._device}; move one with .to(device)"
                )
            if t.requires_grad:
                record = True
        record = record and STATE.enabled
        fn = cls.__new__(cls)
        fn.xp = device.xp
        fn.device = device
        fn.needs_input_grad = tuple([t.requires_grad for t in inputs]) if record else None
        try:
            if STATE.quiet:
                out = fn.forward(*[t._data for t in inputs], **params)
            else:
                with device.context():
                    out = fn.forward(*[t._data for t in inputs], **params)
        except ValueError as e:  # the array library's broadcasting failure, made ours
            error = broadcast_error(cls.__name__.lower(), [t.shape for t in inputs])
            if error is None:
                raise
            raise error from e
        if type(out) is not device.array_type:
            out = device.xp.asarray(out)
        if BFLOAT16.on and out.dtype == _FLOAT32 and cls.keeps_bfloat16 and \
                _bfloat16_op(inputs):
            # ml_dtypes multiplies bfloat16 matrices into float32; torch keeps bfloat16 in
            # and out, and so does every op here, whatever its kernel returned
            out = out.astype(bfloat16_dtype().np)
        anomaly = STATE.anomaly  # the one read anomaly detection costs an op when it is off
        if anomaly == CHECK_FORWARD and not STATE.backward:  # backward's: checked per node
            check_forward(fn, inputs, out)
        result = _make(out, device)
        if record:
            if out.dtype.kind == "c" and not cls.complex_grad:
                raise DTypeError(f"{cls.__name__.lower()}: gradients through this op are "
                                 "defined for real tensors only; a complex tensor that "
                                 "requires grad may pass through the complex-aware ops "
                                 "(arithmetic, reductions by sum and mean, views, dl.fft, "
                                 "real/imag/abs/angle)")
            fn.next_edges = tuple([
                t.grad_fn if t.grad_fn is not None else (t if t.requires_grad else None)
                for t in inputs
            ])
            if fn.saves:
                saved = tuple([inputs[i] for i in fn.saves])
                fn._saved = saved
                fn._versions = tuple([t._vc[0] for t in saved])
            if fn.save_output:
                fn._out = out
                fn._out_vc = result._vc
            if anomaly:
                fn._trace = "".join(traceback.format_stack()[:-2])
            fn._freed = False
            result.requires_grad = True
            result.grad_fn = fn
        if profiler is not None:
            profiler.end_op(event, out)
        tracer = TRACING.hook
        if tracer is not None:
            tracer.record(cls, inputs, params, result)
        return result

    @classmethod
    def data_attributes(cls, params: dict) -> list:
        """The names of this call's keyword arguments that hold arrays computed from the
        inputs before the op ran: a traced graph freezes them (`dlfree.export.trace` warns).
        By default every array argument; an op whose arrays are constants says so."""
        return [k for k, v in params.items() if hasattr(v, "shape") and hasattr(v, "dtype")]

    def forward(self, *arrays, **params):
        raise NotImplementedError

    def backward(self, grad):
        raise NotImplementedError

    @property
    def name(self) -> str:
        return type(self).__name__ + "Backward"

    def __repr__(self) -> str:
        return f"<{self.name}>"

    @property
    def saved_tensors(self) -> tuple:
        """The saved inputs (then the output, if saved), checked against in-place changes."""
        if self._freed:
            raise AutogradError(
                f"{self.name}: trying to backward through the graph a second time (its saved "
                "tensors were freed by the first backward); pass retain_graph=True to the "
                "first backward() or autograd.grad() call to keep them"
            )
        saved = self._saved if self.saves else ()
        for i, (t, v) in enumerate(zip(saved, self._versions if saved else ())):
            if t._vc[0] != v:
                raise AutogradError(
                    f"one of the tensors needed for gradient computation has been modified by "
                    f"an in-place operation: input {self.saves[i]} of shape {tuple(t.shape)} "
                    f"saved by {self.name} is at version {t._vc[0]}, expected version {v}; "
                    "use the out-of-place op, or clone() the tensor before modifying it"
                )
        if not self.save_output:
            return saved
        if self._out_vc[0] != 0:
            raise AutogradError(
                f"one of the tensors needed for gradient computation has been modified by an "
                f"in-place operation: the output of shape {self._out.shape} saved by "
                f"{self.name} is at version {self._out_vc[0]}, expected version 0; use the "
                "out-of-place op, or clone() the output before modifying it"
            )
        out = Tensor._make(self._out, self.device)
        out._vc = self._out_vc
        if STATE.enabled:
            out.requires_grad = True
            out.grad_fn = self
        return saved + (out,)

    def release(self) -> None:
        """Drop what forward kept for backward; the node stays as a marker in the graph."""
        keep = {k: self.__dict__[k] for k in ("xp", "device", "needs_input_grad", "next_edges")}
        pre_hooks = self.pre_hooks
        self.__dict__.clear()
        self.__dict__.update(keep)
        if pre_hooks:
            self.pre_hooks = pre_hooks
        self._freed = True


def broadcast_error(op: str, shapes: list) -> ShapeError | None:
    """The `ShapeError` naming `op` and the shapes, if `shapes` (of two or more operands) do
    not broadcast together under NumPy's rules; None if they do."""
    if len(shapes) < 2:
        return None
    result: list[int] = []
    for shape in shapes:
        shape = tuple(shape)
        width = max(len(result), len(shape))
        a = [1] * (width - len(result)) + result
        b = [1] * (width - len(shape)) + list(shape)
        if any(x != y and 1 not in (x, y) for x, y in zip(a, b)):
            listed = " and ".join(str(tuple(s)) for s in shapes)
            return ShapeError(f"{op}: the shapes {listed} cannot be broadcast together (each "
                              "dim, aligned from the right, must be equal or 1)")
        result = [max(x, y) if 1 in (x, y) else x for x, y in zip(a, b)]
    return None


_make = Tensor._make  # a global: one lookup fewer in the hot Function.apply
_FLOAT32 = float32.np


def _bfloat16_op(inputs) -> bool:
    """Whether bfloat16 is the only floating dtype among the inputs (with a wider one,
    float32 is the promoted result, not a kernel's widening)."""
    seen = False
    for t in inputs:
        dt = t._data.dtype
        if dt.kind == "V" and dt.name == "bfloat16":
            seen = True
        elif dt.kind == "f":
            return False
    return seen
