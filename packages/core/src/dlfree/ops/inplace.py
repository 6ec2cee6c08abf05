"""In-place ops (`add_`, `mul_`, `zero_`, `x[i] = v`, `+=`, ...) with version counting.

An in-place op overwrites a tensor's memory, so it bumps the tensor's version counter
(shared with its views); backward refuses a saved tensor whose version moved. When the
graph is recorded, the new value is computed out of place from an alias of the old one,
written into the tensor's memory, and the tensor takes over the new history. A view
changed in place writes its history back into its base (the base's gradient then skips
the overwritten region), as PyTorch does.
"""

from __future__ import annotations

import math
import numbers

from .. import dtypes
from ..autograd.autocasting import autocast_policy
from ..autograd.function import Function
from ..autograd.grad_mode import STATE
from ..errors import AutogradError, DTypeError, ShapeError
from ..random import rng
from ..tensor import Tensor
from ._util import tensor_method

__all__: list[str] = []


def _alias(t: Tensor) -> Tensor:
    """The tensor as it is now: same memory, history and version counter."""
    a = Tensor._make(t._data, t._device, t.requires_grad, t.grad_fn)
    a._vc = t._vc
    a._view = t._view
    return a


def _snapshot(t: Tensor) -> Tensor:
    """The tensor's current value and history in memory of its own.

    The out-of-place computation of an in-place op reads this, so whatever it saves for
    backward stays valid after the tensor is overwritten (torch keeps the original self).
    """
    return Tensor._make(t._data.copy(), t._device, t.requires_grad, t.grad_fn)


def _check_leaf(t: Tensor, op: str) -> None:
    if t.grad_fn is None and t.requires_grad:
        raise AutogradError(
            f"{op}: a leaf tensor that requires grad is used in an in-place operation; "
            "do it under `with dl.no_grad():`, or on a clone()"
        )
    if t._view is not None and t._view[0].grad_fn is None and t._view[0].requires_grad:
        raise AutogradError(
            f"{op}: a view of a leaf tensor that requires grad is used in an in-place "
            "operation; do it under `with dl.no_grad():`, or on a clone()"
        )


def _check_result(t: Tensor, data, op: str) -> None:
    if data.shape != t._data.shape:
        raise ShapeError(
            f"{op}: the result of shape {tuple(data.shape)} cannot be written in place into a "
            f"tensor of shape {tuple(t.shape)}; valid: operands that broadcast to "
            f"{tuple(t.shape)}"
        )
    src, dst = dtypes.from_np(data.dtype), dtypes.from_np(t._data.dtype)
    if src.category > dst.category:
        raise DTypeError(
            f"{op}: result type {src!r} can't be cast to the desired output type {dst!r}; "
            "in-place ops keep the tensor's dtype"
        )


def _records(t: Tensor, args) -> bool:
    if not STATE.enabled:
        return False
    return t.requires_grad or any(isinstance(a, Tensor) and a.requires_grad for a in args)


class ViewWriteBack(Function):
    """The base after one of its views was overwritten in place with `new`.

    Forward writes nothing new (the memory already holds the result); backward sends the
    base the gradient with the view's region zeroed, and the view's part to `new`.
    """

    def forward(self, base, new, replay):
        self.replay = replay
        return base

    def backward(self, g):
        zeroed = ZeroRegion.apply(g, replay=self.replay)
        return zeroed, self.replay(g)


class ZeroRegion(Function):
    """A copy of the input with the region `replay` selects set to zero (self-adjoint)."""

    def forward(self, x, replay):
        self.replay = replay
        out = x.copy()
        replay(Tensor._make(out, self.device))._data[...] = 0
        return out

    def backward(self, g):
        return (ZeroRegion.apply(g, replay=self.replay),)


