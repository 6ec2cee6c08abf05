"""Parity cases for indexing ops (see parity.py), and their errors.

As in test_parity_shape.py, gradgrad rows cube the outputs of these linear ops so that
the second derivative runs through the op's backward.
"""

from __future__ import annotations

import warnings

import dlfree as dl

import numpy as np
import pytest

from support.parity import Case, cubed, run_family
from support.specs import Bool, Fixed, Int

S = (3, 4)
S3 = (3, 4, 5)


def without_warnings(fn):
    """`fn` with warnings silenced (torch deprecates scatter's reduce= but still runs it)."""

    def call(m, *xs):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn(m, *xs)

    return call


# Index tensors whose rows hold no repeats, for scatter/index_put rows where a repeated
# index would make the result depend on the write order.
ROWS_UNIQUE = Fixed([[0, 3], [2, 1], [1, 0]])
COLS_UNIQUE = Fixed([[2, 0, 1, 0], [0, 1, 2, 1]])

CASES = [
    # basic indexing: views
    Case("int", cubed(lambda m, a: a[1]), [S], gradgrad=True),
    Case("int_neg", lambda m, a: a[-1, -2], [S]),
    Case("slice", lambda m, a: a[1:3], [S]),
    Case("slice_step", cubed(lambda m, a: a[::2, 1::3]), [S3], gradgrad=True),
    Case("slice_clamped", lambda m, a: a[-10:100, 2:], [S]),
    Case("slice_empty", lambda m, a: a[2:2], [S], gradcheck=False),
    Case("none_ellipsis", lambda m, a: a[None, ..., 1], [S3]),
    Case("ellipsis_mid", cubed(lambda m, a: a[1, ..., None, 2]), [(2, 3, 4, 5)], gradgrad=True),
    Case("0d_none", lambda m, a: a[None], [()]),
    Case("0d_ellipsis", lambda m, a: a[...], [()]),
    Case("0d_tensor_int", lambda m, a, i: a[:, i], [S, Fixed(2)]),
    Case("slice_tensor_bounds", lambda m, a, i: a[i:], [S, Fixed(1)]),
    # advanced indexing: copies
    Case("list_repeated", cubed(lambda m, a: a[[0, 2, 2, -1]]), [S], gradgrad=True),
    Case("tensor_repeated", cubed(lambda m, a, i: a[i]), [S, Int((7,), 0, 3)], gradgrad=True),
    Case("tensor_2d", lambda m, a, i: a[i], [S, Int((2, 3), -3, 3)]),
    Case("numpy_array", lambda m, a: a[:, np.array([3, 0, 3])], [S]),
    Case("empty_list", lambda m, a: a[[]], [S], gradcheck=False),
    Case("two_broadcast", cubed(lambda m, a, i, j: a[i, j]),
         [S, Int((2, 1), 0, 3), Int((3,), 0, 4)], gradgrad=True),
    Case("split_by_slice", cubed(lambda m, a, i, j: a[i, :, j]),
         [S3, Int((2,), 0, 3), Int((2,), 0, 5)], gradgrad=True),
    Case("adjacent_middle", lambda m, a, i, j: a[:, i, j],
         [S3, Int((2, 2), 0, 4), Int((2,), 0, 5)]),
    Case("int_then_slice_then_array", lambda m, a, i: a[1, :, i], [S3, Int((2,), 0, 5)]),
    Case("array_then_int", lambda m, a, i: a[i, :, -1], [S3, Int((4,), 0, 3)]),
    Case("array_none", lambda m, a, i: a[i, None], [S, Int((2,), 0, 3)]),
    Case("array_slice_step", lambda m, a, i: a[1:, i, ::2], [S3, Int((3,), 0, 4)]),
    Case("mask_full", cubed(lambda m, a, k: a[k]), [S, Bool(S)], gradgrad=True),
    Case("mask_rows", lambda m, a, k: a[k], [S, Bool((3,))]),
    Case("mask_middle", cubed(lambda m, a, k: a[:, k]), [S3, Bool((4,))], gradgrad=True),
    Case("mask_2d_of_3d", lambda m, a, k: a[k], [S3, Bool(S)]),
    Case("mask_all_false", lambda m, a, k: a[k], [S, Fixed([False] * 3)], gradcheck=False),
    Case("mask_and_array", lambda m, a, k, i: a[k, i], [S, Fixed([True, False, True]),
                                                        Int((2,), 0, 4)]),
    Case("bool_true", lambda m, a: a[True], [S]),
    Case("bool_false", lambda m, a: a[False], [S], gradcheck=False),
    Case("bool_with_int", lambda m, a: a[1, True], [S]),
    # index_put
    Case("index_put", cubed(lambda m, a, i, v: m.index_put(a, (i,), v)),
         [S, Fixed([2, 0]), (2, 4)], gradgrad=True),
    Case("index_put_broadcast", lambda m, a, i, v: a.index_put((i,), v),
         [S, Fixed([1, -1]), (4,)]),
    Case("index_put_accumulate", cubed(lambda m, a, i, v: m.index_put(a, (i,), v, True)),
         [S, Int((6,), 0, 3), (6, 4)], gradgrad=True),
    Case("index_put_two", lambda m, a, i, j, v: m.index_put(a, (i, j), v, accumulate=True),
         [S, Int((5,), 0, 3), Int((5,), 0, 4), (5,)]),
    Case("index_put_mask_0d", cubed(lambda m, a, k, v: m.index_put(a, (k,), v)),
         [S, Bool(S), ()], gradgrad=True),
    # gather / scatter
    Case("gather", cubed(lambda m, a, i: m.gather(a, 1, i)), [S, Int((3, 6), 0, 4)],
         gradgrad=True),
    Case("gather_smaller", lambda m, a, i: a.gather(0, i), [(4, 5), Int((2, 3), 0, 4)]),
    Case("gather_neg_dim", lambda m, a, i: a.gather(-1, i), [S3, Int((2, 4, 2), 0, 5)]),
    Case("scatter", cubed(lambda m, a, i, s: m.scatter(a, 1, i, s)),
         [S, ROWS_UNIQUE, (3, 2)], gradgrad=True),
    # torch's backward fails for a source larger than the index (see the test below)
    Case("scatter_larger_src", lambda m, a, i, s: a.scatter(0, i, s), [S, COLS_UNIQUE, (3, 5)],
         grad=False),
    Case("scatter_value", lambda m, a, i: a.scatter(1, i, 2.5), [S, ROWS_UNIQUE]),
    Case("scatter_value_kw", lambda m, a, i: m.scatter(a, 0, i, value=-1.0), [S, COLS_UNIQUE]),
    Case("scatter_reduce_add", without_warnings(lambda m, a, i, s: a.scatter(0, i, s,
                                                                              reduce="add")),
         [S, Int((5, 4), 0, 3), (5, 4)], grad=False),
    Case("scatter_reduce_multiply",
         without_warnings(lambda m, a, i, s: a.scatter(1, i, s, reduce="multiply")),
         [S, Int((3, 6), 0, 4), (3, 6)], grad=False),
    Case("scatter_add", cubed(lambda m, a, i, s: m.scatter_add(a, 0, i, s)),
         [S, Int((5, 4), 0, 3), (5, 4)], gradgrad=True),
    Case("scatter_add_neg_dim", lambda m, a, i, s: a.scatter_add(-1, i, s),
         [S, Int((2, 6), 0, 4), (2, 6)]),
    Case("scatter_add_larger_src", lambda m, a, i, s: a.scatter_add(1, i, s),
         [S, Int((2, 6), 0, 4), (3, 7)], grad=False),
    Case("take_along_dim", cubed(lambda m, a, i: m.take_along_dim(a, i, 1)),
         [S, Int((3, 2), 0, 4)], gradgrad=True),
    Case("take_along_dim_broadcast", lambda m, a, i: a.take_along_dim(i, -1),
         [S3, Int((1, 4, 2), 0, 5)]),
    Case("take_along_dim_flat", lambda m, a, i: m.take_along_dim(a, i), [S, Int((5,), 0, 12)]),
    # index_select / index_add
    Case("index_select", cubed(lambda m, a, i: m.index_select(a, 0, i)),
         [S, Int((5,), 0, 3)], gradgrad=True),
    Case("index_select_neg_dim", lambda m, a, i: a.index_select(-1, i), [S3, Int((3,), 0, 5)]),
    Case("index_select_0d_index", lambda m, a, i: a.index_select(1, i), [S, Fixed(3)]),
    Case("index_select_0d_input", lambda m, a, i: a.index_select(0, i), [(), Fixed([0])]),
    Case("index_add", cubed(lambda m, a, i, s: m.index_add(a, 1, i, s, alpha=-2.0)),
         [S, Int((6,), 0, 4), (3, 6)], gradgrad=True),
    Case("index_add_method", lambda m, a, i, s: a.index_add(0, i, s), [S, Fixed([2, 2]), (2, 4)]),
    # masks
    Case("masked_fill", cubed(lambda m, a, k: m.masked_fill(a, k, 0.5)), [S, Bool(S)],
         gradgrad=True),
    Case("masked_fill_broadcast", lambda m, a, k: a.masked_fill(k, -1.0), [S, Bool((3, 1))]),
    Case("masked_fill_expands", lambda m, a, k: a.masked_fill(k, 2.0), [(4,), Bool((2, 4))]),
    Case("masked_fill_tensor_value", cubed(lambda m, a, k, v: a.masked_fill(k, v)),
         [S, Bool(S), ()], gradgrad=True),
    Case("masked_fill_int", lambda m, a, k: a.masked_fill(k, 2.7), [Int(S, 0, 9), Bool(S)],
         grad=False),
    Case("masked_select", cubed(lambda m, a, k: m.masked_select(a, k)), [S, Bool(S)],
         gradgrad=True),
    Case("masked_select_broadcast", lambda m, a, k: a.masked_select(k), [S, Bool((4,))]),
    Case("nonzero", lambda m, a: m.nonzero(a), [Fixed([[0.0, 1.5], [0.0, 0.0], [2.0, -1.0]])],
         grad=False),
    Case("nonzero_tuple", lambda m, a: a.nonzero(as_tuple=True), [Bool((2, 3, 4))], grad=False),
    Case("nonzero_0d", lambda m, a: m.nonzero(a), [Fixed(3.0)], grad=False),
    Case("nonzero_empty", lambda m, a: m.nonzero(a), [Fixed(np.zeros((2, 0)))], grad=False),
    Case("argwhere", lambda m, a: m.argwhere(a), [Int((3, 3), 0, 2)], grad=False),
    Case("where_single", lambda m, a: m.where(a), [Bool(S)], grad=False),
    # triangles
    Case("tril", cubed(lambda m, a: m.tril(a)), [S], gradgrad=True),
    Case("triu_k", cubed(lambda m, a: a.triu(1)), [S], gradgrad=True),
    Case("tril_batched_neg", lambda m, a: a.tril(-1), [S3]),
    Case("triu_wide_neg", lambda m, a: m.triu(a, -2), [(2, 5)]),
]

