"""Parity cases for sorting and searching (sort, topk, kthvalue, mode, unique, searchsorted,
...) against torch (see support/parity.py), plus their error paths and tie rules."""

from __future__ import annotations

import dlfree as dl

import numpy as np
import pytest
import torch

from support.parity import Case, run_family
from support.specs import Fixed, Float, Int

DISTINCT = Float((3, 5), distinct=True)
DISTINCT3 = Float((2, 3, 4), distinct=True)
# repeated values, for stability and the mode's tie rules
REPEATS = Fixed([[3, 1, 2, 1, 3, 3, 2], [5, 5, 4, 4, 6, 6, 0]], "int64")
REPEATS_F = Fixed([[3.0, 1.0, 2.0, 1.0, 3.0, 3.0, 2.0], [5.0, 5.0, 4.0, 4.0, 6.0, 6.0, 0.0]])
WITH_NAN = Fixed([[1.0, float("nan"), -2.0, 0.5], [float("nan"), 3.0, 3.0, -1.0]])
SORTED = Fixed([[0.0, 1.0, 1.0, 2.5, 4.0], [-3.0, -1.0, 0.0, 0.0, 7.0]])
VALUES = Fixed([[1.0, 0.5, 4.0], [0.0, -5.0, 8.0]])

CASES = [
    Case("sort", lambda m, a: m.sort(a, 1), [DISTINCT], gradgrad=True),
    Case("sort_descending_dim0", lambda m, a: a.sort(0, descending=True), [DISTINCT3],
         gradgrad=True),
    Case("sort_stable_ties", lambda m, a: a.sort(dim=-1, stable=True), [REPEATS], grad=False),
    Case("sort_stable_ties_descending", lambda m, a: a.sort(descending=True, stable=True),
         [REPEATS], grad=False),
    Case("sort_nan", lambda m, a: a.sort(1), [WITH_NAN], grad=False),
    Case("sort_nan_descending", lambda m, a: a.sort(1, descending=True), [WITH_NAN],
         grad=False),
    Case("sort_0d", lambda m, a: a.sort(), [Float(())]),
    Case("argsort", lambda m, a: m.argsort(a, 0, descending=True), [DISTINCT], grad=False),
    Case("argsort_stable", lambda m, a: a.argsort(stable=True), [REPEATS], grad=False),
    Case("msort", lambda m, a: m.msort(a), [DISTINCT], gradgrad=True),
    Case("topk", lambda m, a: m.topk(a, 2), [DISTINCT], gradgrad=True),
    Case("topk_smallest_dim0", lambda m, a: a.topk(2, 0, largest=False), [DISTINCT3],
         gradgrad=True),
    Case("topk_k0", lambda m, a: a.topk(0), [DISTINCT], gradcheck=False),
    Case("kthvalue", lambda m, a: m.kthvalue(a, 2, 1), [DISTINCT], gradgrad=True),
    Case("kthvalue_keepdim", lambda m, a: a.kthvalue(3, 1, keepdim=True), [DISTINCT3],
         gradgrad=True),
    Case("mode", lambda m, a: m.mode(a, 1), [REPEATS], grad=False),
    # the repeated values of REPEATS_F with a's gradient path (b + a - a.detach() equals b):
    # the gradient reaches the index the mode picked (no gradcheck: a's own value cancels)
    Case("mode_grad", lambda m, a, b: (b.to(a.dtype) + a - a.detach()).mode(1),
         [Float((2, 7)), REPEATS_F], gradcheck=False),
    Case("mode_float_keepdim", lambda m, a: a.mode(-1, keepdim=True), [REPEATS_F],
         grad=False),
    Case("unique", lambda m, a: m.unique(a), [REPEATS], grad=False),
    Case("unique_inverse_counts",
         lambda m, a: m.unique(a, return_inverse=True, return_counts=True), [REPEATS],
         grad=False),
    Case("unique_dim", lambda m, a: m.unique(a, dim=1, return_inverse=True,
                                             return_counts=True),
         [Fixed([[1, 2, 1, 2, 0], [3, 4, 3, 4, 0]], "int64")], grad=False),
    Case("unique_consecutive", lambda m, a: m.unique_consecutive(
        a, return_inverse=True, return_counts=True),
         [Fixed([1, 1, 2, 2, 3, 1, 1, 2], "int64")], grad=False),
    Case("unique_consecutive_dim", lambda m, a: a.unique_consecutive(dim=0),
         [Fixed([[1, 2], [1, 2], [3, 4], [1, 2]], "int64")], grad=False),
    Case("searchsorted", lambda m, s, v: m.searchsorted(s, v), [SORTED, VALUES], grad=False),
    Case("searchsorted_right", lambda m, s, v: m.searchsorted(s, v, right=True),
         [SORTED, VALUES], grad=False),
    Case("searchsorted_1d_side", lambda m, s, v: m.searchsorted(s[0], v, side="right",
                                                                out_int32=True),
         [SORTED, VALUES], grad=False),
    Case("searchsorted_sorter", lambda m, s, v: m.searchsorted(s, v, sorter=s.argsort()),
         [Float((2, 6), distinct=True), VALUES], grad=False),
    Case("bucketize", lambda m, v, b: m.bucketize(v, b), [VALUES, Fixed([-1.0, 0.0, 1.0, 4.0])],
         grad=False),
    Case("bucketize_right", lambda m, v, b: m.bucketize(v, b, right=True),
         [VALUES, Fixed([-1.0, 0.0, 1.0, 4.0])], grad=False),
    Case("isin", lambda m, a, b: m.isin(a, b), [REPEATS, Int((4,), 0, 4)], grad=False),
    Case("isin_invert_scalar", lambda m, a: m.isin(a, 3, invert=True), [REPEATS],
         grad=False),
]

test_forward, test_grad, test_gradcheck, test_gradgrad = run_family(CASES)


def test_sort_is_a_named_pair():
    out = dl.tensor([3.0, 1.0, 2.0]).sort()
    assert type(out).__name__ == "sort"
    assert out.values.tolist() == [1.0, 2.0, 3.0] and out.indices.tolist() == [1, 2, 0]


def test_sort_gradient_goes_back_to_the_picked_positions():
    x = dl.tensor([3.0, 1.0, 2.0], requires_grad=True)
    x.sort().values[0].backward()
    assert x.grad.tolist() == [0.0, 1.0, 0.0]


@pytest.mark.parametrize("call, message", [
    (lambda x: x.topk(6), r"topk: k=6 is out of range for a dimension of size 5; valid: "
                          r"0 <= k <= 5"),
    (lambda x: x.kthvalue(0), r"kthvalue: k=0 is out of range.*valid: 1 <= k <= 5"),
    (lambda x: x.sort(2), r"sort: dim 2 is out of range"),
    (lambda x: dl.searchsorted(x, dl.zeros(3, 2)), r"searchsorted: .*same leading dims"),
    (lambda x: dl.bucketize(x[0], x), r"bucketize: boundaries must be 1-d"),
])
def test_bad_arguments_are_shape_errors(call, message):
    with pytest.raises(dl.ShapeError, match=message):
        call(dl.zeros(2, 5))


def test_unique_of_floats_matches_torch_with_nan_free_input():
    values = np.array([2.5, -1.0, 2.5, 0.0, -1.0])
    ours = dl.unique(dl.tensor(values), return_counts=True)
    ref = torch.unique(torch.tensor(values), return_counts=True)
    for o, r in zip(ours, ref):
        assert o.tolist() == r.tolist()
