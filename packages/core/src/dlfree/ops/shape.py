"""Shape and layout ops: reshape/view, permute/transpose, expand, cat/stack, split, flip, ..."""

from __future__ import annotations

import numbers

from ..autograd.function import Function
from ..errors import ShapeError
from ..tensor import Tensor
from ._util import normalize_dim, sum_to, tensor_method

__all__ = ["reshape", "permute", "transpose", "broadcast_to", "squeeze", "unsqueeze"]


def _shape_arg(shape) -> tuple:
    if len(shape) == 1 and not isinstance(shape[0], numbers.Integral):
        shape = tuple(shape[0])
    return tuple(int(s) for s in shape)


def _resolve_shape(shape: tuple, numel: int, src: tuple, op: str) -> tuple:
    """Fill in one -1 and check that `shape` holds exactly `numel` elements."""
    known = 1
    free = [i for i, s in enumerate(shape) if s == -1]
    for s in shape:
        if s != -1:
            if s < 0:
                raise ShapeError(f"{op}: invalid size {s} in shape {shape}")
            known *= s
    if len(free) > 1:
        raise ShapeError(f"{op}: only one dimension can be inferred (-1), got shape {shape}")
    if free:
        if known == 0 or numel % known:
            raise ShapeError(f"{op}: shape {shape} is invalid for input of shape {src} "
                             f"({numel} elements)")
        shape = shape[:free[0]] + (numel // known,) + shape[free[0] + 1:]
    elif known != numel:
        raise ShapeError(f"{op}: shape {shape} is invalid for input of shape {src} "
                         f"({numel} elements); the sizes must multiply to {numel}")
    return shape


class Reshape(Function):
    def forward(self, x, shape):
        self.src = x.shape
        return x.reshape(shape)

    def backward(self, g):
        return (g.reshape(self.src),)


@tensor_method()
def reshape(input, *shape) -> Tensor:
    """The same elements in a new shape; a view when the layout allows, else a copy."""
    shape = _resolve_shape(_shape_arg(shape), input._data.size, tuple(input.shape), "reshape")
    if shape == input._data.shape:
        return input
    return Reshape.apply(input, shape=shape)


@tensor_method()
def view(self, *shape) -> Tensor:
    """Like reshape, but fails instead of copying when the layout cannot be viewed."""
    shape = _resolve_shape(_shape_arg(shape), self._data.size, tuple(self.shape), "view")
    if not self._data.flags.c_contiguous and self._data.size > 1:
        try:
            probe = self._data.view()
            probe.shape = shape
        except AttributeError:
            raise ShapeError(
                f"view: size {shape} is not compatible with input of shape {tuple(self.shape)} "
                f"and strides {self.stride()}; use .reshape(...) instead"
            ) from None
    return Reshape.apply(self, shape=shape)


class Permute(Function):
    def forward(self, x, dims):
        self.dims = dims
        return x.transpose(dims)

    def backward(self, g):
        inverse = [0] * len(self.dims)
        for i, d in enumerate(self.dims):
            inverse[d] = i
        return (g.permute(tuple(inverse)),)


@tensor_method()
def permute(input, *dims) -> Tensor:
    dims = _shape_arg(dims)
    if len(dims) != input.ndim:
        raise ShapeError(f"permute: number of dims {len(dims)} does not match the input's "
                         f"{input.ndim} dimensions")
    norm = tuple(normalize_dim(d, input.ndim, "permute") for d in dims)
    if sorted(norm) != list(range(input.ndim)):
        raise ShapeError(f"permute: dims {dims} must be a permutation of 0..{input.ndim - 1}")
    return Permute.apply(input, dims=norm)


@tensor_method("transpose", "swapaxes", "swapdims")
def transpose(input, dim0: int, dim1: int) -> Tensor:
    n = input.ndim
    d0, d1 = normalize_dim(dim0, n, "transpose"), normalize_dim(dim1, n, "transpose")
    if d0 == d1 or n < 2:
        return input
    dims = list(range(n))
    dims[d0], dims[d1] = d1, d0
    return Permute.apply(input, dims=tuple(dims))


class Expand(Function):
    def forward(self, x, shape):
        self.src = x.shape
        return self.xp.broadcast_to(x, shape)

    def backward(self, g):
        return (sum_to(g, self.src),)


@tensor_method("broadcast_to")
def broadcast_to(input, shape) -> Tensor:
    shape = tuple(shape)
    src = tuple(input.shape)
    lead = len(shape) - len(src)
    if lead < 0:
        raise ShapeError(f"expand: the target shape {shape} has fewer dimensions than the "
                         f"input's {src}")
    resolved = []
    for i, s in enumerate(shape):
        old = src[i - lead] if i >= lead else None
        if s == -1:
            if old is None:
                raise ShapeError(f"expand: -1 is not allowed in a new leading dimension {shape}")
            s = old
        if old is not None and old != s and old != 1:
            raise ShapeError(f"expand: the expanded size {s} must match the existing size {old} "
                             f"at dimension {i} (input shape {src}, target {shape}); only size-1 "
                             "dimensions can be expanded")
        resolved.append(s)
    resolved = tuple(resolved)
    if resolved == src:
        return input
    return Expand.apply(input, shape=resolved)


@tensor_method()
def expand(self, *shape) -> Tensor:
    """A broadcast view of this tensor in `shape` (-1 keeps a size); no memory is copied."""
    return broadcast_to(self, _shape_arg(shape))


@tensor_method()
def expand_as(self, other: Tensor) -> Tensor:
    return broadcast_to(self, tuple(other.shape))


@tensor_method()
def unsqueeze(input, dim: int) -> Tensor:
    d = normalize_dim(dim, input.ndim + 1, "unsqueeze")
    shape = list(input.shape)
    shape.insert(d, 1)
    return Reshape.apply(input, shape=tuple(shape))


@tensor_method()
def squeeze(input, dim=None) -> Tensor:
    """Drop size-1 dimensions (all of them, or those in `dim`)."""
    shape = tuple(input.shape)
    if dim is None:
        dims = {i for i, s in enumerate(shape) if s == 1}
    else:
        dims = {normalize_dim(d, input.ndim, "squeeze") for d in
                ((dim,) if isinstance(dim, numbers.Integral) else dim)}
        dims = {d for d in dims if input.ndim and shape[d] == 1}
    if not dims:
        return input
    return Reshape.apply(input, shape=tuple(s for i, s in enumerate(shape) if i not in dims))


@tensor_method("t")
def t(input) -> Tensor:
    if input.ndim > 2:
        raise ShapeError(f"t: expects a tensor with <= 2 dimensions, got {input.ndim}; "
                         "use transpose(dim0, dim1) or .mT")
    return transpose(input, 0, 1) if input.ndim == 2 else input


Tensor.T = property(lambda self: permute(self, tuple(range(self.ndim - 1, -1, -1))),
                    doc="All dimensions reversed.")
Tensor.mT = property(lambda self: transpose(self, -2, -1),
                     doc="The last two dimensions swapped (batched matrix transpose).")
