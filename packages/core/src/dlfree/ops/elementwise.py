"""Elementwise arithmetic and math functions with broadcasting and PyTorch's promotion.

Each op matches torch in values, result dtype and gradient, including the subgradients
torch picks at kinks (abs'(0) = 0, clamp passes the gradient at its bounds, maximum splits
it on ties). Forward kernels run with NumPy's floating-point warnings off (see
`Function.apply`), as torch never warns on inf or NaN results.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from .. import dtypes
from ..autograd.autocasting import autocast_policy
from ..autograd.function import Function
from ..autograd.grad_mode import STATE
from ..backends import numba_kernels
from ..creation import zeros, zeros_like
from ..errors import DTypeError
from ..tensor import Tensor
from ..threads import for_elements
from ._util import check_broadcast, check_kind, promote, scalar_tensor, sum_to, tensor_method

__all__ = [
    "add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide", "pow",
    "floor_divide", "remainder", "fmod", "neg", "negative", "exp", "exp2", "log", "log1p",
    "expm1", "log2", "log10", "sqrt", "rsqrt", "square", "abs", "absolute", "sign",
    "reciprocal", "sin", "cos", "tan", "asin", "acos", "atan", "arcsin", "arccos", "arctan",
    "atan2", "arctan2", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "sigmoid",
    "logsigmoid", "erf", "erfc", "erfinv", "floor", "ceil", "round", "trunc", "fix", "frac",
    "clamp", "clip", "minimum", "maximum", "fmin", "fmax", "where", "lerp", "relu", "hypot",
    "xlogy", "addcmul", "addcdiv",
]


def _result_dtype(op: str, *operands):
    """PyTorch's result dtype (a NumPy dtype) for tensors and Python numbers."""
    for v in operands:
        if not isinstance(v, Tensor | numbers.Number):
            raise DTypeError(f"{op}: unsupported operand of type {type(v).__name__}; "
                             "valid: Tensor, int, float, bool")
    return dtypes.result_type(*operands)


def _promote_all(op: str, *operands) -> list:
    """Tensors and numbers as tensors of their PyTorch result dtype; None stays None."""
    given = [v for v in operands if v is not None]
    dt = _result_dtype(op, *given)
    like = next(v for v in given if isinstance(v, Tensor))
    return [v if v is None or isinstance(v, Tensor) and v._data.dtype == dt
            else v.to(dt) if isinstance(v, Tensor) else scalar_tensor(v, like, dt)
            for v in operands]


def _to_float(t: Tensor) -> Tensor:
    """Integer and bool tensors become the default floating dtype, as torch's float ops do."""
    return t if dtypes.kind(t._data.dtype) in "fc" else t.to(dtypes.get_default_dtype())


def _check_divisor(a, b, op: str) -> None:
    """Integer division by zero is an error in torch (NumPy would give 0 and warn)."""
    if dtypes.kind(a.dtype) in "iu" and not b.all():
        raise ZeroDivisionError(f"{op}: integer division by zero")


# ------------------------------------------------------------ two-input ops
# Operands of this many bytes or more take `_threaded`. An add of two 8 MiB arrays that
# are not in cache waits on memory, which one core's loads do not keep busy; one of two
# 1 MiB arrays in cache takes about 40 us, and the threads' hand-over (a worker that
# finds its core taken by OpenBLAS's spinning threads) can cost more: threaded, the
# char-level GPT's step lost 8 ms on sixteen such adds.
_THREADED_OPERAND_BYTES = 4 << 20


def _threaded(xp, ufunc, a, b):
    """ufunc(a, b) of two NumPy arrays of one shape and dtype, in blocks on the threads
    (`for_elements`) where they are large (`_THREADED_OPERAND_BYTES`) and contiguous,
    else None."""
    if a.nbytes < _THREADED_OPERAND_BYTES:
        return None
    out = xp.empty(a.shape, a.dtype)
    return out if for_elements(xp, lambda o, x, y: ufunc(x, y, out=o), out, a, b,
                               runs=True) else None


class _Binary(Function):
    """A two-input op whose inputs broadcast against each other, built by `_binary`.

    `kernel(xp, a, b)` computes it on arrays; `grads(g, na, nb, *saved)` gives the
    gradients at the broadcast shape (None where not needed) from the saved inputs (then
    the output), and backward sums each back to its input's shape. `saves` names the inputs
    kept for backward, or `keep(na, nb)` picks them per call, so that an op keeps only what
    the gradients it owes read (an in-place change of another input then stays legal).
    """

    keep = None
    reads = True  # whether grads takes saved tensors (False: backward skips saved_tensors)
    ufunc = None  # the NumPy ufunc's name where `kernel` is one (then large arrays thread)

    def forward(self, a, b):
        self.shapes = (a.shape, b.shape)
        if self.keep is not None:
            na, nb = self.needs_input_grad or (False, False)
            self.saves = self.keep(na, nb)
        if self.ufunc is not None and a.shape == b.shape and a.dtype == b.dtype:
            out = _threaded(self.xp, getattr(self.xp, self.ufunc), a, b)
            if out is not None:
                return out
        return self.kernel(self.xp, a, b)

    def backward(self, g):
        na, nb = self.needs_input_grad
        ga, gb = self.grads(g, na, nb, *self.saved_tensors) if self.reads else \
            self.grads(g, na, nb)
        return (sum_to(ga, self.shapes[0]) if na else None,
                sum_to(gb, self.shapes[1]) if nb else None)


