"""Sampling from tensors of probabilities (multinomial, bernoulli) and the in-place random
fills torch has beside uniform_/normal_ (exponential_, geometric_, cauchy_, log_normal_,
random_).

Every random number is drawn on the CPU from the `dl.Generator` given (or the default one)
and then moved to the tensor's device, so that one seed gives the same samples on NumPy
and CuPy.
"""

from __future__ import annotations

import numbers

from .. import dtypes
from ..autograd.function import Function
from ..creation import zeros_like
from ..errors import DTypeError, ShapeError
from ..random import rng
from ..tensor import Tensor
from ._util import check_float, tensor_method
from .inplace import _fill_values

__all__ = ["multinomial", "bernoulli"]


def _on_device(np_values, like: Tensor):
    return like._device.backend.asarray(np_values, index=like._device.index)


def _check_weights(input: Tensor, op: str):
    check_float(input, op)
    if input.ndim not in (1, 2):
        raise ShapeError(f"{op}: expected a 1-d or 2-d tensor of weights, got shape "
                         f"{tuple(input.shape)}")
    if input.shape[-1] == 0:
        raise ShapeError(f"{op}: the weights have no categories (shape {tuple(input.shape)})")
    xp = input._device.xp
    w = input._data.reshape(-1, input.shape[-1])
    if not bool(xp.isfinite(w).all()) or bool((w < 0).any()):
        raise ValueError(f"{op}: the weights must be finite and non-negative")
    if bool((w.sum(axis=1) <= 0).any()):
        raise ValueError(f"{op}: every row of weights needs a positive sum")
    return xp, w


@tensor_method()
def multinomial(input, num_samples: int, replacement: bool = False, *,
                generator=None) -> Tensor:
    """`num_samples` category indices per row of the (unnormalised) weights `input`
    (1-d or 2-d), drawn with or without replacement. Not differentiable."""
    xp, w = _check_weights(input, "multinomial")
    rows, k = w.shape
    if not isinstance(num_samples, numbers.Integral) or num_samples <= 0:
        raise ValueError(f"multinomial: num_samples must be a positive integer, got "
                         f"{num_samples!r}")
    if not replacement and num_samples > k:
        raise ValueError(f"multinomial: cannot draw {num_samples} samples without replacement "
                         f"from {k} categories; valid: num_samples <= {k}, or "
                         "replacement=True")
    if not replacement and bool(((w > 0).sum(axis=1) < num_samples).any()):
        raise ValueError(f"multinomial: a row has fewer than {num_samples} categories of "
                         "positive weight, too few to draw that many without replacement")
    gen = rng(generator)
    if replacement:
        u = _on_device(gen.random((rows, num_samples)), input).astype(w.dtype)
        cdf = xp.cumsum(w, axis=1)
        cdf = cdf / cdf[:, -1:]
        picks = xp.stack([xp.searchsorted(c, v, side="right") for c, v in zip(cdf, u)])
        picks = xp.minimum(picks, k - 1)
    else:
        # each category's exponential arrival time at rate w: the first num_samples to
        # arrive are a draw without replacement (zero weights never arrive)
        with input._device.context():  # a zero weight's arrival is inf, quietly
            arrival = _on_device(gen.exponential(size=(rows, k)), input) / w
        picks = xp.argsort(arrival, axis=1, kind="stable")[:, :num_samples]
    picks = picks.astype(dtypes.int64.np)
    out = Tensor._make(picks, input._device)
    return out.reshape(num_samples) if input.ndim == 1 else out


class Bernoulli(Function):
    """0/1 draws with the given probabilities; the gradient is zero, as torch defines it."""

    def forward(self, p, draws):
        return (draws < p).astype(p.dtype)

    def backward(self, g):
        return (zeros_like(g), None)


@tensor_method()
def bernoulli(input, p=None, *, generator=None) -> Tensor:
    """1 with probability `input` (or the number `p`, when given) and 0 otherwise, in
    input's floating dtype."""
    check_float(input, "bernoulli")
    if p is not None:
        input = zeros_like(input) + p
    if bool(((input._data < 0) | (input._data > 1)).any()):
        raise ValueError("bernoulli: probabilities must lie in [0, 1]")
    draws = Tensor._make(_on_device(rng(generator).random(input._data.shape), input)
                         .astype(input._data.dtype), input._device)
    return Bernoulli.apply(input, draws)


def _check_positive(value, name: str, op: str) -> None:
    if not value > 0:
        raise ValueError(f"{op}: {name} must be positive, got {value}")


@tensor_method()
def exponential_(self, lambd: float = 1.0, *, generator=None) -> Tensor:
    """Fill with samples from the exponential distribution of rate `lambd`."""
    _check_positive(lambd, "lambd", "exponential_")
    values = rng(generator).exponential(1.0 / lambd, self._data.shape)
    return _fill_values(self, values, "exponential_")


@tensor_method()
def geometric_(self, p: float, *, generator=None) -> Tensor:
    """Fill with the number of Bernoulli(p) trials up to and including the first success."""
    if not 0 < p <= 1:
        raise ValueError(f"geometric_: p must lie in (0, 1], got {p}")
    values = rng(generator).geometric(p, self._data.shape)
    return _fill_values(self, values, "geometric_")


@tensor_method()
def cauchy_(self, median: float = 0.0, sigma: float = 1.0, *, generator=None) -> Tensor:
    """Fill with samples from the Cauchy distribution centred on `median`, scale `sigma`."""
    _check_positive(sigma, "sigma", "cauchy_")
    values = median + sigma * rng(generator).standard_cauchy(self._data.shape)
    return _fill_values(self, values, "cauchy_")


@tensor_method()
def log_normal_(self, mean: float = 1.0, std: float = 2.0, *, generator=None) -> Tensor:
    """Fill with exp(N(mean, std**2)) samples."""
    _check_positive(std, "std", "log_normal_")
    values = rng(generator).lognormal(mean, std, self._data.shape)
    return _fill_values(self, values, "log_normal_")


def _random_bounds(t: Tensor, low, high) -> tuple:
    """[low, high) for random_: random_() spans the integers the dtype holds exactly."""
    dt, xp = t._data.dtype, t._device.xp
    if high is None and low is not None:
        low, high = 0, low
    if high is None:
        if dt.kind == "b":
            return 0, 2
        high = 2 ** (xp.finfo(dt).nmant + 1) + 1 if dt.kind == "f" else int(xp.iinfo(dt).max)
        return 0, high
    if dt.kind in "iub" and dt.kind != "b":
        info = xp.iinfo(dt)
        if low < info.min or high - 1 > info.max:
            raise ValueError(f"random_: [{low}, {high}) does not fit {t.dtype.name}; valid: "
                             f"[{info.min}, {int(info.max) + 1})")
    return low, high


@tensor_method()
def random_(self, from_=None, to=None, *, generator=None) -> Tensor:
    """Fill with integers drawn uniformly from [from_, to): random_(to) draws from
    [0, to), random_() from every integer the dtype holds exactly."""
    low, high = _random_bounds(self, from_, to)
    if not low < high:
        raise ValueError(f"random_: expected from < to, got [{low}, {high})")
    if self._data.dtype.kind == "b" and (low, high) != (0, 2):
        raise DTypeError("random_: a bool tensor takes only random_() or random_(0, 2)")
    values = rng(generator).integers(low, high, self._data.shape,
                                     dtype=dtypes.int64.np)
    return _fill_values(self, values, "random_")
