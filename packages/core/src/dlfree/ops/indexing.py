"""Indexing: __getitem__, index_put, gather/scatter, index_select, masks, tril/triu.

An index is applied in PyTorch's two steps: its basic part (ints, slices, None, ...)
gives a view, then its advanced part (integer arrays and bool masks, next to slices)
gathers a copy from that view, placing the indexed dims by NumPy's rules. The gradient of
a gather adds into zeros (repeated indices accumulate), and that scatter's own gradient
is a gather again, so double backward works.
"""

from __future__ import annotations

import numbers
from typing import NamedTuple

from .. import dtypes
from ..autograd.autocasting import autocast_policy
from ..autograd.function import Function
from ..errors import AutogradError, DTypeError, ShapeError
from ..tensor import Tensor
from ._util import normalize_dim, scalar_tensor, sum_to, tensor_method
from .elementwise import where
from .shape import broadcast_shapes, slice_view

__all__ = ["index_put", "gather", "scatter", "scatter_add", "index_select",
           "masked_fill", "masked_select", "take_along_dim", "nonzero", "argwhere", "tril",
           "triu"]

_ALL = slice(None)
_INT64 = dtypes.int64.np


class Key(NamedTuple):
    """A parsed index: `basic` (a view key ending in ..., or None for the identity), then
    `advanced` (a tuple of integer arrays and slices, or None); `unique` is false when the
    advanced part may select one element twice."""

    basic: tuple | None
    advanced: tuple | None
    unique: bool


# ---------------------------------------------------------------- the Functions
class Index(Function):
    """`x[index]` for an advanced index (integer arrays and slices): a gathered copy."""

    complex_grad = True

    def forward(self, x, index, unique):
        self.index, self.unique, self.src = index, unique, x.shape
        return x[index]

    def backward(self, g):
        return (IndexBackward.apply(g, index=self.index, unique=self.unique, shape=self.src),)


class IndexBackward(Function):
    """Index's adjoint: zeros of the input's shape with `g` added at the index."""

    complex_grad = True

    def forward(self, g, index, unique, shape):
        self.index, self.unique = index, unique
        out = self.xp.zeros(shape, dtype=g.dtype)
        if unique:
            out[index] = g
        else:
            self.device.backend.scatter_add(out, index, g)
        return out

    def backward(self, gg):
        return (Index.apply(gg, index=self.index, unique=self.unique),)


class IndexPut(Function):
    """A copy of `x` with `values` written (or added, with `accumulate`) at `key`."""

    def forward(self, x, values, key, accumulate):
        self.key, self.accumulate, self.values_shape = key, accumulate, values.shape
        out = x.copy()
        target = out if key.basic is None else out[key.basic]
        index = Ellipsis if key.advanced is None else key.advanced
        if not accumulate:
            target[index] = values
        elif key.unique:
            target[index] += values
        else:
            self.device.backend.scatter_add(target, index, values)
        return out

    def backward(self, g):
        needs_x, needs_values = self.needs_input_grad
        gx = gv = None
        if needs_x:
            gx = g if self.accumulate else \
                IndexPut.apply(g, scalar_tensor(0, g), key=self.key, accumulate=False)
        if needs_values:
            gv = _sum_to_values(_apply(g, self.key), self.values_shape)
        return gx, gv


def _sum_to_values(g: Tensor, shape: tuple) -> Tensor:
    """The adjoint of broadcasting values into the indexed region (which may drop
    leading size-1 dims of the values)."""
    extra = len(shape) - g.ndim
    return sum_to(g, shape[extra:]).reshape(shape) if extra > 0 else sum_to(g, shape)


def _apply(input: Tensor, key: Key) -> Tensor:
    out = input if key.basic is None else slice_view(input, key.basic)
    if key.advanced is None:
        return out
    return Index.apply(out, index=key.advanced, unique=key.unique)


