"""Combining and splitting tensors, and the layout ops built from the shape ops: the stack
family (hstack, vstack, dstack, column_stack), tensor_split and h/v/dsplit, fliplr/flipud,
rot90, meshgrid, cartesian_prod, combinations, block_diag, repeat_interleave, diff, ravel,
sum_to_size, Tensor.unfold, as_strided, and the in-place squeeze_/unsqueeze_/t_/transpose_.

Each is a composition of cat, narrow, flip, transpose, expand and indexing, so its gradient
(and every higher one) is theirs.
"""

from __future__ import annotations

import itertools
import numbers

from .. import dtypes
from ..autograd.grad_mode import STATE
from ..creation import zeros
from ..errors import ShapeError
from ..tensor import Tensor
from ._util import normalize_dim, sum_to, tensor_method
from .inplace import _check_leaf
from .shape import broadcast_shapes, cat, flip, narrow, stack

__all__ = ["tensor_split", "hsplit", "vsplit", "dsplit", "hstack", "vstack", "dstack",
           "column_stack", "row_stack", "fliplr", "flipud", "rot90", "meshgrid",
           "cartesian_prod", "combinations", "block_diag", "repeat_interleave", "diff",
           "ravel", "as_strided", "atleast_1d", "atleast_2d", "atleast_3d"]

_INT64 = dtypes.int64.np


def _index_tensor(values, like: Tensor) -> Tensor:
    xp = like._device.xp
    return Tensor._make(xp.asarray(values, dtype=_INT64), like._device)


# ------------------------------------------------------------------- splitting
@tensor_method()
def tensor_split(input, indices_or_sections, dim: int = 0) -> tuple:
    """Views of `input` split along `dim`: into n nearly equal pieces for an int n (the
    first size % n one longer), or at the given indices (input[:i0], input[i0:i1], ...)."""
    d = normalize_dim(dim, input.ndim, "tensor_split")
    n = input.shape[d]
    sections = indices_or_sections
    if isinstance(sections, Tensor):
        sections = sections.tolist() if sections.ndim else int(sections.item())
    if isinstance(sections, numbers.Integral):
        if sections <= 0:
            raise ShapeError(f"tensor_split: the number of sections must be positive, got "
                             f"{sections}")
        size, extra = divmod(n, int(sections))
        bounds = list(itertools.accumulate([size + 1] * extra + [size] * (sections - extra)))
        bounds = bounds[:-1]
    else:
        bounds = [int(i) for i in sections]
    starts = [0] + [min(max(b if b >= 0 else b + n, 0), n) for b in bounds]
    ends = starts[1:] + [n]
    return tuple(narrow(input, d, s, max(e - s, 0)) for s, e in zip(starts, ends))


def _even_split(input, sections, dim: int, need: int, op: str) -> tuple:
    if input.ndim < need:
        raise ShapeError(f"{op}: needs a tensor with at least {need} dimension(s), got shape "
                         f"{tuple(input.shape)}")
    if isinstance(sections, numbers.Integral) and (sections <= 0 or
                                                   input.shape[dim] % sections):
        raise ShapeError(f"{op}: dimension {dim} of size {input.shape[dim]} cannot be split "
                         f"into {sections} equal pieces; valid: a divisor of "
                         f"{input.shape[dim]}, or a list of indices")
    return tensor_split(input, sections, dim)


@tensor_method()
def hsplit(input, indices_or_sections) -> tuple:
    """tensor_split along dim 1 (dim 0 for 1-d tensors); an int must divide evenly."""
    return _even_split(input, indices_or_sections, 1 if input.ndim > 1 else 0, 1, "hsplit")


@tensor_method()
def vsplit(input, indices_or_sections) -> tuple:
    """tensor_split along dim 0 of a tensor of 2 or more dims; an int must divide evenly."""
    return _even_split(input, indices_or_sections, 0, 2, "vsplit")


@tensor_method()
def dsplit(input, indices_or_sections) -> tuple:
    """tensor_split along dim 2 of a tensor of 3 or more dims; an int must divide evenly."""
    return _even_split(input, indices_or_sections, 2, 3, "dsplit")


# -------------------------------------------------------------------- stacking
def atleast_1d(*tensors):
    """Each tensor with at least 1 dim (0-d becomes shape (1,))."""
    out = [t.reshape(1) if t.ndim == 0 else t for t in _tensors(tensors)]
    return out[0] if len(out) == 1 else tuple(out)


