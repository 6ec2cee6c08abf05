"""Pooling: max, average, adaptive and power-average, over 1 to 3 spatial dims.

Each op is described per spatial axis by a (outputs, taps) array of input positions: which
input elements each output reads. Max pools gather those windows, take PyTorch's argmax
(the first maximum in row-major order, or the last NaN) and `gather` the winners, so the
gradient is a scatter to the argmax whose own gradient is a gather again. Average pools and
adaptive average pools (and `resample`'s interpolation) are weighted sums of the taps, one
axis at a time (`_TapSum`); the backward of such a sum is the transposed sum (the transposed
average) and vice versa, so derivatives of every order work. No loop runs over batch items,
channels or pixels: only over the spatial axes (at most three) and the taps of a window.
"""

from __future__ import annotations

import math
import numbers

from .. import dtypes
from ..autograd.function import Function
from ..errors import ShapeError
from ..tensor import Tensor
from ..tracing_state import recorded
from ._util import check_float
from .elementwise import relu
from .indexing import gather

__all__ = [
    "max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d",
    "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d",
    "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d",
    "lp_pool1d", "lp_pool2d", "lp_pool3d",
]

_INT64 = dtypes.int64.np
# windows with more taps than this are summed from one gather instead of tap by tap
# (faster when a few outputs each read many inputs, e.g. global pooling)
_GATHER_ALL = 16
_SPATIAL = {1: "L", 2: "H, W", 3: "D, H, W"}


# ------------------------------------------------------------------- arguments
def _ints(value, d: int, name: str, op: str) -> tuple:
    """An int, or a sequence of 1 or `d` ints, as a `d`-tuple."""
    values = (value,) if isinstance(value, numbers.Integral) else tuple(value)
    if len(values) == 1:
        values *= d
    if len(values) != d or not all(isinstance(v, numbers.Integral) for v in values):
        raise ShapeError(f"{op}: {name} must be an int or a sequence of {d} ints, got {value!r}")
    return tuple(int(v) for v in values)


def _check_input(input: Tensor, d: int, op: str, unbatched: bool = True) -> None:
    """A (C, *spatial) or (N, C, *spatial) input whose sizes are non-zero except N."""
    shape = tuple(input.shape)
    ranks = (d + 1, d + 2) if unbatched else (d + 2,)
    forms = f"(N, C, {_SPATIAL[d]})" + (f" or (C, {_SPATIAL[d]})" if unbatched else "")
    if input.ndim not in ranks:
        raise ShapeError(f"{op}: expected a {' or '.join(map(str, ranks))}-d input {forms}, got "
                         f"shape {shape}")
    if 0 in shape[input.ndim - d - 1:]:
        raise ShapeError(f"{op}: expected non-zero sizes except the batch (N) in {forms}, got "
                         f"shape {shape}")


