"""Parity cases for ops/products.py (mv, inner, kron, cross, addmm and the BLAS family, cdist,
dist, renorm) against torch, and the matrix products' refusal of mixed dtypes (torch's)."""

from __future__ import annotations

import dlfree as dl
import dlfree.functional as F

import pytest

from support.parity import Case, run_family
from support.specs import Float

CASES = [
    Case("mv", lambda m, a, v: m.mv(a, v), [(3, 4), (4,)], gradgrad=True),
    Case("inner", lambda m, a, b: m.inner(a, b), [(2, 3, 4), (5, 4)], gradgrad=True),
    Case("inner_0d", lambda m, a, b: a.inner(b), [(), (3,)], gradgrad=True),
    Case("vdot", lambda m, a, b: m.vdot(a, b), [(5,), (5,)], gradgrad=True),
    Case("trace", lambda m, a: m.trace(a), [(3, 4)], gradgrad=True),
    Case("kron", lambda m, a, b: m.kron(a, b), [(2, 3), (3, 2)], gradgrad=True),
    Case("kron_ranks", lambda m, a, b: a.kron(b), [(2,), (2, 3, 2)], gradgrad=True),
    Case("cross", lambda m, a, b: m.cross(a, b, dim=1), [(4, 3), (4, 3)], gradgrad=True),
    Case("cross_broadcast", lambda m, a, b: a.cross(b, dim=0), [(3, 2), (3, 1)],
         gradgrad=True),
    Case("linalg_cross", lambda m, a, b: m.linalg.cross(a, b), [(2, 3), (2, 3)]),
    Case("addmm", lambda m, c, a, b: m.addmm(c, a, b), [(3,), (3, 4), (4, 3)], gradgrad=True),
    Case("addmm_scaled", lambda m, c, a, b: c.addmm(a, b, beta=0.5, alpha=2.0),
         [(3, 3), (3, 4), (4, 3)], gradgrad=True),
    Case("addmm_beta0", lambda m, c, a, b: m.addmm(c, a, b, beta=0), [(3, 3), (3, 4), (4, 3)]),
    Case("addmv", lambda m, c, a, v: m.addmv(c, a, v, alpha=3), [(3,), (3, 4), (4,)],
         gradgrad=True),
    Case("baddbmm", lambda m, c, a, b: m.baddbmm(c, a, b, beta=2), [(2, 3, 2), (2, 3, 4),
                                                                    (2, 4, 2)], gradgrad=True),
    Case("addbmm", lambda m, c, a, b: c.addbmm(a, b), [(3, 2), (2, 3, 4), (2, 4, 2)],
         gradgrad=True),
    # torch has no double backward for cdist (ours is vector_norm's, so gradgrad is omitted)
    Case("cdist", lambda m, a, b: m.cdist(a, b), [(4, 3), (5, 3)]),
    Case("cdist_p1_batched", lambda m, a, b: m.cdist(a, b, p=1.0), [(2, 4, 3), (2, 5, 3)]),
    Case("cdist_p3", lambda m, a, b: m.cdist(a, b, p=3.0), [(4, 3), (5, 3)]),
    Case("dist", lambda m, a, b: m.dist(a, b), [(3, 4), (4,)], gradgrad=True),
    Case("dist_p1", lambda m, a, b: a.dist(b, 1), [(3, 4), (3, 4)]),
    Case("renorm", lambda m, a: m.renorm(a, 2, 0, 1.0), [Float((4, 3), -2.0, 2.0)],
         gradgrad=True),
    Case("renorm_p1_dim1", lambda m, a: a.renorm(1, 1, 2.0), [Float((4, 3), -2.0, 2.0)]),
]

test_forward, test_grad, test_gradcheck, test_gradgrad = run_family(CASES)


@pytest.mark.parametrize("call", [
    lambda a, b: a @ b,
    lambda a, b: dl.matmul(a, b),
    lambda a, b: dl.mm(a, b),
    lambda a, b: dl.bmm(a.unsqueeze(0), b.unsqueeze(0)),
    lambda a, b: dl.addmm(a, a, b),
    lambda a, b: F.linear(a, b),
    lambda a, b: F.conv1d(a.unsqueeze(0), b.unsqueeze(-1)),
])
def test_matrix_products_refuse_mixed_dtypes_as_torch_does(call):
    a, b = dl.ones(3, 3), dl.ones(3, 3, dtype=dl.int64)
    with pytest.raises(dl.DTypeError, match=r"float32.*int64|int64.*float32"):
        call(a, b)
    with pytest.raises(dl.DTypeError):
        call(a, b.double())


def test_cross_without_a_dim_of_size_3_is_a_shape_error():
    with pytest.raises(dl.ShapeError, match=r"cross: no dimension of size 3 in shape \(2, 2\)"):
        dl.cross(dl.ones(2, 2), dl.ones(2, 2))


def test_cross_without_dim_warns_and_takes_the_first_dim_of_size_3():
    a, b = dl.randn(2, 3, 3), dl.randn(2, 3, 3)
    with pytest.warns(UserWarning, match=r"cross: calling it without dim is deprecated.*\(1\)"):
        out = dl.cross(a, b)
    assert out.tolist() == dl.cross(a, b, dim=1).tolist()


def test_addmm_with_beta_0_ignores_nan_in_input():
    c = dl.tensor([[float("nan"), 1.0], [2.0, 3.0]], requires_grad=True)
    out = dl.addmm(c, dl.eye(2), dl.ones(2, 2), beta=0)
    assert out.tolist() == [[1.0, 1.0], [1.0, 1.0]]
    out.sum().backward()
    assert c.grad.tolist() == [[0.0, 0.0], [0.0, 0.0]]