def atleast_2d(*tensors):
    """Each tensor with at least 2 dims (a 1-d tensor of n becomes (1, n))."""
    out = [t.reshape((1,) * (2 - t.ndim) + tuple(t.shape)) if t.ndim < 2 else t
           for t in _tensors(tensors)]
    return out[0] if len(out) == 1 else tuple(out)


def atleast_3d(*tensors):
    """Each tensor with at least 3 dims: (n,) becomes (1, n, 1), (a, b) becomes (a, b, 1)."""
    def lift(t):
        if t.ndim == 0:
            return t.reshape(1, 1, 1)
        if t.ndim == 1:
            return t.reshape(1, t.shape[0], 1)
        return t.unsqueeze(-1) if t.ndim == 2 else t

    out = [lift(t) for t in _tensors(tensors)]
    return out[0] if len(out) == 1 else tuple(out)


def _tensors(tensors) -> list:
    """The tensors of a call given as f(a, b) or f([a, b])."""
    if len(tensors) == 1 and isinstance(tensors[0], list | tuple):
        return list(tensors[0])
    return list(tensors)


def _as_list(result) -> list:
    return [result] if isinstance(result, Tensor) else list(result)


def hstack(tensors) -> Tensor:
    """Concatenate along dim 1 (dim 0 for 1-d tensors)."""
    ts = _as_list(atleast_1d(list(tensors)))
    return cat(ts, 0 if ts[0].ndim == 1 else 1)


def vstack(tensors) -> Tensor:
    """Concatenate along dim 0 after making each tensor at least 2-d."""
    return cat(_as_list(atleast_2d(list(tensors))), 0)


row_stack = vstack


def dstack(tensors) -> Tensor:
    """Concatenate along dim 2 after making each tensor at least 3-d."""
    return cat(_as_list(atleast_3d(list(tensors))), 2)


def column_stack(tensors) -> Tensor:
    """0-d and 1-d tensors as columns, then concatenated along dim 1."""
    return cat([t.reshape(t.numel(), 1) if t.ndim <= 1 else t for t in tensors], 1)


# --------------------------------------------------------------- rearranging
def _check_ndim(input: Tensor, need: int, op: str) -> None:
    if input.ndim < need:
        raise ShapeError(f"{op}: needs a tensor with at least {need} dimension(s), got shape "
                         f"{tuple(input.shape)}")


@tensor_method()
def fliplr(input) -> Tensor:
    """Reverse dim 1 (left and right) of a tensor of 2 or more dims."""
    _check_ndim(input, 2, "fliplr")
    return flip(input, 1)


@tensor_method()
def flipud(input) -> Tensor:
    """Reverse dim 0 (up and down)."""
    _check_ndim(input, 1, "flipud")
    return flip(input, 0)


@tensor_method()
def rot90(input, k: int = 1, dims=(0, 1)) -> Tensor:
    """Rotate by 90 degrees `k` times in the plane of `dims`, from the first dim towards
    the second."""
    if len(dims) != 2:
        raise ShapeError(f"rot90: dims must name 2 dimensions, got {tuple(dims)}")
    d0, d1 = (normalize_dim(d, input.ndim, "rot90") for d in dims)
    if d0 == d1 or input.ndim < 2:
        raise ShapeError(f"rot90: dims {tuple(dims)} must be two different dimensions of a "
                         f"tensor with at least 2 (got shape {tuple(input.shape)})")
    k %= 4
    if k == 1:
        return flip(input, d1).transpose(d0, d1)
    if k == 2:
        return flip(input, (d0, d1))
    if k == 3:
        return flip(input, d0).transpose(d0, d1)
    return input.clone()


def meshgrid(*tensors, indexing: str = "ij") -> tuple:
    """Coordinate grids from 1-d tensors: with 'ij' output i varies along dim i; 'xy'
    swaps the first two dims (Cartesian indexing)."""
    ts = _tensors(tensors)
    if indexing not in ("ij", "xy"):
        raise ValueError(f"meshgrid: indexing must be 'ij' or 'xy', got {indexing!r}")
    for t in ts:
        if t.ndim > 1:
            raise ShapeError(f"meshgrid: expects 0-d or 1-d tensors, got shape "
                             f"{tuple(t.shape)}")
    ts = [t.reshape(-1) for t in ts]
    swap = indexing == "xy" and len(ts) >= 2
    if swap:
        ts[0], ts[1] = ts[1], ts[0]
    shape = tuple(t.shape[0] for t in ts)
    grids = [t.reshape((1,) * i + (-1,) + (1,) * (len(ts) - i - 1)).expand(shape)
             for i, t in enumerate(ts)]
    if swap:
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


