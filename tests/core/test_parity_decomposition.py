"""Parity cases for torch.linalg's decompositions, solves and matrix functions and their
Tensor aliases (see parity.py): forward against torch, gradients against torch's and
against finite differences in float64, second derivatives against torch's.

Symmetric inputs are built inside the call (x + x^T, x x^T + 3 I) so that finite
differences move the whole matrix; singular and eigen vectors enter through gauge-invariant
functions (their absolute values), since their signs are arbitrary, as torch's own tests do.
"""

from __future__ import annotations

import dlfree as dl

import numpy as np
import pytest

from support.parity import Case, run_family


def lin(m):
    """`dl.linalg` or `torch.linalg`: the same call for both libraries."""
    return m.linalg


def spd(m, x):
    """A well-conditioned symmetric positive-definite matrix from any square `x`."""
    return x @ x.mT + 3 * m.eye(x.shape[-1], dtype=x.dtype)


def shifted(m, x):
    """`x` with 3 added to its diagonal: far from singular for standard-normal entries."""
    return x + 3 * m.eye(x.shape[-1], dtype=x.dtype)


def sym(x):
    return x + x.mT


def absolute(factors):
    return tuple(f.abs() for f in factors)


DEPRECATED_IN_TORCH = (pytest.mark.filterwarnings("ignore:torch.*is deprecated"),)

