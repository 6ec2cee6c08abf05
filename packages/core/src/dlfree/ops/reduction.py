"""Reductions over dimensions: sum, mean, var/std, prod, max/min, logsumexp, norm, cumsum, ..."""

from __future__ import annotations

import builtins
import math
import numbers
import warnings
from collections import namedtuple

from .. import dtypes
from ..autograd.autocasting import autocast_policy
from ..autograd.function import Function
from ..autograd.grad_mode import STATE
from ..errors import DTypeError, ShapeError
from ..tensor import Tensor
from ..tracing_state import recorded
from ._util import check_float, normalize_dim, normalize_dims, tensor_method
from .elementwise import maximum, minimum, where

__all__ = ["sum", "mean", "var", "std", "var_mean", "std_mean", "prod", "max", "min", "amax",
           "amin", "argmax", "argmin", "median", "logsumexp", "cumsum", "cumprod", "all", "any"]

# PyTorch's torch.return_types: a named (values, indices) pair per op.
_RESULT_TYPES = {op: namedtuple(op, ("values", "indices")) for op in ("max", "min", "median")}


# ---------------------------------------------------------------------- helpers
def _dims(dim, ndim: int, op: str) -> tuple:
    """Reduced dims; None or an empty sequence means every dim, as in torch's sum/amax."""
    if dim is not None and not isinstance(dim, numbers.Integral) and len(dim) == 0:
        dim = None
    return normalize_dims(dim, ndim, op)


def _count(shape: tuple, dims: tuple) -> int:
    n = 1
    for d in dims:
        n *= shape[d]
    return n


def _keep(t: Tensor, dims: tuple, keepdim: bool) -> Tensor:
    """A reduced tensor with its reduced `dims` restored as size 1 (ready to broadcast)."""
    if keepdim or not dims or t.ndim == 0:  # a 0-d value broadcasts as it is
        return t
    kept = list(t.shape)
    for d in dims:
        kept.insert(d, 1)
    return t.reshape(tuple(kept))


def _expand_back(g: Tensor, shape: tuple, dims: tuple, keepdim: bool) -> Tensor:
    """Broadcast a reduced gradient back over the reduced `dims` of `shape`."""
    return _keep(g, dims, keepdim).expand(shape)


def _constant(array, like: Tensor) -> Tensor:
    return Tensor._make(array, like._device)


def _check_nonempty(input: Tensor, dims: tuple, op: str) -> None:
    """Reductions without an identity (max, min, median, ...) need non-empty reduced dims."""
    empty = [d for d in dims if input.shape[d] == 0] if input.ndim else []
    if empty:
        raise ShapeError(f"{op}: cannot reduce dim {empty[0]} of size 0 (input shape "
                         f"{tuple(input.shape)}); valid: reduce only over non-empty dims")


def _accumulate_as(input: Tensor, dtype) -> Tensor:
    """`input` in torch's accumulation dtype: `dtype` if given, int64 for bools and integers."""
    if dtype is not None:
        target = dtypes.as_dtype(dtype).np
    elif dtypes.kind(input._data.dtype) not in "fc":
        target = dtypes.int64.np
    else:
        return input
    return input if input._data.dtype == target else input.to(target)


# ----------------------------------------------------------------- sum and mean
class Sum(Function):
    complex_grad = True

    def forward(self, x, dims, keepdim):
        self.shape, self.dims, self.keepdim = x.shape, dims, keepdim
        return x.sum(axis=dims, keepdims=keepdim, dtype=dtypes.accumulator(x.dtype))

    def backward(self, g):
        if g._data.ndim == 0 and not STATE.enabled:  # a full sum: fill, cheaper than a view
            out = self.xp.empty(self.shape, dtype=g._data.dtype)
            out[...] = g._data
            return (Tensor._make(out, g._device),)
        return (_expand_back(g, self.shape, self.dims, self.keepdim),)


class Mean(Function):
    complex_grad = True

    def forward(self, x, dims, keepdim):
        self.shape, self.dims, self.keepdim = x.shape, dims, keepdim
        self.count = _count(x.shape, dims)
        if self.count == 0:  # NumPy would warn "mean of empty slice"; torch returns nan
            return self.xp.full_like(x.sum(axis=dims, keepdims=keepdim), self.xp.nan)
        return x.mean(axis=dims, keepdims=keepdim, dtype=dtypes.accumulator(x.dtype))

    def backward(self, g):
        return (_expand_back(g / builtins.max(self.count, 1), self.shape, self.dims,
                             self.keepdim),)