def _binary(name, kernel, grads, doc, *, saves=(0, 1), keep=None, save_output=False,
            inputs="any", hint="", methods=None, reflected=None, autocast=None, ufunc=None):
    """Build a two-input broadcasting op: its Function (`_Binary`) and its public function,
    which promotes its operands to PyTorch's result dtype; returns both.

    `kernel`, `grads`, `saves` and `keep` are the Function's (see `_Binary`). `inputs` says
    what integer and bool operands do after promotion: stay as they are ("any"), become the
    default float dtype ("promote"), or raise with `hint` unless allowed by "numeric"
    (integers, not bool) or "float" (never). The function is bound as the Tensor methods
    `methods` (its name when None), `reflected` names the swapped method (`__radd__`), and
    `autocast` is the Function's autocast policy, and `ufunc` the name of the NumPy ufunc
    that `kernel` is, if it is one.
    """
    cls = type(name.capitalize(), (_Binary,), {
        "kernel": staticmethod(kernel), "grads": staticmethod(grads), "__doc__": doc,
        "saves": saves, "keep": None if keep is None else staticmethod(keep),
        "save_output": save_output, "reads": bool(saves or keep or save_output),
        "autocast": autocast, "ufunc": ufunc,
    })
    if inputs == "any":
        def op(input, other):
            return cls.apply(*promote(input, other, name))
    else:
        kinds = {"numeric": "iuf", "float": "f"}.get(inputs)

        def op(input, other):
            a, b = promote(input, other, name)
            if dtypes.kind(a._data.dtype) not in "fc":
                if kinds is None:
                    a, b = _to_float(a), _to_float(b)
                else:
                    check_kind(a, kinds, name, hint)
            return cls.apply(a, b)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = doc
    for method in (name,) if methods is None else methods:
        setattr(Tensor, method, op)
    if reflected is not None:
        setattr(Tensor, reflected, lambda self, other: op(other, self))
    return cls, op


def _conj(t: Tensor) -> Tensor:
    """The conjugate of a complex operand (a complex op's gradient is g times the conjugate
    derivative); a real one is itself."""
    if t._data.dtype.kind != "c":
        return t
    from .complex_numbers import conj

    return conj(t)


def _mul_grads(g, na, nb, *saved):
    # Mul keeps b for a's gradient and a for b's: saved is (a, b), (a,) or (b,)
    return (g * _conj(saved[-1]) if na else None), (g * _conj(saved[0]) if nb else None)


def _div_grads(g, na, nb, *saved):
    a, b = saved if nb else (None, saved[0])
    return (g / _conj(b) if na else None), (-g * _conj(a / (b * b)) if nb else None)


def _pow_kernel(xp, a, b):
    return _int_power(xp, a, b) if a.dtype.kind == "i" else xp.power(a, b)


def _pow_grads(g, na, nb, a, b, out):
    # torch's rule: zero wherever the exponent is 0, even at a zero base
    ga = where(b == 0, 0.0, g * b * a ** (b - 1)) if na else None
    # a**b * log(a), defined as 0 for a zero base and a non-negative exponent
    gb = g * where((a == 0) & (b >= 0), 0.0, out * log(a)) if nb else None
    return ga, gb


def _int_power(xp, a, b):
    """Signed-integer a**b; a negative exponent gives 1, ±1 or 0 as in torch (NumPy raises)."""
    negative = b < 0
    out = xp.power(a, xp.where(negative, 0, b))
    unit = xp.where(a == -1, 1 - 2 * (b & 1), 0)  # (-1)**b by b's parity, 0 for |a| > 1
    return xp.where(negative & (a != 1), unit, out).astype(a.dtype, copy=False)


def _remainder_kernel(xp, a, b):
    _check_divisor(a, b, "remainder")
    return xp.remainder(a, b)


def _fmod_kernel(xp, a, b):
    _check_divisor(a, b, "fmod")
    return xp.fmod(a, b)


def _remainder_grads(g, na, nb, a, b):
    return g, (-g * div(a, b, rounding_mode="floor") if nb else None)


def _fmod_grads(g, na, nb, a, b):
    return g, (-g * div(a, b, rounding_mode="trunc") if nb else None)


def _atan2_grads(g, na, nb, a, b):
    denom = a * a + b * b
    scale = g / where(denom == 0, 1.0, denom)  # torch's gradient at the origin is 0
    return (scale * b if na else None), (-scale * a if nb else None)


def _hypot_grads(g, na, nb, a, b, out):
    return (g * a / out if na else None), (g * b / out if nb else None)