CASES = [
    # determinants and inverses
    Case("det", lambda m, a: lin(m).det(a), [(3, 3)], gradgrad=True),
    Case("det_batch", lambda m, a: lin(m).det(a), [(2, 4, 4)], gradgrad=True),
    Case("det_method", lambda m, a: a.det(), [(3, 3)]),
    Case("slogdet_logabsdet", lambda m, a: lin(m).slogdet(a).logabsdet, [(2, 3, 3)],
         gradgrad=True),
    Case("slogdet_sign", lambda m, a: lin(m).slogdet(a).sign, [(4, 3, 3)], grad=False),
    Case("logdet", lambda m, a: m.logdet(spd(m, a)), [(3, 3)], gradgrad=True),
    Case("inv", lambda m, a: lin(m).inv(shifted(m, a)), [(3, 3)], gradgrad=True),
    Case("inv_batch", lambda m, a: lin(m).inv(shifted(m, a)), [(2, 3, 3)]),
    Case("inverse_method", lambda m, a: shifted(m, a).inverse(), [(3, 3)]),
    Case("inv_ex", lambda m, a: lin(m).inv_ex(shifted(m, a)).inverse, [(3, 3)]),
    Case("pinv_tall", lambda m, a: lin(m).pinv(a), [(4, 3)], gradgrad=True),
    Case("pinv_wide_batch", lambda m, a: lin(m).pinv(a), [(2, 2, 3)]),
    Case("pinverse_method", lambda m, a: a.pinverse(), [(3, 4)]),
    # solves
    Case("solve_matrix", lambda m, a, b: lin(m).solve(shifted(m, a), b), [(3, 3), (3, 2)],
         gradgrad=True),
    Case("solve_vector", lambda m, a, b: lin(m).solve(shifted(m, a), b), [(3, 3), (3,)]),
    Case("solve_batch_vector", lambda m, a, b: lin(m).solve(shifted(m, a), b),
         [(2, 3, 3), (2, 3)]),
    Case("solve_broadcast", lambda m, a, b: lin(m).solve(shifted(m, a), b),
         [(3, 3), (2, 3, 4)]),
    Case("solve_right", lambda m, a, b: lin(m).solve(shifted(m, a), b, left=False),
         [(3, 3), (2, 3)]),
    Case("solve_ex", lambda m, a, b: lin(m).solve_ex(shifted(m, a), b).result,
         [(3, 3), (3, 2)]),
    Case("solve_triangular_upper",
         lambda m, a, b: lin(m).solve_triangular(shifted(m, a), b, upper=True),
         [(3, 3), (3, 2)]),
    Case("solve_triangular_unit_lower",
         lambda m, a, b: lin(m).solve_triangular(a, b, upper=False, unitriangular=True),
         [(3, 3), (3, 2)]),
    Case("lstsq_tall", lambda m, a, b: lin(m).lstsq(a, b).solution, [(5, 3), (5, 2)]),
    Case("lstsq_residuals", lambda m, a, b: lin(m).lstsq(a, b, driver="gelsd").residuals,
         [(5, 3), (5, 2)], grad=False),
    # cholesky, qr
    Case("cholesky", lambda m, a: lin(m).cholesky(spd(m, a)), [(3, 3)], gradgrad=True),
    Case("cholesky_upper_batch", lambda m, a: lin(m).cholesky(spd(m, a), upper=True),
         [(2, 3, 3)]),
    Case("cholesky_method", lambda m, a: spd(m, a).cholesky(), [(4, 4)],
         marks=DEPRECATED_IN_TORCH),
    Case("cholesky_ex", lambda m, a: lin(m).cholesky_ex(spd(m, a)).L, [(3, 3)]),
    Case("qr_tall", lambda m, a: tuple(lin(m).qr(a)), [(4, 3)], gradgrad=True),
    Case("qr_square_batch", lambda m, a: tuple(lin(m).qr(a)), [(2, 3, 3)]),
    Case("qr_complete_square", lambda m, a: tuple(lin(m).qr(a, "complete")), [(3, 3)]),
    Case("qr_r_only", lambda m, a: lin(m).qr(a, "r").R, [(4, 3)], grad=False),
    Case("qr_method", lambda m, a: tuple(a.qr()), [(4, 2)], marks=DEPRECATED_IN_TORCH),
    # LAPACK's compact QR (no derivative, as in torch) and the product of its reflectors
    Case("geqrf", lambda m, a: tuple(m.geqrf(a)), [(2, 5, 3)], grad=False),
    Case("geqrf_wide_method", lambda m, a: tuple(a.geqrf()), [(3, 4)], grad=False),
    Case("householder_product", lambda m, a, tau: lin(m).householder_product(a, tau),
         [(5, 3), (3,)], gradgrad=True),
    Case("householder_product_batch_fewer", lambda m, a, tau: lin(m).householder_product(
        a, tau), [(2, 4, 3), (2, 2)]),
    Case("householder_product_of_geqrf", lambda m, a: lin(m).householder_product(
        *m.geqrf(a)), [(4, 4)], grad=False),
    Case("orgqr", lambda m, a, tau: m.orgqr(a, tau), [(4, 2), (2,)]),
    Case("orgqr_method", lambda m, a, tau: a.orgqr(tau), [(3, 3), (1,)]),
    # svd, eigh
    Case("svd_reduced", lambda m, a: absolute(lin(m).svd(a, full_matrices=False)), [(4, 3)],
         gradgrad=True),
    Case("svd_wide_batch", lambda m, a: absolute(lin(m).svd(a, full_matrices=False)),
         [(2, 2, 4)]),
    # the last column of U is arbitrary beyond its sign: torch's gradient, not differences
    Case("svd_full", lambda m, a: absolute(lin(m).svd(a)), [(4, 3)], gradcheck=False),
    Case("svd_s_only", lambda m, a: lin(m).svd(a).S, [(3, 4)]),
    Case("svd_reconstruct", lambda m, a: (lambda u, s, vh: (u * s.unsqueeze(-2)) @ vh)(
        *lin(m).svd(a, full_matrices=False)), [(3, 4)]),
    Case("svd_method", lambda m, a: absolute(a.svd()), [(4, 3)]),
    Case("svdvals", lambda m, a: lin(m).svdvals(a), [(2, 3, 4)], gradgrad=True),
    Case("eigh", lambda m, a: absolute(lin(m).eigh(sym(a))), [(3, 3)], gradgrad=True),
    Case("eigh_upper_batch", lambda m, a: absolute(lin(m).eigh(sym(a), UPLO="U")),
         [(2, 4, 4)]),
    Case("eigvalsh", lambda m, a: lin(m).eigvalsh(sym(a)), [(2, 3, 3)], gradgrad=True),
    # matrix functions
    Case("matrix_power_3", lambda m, a: lin(m).matrix_power(a, 3), [(2, 3, 3)], gradgrad=True),
    Case("matrix_power_neg", lambda m, a: lin(m).matrix_power(shifted(m, a), -2), [(3, 3)]),
    Case("matrix_power_0", lambda m, a: lin(m).matrix_power(a, 0), [(2, 3, 3)]),
    Case("matrix_exp", lambda m, a: lin(m).matrix_exp(a), [(3, 3)], gradgrad=True),
    Case("matrix_exp_batch_large", lambda m, a: lin(m).matrix_exp(3 * a), [(2, 4, 4)],
         fwd_tol=(1e-4, 1e-4), grad_tol=(1e-3, 1e-3)),
    Case("matrix_exp_method", lambda m, a: a.matrix_exp(), [(2, 2)]),
    Case("matrix_rank", lambda m, a, b: lin(m).matrix_rank(a @ b), [(2, 5, 2), (2, 2, 4)],
         grad=False),
    Case("matrix_rank_atol", lambda m, a: lin(m).matrix_rank(a, atol=1.0, rtol=0.0),
         [(4, 4)], grad=False),
    Case("cond", lambda m, a: lin(m).cond(a), [(3, 3)]),
    # torch's own backward of cond(p="fro") fails (an in-place write to a saved inverse)
    Case("cond_fro", lambda m, a: lin(m).cond(shifted(m, a), "fro"), [(3, 3)], grad=False),
    Case("lu_factor", lambda m, a: lin(m).lu_factor(a).LU, [(2, 3, 3)], gradgrad=True),
    Case("lu_factor_pivots", lambda m, a: lin(m).lu_factor(a).pivots, [(2, 4, 4)],
         grad=False),
    Case("lu", lambda m, a: tuple(lin(m).lu(a)), [(3, 3)]),
    Case("lu_factor_ex", lambda m, a: lin(m).lu_factor_ex(a).LU, [(3, 3)]),
    Case("lu_solve", lambda m, a, b: lin(m).lu_solve(*lin(m).lu_factor(a), b),
         [(2, 3, 3), (2, 3, 2)], gradgrad=True),
    Case("lu_solve_adjoint", lambda m, a, b: lin(m).lu_solve(*lin(m).lu_factor(a), b,
                                                             adjoint=True), [(3, 3), (3, 2)]),
    Case("lu_solve_right", lambda m, a, b: lin(m).lu_solve(*lin(m).lu_factor(a), b,
                                                           left=False), [(3, 3), (2, 3)]),
    Case("lu_tall", lambda m, a: tuple(lin(m).lu(a)), [(4, 3)], grad=False),
    Case("lu_wide", lambda m, a: tuple(lin(m).lu(a)), [(2, 3, 5)], grad=False),
    # composites
    Case("multi_dot", lambda m, a, b, c: lin(m).multi_dot([a, b, c]), [(3,), (3, 4), (4, 2)]),
    Case("vecdot", lambda m, a, b: lin(m).vecdot(a, b, dim=0), [(3, 2), (3, 1)]),
    Case("diagonal", lambda m, a: lin(m).diagonal(a, offset=1), [(2, 3, 4)]),
    Case("tensorinv", lambda m, a: lin(m).tensorinv(shifted(m, a.reshape(6, 6)).reshape(
        2, 3, 6), ind=2), [(6, 6)]),
    Case("tensorsolve", lambda m, a, b: lin(m).tensorsolve(
        shifted(m, a.reshape(6, 6)).reshape(2, 3, 6), b), [(6, 6), (2, 3)]),
    Case("vander", lambda m, a: lin(m).vander(a, N=4), [(2, 3)]),
]

