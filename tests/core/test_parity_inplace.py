"""Parity cases for the in-place ops (`x.add_(y)`, `F.relu_(x)`, ...) against torch's (see
parity.py): each writes into a fresh non-leaf (`a * 1`) so that the gradient runs back
through the rewritten history to the inputs, and gradcheck checks it in float64.

The out-of-place ops have their own rows; these check that the in-place spelling computes
the same values and moves the graph the same way (the result's grad_fn replaced, the
gradient of what was overwritten dropped)."""

from __future__ import annotations

import dlfree as dl

import pytest
import torch

from support.parity import Case, run_family
from support.specs import Bool, Fixed, Float, Int

S = (3, 4)
POSITIVE = Float(S, 0.5, 2.0)
UNIT = Float(S, 0.1, 0.9)
INDEX = Fixed([0, 2, 2], dtype="int64")  # rows of a (3, 4) target, one repeated
SCATTER = Fixed([[0, 1, 2, 0], [2, 0, 1, 1]], dtype="int64")  # distinct per column


def F(m):
    return torch.nn.functional if m is torch else dl.functional


def fresh(a):
    """A non-leaf copy of `a`, which in-place ops may overwrite while it requires grad."""
    return a * 1


def unary(name, spec=S, **kw):
    """`fresh(a).name()`: the in-place form of a one-input op."""
    return Case(name, lambda m, a: getattr(fresh(a), name)(), [spec], **kw)


def binary(name, other=S, spec=S, **kw):
    """`fresh(a).name(b)`."""
    return Case(name, lambda m, a, b: getattr(fresh(a), name)(b), [spec, other], **kw)


def activation(name, *args, spec=S, **kw):
    """`F.name(fresh(a), *args)`."""
    return Case(f"F.{name}", lambda m, a: getattr(F(m), name)(fresh(a), *args), [spec], **kw)


