"""Parity cases for matrix products, einsum, tensordot and norms (see parity.py)."""

from __future__ import annotations

import dlfree as dl

import numpy as np
import pytest

from support.parity import Case, run_family
from support.specs import Float

INF = float("inf")


def spread(shape):
    """Distinct values in [-1, 2]: no two share an absolute value, so max |x| never ties."""
    return Float(shape, -1.0, 2.0, distinct=True)


def lin(m):
    """`dl.linalg` or `torch.linalg`: the same call for both libraries."""
    return m.linalg


CASES = [
    # matmul and @: every rank combination and batch broadcasting
    Case("matmul_2d", lambda m, a, b: a @ b, [(3, 4), (4, 5)], gradgrad=True),
    Case("matmul_1d_2d", lambda m, a, b: m.matmul(a, b), [(4,), (4, 5)], gradgrad=True),
    Case("matmul_2d_1d", lambda m, a, b: a @ b, [(3, 4), (4,)], gradgrad=True),
    Case("matmul_1d_1d", lambda m, a, b: a @ b, [(4,), (4,)], gradgrad=True),
    Case("matmul_1d_nd", lambda m, a, b: a @ b, [(4,), (2, 3, 4, 5)], gradgrad=True),
    Case("matmul_nd_1d", lambda m, a, b: a @ b, [(2, 3, 4), (4,)], gradgrad=True),
    Case("matmul_batch", lambda m, a, b: a.matmul(b), [(2, 3, 4), (2, 4, 5)], gradgrad=True),
    Case("matmul_broadcast", lambda m, a, b: a @ b, [(2, 1, 3, 4), (5, 4, 2)], gradgrad=True),
    Case("matmul_broadcast_2d", lambda m, a, b: a @ b, [(3, 4), (2, 4, 5)], gradgrad=True),
    Case("matmul_empty_k", lambda m, a, b: a @ b, [(3, 0), (0, 2)], gradcheck=False, gradgrad=True),
    Case("matmul_const_rhs", lambda m, a, b: a @ b, [(3, 4), Float((4, 2), grad=False)],
         gradgrad=True),
    Case("mm", lambda m, a, b: m.mm(a, b), [(2, 3), (3, 4)], gradgrad=True),
    Case("bmm", lambda m, a, b: a.bmm(b), [(2, 3, 4), (2, 4, 3)], gradgrad=True),
    Case("dot", lambda m, a, b: m.dot(a, b), [(5,), (5,)], gradgrad=True),
    Case("outer", lambda m, a, b: m.outer(a, b), [(3,), (4,)], gradgrad=True),
    Case("tensordot_int", lambda m, a, b: m.tensordot(a, b, 2), [(2, 3, 4), (3, 4, 5)],
         gradgrad=True),
    Case("tensordot_lists", lambda m, a, b: m.tensordot(a, b, ([0, 2], [2, 0])),
         [(2, 3, 4), (4, 5, 2)], gradgrad=True),
    Case("tensordot_0", lambda m, a, b: m.tensordot(a, b, 0), [(2,), (3,)], gradgrad=True),
    # einsum
    Case("einsum_matmul", lambda m, a, b: m.einsum("ij,jk->ik", a, b), [(2, 3), (3, 4)],
         gradgrad=True),
    Case("einsum_batch", lambda m, a, b: m.einsum("bij,bjk->bik", a, b),
         [(2, 3, 4), (2, 4, 3)], gradgrad=True),
    Case("einsum_implicit", lambda m, a, b: m.einsum("Ba,ab", a, b), [(2, 3), (3, 4)],
         gradgrad=True),
    Case("einsum_list", lambda m, a, b: m.einsum("i,i->", [a, b]), [(4,), (4,)], gradgrad=True),
    Case("einsum_trace", lambda m, a: m.einsum("ii", a), [(3, 3)], gradgrad=True),
    Case("einsum_diagonal", lambda m, a: m.einsum("ii->i", a), [(3, 3)], gradgrad=True),
    Case("einsum_diag_mixed", lambda m, a, b: m.einsum("iij,jk->ki", a, b),
         [(3, 3, 2), (2, 4)], gradgrad=True),
    Case("einsum_ellipsis", lambda m, a, b: m.einsum("...ij,...jk->...ik", a, b),
         [(5, 1, 2, 3), (4, 3, 2)], gradgrad=True),
    Case("einsum_ellipsis_sum", lambda m, a: m.einsum("i...->...", a), [(3, 2, 4)], gradgrad=True),
    Case("einsum_broadcast_label", lambda m, a, b: m.einsum("ij,jk->ik", a, b),
         [(2, 1), (3, 4)], gradgrad=True),
    Case("einsum_sum_all", lambda m, a: m.einsum("ijk->", a), [(2, 3, 4)], gradgrad=True),
    Case("einsum_transpose", lambda m, a: m.einsum("ij->ji", a), [(2, 3)], gradgrad=True),
    Case("einsum_outer", lambda m, a, b: m.einsum("i,j->ij", a, b), [(3,), (2,)], gradgrad=True),
    Case("einsum_three", lambda m, a, b, c: m.einsum("ij,jk,kl->il", a, b, c),
         [(2, 3), (3, 4), (4, 2)], gradgrad=True),
    Case("einsum_bilinear", lambda m, a, w, b: m.einsum("bn,anm,bm->ba", a, w, b),
         [(2, 3), (4, 3, 5), (2, 5)], gradgrad=True),
    Case("einsum_spaces", lambda m, a, b: m.einsum("b i , b i -> b", a, b), [(2, 3), (2, 3)],
         gradgrad=True),
    # dl.linalg norms
    Case("linalg_norm_vector", lambda m, a: lin(m).norm(a), [(2, 3, 4)], gradgrad=True),
    Case("linalg_norm_fro", lambda m, a: lin(m).norm(a, "fro"), [(3, 4)], gradgrad=True),
    Case("linalg_norm_ord1", lambda m, a: lin(m).norm(a, 1), [spread((3, 4))]),
    Case("linalg_norm_inf_dims", lambda m, a: lin(m).norm(a, INF, (2, 0)),
         [spread((3, 2, 4))]),
    Case("linalg_norm_vector_dim", lambda m, a: lin(m).norm(a, 3, 1, keepdim=True), [(3, 4)],
         gradgrad=True),
    Case("vector_norm_dims", lambda m, a: lin(m).vector_norm(a, 2, (0, 2)), [(2, 3, 4)],
         gradgrad=True),
    Case("vector_norm_inf", lambda m, a: lin(m).vector_norm(a, INF, -1),
         [spread((3, 4))]),
    Case("vector_norm_dtype", lambda m, a: lin(m).vector_norm(a, dtype=m.float64), [(3, 4)],
         gradgrad=True),
    Case("vector_norm_1", lambda m, a: lin(m).vector_norm(a, 1, keepdim=True), [(3, 4)]),
    Case("matrix_norm_fro_batch", lambda m, a: lin(m).matrix_norm(a), [(2, 3, 4)],
         gradgrad=True),
    Case("matrix_norm_1", lambda m, a: lin(m).matrix_norm(a, 1), [spread((2, 3, 4))]),
    Case("matrix_norm_neg1_keepdim", lambda m, a: lin(m).matrix_norm(a, -1, keepdim=True),
         [spread((3, 4))]),
    Case("matrix_norm_inf", lambda m, a: lin(m).matrix_norm(a, INF, (0, 2)),
         [spread((3, 2, 4))]),
    Case("matrix_norm_neg_inf", lambda m, a: lin(m).matrix_norm(a, -INF),
         [spread((3, 4))]),
    Case("matrix_norm_nuc", lambda m, a: lin(m).matrix_norm(a, "nuc"), [(2, 3, 4)],
         gradgrad=True),
    Case("matrix_norm_2_keepdim", lambda m, a: lin(m).matrix_norm(a, 2, (-1, 0), keepdim=True),
         [(4, 2, 3)]),
    Case("norm_nuc", lambda m, a: a.norm(p="nuc"), [(3, 4)]),
]

