"""Sorting and searching: sort, argsort, msort, topk, kthvalue, mode, unique,
unique_consecutive, searchsorted, bucketize, isin.

The order is found on arrays (a stable sort, NaN last ascending and first descending, as
torch); the values are then gathered from the input with it, so their gradient is gather's
(a scatter-add back to the picked positions) and double backward comes with it.
"""

from __future__ import annotations

from collections import namedtuple

from .. import dtypes
from ..errors import DTypeError, ShapeError
from ..tensor import Tensor
from ._util import normalize_dim, running, tensor_method
from .indexing import gather

__all__ = ["sort", "argsort", "msort", "topk", "kthvalue", "mode", "unique",
           "unique_consecutive", "searchsorted", "bucketize", "isin"]

# torch.return_types: a named (values, indices) pair per op
_PAIRS = {op: namedtuple(op, ("values", "indices")) for op in ("sort", "topk", "kthvalue",
                                                               "mode")}
_INT64 = dtypes.int64.np


def _order(xp, a, axis: int, descending: bool):
    """Stable argsort along `axis`; descending keeps equal elements in their given order."""
    if a.dtype.kind in "bu":  # sortable keys: bools and unsigned sort as int64
        a = a.astype(_INT64)
    if not descending:
        return xp.argsort(a, axis=axis, kind="stable")
    # the ascending stable order of the reversed array, reversed again: largest (NaN) first
    n = a.shape[axis]
    rev = xp.argsort(xp.flip(a, axis), axis=axis, kind="stable")
    return (n - 1) - xp.flip(rev, axis)


def _as_1d(input: Tensor) -> Tensor:
    return input.reshape(1) if input.ndim == 0 else input


def _picked(input: Tensor, order, d: int, op: str):
    """(values, indices) of `input` at the positions `order` along `d` (0-d stays 0-d)."""
    x = _as_1d(input)
    index = Tensor._make(order.astype(_INT64, copy=False), x._device)
    values = gather(x, d, index)
    if input.ndim == 0:
        values, index = values.reshape(()), index.reshape(())
    return _PAIRS[op](values, index)


@tensor_method()
def sort(input, dim: int = -1, descending: bool = False, *, stable: bool = False):
    """(values, indices) sorted along `dim`; always stable (equal elements keep their order),
    NaN counts as the largest value, as in torch."""
    d = normalize_dim(dim, input.ndim, "sort")
    x = _as_1d(input)
    return _picked(input, _order(x._device.xp, x._data, d, descending), d, "sort")


@tensor_method()
def argsort(input, dim: int = -1, descending: bool = False, *,
            stable: bool = False) -> Tensor:
    """The indices that sort `input` along `dim` (as `sort(...).indices`)."""
    d = normalize_dim(dim, input.ndim, "argsort")
    x = _as_1d(input)
    order = _order(x._device.xp, x._data, d, descending).astype(_INT64, copy=False)
    out = Tensor._make(order, x._device)
    return out.reshape(()) if input.ndim == 0 else out


@tensor_method()
def msort(input) -> Tensor:
    """`input` sorted along its first dimension (the values of `sort(input, 0)`)."""
    return sort(input, 0).values


def _check_k(k, n: int, op: str, low: int) -> int:
    if not isinstance(k, int) or not low <= k <= n:
        raise ShapeError(f"{op}: k={k} is out of range for a dimension of size {n}; "
                         f"valid: {low} <= k <= {n}")
    return k


@tensor_method()
def topk(input, k: int, dim: int = -1, largest: bool = True, sorted: bool = True):
    """The `k` largest (or smallest) elements along `dim` and their indices, largest first
    (smallest first with `largest=False`)."""
    d = normalize_dim(dim, input.ndim, "topk")
    x = _as_1d(input)
    _check_k(k, x.shape[d], "topk", 0)
    order = _order(x._device.xp, x._data, d, largest)
    keep = (slice(None),) * d + (slice(0, k),)
    return _picked(input, order[keep], d, "topk")