# ---------------------------------------------------------------- parsing an index
def _index_array(item, input: Tensor, op: str):
    """`item` (a tensor, list or array of indices or a mask) as an array on `input`'s device."""
    dev = input._device
    if isinstance(item, Tensor):
        arr = item._data if item._device is dev else \
            dev.backend.asarray(item._device.backend.to_numpy(item._data), index=dev.index)
    else:
        arr = dev.backend.asarray(item, index=dev.index)
        if arr.size == 0 and arr.dtype.kind == "f":  # [] carries no dtype of its own
            arr = arr.astype(_INT64)
    kind = arr.dtype.kind
    if kind in "bi" or (kind == "u" and arr.dtype.itemsize > 1):
        return arr
    raise DTypeError(
        f"{op}: tensors used as indices must be integer (int64, int32) or bool, got "
        f"{arr.dtype} to index a tensor of shape {tuple(input.shape)}; convert with .long(), "
        "or with .bool() for a mask (uint8 is refused: torch reads it as a deprecated mask)"
    )


def _check_bounds(idx, size: int, dim: int, input: Tensor, op: str, low: int) -> None:
    """IndexError unless every entry of `idx` is in [low, size)."""
    if idx.size == 0:
        return
    lo, hi = int(idx.min()), int(idx.max())
    if lo < low or hi >= size:
        raise IndexError(
            f"{op}: index {hi if hi >= size else lo} is out of bounds for dimension {dim} with "
            f"size {size} (tensor shape {tuple(input.shape)}); valid: [{low}, {size - 1}]"
        )


def parse_index(index, input: Tensor, op: str = "__getitem__") -> Key:
    """Split a PyTorch index into its basic and advanced parts, checked against `input`."""
    shape = input._data.shape
    items = []
    consumed = 0
    for item in index if type(index) is tuple else (index,):
        if item is None or item is Ellipsis:
            if item is Ellipsis and any(i is Ellipsis for i in items):
                raise IndexError(f"{op}: an index can only have a single ellipsis (...)")
        elif type(item) is slice:
            if item.step is not None and int(item.step) <= 0:
                raise ValueError(f"{op}: slice step must be greater than zero, got {item.step}; "
                                 "use .flip(dim) to reverse")
            consumed += 1
        elif isinstance(item, bool):
            pass
        elif isinstance(item, numbers.Integral):
            item = int(item)
            consumed += 1
        else:
            item = _index_array(item, input, op)
            if item.ndim == 0:  # a 0-d tensor acts as the number it holds
                item = bool(item) if item.dtype.kind == "b" else int(item)
                consumed += type(item) is int
            else:
                consumed += item.ndim if item.dtype.kind == "b" else 1
        items.append(item)
    if consumed > len(shape):
        raise IndexError(f"{op}: too many indices for a tensor of dimension {len(shape)} "
                         f"(shape {tuple(shape)}): the index uses {consumed} dimensions")

    basic, advanced = [], []
    identity, unique = True, True
    dim = 0
    for item in items:
        if item is None:
            basic.append(None)
            advanced.append(_ALL)
            identity = False
        elif item is Ellipsis:
            skip = len(shape) - consumed
            basic += [_ALL] * skip
            advanced += [_ALL] * skip
            dim += skip
        elif type(item) is slice:
            basic.append(item)
            advanced.append(_ALL)
            identity = identity and item.start is None and item.stop is None and \
                item.step is None
            dim += 1
        elif isinstance(item, bool):  # adds a dim of size 1 (True) or 0 (False), as torch
            basic.append(None)
            advanced.append(input._device.xp.zeros(int(item), dtype=_INT64))
            identity = False
        elif isinstance(item, int):
            n = shape[dim]
            if not -n <= item < n:
                raise IndexError(
                    f"{op}: index {item} is out of bounds for dimension {dim} with size {n} "
                    f"(tensor shape {tuple(shape)}); valid: [{-n}, {n - 1}]"
                )
            basic.append(item)
            identity = False
            dim += 1
        elif item.dtype.kind == "b":
            span = shape[dim:dim + item.ndim]
            if item.shape != span:
                raise IndexError(
                    f"{op}: the shape {tuple(item.shape)} of the mask does not match the shape "
                    f"{tuple(span)} of the indexed tensor {tuple(shape)} at dimension {dim}"
                )
            basic += [_ALL] * item.ndim
            advanced += input._device.xp.nonzero(item)
            dim += item.ndim
        else:
            _check_bounds(item, shape[dim], dim, input, op, -shape[dim])
            basic.append(_ALL)
            advanced.append(item)
            unique = False
            dim += 1
    has_advanced = any(type(a) is not slice for a in advanced)
    return Key(None if identity else tuple(basic) + (Ellipsis,),
               tuple(advanced) if has_advanced else None, unique)