CASES = [
    # one input: smooth
    *(unary(n) for n in ("abs_", "cos_", "sin_", "tan_", "tanh_", "sigmoid_", "exp_",
                         "expm1_", "square_", "neg_", "erf_", "relu_", "sinc_", "deg2rad_",
                         "rad2deg_", "nan_to_num_")),
    *(unary(n, POSITIVE) for n in ("log_", "log1p_", "sqrt_", "rsqrt_", "reciprocal_",
                                   "digamma_", "lgamma_", "i0_")),
    unary("logit_", UNIT),
    Case("polygamma_", lambda m, a: fresh(a).polygamma_(1), [POSITIVE]),
    Case("mvlgamma_", lambda m, a: fresh(a).mvlgamma_(2), [Float(S, 1.0, 3.0)]),
    # one input: piecewise constant (zero gradient, still compared)
    *(unary(n) for n in ("ceil_", "floor_", "round_", "trunc_", "sign_", "sgn_", "zero_")),
    Case("clamp_", lambda m, a: fresh(a).clamp_(-0.5, 0.5), [S]),
    Case("clamp_min_", lambda m, a: fresh(a).clamp_min_(-0.3), [S]),
    Case("clamp_max_", lambda m, a: fresh(a).clamp_max_(0.3), [S]),
    Case("clip_", lambda m, a: fresh(a).clip_(min=-0.5, max=0.5), [S]),
    Case("fill_", lambda m, a: fresh(a).fill_(1.5) * a, [S]),
    Case("fill_diagonal_", lambda m, a: fresh(a).fill_diagonal_(2.0), [(4, 4)]),
    Case("fill_diagonal__tall_wrap", lambda m, a: fresh(a).fill_diagonal_(-1.0, wrap=True),
         [(7, 3)]),
    Case("fill_diagonal__tall", lambda m, a: fresh(a).fill_diagonal_(-1.0), [(7, 3)]),
    Case("fill_diagonal__wide", lambda m, a: fresh(a).fill_diagonal_(0.5), [(2, 5)]),
    Case("fill_diagonal__cube", lambda m, a: fresh(a).fill_diagonal_(3.0), [(3, 3, 3)]),
    Case("renorm_", lambda m, a: fresh(a).renorm_(2, 0, 1.0), [S]),
    Case("detach_", lambda m, a: fresh(a).detach_(), [S], grad=False),
    # two inputs
    *(binary(n) for n in ("add_", "sub_", "subtract_", "mul_", "multiply_", "copy_",
                          "copysign_")),
    *(binary(n, POSITIVE) for n in ("div_", "divide_", "fmod_", "remainder_")),
    Case("add__alpha", lambda m, a, b: fresh(a).add_(b, alpha=-2.5), [S, (4,)]),
    Case("pow__scalar", lambda m, a: fresh(a).pow_(3), [S]),
    Case("pow__tensor", lambda m, a, b: fresh(a).pow_(b), [POSITIVE, S]),
    Case("lerp_", lambda m, a, b: fresh(a).lerp_(b, 0.3), [S, S]),
    Case("ldexp_", lambda m, a, e: fresh(a).ldexp_(e), [S, Int(S, 0, 4)]),
    Case("float_power_", lambda m, a: fresh(a).float_power_(2.5), [POSITIVE], grad=False,
         dtypes=("float64",)),  # torch's in-place float_power_ needs a float64 self
    Case("heaviside_", lambda m, a, b: fresh(a).heaviside_(b), [S, S], grad=False),
    Case("nextafter_", lambda m, a, b: fresh(a).nextafter_(b), [S, S], grad=False),
    Case("gcd_", lambda m, a, b: a.clone().gcd_(b), [Int(S, 1, 30), Int(S, 1, 30)],
         grad=False),
    Case("lcm_", lambda m, a, b: a.clone().lcm_(b), [Int(S, 1, 12), Int(S, 1, 12)],
         grad=False),
    Case("addcmul_", lambda m, a, b, c: fresh(a).addcmul_(b, c, value=0.5), [S, S, S]),
    Case("addcdiv_", lambda m, a, b, c: fresh(a).addcdiv_(b, c, value=-2.0), [S, S, POSITIVE]),
    # products
    Case("addmm_", lambda m, a, b, c: fresh(a).addmm_(b, c, beta=0.5, alpha=2.0),
         [(3, 5), (3, 4), (4, 5)]),
    Case("addmv_", lambda m, a, b, c: fresh(a).addmv_(b, c), [(3,), (3, 4), (4,)]),
    Case("addbmm_", lambda m, a, b, c: fresh(a).addbmm_(b, c), [(3, 5), (2, 3, 4), (2, 4, 5)]),
    Case("baddbmm_", lambda m, a, b, c: fresh(a).baddbmm_(b, c, alpha=0.5),
         [(2, 3, 5), (2, 3, 4), (2, 4, 5)]),
    # indexed writes
    Case("masked_fill_", lambda m, a, mask: fresh(a).masked_fill_(mask, 0.5), [S, Bool(S)]),
    Case("index_add_", lambda m, a, s, i: fresh(a).index_add_(0, i, s, alpha=2.0),
         [S, S, INDEX]),
    Case("index_reduce_", lambda m, a, s, i: fresh(a).index_reduce_(0, i, s, "prod"),
         [S, S, INDEX], marks=(pytest.mark.filterwarnings("ignore:index_reduce"),)),
    Case("scatter_", lambda m, a, s, i: fresh(a).scatter_(0, i, s), [S, (2, 4), SCATTER]),
    Case("scatter_add_", lambda m, a, s, i: fresh(a).scatter_add_(0, i, s),
         [S, (2, 4), SCATTER]),
    Case("scatter_reduce_", lambda m, a, s, i: fresh(a).scatter_reduce_(0, i, s, "amax"),
         [S, Float((2, 4), distinct=True), SCATTER]),
    # shape, in place
    Case("squeeze_", lambda m, a: fresh(a).squeeze_(), [(3, 1, 4)]),
    Case("unsqueeze_", lambda m, a: fresh(a).unsqueeze_(1), [S]),
    Case("t_", lambda m, a: fresh(a).t_(), [S]),
    Case("transpose_", lambda m, a: fresh(a).transpose_(0, 1), [S]),
    Case("swapaxes_", lambda m, a: fresh(a).swapaxes_(0, 1), [S]),
    Case("swapdims_", lambda m, a: fresh(a).swapdims_(1, 0), [S]),
    Case("tril_", lambda m, a: fresh(a).tril_(), [(4, 4)]),
    Case("triu_", lambda m, a: fresh(a).triu_(1), [(4, 4)]),
    Case("as_strided_", lambda m, a: fresh(a).as_strided_((2, 2), (1, 2)), [S], grad=False),
    # nn.functional's in-place activations
    activation("relu_"),
    activation("elu_", 0.7),
    activation("celu_", 1.5),
    activation("selu_"),
    activation("leaky_relu_", 0.2),
    activation("hardtanh_", -0.5, 0.5),
    activation("threshold_", 0.1, -1.0),
]

test_forward, test_grad, test_gradcheck, test_gradgrad = run_family(CASES)
