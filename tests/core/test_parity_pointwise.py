"""Parity cases for the elementwise ops of ops/pointwise.py (nan_to_num, copysign, ldexp,
logaddexp, float_power, gcd, heaviside, ...) against torch, with gradcheck."""

from __future__ import annotations

import dlfree as dl

import pytest

from support.parity import Case, run_family
from support.specs import Fixed, Float, Int

S = (3, 4)
SPECIALS = Fixed([[1.0, float("nan"), float("inf")], [-float("inf"), -2.0, 0.5]])
SIGNED_ZEROS = Fixed([0.0, -0.0, 1.5, -2.0, float("inf"), -float("inf")])

CASES = [
    Case("nan_to_num", lambda m, a: m.nan_to_num(a), [SPECIALS], grad=False),
    Case("nan_to_num_values", lambda m, a: a.nan_to_num(nan=1.0, posinf=9.0, neginf=-9.0),
         [SPECIALS], grad=False),
    Case("nan_to_num_grad", lambda m, a: (a * 2).nan_to_num(), [S], gradgrad=True),
    Case("clamp_min", lambda m, a: m.clamp_min(a, 0.1), [S], gradgrad=True),
    Case("clamp_max_tensor", lambda m, a, b: a.clamp_max(b), [S, (4,)], gradgrad=True),
    Case("sgn", lambda m, a: m.sgn(a), [S]),
    Case("signbit", lambda m, a: m.signbit(a), [SIGNED_ZEROS], grad=False),
    Case("copysign", lambda m, a, b: m.copysign(a, b), [S, (4,)], gradgrad=True),
    Case("copysign_zeros", lambda m, a: m.copysign(dl.ones(6, dtype=m.float64)
                                                   if m is dl else a.new_ones(6), a),
         [SIGNED_ZEROS], grad=False, dtypes=("float64",)),
    Case("copysign_int", lambda m, a: a.copysign(-1), [Int((5,), -3, 3)], grad=False),
    Case("ldexp", lambda m, a, e: m.ldexp(a, e), [S, Int(S, 0, 4)], gradgrad=True),
    # torch's gradient is 0 for negative exponents (it takes pow(2, e) in integers there), so
    # only the values are compared; test_ldexp_gradient_is_two_to_the_exponent checks ours
    Case("ldexp_negative", lambda m, a, e: a.ldexp(e), [S, Int(S, -3, 0)], grad=False),
    Case("logaddexp", lambda m, a, b: m.logaddexp(a, b), [S, S], gradgrad=True),
    Case("logaddexp_far", lambda m, a, b: a.logaddexp(b * 100), [S, S], gradgrad=True),
    Case("logaddexp2", lambda m, a, b: m.logaddexp2(a, b), [S, (4,)], gradgrad=True),
    Case("float_power", lambda m, a: m.float_power(a, 3), [S], gradgrad=True),
    Case("float_power_tensor", lambda m, a, b: a.float_power(b), [Float(S, 0.5, 2.0), S],
         gradgrad=True),
    Case("deg2rad", lambda m, a: m.deg2rad(a), [S], gradgrad=True),
    Case("rad2deg", lambda m, a: a.rad2deg(), [S]),
    Case("deg2rad_int", lambda m, a: a.deg2rad(), [Int(S, -180, 180)], grad=False),
    Case("nextafter", lambda m, a, b: m.nextafter(a, b), [S, S], grad=False,
         fwd_tol=(0, 0)),
    Case("gcd", lambda m, a, b: m.gcd(a, b), [Int(S, -20, 20), Int(S, 0, 12)], grad=False),
    Case("lcm", lambda m, a, b: a.lcm(b), [Int(S, -9, 9), Int((4,), 1, 7)], grad=False),
    Case("heaviside", lambda m, a, v: m.heaviside(a, v),
         [Fixed([-1.0, 0.0, 2.0, 0.0]), Fixed([0.5, 0.25, 0.5, 0.75])], grad=False),
    Case("isposinf", lambda m, a: m.isposinf(a), [SPECIALS], grad=False),
    Case("isneginf", lambda m, a: a.isneginf(), [SPECIALS], grad=False),
    Case("isreal", lambda m, a: m.isreal(a), [S], grad=False),
]

test_forward, test_grad, test_gradcheck, test_gradgrad = run_family(CASES)


def test_integer_only_ops_refuse_floats():
    with pytest.raises(dl.DTypeError, match="gcd: not supported for float32 tensors; valid: "
                                            "integer tensors"):
        dl.gcd(dl.ones(2), dl.ones(2))
    with pytest.raises(dl.DTypeError, match="heaviside: values must be a tensor of input's "
                                            "dtype float32"):
        dl.heaviside(dl.ones(2), 0.5)


def test_in_place_forms_write_into_the_tensor():
    x = dl.tensor([-1.0, float("nan"), 2.0])
    assert x.nan_to_num_(nan=7.0) is x and x.tolist() == [-1.0, 7.0, 2.0]
    x.clamp_min_(0.0)
    assert x.tolist() == [0.0, 7.0, 2.0]
    with pytest.raises(dl.DTypeError, match="float_power_: the result is float64, which a "
                                            "float32 tensor cannot hold in place"):
        x.float_power_(2)
    assert x.double().float_power_(2).tolist() == [0.0, 49.0, 4.0]


def test_ldexp_gradient_is_two_to_the_exponent():
    x = dl.tensor([1.0, -2.0, 3.0], dtype=dl.float64, requires_grad=True)
    e = dl.tensor([-3, 0, 2])
    assert dl.autograd.gradcheck(lambda t: dl.ldexp(t, e), [x])
    dl.ldexp(x, e).sum().backward()
    assert x.grad.tolist() == [0.125, 1.0, 4.0]
