"""Writing into chosen positions: index_copy, index_fill, masked_scatter, take, put, and the
in-place index_put_ / put_ / index_copy_ / index_fill_ / masked_scatter_.

Each is `index_put` (or `__getitem__`) with the key spelled out, so the gradients are
index_put's: the overwritten positions send nothing back to the input, the written values
receive theirs.
"""

from __future__ import annotations

from ..errors import ShapeError
from ..tensor import Tensor
from ._util import normalize_dim, tensor_method
from .indexing import _bool_mask, index_put
from .inplace import _generic
from .shape import broadcast_shapes

__all__ = ["index_copy", "index_fill", "masked_scatter", "take", "put"]

_ALL = slice(None)


def _dim_key(input: Tensor, dim: int, index, op: str) -> tuple:
    d = normalize_dim(dim, input.ndim, op)
    if not isinstance(index, Tensor) or index.ndim > 1:
        raise ShapeError(f"{op}: index must be a 0-d or 1-d integer tensor")
    return (_ALL,) * d + (index.reshape(-1),), d


@tensor_method()
def index_copy(input, dim: int, index, source) -> Tensor:
    """A copy of `input` with slice index[i] along `dim` replaced by source's slice i."""
    key, d = _dim_key(input, dim, index, "index_copy")
    expected = tuple(input.shape[:d]) + (index.numel(),) + tuple(input.shape[d + 1:])
    if input.ndim and tuple(source.shape) != expected:
        raise ShapeError(f"index_copy: source of shape {tuple(source.shape)} does not fit; "
                         f"valid: {expected}")
    return index_put(input, key, source)


@tensor_method()
def index_fill(input, dim: int, index, value) -> Tensor:
    """A copy of `input` with the slices at `index` along `dim` set to `value` (a number or
    a 0-d tensor, which then gets a gradient)."""
    key, _ = _dim_key(input, dim, index, "index_fill")
    if isinstance(value, Tensor) and value.ndim:
        raise ShapeError(f"index_fill: value must be a number or a 0-d tensor, got shape "
                         f"{tuple(value.shape)}")
    return index_put(input, key, value)


@tensor_method()
def masked_scatter(input, mask, source) -> Tensor:
    """A copy of `input` with source's leading elements written, in order, where `mask`
    holds (input and mask broadcast)."""
    mask = _bool_mask(mask, "masked_scatter")
    shape = tuple(broadcast_shapes(input.shape, mask.shape))
    mask = mask.expand(shape)
    count = int(mask._data.sum())
    if source.numel() < count:
        raise ShapeError(f"masked_scatter: the mask selects {count} elements but source has "
                         f"only {source.numel()}")
    return index_put(input.expand(shape), mask, source.reshape(-1)[:count])


@tensor_method()
def take(input, index) -> Tensor:
    """The elements of the flattened input at `index`, in index's shape."""
    return input.reshape(-1)[index]


@tensor_method()
def put(input, index, source, accumulate: bool = False) -> Tensor:
    """A copy of `input` with source's elements written (or added) at the flat positions
    `index`."""
    if index.numel() != source.numel():
        raise ShapeError(f"put: index has {index.numel()} elements but source has "
                         f"{source.numel()}; they must match")
    flat = index_put(input.reshape(-1), (index.reshape(-1),), source.reshape(-1), accumulate)
    return flat.reshape(tuple(input.shape))


for _name in ("index_put", "put", "index_copy", "masked_scatter"):
    setattr(Tensor, f"{_name}_", _generic(_name))