def commit(t: Tensor, new: Tensor, op: str) -> Tensor:
    """Write the out-of-place result `new` into `t`'s memory and give `t` its history."""
    _check_result(t, new._data, op)
    t._device.xp.copyto(t._data, new._data, casting="unsafe")
    t._vc[0] += 1
    if not new.requires_grad:
        return t
    if t._view is None:
        t.grad_fn, t.requires_grad = new.grad_fn, True
        return t
    root, replay = t._view
    if new._data.dtype != t._data.dtype:
        new = new.to(t.dtype)
    rebased = ViewWriteBack.apply(_alias(root), new, replay=replay)
    root.grad_fn, root.requires_grad = rebased.grad_fn, True
    with_history = replay(_alias(root))
    t.grad_fn, t.requires_grad = with_history.grad_fn, True
    return t


@autocast_policy(None)  # an in-place op keeps its tensor's dtype: torch never autocasts one
def apply_inplace(t: Tensor, compute, args, op: str) -> Tensor:
    """Run `compute(alias_of_t)` out of place and commit it into `t`."""
    if _records(t, args):
        _check_leaf(t, op)
        return commit(t, compute(_snapshot(t)), op)
    prev = STATE.enabled
    STATE.enabled = False
    try:
        new = compute(t)
    finally:
        STATE.enabled = prev
    return commit(t, new, op)


def _operand(other, t: Tensor):
    """`other` as an array (or Python number) that NumPy can combine with t's data."""
    if isinstance(other, Tensor):
        if other._device is not t._device:
            from ..errors import DeviceError

            raise DeviceError(f"in-place op: tensors on {t._device} and {other._device}; "
                              "move one with .to(device)")
        return other._data
    if isinstance(other, numbers.Number):
        return other
    raise DTypeError(f"in-place op: unsupported operand of type {type(other).__name__}; "
                     "valid: Tensor, int, float, bool")


def _fast_arith(kernel: str, name: str, out_of_place):
    """An in-place arithmetic method: a ufunc with `out=` when nothing is recorded."""

    def method(self, other, *, alpha=None):
        if _records(self, (other,)):
            _check_leaf(self, name)
            if alpha is None:
                return commit(self, out_of_place(_snapshot(self), other), name)
            return commit(self, out_of_place(_snapshot(self), other, alpha=alpha), name)
        value = _operand(other, self)
        data = self._data
        scaled = alpha is not None and alpha != 1
        if kernel == "true_divide" and data.dtype.kind != "f":
            raise DTypeError(f"{name}: true division of an integer tensor in place would need "
                             f"a float result; {self.dtype!r} can't hold it")
        try:
            with self._device.context():  # quiet about inf/nan, as the out-of-place ops are
                if scaled and isinstance(other, Tensor):  # the optimizer update p -= lr * g
                    self._device.backend.add_scaled(data, value, alpha,
                                                    subtract=kernel == "subtract")
                else:
                    value = value * alpha if scaled else value
                    getattr(self._device.xp, kernel)(data, value, out=data, casting="same_kind")
        except (TypeError, ValueError) as e:  # NumPy's casting and broadcasting errors
            out_dtype = dtypes.result_type(self, other)
            if dtypes.from_np(out_dtype).category > dtypes.from_np(data.dtype).category:
                raise DTypeError(
                    f"{name}: result type {dtypes.from_np(out_dtype)!r} can't be cast to the "
                    f"desired output type {self.dtype!r}"
                ) from None
            raise ShapeError(
                f"{name}: an operand of shape {tuple(getattr(value, 'shape', ()))} cannot be "
                f"combined in place with a tensor of shape {tuple(self.shape)}: {e}"
            ) from None
        self._vc[0] += 1
        return self

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"In-place `{name[:-1]}`: overwrites this tensor and returns it."
    return method


