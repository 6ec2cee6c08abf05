"""Elementwise arithmetic and math functions with broadcasting and PyTorch's promotion."""

from __future__ import annotations

import math
import numbers

from .. import dtypes
from ..autograd.function import Function
from ..errors import DTypeError
from ..tensor import Tensor
from ._util import promote, sum_to, tensor_method

__all__ = [
    "add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide", "pow",
    "floor_divide", "remainder", "fmod", "neg", "negative", "exp", "exp2", "log", "log1p",
    "expm1", "log2", "log10", "sqrt", "rsqrt", "square", "abs", "sign", "reciprocal", "sin",
    "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "asinh", "acosh",
    "atanh", "sigmoid", "logsigmoid", "erf", "erfc", "erfinv", "floor", "ceil", "round",
    "trunc", "frac", "clamp", "clip", "minimum", "maximum", "fmin", "fmax", "where", "lerp",
    "addcmul", "addcdiv", "hypot", "xlogy",
]


# ----------------------------------------------------------------------- binary
class Add(Function):
    def forward(self, a, b):
        self.shapes = (a.shape, b.shape)
        return a + b

    def backward(self, g):
        na, nb = self.needs_input_grad
        return (sum_to(g, self.shapes[0]) if na else None,
                sum_to(g, self.shapes[1]) if nb else None)


class Sub(Function):
    def forward(self, a, b):
        self.shapes = (a.shape, b.shape)
        return a - b

    def backward(self, g):
        na, nb = self.needs_input_grad
        return (sum_to(g, self.shapes[0]) if na else None,
                sum_to(-g, self.shapes[1]) if nb else None)


class Mul(Function):
    def forward(self, a, b):
        na, nb = self.needs_input_grad or (False, False)
        # keep only what backward reads, so an in-place change elsewhere stays legal
        self.saves = ((0,) if nb else ()) + ((1,) if na else ())
        self.shapes = (a.shape, b.shape)
        return a * b

    def backward(self, g):
        na, nb = self.needs_input_grad
        saved = self.saved_tensors
        a = saved[0] if nb else None
        b = saved[-1] if na else None
        return (sum_to(g * b, self.shapes[0]) if na else None,
                sum_to(g * a, self.shapes[1]) if nb else None)


class Div(Function):
    saves = (0, 1)

    def forward(self, a, b):
        self.shapes = (a.shape, b.shape)
        return a / b

    def backward(self, g):
        a, b = self.saved_tensors
        na, nb = self.needs_input_grad
        return (sum_to(g / b, self.shapes[0]) if na else None,
                sum_to(-g * a / (b * b), self.shapes[1]) if nb else None)


class Pow(Function):
    saves = (0, 1)
    save_output = True

    def forward(self, a, b):
        self.shapes = (a.shape, b.shape)
        return self.xp.power(a, b)

    def backward(self, g):
        a, b, out = self.saved_tensors
        na, nb = self.needs_input_grad
        ga = gb = None
        if na:
            # d/da a**b = b * a**(b-1); written so that b == 0 gives 0, not nan, at a == 0
            ga = sum_to(where(b == 0, 0.0, g * b * a ** (b - 1)), self.shapes[0])
        if nb:
            # d/db a**b = a**b * log(a); torch defines it as 0 where a <= 0
            gb = sum_to(where(a > 0, g * out * log(where(a > 0, a, 1.0)), 0.0), self.shapes[1])
        return ga, gb


class PowScalar(Function):
    """`a ** c` for a Python number `c` (the common case, cheaper than a tensor exponent)."""

    saves = (0,)

    def forward(self, a, exponent):
        self.exponent = exponent
        return self.xp.power(a, a.dtype.type(exponent)) if a.dtype.kind == "f" else \
            self.xp.power(a, exponent)

    def backward(self, g):
        (a,) = self.saved_tensors
        c = self.exponent
        if c == 0:
            return (g * 0.0,)
        return (g * c * a ** (c - 1) if c != 1 else g,)


class Atan2(Function):
    saves = (0, 1)

    def forward(self, a, b):
        self.shapes = (a.shape, b.shape)
        return self.xp.arctan2(a, b)

    def backward(self, g):
        a, b = self.saved_tensors
        denom = a * a + b * b
        na, nb = self.needs_input_grad
        return (sum_to(g * b / denom, self.shapes[0]) if na else None,
                sum_to(-g * a / denom, self.shapes[1]) if nb else None)


