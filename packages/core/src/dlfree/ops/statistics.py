"""Statistics and running extremes: cummax, cummin, logcumsumexp, aminmax, count_nonzero,
nansum, nanmean, nanmedian, quantile, nanquantile, cov, corrcoef.

The order statistics pick positions on arrays and gather the values (their gradient is the
gather's); the scans run `running`, a log-step scan any array module can do.
"""

from __future__ import annotations

import math
from collections import namedtuple

from .. import dtypes
from ..autograd.function import Function
from ..errors import DTypeError, ShapeError
from ..tensor import Tensor
from ._util import check_float, normalize_dim, running, tensor_method
from .elementwise import clamp, exp, log, relu, sqrt, where
from .indexing import gather
from .reduction import amax, amin
from .shape import flip
from .sorting import _order

__all__ = ["cummax", "cummin", "logcumsumexp", "aminmax", "count_nonzero", "nansum",
           "nanmean", "nanmedian", "quantile", "nanquantile", "cov", "corrcoef"]

_PAIRS = {op: namedtuple(op, ("values", "indices")) for op in ("cummax", "cummin",
                                                               "nanmedian")}
_MinMax = namedtuple("aminmax", ("min", "max"))
_INT64 = dtypes.int64.np


# ------------------------------------------------------------------ running extremes
def _running_extreme(input, dim: int, op: str, larger: bool):
    """(values, indices) of the running max/min along `dim`; a later equal element (or a
    NaN, which wins as in xp.maximum/minimum) takes over the index, as in torch."""
    d = normalize_dim(dim, input.ndim, op)
    x = input.reshape(1) if input.ndim == 0 else input
    xp = x._device.xp
    a = xp.moveaxis(x._data, d, -1)
    best = running(xp, a, xp.maximum if larger else xp.minimum)
    positions = xp.arange(a.shape[-1], dtype=_INT64)
    takes_over = (a == best) | (xp.isnan(a) if a.dtype.kind == "f" else False)
    index = running(xp, xp.where(takes_over, positions, 0), xp.maximum)
    index = Tensor._make(xp.ascontiguousarray(xp.moveaxis(index, -1, d)), x._device)
    values = gather(x, d, index)
    if input.ndim == 0:
        values, index = values.reshape(()), index.reshape(())
    return _PAIRS[op](values, index)


@tensor_method()
def cummax(input, dim: int):
    """(values, indices) of the running maximum along `dim`."""
    return _running_extreme(input, dim, "cummax", True)


@tensor_method()
def cummin(input, dim: int):
    """(values, indices) of the running minimum along `dim`."""
    return _running_extreme(input, dim, "cummin", False)


class LogCumSumExp(Function):
    """log(cumsum(exp(x))) along `dim`, as a scan of logaddexp (nothing overflows)."""

    saves = (0,)
    save_output = True

    def forward(self, x, dim):
        self.dim = dim
        xp = self.xp
        moved = xp.moveaxis(x, dim, -1)
        return xp.ascontiguousarray(xp.moveaxis(running(xp, moved, xp.logaddexp), -1, dim))

    def backward(self, g):
        x, y = self.saved_tensors
        d = self.dim

        def reverse_lcse(t):
            return flip(LogCumSumExp.apply(flip(t, d), dim=d), d)

        # Σ_{i>=j} g_i exp(x_j - y_i), split by the sign of g so that logs are defined
        up = exp(x + reverse_lcse(log(relu(g)) - y))
        down = exp(x + reverse_lcse(log(relu(-g)) - y))
        return (up - down,)


@tensor_method()
def logcumsumexp(input, dim: int) -> Tensor:
    """log(cumsum(exp(input))) along `dim`, computed without overflow."""
    check_float(input, "logcumsumexp")
    d = normalize_dim(dim, input.ndim, "logcumsumexp")
    if input.ndim == 0:
        return LogCumSumExp.apply(input.reshape(1), dim=0).reshape(())
    return LogCumSumExp.apply(input, dim=d)


@tensor_method()
def aminmax(input, *, dim=None, keepdim: bool = False):
    """(min, max) over `dim` (every element when None)."""
    dims = () if dim is None else dim
    return _MinMax(amin(input, dims, keepdim), amax(input, dims, keepdim))


@tensor_method()
def count_nonzero(input, dim=None) -> Tensor:
    """The number of non-zero elements over `dim` (all when None), as int64."""
    return (input != 0).sum(() if dim is None else dim)