def _xlogy_kernel(xp, x, y):
    return xp.where((x == 0) & ~xp.isnan(y), 0, x * xp.log(y)).astype(x.dtype, copy=False)


def _xlogy_grads(g, nx, ny, x, y):
    # torch's rule: log(y), but 0 where x == 0 and y <= 0
    return (where((x == 0) & (y <= 0), 0.0, xlogy(g, y)) if nx else None,
            g * x / y if ny else None)


def _extremum_grads(beats):
    """maximum/minimum: the gradient goes to the winner, halved on ties, whole to both on
    NaN (torch's rule); `beats(a, b)` says where `a` wins outright."""

    def grads(g, na, nb, a, b):
        shared = where(a == b, g / 2, g)
        return (where(beats(b, a), 0.0, shared) if na else None,
                where(beats(a, b), 0.0, shared) if nb else None)

    return grads


def _nan_extremum_grads(keeps):
    """fmax/fmin: a NaN loses to a number; the whole gradient goes to the picked input (to
    `a` on ties, as in torch), where `keeps(a, b)` says `a` is picked."""

    def grads(g, na, nb, a, b):
        picks_a = keeps(a, b) | b.isnan()
        return where(picks_a, g, 0.0), where(picks_a, 0.0, g)

    return grads


# name, kernel, grads, doc, then what differs from _binary's defaults
Add, _add = _binary("add", lambda xp, a, b: a + b, lambda g, na, nb: (g, g),
                    "input + other, broadcast, in PyTorch's result dtype.", saves=(),
                    methods=("__add__",), reflected="__radd__", ufunc="add")
Sub, _sub = _binary("sub", lambda xp, a, b: a - b, lambda g, na, nb: (g, -g if nb else None),
                    "input - other, broadcast, in PyTorch's result dtype.", saves=(),
                    inputs="numeric", hint="use ^ or logical_xor() for bool tensors",
                    methods=("__sub__",), reflected="__rsub__", ufunc="subtract")
Mul, mul = _binary("mul", lambda xp, a, b: a * b, _mul_grads,
                   "input * other, broadcast, in PyTorch's result dtype.", saves=(),
                   keep=lambda na, nb: ((0,) if nb else ()) + ((1,) if na else ()),
                   methods=("mul", "multiply", "__mul__"), reflected="__rmul__",
                   ufunc="multiply")
# the dividend is read only for the divisor's gradient (so `h.div_(2)` stays legal)
Div, _div = _binary("div", lambda xp, a, b: a / b, _div_grads,
                    "input / other; integers divide to the default float dtype, as in torch.",
                    saves=(), keep=lambda na, nb: (0, 1) if nb else (1,), inputs="promote",
                    methods=("__truediv__",), reflected="__rtruediv__", ufunc="true_divide")
Pow, _pow = _binary("pow", _pow_kernel, _pow_grads,
                    "tensor ** tensor (a Python number on either side arrives as a 0-d "
                    "tensor).", save_output=True, inputs="numeric", methods=())
Remainder, remainder = _binary("remainder", _remainder_kernel, _remainder_grads,
                               "Python's modulus: the result takes the sign of `other`.",
                               inputs="numeric", methods=("remainder", "__mod__"),
                               reflected="__rmod__")
Fmod, fmod = _binary("fmod", _fmod_kernel, _fmod_grads,
                     "C's modulus: the result takes the sign of `input`.", inputs="numeric")
Atan2, atan2 = _binary("atan2", lambda xp, a, b: xp.arctan2(a, b), _atan2_grads,
                       "The angle of the point (other, input), in (-pi, pi]; integers give "
                       "floats.", inputs="promote", autocast="promote")
Hypot, hypot = _binary("hypot", lambda xp, a, b: xp.hypot(a, b), _hypot_grads,
                       "sqrt(input**2 + other**2) without overflow; floating-point tensors "
                       "only, as in torch.", save_output=True, inputs="float")
Xlogy, xlogy = _binary("xlogy", _xlogy_kernel, _xlogy_grads,
                       "input * log(other), and 0 where input == 0 (unless other is NaN).",
                       inputs="promote")
Maximum, maximum = _binary("maximum", lambda xp, a, b: xp.maximum(a, b),
                           _extremum_grads(lambda a, b: a > b),
                           "The larger of each pair; NaN wins. The gradient is split evenly "
                           "on ties.")
Minimum, minimum = _binary("minimum", lambda xp, a, b: xp.minimum(a, b),
                           _extremum_grads(lambda a, b: a < b),
                           "The smaller of each pair; NaN wins. The gradient is split evenly "
                           "on ties.")
Fmax, fmax = _binary("fmax", lambda xp, a, b: xp.fmax(a, b),
                     _nan_extremum_grads(lambda a, b: a >= b),
                     "The larger of each pair, where a NaN loses to a number.")
Fmin, fmin = _binary("fmin", lambda xp, a, b: xp.fmin(a, b),
                     _nan_extremum_grads(lambda a, b: a <= b),
                     "The smaller of each pair, where a NaN loses to a number.")
