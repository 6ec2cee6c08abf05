"""bincount, histc and histogram against torch (not differentiable, so forward rows only)."""

from __future__ import annotations

import dlfree as dl

import pytest

from support.parity import Case, run_family
from support.specs import Fixed, Float, Int

VALUES = Float((50,), -2.0, 3.0)

CASES = [
    Case("bincount", lambda m, a: m.bincount(a), [Int((30,), 0, 7)], grad=False),
    Case("bincount_minlength", lambda m, a: a.bincount(minlength=12), [Int((30,), 0, 7)],
         grad=False),
    Case("bincount_weights", lambda m, a, w: m.bincount(a, w), [Int((30,), 0, 7),
                                                              Float((30,), grad=False)],
         grad=False),
    Case("bincount_weights_f64", lambda m, a, w: a.bincount(w),
         [Int((30,), 0, 7), Fixed([float(i) for i in range(30)])], grad=False),
    Case("histc", lambda m, a: m.histc(a, 7), [VALUES], grad=False),
    Case("histc_range", lambda m, a: a.histc(bins=5, min=-1, max=1), [VALUES], grad=False),
    Case("histc_constant", lambda m, a: (a * 0).histc(4), [VALUES], grad=False),
    Case("histogram", lambda m, a: m.histogram(a, 6), [VALUES], grad=False),
    Case("histogram_range_weight_density",
         lambda m, a, w: a.histogram(4, range=(-1.0, 2.0), weight=w, density=True),
         [VALUES, Float((50,), 0.0, 1.0, grad=False)], grad=False),
    Case("histogram_edges", lambda m, a, e: m.histogram(a, e.to(a.dtype)),
         [VALUES, Fixed([-2.0, -0.5, 0.0, 2.5, 3.0])], grad=False),
]

test_forward, test_grad, test_gradcheck, test_gradgrad = run_family(CASES)


def test_bincount_refuses_negative_and_floating_input():
    with pytest.raises(ValueError, match="bincount: the input must be non-negative"):
        dl.bincount(dl.tensor([1, -1]))
    with pytest.raises(dl.DTypeError, match="bincount: expects a 1-d integer tensor, got a "
                                            "1-d float32 tensor"):
        dl.bincount(dl.tensor([1.0]))
