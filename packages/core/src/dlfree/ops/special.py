"""Special functions: lgamma, digamma, polygamma, mvlgamma, i0, sinc, logit.

The gamma and Bessel kernels are `backends.gamma_bessel`'s (NumPy or CuPy alike); each
gradient is the next function of the family (lgamma' = digamma, ψ⁽ⁿ⁾' = ψ⁽ⁿ⁺¹⁾,
I0' = I1, I1' = I0 - I1/x), written with these ops, so every order of derivative exists.
"""

from __future__ import annotations

import math
import numbers

from .. import dtypes
from ..autograd.function import Function
from ..backends import gamma_bessel
from ..errors import DTypeError
from ..tensor import Tensor
from ._util import tensor_method
from .elementwise import _unary, clamp, log, log1p, sin, where
from .inplace import _generic

__all__ = ["lgamma", "digamma", "polygamma", "mvlgamma", "i0", "sinc", "logit"]


class Polygamma(Function):
    """ψ⁽ⁿ⁾(x) for a whole n >= 0; its gradient is ψ⁽ⁿ⁺¹⁾(x)."""

    saves = (0,)

    def forward(self, x, n):
        self.n = n
        return gamma_bessel.polygamma(self.xp, n, x)

    def backward(self, g):
        (x,) = self.saved_tensors
        return (g * Polygamma.apply(x, n=self.n + 1),)


def _float_input(input: Tensor) -> Tensor:
    return input if input._data.dtype.kind == "f" else input.to(dtypes.get_default_dtype())


def polygamma(n: int, input) -> Tensor:
    """The n-th derivative of digamma (n = 0 is digamma itself)."""
    if not isinstance(n, numbers.Integral) or isinstance(n, bool) or n < 0:
        raise ValueError(f"polygamma: n must be a non-negative integer, got {n!r}")
    return Polygamma.apply(_float_input(input), n=int(n))


@tensor_method("polygamma")
def _polygamma_method(self, n: int) -> Tensor:
    """torch's Tensor.polygamma(n): the order comes after the tensor."""
    return polygamma(n, self)


digamma = _unary("digamma", lambda xp, x: gamma_bessel.digamma(xp, x),
                 lambda g, x: g * polygamma(1, x),
                 "ψ(x), the derivative of lgamma: -inf at 0, NaN at the negative integers.")
lgamma = _unary("lgamma", lambda xp, x: gamma_bessel.lgamma(xp, x),
                lambda g, x: g * digamma(x),
                "log|Γ(x)|, +inf at the poles 0, -1, -2, ...")


class I1(Function):
    """The modified Bessel function I1 (i0's derivative); I1'(x) = I0(x) - I1(x)/x, 1/2 at 0."""

    saves = (0,)

    def forward(self, x):
        return gamma_bessel.i1(self.xp, x)

    def backward(self, g):
        (x,) = self.saved_tensors
        safe = where(x == 0, 1.0, x)
        return (g * where(x == 0, 0.5, i0(x) - I1.apply(x) / safe),)


i0 = _unary("i0", lambda xp, x: gamma_bessel.i0(xp, x), lambda g, x: g * I1.apply(x),
            "The modified Bessel function of the first kind of order 0.")


@tensor_method()
def mvlgamma(input, p: int) -> Tensor:
    """The multivariate log-gamma of dimension `p`: Σᵢ lgamma(x - i/2) + p(p-1)/4 log π;
    every element must exceed (p - 1) / 2."""
    if not isinstance(p, numbers.Integral) or p < 1:
        raise ValueError(f"mvlgamma: p must be a positive integer, got {p!r}")
    if input._data.dtype.kind != "f":
        raise DTypeError(f"mvlgamma: not supported for {input.dtype.name} tensors; valid: "
                         "floating-point tensors")
    if bool((input._data <= (p - 1) / 2).any()):
        raise ValueError(f"mvlgamma: all elements must be greater than (p-1)/2 = {(p - 1) / 2}")
    total = lgamma(input)
    for i in range(1, p):
        total = total + lgamma(input - i / 2)
    return total + p * (p - 1) / 4 * math.log(math.pi)


@tensor_method()
def sinc(input) -> Tensor:
    """sin(πx) / (πx), and 1 at x = 0 (where its gradient is 0, as torch's)."""
    x = _float_input(input)
    zero = x == 0
    scaled = where(zero, 1.0, x) * math.pi
    return where(zero, 1.0, sin(scaled) / scaled)


@tensor_method()
def logit(input, eps: float | None = None) -> Tensor:
    """log(p / (1 - p)); with `eps`, p is first clamped to [eps, 1 - eps] (the gradient is
    then zero outside that range)."""
    x = _float_input(input)
    if eps is not None:
        x = clamp(x, eps, 1 - eps)
    return log(x) - log1p(-x)


for _name in ("logit", "sinc", "lgamma", "digamma", "polygamma", "mvlgamma", "i0"):
    setattr(Tensor, f"{_name}_", _generic(_name))