@tensor_method("__getitem__")
def _getitem(self, index) -> Tensor:
    """`self[index]` with everything torch accepts: ints, slices (step > 0), None, ...,
    integer tensors/lists/arrays (advanced, broadcast together) and bool masks. Without
    integer arrays or masks the result is a view."""
    return _apply(self, parse_index(index, self))


@tensor_method()
@autocast_policy("promote")
def index_put(input, indices, values, accumulate: bool = False) -> Tensor:
    """A copy of `input` with `input[indices] = values` (or `+=` with `accumulate`, which
    sums repeated indices); `values` broadcast to the indexed shape, and `indices` is
    anything `__getitem__` accepts."""
    key = parse_index(indices, input, "index_put")
    values = values.to(input.dtype) if isinstance(values, Tensor) else \
        scalar_tensor(values, input)
    try:
        return IndexPut.apply(input, values, key=key, accumulate=accumulate)
    except ValueError as e:
        raise ShapeError(f"index_put: values of shape {tuple(values.shape)} do not broadcast "
                         f"to the indexed region of a tensor of shape {tuple(input.shape)}: {e}"
                         ) from None


# ------------------------------------------------------ gather/scatter along a dim
def _dim_index(index, input: Tensor, dim: int, op: str):
    """A checked integer index tensor for `op` along `dim`, as an array; entries in [0, n)."""
    if not isinstance(index, Tensor) or index._data.dtype.kind not in "iu":
        got = index.dtype if isinstance(index, Tensor) else type(index).__name__
        raise DTypeError(f"{op}: index must be an integer tensor, got {got}; convert with "
                         ".long()")
    idx = _index_array(index, input, op)
    size = input._data.shape[dim] if input.ndim else 1
    _check_bounds(idx, size, dim, input, op, 0)
    return idx


def _along(input: Tensor, dim: int, index, others: tuple, op: str) -> Key:
    """The key that addresses input[p with p[dim] replaced by index[p]] for each position p
    of `index`, checking that `index` fits within `input` and the `others`."""
    d = normalize_dim(dim, input.ndim, op)
    idx = _dim_index(index, input, d, op)
    for name, t, skip in (("input", input, d), *((n, o, None) for n, o in others)):
        if t.ndim != idx.ndim:
            raise ShapeError(f"{op}: {name} has {t.ndim} dimensions but index has "
                             f"{idx.ndim}; they must have the same number")
        for i, (a, b) in enumerate(zip(idx.shape, t._data.shape, strict=True)):
            if i != skip and a > b:
                raise ShapeError(f"{op}: index of shape {tuple(idx.shape)} is larger than "
                                 f"{name} of shape {tuple(t.shape)} at dimension {i}")
    xp = input._device.xp
    coords = tuple(idx if i == d else xp.arange(s).reshape((s,) + (1,) * (idx.ndim - i - 1))
                   for i, s in enumerate(idx.shape))
    return Key(None, coords, False)


