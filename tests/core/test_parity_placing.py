"""Parity cases for ops/placing.py (index_copy, index_fill, masked_scatter, take, put and the
in-place index_put_/put_/index_copy_/index_fill_/masked_scatter_) against torch."""

from __future__ import annotations

import dlfree as dl

import pytest

from support.parity import Case, run_family
from support.specs import Bool, Fixed, Float

S = (4, 3)
IDX = Fixed([2, 0], "int64")

CASES = [
    Case("index_copy", lambda m, a, i, s: m.index_copy(a, 0, i, s), [S, IDX, (2, 3)],
         gradgrad=True),
    Case("index_copy_dim1", lambda m, a, i, s: a.index_copy(1, i, s), [S, IDX, (4, 2)]),
    Case("index_fill", lambda m, a, i: m.index_fill(a, 1, i, -1.5), [S, IDX], gradgrad=True),
    Case("index_fill_tensor_value", lambda m, a, i, v: a.index_fill(0, i, v),
         [S, IDX, ()], gradgrad=True),
    Case("masked_scatter", lambda m, a, k, s: m.masked_scatter(a, k, s), [S, Bool(S), (12,)],
         gradgrad=True),
    Case("masked_scatter_broadcast", lambda m, a, k, s: a.masked_scatter(k, s),
         [S, Bool((3,)), (4, 3)]),
    Case("take", lambda m, a, i: m.take(a, i), [S, Fixed([[0, 11], [5, 5]], "int64")],
         gradgrad=True),
    Case("put", lambda m, a, i, s: m.put(a, i, s), [S, Fixed([1, 7, 3], "int64"), (3,)],
         gradgrad=True),
    Case("put_accumulate", lambda m, a, i, s: a.put(i, s, accumulate=True),
         [S, Fixed([1, 7, 1], "int64"), (3,)], gradgrad=True),
    Case("index_put_", lambda m, a, i, v: (a * 1).index_put_((i,), v), [S, IDX, (3,)],
         gradgrad=True),
    Case("put_", lambda m, a, i, s: (a * 1).put_(i, s, accumulate=True),
         [S, Fixed([1, 7, 1], "int64"), (3,)]),
    Case("index_copy_", lambda m, a, i, s: (a * 1).index_copy_(0, i, s), [S, IDX, (2, 3)]),
    Case("index_fill_", lambda m, a, i: (a * 1).index_fill_(1, i, 2.0), [S, IDX]),
    Case("masked_scatter_", lambda m, a, k, s: (a * 1).masked_scatter_(k, s),
         [S, Bool(S), Float((12,))]),
]

test_forward, test_grad, test_gradcheck, test_gradgrad = run_family(CASES)


def test_shapes_that_do_not_fit_are_shape_errors():
    x = dl.zeros(4, 3)
    with pytest.raises(dl.ShapeError, match=r"index_copy: source of shape \(3, 3\) does not "
                                            r"fit; valid: \(2, 3\)"):
        x.index_copy(0, dl.tensor([0, 1]), dl.ones(3, 3))
    with pytest.raises(dl.ShapeError, match="masked_scatter: the mask selects 12 elements but "
                                            "source has only 2"):
        x.masked_scatter(dl.ones(4, 3).bool(), dl.ones(2))
    with pytest.raises(dl.ShapeError, match="put: index has 2 elements but source has 1"):
        x.put(dl.tensor([0, 1]), dl.ones(1))