@tensor_method()
@autocast_policy("float32", dtype_arg="dtype")
def sum(input, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """Sum over `dim` (all dims when None); integers and bools sum to int64, as in torch."""
    input = _accumulate_as(input, dtype)
    return Sum.apply(input, dims=_dims(dim, input.ndim, "sum"), keepdim=keepdim)


@tensor_method()
def mean(input, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """Arithmetic mean over `dim`; needs a floating dtype (or pass dtype=)."""
    if dtype is not None:
        input = input.to(dtype)
    if dtypes.kind(input._data.dtype) not in "fc":
        raise DTypeError(f"mean: could not infer output dtype; input dtype is {input.dtype!r} "
                         "and mean needs a floating dtype: pass dtype= or call .float() first")
    return Mean.apply(input, dims=_dims(dim, input.ndim, "mean"), keepdim=keepdim)


# -------------------------------------------------------------------- var and std
class Var(Function):
    saves = (0,)

    def forward(self, x, dims, keepdim, correction):
        self.dims, self.keepdim = dims, keepdim
        self.dof = builtins.max(_count(x.shape, dims) - correction, 0)
        if x.size == 0:
            return self.xp.full_like(x.sum(axis=dims, keepdims=keepdim), self.xp.nan)
        dev = x - x.mean(axis=dims, keepdims=True)
        return (dev * dev).sum(axis=dims, keepdims=keepdim) / x.dtype.type(self.dof)

    def backward(self, g):
        (x,) = self.saved_tensors
        dev = x - x.mean(dim=self.dims, keepdim=True)
        scale = 2 / self.dof if self.dof else math.inf
        return (_keep(g, self.dims, self.keepdim) * dev * scale,)


def _var_args(input, dim, unbiased, correction, op):
    """Resolve torch's overloads: var(x, unbiased), var(x, dim, unbiased), correction=."""
    check_float(input, op)
    if isinstance(dim, bool):
        dim, unbiased = None, dim
    if unbiased is not None and correction is not None:
        raise TypeError(f"{op}: pass either unbiased= or correction=, not both")
    if correction is None:
        correction = 1 if unbiased is None else int(unbiased)
    dims = _dims(dim, input.ndim, op)
    if _count(input.shape, dims) - correction <= 0 and input.numel():
        warnings.warn(f"{op}(): degrees of freedom is <= 0. Correction should be strictly "
                      "less than the reduction factor (input numel divided by output numel).",
                      UserWarning, stacklevel=3)
    return dims, correction


@tensor_method()
def var(input, dim=None, unbiased=None, keepdim: bool = False, *, correction=None) -> Tensor:
    """Variance over `dim`, dividing by N - correction (default 1: the unbiased estimate)."""
    dims, correction = _var_args(input, dim, unbiased, correction, "var")
    return Var.apply(input, dims=dims, keepdim=keepdim, correction=correction)


@tensor_method()
def std(input, dim=None, unbiased=None, keepdim: bool = False, *, correction=None) -> Tensor:
    """Standard deviation: the square root of `var` with the same arguments."""
    dims, correction = _var_args(input, dim, unbiased, correction, "std")
    return Var.apply(input, dims=dims, keepdim=keepdim, correction=correction).sqrt()


def var_mean(input, dim=None, unbiased=None, keepdim: bool = False, *, correction=None):
    """(var, mean) over the same dims."""
    return (var(input, dim, unbiased, keepdim, correction=correction),
            mean(input, None if isinstance(dim, bool) else dim, keepdim))


def std_mean(input, dim=None, unbiased=None, keepdim: bool = False, *, correction=None):
    """(std, mean) over the same dims."""
    return (std(input, dim, unbiased, keepdim, correction=correction),
            mean(input, None if isinstance(dim, bool) else dim, keepdim))


# ------------------------------------------------------------- cumsum and cumprod
class CumSum(Function):
    """Running sum along `dim`, forward or from the end; each is the other's adjoint."""

    complex_grad = True

    def forward(self, x, dim, reverse):
        self.dim, self.reverse = dim, reverse
        if reverse:
            flip = self.xp.flip
            return flip(flip(x, dim).cumsum(axis=dim), dim)
        return x.cumsum(axis=dim)

    def backward(self, g):
        return (CumSum.apply(g, dim=self.dim, reverse=not self.reverse),)


class CumProd(Function):
    saves = (0,)
    save_output = True

    def forward(self, x, dim):
        self.dim = dim
        return x.cumprod(axis=dim)

    def backward(self, g):
        x, y = self.saved_tensors
        return (_cumprod_grad(x, y, g, self.dim),)


def _reverse_cumsum(t: Tensor, dim: int) -> Tensor:
    return CumSum.apply(t, dim=dim, reverse=True)


def _cumprod_grad(x: Tensor, y: Tensor, g: Tensor, dim: int) -> Tensor:
    """d<g, cumprod(x)>/dx for y = cumprod(x) along `dim`, exact where x has zeros.

    Without zeros it is reverse_cumsum(g * y) / x. With zeros, a first-order gradient
    needs only the entries before the first zero (same formula) and the first zero itself
    (the cumprod with that zero replaced by 1); when a graph is being built for higher
    derivatives, the O(n^2) form below is used because it is differentiable everywhere.
    """
    if x.shape[dim] == 1:
        return g
    zero = x._data == 0
    if not zero.any():
        return _reverse_cumsum(g * y, dim) / x
    if STATE.enabled:
        return _cumprod_grad_quadratic(x, g, dim)
    zeros_so_far = zero.cumsum(axis=dim)
    before = _constant(zeros_so_far == 0, x)
    first = _constant(zero & (zeros_so_far == 1), x)
    y_without_first = cumprod(where(first, 1.0, x), dim)
    return (where(before, _reverse_cumsum(g * y, dim) / where(before, x, 1.0), 0.0)
            + where(first, _reverse_cumsum(g * y_without_first, dim), 0.0))


def _cumprod_grad_quadratic(x: Tensor, g: Tensor, dim: int) -> Tensor:
    """grad_i = sum_{k >= i} g_k prod_{j <= k, j != i} x_j, built from an n x n product table."""
    xp, n = x._device.xp, x.shape[dim]
    rows = x.transpose(dim, -1).unsqueeze(-2)  # (..., 1, n): row i will leave out x_i
    left_out = cumprod(where(_constant(xp.eye(n, dtype=bool), x), 1.0, rows), -1)
    upper = _constant(xp.triu(xp.ones((n, n), dtype=x._data.dtype)), x)  # k >= i
    grad = (left_out * upper * g.transpose(dim, -1).unsqueeze(-2)).sum(-1)
    return grad.transpose(dim, -1)


def _scan(fn_cls, input: Tensor, dim: int, dtype, op: str) -> Tensor:
    input = _accumulate_as(input, dtype)
    d = normalize_dim(dim, input.ndim, op)
    if input.ndim == 0:  # NumPy scans return 1-d for 0-d input; torch keeps the shape
        return fn_cls.apply(input.reshape(1), dim=0, **_scan_params(fn_cls)).reshape(())
    return fn_cls.apply(input, dim=d, **_scan_params(fn_cls))


def _scan_params(fn_cls) -> dict:
    return {"reverse": False} if fn_cls is CumSum else {}


@tensor_method()
@autocast_policy("float32", dtype_arg="dtype")
def cumsum(input, dim: int, *, dtype=None) -> Tensor:
    """Running sum along `dim`; integers and bools accumulate in int64, as in torch."""
    return _scan(CumSum, input, dim, dtype, "cumsum")


@tensor_method()
@autocast_policy("float32", dtype_arg="dtype")
def cumprod(input, dim: int, *, dtype=None) -> Tensor:
    """Running product along `dim`; its gradient is exact where the input has zeros."""
    return _scan(CumProd, input, dim, dtype, "cumprod")


# ------------------------------------------------------------------------- prod
class Prod(Function):
    saves = (0,)
    save_output = True

    def forward(self, x, dim, keepdim):
        self.dim, self.keepdim = dim, keepdim
        return x.prod(axis=dim, keepdims=keepdim)

    def backward(self, g):
        x, out = self.saved_tensors
        dims = tuple(range(x.ndim)) if self.dim is None else (self.dim,)
        g = _keep(g, dims, self.keepdim)
        if _count(x.shape, dims) == 1:  # a product of one factor: the identity, as in torch
            return (g,)
        if not (x._data == 0).any():
            return (g * _keep(out, dims, self.keepdim) / x,)
        # the product is the last entry of a cumprod, whose gradient handles zeros exactly
        line, d = (x.reshape(-1), 0) if self.dim is None else (x, self.dim)
        n = line.shape[d]
        last = self.xp.zeros((n,) + (1,) * (line.ndim - 1 - d), dtype=x._data.dtype)
        last[-1] = 1
        g_last = (g.reshape(1) if self.dim is None else g) * _constant(last, x)
        return (_cumprod_grad(line, cumprod(line, d), g_last, d).reshape(x.shape),)


@tensor_method()
@autocast_policy("float32", dtype_arg="dtype")
def prod(input, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """Product over one `dim` (all elements when None); gradients are exact at zeros."""
    input = _accumulate_as(input, dtype)
    d = None if dim is None or input.ndim == 0 else normalize_dim(dim, input.ndim, "prod")
    return Prod.apply(input, dim=d, keepdim=keepdim)


# ----------------------------------------------------------- max, min, median
class TieShare(Function):
    """A reduction that picks values (amax, amin, max(), median()): the gradient is split
    evenly among the elements equal to the result (NaNs count as equal), as torch does."""

    saves = (0,)
    save_output = True

    def forward(self, x, kernel, dims, keepdim):
        self.dims, self.keepdim = dims, keepdim
        return kernel(self.xp, x, dims, keepdim)

    def backward(self, g):
        x, out = self.saved_tensors
        xp = self.xp
        x, out = x._data, _keep(out, self.dims, self.keepdim)._data
        hit = (x == out) | (xp.isnan(x) & xp.isnan(out))
        share = hit / xp.maximum(hit.sum(axis=self.dims, keepdims=True), 1)
        return (_keep(g, self.dims, self.keepdim) * _constant(share.astype(x.dtype), g),)


class Select(Function):
    """The entries at `indices` along `dim` (max/min/median with dim); the gradient goes
    to that index only, as in torch."""

    def forward(self, x, indices, dim, keepdim):
        self.shape, self.dim, self.keepdim, self.indices = x.shape, dim, keepdim, indices
        out = self.xp.take_along_axis(x, indices, axis=dim)
        return out if keepdim else out.squeeze(dim)

    def backward(self, g):
        n = self.shape[self.dim]
        positions = self.xp.arange(n).reshape((n,) + (1,) * (len(self.shape) - 1 - self.dim))
        onehot = (positions == self.indices).astype(g._data.dtype)
        return (_keep(g, (self.dim,), self.keepdim) * _constant(onehot, g),)


def _amax_kernel(xp, x, dims, keepdim):
    return x.max(axis=dims, keepdims=keepdim)


def _amin_kernel(xp, x, dims, keepdim):
    return x.min(axis=dims, keepdims=keepdim)


def _median_kernel(xp, x, dims, keepdim):
    flat = xp.sort(x.reshape(-1))  # NaNs sort last; torch's median is NaN if there is one
    out = xp.where(xp.isnan(flat[-1]), flat[-1], flat[(flat.size - 1) // 2])
    return out.reshape((1,) * x.ndim if keepdim else ())


def _argmax_kernel(xp, x, d):
    return x.argmax(axis=d)


def _argmin_kernel(xp, x, d):
    return x.argmin(axis=d)


def _argmedian_kernel(xp, x, d):
    order = x.argsort(axis=d, kind="stable")  # NaNs sort last, in their original order
    nans = xp.isnan(x).sum(axis=d, keepdims=True)
    pick = xp.where(nans > 0, x.shape[d] - nans, (x.shape[d] - 1) // 2)
    return xp.take_along_axis(order, pick, axis=d).squeeze(d)


def _reduce_ties(input, kernel, dim, keepdim, op):
    dims = _dims(dim, input.ndim, op)
    _check_nonempty(input, dims, op)
    return TieShare.apply(input, kernel=kernel, dims=dims, keepdim=keepdim)


def _values_indices(input, dim, keepdim, op, find):
    """torch.return_types-style (values, indices) of what `find` picks along `dim`."""
    d = normalize_dim(dim, input.ndim, op)
    x = input.reshape(1) if input.ndim == 0 else input
    _check_nonempty(x, (d,), op)
    xp = x._device.xp
    indices = xp.expand_dims(find(xp, x._data, d), d)
    keepdim = keepdim and input.ndim > 0
    values = Select.apply(x, indices=indices, dim=d, keepdim=keepdim)
    indices = _constant(indices if keepdim else indices.squeeze(d), x)
    return _RESULT_TYPES[op](values, indices)


@tensor_method()
def amax(input, dim=(), keepdim: bool = False) -> Tensor:
    """Largest value over `dim` (all dims when empty); ties share the gradient evenly."""
    return _reduce_ties(input, _amax_kernel, dim, keepdim, "amax")


@tensor_method()
def amin(input, dim=(), keepdim: bool = False) -> Tensor:
    """Smallest value over `dim` (all dims when empty); ties share the gradient evenly."""
    return _reduce_ties(input, _amin_kernel, dim, keepdim, "amin")


@tensor_method()
def max(input, dim=None, keepdim: bool = False):
    """max(x): the largest value; max(x, dim): (values, indices); max(x, other): maximum."""
    if isinstance(dim, Tensor):
        return maximum(input, dim)
    if dim is None:
        return _reduce_ties(input, _amax_kernel, None, False, "max")
    return _values_indices(input, dim, keepdim, "max", _argmax_kernel)


@tensor_method()
def min(input, dim=None, keepdim: bool = False):
    """min(x): the smallest value; min(x, dim): (values, indices); min(x, other): minimum."""
    if isinstance(dim, Tensor):
        return minimum(input, dim)
    if dim is None:
        return _reduce_ties(input, _amin_kernel, None, False, "min")
    return _values_indices(input, dim, keepdim, "min", _argmin_kernel)


@tensor_method()
def median(input, dim=None, keepdim: bool = False):
    """The lower median (no averaging, as torch); with `dim`, (values, indices)."""
    if dim is not None:
        return _values_indices(input, dim, keepdim, "median", _argmedian_kernel)
    if input.numel() == 0:
        return _constant(input._device.xp.asarray(math.nan, dtype=input._data.dtype), input)
    return TieShare.apply(input, kernel=_median_kernel, dims=tuple(range(input.ndim)),
                          keepdim=False)


def _arg_extreme(input, dim, keepdim, op, find):
    xp = input._device.xp
    if dim is None:
        _check_nonempty(input, tuple(range(input.ndim)), op)
        out = find(xp, input._data.reshape(-1), 0)
        return _constant(xp.asarray(out).reshape((1,) * input.ndim if keepdim else ()), input)
    d = normalize_dim(dim, input.ndim, op)
    x = input._data.reshape(1) if input.ndim == 0 else input._data
    _check_nonempty(input, (d,) if input.ndim else (), op)
    out = find(xp, x, d)
    return _constant(xp.expand_dims(out, d) if keepdim and input.ndim else out, input)


@tensor_method()
@recorded
def argmax(input, dim=None, keepdim: bool = False) -> Tensor:
    """Index of the largest value along `dim` (of the flattened tensor when None)."""
    return _arg_extreme(input, dim, keepdim, "argmax", _argmax_kernel)


@tensor_method()
@recorded
def argmin(input, dim=None, keepdim: bool = False) -> Tensor:
    """Index of the smallest value along `dim` (of the flattened tensor when None)."""
    return _arg_extreme(input, dim, keepdim, "argmin", _argmin_kernel)


# -------------------------------------------------------------------- logsumexp
class LogSumExp(Function):
    autocast = "float32"
    saves = (0,)
    save_output = True

    def forward(self, x, dims, keepdim):
        self.dims, self.keepdim = dims, keepdim
        xp = self.xp
        if _count(x.shape, dims) == 0:
            return xp.full_like(x.sum(axis=dims, keepdims=keepdim), -xp.inf)
        m = x.max(axis=dims, keepdims=True)
        m = xp.where(xp.isinf(m), 0, m).astype(x.dtype, copy=False)  # all -inf (or inf) slices
        out = xp.log(xp.exp(x - m).sum(axis=dims, keepdims=True)) + m
        return out if keepdim else out.squeeze(axis=dims)

    def backward(self, g):
        x, out = self.saved_tensors
        dims, keepdim = self.dims, self.keepdim
        return (_keep(g, dims, keepdim) * (x - _keep(out, dims, keepdim)).exp(),)


@tensor_method()
def logsumexp(input, dim, keepdim: bool = False) -> Tensor:
    """log(sum(exp(x))) over `dim`, computed without overflow."""
    if dtypes.kind(input._data.dtype) != "f":
        input = input.to(dtypes.get_default_dtype())
    return LogSumExp.apply(input, dims=_dims(dim, input.ndim, "logsumexp"), keepdim=keepdim)


# ------------------------------------------------------------------- vector norm
class VectorNorm(Function):
    saves = (0,)
    save_output = True

    def forward(self, x, ord, dims, keepdim):
        self.ord, self.dims, self.keepdim = ord, dims, keepdim
        if ord == 2:
            return self.xp.sqrt((x * x).sum(axis=dims, keepdims=keepdim))
        a = self.xp.abs(x)
        if ord == 1:
            return a.sum(axis=dims, keepdims=keepdim)
        if ord == math.inf:
            return a.max(axis=dims, keepdims=keepdim)
        if ord == -math.inf:
            return a.min(axis=dims, keepdims=keepdim)
        if ord == 0:
            return (a != 0).sum(axis=dims, keepdims=keepdim, dtype=x.dtype)
        return (a ** ord).sum(axis=dims, keepdims=keepdim) ** (1 / ord)

    def backward(self, g):
        x, norm = self.saved_tensors
        p, dims = self.ord, self.dims
        g, norm = _keep(g, dims, self.keepdim), _keep(norm, dims, self.keepdim)
        if p == 0:
            return (_expand_back(g, x.shape, dims, True) * 0.0,)
        if p == 1:
            return (g * x.sign(),)
        if math.isinf(p):  # like amax of |x|: ties share the gradient evenly
            hit = self.xp.abs(x._data) == norm._data
            share = hit / self.xp.maximum(hit.sum(axis=dims, keepdims=True), 1)
            return (g * x.sign() * _constant(share.astype(x._data.dtype), x),)
        if p < 1:
            nonzero = x != 0
            magnitude = where(nonzero, x.abs(), 1.0) ** (p - 1) * nonzero.to(x.dtype)
            return (x.sign() * magnitude * g * norm ** (1 - p),)
        zero = norm == 0  # torch defines the gradient at the zero vector as 0
        scale = where(zero, 0.0, g / where(zero, 1.0, norm) ** (p - 1))
        if p == 2:
            return (x * scale,)
        magnitude = x.abs() ** (p - 1) * x.sign() if p < 2 else x * x.abs() ** (p - 2)
        return (magnitude * scale,)


@autocast_policy("float32", dtype_arg="dtype")
def vector_norm(x, ord=2, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """(sum |x|^ord)^(1/ord) over `dim` (all dims when None); ord may be inf, -inf or 0."""
    op = "linalg.vector_norm"
    if dtype is not None:
        x = x.to(dtype)
    check_float(x, op)
    dims = _dims(dim, x.ndim, op)
    if math.isinf(ord) and _count(x.shape, dims) == 0:
        raise ShapeError(f"{op}: cannot take the {ord} norm over an empty dimension (shape "
                         f"{tuple(x.shape)}, dim={dim}), it has no identity; valid: non-empty dims")
    return VectorNorm.apply(x, ord=float(ord), dims=dims, keepdim=keepdim)


# ------------------------------------------------------------------- all and any
def _logical(input, dim, keepdim, op):
    dims = normalize_dims(dim, input.ndim, op)  # dim=() reduces nothing, as in torch
    xp = input._device.xp
    out = getattr(input._data, op)(axis=dims, keepdims=keepdim)
    if input._data.dtype == dtypes.uint8.np:  # torch keeps uint8 for uint8 inputs
        out = out.astype(input._data.dtype)
    return _constant(xp.asarray(out), input)


@tensor_method()
def all(input, dim=None, keepdim: bool = False) -> Tensor:
    """True where every element over `dim` is non-zero."""
    return _logical(input, dim, keepdim, "all")


@tensor_method()
def any(input, dim=None, keepdim: bool = False) -> Tensor:
    """True where some element over `dim` is non-zero."""
    return _logical(input, dim, keepdim, "any")