def _fit(src: Tensor, shape: tuple) -> Tensor:
    """The leading `shape` block of `src` (torch reads only that much of a larger source)."""
    if tuple(src.shape) == shape:
        return src
    return slice_view(src, tuple(slice(0, s) for s in shape) + (Ellipsis,))


@tensor_method()
def gather(input, dim: int, index, *, sparse_grad: bool = False) -> Tensor:
    """out[i][j][k] = input[index[i][j][k]][j][k] for dim 0 (and so on); out has
    index's shape, which may be smaller than input's outside `dim`."""
    return _apply(input, _along(input, dim, index, (), "gather"))


class ScatterMultiply(Function):
    """scatter(..., reduce='multiply'), which has no derivative (nor in PyTorch)."""

    def forward(self, x, values, index):
        out = x.copy()
        self.xp.multiply.at(out, index, values)
        return out

    def backward(self, g):
        raise AutogradError("scatter: the derivative for reduce='multiply' is not implemented "
                            "(nor in PyTorch); use a differentiable formulation, e.g. "
                            "scatter_add of logarithms")


@tensor_method()
def scatter(input, dim: int, index, src=None, *, value=None, reduce=None) -> Tensor:
    """A copy of `input` with `src` (a tensor, or a number `value`) written at `index`
    along `dim`; `reduce='add'` or `'multiply'` combines instead of overwriting."""
    if src is not None and not isinstance(src, Tensor):
        src, value = None, src
    if src is None and value is None:
        raise TypeError("scatter: give src (a tensor) or value (a number)")
    key = _along(input, dim, index, (("src", src),) if src is not None else (), "scatter")
    values = _fit(src.to(input.dtype), tuple(index.shape)) if src is not None else \
        scalar_tensor(value, input)
    if reduce is None or reduce == "add":
        return IndexPut.apply(input, values, key=key, accumulate=reduce == "add")
    if reduce == "multiply":
        return ScatterMultiply.apply(input, values, index=key.advanced)
    raise ValueError(f"scatter: reduce must be None, 'add' or 'multiply', got {reduce!r}")


@tensor_method()
@autocast_policy("promote")
def scatter_add(input, dim: int, index, src) -> Tensor:
    """A copy of `input` with `src` added at `index` along `dim`; repeats accumulate."""
    key = _along(input, dim, index, (("src", src),), "scatter_add")
    values = _fit(src.to(input.dtype), tuple(index.shape))
    return IndexPut.apply(input, values, key=key, accumulate=True)


@tensor_method()
def take_along_dim(input, indices, dim=None) -> Tensor:
    """Pick values along `dim` at `indices`, broadcasting the other dims (the flattened
    tensors when `dim` is None); the counterpart of argmax/argsort results."""
    if dim is None:
        return gather(input.reshape(-1), 0, indices.reshape(-1))
    d = normalize_dim(dim, input.ndim, "take_along_dim")
    if indices.ndim != input.ndim:
        raise ShapeError(f"take_along_dim: input of shape {tuple(input.shape)} and indices of "
                         f"shape {tuple(indices.shape)} must have the same number of dimensions")
    common = list(broadcast_shapes(*(s[:d] + (1,) + s[d + 1:] for s in
                                     (tuple(input.shape), tuple(indices.shape)))))
    x = input.expand(common[:d] + [input.shape[d]] + common[d + 1:])
    idx = indices.expand(common[:d] + [indices.shape[d]] + common[d + 1:])
    return gather(x, d, idx)


# ----------------------------------------------------------- along one dim, 1-d index
def _vector_index(input: Tensor, dim: int, index, op: str) -> tuple:
    d = normalize_dim(dim, input.ndim, op)
    idx = _dim_index(index, input, d, op)
    if idx.ndim > 1:
        raise ShapeError(f"{op}: index must be 1-d (or 0-d), got shape {tuple(idx.shape)}")
    return d, idx.reshape(-1)


