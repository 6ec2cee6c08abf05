"""Comparisons and logical ops: results are bool tensors and never require grad."""

from __future__ import annotations

from ..tensor import Tensor
from ._util import promote, tensor_method

__all__ = ["eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor",
           "logical_not", "isnan", "isinf", "isfinite", "equal", "allclose", "isclose",
           "greater", "less", "greater_equal", "less_equal", "not_equal",
           "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not"]


def _compare(kernel_name, method_names, doc):
    def op(input, other):
        a, b = promote(input, other, kernel_name)
        return Tensor._make(getattr(a._device.xp, kernel_name)(a._data, b._data), a._device)

    op.__name__ = op.__qualname__ = method_names[0]
    op.__doc__ = doc
    tensor_method(*method_names)(op)
    return op


eq = _compare("equal", ("eq", "__eq__"), "Elementwise ==.")
ne = _compare("not_equal", ("ne", "not_equal", "__ne__"), "Elementwise !=.")
lt = _compare("less", ("lt", "less", "__lt__"), "Elementwise <.")
le = _compare("less_equal", ("le", "less_equal", "__le__"), "Elementwise <=.")
gt = _compare("greater", ("gt", "greater", "__gt__"), "Elementwise >.")
ge = _compare("greater_equal", ("ge", "greater_equal", "__ge__"), "Elementwise >=.")
logical_and = _compare("logical_and", ("logical_and",), "Elementwise logical and.")
logical_or = _compare("logical_or", ("logical_or",), "Elementwise logical or.")
logical_xor = _compare("logical_xor", ("logical_xor",), "Elementwise logical xor.")
bitwise_and = _compare("bitwise_and", ("bitwise_and", "__and__", "__rand__"), "Bitwise and.")
bitwise_or = _compare("bitwise_or", ("bitwise_or", "__or__", "__ror__"), "Bitwise or.")
bitwise_xor = _compare("bitwise_xor", ("bitwise_xor", "__xor__", "__rxor__"), "Bitwise xor.")
greater, less, greater_equal, less_equal, not_equal = gt, lt, ge, le, ne


def _unary_test(kernel_name, doc):
    def op(input):
        return Tensor._make(getattr(input._device.xp, kernel_name)(input._data), input._device)

    op.__name__ = op.__qualname__ = kernel_name
    op.__doc__ = doc
    tensor_method(kernel_name)(op)
    return op


logical_not = _unary_test("logical_not", "Elementwise logical not.")
isnan = _unary_test("isnan", "True where NaN.")
isinf = _unary_test("isinf", "True where +-inf.")
isfinite = _unary_test("isfinite", "True where neither NaN nor inf.")


@tensor_method("bitwise_not", "__invert__")
def bitwise_not(input):
    """Bitwise not; logical not for bool tensors."""
    return Tensor._make(input._device.xp.invert(input._data), input._device)


@tensor_method()
def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    a, b = promote(input, other, "isclose")
    return Tensor._make(a._device.xp.isclose(a._data, b._data, rtol, atol, equal_nan), a._device)


@tensor_method()
def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool:
    return bool(isclose(input, other, rtol, atol, equal_nan)._data.all())


@tensor_method()
def equal(input, other) -> bool:
    """True when both have the same shape and the same elements."""
    return input.shape == other.shape and bool((input._data == other._data).all())