class Remainder(Function):
    saves = (0, 1)

    def forward(self, a, b):
        self.shapes = (a.shape, b.shape)
        return self.xp.remainder(a, b)

    def backward(self, g):
        a, b = self.saved_tensors
        na, nb = self.needs_input_grad
        return (sum_to(g, self.shapes[0]) if na else None,
                sum_to(-g * floor_divide(a, b), self.shapes[1]) if nb else None)


class Fmod(Function):
    saves = (0, 1)

    def forward(self, a, b):
        self.shapes = (a.shape, b.shape)
        return self.xp.fmod(a, b)

    def backward(self, g):
        a, b = self.saved_tensors
        na, nb = self.needs_input_grad
        return (sum_to(g, self.shapes[0]) if na else None,
                sum_to(-g * trunc(a / b), self.shapes[1]) if nb else None)


class _PickOne(Function):
    """maximum/minimum: the gradient goes to the winner, split evenly on ties (as torch)."""

    saves = (0, 1)

    def forward(self, a, b):
        self.shapes = (a.shape, b.shape)
        return self.pick(a, b)

    def backward(self, g):
        a, b = self.saved_tensors
        wins_a = self.wins(a, b).to(g.dtype)
        ties = (a == b).to(g.dtype)
        share_a = wins_a + ties * 0.5
        na, nb = self.needs_input_grad
        return (sum_to(g * share_a, self.shapes[0]) if na else None,
                sum_to(g * (1 - share_a), self.shapes[1]) if nb else None)


class Maximum(_PickOne):
    def pick(self, a, b):
        return self.xp.maximum(a, b)

    @staticmethod
    def wins(a, b):
        return a > b


class Minimum(_PickOne):
    def pick(self, a, b):
        return self.xp.minimum(a, b)

    @staticmethod
    def wins(a, b):
        return a < b


class Fmax(Maximum):
    def pick(self, a, b):
        return self.xp.fmax(a, b)


class Fmin(Minimum):
    def pick(self, a, b):
        return self.xp.fmin(a, b)


def _binary(fn_cls, a, b, op):
    a, b = promote(a, b, op)
    return fn_cls.apply(a, b)


@tensor_method("add", "__add__")
def add(input, other, *, alpha=1):
    """input + alpha * other."""
    if alpha != 1:
        other = other * alpha
    return _binary(Add, input, other, "add")


@tensor_method("sub", "subtract", "__sub__")
def sub(input, other, *, alpha=1):
    """input - alpha * other."""
    if alpha != 1:
        other = other * alpha
    return _binary(Sub, input, other, "sub")


subtract = sub


@tensor_method("mul", "multiply", "__mul__")
def mul(input, other):
    return _binary(Mul, input, other, "mul")


multiply = mul


@tensor_method("div", "divide", "true_divide", "__truediv__")
def div(input, other, *, rounding_mode=None):
    """True division; `rounding_mode` 'trunc' or 'floor' rounds the quotient."""
    if rounding_mode == "floor":
        return floor_divide(input, other)
    if rounding_mode == "trunc":
        return trunc(div(input, other)) if _is_float_op(input, other) else \
            _int_trunc_div(input, other)
    if rounding_mode is not None:
        raise ValueError(f"div: rounding_mode must be None, 'trunc' or 'floor', got "
                         f"{rounding_mode!r}")
    a, b = promote(input, other, "div")
    if a._data.dtype.kind != "f":  # integer / integer is true division, as in torch
        dt = dtypes.get_default_dtype()
        a, b = a.to(dt), b.to(dt)
    return Div.apply(a, b)


divide = true_divide = div


def _is_float_op(a, b) -> bool:
    return dtypes.result_type(a, b).kind == "f"


def _int_trunc_div(a, b):
    a, b = promote(a, b, "div")
    xp = a._device.xp
    q = xp.trunc(a._data / b._data).astype(a._data.dtype)
    return Tensor._make(q, a._device)


@tensor_method("__radd__")
def _radd(self, other):
    return add(other, self)


@tensor_method("__rsub__")
def _rsub(self, other):
    return sub(other, self)


@tensor_method("__rmul__")
def _rmul(self, other):
    return mul(other, self)


@tensor_method("__rtruediv__")
def _rtruediv(self, other):
    return div(other, self)