multiply, arctan2 = mul, atan2
Add.complex_grad = Sub.complex_grad = Mul.complex_grad = Div.complex_grad = True


def _scaled(b: Tensor, alpha, op: str) -> Tensor:
    """alpha * b in b's dtype; a fractional alpha needs a floating b, as in torch."""
    if dtypes.kind(b._data.dtype) not in "fc" and isinstance(alpha, float):
        raise DTypeError(f"{op}: alpha={alpha} is fractional but the operands are "
                         f"{b.dtype.name}; valid: an integer alpha, or floating-point operands")
    out = b * alpha
    return out if out._data.dtype == b._data.dtype else out.to(b.dtype)


@tensor_method()
def add(input, other, *, alpha=1):
    """input + alpha * other, broadcast, in PyTorch's result dtype."""
    if alpha == 1:
        return _add(input, other)
    a, b = promote(input, other, "add")
    return Add.apply(a, _scaled(b, alpha, "add"))


@tensor_method("sub", "subtract")
def sub(input, other, *, alpha=1):
    """input - alpha * other, broadcast, in PyTorch's result dtype."""
    if alpha == 1:
        return _sub(input, other)
    a, b = promote(input, other, "sub")
    check_kind(a, "iufc", "sub", "use ^ or logical_xor() for bool tensors")
    return Sub.apply(a, _scaled(b, alpha, "sub"))


subtract = sub


@tensor_method("div", "divide", "true_divide")
def div(input, other, *, rounding_mode=None):
    """input / other; integers divide to the default float dtype, as in torch.

    `rounding_mode="floor"` or `"trunc"` rounds the quotient (and keeps integer dtypes);
    the gradient of a rounded quotient is zero.
    """
    if rounding_mode is not None:
        return _rounded_div(input, other, rounding_mode, f"div(rounding_mode={rounding_mode!r})")
    return _div(input, other)


divide = true_divide = div


class RoundedDiv(Function):
    """Floor or truncating division; its gradient is zero, as torch defines it."""

    def forward(self, a, b, mode, op):
        self.shapes = (a.shape, b.shape)
        _check_divisor(a, b, op)
        xp = self.xp
        if mode == "floor":
            return xp.floor_divide(a, b)
        if dtypes.kind(a.dtype) == "f":
            return xp.trunc(a / b)
        return (a - xp.fmod(a, b)) // b  # exact: the dividend minus the C remainder

    def backward(self, g):
        return tuple(zeros(shape, dtype=g.dtype, device=g.device) if needed else None
                     for shape, needed in zip(self.shapes, self.needs_input_grad, strict=True))


def _rounded_div(input, other, mode: str, op: str) -> Tensor:
    if mode not in ("floor", "trunc"):
        raise ValueError(f"div: rounding_mode must be None, 'floor' or 'trunc', got {mode!r}")
    a, b = promote(input, other, op)
    check_kind(a, "iuf", op)
    check_broadcast(op, a, b)
    return RoundedDiv.apply(a, b, mode=mode, op=op)


@tensor_method("floor_divide", "__floordiv__")
def floor_divide(input, other):
    """Floor of input / other (Python's //), as div(input, other, rounding_mode='floor')."""
    return _rounded_div(input, other, "floor", "floor_divide")


@tensor_method("__rfloordiv__")
def _rfloordiv(self, other):
    return floor_divide(other, self)


# -------------------------------------------------------------------- pow
class PowScalar(Function):
    """tensor ** c for a Python number c (the common case, cheaper than a tensor exponent)."""

    saves = (0,)

    def forward(self, a, exponent):
        self.exponent = exponent
        return self.xp.power(a, a.dtype.type(exponent))

    def backward(self, g):
        (a,) = self.saved_tensors
        c = self.exponent
        if c == 0:
            return (zeros_like(g),)
        return (g * (c * (a if c == 2 else a ** (c - 1))),)


@tensor_method("pow", "__pow__")
@autocast_policy("float32")
def pow(input, exponent):
    """input ** exponent, broadcast; either may be a tensor or a Python number."""
    if isinstance(input, Tensor) and type(exponent) in (int, float):
        if dtypes.kind(input._data.dtype) != "f":
            input = _integer_base(input, exponent)
        return PowScalar.apply(input, exponent=exponent)
    return _pow(input, exponent)


def _integer_base(input: Tensor, exponent) -> Tensor:
    """An integer or bool base of `** exponent` in the dtype torch computes in."""
    dt = dtypes.result_type(input, exponent)
    if dtypes.kind(dt) != "f" and exponent < 0:
        raise DTypeError(f"pow: integers to negative integer powers are not allowed "
                         f"({input.dtype.name} ** {exponent}); valid: a floating-point "
                         "base, e.g. x.float() ** -1")
    return input if input._data.dtype == dt else input.to(dt)


@tensor_method("__rpow__")
def _rpow(self, other):
    return pow(other, self)


@tensor_method()
def square(input):
    """input * input; integers stay integers and bools become int64, as in torch."""
    return pow(input, 2)


