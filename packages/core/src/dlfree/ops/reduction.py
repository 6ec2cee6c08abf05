"""Reductions over dimensions: sum, mean, var/std, prod, max/min, logsumexp, norm, cumsum, ..."""

from __future__ import annotations

from .. import dtypes
from ..autograd.function import Function
from ..tensor import Tensor
from ._util import normalize_dims, tensor_method

__all__ = ["sum", "mean"]


def _expand_back(g: Tensor, shape: tuple, dims: tuple, keepdim: bool) -> Tensor:
    """Broadcast a reduced gradient back over the reduced `dims` of `shape`."""
    if not keepdim and dims and g.ndim:
        kept = list(g.shape)
        for d in dims:
            kept.insert(d, 1)
        g = g.reshape(tuple(kept))
    return g.expand(shape)


class Sum(Function):
    def forward(self, x, dims, keepdim, dtype):
        self.shape, self.dims, self.keepdim = x.shape, dims, keepdim
        return x.sum(axis=dims, keepdims=keepdim, dtype=dtype)

    def backward(self, g):
        return (_expand_back(g, self.shape, self.dims, self.keepdim),)


class Mean(Function):
    def forward(self, x, dims, keepdim):
        self.shape, self.dims, self.keepdim = x.shape, dims, keepdim
        count = 1
        for d in dims:
            count *= x.shape[d]
        self.count = count
        return x.mean(axis=dims, keepdims=keepdim)

    def backward(self, g):
        return (_expand_back(g / self.count, self.shape, self.dims, self.keepdim),)


@tensor_method()
def sum(input, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """Sum over `dim` (all dims when None); integers and bools sum to int64, as in torch."""
    dims = normalize_dims(dim, input.ndim, "sum")
    np_dtype = dtypes.as_dtype(dtype).np if dtype is not None else (
        None if input._data.dtype.kind == "f" else dtypes.int64.np)
    return Sum.apply(input, dims=dims, keepdim=keepdim, dtype=np_dtype)


@tensor_method()
def mean(input, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """Arithmetic mean over `dim`; needs a floating dtype (or pass dtype=)."""
    if dtype is not None:
        input = input.to(dtype)
    if input._data.dtype.kind != "f":
        from ..errors import DTypeError

        raise DTypeError(f"mean: could not infer output dtype; input dtype is {input.dtype!r} "
                         "and mean needs a floating dtype: pass dtype= or call .float() first")
    return Mean.apply(input, dims=normalize_dims(dim, input.ndim, "mean"), keepdim=keepdim)
