"""Parity cases for the scatter reductions (see parity.py): scatter_reduce with every
reduce and include_self, index_add, index_reduce, segment_reduce; then the errors.

Max/min rows draw distinct values from disjoint grids (input and source never tie), so
that finite differences never cross a tie; the tie rows check torch's even split of the
gradient with forward and gradient checks only.
"""

from __future__ import annotations

import dlfree as dl

import numpy as np
import pytest

from support.parity import Case, cubed, run_family
from support.specs import Fixed, Float, Int

S = (4, 3)
X = Float(S, -1.93, 1.87, distinct=True)  # input values: a grid apart from the source's
SRC = Float((6, 3), -2.0, 2.0, distinct=True)
IDX = Int((6, 3), 0, 3)  # rows 0-2 get sources, row 3 keeps its input
ROW_IDX = Fixed([2, 0, 2, 1, 0, 2])
ONES = Float(S, 1.0, 1.0)  # every value 1: all tie
# a 0/1 mask for the prod rows: groups with no zero, one zero and two zeros
ZEROS = Fixed([[1, 0, 1], [1, 1, 1], [0, 1, 1], [1, 1, 0], [1, 0, 1], [1, 1, 1]],
              dtype="float32")
PROD_IDX = Fixed([[0, 0, 1], [1, 1, 1], [0, 2, 2], [2, 2, 2], [1, 0, 0], [2, 1, 0]])


# torch calls index_reduce beta, with a warning (the suite turns warnings into errors)
BETA = (pytest.mark.filterwarnings(r"ignore:index_reduce\(\) is in beta:UserWarning"),)


def _scatter_call(reduce, include_self):
    return lambda m, a, i, s: a.scatter_reduce(0, i, s, reduce, include_self=include_self)


def _slices_call(reduce, include_self):
    """scatter_reduce with a 1-d index broadcast along dim 1: the grouped-slices path."""
    return lambda m, a, i, s: m.scatter_reduce(a, 0, i.reshape(-1, 1).expand(6, 3), s, reduce,
                                               include_self=include_self)


def _index_reduce_call(reduce, include_self):
    return lambda m, a, i, s: a.index_reduce(0, i, s, reduce, include_self=include_self)


def _segment_call(reduce):
    return lambda m, x, n: m.segment_reduce(x, reduce, lengths=n)


def _scatter_rows():
    rows = []
    for reduce in ("sum", "mean", "amax", "amin", "prod"):
        for include_self in (True, False):
            tag = f"{reduce}_{'self' if include_self else 'noself'}"
            twice = reduce != "prod"  # torch has no double backward for prod
            fn = _scatter_call(reduce, include_self)
            rows.append(Case(f"scatter_reduce_{tag}", cubed(fn) if twice else fn,
                             [X, IDX, SRC], gradgrad=twice))
            rows.append(Case(f"scatter_reduce_slices_{tag}", _slices_call(reduce, include_self),
                             [X, ROW_IDX, SRC]))
    return rows


CASES = [
    *_scatter_rows(),
    Case("scatter_reduce_dim1", lambda m, a, i, s: a.scatter_reduce(1, i, s, "mean"),
         [(3, 5), Int((3, 4), 0, 5), (3, 4)]),
    Case("scatter_reduce_neg_dim_3d", lambda m, a, i, s: a.scatter_reduce(-1, i, s, "amax"),
         [Float((2, 3, 4), -1.93, 1.87, distinct=True), Int((2, 3, 5), 0, 4),
          Float((2, 3, 5), distinct=True)]),
    # torch's backward fails for a source larger than the index (as for scatter)
    Case("scatter_reduce_larger_src", lambda m, a, i, s: a.scatter_reduce(0, i, s, "sum"),
         [S, Int((2, 2), 0, 4), (5, 4)], grad=False),
    Case("scatter_reduce_amax_ties", lambda m, a, i, s: a.scatter_reduce(0, i, s, "amax"),
         [ONES, IDX, Float((6, 3), 1.0, 1.0)], gradcheck=False),
    Case("scatter_reduce_amin_ties_noself",
         lambda m, a, i, s: a.scatter_reduce(0, i, s, "amin", include_self=False),
         [ONES, IDX, Float((6, 3), 1.0, 1.0)], gradcheck=False),
    Case("scatter_reduce_prod_zeros",
         lambda m, a, i, s, k: a.scatter_reduce(0, i, s * k, "prod"),
         [S, PROD_IDX, (6, 3), ZEROS]),
    Case("scatter_reduce_prod_zeros_noself",
         lambda m, a, i, s, k: a.scatter_reduce(0, i, s * k, "prod", include_self=False),
         [S, PROD_IDX, (6, 3), ZEROS]),
    Case("scatter_reduce_int_mean", lambda m, a, i, s: a.scatter_reduce(0, i, s, "mean"),
         [Int(S, -9, 9), IDX, Int((6, 3), -9, 9)], grad=False),
    # index_add / index_reduce
    Case("index_add_rows", cubed(lambda m, a, i, s: a.index_add(0, i, s)),
         [S, ROW_IDX, (6, 3)], gradgrad=True),
    Case("index_add_dim1_alpha", lambda m, a, i, s: m.index_add(a, 1, i, s, alpha=0.5),
         [(2, 4, 3), Int((7,), 0, 4), (2, 7, 3)]),
    *[Case(f"index_reduce_{r}_{inc}", _index_reduce_call(r, inc), [X, ROW_IDX, SRC],
           gradgrad=r in ("mean", "amax"), marks=BETA)
      for r in ("prod", "mean", "amax", "amin") for inc in (True, False)],
    Case("index_reduce_dim1", lambda m, a, i, s: m.index_reduce(a, 1, i, s, "mean"),
         [(3, 4), Int((6,), 0, 4), (3, 6)], marks=BETA),
    # segment_reduce (torch has no double backward for it)
    # an empty segment gives nan or inf for mean, max and min: no finite differences there
    *[Case(f"segment_reduce_{r}", _segment_call(r),
           [Float((7, 3), distinct=True), Fixed([2, 0, 4, 1])], gradcheck=r in ("sum", "prod"))
      for r in ("sum", "mean", "max", "min", "prod")],
    *[Case(f"segment_reduce_{r}_no_empty", _segment_call(r),
           [Float((7, 2), distinct=True), Fixed([3, 1, 3])])
      for r in ("mean", "max", "min")],
    Case("segment_reduce_offsets", lambda m, x, o: m.segment_reduce(x, "sum", offsets=o),
         [(6, 2), Fixed([0, 3, 3, 6])]),
    Case("segment_reduce_initial_max",
         lambda m, x, n: m.segment_reduce(x, "max", lengths=n, initial=0.5),
         [Float((6,), distinct=True), Fixed([3, 0, 3])]),
    Case("segment_reduce_initial_mean",
         lambda m, x, n: m.segment_reduce(x, "mean", lengths=n, initial=2.0),
         [(6,), Fixed([3, 0, 3])]),
]