@tensor_method()
def index_select(input, dim: int, index) -> Tensor:
    """The slices of `input` at positions `index` (1-d) along `dim`, in that order."""
    d, idx = _vector_index(input, dim, index, "index_select")
    if input.ndim == 0:  # torch reads a 0-d input as 1-d, given exactly one index
        if idx.size != 1:
            raise ShapeError(f"index_select: a 0-d input takes exactly one index, got "
                             f"{idx.size}")
        return input.reshape(1)[idx].reshape(())
    return Index.apply(input, index=(_ALL,) * d + (idx,), unique=False)


# ------------------------------------------------------------------------- masks
def _bool_mask(mask, op: str) -> Tensor:
    if not isinstance(mask, Tensor) or mask._data.dtype.kind != "b":
        got = mask.dtype if isinstance(mask, Tensor) else type(mask).__name__
        raise DTypeError(f"{op}: mask must be a bool tensor, got {got}; e.g. use mask.bool() "
                         "or a comparison such as x > 0")
    return mask


@tensor_method()
def masked_fill(input, mask, value) -> Tensor:
    """`input` with `value` (a number or 0-d tensor, which gets a gradient) where `mask`
    holds; input and mask broadcast together."""
    mask = _bool_mask(mask, "masked_fill")
    if isinstance(value, Tensor):
        if value.ndim:
            raise ShapeError(f"masked_fill: value must be a number or a 0-d tensor, got a "
                             f"tensor of shape {tuple(value.shape)}")
        value = value.to(input.dtype)
    else:
        value = scalar_tensor(value, input)
    return where(mask, value, input)


@tensor_method()
def masked_select(input, mask) -> Tensor:
    """The elements of `input` where `mask` holds, as a 1-d tensor (both broadcast)."""
    mask = _bool_mask(mask, "masked_select")
    shape = broadcast_shapes(input.shape, mask.shape)
    return _getitem(input.expand(shape), mask.expand(shape))


@tensor_method()
def nonzero(input, *, as_tuple: bool = False):
    """Indices of the non-zero elements: an (n, ndim) int64 tensor, or with `as_tuple`
    one 1-d tensor per dim. Not differentiable."""
    dev = input._device
    xp = dev.xp
    data = input._data.reshape(1) if input.ndim == 0 else input._data  # 0-d acts as 1-d
    coords = [c.astype(_INT64, copy=False) for c in xp.nonzero(data)]
    if as_tuple:
        return tuple(Tensor._make(c, dev) for c in coords)
    if input.ndim == 0:
        return Tensor._make(xp.zeros((coords[0].size, 0), dtype=_INT64), dev)
    return Tensor._make(xp.stack(coords, axis=1), dev)


@tensor_method()
def argwhere(input) -> Tensor:
    """`nonzero(input)`: an (n, ndim) tensor of the indices of non-zero elements."""
    return nonzero(input)


# ------------------------------------------------------------------ triangles
class Triangle(Function):
    def forward(self, x, diagonal, upper):
        self.diagonal, self.upper = diagonal, upper
        return (self.xp.triu if upper else self.xp.tril)(x, diagonal)

    def backward(self, g):
        return (Triangle.apply(g, diagonal=self.diagonal, upper=self.upper),)


def _triangle(input, diagonal, upper, op):
    if input.ndim < 2:
        raise ShapeError(f"{op}: needs a matrix or a batch of matrices, got a tensor with "
                         f"{input.ndim} dimension(s)")
    return Triangle.apply(input, diagonal=int(diagonal), upper=upper)


@tensor_method()
def tril(input, diagonal: int = 0) -> Tensor:
    """The lower triangle of the last two dims (on and below diagonal `diagonal`), zeros
    elsewhere."""
    return _triangle(input, diagonal, False, "tril")


@tensor_method()
def triu(input, diagonal: int = 0) -> Tensor:
    """The upper triangle of the last two dims (on and above diagonal `diagonal`), zeros
    elsewhere."""
    return _triangle(input, diagonal, True, "triu")
