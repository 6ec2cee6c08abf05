"""Activation functions beyond the elementwise basics (relu6, gelu, silu, glu, ...).

Ops with a kink or a costly formula are one `Function` each: the forward is an array
kernel and the backward multiplies by the derivative written with Tensor ops, so double
backward works. The others are short compositions of differentiable ops. Gradients at
the kinks are those torch defines.
"""

from __future__ import annotations

import math

from ..autograd.autocasting import autocast_policy
from ..autograd.function import Function
from ..autograd.grad_mode import STATE
from ..backends import special
from ..backends.base import Backend
from ..errors import ShapeError
from ..tensor import Tensor
from ._util import normalize_dim
from .elementwise import exp, one_plus_exp_neg, sigmoid, sigmoid_kernel, tanh, where
from .elementwise import relu as _relu
from .inplace import apply_inplace
from .softmax import softmax

__all__ = [
    "relu", "relu_", "relu6", "leaky_relu", "leaky_relu_", "elu", "elu_", "selu", "selu_",
    "celu", "celu_", "gelu", "silu", "mish", "softplus", "softsign", "hardtanh", "hardtanh_",
    "hardsigmoid", "hardswish", "prelu", "glu", "tanhshrink", "softmin", "threshold",
    "threshold_", "hardshrink", "softshrink",
]

_SQRT_HALF = math.sqrt(0.5)
_INV_SQRT_2PI = 1 / math.sqrt(2 * math.pi)
_SQRT_2_OVER_PI = math.sqrt(2 / math.pi)
_GELU_CUBIC = 0.044715
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


class _Pointwise(Function):
    """y = f(x; params): subclasses give `kernel(backend, x, **params)` on arrays (the
    backend supplies `xp` and special functions such as erf) and `derivative(x, **params)`,
    dy/dx as Tensor ops on the saved input."""

    saves = (0,)

    def forward(self, x, **params):
        self.params = params
        return self.kernel(self.device.backend, x, **params)

    def backward(self, g):
        (x,) = self.saved_tensors
        return (g * self.derivative(x, **self.params),)


def _mask(condition: Tensor, like: Tensor) -> Tensor:
    """A bool tensor as 0/1 in `like`'s dtype (a constant: masks carry no gradient)."""
    return condition.to(like.dtype)


class Hardtanh(_Pointwise):
    @staticmethod
    def kernel(be, x, lo, hi):
        return be.xp.clip(x, lo, hi)

    @staticmethod
    def derivative(x, lo, hi):
        return _mask((x > lo) & (x < hi), x)  # torch: 0 at both corners


class LeakyRelu(_Pointwise):
    @staticmethod
    def kernel(be, x, slope):
        return be.xp.where(x > 0, x, x * slope)

    @staticmethod
    def derivative(x, slope):
        return slope + (1 - slope) * _mask(x > 0, x)  # torch: the slope at 0


class Elu(_Pointwise):
    """scale * x for x > 0, else scale * alpha * (exp(input_scale * x) - 1): elu, selu, celu."""

    @staticmethod
    def kernel(be, x, alpha, scale, input_scale):
        xp = be.xp
        negative = xp.expm1(xp.minimum(x, 0) * input_scale) * (alpha * scale)
        return xp.where(x > 0, x * scale, negative)

    @staticmethod
    def derivative(x, alpha, scale, input_scale):
        negative = (x.clamp(max=0) * input_scale).exp() * (alpha * scale * input_scale)
        return where(x > 0, scale, negative)  # torch: the negative branch at 0


def _fused_gelu(be) -> bool:
    """True when the backend's erf is special.py's, whose own GELU kernels are then faster
    than composing erf with array ops (a backend with its own erf, like CuPy's, composes)."""
    return type(be).erf is Backend.erf


class Gelu(_Pointwise):
    """x * Phi(x), with the exact normal CDF or its tanh approximation."""

    @staticmethod
    def kernel(be, x, approximate):
        if approximate == "tanh":
            inner = (x + _GELU_CUBIC * x * x * x) * _SQRT_2_OVER_PI
            return 0.5 * x * (1 + be.xp.tanh(inner))
        if _fused_gelu(be):
            return special.gelu(be.xp, x)
        return 0.5 * x * (1 + be.erf(x * _SQRT_HALF))

    def backward(self, g):
        (x,) = self.saved_tensors
        if self.params["approximate"] == "none":
            return (GeluGrad.apply(g, x),)
        t = tanh((x + _GELU_CUBIC * x * x * x) * _SQRT_2_OVER_PI)
        d_inner = (1 + 3 * _GELU_CUBIC * x * x) * _SQRT_2_OVER_PI
        return (g * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * d_inner),)


