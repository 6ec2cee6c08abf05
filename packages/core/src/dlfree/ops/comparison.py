"""Comparisons, logical and bitwise ops: never differentiable, so they skip the graph.

Comparisons and logical ops give bool tensors; bitwise ops keep the promoted integer (or
bool) dtype and refuse floating-point tensors, as in torch.
"""

from __future__ import annotations

import numbers

from ..autograd.function import broadcast_error
from ..errors import DTypeError
from ..tensor import Tensor
from ..tracing_state import recorded
from ._util import check_broadcast, check_kind, promote, tensor_method

__all__ = ["eq", "ne", "lt", "le", "gt", "ge", "greater", "less", "greater_equal",
           "less_equal", "not_equal", "logical_and", "logical_or", "logical_xor",
           "logical_not", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not",
           "isnan", "isinf", "isfinite", "isclose", "allclose", "equal"]


def _binary(name, kernel_name, doc, bitwise=False):
    """A two-operand op computed by `xp.<kernel_name>` on the promoted operands."""

    def op(input, other):
        a, b = promote(input, other, name)
        if bitwise:
            check_kind(a, "biu", name)
        try:
            out = getattr(a._device.xp, kernel_name)(a._data, b._data)
        except ValueError as e:
            error = broadcast_error(name, [a.shape, b.shape])
            if error is None:
                raise
            raise error from e
        return Tensor._make(out, a._device)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = doc
    return tensor_method(name)(recorded(op))


def _operator(op, swap=False):
    """A Python operator method: defers (NotImplemented) to operands it does not know,
    so `t == None` is False, as in torch."""

    def method(self, other):
        try:
            return op(other, self) if swap else op(self, other)
        except DTypeError:
            if isinstance(other, Tensor | numbers.Number):
                raise
            return NotImplemented

    method.__name__ = method.__qualname__ = f"{op.__name__}_operator"
    method.__doc__ = op.__doc__
    return method


eq = _binary("eq", "equal", "input == other, elementwise, as a bool tensor.")
ne = _binary("ne", "not_equal", "input != other, elementwise, as a bool tensor.")
lt = _binary("lt", "less", "input < other, elementwise, as a bool tensor.")
le = _binary("le", "less_equal", "input <= other, elementwise, as a bool tensor.")
gt = _binary("gt", "greater", "input > other, elementwise, as a bool tensor.")
ge = _binary("ge", "greater_equal", "input >= other, elementwise, as a bool tensor.")
greater, less, greater_equal, less_equal, not_equal = gt, lt, ge, le, ne
logical_and = _binary("logical_and", "logical_and", "Both non-zero, as a bool tensor.")
logical_or = _binary("logical_or", "logical_or", "Either non-zero, as a bool tensor.")
logical_xor = _binary("logical_xor", "logical_xor", "Exactly one non-zero, as a bool tensor.")
bitwise_and = _binary("bitwise_and", "bitwise_and", "Bitwise and of integer or bool tensors.",
                      bitwise=True)
bitwise_or = _binary("bitwise_or", "bitwise_or", "Bitwise or of integer or bool tensors.",
                     bitwise=True)
bitwise_xor = _binary("bitwise_xor", "bitwise_xor", "Bitwise xor of integer or bool tensors.",
                      bitwise=True)

for _names, _op in [(("__eq__",), eq), (("__ne__",), ne), (("__lt__",), lt), (("__le__",), le),
                    (("__gt__",), gt), (("__ge__",), ge), (("__and__", "__rand__"), bitwise_and),
                    (("__or__", "__ror__"), bitwise_or), (("__xor__", "__rxor__"), bitwise_xor)]:
    for _name in _names:
        setattr(Tensor, _name, _operator(_op, swap=_name.startswith("__r")))
Tensor.greater, Tensor.less, Tensor.greater_equal = Tensor.gt, Tensor.lt, Tensor.ge
Tensor.less_equal, Tensor.not_equal = Tensor.le, Tensor.ne


def _unary(name, kernel, doc, bitwise=False):
    def op(input):
        if bitwise:
            check_kind(input, "biu", name)
        return Tensor._make(kernel(input._device.xp, input._data), input._device)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = doc
    return tensor_method(name)(recorded(op))


logical_not = _unary("logical_not", lambda xp, x: xp.logical_not(x),
                     "Zero elements, as a bool tensor.")
bitwise_not = _unary("bitwise_not", lambda xp, x: xp.invert(x),
                     "Bitwise not of an integer tensor; logical not of a bool tensor.",
                     bitwise=True)
Tensor.__invert__ = Tensor.bitwise_not
isnan = _unary("isnan", lambda xp, x: xp.isnan(x), "True where NaN.")
isinf = _unary("isinf", lambda xp, x: xp.isinf(x), "True where +inf or -inf.")
isfinite = _unary("isfinite", lambda xp, x: xp.isfinite(x), "True where neither NaN nor inf.")


@tensor_method()
def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """|input - other| <= atol + rtol * |other|, elementwise, as a bool tensor."""
    a, b = promote(input, other, "isclose")
    check_broadcast("isclose", a, b)
    return Tensor._make(a._device.xp.isclose(a._data, b._data, rtol, atol, equal_nan), a._device)


@tensor_method()
def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool:
    """True when `isclose` holds everywhere."""
    check_broadcast("allclose", input, other)
    return bool(isclose(input, other, rtol, atol, equal_nan)._data.all())


@tensor_method()
def equal(input, other) -> bool:
    """True when both have the same shape and the same elements."""
    return input.shape == other.shape and bool((input._data == other._data).all())