def cartesian_prod(*tensors) -> Tensor:
    """Every combination of one element from each 1-d tensor, one per row (itertools.product
    order); a single tensor comes back as it is."""
    ts = _tensors(tensors)
    if len(ts) == 1:
        return ts[0]
    return stack([g.reshape(-1) for g in meshgrid(*ts, indexing="ij")], 1)


def combinations(input, r: int = 2, with_replacement: bool = False) -> Tensor:
    """The length-`r` combinations of a 1-d tensor's elements, one per row (itertools
    order), with repeated elements when `with_replacement`."""
    if input.ndim != 1:
        raise ShapeError(f"combinations: expects a 1-d tensor, got shape {tuple(input.shape)}")
    if r < 0:
        raise ValueError(f"combinations: r must be non-negative, got {r}")
    pick = itertools.combinations_with_replacement if with_replacement else \
        itertools.combinations
    rows = list(pick(range(input.shape[0]), r))
    if r == 0:
        return zeros(0, dtype=input.dtype, device=input.device)
    if not rows:
        return zeros((0, r), dtype=input.dtype, device=input.device)
    return input[_index_tensor(rows, input)]


def block_diag(*tensors) -> Tensor:
    """The tensors (0-d, 1-d as one row, or 2-d) as blocks down the diagonal of a matrix of
    zeros."""
    blocks = []
    for t in tensors:
        if t.ndim > 2:
            raise ShapeError(f"block_diag: expects tensors of at most 2 dims, got shape "
                             f"{tuple(t.shape)}")
        blocks.append(t.reshape((1,) * (2 - t.ndim) + tuple(t.shape)))
    if not blocks:
        raise ShapeError("block_diag: needs at least one tensor")
    dt = dtypes.result_type(*blocks)
    blocks = [b if b._data.dtype == dt else b.to(dt) for b in blocks]
    width = sum(b.shape[1] for b in blocks)
    rows, left = [], 0
    for b in blocks:
        h, w = b.shape
        parts = [zeros((h, left), dtype=dt, device=b.device), b,
                 zeros((h, width - left - w), dtype=dt, device=b.device)]
        rows.append(cat(parts, 1))
        left += w
    return cat(rows, 0)


# --------------------------------------------------------- repeats and differences
@tensor_method()
def repeat_interleave(input, repeats=None, dim=None, *, output_size=None) -> Tensor:
    """Each element (or slice along `dim`) repeated `repeats` times in place: an int, or a
    tensor with one count per element. `repeat_interleave(counts)` alone repeats each index
    by its count."""
    if repeats is None:
        counts = input
        base = Tensor._make(counts._device.xp.arange(counts.shape[0], dtype=_INT64),
                            counts._device)
        return repeat_interleave(base, counts, 0)
    x = input.reshape(-1) if dim is None else input
    d = 0 if dim is None else normalize_dim(dim, x.ndim, "repeat_interleave")
    xp = x._device.xp
    n = x.shape[d] if x.ndim else 1
    counts = repeats._data if isinstance(repeats, Tensor) else repeats
    counts = xp.broadcast_to(xp.asarray(counts, dtype=_INT64).reshape(-1), (n,)) \
        if xp.asarray(counts).size == 1 else xp.asarray(counts, dtype=_INT64).reshape(-1)
    if counts.shape[0] != n:
        raise ShapeError(f"repeat_interleave: repeats has {counts.shape[0]} counts but "
                         f"dimension {d} has size {n}; valid: one count, or one per element")
    if bool((counts < 0).any()):
        raise ValueError("repeat_interleave: repeats must be non-negative")
    # position j of the output comes from the first element whose running count passes j
    ends = xp.cumsum(counts)
    total = int(ends[-1]) if n else 0
    index = Tensor._make(xp.searchsorted(ends, xp.arange(total, dtype=_INT64), side="right")
                         .astype(_INT64), x._device)
    if output_size is not None and index.shape[0] != output_size:
        raise ShapeError(f"repeat_interleave: output_size={output_size} but the repeats "
                         f"add up to {index.shape[0]}")
    return x.reshape(1).index_select(0, index) if x.ndim == 0 else x.index_select(d, index)