class GeluGrad(Function):
    """g * GELU'(x) = g * (Phi(x) + x * phi(x)) as one kernel: exact GELU's backward. Its own
    backward, for double backward, uses GELU''(x) = phi(x) * (2 - x**2)."""

    saves = (0, 1)

    def forward(self, g, x):
        be = self.device.backend
        if _fused_gelu(be):
            return special.gelu_grad(self.xp, g, x)
        cdf = 0.5 * (1 + be.erf(x * _SQRT_HALF))
        return g * (cdf + x * self.xp.exp(-0.5 * x * x) * _INV_SQRT_2PI)

    def backward(self, gg):
        g, x = self.saved_tensors
        need_g, need_x = self.needs_input_grad
        grad_g = GeluGrad.apply(gg, x) if need_g else None
        grad_x = gg * g * exp(-0.5 * x * x) * _INV_SQRT_2PI * (2 - x * x) if need_x else None
        return grad_g, grad_x


def _softplus_kernel(xp, x):
    """log(1 + exp(x)) without overflow."""
    return xp.maximum(x, 0) + xp.log1p(xp.exp(-xp.abs(x)))


class Silu(_Pointwise):
    """x * sigmoid(x), forward and backward as in-place passes over one array each; under
    create_graph the backward is Tensor ops, so that it is differentiable again."""

    @staticmethod
    def kernel(be, x):
        out = one_plus_exp_neg(be.xp, x)
        return be.xp.divide(x, out, out=out)

    def backward(self, g):
        (x,) = self.saved_tensors
        if STATE.enabled:
            s = sigmoid(x)
            return (g * (s * (1 + x * (1 - s))),)
        xp, s = self.xp, sigmoid_kernel(self.xp, x._data)
        # g * s * (1 + x * (1 - s))
        out = xp.subtract(1, s, out=xp.empty_like(s))
        out *= x._data
        out += 1
        out *= s
        out *= g._data
        return (Tensor._make(out, self.device),)


class Mish(_Pointwise):
    @staticmethod
    def kernel(be, x):
        return x * be.xp.tanh(_softplus_kernel(be.xp, x))

    @staticmethod
    def derivative(x):
        t = tanh(softplus(x))
        return t + x * (1 - t * t) * sigmoid(x)


class Softplus(_Pointwise):
    autocast = "float32"

    @staticmethod
    def kernel(be, x, beta, threshold):
        bx = x * beta
        return be.xp.where(bx > threshold, x, _softplus_kernel(be.xp, bx) / beta)

    @staticmethod
    def derivative(x, beta, threshold):
        bx = x * beta
        return where(bx > threshold, 1.0, sigmoid(bx))


class Hardsigmoid(_Pointwise):
    @staticmethod
    def kernel(be, x):
        return be.xp.clip(x + 3, 0, 6) / 6

    @staticmethod
    def derivative(x):
        return _mask((x > -3) & (x < 3), x) / 6  # torch: 0 at both corners


class Hardswish(_Pointwise):
    @staticmethod
    def kernel(be, x):
        return x * be.xp.clip(x + 3, 0, 6) / 6

    @staticmethod
    def derivative(x):
        # torch: 0 up to -3, x/3 + 1/2 strictly inside (-3, 3), 1 from 3 on
        return _mask((x > -3) & (x < 3), x) * (x / 3 + 0.5) + _mask(x >= 3, x)


def _inplace(op, input: Tensor, inplace: bool, name: str, **params) -> Tensor:
    """`op(input, **params)`, written into `input` when `inplace` (as torch's `name_`)."""
    if inplace:
        return apply_inplace(input, lambda t: op(t, **params), (), f"{name}_")
    return op(input, **params)


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """max(x, 0); the gradient at 0 is 0, as in torch."""
    return _inplace(_relu, input, inplace, "relu")


def relu_(input: Tensor) -> Tensor:
    """In-place `relu`."""
    return relu(input, inplace=True)


def _hardtanh(input, min_val, max_val):
    return Hardtanh.apply(input, lo=min_val, hi=max_val)


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0,
             inplace: bool = False) -> Tensor:
    """x clipped to [min_val, max_val]; the gradient is 1 strictly inside, 0 elsewhere."""
    if min_val > max_val:
        raise ValueError(f"hardtanh: min_val ({min_val}) cannot be greater than max_val "
                         f"({max_val})")
    return _inplace(_hardtanh, input, inplace, "hardtanh", min_val=min_val, max_val=max_val)


def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    """In-place `hardtanh`."""
    return hardtanh(input, min_val, max_val, inplace=True)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """min(max(x, 0), 6), i.e. hardtanh(x, 0, 6)."""
    return _inplace(_hardtanh, input, inplace, "relu6", min_val=0.0, max_val=6.0)


