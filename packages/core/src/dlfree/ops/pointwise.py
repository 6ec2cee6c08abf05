"""More elementwise ops with torch's names: nan_to_num, clamp_min/max, sgn, copysign, ldexp,
logaddexp(2), float_power, deg2rad/rad2deg, and the non-differentiable signbit, nextafter,
gcd, lcm, heaviside, isposinf, isneginf, isreal.

The differentiable ones are compositions of the elementwise ops (so their gradients and
second derivatives are those ops'), except copysign, a Function of its own.
"""

from __future__ import annotations

import math

from .. import dtypes
from ..creation import zeros_like
from ..errors import DTypeError
from ..tensor import Tensor
from ._util import check_kind, promote, scalar_tensor, tensor_method
from .comparison import _unary as _plain_unary
from .elementwise import _binary, abs, clamp, exp, exp2, log1p, maximum, sign, where
from .inplace import _generic

__all__ = ["nan_to_num", "clamp_min", "clamp_max", "sgn", "signbit", "copysign", "ldexp",
           "nextafter", "logaddexp", "logaddexp2", "float_power", "deg2rad", "rad2deg",
           "gcd", "lcm", "heaviside", "isposinf", "isneginf", "isreal"]

_LN2 = math.log(2)


def _as_float(t: Tensor) -> Tensor:
    return t if t._data.dtype.kind == "f" else t.to(dtypes.get_default_dtype())


@tensor_method()
def nan_to_num(input, nan: float = 0.0, posinf: float | None = None,
               neginf: float | None = None) -> Tensor:
    """NaN, +inf and -inf replaced by `nan`, `posinf` and `neginf` (by default 0 and the
    dtype's largest and lowest finite values); the gradient is zero where replaced."""
    if input._data.dtype.kind != "f":
        return input.clone()
    info = input._device.xp.finfo(input._data.dtype)
    hi = float(info.max) if posinf is None else posinf
    lo = float(info.min) if neginf is None else neginf
    return where(input.isnan(), nan, where(input == math.inf, hi,
                                           where(input == -math.inf, lo, input)))


@tensor_method()
def clamp_min(input, min) -> Tensor:
    """clamp(input, min=min)."""
    return clamp(input, min=min)


@tensor_method()
def clamp_max(input, max) -> Tensor:
    """clamp(input, max=max)."""
    return clamp(input, max=max)


@tensor_method()
def sgn(input) -> Tensor:
    """sign(input): for real tensors torch's sgn is sign."""
    return sign(input)


def _copysign_grads(g, na, nb, a, b, out):
    # d|a|·sign(b)/da = out / a, and 0 at a = 0 (torch's rule); b gets a zero gradient
    return (where(a == 0, 0.0, g * out / where(a == 0, 1.0, a)) if na else None,
            zeros_like(g) if nb else None)


Copysign, copysign = _binary("copysign", lambda xp, a, b: xp.copysign(a, b), _copysign_grads,
                             "|input| with the sign of `other` (signed zeros count); "
                             "integers give floats.", save_output=True, inputs="promote")


@tensor_method()
def ldexp(input, other) -> Tensor:
    """input * 2 ** other."""
    return _as_float(input) * exp2(other if isinstance(other, Tensor) else
                                   scalar_tensor(float(other), _as_float(input)))


@tensor_method()
def logaddexp(input, other) -> Tensor:
    """log(exp(input) + exp(other)) without overflow."""
    a, b = promote(_as_float(input), other, "logaddexp")
    return maximum(a, b) + log1p(exp(-abs(a - b)))


@tensor_method()
def logaddexp2(input, other) -> Tensor:
    """log2(2 ** input + 2 ** other) without overflow."""
    a, b = promote(_as_float(input), other, "logaddexp2")
    return maximum(a, b) + log1p(exp2(-abs(a - b))) / _LN2


@tensor_method()
def float_power(input, exponent) -> Tensor:
    """input ** exponent computed in float64 (the result is float64 whatever the inputs)."""
    base = input.to(dtypes.float64) if isinstance(input, Tensor) else input
    exp_ = exponent.to(dtypes.float64) if isinstance(exponent, Tensor) else float(exponent)
    if not isinstance(base, Tensor):
        base = scalar_tensor(float(base), exp_)
    return base ** exp_


@tensor_method()
def deg2rad(input) -> Tensor:
    """Degrees to radians."""
    return _as_float(input) * (math.pi / 180)


@tensor_method()
def rad2deg(input) -> Tensor:
    """Radians to degrees."""
    return _as_float(input) * (180 / math.pi)


@tensor_method()
def nextafter(input, other) -> Tensor:
    """The next floating-point value after `input` towards `other`. Not differentiable."""
    a, b = promote(input, other, "nextafter")
    check_kind(a, "f", "nextafter")
    return Tensor._make(a._device.xp.nextafter(a._data, b._data), a._device)


def _integers(name: str, kernel: str, doc: str):
    def op(input, other):
        a, b = promote(input, other, name)
        if a._data.dtype.kind not in "iu":
            raise DTypeError(f"{name}: not supported for {a.dtype.name} tensors; valid: "
                             "integer tensors (uint8, int8, int16, int32, int64)")
        return Tensor._make(getattr(a._device.xp, kernel)(a._data, b._data), a._device)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = doc
    return tensor_method(name)(op)


gcd = _integers("gcd", "gcd", "The greatest common divisor, elementwise (non-negative).")
lcm = _integers("lcm", "lcm", "The least common multiple, elementwise (non-negative).")


@tensor_method()
def heaviside(input, values) -> Tensor:
    """0 where input < 0, 1 where input > 0 and `values` where input == 0, in input's dtype
    (which `values` must share). Not differentiable."""
    if not isinstance(values, Tensor) or values.dtype is not input.dtype:
        got = values.dtype.name if isinstance(values, Tensor) else type(values).__name__
        raise DTypeError(f"heaviside: values must be a tensor of input's dtype "
                         f"{input.dtype.name}, got {got}")
    xp = input._device.xp
    x = input._data
    out = xp.where(x == 0, values._data, (x > 0).astype(x.dtype))
    return Tensor._make(out.astype(x.dtype, copy=False), input._device)


signbit = _plain_unary("signbit", lambda xp, x: xp.signbit(x) if x.dtype.kind == "f"
                       else x < 0, "True where the sign bit is set (negative, -0.0, -NaN).")
isposinf = _plain_unary("isposinf", lambda xp, x: x == math.inf if x.dtype.kind == "f"
                        else xp.zeros(x.shape, dtype=bool), "True where +inf.")
isneginf = _plain_unary("isneginf", lambda xp, x: x == -math.inf if x.dtype.kind == "f"
                        else xp.zeros(x.shape, dtype=bool), "True where -inf.")
isreal = _plain_unary("isreal", lambda xp, x: xp.ones(x.shape, dtype=bool),
                      "True everywhere: dl.free tensors are real.")


for _name in ("nan_to_num", "clamp_min", "clamp_max", "sgn", "copysign", "ldexp", "nextafter",
              "deg2rad", "rad2deg", "gcd", "lcm", "heaviside"):
    setattr(Tensor, f"{_name}_", _generic(_name))
_float_power_into = _generic("float_power")


@tensor_method("float_power_")
def _float_power_inplace(self, exponent) -> Tensor:
    """In-place `float_power`: only a float64 tensor can hold its result, as in torch."""
    if self._data.dtype != dtypes.float64.np:
        raise DTypeError(f"float_power_: the result is float64, which a {self.dtype.name} "
                         "tensor cannot hold in place; valid: a float64 tensor, e.g. "
                         "x.double()")
    return _float_power_into(self, exponent)