test_forward, test_grad, test_gradcheck, test_gradgrad = run_family(CASES)


def test_getitem_gradient_accumulates_repeats():
    x = dl.tensor([1.0, 2.0, 3.0], requires_grad=True)
    x[dl.tensor([0, 0, 2, 0])].sum().backward()
    assert x.grad.tolist() == [3.0, 0.0, 1.0]


ERRORS = [
    ("int out of range", lambda x: x[3], IndexError, "valid: [-3, 2]"),
    ("neg int out of range", lambda x: x[0, -5], IndexError, "dimension 1 with size 4"),
    ("tensor out of range", lambda x: x[dl.tensor([0, 3])], IndexError, "index 3"),
    ("list out of range", lambda x: x[:, [-5]], IndexError, "valid: [-4, 3]"),
    ("float tensor index", lambda x: x[dl.tensor([0.0])], dl.DTypeError, "float32"),
    ("float scalar index", lambda x: x[1.0], dl.DTypeError, "(3, 4)"),
    ("uint8 index", lambda x: x[dl.tensor([1], dtype=dl.uint8)], dl.DTypeError, ".bool()"),
    ("negative step", lambda x: x[::-1], ValueError, "greater than zero"),
    ("too many indices", lambda x: x[0, 0, 0], IndexError, "too many indices"),
    ("two ellipses", lambda x: x[..., ...], IndexError, "single ellipsis"),
    ("mask shape", lambda x: x[dl.tensor([True, False])], IndexError, "mask"),
    ("gather out of range", lambda x: x.gather(1, dl.tensor([[4]])), IndexError,
     "valid: [0, 3]"),
    ("gather negative", lambda x: x.gather(0, dl.tensor([[-1]])), IndexError, "valid: [0, 2]"),
    ("gather float index", lambda x: x.gather(0, dl.tensor([[0.0]])), dl.DTypeError, ".long()"),
    ("gather ndim", lambda x: x.gather(0, dl.tensor([0])), dl.ShapeError, "dimensions"),
    ("index_select 2-d", lambda x: x.index_select(0, dl.tensor([[0]])), dl.ShapeError, "1-d"),
    ("index_select range", lambda x: x.index_select(0, dl.tensor([3])), IndexError, "size 3"),
    ("index_add shape", lambda x: x.index_add(0, dl.tensor([0]), dl.ones(2, 4)), dl.ShapeError,
     "(1, 4)"),
    ("masked_fill mask dtype", lambda x: x.masked_fill(dl.ones(3, 4), 0.0), dl.DTypeError,
     "bool"),
    ("masked_fill value shape", lambda x: x.masked_fill(x > 0, dl.ones(2)), dl.ShapeError,
     "0-d"),
    ("index_put values", lambda x: x.index_put((dl.tensor([0, 1]),), dl.ones(3)), dl.ShapeError,
     "(3,)"),
    ("scatter reduce", lambda x: x.scatter(0, dl.tensor([[0]]), 1.0, reduce="max"), ValueError,
     "'multiply'"),
    ("tril 1-d", lambda x: x[0].tril(), dl.ShapeError, "matrix"),
]