def _bind_arith():
    from . import elementwise as ew

    for name, kernel, fn, dunder in [
        ("add_", "add", ew.add, "__iadd__"), ("sub_", "subtract", ew.sub, "__isub__"),
        ("mul_", "multiply", ew.mul, "__imul__"), ("div_", "true_divide", ew.div,
                                                   "__itruediv__"),
    ]:
        method = _fast_arith(kernel, name, fn)
        setattr(Tensor, name, method)
        if name in ("add_", "sub_"):
            setattr(Tensor, dunder, lambda self, other, _m=method: _m(self, other))
        else:
            setattr(Tensor, dunder, method)


_bind_arith()
Tensor.subtract_ = Tensor.sub_
Tensor.multiply_ = Tensor.mul_
Tensor.divide_ = Tensor.div_


def _generic(name: str, method_name: str | None = None):
    """`name_` from the out-of-place method `name`, through `apply_inplace`."""
    source = method_name or name

    def method(self, *args, **kwargs):
        return apply_inplace(self, lambda t: getattr(t, source)(*args, **kwargs), args,
                             f"{name}_")

    method.__name__ = method.__qualname__ = f"{name}_"
    method.__doc__ = f"In-place `{source}`: overwrites this tensor and returns it."
    return method


for _name in ["pow", "neg", "exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "abs", "sign",
              "reciprocal", "sin", "cos", "tan", "tanh", "sigmoid", "relu", "floor", "ceil",
              "round", "trunc", "clamp", "clip", "remainder", "fmod", "lerp", "addcmul",
              "addcdiv", "square", "erf", "masked_fill", "scatter", "scatter_add",
              "index_add", "index_fill", "tril", "triu", "scatter_reduce",
              "index_reduce"]:
    setattr(Tensor, f"{_name}_", _generic(_name))
Tensor.__ipow__ = lambda self, other: Tensor.pow_(self, other)
Tensor.__imod__ = lambda self, other: Tensor.remainder_(self, other)


def _overwritten(t: Tensor, value) -> Tensor:
    """`value` everywhere, still attached to `t`'s history with a zero gradient (what an
    overwrite sends back). A masked fill, not `t * 0 + value`: NaN or inf already in `t`
    must not survive."""
    everywhere = Tensor._make(t._device.xp.ones(t._data.shape, dtype=bool), t._device)
    return t.masked_fill(everywhere, value)


@tensor_method()
def fill_(self, value) -> Tensor:
    """Set every element to `value` (a number or a 0-d tensor, whose gradient flows)."""
    if isinstance(value, Tensor):
        if value.ndim:
            raise ShapeError(f"fill_: only a 0-d tensor can fill, got shape {tuple(value.shape)}")
        if not _records(self, (value,)):
            value = value.item()
        else:
            return apply_inplace(self, lambda t: _overwritten(t, 0) + value.to(t.dtype),
                                 (value,), "fill_")
    if _records(self, ()):
        _check_leaf(self, "fill_")
        return commit(self, _overwritten(_snapshot(self), value), "fill_")
    self._data.fill(value)
    self._vc[0] += 1
    return self


@tensor_method()
def zero_(self) -> Tensor:
    """Set every element to zero."""
    return fill_(self, 0)


@tensor_method()
def copy_(self, src: Tensor) -> Tensor:
    """Copy `src` (broadcast, converted to this dtype and device) into this tensor."""
    if not isinstance(src, Tensor):
        raise DTypeError(f"copy_: src must be a Tensor, got {type(src).__name__}")
    if src._device is not self._device:
        src = src.to(self._device)
    if src._data.dtype != self._data.dtype:
        src = src.to(self.dtype)
    if not _records(self, (src,)):
        try:
            self._device.xp.copyto(self._data, src._data)
        except ValueError:
            raise ShapeError(f"copy_: src of shape {tuple(src.shape)} does not broadcast to the "
                             f"destination's shape {tuple(self.shape)}") from None
        self._vc[0] += 1
        return self
    return apply_inplace(self, lambda t: _overwritten(t, 0) + src.expand(tuple(t.shape)),
                         (src,), "copy_")