# ----------------------------------------------------------------- NaN-ignoring
@tensor_method()
def nansum(input, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """sum treating NaN as zero (its gradient there is zero)."""
    x = where(input.isnan(), 0.0, input) if input._data.dtype.kind == "f" else input
    return x.sum(() if dim is None else dim, keepdim=keepdim, dtype=dtype)


@tensor_method()
def nanmean(input, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """mean over the elements that are not NaN (NaN where all are)."""
    check_float(input if dtype is None else input.to(dtype), "nanmean")
    kept = (~input.isnan()).sum(() if dim is None else dim, keepdim=keepdim)
    return nansum(input, dim, keepdim, dtype=dtype) / kept


def _moved_last(input: Tensor, dim):
    """The input with `dim` moved last (flattened when None), and that dim's position."""
    if dim is None:
        return input.reshape(-1), None
    d = normalize_dim(dim, input.ndim, "reduction")
    x = input.reshape(1) if input.ndim == 0 else input
    return x.movedim(d, -1), d


def _restore(out: Tensor, input: Tensor, d, keepdim: bool, lead: int = 0) -> Tensor:
    """A reduction over the last dim (after `lead` leading dims) put back where `d` was."""
    if not keepdim:
        return out.reshape(tuple(out.shape[:lead])) if d is None else out
    if d is None:
        return out.reshape(tuple(out.shape[:lead]) + (1,) * input.ndim)
    return out.unsqueeze(-1).movedim(-1, lead + d) if input.ndim else out


@tensor_method()
def nanmedian(input, dim=None, keepdim: bool = False):
    """The lower median of the elements that are not NaN (NaN where all are); with `dim`,
    (values, indices)."""
    x, d = _moved_last(input, dim)
    if x.shape[-1] == 0:
        raise ShapeError(f"nanmedian: cannot reduce an empty dimension (shape "
                         f"{tuple(input.shape)})")
    xp = x._device.xp
    order = _order(xp, x._data, x.ndim - 1, False)  # NaNs sort last
    valid = (~xp.isnan(x._data)).sum(axis=-1, keepdims=True) if x.dtype.is_floating_point \
        else xp.full(x.shape[:-1] + (1,), x.shape[-1])
    pick = xp.take_along_axis(order, xp.maximum(valid - 1, 0) // 2, axis=-1)
    index = Tensor._make(pick.astype(_INT64, copy=False), x._device)
    values = gather(x, x.ndim - 1, index).squeeze(-1)
    if dim is None:
        return values.reshape(())
    values = _restore(values, input, d, keepdim) if input.ndim else values.reshape(())
    index = _restore(index.squeeze(-1), input, d, keepdim) if input.ndim else \
        index.reshape(())
    return _PAIRS["nanmedian"](values, index)


# ------------------------------------------------------------------- quantiles
_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(input, q, dim, keepdim, interpolation, ignore_nan: bool, op: str):
    check_float(input, op)
    if interpolation not in _INTERPOLATIONS:
        raise ValueError(f"{op}: interpolation must be one of {_INTERPOLATIONS}, got "
                         f"{interpolation!r}")
    scalar_q = not isinstance(q, Tensor)
    if not scalar_q and q.dtype is not input.dtype:
        raise DTypeError(f"{op}: q of dtype {q.dtype.name} must have the input's dtype "
                         f"{input.dtype.name}")
    qs = input._device.xp.asarray([q] if scalar_q else q._data.reshape(-1),
                                  dtype=input._data.dtype)
    if not scalar_q and q.ndim > 1:
        raise ShapeError(f"{op}: q must be a number or a 0-d or 1-d tensor, got shape "
                         f"{tuple(q.shape)}")
    if qs.size and (bool((qs < 0).any()) or bool((qs > 1).any())):
        raise ValueError(f"{op}: q must lie in [0, 1]")
    x, d = _moved_last(input, dim)
    if x.shape[-1] == 0:
        raise ShapeError(f"{op}: cannot reduce an empty dimension (shape "
                         f"{tuple(input.shape)})")
    xp = x._device.xp
    n = x.shape[-1]
    order = _order(xp, x._data, x.ndim - 1, False)  # NaNs sort last
    nans = xp.isnan(x._data).sum(axis=-1, keepdims=True)
    count = (n - nans) if ignore_nan else xp.full_like(nans, n)
    ranks = qs * xp.maximum(count - 1, 0)  # (..., nq)
    lo = xp.floor(ranks).astype(_INT64)
    hi = xp.ceil(ranks).astype(_INT64)
    if interpolation == "nearest":
        lo = hi = xp.round(ranks).astype(_INT64)
    elif interpolation == "lower":
        hi = lo
    elif interpolation == "higher":
        lo = hi
    values = gather(x, x.ndim - 1, Tensor._make(xp.take_along_axis(order, lo, -1), x._device))
    upper = gather(x, x.ndim - 1, Tensor._make(xp.take_along_axis(order, hi, -1), x._device))
    if interpolation == "linear":
        weight = Tensor._make((ranks - lo).astype(x._data.dtype), x._device)
        values = values + weight * (upper - values)
    elif interpolation == "midpoint":
        values = values + 0.5 * (upper - values)
    undefined = (count == 0) if ignore_nan else (nans > 0)
    values = where(Tensor._make(xp.broadcast_to(undefined, values.shape), x._device),
                   math.nan, values)
    out = _placed(values.movedim(-1, 0), input, d, keepdim)  # (nq, ...)
    return out[0] if scalar_q else out


def _placed(out: Tensor, input: Tensor, d, keepdim: bool) -> Tensor:
    """(nq, *reduced) with the reduced dim restored as size 1 at `d` under `keepdim`."""
    if not keepdim:
        return out
    if d is None:
        return out.reshape((out.shape[0],) + (1,) * input.ndim)
    return out.unsqueeze(d + 1) if input.ndim else out


@tensor_method()
def quantile(input, q, dim=None, keepdim: bool = False, *,
             interpolation: str = "linear") -> Tensor:
    """The q-th quantiles along `dim` (of every element when None); a tensor q of n values
    adds a leading dim of size n. NaN where the slice holds a NaN."""
    return _quantile(input, q, dim, keepdim, interpolation, False, "quantile")


@tensor_method()
def nanquantile(input, q, dim=None, keepdim: bool = False, *,
                interpolation: str = "linear") -> Tensor:
    """quantile over the elements that are not NaN (NaN where all are)."""
    return _quantile(input, q, dim, keepdim, interpolation, True, "nanquantile")


# ------------------------------------------------------------ covariance
@tensor_method()
def cov(input, *, correction: int = 1, fweights=None, aweights=None) -> Tensor:
    """The covariance matrix of the variables in the rows of `input` (observations in the
    columns; a 1-d input is one variable), with optional integer frequency weights and
    float observation weights."""
    if input.ndim > 2:
        raise ShapeError(f"cov: expects a 1-d or 2-d tensor, got shape {tuple(input.shape)}")
    x = input.reshape(1, -1) if input.ndim < 2 else input
    if x._data.dtype.kind != "f":
        x = x.to(dtypes.get_default_dtype())
    n = x.shape[1]
    weights = None
    for name, w in (("fweights", fweights), ("aweights", aweights)):
        if w is None:
            continue
        if w.ndim > 1 or w.numel() != n:
            raise ShapeError(f"cov: {name} must be 1-d with one weight per observation ({n}), "
                             f"got shape {tuple(w.shape)}")
        if name == "fweights" and w._data.dtype.kind not in "iu":
            raise DTypeError(f"cov: fweights must be integers, got {w.dtype.name}")
        if bool((w._data < 0).any()):
            raise ValueError(f"cov: {name} must be non-negative")
        w = w.to(x.dtype)
        weights = w if weights is None else weights * w
    if weights is None:
        total = float(n)
        mean = x.mean(1, keepdim=True)
        norm = total - correction
        centred = x - mean
        out = (centred @ centred.mT) / max(norm, 0)
    else:
        total = weights.sum()
        mean = (x * weights).sum(1, keepdim=True) / total
        norm = total - correction * ((weights * aweights.to(x.dtype)).sum() / total
                                     if aweights is not None else 1)
        centred = x - mean
        out = ((centred * weights) @ centred.mT) / clamp(norm, min=0)
    return out.squeeze() if input.ndim < 2 else out


@tensor_method()
def corrcoef(input) -> Tensor:
    """Pearson's correlation coefficients of the rows of `input` (clipped to [-1, 1])."""
    c = cov(input)
    if c.ndim == 0:
        return c / c
    std = sqrt(c.diagonal())
    return clamp(c / std.unsqueeze(1) / std.unsqueeze(0), -1, 1)

