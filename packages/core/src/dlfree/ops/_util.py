"""Helpers every op family shares: method binding, operand promotion, unbroadcasting, and
the dtype checks (`check_kind`, `check_float`), so that every op words a wrong dtype alike."""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import Any, TypeVar

from .. import dtypes
from ..autograd.function import broadcast_error
from ..autograd.grad_mode import STATE
from ..errors import DTypeError, ShapeError
from ..tensor import Tensor

_Op = TypeVar("_Op", bound=Callable[..., Any])


def tensor_method(*names: str) -> Callable[[_Op], _Op]:
    """Attach the decorated function to `Tensor` under its own name or the given names.

    Type checkers see the methods in the generated tensor.pyi (scripts/gen_tensor_stub.py);
    the decorated function keeps its own type, so `dl.add` is typed like `add`.
    """

    def bind(fn: _Op) -> _Op:
        for name in names or (fn.__name__,):
            setattr(Tensor, name, fn)
        return fn

    return bind


def scalar_tensor(value, like: Tensor, np_dtype=None) -> Tensor:
    """A constant 0-d tensor on `like`'s device."""
    dev = like._device
    return Tensor._make(dev.xp.asarray(value, dtype=np_dtype or like._data.dtype), dev)


def promote(a, b, op: str):
    """Both operands as tensors of PyTorch's result dtype (scalars become constants)."""
    if type(a) is type(b) is Tensor and a._data.dtype == b._data.dtype:
        return a, b
    if not (isinstance(a, Tensor) or dtypes.is_scalar(a)) or \
            not (isinstance(b, Tensor) or dtypes.is_scalar(b)):
        bad = b if isinstance(a, Tensor) else a
        raise DTypeError(f"{op}: unsupported operand of type {type(bad).__name__}; "
                         "valid: Tensor, int, float, bool")
    dt = dtypes.result_type(a, b)
    like = a if isinstance(a, Tensor) else b
    a = a if not isinstance(a, Tensor) or a._data.dtype == dt else a.to(dt)
    b = b if not isinstance(b, Tensor) or b._data.dtype == dt else b.to(dt)
    if not isinstance(a, Tensor):
        a = scalar_tensor(a, like, dt)
    if not isinstance(b, Tensor):
        b = scalar_tensor(b, like, dt)
    return a, b


def as_tensor_like(x, like: Tensor) -> Tensor:
    """`x` itself if it is a tensor, else a constant of `like`'s dtype and device."""
    return x if isinstance(x, Tensor) else scalar_tensor(x, like)


def sum_to(grad: Tensor, shape: tuple) -> Tensor:
    """Sum a broadcast gradient back down to `shape` (the adjoint of broadcasting)."""
    if grad._data.shape == shape:
        return grad
    if not STATE.enabled:  # plain backward: one array reduction, no graph nodes
        return Tensor._make(sum_array_to(grad._data, shape), grad._device)
    lead = grad.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(
        i + lead for i, s in enumerate(shape) if s == 1 and grad.shape[i + lead] != 1
    )
    out = grad.sum(dim=axes, keepdim=True) if axes else grad
    return out.reshape(shape) if out.shape != shape else out


def sum_array_to(array, shape: tuple):
    """`sum_to` on a backend array."""
    lead = array.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(
        i + lead for i, s in enumerate(shape) if s == 1 and array.shape[i + lead] != 1
    )
    out = array.sum(axis=axes, keepdims=True) if axes else array
    return out.reshape(shape)


def normalize_dim(dim: int, ndim: int, op: str) -> int:
    """A dim in [-ndim, ndim) made non-negative; 0-d tensors accept dims -1 and 0."""
    n = max(ndim, 1)
    if not isinstance(dim, numbers.Integral) or not -n <= dim < n:
        raise ShapeError(
            f"{op}: dim {dim} is out of range for a tensor with {ndim} dimension(s); "
            f"valid: [{-n}, {n - 1}]"
        )
    return int(dim) % n


def normalize_dims(dim, ndim: int, op: str) -> tuple:
    """`dim` (None, int or sequence) as a sorted tuple of non-negative dims."""
    if dim is None:
        return tuple(range(ndim))
    if isinstance(dim, numbers.Integral):
        return (normalize_dim(dim, ndim, op),) if ndim else ()
    dims = tuple(sorted(normalize_dim(d, ndim, op) for d in dim)) if ndim else ()
    if len(set(dims)) != len(dims):
        raise ShapeError(f"{op}: dim {tuple(dim)} names a dimension twice")
    return dims


# what a dtype check accepts, by the NumPy kinds it allows, worded for its error message
KINDS = {
    "f": "floating-point tensors (float16, float32, float64)",
    "c": "complex tensors (complex64, complex128)",
    "fc": "floating-point and complex tensors",
    "iuf": "integer and floating-point tensors (bool and complex excluded)",
    "iufc": "integer and floating-point tensors, and complex ones (every dtype but bool)",
    "biu": "integer and bool tensors (bool, uint8, int8, int16, int32, int64)",
}


def check_kind(t: Tensor, kinds: str, op: str, hint: str = "") -> None:
    """Raise `DTypeError` naming `op`, `t`'s dtype and what is valid unless `t`'s dtype is of
    one of `kinds` (a key of KINDS); `hint` says how to fix it."""
    if dtypes.kind(t._data.dtype) not in kinds:
        raise DTypeError(f"{op}: not supported for {t.dtype.name} tensors; valid: "
                         f"{KINDS[kinds]}" + (f"; {hint}" if hint else ""))


def check_float(t, op: str) -> None:
    """`check_kind` for the ops that take floating-point tensors only; `t` may be anything
    a caller passed, so a non-tensor is refused first."""
    if not isinstance(t, Tensor):
        raise DTypeError(f"{op}: expected a Tensor, got {type(t).__name__}")
    check_kind(t, "f", op, "convert first, e.g. x.float()")


def as_view(out: Tensor, base: Tensor, replay) -> Tensor:
    """Record that `out` shares `base`'s memory (call only when it really does).

    They then share one version counter, so an in-place change through either one is
    seen by the graph, and `replay(root)` redoes the chain of views from the root tensor,
    which is how an in-place op on a view is written back into its base's history.
    """
    if base._view is not None:
        root, base_replay = base._view
        out._view = (root, lambda r: replay(base_replay(r)))
    else:
        out._view = (base, replay)
    out._vc = base._vc
    return out


def running(xp, a, combine):
    """The inclusive scan of `a` along its last axis under the associative `combine`
    (e.g. xp.maximum): log2(n) passes of elementwise ops, so any array module runs it."""
    out = a.copy()
    shift = 1
    while shift < out.shape[-1]:
        out[..., shift:] = combine(out[..., shift:], out[..., :-shift])
        shift *= 2
    return out


def check_broadcast(op: str, *operands) -> None:
    """Refuse, naming `op` and the shapes, tensor operands that do not broadcast together:
    for ops built from several Functions, whose own errors would name an inner op."""
    error = broadcast_error(op, [t.shape for t in operands if isinstance(t, Tensor)])
    if error is not None:
        raise error