test_forward, test_grad, test_gradcheck, test_gradgrad = run_family(CASES)


def test_segment_softmax_is_a_softmax_per_group_and_stable():
    src = dl.tensor([[1000.0], [1001.0], [3.0], [-2.0], [5.0]])
    out = dl.segment_softmax(src, dl.tensor([0, 0, 2, 2, 2]), 4).numpy()[:, 0]
    a = np.exp([-1.0, 0.0])
    b = np.exp([-2.0, -7.0, 0.0])
    np.testing.assert_allclose(out, np.concatenate([a / a.sum(), b / b.sum()]), rtol=1e-6)


def test_segment_softmax_gradient_matches_finite_differences():
    src = dl.randn(7, 2, dtype=dl.float64, requires_grad=True)
    index = dl.tensor([1, 0, 1, 1, 3, 0, 3])
    assert dl.autograd.gradcheck(lambda s: dl.segment_softmax(s, index) ** 2, [src])
    assert dl.autograd.gradgradcheck(lambda s: dl.segment_softmax(s, index) ** 2, [src])


def test_in_place_forms():
    x = dl.zeros(3)
    assert x.index_reduce_(0, dl.tensor([0, 0]), dl.tensor([2.0, 4.0]), "mean") is x
    np.testing.assert_array_equal(x.numpy(), [2.0, 0.0, 0.0])
    x.scatter_reduce_(0, dl.tensor([2]), dl.tensor([5.0]), "amax")
    np.testing.assert_array_equal(x.numpy(), [2.0, 0.0, 5.0])


@pytest.mark.parametrize("call, error, match", [
    (lambda: dl.zeros(3).scatter_reduce(0, dl.tensor([0]), dl.ones(1), "max"), ValueError,
     r"scatter_reduce: reduce must be one of 'sum', 'prod', 'mean', 'amax', 'amin', got 'max'"),
    (lambda: dl.zeros(3).scatter_reduce(0, dl.tensor([3]), dl.ones(1), "sum"), IndexError,
     r"index 3 is out of bounds for dimension 0 with size 3"),
    (lambda: dl.zeros(3).scatter_reduce(0, dl.tensor([0]), dl.ones(1, dtype=dl.float64),
                                        "sum"), dl.DTypeError, r"expected src .*float32"),
    (lambda: dl.zeros(3).index_reduce(0, dl.tensor([0]), dl.ones(1), "sum"), ValueError,
     r"index_reduce: reduce must be one of 'prod', 'mean', 'amax', 'amin'"),
    (lambda: dl.zeros(3, 2).index_reduce(0, dl.tensor([0]), dl.ones(2, 2), "mean"),
     dl.ShapeError, r"source of shape \(2, 2\) does not fit.*must be \(1, 2\)"),
    (lambda: dl.segment_reduce(dl.ones(4), "sum", lengths=dl.tensor([1, 2])), dl.ShapeError,
     r"lengths \[1, 2\] must be non-negative and add up to the size 4"),
    (lambda: dl.segment_reduce(dl.ones(4), "sum"), ValueError, r"exactly one of lengths"),
    (lambda: dl.segment_softmax(dl.ones(2, 1), dl.tensor([0, 3]), 2), dl.ShapeError,
     r"index holds 3, which is not below num_segments=2"),
])
def test_errors_name_the_op_and_what_is_valid(call, error, match):
    with pytest.raises(error, match=match):
        call()