@pytest.mark.parametrize("name, call, error, text", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors(name, call, error, text):
    x = dl.zeros(3, 4)
    with pytest.raises(error) as info:
        call(x)
    assert text in str(info.value), str(info.value)


def test_scatter_multiply_has_no_derivative():
    x = dl.ones(2, 2, requires_grad=True)
    out = x.scatter(0, dl.tensor([[1, 0]]), dl.ones(1, 2), reduce="multiply")
    with pytest.raises(dl.AutogradError, match="not implemented"):
        out.sum().backward()


def test_scatter_from_larger_source_has_gradients():
    """torch reads only the index-shaped block of a larger source but cannot differentiate
    that; dl.free gives the source zeros outside the block."""
    x = dl.randn(3, 4, dtype=dl.float64, requires_grad=True)
    src = dl.randn(3, 5, dtype=dl.float64, requires_grad=True)
    index = dl.tensor([[2, 0, 1, 0], [0, 1, 2, 1]])
    assert dl.autograd.gradcheck(lambda a, s: a.scatter(0, index, s), [x, src])
    assert dl.autograd.gradcheck(lambda a, s: a.scatter_add(0, index, s), [x, src])


def test_index_put_values_with_leading_unit_dims():
    """Values may carry extra leading size-1 dims (torch's `x[:2] = v` accepts them)."""
    x = dl.randn(3, 4, dtype=dl.float64, requires_grad=True)
    v = dl.randn(1, 2, 4, dtype=dl.float64, requires_grad=True)
    out = dl.index_put(x, slice(0, 2), v)
    np.testing.assert_array_equal(out[:2].detach().numpy(), v[0].detach().numpy())
    assert dl.autograd.gradcheck(lambda a, b: dl.index_put(a, slice(0, 2), b), [x, v])
