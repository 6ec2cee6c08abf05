"""softmax and log_softmax along a dimension, numerically stable, with tensor-op backwards."""

from __future__ import annotations

import warnings

from .. import dtypes
from ..autograd.autocasting import autocast_policy
from ..autograd.function import Function
from ..tensor import Tensor
from ._util import normalize_dim, tensor_method

__all__ = ["softmax", "log_softmax"]


class Softmax(Function):
    save_output = True

    def forward(self, x, dim):
        self.dim = dim
        if x.size == 0:
            return self.xp.empty_like(x)
        e = self.xp.exp(x - x.max(axis=dim, keepdims=True))
        e /= e.sum(axis=dim, keepdims=True)
        return e

    def backward(self, g):
        (y,) = self.saved_tensors
        return (y * (g - (g * y).sum(dim=self.dim, keepdim=True)),)


class LogSoftmax(Function):
    save_output = True

    def forward(self, x, dim):
        self.dim = dim
        if x.size == 0:
            return self.xp.empty_like(x)
        shifted = x - x.max(axis=dim, keepdims=True)
        shifted -= self.xp.log(self.xp.exp(shifted).sum(axis=dim, keepdims=True))
        return shifted

    def backward(self, g):
        (y,) = self.saved_tensors
        return (g - y.exp() * g.sum(dim=self.dim, keepdim=True),)


def _prepare(input: Tensor, dim, dtype, op: str):
    if dtype is not None:
        input = input.to(dtype)
    elif dtypes.kind(input._data.dtype) != "f":
        input = input.to(dtypes.get_default_dtype())
    if dim is None:
        warnings.warn(f"Implicit dimension choice for {op} has been deprecated. Change the call "
                      "to include dim=X as an argument.", UserWarning, stacklevel=3)
        dim = 0 if input.ndim in (0, 1, 3) else 1  # torch's legacy implicit choice
    return input, normalize_dim(dim, input.ndim, op)


@tensor_method()
@autocast_policy("float32", dtype_arg="dtype")
def softmax(input, dim=None, dtype=None) -> Tensor:
    """exp(x) / sum(exp(x)) along `dim`; `dtype` casts the input first."""
    input, d = _prepare(input, dim, dtype, "softmax")
    if input.ndim == 0:
        return input * 0 + 1
    return Softmax.apply(input, dim=d)


@tensor_method()
@autocast_policy("float32", dtype_arg="dtype")
def log_softmax(input, dim=None, dtype=None) -> Tensor:
    """x - logsumexp(x) along `dim`; `dtype` casts the input first."""
    input, d = _prepare(input, dim, dtype, "log_softmax")
    if input.ndim == 0:
        return input * 0
    return LogSoftmax.apply(input, dim=d)