@tensor_method("pow", "__pow__")
def pow(input, exponent):
    """input ** exponent; either may be a tensor or a number."""
    if isinstance(input, Tensor) and isinstance(exponent, numbers.Number) and \
            not isinstance(exponent, bool):
        if input._data.dtype.kind != "f" and isinstance(exponent, float):
            input = input.to(dtypes.get_default_dtype())
        elif input._data.dtype.kind != "f" and exponent < 0:
            raise DTypeError("pow: integers to negative integer powers are not allowed; "
                             "use a floating-point base")
        return PowScalar.apply(input, exponent=exponent)
    return _binary(Pow, input, exponent, "pow")


@tensor_method("__rpow__")
def _rpow(self, other):
    return pow(other, self)


@tensor_method("floor_divide", "__floordiv__")
def floor_divide(input, other):
    """Floor of input / other; not differentiable (torch defines no gradient for it)."""
    a, b = promote(input, other, "floor_divide")
    return Tensor._make(a._device.xp.floor_divide(a._data, b._data), a._device)


@tensor_method("__rfloordiv__")
def _rfloordiv(self, other):
    return floor_divide(other, self)


@tensor_method("remainder", "__mod__")
def remainder(input, other):
    """Python-style modulus: the result has the sign of `other`."""
    return _binary(Remainder, input, other, "remainder")


@tensor_method("__rmod__")
def _rmod(self, other):
    return remainder(other, self)


@tensor_method()
def fmod(input, other):
    """C-style modulus: the result has the sign of `input`."""
    return _binary(Fmod, input, other, "fmod")


@tensor_method()
def atan2(input, other):
    return _binary(Atan2, input, other, "atan2")


arctan2 = atan2


@tensor_method()
def maximum(input, other):
    return _binary(Maximum, input, other, "maximum")


@tensor_method()
def minimum(input, other):
    return _binary(Minimum, input, other, "minimum")


@tensor_method()
def fmax(input, other):
    """Like maximum, but a NaN loses to a number."""
    return _binary(Fmax, input, other, "fmax")


@tensor_method()
def fmin(input, other):
    return _binary(Fmin, input, other, "fmin")


@tensor_method()
def hypot(input, other):
    return sqrt(input * input + other * other)


@tensor_method()
def xlogy(input, other):
    """input * log(other), with 0 where input == 0 (even if other == 0)."""
    x, y = promote(input, other, "xlogy")
    if x._data.dtype.kind != "f":
        x, y = x.to(dtypes.get_default_dtype()), y.to(dtypes.get_default_dtype())
    safe = where(x == 0, 1.0, y)
    return where(x == 0, 0.0, x * log(safe))


@tensor_method()
def addcmul(input, tensor1, tensor2, *, value=1):
    return input + value * tensor1 * tensor2


@tensor_method()
def addcdiv(input, tensor1, tensor2, *, value=1):
    return input + value * tensor1 / tensor2


# ------------------------------------------------------------------------ unary
def _unary(name, forward, derivative=None, save_output=False, integer_ok=False, doc=""):
    """Build a one-input Function and its public function.

    `derivative(x, y)` gets the saved input and output tensors and returns dy/dx.
    """

    def fwd(self, x):
        return forward(self.xp, x)

    def bwd(self, g):
        saved = self.saved_tensors
        x = saved[0] if self.saves else None
        y = saved[-1] if save_output else None
        return (g * derivative(x, y),)

    cls = type(name.capitalize(), (Function,), {
        "forward": fwd, "backward": bwd, "save_output": save_output,
        "saves": () if save_output else (0,), "__doc__": doc,
    })

    def op(input):
        if not integer_ok and input._data.dtype.kind != "f":
            input = input.to(dtypes.get_default_dtype())
        return cls.apply(input)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = doc or f"Elementwise {name}."
    tensor_method(name)(op)
    return op


class Neg(Function):
    def forward(self, x):
        return -x

    def backward(self, g):
        return (-g,)


@tensor_method("neg", "negative", "__neg__")
def neg(input):
    if input._data.dtype.kind == "b":
        raise DTypeError("neg: negation of a bool tensor is not supported; use ~ or logical_not")
    return Neg.apply(input)


negative = neg


@tensor_method("__pos__")
def _pos(self):
    return self


class _NoGrad(Function):
    """Ops whose gradient is zero almost everywhere (floor, sign, ...): zeros like torch."""

    def forward(self, x):
        return self.kernel(self.xp, x)

    def backward(self, g):
        return (g * 0,)