def _select_rank(input, rank_of, dim, keepdim, op):
    """(values, indices) of the element at sorted position `rank_of(sorted, order)` along
    `dim`, reduced (kept as size 1 with `keepdim`)."""
    d = normalize_dim(dim, input.ndim, op)
    x = _as_1d(input)
    xp = x._device.xp
    order = _order(xp, x._data, d, False)
    at = rank_of(xp, xp.take_along_axis(x._data, order, axis=d), order, d)
    values, index = _picked(input, xp.take_along_axis(order, at, axis=d), d, op)
    if not keepdim and input.ndim:
        values, index = values.squeeze(d), index.squeeze(d)
    return _PAIRS[op](values, index)


@tensor_method()
def kthvalue(input, k: int, dim: int = -1, keepdim: bool = False):
    """The `k`-th smallest element (k counts from 1) along `dim` and its index."""
    n = _as_1d(input).shape[normalize_dim(dim, input.ndim, "kthvalue")]
    _check_k(k, n, "kthvalue", 1)

    def rank(xp, ordered, order, d):
        shape = list(order.shape)
        shape[d] = 1
        return xp.full(shape, k - 1, dtype=_INT64)

    return _select_rank(input, rank, dim, keepdim, "kthvalue")


def _mode_rank(xp, ordered, order, d):
    """The sorted position of the last element of the longest run (the smallest value on a
    tie of run lengths): the last occurrence of the mode, as torch's CPU kernel returns."""
    n = ordered.shape[d]
    moved = xp.moveaxis(ordered, d, -1)
    starts = xp.ones(moved.shape, dtype=bool)
    starts[..., 1:] = moved[..., 1:] != moved[..., :-1]
    positions = xp.arange(n)
    run_start = running(xp, xp.where(starts, positions, 0), xp.maximum)
    length = positions - run_start + 1
    ends = xp.ones(moved.shape, dtype=bool)
    ends[..., :-1] = starts[..., 1:]
    # the first run end of the greatest length: argmax picks the first maximum
    best = xp.argmax(xp.where(ends, length, 0), axis=-1)
    # the latest original index among that run's equal elements
    run = xp.moveaxis(order, d, -1)
    in_run = (positions >= xp.take_along_axis(run_start, best[..., None], -1)) & \
        (positions <= best[..., None])
    last = xp.argmax(xp.where(in_run, run, -1), axis=-1)
    return xp.expand_dims(last, d)


@tensor_method()
def mode(input, dim: int = -1, keepdim: bool = False):
    """The most frequent value along `dim` (the smallest on a tie) and the index of its last
    occurrence."""
    if input.numel() == 0:
        raise ShapeError(f"mode: cannot compute the mode of an empty tensor of shape "
                         f"{tuple(input.shape)}")
    return _select_rank(input, _mode_rank, dim, keepdim, "mode")


def _unique_results(dev, values, inverse, counts, return_inverse, return_counts):
    out = [Tensor._make(values, dev)]
    if return_inverse:
        out.append(Tensor._make(inverse.astype(_INT64, copy=False), dev))
    if return_counts:
        out.append(Tensor._make(counts.astype(_INT64, copy=False), dev))
    return out[0] if len(out) == 1 else tuple(out)


def _runs(xp, moved, dim_given: bool):
    """Flags where a new run starts along the first axis of `moved` (rows compared whole
    when a dim was given)."""
    n = moved.shape[0]
    starts = xp.ones(n, dtype=bool)
    if n > 1:
        differ = moved[1:] != moved[:-1]
        starts[1:] = differ.reshape(n - 1, -1).any(axis=1) if dim_given else differ
    return starts


def _unique_along(input: Tensor, dim, sort_first: bool, op: str):
    """(values, inverse, counts) arrays of the distinct runs along `dim` (the flattened
    input when None), after sorting when `sort_first`."""
    xp = input._device.xp
    data = input._data
    if dim is None:
        moved = data.reshape(-1)
    else:
        d = normalize_dim(dim, input.ndim, op)
        moved = xp.moveaxis(data, d, 0)
    n = moved.shape[0]
    if sort_first and dim is None:
        order = _order(xp, moved, 0, False)
    elif sort_first:  # lexicographic order of the slices along dim
        flat = moved.reshape(n, -1)
        order = xp.lexsort(flat.T[::-1]) if flat.shape[1] else xp.arange(n)
    else:
        order = xp.arange(n)
    ordered = moved[order]
    starts = _runs(xp, ordered, dim is not None)
    group = xp.cumsum(starts) - 1
    inverse = xp.empty(n, dtype=_INT64)
    inverse[order] = group
    first = xp.nonzero(starts)[0]
    counts = xp.diff(xp.concatenate([first, xp.asarray([n])]))
    values = ordered[first]
    if dim is None:
        return values, inverse.reshape(data.shape), counts
    return xp.moveaxis(values, 0, d), inverse, counts