# --------------------------------------------------------------- clamp, where
class Clamp(Function):
    """clamp with number bounds: the gradient passes where lo <= x <= hi, bounds included."""

    saves = (0,)

    def forward(self, x, lo, hi):
        self.lo, self.hi = lo, hi
        out = x
        if lo is not None:
            out = self.xp.maximum(out, x.dtype.type(lo))
        if hi is not None:
            out = self.xp.minimum(out, x.dtype.type(hi))
        return out

    def backward(self, g):
        (x,) = self.saved_tensors
        lo, hi = self.lo, self.hi
        inside = x >= lo if hi is None else x <= hi if lo is None else (x >= lo) & (x <= hi)
        return (where(inside, g, 0.0),)


class ClampTensor(Function):
    """clamp with tensor bounds (a missing bound arrives as the dtype's extreme value)."""

    saves = (0, 1, 2)

    def forward(self, x, lo, hi):
        self.shapes = (x.shape, lo.shape, hi.shape)
        return self.xp.minimum(self.xp.maximum(x, lo), hi)

    def backward(self, g):
        x, lo, hi = self.saved_tensors
        nx, nlo, nhi = self.needs_input_grad
        # torch's rule: when lo > hi the result is hi, so only hi gets the gradient
        return (sum_to(where((x >= lo) & (x <= hi), g, 0.0), self.shapes[0]) if nx else None,
                sum_to(where((x < lo) & (lo < hi), g, 0.0), self.shapes[1]) if nlo else None,
                sum_to(where((x > hi) | (hi < lo), g, 0.0), self.shapes[2]) if nhi else None)


def _extreme(like: Tensor, highest: bool) -> Tensor:
    """The dtype's largest (or smallest) value, so clamp against it changes nothing."""
    dt = like._data.dtype
    if dtypes.kind(dt) == "f":
        value = math.inf if highest else -math.inf
    elif dt.kind == "b":
        value = highest
    else:
        info = like._device.xp.iinfo(dt)
        value = info.max if highest else info.min
    return scalar_tensor(value, like)


@tensor_method("clamp", "clip")
def clamp(input, min=None, max=None):
    """Limit values to [min, max] (applying min first); either bound may be None, a number
    or a tensor. The gradient passes where min <= input <= max, the bounds included."""
    if min is None and max is None:
        raise ValueError("clamp: at least one of min and max must be given")
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        x, lo, hi = _promote_all("clamp", input, min, max)
        return ClampTensor.apply(x, _extreme(x, False) if lo is None else lo,
                                 _extreme(x, True) if hi is None else hi)
    dt = _result_dtype("clamp", *[v for v in (input, min, max) if v is not None])
    return Clamp.apply(input if input._data.dtype == dt else input.to(dt), lo=min, hi=max)


clip = clamp


class Where(Function):
    saves = (0,)

    def forward(self, cond, a, b):
        self.shapes = (a.shape, b.shape)
        return self.xp.where(cond, a, b)

    def backward(self, g):
        (cond,) = self.saved_tensors
        _, na, nb = self.needs_input_grad
        return (None,
                sum_to(where(cond, g, 0.0), self.shapes[0]) if na else None,
                sum_to(where(cond, 0.0, g), self.shapes[1]) if nb else None)


def where(condition, input=None, other=None):
    """`input` where `condition` holds, else `other` (all three broadcast together).

    `input` and `other` may be tensors or numbers; with neither, returns
    `condition.nonzero(as_tuple=True)`.
    """
    if input is None and other is None:
        return condition.nonzero(as_tuple=True)
    if not isinstance(condition, Tensor) or dtypes.kind(condition._data.dtype) != "b":
        got = condition.dtype.name if isinstance(condition, Tensor) else \
            type(condition).__name__
        raise DTypeError(f"where: expected a bool condition tensor, got {got}; "
                         "compare first (e.g. x > 0) or call .bool()")
    if isinstance(input, Tensor) or isinstance(other, Tensor):
        a, b = promote(input, other, "where")
    else:
        dt = _result_dtype("where", input, other)
        a, b = scalar_tensor(input, condition, dt), scalar_tensor(other, condition, dt)
    return Where.apply(condition, a, b)


@tensor_method("where")
def _where_method(self, condition, other):
    """self where `condition` holds, else `other` (torch's Tensor.where argument order)."""
    return where(condition, self, other)


# --------------------------------------------------- composite binary/ternary
@tensor_method()
def lerp(input, end, weight):
    """input + weight * (end - input); `end` has input's dtype, `weight` is a number or tensor."""
    check_kind(input, "f", "lerp")
    if isinstance(end, Tensor) and end.dtype is not input.dtype:
        raise DTypeError(f"lerp: expected end of dtype {input.dtype.name} (as input), got "
                         f"{end.dtype.name}")
    check_broadcast("lerp", input, end, weight)
    return input + weight * (end - input)


def _checked_value(value, operands, op: str) -> None:
    if isinstance(value, float) and dtypes.kind(_result_dtype(op, *operands)) != "f":
        raise DTypeError(f"{op}: value={value} is fractional but the operands are integers; "
                         "valid: an integer value, or floating-point operands")


