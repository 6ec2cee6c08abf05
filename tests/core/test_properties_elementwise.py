"""Property tests: elementwise ops agree with torch, forward and gradient, over random
(mutually broadcastable) shapes, float32 and float64, with values that hit the kinks."""

from __future__ import annotations

import dlfree as dl

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

TOLERANCE = {"float32": (1e-5, 1e-6), "float64": (1e-9, 1e-12)}
GRAD_TOLERANCE = {"float32": (1e-4, 1e-5), "float64": (1e-8, 1e-10)}


def reals(low, high):
    """Floats in [low, high], often exactly -1, 0 or 1 (where ties and kinks are).

    The bounds must be float32 numbers (e.g. 0.0625, not 0.05).
    """
    kinks = [v for v in (-1.0, 0.0, 1.0) if low <= v <= high]
    finite = st.floats(low, high, allow_subnormal=False, width=32)
    return st.one_of(st.sampled_from(kinks), finite) if kinks else finite


def nonzero(low, high):
    """Floats with low <= |x| <= high, of either sign."""
    return st.one_of(reals(low, high), reals(-high, -low))


WIDE, POSITIVE = reals(-4, 4), reals(0.0625, 4)

UNARY = {
    "exp": (lambda m, a: m.exp(a), WIDE),
    "expm1": (lambda m, a: m.expm1(a), WIDE),
    "log": (lambda m, a: m.log(a), POSITIVE),
    "log1p": (lambda m, a: m.log1p(a), reals(-0.875, 4)),
    "sqrt": (lambda m, a: m.sqrt(a), POSITIVE),
    "rsqrt": (lambda m, a: m.rsqrt(a), POSITIVE),
    "reciprocal": (lambda m, a: m.reciprocal(a), nonzero(0.0625, 4)),
    "sin": (lambda m, a: m.sin(a), WIDE),
    "atan": (lambda m, a: m.atan(a), WIDE),
    "asinh": (lambda m, a: m.asinh(a), WIDE),
    "tanh": (lambda m, a: m.tanh(a), WIDE),
    "sigmoid": (lambda m, a: m.sigmoid(a), reals(-30, 30)),
    "logsigmoid": (lambda m, a: torch.nn.functional.logsigmoid(a) if m is torch else
                   m.logsigmoid(a), reals(-30, 30)),
    "erf": (lambda m, a: m.erf(a), reals(-6, 6)),
    "erfc": (lambda m, a: m.erfc(a), reals(-6, 9)),
    "erfinv": (lambda m, a: m.erfinv(a), reals(-0.998046875, 0.998046875)),
    "abs": (lambda m, a: m.abs(a), WIDE),
    "relu": (lambda m, a: m.relu(a), WIDE),
    "square": (lambda m, a: m.square(a), WIDE),
    "clamp": (lambda m, a: m.clamp(a, -1.0, 1.0), WIDE),
}

BINARY = {
    "add": (lambda m, a, b: a + b, WIDE, WIDE),
    "sub": (lambda m, a, b: a - b, WIDE, WIDE),
    "mul": (lambda m, a, b: a * b, WIDE, WIDE),
    "div": (lambda m, a, b: a / b, WIDE, nonzero(0.125, 4)),
    "pow": (lambda m, a, b: a ** b, POSITIVE, reals(-3, 3)),
    "maximum": (lambda m, a, b: m.maximum(a, b), WIDE, WIDE),
    "minimum": (lambda m, a, b: m.minimum(a, b), WIDE, WIDE),
    "atan2": (lambda m, a, b: m.atan2(a, b), WIDE, WIDE),
    "hypot": (lambda m, a, b: m.hypot(a, b), nonzero(0.0625, 4), WIDE),
    "xlogy": (lambda m, a, b: m.xlogy(a, b), WIDE, POSITIVE),
    "remainder": (lambda m, a, b: m.remainder(a, b), WIDE, nonzero(0.125, 4)),
    "fmod": (lambda m, a, b: m.fmod(a, b), WIDE, nonzero(0.125, 4)),
}

TERNARY = {
    "clamp": (lambda m, a, lo, hi: m.clamp(a, lo, hi), WIDE, reals(-2, 0), reals(0, 2)),
    "where": (lambda m, a, b, c: m.where(a > 0, b, c), WIDE, WIDE, WIDE),
    "lerp": (lambda m, a, b, w: m.lerp(a, b, w), WIDE, WIDE, reals(0, 1)),
    "addcmul": (lambda m, a, b, c: m.addcmul(a, b, c, value=0.5), WIDE, WIDE, WIDE),
    "addcdiv": (lambda m, a, b, c: m.addcdiv(a, b, c, value=-2), WIDE, WIDE,
                nonzero(0.125, 4)),
}


@st.composite
def operands(draw, elements, full_first):
    """Arrays of mutually broadcastable shapes (0-d and size 0 included) and one dtype;
    with `full_first` the first one has the broadcast shape."""
    dtype = draw(st.sampled_from(["float32", "float64"]))
    shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=len(elements), min_dims=0,
                                                    max_dims=3, min_side=0, max_side=4))
    first = shapes.result_shape if full_first else shapes.input_shapes[0]
    arrays = [draw(hnp.arrays(dtype, shape, elements=e))
              for shape, e in zip((first, *shapes.input_shapes[1:]), elements, strict=True)]
    return dtype, arrays


def _check(fn, dtype, arrays, seed):
    """Forward and gradient of `fn` in dl.free against torch."""
    ours_in = [dl.tensor(a, requires_grad=True) for a in arrays]
    ref_in = [torch.tensor(a, requires_grad=True) for a in arrays]
    ours, ref = fn(dl, *ours_in), fn(torch, *ref_in)
    assert tuple(ours.shape) == tuple(ref.shape)
    assert str(ours.dtype).split(".")[-1] == str(ref.dtype).split(".")[-1]
    np.testing.assert_allclose(ours.detach().numpy(), ref.detach().numpy(), *TOLERANCE[dtype])
    g = np.random.default_rng(seed).standard_normal(tuple(ref.shape)).astype(dtype)
    ours_grads = dl.autograd.grad([ours], ours_in, [dl.tensor(g)], allow_unused=True)
    ref_grads = torch.autograd.grad([ref], ref_in, [torch.tensor(g)], allow_unused=True)
    for a, x, r in zip(arrays, ours_grads, ref_grads, strict=True):
        if r is None:
            assert x is None or not np.any(x.numpy())
            continue
        assert x is not None and tuple(x.shape) == a.shape
        np.testing.assert_allclose(x.numpy(), r.numpy(), *GRAD_TOLERANCE[dtype])


def _property(fn, elements, examples, full_first=False):
    @settings(max_examples=examples, deadline=None, database=None)
    @given(operands(elements, full_first), st.integers(0, 2**16))
    def check(case, seed):
        _check(fn, *case, seed)

    check()


@pytest.mark.parametrize("op", sorted(UNARY))
def test_unary_matches_torch(op):
    fn, elements = UNARY[op]
    _property(fn, [elements], 25)


@pytest.mark.parametrize("op", sorted(BINARY))
def test_binary_matches_torch(op):
    fn, *elements = BINARY[op]
    _property(fn, elements, 40)


@pytest.mark.parametrize("op", sorted(TERNARY))
def test_ternary_matches_torch(op):
    fn, *elements = TERNARY[op]
    # torch's clamp backward fails when both bounds are tensors and broadcast the input
    _property(fn, elements, 30, full_first=op == "clamp")