@tensor_method()
def unique(input, sorted: bool = True, return_inverse: bool = False,
           return_counts: bool = False, dim=None):
    """The distinct values in ascending order (the distinct slices along `dim`), and on
    request the inverse (where each element went) and the counts. Not differentiable."""
    values, inverse, counts = _unique_along(input, dim, True, "unique")
    return _unique_results(input._device, values, inverse, counts, return_inverse,
                           return_counts)


@tensor_method()
def unique_consecutive(input, return_inverse: bool = False, return_counts: bool = False,
                       dim=None):
    """Each run of equal consecutive values (slices along `dim`) collapsed to one."""
    values, inverse, counts = _unique_along(input, dim, False, "unique_consecutive")
    return _unique_results(input._device, values, inverse, counts, return_inverse,
                           return_counts)


def _index_dtype(out_int32: bool):
    return dtypes.int32.np if out_int32 else _INT64


def searchsorted(sorted_sequence, input, *, out_int32: bool = False, right: bool = False,
                 side=None, sorter=None) -> Tensor:
    """For each value of `input`, the index where it would be inserted to keep the last dim
    of `sorted_sequence` sorted (after the equal ones with `right=True` or side='right').
    A 1-d sequence serves every value; otherwise the leading dims must match `input`'s."""
    if side is not None:
        if side not in ("left", "right"):
            raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
        if right and side == "left":
            raise ValueError("searchsorted: side='left' contradicts right=True")
        right = side == "right"
    which = "right" if right else "left"
    seq = sorted_sequence
    if sorter is not None:
        seq = gather(seq, -1, sorter)
    values = input if isinstance(input, Tensor) else Tensor._make(
        seq._device.xp.asarray(input, dtype=seq._data.dtype), seq._device)
    xp = seq._device.xp
    s, v = seq._data, values._data
    if s.ndim == 1:
        out = xp.searchsorted(s, v, side=which)
    else:
        if s.shape[:-1] != v.shape[:-1]:
            raise ShapeError(f"searchsorted: sorted_sequence of shape {tuple(seq.shape)} and "
                             f"input of shape {tuple(values.shape)} must have the same "
                             "leading dims (all but the last), or give a 1-d sequence")
        rows_s = s.reshape(-1, s.shape[-1])
        rows_v = v.reshape(-1, v.shape[-1])
        out = xp.stack([xp.searchsorted(a, b, side=which) for a, b in zip(rows_s, rows_v)]) \
            if rows_s.shape[0] else xp.empty(rows_v.shape, dtype=_INT64)
        out = out.reshape(v.shape)
    return Tensor._make(xp.asarray(out).astype(_index_dtype(out_int32)), seq._device)


def bucketize(input, boundaries, *, out_int32: bool = False, right: bool = False) -> Tensor:
    """The bucket of each element among the 1-d sorted `boundaries`: i with
    boundaries[i-1] < x <= boundaries[i] (boundaries[i-1] <= x < boundaries[i] with
    `right=True`)."""
    if boundaries.ndim != 1:
        raise ShapeError(f"bucketize: boundaries must be 1-d, got shape "
                         f"{tuple(boundaries.shape)}")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


def isin(elements, test_elements, *, assume_unique: bool = False, invert: bool = False):
    """A bool tensor of `elements`' shape: whether each is among `test_elements` (a tensor
    or a number); with `invert`, whether it is not."""
    like = elements if isinstance(elements, Tensor) else test_elements
    if not isinstance(like, Tensor):
        raise DTypeError("isin: at least one of elements and test_elements must be a Tensor")
    xp = like._device.xp
    a = elements._data if isinstance(elements, Tensor) else xp.asarray(elements)
    b = test_elements._data if isinstance(test_elements, Tensor) else xp.asarray(test_elements)
    out = xp.isin(a, b, invert=invert)
    return Tensor._make(xp.asarray(out), like._device)