def _piecewise_constant(name, kernel, doc):
    cls = type(name.capitalize(), (_NoGrad,), {"kernel": staticmethod(kernel), "__doc__": doc})

    def op(input):
        return cls.apply(input)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = doc
    tensor_method(name)(op)
    return op


floor = _piecewise_constant("floor", lambda xp, x: xp.floor(x) if x.dtype.kind == "f" else
                            x.copy(), "Round down.")
ceil = _piecewise_constant("ceil", lambda xp, x: xp.ceil(x) if x.dtype.kind == "f" else
                           x.copy(), "Round up.")
trunc = _piecewise_constant("trunc", lambda xp, x: xp.trunc(x) if x.dtype.kind == "f" else
                            x.copy(), "Round toward zero.")
sign = _piecewise_constant("sign", lambda xp, x: xp.sign(x), "-1, 0 or 1 by the sign.")
fix = trunc


class Round(_NoGrad):
    def forward(self, x, decimals=0):
        return self.xp.round(x, decimals) if x.dtype.kind == "f" else x.copy()


@tensor_method()
def round(input, *, decimals: int = 0):
    """Round half to even (as torch), optionally to `decimals` places."""
    return Round.apply(input, decimals=decimals)


@tensor_method("abs", "absolute", "__abs__")
def abs(input):
    return Abs.apply(input)


class Abs(Function):
    saves = (0,)

    def forward(self, x):
        return self.xp.abs(x)

    def backward(self, g):
        (x,) = self.saved_tensors
        return (g * sign(x),)


absolute = abs

_SQRT_PI = math.sqrt(math.pi)

exp = _unary("exp", lambda xp, x: xp.exp(x), lambda x, y: y, save_output=True)
exp2 = _unary("exp2", lambda xp, x: xp.exp2(x), lambda x, y: y * math.log(2), save_output=True)
log = _unary("log", lambda xp, x: xp.log(x), lambda x, y: 1 / x)
log2 = _unary("log2", lambda xp, x: xp.log2(x), lambda x, y: 1 / (x * math.log(2)))
log10 = _unary("log10", lambda xp, x: xp.log10(x), lambda x, y: 1 / (x * math.log(10)))
log1p = _unary("log1p", lambda xp, x: xp.log1p(x), lambda x, y: 1 / (1 + x))
expm1 = _unary("expm1", lambda xp, x: xp.expm1(x), lambda x, y: y + 1, save_output=True)
sqrt = _unary("sqrt", lambda xp, x: xp.sqrt(x), lambda x, y: 0.5 / y, save_output=True)
rsqrt = _unary("rsqrt", lambda xp, x: 1 / xp.sqrt(x), lambda x, y: -0.5 * y * y * y,
               save_output=True)
square = _unary("square", lambda xp, x: x * x, lambda x, y: 2 * x, integer_ok=True)
reciprocal = _unary("reciprocal", lambda xp, x: 1 / x, lambda x, y: -(y * y), save_output=True)
sin = _unary("sin", lambda xp, x: xp.sin(x), lambda x, y: cos(x))
cos = _unary("cos", lambda xp, x: xp.cos(x), lambda x, y: -sin(x))
tan = _unary("tan", lambda xp, x: xp.tan(x), lambda x, y: 1 + y * y, save_output=True)
asin = _unary("asin", lambda xp, x: xp.arcsin(x), lambda x, y: rsqrt(1 - x * x))
acos = _unary("acos", lambda xp, x: xp.arccos(x), lambda x, y: -rsqrt(1 - x * x))
atan = _unary("atan", lambda xp, x: xp.arctan(x), lambda x, y: 1 / (1 + x * x))
sinh = _unary("sinh", lambda xp, x: xp.sinh(x), lambda x, y: cosh(x))
cosh = _unary("cosh", lambda xp, x: xp.cosh(x), lambda x, y: sinh(x))
tanh = _unary("tanh", lambda xp, x: xp.tanh(x), lambda x, y: 1 - y * y, save_output=True)
asinh = _unary("asinh", lambda xp, x: xp.arcsinh(x), lambda x, y: rsqrt(x * x + 1))
acosh = _unary("acosh", lambda xp, x: xp.arccosh(x), lambda x, y: rsqrt(x * x - 1))
atanh = _unary("atanh", lambda xp, x: xp.arctanh(x), lambda x, y: 1 / (1 - x * x))
arcsin, arccos, arctan = asin, acos, atan