@tensor_method()
@autocast_policy("promote")
def addcmul(input, tensor1, tensor2, *, value=1):
    """input + value * tensor1 * tensor2, broadcast."""
    _checked_value(value, (input, tensor1, tensor2), "addcmul")
    check_broadcast("addcmul", input, tensor1, tensor2)
    product = tensor1 * tensor2
    return input + (product if value == 1 else product * value)


@tensor_method()
@autocast_policy("promote")
def addcdiv(input, tensor1, tensor2, *, value=1):
    """input + value * tensor1 / tensor2, broadcast; tensor1 / tensor2 may not both be
    integers (torch refuses the historic integer division)."""
    if dtypes.kind(_result_dtype("addcdiv", tensor1, tensor2)) != "f":
        raise DTypeError(f"addcdiv: integer division of {tensor1.dtype.name} by "
                         f"{tensor2.dtype.name} is not supported; valid: a floating-point "
                         "tensor1 or tensor2")
    _checked_value(value, (input, tensor1, tensor2), "addcdiv")
    check_broadcast("addcdiv", input, tensor1, tensor2)
    quotient = tensor1 / tensor2
    return input + (quotient if value == 1 else quotient * value)


# ------------------------------------------------------------------- unary
class _Unary(Function):
    """One-input op: `kernel(xp, x)` on arrays, `grad(g, *saved)` on tensors."""

    def forward(self, x):
        return self.kernel(self.xp, x)

    def backward(self, g):
        return (self.grad(g, *self.saved_tensors),)


class _BackendUnary(_Unary):
    """A one-input op computed by a `Backend` method (erf, ...), which CuPy may replace."""

    def forward(self, x):
        return getattr(self.device.backend, self.kernel)(x)


def _unary(name, kernel, grad, doc, *, uses="x", inputs="promote", autocast=None):
    """Build a one-input op and bind it as a Tensor method.

    `kernel(xp, x)` computes it on arrays (a string names a `Backend` method instead).
    `grad(g, t)` returns the input's gradient, where `t` is the saved input (uses="x"),
    the output (uses="y") or nothing (uses=None). `inputs` says what integer and bool
    tensors do: "promote" to the default float dtype, or raise unless allowed by "float"
    (never) or "numeric" (integers). `autocast` is the op's autocast policy.
    """
    on_backend = isinstance(kernel, str)
    cls = type(name.capitalize(), (_BackendUnary if on_backend else _Unary,), {
        "kernel": kernel if on_backend else staticmethod(kernel),
        "grad": staticmethod(grad), "__doc__": doc,
        "saves": (0,) if uses == "x" else (), "save_output": uses == "y",
        "autocast": autocast,
    })
    kinds = {"float": "f", "numeric": "iuf"}.get(inputs)

    def op(input):
        if dtypes.kind(input._data.dtype) not in "fc":
            if kinds is None:
                input = input.to(dtypes.get_default_dtype())
            else:
                check_kind(input, kinds, name)
        return cls.apply(input)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = doc
    return tensor_method(name)(op)


_LN2, _LN10 = math.log(2), math.log(10)
_TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)


def one_plus_exp_neg(xp, x):
    """1 + exp(-x) in three in-place passes over one new array, the denominator of sigmoid
    and SiLU. exp(-x) overflows to inf only below x = -88 (float32), where those results
    are 0 to float32's normal range anyway, so the overflow is expected and silenced (NumPy;
    CuPy does not warn)."""
    out = xp.negative(x, out=xp.empty_like(x))  # an array even for 0-d input
    with np.errstate(over="ignore"):
        xp.exp(out, out=out)
    out += 1
    return out


def sigmoid_kernel(xp, x):
    """1 / (1 + exp(-x)), in place on its denominator."""
    out = one_plus_exp_neg(xp, x)
    return xp.reciprocal(out, out=out)


def _on_arrays(tensor_grad, array_grad):
    """A `_unary` gradient that runs `array_grad(xp, g, t)` in place on arrays, or the
    differentiable `tensor_grad(g, t)` under create_graph."""
    def grad(g, t):
        if STATE.enabled:
            return tensor_grad(g, t)
        return Tensor._make(array_grad(t._device.xp, g._data, t._data), t._device)
    return grad


def _sigmoid_grad(xp, g, y):
    """g * (1 - y) * y."""
    out = xp.subtract(1, y, out=xp.empty_like(y))
    out *= y
    out *= g
    return out


def _tanh_grad(xp, g, y):
    """g * (1 - y * y)."""
    out = xp.multiply(y, y, out=xp.empty_like(y))
    xp.subtract(1, out, out=out)
    out *= g
    return out


exp = _unary("exp", lambda xp, x: xp.exp(x), lambda g, y: g * y,
             "e ** input, elementwise.", uses="y", autocast="float32")
exp2 = _unary("exp2", lambda xp, x: xp.exp2(x), lambda g, y: g * y * _LN2,
              "2 ** input, elementwise.", uses="y")
