"""Scatter reductions: scatter_reduce, index_add, index_reduce, segment_reduce, segment_softmax.

Each op groups the source elements by the output position they go to and reduces all groups
at once with the backend's `group_reduce`: on the CPU a sort by target (skipped when the
targets are sorted already) and one `reduceat` per reduction (backends/segments.py), never a
Python loop over elements nor `np.add.at`. When the index picks whole slices (a 1-d index,
or one broadcast along the other dims, as graph layers pass it), the groups are slices and
only the index is sorted, not every element.

The gradients are PyTorch's: sum and mean send the output gradient back to their sources,
amax and amin split it evenly among the elements that attain the extreme, prod sends each
element the product of the others. Every rule is `g * A` for the input and
`gather(g * B) * C` for the source, with constant arrays A, B, C, so the backward is made
of differentiable tensor ops and second derivatives (through the gathers) come for free.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from ..autograd.function import Function
from ..errors import DTypeError, ShapeError
from ..tensor import Tensor
from ._util import check_float, normalize_dim, tensor_method
from .indexing import _along, _fit, _vector_index, gather, index_select

__all__ = ["scatter_reduce", "index_add", "index_reduce", "segment_reduce", "segment_softmax"]

_SCATTER_REDUCES = ("sum", "prod", "mean", "amax", "amin")
_INDEX_REDUCES = ("prod", "mean", "amax", "amin")
# segment_reduce's names (torch's) for the same reductions
_SEGMENT_REDUCES = {"sum": "sum", "mean": "mean", "max": "amax", "min": "amin", "prod": "prod"}


class Targets(NamedTuple):
    """Where a scatter's source elements go. With `rows`, the output is seen as `n` slices
    along `dim` and `ids` (M,) names the slice of each source slice; otherwise the output
    is seen flat (`n` elements) and `ids` names the element of each source element."""

    dim: int
    ids: Any
    n: int
    rows: bool
    index: Tensor | None  # the index tensor itself, which the elementwise path gathers with


def _grouped(xp, a, t: Targets):
    """An output-shaped array as (n, K): one row per target."""
    return xp.moveaxis(a, t.dim, 0).reshape(t.n, -1) if t.rows else a.reshape(-1, 1)


def _sources(xp, v, t: Targets):
    """A source block (the index's shape) as (M, K): one row per source slice or element."""
    return xp.moveaxis(v, t.dim, 0).reshape(t.ids.shape[0], -1) if t.rows else v.reshape(-1, 1)


def _ungrouped(xp, a2, t: Targets, shape: tuple):
    """The inverse of `_grouped` (or of `_sources`, given the source block's shape)."""
    if not t.rows:
        return a2.reshape(shape)
    moved = (shape[t.dim],) + shape[:t.dim] + shape[t.dim + 1:]
    return xp.moveaxis(a2.reshape(moved), 0, t.dim)


def _at_sources(g: Tensor, t: Targets) -> Tensor:
    """`g` (output-shaped) read at each source's target: the adjoint of the scatter."""
    if t.rows:
        return index_select(g, t.dim, Tensor._make(t.ids, g._device))
    return gather(g, t.dim, t.index)


class ScatterReduce(Function):
    """A copy of `x` with the source block `src` reduced into it at `targets`. No autocast
    policy: torch has none for these ops, and src must have x's dtype (index_add casts)."""

    def forward(self, x, src, targets, reduce, include_self):
        xp, t = self.xp, targets
        self.t, self.reduce, self.include_self = t, reduce, include_self
        self.x_shape, self.src_shape = x.shape, src.shape
        values = _sources(xp, src, t)
        red = self.device.backend.group_reduce(values, t.ids, t.n,
                                               "sum" if reduce == "mean" else reduce)
        self.counts = xp.bincount(t.ids, minlength=t.n)
        hit = (self.counts > 0)[:, None]
        base = _grouped(xp, x, t)
        if reduce == "mean":
            total = base + red if include_self else red
            denom = xp.maximum(self.counts + include_self, 1)[:, None].astype(x.dtype)
            mean = total // denom if x.dtype.kind in "iu" else total / denom
            out = xp.where(hit, mean, base)
        elif include_self:
            combine = {"sum": xp.add, "prod": xp.multiply, "amax": xp.maximum,
                       "amin": xp.minimum}[reduce]
            out = combine(base, red)
        else:
            out = xp.where(hit, red, base)
        if reduce in ("amax", "amin", "prod") and self.needs_input_grad:
            self.arrays = (base, values, out)
        return _ungrouped(xp, out.astype(x.dtype, copy=False), t, x.shape)

    def _constants(self, dtype):
        """The arrays A (per output), B (per output) and C (per source) of the rule
        gx = g * A, gs = gather(g * B) * C; None stands for all ones."""
        xp, t, reduce = self.xp, self.t, self.reduce
        keeps_x = (self.counts == 0)[:, None]  # targets no source reaches keep x
        x_counts = keeps_x if not self.include_self else xp.ones_like(keeps_x)
        if reduce == "sum":
            return (None if self.include_self else keeps_x.astype(dtype)), None, None
        if reduce == "mean":
            denom = xp.maximum(self.counts + self.include_self, 1)[:, None].astype(dtype)
            a = 1 / denom if self.include_self else keeps_x.astype(dtype)
            return a, 1 / denom, None
        base, values, out = self.arrays
        at = out[t.ids]
        if reduce in ("amax", "amin"):
            ties_src = (values == at).astype(dtype)
            # torch counts an input equal to the result among the ties even where
            # include_self=False leaves it out (it then gets no share): kept for parity
            ties_x = (base == out).astype(dtype)
            n_ties = self.device.backend.group_reduce(ties_src, t.ids, t.n, "sum") + ties_x
            return ties_x * x_counts / n_ties, 1 / n_ties, ties_src
        # prod: the product of the others; where an element is 0 that is the product of
        # the group's non-zero elements if it holds no other 0, else 0
        backend = self.device.backend
        zero_src, zero_x = values == 0, (base == 0) & x_counts
        zeros = backend.group_reduce(zero_src.astype(dtype), t.ids, t.n, "sum") + zero_x
        nonzero = backend.group_reduce(xp.where(zero_src, 1, values), t.ids, t.n, "prod") * \
            xp.where(x_counts & ~zero_x, base, 1)
        single = xp.where(zeros == 1, nonzero, 0)
        a = xp.where(zero_x, single, out / xp.where(base == 0, 1, base)) * x_counts
        c = xp.where(zero_src, single[t.ids], at / xp.where(zero_src, 1, values))
        return a, None, c

    def backward(self, g):
        xp, t = self.xp, self.t
        a, b, c = self._constants(g._data.dtype)
        dev = g._device
        gx = gs = None
        if self.needs_input_grad[0]:
            gx = g if a is None else g * Tensor._make(_per_target(xp, a, t, self.x_shape), dev)
        if self.needs_input_grad[1]:
            scaled = g if b is None else g * Tensor._make(_per_target(xp, b, t, self.x_shape),
                                                          dev)
            gs = _at_sources(scaled, t)
            if c is not None:
                gs = gs * Tensor._make(_ungrouped(xp, c, t, self.src_shape), dev)
        return gx, gs


def _per_target(xp, a, t: Targets, shape: tuple):
    """A constant of `_constants` as an array that broadcasts against the output: an
    (n, 1) array along `dim` for slices, an (n, K) one reshaped to the output for
    elements or for per-element constants of slices."""
    if not t.rows:
        return a.reshape(shape)
    if a.shape[1] == 1:
        return a.reshape([t.n if i == t.dim else 1 for i in range(len(shape))])
    return _ungrouped(xp, a, t, shape)


# ------------------------------------------------------------------ the public ops
def _check_reduce(reduce, valid: tuple, op: str) -> None:
    if reduce not in valid:
        raise ValueError(f"{op}: reduce must be one of {', '.join(map(repr, valid))}, got "
                         f"{reduce!r}")


def _check_same_dtype(input: Tensor, src, name: str, op: str) -> None:
    if not isinstance(src, Tensor):
        raise DTypeError(f"{op}: {name} must be a Tensor, got {type(src).__name__}")
    if src.dtype != input.dtype:
        raise DTypeError(f"{op}: expected {name} to have the input's dtype {input.dtype.name}, "
                         f"got {src.dtype.name}; convert with .to({input.dtype.name})")


def _slice_targets(input: Tensor, d: int, ids) -> Targets:
    return Targets(d, ids, input._data.shape[d] if input.ndim else 1, True, None)


def _element_targets(input: Tensor, d: int, index: Tensor, src: Tensor, op: str) -> Targets:
    """The targets of torch's scatter: slices when `index` is one 1-d index broadcast
    along the other dims over all of `input`, else single elements."""
    key = _along(input, d, index, (("src", src),), op)
    xp = input._device.xp
    idx = key.advanced[d]
    shape = input._data.shape
    if idx.ndim == 1 or all(idx.strides[i] == 0 or idx.shape[i] == 1 for i in range(idx.ndim)
                            if i != d) and idx.shape[:d] + idx.shape[d + 1:] == \
            shape[:d] + shape[d + 1:]:
        return _slice_targets(input, d, idx[tuple(slice(None) if i == d else 0
                                                  for i in range(idx.ndim))])
    coords = xp.broadcast_arrays(*key.advanced)
    flat = xp.ravel_multi_index(tuple(coords), shape).reshape(-1)
    return Targets(d, flat, int(input._data.size), False, index)


@tensor_method()
def scatter_reduce(input, dim: int, index, src, reduce: str, *,
                   include_self: bool = True) -> Tensor:
    """A copy of `input` with each `src[p]` reduced into the position `p` with `p[dim]`
    replaced by `index[p]`; `reduce` is "sum", "prod", "mean", "amax" or "amin", and
    `include_self=False` leaves the input's own value out of every position that gets a
    source (the others keep it). index has src's number of dims and fits within src and,
    outside `dim`, within input, as torch's."""
    _check_reduce(reduce, _SCATTER_REDUCES, "scatter_reduce")
    _check_same_dtype(input, src, "src", "scatter_reduce")
    d = normalize_dim(dim, input.ndim, "scatter_reduce")
    targets = _element_targets(input, d, index, src, "scatter_reduce")
    return ScatterReduce.apply(input, _fit(src, tuple(index.shape)), targets=targets,
                               reduce=reduce, include_self=bool(include_self))


def _index_targets(input: Tensor, dim: int, index, source, op: str) -> Targets:
    """Targets of a 1-d `index` along `dim`, checking that `source` has one slice per index."""
    d, idx = _vector_index(input, dim, index, op)
    expected = input.shape[:d] + (idx.shape[0],) + input.shape[d + 1:]
    if tuple(source.shape) != expected:
        raise ShapeError(f"{op}: source of shape {tuple(source.shape)} does not fit; for input "
                         f"{tuple(input.shape)} and {idx.shape[0]} indices along dim {d} it "
                         f"must be {expected}")
    return _slice_targets(input, d, idx)


@tensor_method()
def index_add(input, dim: int, index, source, *, alpha=1) -> Tensor:
    """A copy of `input` with `alpha * source[i]` added to slice `index[i]` along `dim`
    (repeated indices accumulate)."""
    targets = _index_targets(input, dim, index, source, "index_add")
    values = source.to(input.dtype)
    if alpha != 1:
        values = values * alpha
    return ScatterReduce.apply(input, values, targets=targets, reduce="sum", include_self=True)


@tensor_method()
def index_reduce(input, dim: int, index, source, reduce: str, *,
                 include_self: bool = True) -> Tensor:
    """A copy of `input` with slice `i` of `source` along `dim` reduced into slice
    `index[i]`; `reduce` is "prod", "mean", "amax" or "amin" (torch's), and with
    `include_self=False` the slices that get a source forget the input's values."""
    _check_reduce(reduce, _INDEX_REDUCES, "index_reduce")
    _check_same_dtype(input, source, "source", "index_reduce")
    targets = _index_targets(input, dim, index, source, "index_reduce")
    return ScatterReduce.apply(input, source, targets=targets, reduce=reduce,
                               include_self=bool(include_self))


def segment_reduce(data, reduce: str, *, lengths=None, offsets=None, axis: int = 0,
                   unsafe: bool = False, initial=None) -> Tensor:
    """Reduce consecutive runs of `data` along `axis`: run i has `lengths[i]` slices (or
    spans `offsets[i]:offsets[i + 1]`); `reduce` is "sum", "mean", "max", "min" or "prod".
    An empty run gives `initial`, or else 0, nan (mean), -inf, inf or 1; `initial` also
    joins every other run's reduction (a mean then divides by the run's length alone, as
    torch's). The runs are sorted by
    construction, so the grouping needs no sort. `unsafe=True` skips the check that the
    lengths are non-negative and cover the axis."""
    _check_reduce(reduce, tuple(_SEGMENT_REDUCES), "segment_reduce")
    check_float(data, "segment_reduce")
    d = normalize_dim(axis, data.ndim, "segment_reduce")
    xp = data._device.xp
    if (lengths is None) == (offsets is None):
        raise ValueError("segment_reduce: give exactly one of lengths and offsets")
    given = lengths if lengths is not None else offsets
    if not isinstance(given, Tensor) or given.ndim != 1 or given._data.dtype.kind not in "iu":
        raise ShapeError("segment_reduce: lengths/offsets must be a 1-d integer tensor")
    arr = given._data.astype(xp.int64)
    lens = arr if lengths is not None else xp.diff(arr)
    if not unsafe and (bool((lens < 0).any()) or int(lens.sum()) != data.shape[d]):
        raise ShapeError(f"segment_reduce: the segment lengths {lens.tolist()} must be "
                         f"non-negative and add up to the size {data.shape[d]} of axis {d}")
    ids = xp.repeat(xp.arange(lens.shape[0]), lens)
    op = _SEGMENT_REDUCES[reduce]
    empty = initial if initial is not None else \
        {"sum": 0.0, "mean": xp.nan, "amax": -xp.inf, "amin": xp.inf, "prod": 1.0}[op]
    shape = data.shape[:d] + (lens.shape[0],) + data.shape[d + 1:]
    base = Tensor._make(xp.full(shape, empty, dtype=data._data.dtype), data._device)
    targets = Targets(d, ids, lens.shape[0], True, None)
    if op != "mean" or initial is None:
        return ScatterReduce.apply(base, data, targets=targets, reduce=op,
                                   include_self=initial is not None)
    # torch's mean with an initial value: (initial + the run's sum) / the run's length
    total = ScatterReduce.apply(base, data, targets=targets, reduce="sum", include_self=True)
    counts = xp.maximum(lens, 1).reshape([-1 if i == d else 1 for i in range(data.ndim)])
    return total / Tensor._make(counts.astype(data._data.dtype), data._device)


def segment_softmax(src, index, num_segments: int | None = None, *, dim: int = 0) -> Tensor:
    """Softmax over the slices of `src` along `dim` that share an `index` (1-d, one per
    slice): in a graph, over the edges into one node. The largest value of each group is
    subtracted first, so large scores do not overflow; `num_segments` defaults to
    index.max() + 1."""
    check_float(src, "segment_softmax")
    d = normalize_dim(dim, src.ndim, "segment_softmax")
    if not isinstance(index, Tensor) or index.ndim != 1 or index._data.dtype.kind not in "iu" \
            or index.shape[0] != src.shape[d]:
        got = f"{index.dtype.name} of shape {tuple(index.shape)}" \
            if isinstance(index, Tensor) else type(index).__name__
        raise ShapeError(f"segment_softmax: index must be a 1-d integer tensor with one entry "
                         f"per slice of src along dim {d} ({src.shape[d]}), got {got}")
    idx = index._data
    if idx.size and int(idx.min()) < 0:
        raise IndexError(f"segment_softmax: index holds {int(idx.min())}; valid: >= 0")
    n = int(idx.max()) + 1 if num_segments is None and idx.size else int(num_segments or 0)
    if idx.size and int(idx.max()) >= n:
        raise ShapeError(f"segment_softmax: index holds {int(idx.max())}, which is not below "
                         f"num_segments={n}")
    xp = src._device.xp
    shape = src.shape[:d] + (n,) + src.shape[d + 1:]
    ids = Tensor._make(idx, src._device)
    zeros = Tensor._make(xp.zeros(shape, dtype=src._data.dtype), src._device)
    # the shift is a constant: softmax does not change with it, so its gradient is zero
    peak = index_reduce(zeros, d, ids, src.detach(), "amax", include_self=False)
    e = (src - index_select(peak, d, ids)).exp()
    return e / index_select(index_add(zeros, d, ids, e), d, ids)