test_forward, test_grad, test_gradcheck, test_gradgrad = run_family(CASES)


@pytest.mark.parametrize("call, error, message", [
    (lambda: dl.linalg.inv(dl.zeros(3, 3)), dl.linalg.LinAlgError, "inverse: .*[Ss]ingular"),
    (lambda: dl.linalg.cholesky(-dl.eye(2)), dl.linalg.LinAlgError, "cholesky"),
    (lambda: dl.linalg.det(dl.zeros(2, 3)), dl.ShapeError,
     r"det: expected a tensor of square matrices \(\.\.\., n, n\), got shape \(2, 3\)"),
    (lambda: dl.linalg.solve(dl.eye(3), dl.zeros(4, 2)), dl.ShapeError,
     r"linalg.solve: A of shape \(3, 3\) and B of shape \(4, 2\) do not fit"),
    (lambda: dl.linalg.qr(dl.zeros(3, 3), "full"), ValueError, "valid: 'reduced', 'complete'"),
    (lambda: dl.linalg.eigh(dl.eye(2), UPLO="X"), ValueError, "valid: 'L' or 'U'"),
    (lambda: dl.linalg.inv(dl.eye(2, dtype=dl.int64)), dl.DTypeError, "floating-point"),
    (lambda: dl.linalg.householder_product(dl.zeros(2, 3), dl.zeros(2)), dl.ShapeError,
     r"at least as many rows as columns, got shape \(2, 3\)"),
    (lambda: dl.linalg.householder_product(dl.zeros(3, 2), dl.zeros(3)), dl.ShapeError,
     r"tau must have shape \(\*batch, k\) with batch \(\) and k <= 2, got \(3,\)"),
    (lambda: dl.geqrf(dl.zeros(3)), dl.ShapeError, r"geqrf: expected a tensor of matrices"),
])
def test_bad_input_names_the_op_and_what_is_valid(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_the_gradient_of_a_wide_qr_says_what_is_implemented():
    a = dl.randn(2, 3, dtype=dl.float64, requires_grad=True)
    q, r = dl.linalg.qr(a)
    with pytest.raises(dl.AutogradError, match="at least as many rows as columns"):
        r.sum().backward()


def test_geqrf_has_no_derivative_and_says_what_to_use():
    a, tau = dl.geqrf(dl.randn(3, 3, dtype=dl.float64, requires_grad=True))
    with pytest.raises(dl.AutogradError, match="differentiate linalg.qr or householder_product"):
        (a.sum() + tau.sum()).backward()


def test_the_reflectors_of_geqrf_multiply_into_qr_s_q():
    a = dl.randn(2, 5, 3, dtype=dl.float64)
    q = dl.linalg.householder_product(*dl.geqrf(a))
    np.testing.assert_allclose(q.numpy(), dl.linalg.qr(a).Q.numpy(), rtol=1e-12, atol=1e-12)


def test_without_gradients_no_graph_is_recorded():
    a = dl.randn(3, 3)
    u, s, vh = dl.linalg.svd(a)
    assert u.grad_fn is None and not s.requires_grad
    with dl.no_grad():
        assert dl.linalg.eigh(sym(dl.randn(3, 3, requires_grad=True)))[0].grad_fn is None


def test_lu_factors_reassemble_the_matrix():
    a = dl.randn(2, 4, 3, dtype=dl.float64)
    p, low, up = dl.linalg.lu(a)
    np.testing.assert_allclose((p @ low @ up).numpy(), a.numpy(), rtol=1e-12, atol=1e-12)


def test_the_second_derivative_of_a_singular_value_sees_the_vectors_move():
    # s_max of [[x, 1], [1, 0]] has a nonzero second derivative in x: a first-order-only
    # rule (vectors held fixed) would give 0
    x = dl.tensor(0.5, dtype=dl.float64, requires_grad=True)
    a = dl.stack([dl.stack([x, x * 0 + 1]), dl.stack([x * 0 + 1, x * 0])])
    (g,) = dl.autograd.grad(dl.linalg.svdvals(a)[0], x, create_graph=True)
    (gg,) = dl.autograd.grad(g, x)
    value = float(x)
    # s_max = (x + sqrt(x^2 + 4)) / 2, s'' = 2 / (x^2 + 4)^1.5
    assert gg.item() == pytest.approx(2 / (value ** 2 + 4) ** 1.5, rel=1e-10)