@tensor_method()
def uniform_(self, a: float = 0.0, b: float = 1.0, *, generator=None) -> Tensor:
    """Fill with samples from U(a, b)."""
    values = rng(generator).uniform(a, b, self._data.shape)
    return _fill_values(self, values, "uniform_")


@tensor_method()
def normal_(self, mean: float = 0.0, std: float = 1.0, *, generator=None) -> Tensor:
    """Fill with samples from N(mean, std**2)."""
    values = rng(generator).normal(mean, std, self._data.shape)
    return _fill_values(self, values, "normal_")


@tensor_method()
def bernoulli_(self, p: float = 0.5, *, generator=None) -> Tensor:
    """Fill with 1 with probability p, else 0."""
    values = rng(generator).random(self._data.shape) < p
    return _fill_values(self, values, "bernoulli_")


def _fill_values(t: Tensor, np_values, op: str) -> Tensor:
    if _records(t, ()):
        _check_leaf(t, op)
    data = t._device.backend.asarray(np_values.astype(t._data.dtype), index=t._device.index)
    t._device.xp.copyto(t._data, data)
    t._vc[0] += 1
    if STATE.enabled and t.requires_grad and t.grad_fn is not None:
        t.grad_fn, t.requires_grad = None, False  # the new values have no history
    return t


@tensor_method("__setitem__")
def setitem(self, index, value) -> None:
    """`t[index] = value`: differentiable with respect to both `t`'s history and `value`."""
    if _records(self, (value,)):
        _check_leaf(self, "__setitem__")
        from .indexing import index_put

        commit(self, index_put(_snapshot(self), index, value), "__setitem__")
        return
    from .indexing import parse_index

    if isinstance(value, Tensor):
        if value._device is not self._device:
            from ..errors import DeviceError

            raise DeviceError(f"__setitem__: value on {value._device}, tensor on {self._device}")
        data = value._data  # written with a cast to this tensor's dtype, as copy_ does
    else:
        data = value
    key = parse_index(index, self, "__setitem__")
    target = self._data if key.basic is None else self._data[key.basic]
    try:
        target[Ellipsis if key.advanced is None else key.advanced] = data
    except ValueError as e:
        raise ShapeError(f"__setitem__: a value of shape {tuple(getattr(data, 'shape', ()))} "
                         f"does not fit the indexed region of a tensor of shape "
                         f"{tuple(self.shape)}: {e}") from None
    self._vc[0] += 1


def _diagonal_mask(t: Tensor, wrap: bool):
    """Where fill_diagonal_ writes in `t`: the entries [i, i, ...] (all dims equal when
    there are more than two); a tall matrix with `wrap` starts again every n + 1 rows."""
    xp, shape = t._device.xp, t.shape
    if t.ndim < 2:
        raise ShapeError(f"fill_diagonal_: the tensor must have at least 2 dimensions, got "
                         f"shape {tuple(shape)}")
    if t.ndim > 2 and len(set(shape)) != 1:
        raise ShapeError(f"fill_diagonal_: all dimensions of a tensor with more than 2 must "
                         f"be equal, got shape {tuple(shape)}")
    size = t.numel()
    step = 1 + sum(math.prod(shape[d + 1:]) for d in range(t.ndim - 1))
    end = size if wrap and t.ndim == 2 else min(shape) * step - step + 1
    mask = xp.zeros(size, dtype=bool)
    mask[:max(end, 0):step] = True
    return Tensor._make(mask.reshape(shape), t._device)


@tensor_method()
def fill_diagonal_(self, fill_value, wrap: bool = False) -> Tensor:
    """Set the main diagonal to `fill_value`, in place (as numpy.fill_diagonal: with `wrap`
    a tall matrix's diagonal starts again below the square part)."""
    mask = _diagonal_mask(self, wrap)
    return apply_inplace(self, lambda t: t.masked_fill(mask, fill_value), (fill_value,),
                         "fill_diagonal_")