def _sigmoid_kernel(xp, x):
    # numerically stable on both tails: exp of a non-positive number only
    e = xp.exp(-xp.abs(x))
    return xp.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype, copy=False)


sigmoid = _unary("sigmoid", _sigmoid_kernel, lambda x, y: y * (1 - y), save_output=True)
logsigmoid = _unary(
    "logsigmoid",
    lambda xp, x: xp.minimum(x, 0) - xp.log1p(xp.exp(-xp.abs(x))),
    lambda x, y: sigmoid(-x),
)
erf = _unary("erf", lambda xp, x: _special(x).erf(x),
             lambda x, y: (2 / _SQRT_PI) * exp(-x * x))
erfc = _unary("erfc", lambda xp, x: 1 - _special(x).erf(x),
              lambda x, y: (-2 / _SQRT_PI) * exp(-x * x))
erfinv = _unary("erfinv", lambda xp, x: _special(x).erfinv(x),
                lambda x, y: (_SQRT_PI / 2) * exp(y * y), save_output=True)
frac = _unary("frac", lambda xp, x: x - xp.trunc(x), lambda x, y: 1.0 + 0 * x)


def _special(array):
    """The backend that provides the special functions (erf, erfinv) for `array`."""
    from ..device import device_of_array

    return device_of_array(array).backend


# ------------------------------------------------------------ clamp, where, lerp
class Clamp(Function):
    saves = (0,)

    def forward(self, x, lo, hi):
        self.lo, self.hi = lo, hi
        out = x
        if lo is not None:
            out = self.xp.maximum(out, x.dtype.type(lo))
        if hi is not None:
            out = self.xp.minimum(out, x.dtype.type(hi))
        return out if out is not x else x.copy()

    def backward(self, g):
        (x,) = self.saved_tensors
        inside = True
        if self.lo is not None:
            inside = x >= self.lo
        if self.hi is not None:
            upper = x <= self.hi
            inside = upper if inside is True else inside & upper
        return (g * inside.to(g.dtype),)


@tensor_method("clamp", "clip")
def clamp(input, min=None, max=None):
    """Limit values to [min, max]; either bound may be None, a number or a tensor."""
    if min is None and max is None:
        raise ValueError("clamp: at least one of min and max must be given")
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        out = input
        if min is not None:
            out = maximum(out, min)
        if max is not None:
            out = minimum(out, max)
        return out
    if input._data.dtype.kind != "f" and any(isinstance(v, float) for v in (min, max)):
        input = input.to(dtypes.get_default_dtype())
    return Clamp.apply(input, lo=min, hi=max)


clip = clamp


class Where(Function):
    def forward(self, cond, a, b):
        self.shapes = (a.shape, b.shape)
        self.cond = cond
        return self.xp.where(cond, a, b)

    def backward(self, g):
        cond = Tensor._make(self.cond, self.device)
        zero = g * 0
        _, na, nb = self.needs_input_grad
        return (None,
                sum_to(where(cond, g, zero), self.shapes[0]) if na else None,
                sum_to(where(cond, zero, g), self.shapes[1]) if nb else None)


@tensor_method()
def where(condition, input=None, other=None):
    """Pick from `input` where `condition` holds, else from `other` (both broadcast)."""
    if input is None and other is None:
        return condition.nonzero(as_tuple=True)
    if not isinstance(condition, Tensor):
        raise DTypeError(f"where: condition must be a bool tensor, got {type(condition).__name__}")
    if condition._data.dtype.kind != "b":
        condition = condition != 0
    a, b = promote(input, other, "where")
    return Where.apply(condition, a, b)


@tensor_method()
def lerp(input, end, weight):
    """input + weight * (end - input)."""
    return input + weight * (end - input)


__all__ += ["arcsin", "arccos", "arctan", "arctan2", "fix", "absolute", "negative"]


class Relu(Function):
    save_output = True

    def forward(self, x):
        return self.xp.maximum(x, 0)

    def backward(self, g):
        (y,) = self.saved_tensors
        return (g * (y > 0).to(g.dtype),)


@tensor_method()
def relu(input):
    """max(x, 0); the gradient at 0 is 0, as in torch."""
    return Relu.apply(input)


__all__ += ["relu"]