expm1 = _unary("expm1", lambda xp, x: xp.expm1(x), lambda g, y: g * (y + 1),
               "exp(input) - 1, accurate near 0.", uses="y", autocast="float32")
log = _unary("log", lambda xp, x: xp.log(x), lambda g, x: g / x,
             "Natural logarithm; -inf at 0 and NaN below.", autocast="float32")
log2 = _unary("log2", lambda xp, x: xp.log2(x), lambda g, x: g / (x * _LN2),
              "Base-2 logarithm.", autocast="float32")
log10 = _unary("log10", lambda xp, x: xp.log10(x), lambda g, x: g / (x * _LN10),
               "Base-10 logarithm.", autocast="float32")
log1p = _unary("log1p", lambda xp, x: xp.log1p(x), lambda g, x: g / (x + 1),
               "log(1 + input), accurate near 0.", autocast="float32")
sqrt = _unary("sqrt", lambda xp, x: xp.sqrt(x), lambda g, y: g / (2 * y),
              "Square root; NaN below 0.", uses="y")
rsqrt = _unary("rsqrt", lambda xp, x: 1 / xp.sqrt(x), lambda g, y: -0.5 * g * y * y * y,
               "1 / sqrt(input).", uses="y", autocast="float32")
reciprocal = _unary("reciprocal", lambda xp, x: 1 / x, lambda g, y: -g * (y * y),
                    "1 / input; integers give floats.", uses="y", autocast="float32")
sin = _unary("sin", lambda xp, x: xp.sin(x), lambda g, x: g * cos(x), "Sine (radians).")
cos = _unary("cos", lambda xp, x: xp.cos(x), lambda g, x: g * -sin(x), "Cosine (radians).")
tan = _unary("tan", lambda xp, x: xp.tan(x), lambda g, y: g * (1 + y * y),
             "Tangent (radians).", uses="y", autocast="float32")
asin = _unary("asin", lambda xp, x: xp.arcsin(x), lambda g, x: g * rsqrt(1 - x * x),
              "Inverse sine, in [-pi/2, pi/2]; NaN outside [-1, 1].", autocast="float32")
acos = _unary("acos", lambda xp, x: xp.arccos(x), lambda g, x: -g * rsqrt(1 - x * x),
              "Inverse cosine, in [0, pi]; NaN outside [-1, 1].", autocast="float32")
atan = _unary("atan", lambda xp, x: xp.arctan(x), lambda g, x: g / (x * x + 1),
              "Inverse tangent, in (-pi/2, pi/2).")
sinh = _unary("sinh", lambda xp, x: xp.sinh(x), lambda g, x: g * cosh(x), "Hyperbolic sine.",
              autocast="float32")
cosh = _unary("cosh", lambda xp, x: xp.cosh(x), lambda g, x: g * sinh(x),
              "Hyperbolic cosine.", autocast="float32")
tanh = _unary("tanh", lambda xp, x: xp.tanh(x),
              _on_arrays(lambda g, y: g * (1 - y * y), _tanh_grad),
              "Hyperbolic tangent.", uses="y")
asinh = _unary("asinh", lambda xp, x: xp.arcsinh(x), lambda g, x: g * rsqrt(x * x + 1),
               "Inverse hyperbolic sine.")
acosh = _unary("acosh", lambda xp, x: xp.arccosh(x), lambda g, x: g * rsqrt(x * x - 1),
               "Inverse hyperbolic cosine; NaN below 1.")
atanh = _unary("atanh", lambda xp, x: xp.arctanh(x), lambda g, x: g / (1 - x * x),
               "Inverse hyperbolic tangent; ±inf at ±1.")
sigmoid = _unary("sigmoid", sigmoid_kernel, _on_arrays(lambda g, y: g * (1 - y) * y,
                                                       _sigmoid_grad),
                 "1 / (1 + exp(-input)), computed without overflow.", uses="y")
logsigmoid = _unary(
    "logsigmoid", lambda xp, x: xp.minimum(x, 0) - xp.log1p(xp.exp(-xp.abs(x))),
    lambda g, x: g * sigmoid(-x), "log(sigmoid(input)), accurate on both tails.",
    inputs="float")
erf = _unary("erf", "erf",
             lambda g, x: g * (_TWO_OVER_SQRT_PI * exp(-x * x)), "The error function.")
erfc = _unary("erfc", "erfc",
              lambda g, x: g * (-_TWO_OVER_SQRT_PI * exp(-x * x)),
              "1 - erf(input), accurate where erf is close to 1.")
erfinv = _unary("erfinv", "erfinv",
                lambda g, y: g * (math.sqrt(math.pi) / 2 * exp(y * y)),
                "The inverse error function: ±inf at ±1, NaN outside [-1, 1].", uses="y",
                autocast="float32")
frac = _unary("frac", lambda xp, x: x - xp.trunc(x), lambda g: g,
              "input - trunc(input), with the sign of input.", uses=None, inputs="float")
_real_abs = _unary("abs", lambda xp, x: xp.abs(x), lambda g, x: g * sign(x),
                   "Absolute value; its gradient at 0 is 0.", inputs="numeric")


