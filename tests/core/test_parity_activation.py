"""Parity cases for the activation functions (see parity.py), plus gradients at the kinks."""

from __future__ import annotations

import dlfree as dl

import numpy as np
import pytest
import torch

from support.parity import Case, run_family
from support.specs import Float


def F(m):
    return torch.nn.functional if m is torch else dl.functional


S = (3, 4)
WIDE = Float((2, 3, 5), -5.0, 5.0)  # spans the corners at +-3 (hardsigmoid, hardswish)
SIX = Float((4, 5), -2.0, 8.0)  # spans relu6's corners at 0 and 6

# Piecewise-linear ops have a zero second derivative, which torch returns as a graph of
# zeros and dl.free as no graph; their rows check first derivatives only.
CASES = [
    Case("relu", lambda m, a: F(m).relu(a), [S]),
    Case("relu_inplace", lambda m, a: F(m).relu(a * 1, inplace=True), [S]),
    Case("relu6", lambda m, a: F(m).relu6(a), [SIX]),
    Case("leaky_relu", lambda m, a: F(m).leaky_relu(a), [(2, 3, 4)]),
    Case("leaky_relu_inplace", lambda m, a: F(m).leaky_relu(a * 1, 0.2, inplace=True), [S]),
    Case("elu", lambda m, a: F(m).elu(a), [(2, 3, 4)], gradgrad=True),
    Case("elu_alpha_inplace", lambda m, a: F(m).elu(a * 1, 0.5, inplace=True), [S],
         gradgrad=True),
    Case("selu", lambda m, a: F(m).selu(a), [S], gradgrad=True),
    Case("celu", lambda m, a: F(m).celu(a, 2.0), [S], gradgrad=True),
    Case("gelu", lambda m, a: F(m).gelu(a), [(2, 3, 4)], gradgrad=True),
    Case("gelu_tanh", lambda m, a: F(m).gelu(a, approximate="tanh"), [(2, 3, 4)],
         gradgrad=True),
    Case("silu", lambda m, a: F(m).silu(a), [(5, 3)], gradgrad=True),
    Case("mish", lambda m, a: F(m).mish(a), [(5, 3)], gradgrad=True),
    Case("softplus", lambda m, a: F(m).softplus(a), [S], gradgrad=True),
    Case("softplus_beta_threshold", lambda m, a: F(m).softplus(a, beta=2.0, threshold=1.0),
         [S], gradgrad=True),
    Case("softsign", lambda m, a: F(m).softsign(a), [S], gradgrad=True),
    Case("hardtanh", lambda m, a: F(m).hardtanh(a), [S]),
    Case("hardtanh_bounds", lambda m, a: F(m).hardtanh(a, -2.0, 0.5), [(1, 6)]),
    Case("hardsigmoid", lambda m, a: F(m).hardsigmoid(a), [WIDE]),
    Case("hardswish", lambda m, a: F(m).hardswish(a), [WIDE], gradgrad=True),
    Case("prelu_shared", lambda m, a, w: F(m).prelu(a, w), [(2, 3, 4), (1,)], gradgrad=True),
    Case("prelu_channels", lambda m, a, w: F(m).prelu(a, w), [(2, 3, 2, 2), (3,)],
         gradgrad=True),
    Case("glu", lambda m, a: F(m).glu(a), [(3, 6)], gradgrad=True),
    Case("glu_dim1", lambda m, a: F(m).glu(a, dim=1), [(2, 4, 3)], gradgrad=True),
    Case("tanhshrink", lambda m, a: F(m).tanhshrink(a), [S], gradgrad=True),
    Case("softmin", lambda m, a: F(m).softmin(a, dim=1), [(2, 5, 3)], gradgrad=True),
    Case("threshold", lambda m, a: F(m).threshold(a, 0.3, -2.0), [S]),
    Case("hardshrink", lambda m, a: F(m).hardshrink(a), [S]),
    Case("softshrink", lambda m, a: F(m).softshrink(a, 0.3), [S]),
    Case("logsigmoid", lambda m, a: F(m).logsigmoid(a), [S], gradgrad=True),
    Case("sigmoid", lambda m, a: F(m).sigmoid(a), [S], gradgrad=True),
    Case("gelu_batch1", lambda m, a: F(m).gelu(a), [(1, 7)]),
    Case("silu_empty", lambda m, a: F(m).silu(a), [(0, 4)]),
]

test_forward, test_grad, test_gradcheck, test_gradgrad = run_family(CASES)

KINK_POINTS = [-6.0, -3.0, -1.0, -0.5, 0.0, 0.3, 0.5, 1.0, 3.0, 6.0]
KINK_OPS = {
    "relu": lambda m, x: F(m).relu(x),
    "relu6": lambda m, x: F(m).relu6(x),
    "leaky_relu": lambda m, x: F(m).leaky_relu(x, 0.1),
    "elu": lambda m, x: F(m).elu(x, 0.7),
    "celu": lambda m, x: F(m).celu(x, 1.5),
    "hardtanh": lambda m, x: F(m).hardtanh(x),
    "hardsigmoid": lambda m, x: F(m).hardsigmoid(x),
    "hardswish": lambda m, x: F(m).hardswish(x),
    "softplus": lambda m, x: F(m).softplus(x, beta=2.0, threshold=1.0),
    "threshold": lambda m, x: F(m).threshold(x, 0.3, 5.0),
    "hardshrink": lambda m, x: F(m).hardshrink(x),
    "softshrink": lambda m, x: F(m).softshrink(x, 0.5),
    "prelu": lambda m, x: F(m).prelu(x, m.tensor([0.25])),
}


@pytest.mark.parametrize("name", list(KINK_OPS))
def test_gradient_at_kinks(name):
    """At the corners (0, +-3, 6, the thresholds) the gradient is the one torch defines."""
    x = dl.tensor(KINK_POINTS, requires_grad=True)
    t = torch.tensor(KINK_POINTS, requires_grad=True)
    KINK_OPS[name](dl, x).sum().backward()
    KINK_OPS[name](torch, t).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-6, atol=1e-7)


def test_inplace_overwrites_and_counts_a_version():
    x = dl.randn(3, 4, requires_grad=True)
    h = x * 2
    version = h._vc[0]
    out = dl.functional.hardtanh(h, inplace=True)
    assert out is h and h._vc[0] == version + 1
    assert float(h.abs().max()) <= 1.0
    h.sum().backward()
    expected = 2 * (np.abs(2 * x.detach().numpy()) < 1)
    np.testing.assert_allclose(x.grad.numpy(), expected)


def test_inplace_on_a_leaf_that_requires_grad_is_an_error():
    x = dl.randn(3, requires_grad=True)
    with pytest.raises(dl.AutogradError, match="leaf"):
        dl.functional.elu(x, inplace=True)


@pytest.mark.parametrize("call, message", [
    (lambda x: dl.functional.glu(x), "glu: halving dimension must be even.*size 5"),
    (lambda x: dl.functional.prelu(x, dl.ones(3)), r"prelu: weight of shape \(3,\).*1 or 5"),
    (lambda x: dl.functional.gelu(x, approximate="erf"), "gelu: approximate must be"),
])
def test_errors_name_the_op_and_what_is_valid(call, message):
    with pytest.raises(ValueError, match=message):
        call(dl.randn(2, 5))