def _leaky_relu(input, negative_slope):
    return LeakyRelu.apply(input, slope=negative_slope)


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """x for x > 0, else negative_slope * x."""
    return _inplace(_leaky_relu, input, inplace, "leaky_relu", negative_slope=negative_slope)


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    """In-place `leaky_relu`."""
    return leaky_relu(input, negative_slope, inplace=True)


def _elu(input, alpha, scale=1.0, input_scale=1.0):
    return Elu.apply(input, alpha=alpha, scale=scale, input_scale=input_scale)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """x for x > 0, else alpha * (exp(x) - 1)."""
    return _inplace(_elu, input, inplace, "elu", alpha=alpha)


def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """In-place `elu`."""
    return elu(input, alpha, inplace=True)


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """scale * elu(x, alpha) with the self-normalising constants of Klambauer et al. (2017)."""
    return _inplace(_elu, input, inplace, "selu", alpha=_SELU_ALPHA, scale=_SELU_SCALE)


def selu_(input: Tensor) -> Tensor:
    """In-place `selu`."""
    return selu(input, inplace=True)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""
    if alpha == 0:
        raise ValueError("celu: alpha must be non-zero (it divides the input), got 0")
    return _inplace(_elu, input, inplace, "celu", alpha=alpha, input_scale=1 / alpha)


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """In-place `celu`."""
    return celu(input, alpha, inplace=True)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """x * Phi(x) with the normal CDF Phi; approximate='tanh' uses the tanh formula."""
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return Gelu.apply(input, approximate=approximate)


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """x * sigmoid(x) (also called swish)."""
    return _inplace(Silu.apply, input, inplace, "silu")


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """x * tanh(softplus(x))."""
    return _inplace(Mish.apply, input, inplace, "mish")


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """log(1 + exp(beta * x)) / beta, and x itself where beta * x > threshold."""
    return Softplus.apply(input, beta=beta, threshold=threshold)


def softsign(input: Tensor) -> Tensor:
    """x / (1 + |x|)."""
    return input / (input.abs() + 1)


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    """relu6(x + 3) / 6; the gradient is 1/6 strictly inside (-3, 3), 0 elsewhere."""
    return _inplace(Hardsigmoid.apply, input, inplace, "hardsigmoid")


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    """x * relu6(x + 3) / 6, from Howard et al. (2019), "Searching for MobileNetV3"."""
    return _inplace(Hardswish.apply, input, inplace, "hardswish")


@autocast_policy("lower")
def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """x for x > 0, else weight * x, with one learnt slope or one per channel (dim 1)."""
    channels = input.shape[1] if input.ndim > 1 else 1
    if weight.ndim > 1 or weight.numel() not in (1, channels):
        raise ShapeError(
            f"prelu: weight of shape {tuple(weight.shape)} does not fit input of shape "
            f"{tuple(input.shape)}; valid: a 1-d weight of 1 or {channels} (channels) elements"
        )
    if weight.numel() > 1:
        weight = weight.reshape((channels,) + (1,) * (input.ndim - 2))
    return where(input > 0, input, weight * input)


def glu(input: Tensor, dim: int = -1) -> Tensor:
    """a * sigmoid(b), where a and b are the two halves of `input` along `dim`."""
    d = normalize_dim(dim, input.ndim, "glu")
    if input.ndim == 0 or input.shape[d] % 2:
        raise ShapeError(f"glu: halving dimension must be even, but dim {d} of input shape "
                         f"{tuple(input.shape)} has size {input.shape[d] if input.ndim else 0}")
    a, b = input.chunk(2, d)
    return a * sigmoid(b)


def tanhshrink(input: Tensor) -> Tensor:
    """x - tanh(x)."""
    return input - tanh(input)


@autocast_policy("float32", dtype_arg="dtype")
def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """softmax(-x) along `dim`."""
    if dtype is not None:
        input = input.to(dtype)
    return softmax(-input, dim)


def _threshold(input, threshold, value):
    return where(input > threshold, input, value)


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """x where x > threshold, else value."""
    return _inplace(_threshold, input, inplace, "threshold", threshold=threshold, value=value)


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    """In-place `threshold`."""
    return _inplace(_threshold, input, True, "threshold", threshold=threshold, value=value)


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """x where |x| > lambd, else 0."""
    return where(input.abs() > lambd, input, 0.0)


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """x - lambd above lambd, x + lambd below -lambd, 0 in between."""
    if lambd < 0:
        raise ValueError(f"softshrink: lambd must be at least 0, got {lambd}")
    return where(input > lambd, input - lambd, where(input < -lambd, input + lambd, 0.0))