@tensor_method()
def abs(input):
    """Absolute value (the modulus of a complex number); its gradient at 0 is 0."""
    if input._data.dtype.kind == "c":
        from .complex_numbers import complex_abs

        return complex_abs(input)
    return _real_abs(input)
class Relu(_Unary):
    """max(input, 0); its gradient at 0 is 0."""

    save_output = True

    def forward(self, x):
        xp = self.xp
        out = xp.empty_like(x, order="C")  # 0 first: relu(-0.0) is -0.0, as in torch
        loops = numba_kernels.kernels_for(xp, "fd", x)  # the same values in one pass
        kernel = (lambda o, a: loops.relu(a, o)) if loops is not None else \
            (lambda o, a: xp.maximum(0, a, out=o))
        if not for_elements(xp, kernel, out, x, runs=loops is not None):
            xp.maximum(0, x, out=out)
        return out

    def backward(self, g):
        (y,) = self.saved_tensors
        if STATE.enabled:  # recording: keep torch's (zero) second derivative in the graph
            return (g * sign(y),)
        xp, gd, yd = self.xp, g._data, y._data
        out = xp.empty(yd.shape, gd.dtype)
        loops = numba_kernels.kernels_for(xp, "fd", gd, yd)
        kernel = (lambda o, a, b: loops.relu_grad(a, b, o)) if loops is not None else \
            (lambda o, a, b: _masked(xp, o, a, b))
        if not for_elements(xp, kernel, out, gd, yd, runs=loops is not None):
            _masked(xp, out, gd, yd)
        return (Tensor._make(out, g._device),)


def _masked(xp, out, g, y) -> None:
    """out = g · (y > 0), the mask made in `out` (a select, as torch's, runs 5-10x slower
    in NumPy; the two differ only at NaNs: a NaN output gets 0 here, g in torch, and a NaN
    in g where the output is not positive stays NaN here, 0 in torch)."""
    xp.greater(y, 0, out=out)
    xp.multiply(out, g, out=out)


@tensor_method()
def relu(input):
    """max(input, 0); its gradient at 0 is 0."""
    check_kind(input, "iuf", "relu")
    return Relu.apply(input)
absolute = abs
arcsin, arccos, arctan = asin, acos, atan
Tensor.absolute = Tensor.__abs__ = Tensor.abs
Tensor.arcsin, Tensor.arccos, Tensor.arctan = Tensor.asin, Tensor.acos, Tensor.atan


class Neg(Function):
    complex_grad = True

    def forward(self, x):
        return -x

    def backward(self, g):
        return (-g,)


@tensor_method("neg", "negative", "__neg__")
def neg(input):
    """-input; not defined for bool tensors (use ~ or logical_not())."""
    check_kind(input, "iufc", "neg", "use ~ or logical_not() to invert a bool tensor")
    return Neg.apply(input)


negative = neg


@tensor_method("__pos__")
def _pos(self):
    return self


# -------------------------------------------------- piecewise-constant ops
class _Flat(Function):
    """Ops that are constant almost everywhere (floor, sign, ...): a zero gradient."""

    def forward(self, x, **params):
        return self.kernel(self.xp, x, **params)

    def backward(self, g):
        return (zeros_like(g),)


def _flat(name, kernel, doc, kinds="iuf"):
    cls = type(name.capitalize(), (_Flat,), {"kernel": staticmethod(kernel), "__doc__": doc})

    def op(input):
        check_kind(input, kinds, name)
        return cls.apply(input)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = doc
    return tensor_method(name)(op)


def _rounding(fn_name):
    def kernel(xp, x):
        return getattr(xp, fn_name)(x) if dtypes.kind(x.dtype) == "f" else x.copy()

    return kernel


def _sign_kernel(xp, x):
    if dtypes.kind(x.dtype) != "f":
        return xp.sign(x) if dtypes.kind(x.dtype) != "b" else x.copy()
    # as torch: sign(NaN) = 0 and sign(-0.0) = +0
    return (x > 0).astype(x.dtype) - (x < 0).astype(x.dtype)


floor = _flat("floor", _rounding("floor"), "Round down to an integer value.")
ceil = _flat("ceil", _rounding("ceil"), "Round up to an integer value.")
trunc = _flat("trunc", _rounding("trunc"), "Round toward zero to an integer value.")
sign = _flat("sign", _sign_kernel, "-1, 0 or 1 by the sign of each element (0 for NaN).",
             kinds="biuf")
fix = trunc
Tensor.fix = Tensor.trunc


class Round(_Flat):
    @staticmethod
    def kernel(xp, x, decimals):
        return xp.round(x, decimals) if dtypes.kind(x.dtype) == "f" else x.copy()


@tensor_method()
def round(input, *, decimals: int = 0):
    """Round half to even (as torch), to `decimals` places (negative: left of the point)."""
    check_kind(input, "iuf" if decimals == 0 else "f", "round")
    return Round.apply(input, decimals=decimals)