def _pool_args(op, input, d, kernel_size, stride, padding, dilation=1) -> tuple:
    """Check the input and the window parameters; stride defaults to the kernel size."""
    _check_input(input, d, op)
    kernel = _ints(kernel_size, d, "kernel_size", op)
    stride = kernel if stride is None or stride == [] else _ints(stride, d, "stride", op)
    padding = _ints(padding, d, "padding", op)
    dilation = _ints(dilation, d, "dilation", op)
    for name, values in (("kernel_size", kernel), ("stride", stride), ("dilation", dilation)):
        if min(values) <= 0:
            raise ShapeError(f"{op}: {name} must be positive, got {values}")
    if min(padding) < 0 or any(p > k // 2 for p, k in zip(padding, kernel, strict=True)):
        raise ShapeError(f"{op}: padding must be between 0 and half the kernel size, got "
                         f"padding={padding} for kernel_size={kernel}")
    return kernel, stride, padding, dilation


def _out_size(op, shape, n, k, s, p, dil, ceil_mode) -> int:
    """PyTorch's pooled length of an axis of size `n` of an input of `shape` (with
    `ceil_mode`, a window may not start in the right padding)."""
    span = n + 2 * p - dil * (k - 1) - 1
    out = (span + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= n + p:
        out -= 1
    if out <= 0:
        raise ShapeError(f"{op}: input of shape {tuple(shape)} is too small for kernel_size "
                         f"{k} (dilation {dil}, padding {p}): the output size would be {out}")
    return out


def _window_taps(xp, n: int, out: int, k: int, s: int, p: int, dil: int = 1):
    """(out, k) input positions of each window's taps, and which of them lie in [0, n)."""
    taps = xp.arange(out)[:, None] * s - p + xp.arange(k) * dil
    return taps, (taps >= 0) & (taps < n)


def _adaptive_taps(xp, n: int, out: int):
    """PyTorch's adaptive windows [floor(i n / out), ceil((i + 1) n / out)) as (out, taps)
    positions (short windows repeat their last position), which are real, and their sizes."""
    i = xp.arange(out)
    start, end = i * n // out, -(-(i + 1) * n // out)
    taps = start[:, None] + xp.arange(int((end - start).max()) if out else 1)
    return xp.minimum(taps, end[:, None] - 1), taps < end[:, None], end - start


def _tensor(array, like: Tensor) -> Tensor:
    return Tensor._make(array, like._device)


# ------------------------------------------------------------------ max pooling
def _max_over(input: Tensor, taps: list):
    """Max over windows given per axis as (out, k) positions that all lie inside the input,
    in increasing order; returns the values and PyTorch's flat per-plane indices."""
    xp = input._device.xp
    d = len(taps)
    spatial = input._data.shape[-d:]
    flat, step = 0, 1
    for a in reversed(range(d)):
        shape = [1] * (2 * d)
        shape[a], shape[d + a] = taps[a].shape
        flat = flat + taps[a].reshape(shape) * step
        step *= spatial[a]
    out_shape = flat.shape[:d]
    flat = flat.reshape(math.prod(out_shape), math.prod(flat.shape[d:]))
    lead = input._data.shape[:-d]
    planes = lead + (step,)  # each input plane flattened
    windows = xp.take(input._data.reshape(planes), flat, axis=-1)  # (..., P, taps)
    pick = windows.argmax(-1)
    if windows.dtype.kind == "f":
        has_nan = xp.isnan(xp.take_along_axis(windows, pick[..., None], -1)[..., 0])
        if has_nan.any():  # torch keeps the last NaN of a window, argmax finds the first
            last = flat.shape[1] - 1 - windows[..., ::-1].argmax(-1)
            pick = xp.where(has_nan, last, pick)
    index = flat[xp.arange(flat.shape[0]), pick].astype(_INT64, copy=False)
    values = gather(input.reshape(planes), -1, _tensor(index, input))
    return values.reshape(lead + out_shape), _tensor(index.reshape(lead + out_shape), input)


# Windows that tile the input (kernel == stride, no padding or dilation) need no gather:
# the input seen as (..., out0, k0, out1, k1, ...) holds each window's taps at fixed
# offsets, so every tap is a strided view and the max is taken tap by tap.
def _tiles(a, kernel: tuple, out: tuple):
    """The part of `a` that `out` windows of `kernel` tile, as (..., o0, k0, o1, k1, ...)."""
    d = len(kernel)
    covered = a[(Ellipsis,) + tuple(slice(0, o * k) for o, k in zip(out, kernel, strict=True))]
    split = tuple(n for o, k in zip(out, kernel, strict=True) for n in (o, k))
    return covered.reshape(a.shape[:-d] + split)


def _tile_taps(tiles, d: int) -> list:
    """Each tap of the windows of `_tiles`, in row-major order, as an (..., o0, o1, ...)
    view."""
    lead = (slice(None),) * (tiles.ndim - 2 * d)
    views = [tiles]
    for a in range(d):  # fix the tap offset along each spatial axis in turn
        views = [v[lead + (slice(None),) * a + (slice(None), t)]
                 for v in views for t in range(tiles.shape[tiles.ndim - 2 * d + 2 * a + 1])]
    return views


def _tile_argmax(xp, x, kernel: tuple, out: tuple):
    """The max of each tiling window of array `x` and which tap holds it: the first
    maximum, or the last NaN (as torch's kernels, which move on to any greater or NaN).

    The first maximum's tap is the number of leading taps that all differ from the max,
    which counts up in whole-array passes.
    """
    taps = _tile_taps(_tiles(x, kernel, out), len(kernel))
    best = taps[0].copy()
    for tap in taps[1:]:
        xp.maximum(best, tap, out=best)  # a window with a NaN gets NaN, as in torch
    missed = xp.not_equal(taps[0], best)
    pick = missed.astype(xp.uint8 if len(taps) <= 256 else _INT64)
    differs = xp.empty(best.shape, dtype=bool)
    for tap in taps[1:-1]:
        missed &= xp.not_equal(tap, best, out=differs)
        pick += missed
    if x.dtype.kind == "f":
        nan = xp.isnan(best)
        if nan.any():
            for i, tap in enumerate(taps):
                pick[nan & xp.isnan(tap)] = i
    return best, pick


def _tile_index(xp, pick, kernel: tuple, size: tuple):
    """PyTorch's flat per-plane index of the picked tap of each tiling window."""
    d = len(kernel)
    index = 0
    for a in range(d):
        tap = pick // math.prod(kernel[a + 1:]) % kernel[a]
        start = xp.arange(pick.shape[pick.ndim - d + a]) * kernel[a]
        index = index * size[a] + tap + start.reshape((-1,) + (1,) * (d - 1 - a))
    return index.astype(_INT64)


def _route(xp, views: list, values, pick) -> None:
    """Write `values` into the view of each one's `pick`ed tap, and 0 into the others."""
    if values.dtype.kind != "f" or xp.isfinite(values).all():  # then times 0 or 1 is exact
        for i, view in enumerate(views):
            xp.multiply(values, pick == i, out=view)
        return
    for i, view in enumerate(views):
        view[...] = 0
        xp.copyto(view, values, where=pick == i)


class _TilePick(Function):
    """The `pick`ed tap of each tiling window of `kernel` (a gather); `values` are the
    result when the caller has them already. Its adjoint is `_TilePlace`."""

    def forward(self, x, kernel, pick, values=None):
        self.kernel, self.pick, self.size = kernel, pick, x.shape[-len(kernel):]
        if values is not None:
            return values
        out = self.xp.zeros(pick.shape, dtype=x.dtype)
        taps = _tile_taps(_tiles(x, kernel, pick.shape[-len(kernel):]), len(kernel))
        for i, tap in enumerate(taps):
            self.xp.copyto(out, tap, where=pick == i)
        return out

    def backward(self, g):
        return (_TilePlace.apply(g, kernel=self.kernel, pick=self.pick, size=self.size),)


class _TilePlace(Function):
    """Zeros of the input's spatial `size` with each entry of g at the `pick`ed tap of
    its tiling window (a scatter without repeats); its adjoint is `_TilePick`."""

    def forward(self, g, kernel, pick, size):
        self.kernel, self.pick = kernel, pick
        d = len(kernel)
        covered = all(o * k == n for o, k, n in zip(g.shape[-d:], kernel, size, strict=True))
        out = (self.xp.empty if covered else self.xp.zeros)(g.shape[:-d] + size, dtype=g.dtype)
        _route(self.xp, _tile_taps(_tiles(out, kernel, g.shape[-d:]), d), g, pick)
        return out

    def backward(self, gg):
        return (_TilePick.apply(gg, kernel=self.kernel, pick=self.pick),)


def _max_pool(op, d, input, kernel_size, stride, padding, dilation, ceil_mode,
              return_indices):
    kernel, stride, padding, dilation = _pool_args(op, input, d, kernel_size, stride,
                                                   padding, dilation)
    xp = input._device.xp
    shape = tuple(input.shape)
    if stride == kernel and not any(padding) and dilation == (1,) * d:
        out = tuple(_out_size(op, shape, n, k, k, 0, 1, ceil_mode)
                    for n, k in zip(shape[-d:], kernel, strict=True))
        if all(o * k <= n for o, k, n in zip(out, kernel, shape[-d:], strict=True)):
            values, pick = _tile_argmax(xp, input._data, kernel, out)
            values = _TilePick.apply(input, kernel=kernel, pick=pick, values=values)
            if not return_indices:
                return values
            return values, _tensor(_tile_index(xp, pick, kernel, shape[-d:]), input)
    taps = []
    for k, s, p, dil, n in zip(kernel, stride, padding, dilation, shape[-d:], strict=True):
        out = _out_size(op, shape, n, k, s, p, dil, ceil_mode)
        pos, inside = _window_taps(xp, n, out, k, s, p, dil)
        if not inside.any(1).all():
            raise ShapeError(f"{op}: with kernel_size {k}, dilation {dil} and padding {p}, a "
                             f"window of an input of shape {shape} covers no input element")
        # taps in the padding repeat the nearest real tap, which leaves the max unchanged
        rows = xp.arange(out)
        first = pos[rows, inside.argmax(1)][:, None]
        last = pos[rows, k - 1 - inside[:, ::-1].argmax(1)][:, None]
        taps.append(xp.where(pos < 0, first, xp.where(pos >= n, last, pos)))
    values, indices = _max_over(input, taps)
    return (values, indices) if return_indices else values


@recorded
def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """Max over sliding windows of (N, C, L) or (C, L) input; padding counts as -inf.

    With `return_indices`, also the position of each maximum within its input row.
    """
    return _max_pool("max_pool1d", 1, input, kernel_size, stride, padding, dilation,
                     ceil_mode, return_indices)


@recorded
def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """Max over sliding windows of (N, C, H, W) or (C, H, W) input; padding counts as -inf.

    `stride` defaults to `kernel_size`; `ceil_mode` rounds the output size up (a window may
    not start in the right padding). With `return_indices`, also the flat index h * W + w
    of each maximum within its input plane (the first maximum of a window, as torch).
    """
    return _max_pool("max_pool2d", 2, input, kernel_size, stride, padding, dilation,
                     ceil_mode, return_indices)


@recorded
def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """Max over sliding windows of (N, C, D, H, W) or (C, D, H, W) input; padding counts as
    -inf. Indices are flat within each input volume."""
    return _max_pool("max_pool3d", 3, input, kernel_size, stride, padding, dilation,
                     ceil_mode, return_indices)


def _adaptive_max_pool(op, d, input, output_size, return_indices):
    _check_input(input, d, op)
    sizes = _output_sizes(op, input, d, output_size)
    xp = input._device.xp
    taps = [_adaptive_taps(xp, n, out)[0]
            for n, out in zip(input._data.shape[-d:], sizes, strict=True)]
    values, indices = _max_over(input, taps)
    return (values, indices) if return_indices else values


def _output_sizes(op, input: Tensor, d: int, output_size) -> tuple:
    """Adaptive output sizes; None keeps the input's size along that axis."""
    spatial = tuple(input.shape)[-d:]
    sizes = (output_size,) * d if output_size is None or \
        isinstance(output_size, numbers.Integral) else tuple(output_size)
    if len(sizes) == 1:
        sizes *= d
    if len(sizes) != d:
        raise ShapeError(f"{op}: output_size must be an int or {d} ints (or None), got "
                         f"{output_size!r}")
    sizes = tuple(n if s is None else int(s) for s, n in zip(sizes, spatial, strict=True))
    if min(sizes) < 0:
        raise ShapeError(f"{op}: output_size must be non-negative, got {sizes}")
    return sizes


@recorded
def adaptive_max_pool1d(input, output_size, return_indices=False):
    """Max over `output_size` windows that tile (N, C, L) or (C, L) input, window i being
    [floor(i L / out), ceil((i + 1) L / out)); optionally with the indices of the maxima."""
    return _adaptive_max_pool("adaptive_max_pool1d", 1, input, output_size, return_indices)


@recorded
def adaptive_max_pool2d(input, output_size, return_indices=False):
    """Max over windows that tile (N, C, H, W) or (C, H, W) input to `output_size` (an int,
    a pair, None keeping a size); torch's window rule, overlapping where sizes do not divide.
    With `return_indices`, also the flat index h * W + w of each maximum."""
    return _adaptive_max_pool("adaptive_max_pool2d", 2, input, output_size, return_indices)


@recorded
def adaptive_max_pool3d(input, output_size, return_indices=False):
    """Max over windows that tile (N, C, D, H, W) or (C, D, H, W) input to `output_size`."""
    return _adaptive_max_pool("adaptive_max_pool3d", 3, input, output_size, return_indices)


# --------------------------------------------------- linear maps along one axis
class _Taps:
    """A linear map along one axis: out[i] = sum_t weights[i, t] * x[taps[i, t]] for i < out,
    x having `n` entries. A tap equal to `n` reads a zero appended to x, which pads short
    windows without multiplying an inf by 0; `weights` None means all ones."""

    def __init__(self, xp, taps, n: int, weights=None):
        self.xp, self.taps, self.n, self.weights = xp, taps, n, weights
        self.padded = bool((taps == n).any())
        self._transposed = None

    def __call__(self, x, dim: int):
        xp = self.xp
        if self.padded:
            widths = [(0, 0)] * x.ndim
            widths[dim] = (0, 1)
            x = xp.pad(x, widths)
        k = self.taps.shape[1]
        shape = self.taps.shape + (1,) * (x.ndim - dim - 1)
        if k > _GATHER_ALL:  # wide windows: one gather of every tap, then a sum
            picked = xp.take(x, self.taps.reshape(-1), axis=dim)
            picked = picked.reshape(x.shape[:dim] + self.taps.shape + x.shape[dim + 1:])
            if self.weights is not None:
                picked *= self.weights.astype(x.dtype).reshape(shape)
            return picked.sum(axis=dim + 1)
        out = None
        for t in range(k):  # a loop over the taps of a window
            term = xp.take(x, self.taps[:, t], axis=dim)
            if self.weights is not None:
                term *= self.weights[:, t].astype(x.dtype).reshape(shape[:1] + shape[2:])
            out = term if out is None else xp.add(out, term, out=out)
        return out

    @property
    def T(self) -> _Taps:
        """The transposed map: for each input entry, the outputs that read it."""
        if self._transposed is None:
            self._transposed = self._transpose()
            self._transposed._transposed = self
        return self._transposed

    def _transpose(self) -> _Taps:
        xp, taps = self.xp, self.taps
        out, k = taps.shape
        flat = taps.reshape(-1)
        entry = xp.arange(flat.size)[flat < self.n]  # the real taps, as flat positions
        read = flat[entry]
        order = xp.argsort(read * flat.size + entry)  # grouped by input entry, in order
        entry, read = entry[order], read[order]
        counts = xp.bincount(read, minlength=self.n)
        width = max(int(counts.max()) if self.n else 0, 1)
        rank = xp.arange(read.size) - (xp.cumsum(counts) - counts)[read]
        inverse = xp.full((self.n, width), out, dtype=taps.dtype)
        inverse[read, rank] = entry // k
        weights = None
        if self.weights is not None:
            weights = xp.zeros((self.n, width), dtype=self.weights.dtype)
            weights[read, rank] = self.weights.reshape(-1)[entry]
        return _Taps(xp, inverse, out, weights)


class _TapSum(Function):
    """A `_Taps` map along `dim`; its backward is the transposed map, whose backward is the
    map again, so derivatives of any order stay linear maps of this kind."""

    def forward(self, x, dim, taps):
        self.dim, self.taps = dim, taps
        return taps(x, dim)

    def backward(self, g):
        return (_TapSum.apply(g, dim=self.dim, taps=self.taps.T),)


def _separable(x: Tensor, per_axis: list) -> Tensor:
    """Apply one `_Taps` per trailing spatial axis; None leaves an axis as it is."""
    d = len(per_axis)
    for a in reversed(range(d)):  # the last axis first, as torch's kernels nest them
        if per_axis[a] is not None:
            x = _TapSum.apply(x, dim=x.ndim - d + a, taps=per_axis[a])
    return x


def _outer(xp, vectors: list):
    """The outer product of per-axis vectors, shaped (len(v0), len(v1), ...)."""
    out = 1
    for a, v in enumerate(vectors):
        out = out * v.reshape((-1,) + (1,) * (len(vectors) - a - 1))
    return out


# -------------------------------------------------------------- average pooling
def _avg_pool(op, d, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
              divisor_override=None):
    check_float(input, op)
    kernel, stride, padding, _ = _pool_args(op, input, d, kernel_size, stride, padding)
    if divisor_override is not None and divisor_override == 0:
        raise ShapeError(f"{op}: divisor_override must be non-zero, got {divisor_override}")
    xp = input._device.xp
    shape = tuple(input.shape)
    per_axis, counts = [], []
    for k, s, p, n in zip(kernel, stride, padding, shape[-d:], strict=True):
        out = _out_size(op, shape, n, k, s, p, 1, ceil_mode)
        taps, inside = _window_taps(xp, n, out, k, s, p)
        per_axis.append(_Taps(xp, xp.where(inside, taps, n), n))
        # with count_include_pad, a window counts its part inside the padded input
        counts.append(xp.minimum(taps[:, 0] + k, n + p) - taps[:, 0] if count_include_pad
                      else inside.sum(1))
    sums = _separable(input, per_axis)
    divisor = divisor_override if divisor_override is not None else \
        _tensor(_outer(xp, counts).astype(input._data.dtype), input)
    return sums / divisor


@recorded
def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True):
    """Mean over sliding windows of (N, C, L) or (C, L) input; zero padding counts in the
    divisor unless `count_include_pad=False`."""
    return _avg_pool("avg_pool1d", 1, input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad)


@recorded
def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """Mean over sliding windows of (N, C, H, W) or (C, H, W) input.

    Zero padding counts in the divisor unless `count_include_pad=False`; windows that
    `ceil_mode` lets run past the padding count only their part inside it;
    `divisor_override` replaces the divisor of every window.
    """
    return _avg_pool("avg_pool2d", 2, input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, divisor_override)


@recorded
def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """Mean over sliding windows of (N, C, D, H, W) or (C, D, H, W) input (as avg_pool2d)."""
    return _avg_pool("avg_pool3d", 3, input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, divisor_override)


def _adaptive_avg_pool(op, d, input, output_size):
    check_float(input, op)
    _check_input(input, d, op)
    sizes = _output_sizes(op, input, d, output_size)
    xp = input._device.xp
    per_axis, counts = [], []
    for n, out in zip(input._data.shape[-d:], sizes, strict=True):
        taps, inside, size = _adaptive_taps(xp, n, out)
        per_axis.append(None if out == n else _Taps(xp, xp.where(inside, taps, n), n))
        counts.append(size)
    return _separable(input, per_axis) / _tensor(_outer(xp, counts).astype(input._data.dtype),
                                                 input)


@recorded
def adaptive_avg_pool1d(input, output_size):
    """Mean over `output_size` windows that tile (N, C, L) or (C, L) input, window i being
    [floor(i L / out), ceil((i + 1) L / out))."""
    return _adaptive_avg_pool("adaptive_avg_pool1d", 1, input, output_size)


@recorded
def adaptive_avg_pool2d(input, output_size):
    """Mean over windows that tile (N, C, H, W) or (C, H, W) input to `output_size` (an int,
    a pair, None keeping a size); torch's window rule, overlapping where sizes do not divide."""
    return _adaptive_avg_pool("adaptive_avg_pool2d", 2, input, output_size)


@recorded
def adaptive_avg_pool3d(input, output_size):
    """Mean over windows that tile (N, C, D, H, W) or (C, D, H, W) input to `output_size`."""
    return _adaptive_avg_pool("adaptive_avg_pool3d", 3, input, output_size)


# -------------------------------------------------------- power-average pooling
def _lp_pool(d, input, norm_type, kernel_size, stride, ceil_mode):
    max_pool, avg_pool = ((max_pool1d, avg_pool1d), (max_pool2d, avg_pool2d),
                          (max_pool3d, avg_pool3d))[d - 1]
    if norm_type == math.inf:
        return max_pool(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    if norm_type == -math.inf:
        return -max_pool(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    out = avg_pool(input ** norm_type, kernel_size, stride, 0, ceil_mode)
    count = math.prod(_ints(kernel_size, d, "kernel_size", f"lp_pool{d}d"))
    # torch's formula: windows cut short by ceil_mode are scaled up to the full kernel
    return (out.sign() * relu(out.abs()) * count) ** (1.0 / norm_type)


@recorded
def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """(sum over each window of x ** p) ** (1 / p) for (N, C, L) or (C, L) input; p = inf
    is max pooling of |x|."""
    return _lp_pool(1, input, norm_type, kernel_size, stride, ceil_mode)


@recorded
def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """(sum over each window of x ** p) ** (1 / p) for (N, C, H, W) or (C, H, W) input;
    p = inf is max pooling of |x|."""
    return _lp_pool(2, input, norm_type, kernel_size, stride, ceil_mode)


@recorded
def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """(sum over each window of x ** p) ** (1 / p) for (N, C, D, H, W) or (C, D, H, W)
    input; p = inf is max pooling of |x|."""
    return _lp_pool(3, input, norm_type, kernel_size, stride, ceil_mode)
