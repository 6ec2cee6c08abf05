"""Parity cases for linear, bilinear, embedding and one_hot (see parity.py)."""

from __future__ import annotations

import dlfree as dl
from dlfree.autograd.function import Function
from dlfree.ops.linear import Linear

import numpy as np
import pytest
import torch

from support.parity import Case, run_family
from support.specs import Int


def F(m):
    return torch.nn.functional if m is torch else dl.functional


def embedding(**options):
    return lambda m, idx, w: F(m).embedding(idx, w, **options)


CASES = [
    Case("linear", lambda m, x, w, b: F(m).linear(x, w, b), [(4, 3), (5, 3), (5,)],
         gradgrad=True),
    Case("linear_no_bias", lambda m, x, w: F(m).linear(x, w), [(4, 3), (2, 3)], gradgrad=True),
    Case("linear_3d", lambda m, x, w, b: F(m).linear(x, w, b), [(2, 3, 4), (5, 4), (5,)],
         gradgrad=True),
    Case("linear_1d", lambda m, x, w, b: F(m).linear(x, w, b), [(4,), (3, 4), (3,)],
         gradgrad=True),
    Case("linear_batch1", lambda m, x, w, b: F(m).linear(x, w, b), [(1, 6), (2, 6), (2,)]),
    Case("linear_empty", lambda m, x, w, b: F(m).linear(x, w, b), [(0, 3), (2, 3), (2,)]),
    Case("bilinear", lambda m, a, b, w, bias: F(m).bilinear(a, b, w, bias),
         [(4, 3), (4, 2), (5, 3, 2), (5,)], gradgrad=True),
    Case("bilinear_3d_no_bias", lambda m, a, b, w: F(m).bilinear(a, b, w),
         [(2, 3, 2), (2, 3, 4), (3, 2, 4)], gradgrad=True),
    Case("embedding", embedding(), [Int((2, 5), 0, 6), (6, 3)], gradgrad=True),
    Case("embedding_1d_repeats", embedding(), [Int((9,), 0, 3), (3, 4)]),
    # padding_idx and scale_grad_by_freq change the gradient on purpose (it is not the
    # derivative), so finite differences cannot check them; torch's values do
    Case("embedding_padding", embedding(padding_idx=2), [Int((4, 5), 0, 4), (4, 3)],
         gradcheck=False, gradgrad=True),
    Case("embedding_negative_padding", embedding(padding_idx=-1), [Int((3, 4), 0, 5), (5, 2)],
         gradcheck=False),
    Case("embedding_scale_grad_by_freq", embedding(scale_grad_by_freq=True, padding_idx=0),
         [Int((3, 4), 0, 4), (4, 3)], gradcheck=False),
    # renormalises the weight in place, so finite differences would see a moving weight
    Case("embedding_max_norm", embedding(max_norm=1.0), [Int((2, 3), 0, 5), (5, 4)],
         gradcheck=False),
    Case("embedding_empty", embedding(), [Int((0, 2), 0, 4), (4, 3)]),
    Case("one_hot", lambda m, idx: F(m).one_hot(idx), [Int((2, 3), 0, 4)], grad=False),
    Case("one_hot_classes", lambda m, idx: F(m).one_hot(idx, 7), [Int((5,), 0, 4)],
         grad=False),
    Case("one_hot_empty", lambda m, idx: F(m).one_hot(idx, 3), [Int((0,), 0, 3)], grad=False),
]

test_forward, test_grad, test_gradcheck, test_gradgrad = run_family(CASES)


def test_linear_is_one_node_whose_plain_backward_applies_no_function(monkeypatch):
    x = dl.randn(8, 5, requires_grad=True)
    w, b = dl.randn(3, 5, requires_grad=True), dl.randn(3, requires_grad=True)
    out = dl.functional.linear(x, w, b)
    assert type(out.grad_fn) is Linear
    applied = []
    real_apply = Function.apply.__func__

    def counting_apply(cls, *inputs, **params):
        applied.append(cls.__name__)
        return real_apply(cls, *inputs, **params)

    monkeypatch.setattr(Function, "apply", classmethod(counting_apply))
    out.backward(dl.ones(8, 3))
    assert applied == []
    np.testing.assert_allclose(b.grad.numpy(), np.full(3, 8.0))


def test_embedding_padding_row_gets_no_gradient():
    w = dl.randn(4, 3, requires_grad=True)
    idx = dl.tensor([[0, 2, 2], [1, 2, 3]])
    dl.functional.embedding(idx, w, padding_idx=2).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy()[2], 0)
    np.testing.assert_array_equal(w.grad.numpy()[[0, 1, 3]], 1)


@pytest.mark.parametrize("call, error, message", [
    (lambda: dl.functional.linear(dl.randn(2, 3), dl.randn(4, 5)), dl.ShapeError,
     r"linear: input of shape \(2, 3\) and weight of shape \(4, 5\) do not fit"),
    (lambda: dl.functional.linear(dl.randn(2, 3), dl.randn(4, 3), dl.randn(3)), dl.ShapeError,
     r"linear: bias of shape \(3,\) does not fit .*valid: \(4,\)"),
    (lambda: dl.functional.bilinear(dl.randn(2, 3), dl.randn(2, 4), dl.randn(5, 3, 3)),
     dl.ShapeError, r"bilinear: input1 \(2, 3\), input2 \(2, 4\) and weight \(5, 3, 3\)"),
    (lambda: dl.functional.embedding(dl.tensor([0, 7]), dl.randn(5, 2)), IndexError,
     r"embedding: indices must lie in \[0, 5\)"),
    (lambda: dl.functional.one_hot(dl.tensor([1, 5]), 3), ValueError,
     r"one_hot: class values must lie in \[0, 3\)"),
    (lambda: dl.functional.one_hot(dl.tensor([], dtype=dl.int64)), ValueError,
     "one_hot: cannot infer the number of classes from an empty tensor"),
])
def test_errors_name_the_op_shapes_and_what_is_valid(call, error, message):
    with pytest.raises(error, match=message):
        call()
