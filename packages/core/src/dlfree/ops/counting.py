"""Counting and histograms: bincount, histc, histogram. Not differentiable (nor in torch)."""

from __future__ import annotations

import numbers
from collections import namedtuple

from .. import dtypes
from ..errors import DTypeError, ShapeError
from ..tensor import Tensor
from ._util import tensor_method

__all__ = ["bincount", "histc", "histogram"]

_Histogram = namedtuple("histogram", ("hist", "bin_edges"))


@tensor_method()
def bincount(input, weights=None, minlength: int = 0) -> Tensor:
    """How often each value 0, 1, ... occurs in the 1-d non-negative integer `input` (at
    least `minlength` bins); with `weights`, the sum of the weights of each value's elements
    (float32 weights sum in float32, any others in float64, as torch)."""
    if input._data.dtype.kind not in "iub" or input.ndim != 1:
        raise DTypeError(f"bincount: expects a 1-d integer tensor, got a {input.ndim}-d "
                         f"{input.dtype.name} tensor")
    xp = input._device.xp
    if input.numel() and int(input._data.min()) < 0:
        raise ValueError("bincount: the input must be non-negative")
    w = None
    if weights is not None:
        if tuple(weights.shape) != tuple(input.shape):
            raise ShapeError(f"bincount: weights of shape {tuple(weights.shape)} must match the "
                             f"input's shape {tuple(input.shape)}")
        dt = dtypes.float32.np if weights._data.dtype == dtypes.float32.np else \
            dtypes.float64.np
        w = weights._data.astype(dt)
    out = xp.bincount(input._data.astype(dtypes.int64.np), weights=w, minlength=minlength)
    if w is not None:
        out = out.astype(w.dtype)
    return Tensor._make(out, input._device)


def _range(x, low, high, op: str):
    """The histogram's range: the data's own when low == high, widened by 1 on each side
    when that is one value, as torch does."""
    if low == high and x.size:
        low, high = float(x.min()), float(x.max())
    if low == high:
        low, high = low - 1, high + 1
    if low > high:
        raise ValueError(f"{op}: max ({high}) must not be below min ({low})")
    return low, high


@tensor_method()
def histc(input, bins: int = 100, min: float = 0, max: float = 0) -> Tensor:
    """Counts of the elements in `bins` equal bins over [min, max] (the data's range when
    both are 0); elements outside are ignored. The counts have the input's dtype."""
    if input._data.dtype.kind != "f":
        raise DTypeError(f"histc: not supported for {input.dtype.name} tensors; valid: "
                         "floating-point tensors")
    if not isinstance(bins, numbers.Integral) or bins <= 0:
        raise ValueError(f"histc: bins must be a positive integer, got {bins!r}")
    xp = input._device.xp
    x = input._data.reshape(-1)
    low, high = _range(x[~xp.isnan(x)], min, max, "histc")
    counts, _ = xp.histogram(x, bins=int(bins), range=(low, high))
    return Tensor._make(counts.astype(input._data.dtype), input._device)


@tensor_method()
def histogram(input, bins=100, *, range=None, weight=None, density: bool = False):
    """(hist, bin_edges): counts (or summed weights, or a density) in `bins` equal bins over
    `range` (the data's range by default), or between the given edges (a 1-d tensor)."""
    if input._data.dtype.kind != "f":
        raise DTypeError(f"histogram: not supported for {input.dtype.name} tensors; valid: "
                         "floating-point tensors")
    xp = input._device.xp
    x = input._data.reshape(-1)
    edges = bins._data if isinstance(bins, Tensor) else int(bins)
    lo_hi = None
    if not isinstance(bins, Tensor):
        lo_hi = _range(x, *(range if range is not None else (0, 0)), "histogram")
    w = None if weight is None else weight._data.reshape(-1)
    hist, edges = xp.histogram(x, bins=edges, range=lo_hi, weights=w, density=density)
    dev, dt = input._device, input._data.dtype
    return _Histogram(Tensor._make(hist.astype(dt), dev), Tensor._make(edges.astype(dt), dev))