test_forward, test_grad, test_gradcheck, test_gradgrad = run_family(CASES)


@pytest.mark.parametrize("call, message", [
    (lambda: dl.zeros(2, 3) @ dl.zeros(2, 3),
     r"matmul: shapes \(2, 3\) and \(2, 3\) cannot be multiplied.*valid: the last dim"),
    (lambda: dl.zeros(2, 2, 3) @ dl.zeros(3, 3, 4),
     r"matmul: batch dimensions of \(2, 2, 3\) and \(3, 3, 4\) do not broadcast"),
    (lambda: dl.mm(dl.zeros(2, 3), dl.zeros(3)),
     r"mm: expected two 2-D matrices, got shapes \(2, 3\) and \(3,\); valid: \(n, k\)"),
    (lambda: dl.mm(dl.zeros(2, 3), dl.zeros(4, 3)), r"mm: shapes \(2, 3\) and \(4, 3\)"),
    (lambda: dl.bmm(dl.zeros(2, 3, 4), dl.zeros(3, 4, 5)),
     r"bmm: expected two 3-D batches of the same size.*\(2, 3, 4\) and \(3, 4, 5\)"),
    (lambda: dl.dot(dl.zeros(3), dl.zeros(4)),
     r"dot: expected two 1-D tensors of the same size, got shapes \(3,\) and \(4,\)"),
    (lambda: dl.outer(dl.zeros(3), dl.zeros(2, 2)), r"outer: expected two 1-D tensors"),
    (lambda: dl.einsum("ij,jk->ik", dl.zeros(2, 3), dl.zeros(4, 5)),
     r"einsum: subscript 'j' has size 4 in operand 1 but 3 elsewhere.*\[\(2, 3\), \(4, 5\)\]"),
    (lambda: dl.einsum("ijk->i", dl.zeros(2, 3)),
     r"einsum: operand 0 has 2 dimension\(s\) but subscript 'ijk' names 3"),
    (lambda: dl.einsum("ij,jk", dl.zeros(2, 3)), r"einsum: 2 subscript\(s\) for 1 operand"),
    (lambda: dl.einsum("ii->i", dl.zeros(2, 3)),
     r"einsum: subscript 'i' is repeated in operand 0 with different sizes"),
    (lambda: dl.einsum("ij->k", dl.zeros(2, 3)), r"einsum: output subscript 'k'"),
    (lambda: dl.einsum("i1->i", dl.zeros(2, 3)), r"einsum: invalid character\(s\) \['1'\]"),
    (lambda: dl.tensordot(dl.zeros(2, 3), dl.zeros(2, 3), 1),
     r"tensordot: cannot contract dims \[1\] of shape \(2, 3\) with dims \[0\] of shape"),
    (lambda: dl.linalg.matrix_norm(dl.zeros(3)),
     r"linalg.matrix_norm: needs a tensor with at least 2 dims.*shape \(3,\)"),
    (lambda: dl.linalg.norm(dl.zeros(2, 3, 4), 2),
     r"linalg.norm: an input of shape \(2, 3, 4\) needs dim= when ord is given"),
])
def test_shape_errors_name_the_op_and_shapes(call, message):
    with pytest.raises(dl.ShapeError, match=message):
        call()


def test_dot_refuses_mixed_dtypes_like_torch():
    with pytest.raises(dl.DTypeError, match="dot: expected both vectors to have the same dtype"):
        dl.dot(dl.zeros(3), dl.zeros(3, dtype=dl.float64))


@pytest.mark.parametrize("equation", ["ij->ji", "ii->i", "ij->ij"])
def test_einsum_output_owns_its_memory(equation):
    a = dl.ones(3, 3)
    assert not np.shares_memory(dl.einsum(equation, a).array, a.array)