@tensor_method()
def diff(input, n: int = 1, dim: int = -1, prepend=None, append=None) -> Tensor:
    """The n-th forward difference along `dim`, out[i] = x[i + 1] - x[i] (n times), after
    concatenating `prepend` and `append` to the input along `dim`; bools give xor."""
    _check_ndim(input, 1, "diff")
    d = normalize_dim(dim, input.ndim, "diff")
    parts = [p for p in (prepend, input, append) if p is not None]
    x = cat(parts, d) if len(parts) > 1 else input
    for _ in range(n):
        size = x.shape[d]
        if size == 0:
            break
        later, earlier = narrow(x, d, 1, size - 1), narrow(x, d, 0, size - 1)
        x = later ^ earlier if x._data.dtype.kind == "b" else later - earlier
    return x


# --------------------------------------------------------------- views and sizes
@tensor_method()
def ravel(input) -> Tensor:
    """The elements as a 1-d tensor (a view when the layout allows)."""
    return input.reshape(-1)


@tensor_method()
def sum_to_size(self, *size) -> Tensor:
    """Sum this tensor down to `size`, which must broadcast to its shape."""
    target = tuple(size[0]) if len(size) == 1 and not isinstance(size[0], numbers.Integral) \
        else tuple(size)
    if tuple(broadcast_shapes(target, tuple(self.shape))) != tuple(self.shape):
        raise ShapeError(f"sum_to_size: size {target} is not expandable to the tensor's shape "
                         f"{tuple(self.shape)}")
    return sum_to(self, target)


@tensor_method("unfold")
def _windows(self, dimension: int, size: int, step: int) -> Tensor:
    """Tensor.unfold: every window of `size` along `dimension`, `step` apart, as a new last
    dim (dimension becomes the number of windows). A copy here, not a view as in torch."""
    x = self.reshape(1) if self.ndim == 0 else self
    d = normalize_dim(dimension, x.ndim, "unfold")
    n = x.shape[d]
    if size < 0 or size > n or step <= 0:
        raise ShapeError(f"unfold: size {size} and step {step} do not fit dimension {d} of "
                         f"size {n}; valid: 0 <= size <= {n}, step > 0")
    xp = x._device.xp
    starts = xp.arange(0, n - size + 1, step, dtype=_INT64)
    index = (starts[:, None] + xp.arange(size, dtype=_INT64)).reshape(-1)
    picked = x.index_select(d, Tensor._make(index, x._device))
    shape = tuple(x.shape[:d]) + (starts.shape[0], size) + tuple(x.shape[d + 1:])
    out = picked.reshape(shape).movedim(d + 1, -1)
    return out.reshape(-1) if self.ndim == 0 else out


@tensor_method()
def as_strided(input, size, stride, storage_offset: int = 0) -> Tensor:
    """The elements at storage_offset + Σ iₖ·strideₖ of the input's contiguous (row-major)
    element order, in the shape `size`; a gathered copy (gradients of overlapping windows
    add up), where torch returns a view of the storage."""
    size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    if len(size) != len(stride):
        raise ShapeError(f"as_strided: size {size} and stride {stride} must have the same "
                         "length")
    xp = input._device.xp
    index = xp.full(size, storage_offset, dtype=_INT64)
    for k, (s, st) in enumerate(zip(size, stride)):
        index = index + (xp.arange(s, dtype=_INT64) * st).reshape(
            (1,) * k + (s,) + (1,) * (len(size) - k - 1))
    numel = input.numel()
    if index.size and (int(index.min()) < 0 or int(index.max()) >= numel):
        raise ShapeError(f"as_strided: size {size}, stride {stride} and offset "
                         f"{storage_offset} reach outside the {numel} elements of the input")
    return input.reshape(-1)[Tensor._make(index, input._device)]


# ------------------------------------------------------------- in-place views
def _reshape_inplace(name: str, view_of):
    """`name_`: replace this tensor's shape by that of the view `view_of(self, ...)`; its
    version counter moves, so a graph that saved it under the old shape refuses to run."""

    def method(self, *args, **kwargs):
        if STATE.enabled and self.requires_grad:
            _check_leaf(self, name)
        new = view_of(self, *args, **kwargs)
        self._data = new._data
        if new.requires_grad and STATE.enabled:
            self.grad_fn, self.requires_grad = new.grad_fn, True
        if self._view is not None:
            self._view = new._view
        self._vc[0] += 1
        return self

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"In-place `{name[:-1]}`: changes this tensor's shape and returns it."
    return method


for _name in ("squeeze", "unsqueeze", "t", "transpose", "swapaxes", "swapdims", "as_strided"):
    setattr(Tensor, f"{_name}_", _reshape_inplace(f"{_name}_", getattr(Tensor, _name)))
