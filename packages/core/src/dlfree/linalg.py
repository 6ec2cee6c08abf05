"""`dl.linalg`: torch.linalg's functions on NumPy/CuPy's LAPACK, with torch's gradients.

The decompositions themselves (and their backward rules) are ops, in
`dlfree/ops/decomposition.py`; this module gives them torch.linalg's names, signatures and
named results.
"""

from __future__ import annotations

import math
import numbers
from typing import NamedTuple

from .autograd.autocasting import autocast_policy
from .errors import LinAlgError, ShapeError
from .ops import decomposition as _d
from .ops import products
from .ops.householder import householder_product
from .ops.linalg import matmul, matrix_norm
from .ops.reduction import vector_norm
from .ops.shape import diagonal as _diagonal
from .ops.shape import stack
from .tensor import Tensor

__all__ = ["norm", "vector_norm", "matrix_norm", "matmul", "det", "slogdet", "inv", "inv_ex",
           "pinv", "solve", "solve_ex", "solve_triangular", "lstsq", "cholesky", "cholesky_ex",
           "qr", "svd", "svdvals", "eig", "eigvals", "eigh", "eigvalsh", "matrix_power",
           "matrix_exp", "matrix_rank", "cond", "lu", "lu_factor", "lu_factor_ex", "lu_solve",
           "multi_dot", "vecdot", "diagonal", "tensorinv", "tensorsolve", "vander",
           "cross", "householder_product", "LinAlgError"]


class SlogdetResult(NamedTuple):
    sign: Tensor
    logabsdet: Tensor


class QRResult(NamedTuple):
    Q: Tensor
    R: Tensor


class SVDResult(NamedTuple):
    U: Tensor
    S: Tensor
    Vh: Tensor


class EighResult(NamedTuple):
    eigenvalues: Tensor
    eigenvectors: Tensor


class LstsqResult(NamedTuple):
    solution: Tensor
    residuals: Tensor
    rank: Tensor
    singular_values: Tensor


class LUResult(NamedTuple):
    P: Tensor
    L: Tensor
    U: Tensor


class LUFactorResult(NamedTuple):
    LU: Tensor
    pivots: Tensor


class LUFactorExResult(NamedTuple):
    LU: Tensor
    pivots: Tensor
    info: Tensor


# The `_ex` results carry LAPACK's `info`, always zeros: a failure raises `LinAlgError`.
class InvExResult(NamedTuple):
    inverse: Tensor
    info: Tensor


class SolveExResult(NamedTuple):
    result: Tensor
    info: Tensor


class CholeskyExResult(NamedTuple):
    L: Tensor
    info: Tensor


def cross(input, other, *, dim: int = -1):
    """The cross product of 3-vectors along `dim` (the last by default), broadcasting."""
    return products.cross(input, other, dim=dim)


def norm(A, ord=None, dim=None, keepdim: bool = False, *, dtype=None):
    """A vector norm, or a matrix norm when `ord` is given with two dims (or a 2-D input).

    With `ord=None` it is the 2-norm of the flattened input (over `dim` when given).
    """
    dims = (dim,) if isinstance(dim, numbers.Integral) else dim
    if dims is not None and len(dims) not in (1, 2):
        raise ShapeError(f"linalg.norm: dim={dim} must name 1 or 2 dimensions")
    if dims is None and ord is not None and A.ndim not in (1, 2):
        raise ShapeError(f"linalg.norm: an input of shape {tuple(A.shape)} needs dim= when ord "
                         "is given; valid without dim: 1-D or 2-D inputs")
    if ord is not None and (len(dims) == 2 if dims is not None else A.ndim == 2):
        return matrix_norm(A, ord, dims if dims is not None else (0, 1), keepdim, dtype=dtype)
    return vector_norm(A, 2 if ord is None else ord, dims, keepdim, dtype=dtype)


def det(A) -> Tensor:
    """The determinant of each square matrix."""
    return _d.det(A)


def slogdet(A) -> SlogdetResult:
    """(sign, log|det|) of each square matrix."""
    return SlogdetResult(*_d.slogdet(A))


def inv(A) -> Tensor:
    """The inverse of each square matrix; a singular one raises `LinAlgError`."""
    _d.check_matrices(A, "linalg.inv")
    return _d.inverse(A)


def _info(A: Tensor) -> Tensor:
    xp = A._device.xp
    return Tensor._make(xp.zeros(A.shape[:-2], dtype=xp.int32), A._device)


def inv_ex(A, *, check_errors: bool = False) -> InvExResult:
    """`inv` with torch's (inverse, info) result."""
    return InvExResult(inv(A), _info(A))


def pinv(A, *, atol=None, rtol=None, hermitian: bool = False) -> Tensor:
    """The Moore-Penrose pseudo-inverse; singular values at most max(atol, rtol * largest)
    count as zero (torch's defaults: rtol = eps * max(m, n) when atol is not given)."""
    _d.check_matrices(A, "linalg.pinv", square=False)
    atol, rtol = _d.pinv_cutoffs(A, atol, rtol)
    return _d.PseudoInverse.apply(A, atol=atol, rtol=rtol)


def _is_vector_rhs(A: Tensor, B: Tensor) -> bool:
    """torch's rule: B is a (batch of) vector(s) when it is 1-D or has A's batch shape."""
    return B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))


def solve(A, B, *, left: bool = True) -> Tensor:
    """X with A X = B (or X A = B with `left=False`); B may be a vector or matrices, and
    the batch dims broadcast."""
    op = "linalg.solve"
    _d.check_matrices(A, op)
    _d.check_float(B, op)
    if not left:
        return solve(A.mT, B.mT).mT
    vector = _is_vector_rhs(A, B)
    rhs = B.unsqueeze(-1) if vector else B
    if rhs.ndim < 2 or rhs.shape[-2] != A.shape[-1]:
        raise ShapeError(f"{op}: A of shape {tuple(A.shape)} and B of shape {tuple(B.shape)} "
                         f"do not fit; valid: B of shape (..., {A.shape[-1]}) or "
                         f"(..., {A.shape[-1]}, k)")
    x = _d.solve_matrices(A, rhs, op)
    return x.squeeze(-1) if vector else x


def solve_ex(A, B, *, left: bool = True, check_errors: bool = False) -> SolveExResult:
    """`solve` with torch's (result, info) result."""
    return SolveExResult(solve(A, B, left=left), _info(A))


def solve_triangular(A, B, *, upper: bool, left: bool = True,
                     unitriangular: bool = False) -> Tensor:
    """X with A X = B for triangular A (only its `upper` or lower triangle is read; with
    `unitriangular` its diagonal counts as ones)."""
    _d.check_matrices(A, "linalg.solve_triangular")
    tri = _d.triu(A) if upper else _d.tril(A)
    if unitriangular:
        tri = tri - _d.diag_embed(_diagonal(tri, 0, -2, -1)) + _d.eye_like(A)
    return solve(tri, B, left=left)


def lstsq(A, B, rcond=None, *, driver=None) -> LstsqResult:
    """The least-squares solution of A X = B through the pseudo-inverse, with torch's
    default (gelsy) results: the rank, squared residuals when A is tall and of full rank,
    and no singular values."""
    op = "linalg.lstsq"
    _d.check_matrices(A, op, square=False)
    _d.check_float(B, op)
    vector = B.ndim == A.ndim - 1
    rhs = B.unsqueeze(-1) if vector else B
    if rhs.shape[-2] != A.shape[-2]:
        raise ShapeError(f"{op}: A of shape {tuple(A.shape)} and B of shape {tuple(B.shape)} "
                         f"do not fit; valid: B with {A.shape[-2]} rows")
    atol, rtol = _d.pinv_cutoffs(A, None, rcond)
    solution = _d.PseudoInverse.apply(A, atol=atol, rtol=rtol) @ rhs
    rank = matrix_rank(A, rtol=rtol)
    xp, dev = A._device.xp, A._device
    m, n = A.shape[-2:]
    if m > n and bool((rank._data == n).all()):
        residuals = ((A @ solution - rhs) ** 2).sum(-2)
    else:
        residuals = Tensor._make(xp.zeros((0,), A._data.dtype), dev)
    empty = Tensor._make(xp.zeros((0,), A._data.dtype), dev)
    return LstsqResult(solution.squeeze(-1) if vector else solution,
                       residuals.squeeze(-1) if vector and residuals.numel() else residuals,
                       rank, empty)


def cholesky(A, *, upper: bool = False) -> Tensor:
    """The Cholesky factor of each symmetric positive-definite matrix (lower unless
    `upper`); a matrix that is not positive-definite raises `LinAlgError`."""
    return _d.cholesky(A, upper)


def cholesky_ex(A, *, upper: bool = False,
                check_errors: bool = False) -> CholeskyExResult:
    """`cholesky` with torch's (L, info) result."""
    return CholeskyExResult(cholesky(A, upper=upper), _info(A))


def qr(A, mode: str = "reduced") -> QRResult:
    """(Q, R) with A = Q R; mode 'reduced', 'complete', or 'r' (R only, Q empty)."""
    if mode not in ("reduced", "complete", "r"):
        raise ValueError(f"linalg.qr: mode={mode!r} is not supported; valid: 'reduced', "
                         "'complete', 'r'")
    _d.check_matrices(A, "linalg.qr", square=False)
    return QRResult(*_d.decompose(_d.QR, A, op="linalg.qr", mode=mode))


def svd(A, full_matrices: bool = True, *, driver=None) -> SVDResult:
    """(U, S, Vh) with A = U diag(S) Vh, singular values largest first."""
    _d.check_matrices(A, "linalg.svd", square=False)
    return SVDResult(*_d.decompose(_d.SVD, A, op="linalg.svd", full_matrices=full_matrices))


def svdvals(A, *, driver=None) -> Tensor:
    """The singular values of each matrix, largest first."""
    _d.check_matrices(A, "linalg.svdvals", square=False)
    return _d.singular_values(A)


def _uplo(UPLO: str, op: str) -> str:
    if UPLO not in ("L", "U"):
        raise ValueError(f"{op}: UPLO={UPLO!r}; valid: 'L' or 'U'")
    return UPLO


def eigh(A, UPLO: str = "L") -> EighResult:
    """Eigenvalues (ascending) and eigenvectors of each symmetric matrix, read from its
    lower (UPLO='L') or upper triangle."""
    _d.check_matrices(A, "linalg.eigh")
    uplo = _uplo(UPLO, "linalg.eigh")
    return EighResult(*_d.decompose(_d.Eigh, A, op="linalg.eigh", uplo=uplo))


class EigResult(NamedTuple):
    eigenvalues: Tensor
    eigenvectors: Tensor


def eig(A) -> EigResult:
    """Eigenvalues and unit eigenvectors (columns) of each square matrix, as complex
    tensors; a vector's phase is arbitrary, so losses should not depend on it."""
    _d.check_matrices(A, "linalg.eig")
    return EigResult(*_d.decompose(_d.Eig, A, op="linalg.eig"))


def eigvals(A) -> Tensor:
    """The eigenvalues of each square matrix, complex."""
    return eig(A).eigenvalues


def eigvalsh(A, UPLO: str = "L") -> Tensor:
    """The eigenvalues (ascending) of each symmetric matrix."""
    return eigh(A, UPLO).eigenvalues


def matrix_power(A, n: int) -> Tensor:
    """A to the integer power `n` (negative: of the inverse)."""
    return _d.matrix_power(A, n)


def matrix_exp(A) -> Tensor:
    """The matrix exponential of each square matrix."""
    return _d.matrix_exp(A)


def matrix_rank(A, *, atol=None, rtol=None, hermitian: bool = False) -> Tensor:
    """The number of singular values above max(atol, rtol * largest), as int64."""
    _d.check_matrices(A, "linalg.matrix_rank", square=False)
    atol, rtol = _d.pinv_cutoffs(A, atol, rtol)
    xp, dev = A._device.xp, A._device
    s = xp.linalg.svd(A._data, compute_uv=False)
    cutoff = xp.maximum(atol, rtol * s.max(-1, initial=0.0, keepdims=True))
    return Tensor._make(xp.asarray((s > cutoff).sum(-1), dtype=xp.int64), dev)


def cond(A, p=None) -> Tensor:
    """The condition number in the matrix norm `p` (None: the 2-norm's, from the singular
    values)."""
    _d.check_matrices(A, "linalg.cond", square=p in (None, 2, -2))
    if p in (None, 2, -2):
        s = svdvals(A)
        ratio = s[..., 0] / s[..., -1]
        return ratio if p != -2 else 1 / ratio
    return matrix_norm(A, p) * matrix_norm(inv(A), p)


def lu_factor(A, *, pivot: bool = True) -> LUFactorResult:
    """LAPACK's packed LU with partial pivoting: (LU, 1-based int32 pivots)."""
    _d.check_matrices(A, "linalg.lu_factor", square=False)
    if not pivot:
        raise ValueError("linalg.lu_factor: pivot=False is not supported on the CPU (as in "
                         "torch); valid: pivot=True")
    return LUFactorResult(*_d.decompose(_d.LUFactor, A, op="linalg.lu_factor"))


def lu_factor_ex(A, *, pivot: bool = True, check_errors: bool = False) -> LUFactorExResult:
    """`lu_factor` with torch's (LU, pivots, info) result."""
    return LUFactorExResult(*lu_factor(A, pivot=pivot), _info(A))


def lu_solve(LU, pivots, B, *, left: bool = True, adjoint: bool = False) -> Tensor:
    """X with A X = B (A^T X = B with `adjoint`, X A = B with `left=False`) for A given by
    `lu_factor`'s packed (LU, pivots); differentiable in LU and B."""
    if not left:
        return lu_solve(LU, pivots, B.mT, adjoint=not adjoint).mT
    _d.check_matrices(LU, "linalg.lu_solve")
    p = _d.permutation_matrix(pivots, LU)
    if adjoint:  # A^T = U^T L^T P^T
        y = solve_triangular(LU.mT, B, upper=False)
        return p @ solve_triangular(LU.mT, y, upper=True, unitriangular=True)
    y = solve_triangular(LU, p.mT @ B, upper=False, unitriangular=True)
    return solve_triangular(LU, y, upper=True)


def lu(A, *, pivot: bool = True) -> LUResult:
    """(P, L, U) with A = P L U, L unit lower-triangular (m, k) and U upper (k, n)."""
    packed, pivots = lu_factor(A, pivot=pivot)
    m, n = A.shape[-2:]
    k = min(m, n)
    low = _d.tril(packed[..., :, :k], -1) + _d.eye_like(A, m)[..., :, :k]
    return LUResult(_d.permutation_matrix(pivots, A), low, _d.triu(packed[..., :k, :]))


@autocast_policy("lower")
def multi_dot(tensors) -> Tensor:
    """The product of a list of matrices (the first may be a vector, as may the last)."""
    if len(tensors) < 2:
        raise ShapeError(f"linalg.multi_dot: expected at least 2 tensors, got {len(tensors)}")
    result = tensors[0]
    for t in tensors[1:]:
        result = result @ t
    return result


@autocast_policy("lower")
def vecdot(x, y, *, dim: int = -1) -> Tensor:
    """The dot product of vectors along `dim`, broadcasting the others."""
    return (x * y).sum(dim)


def diagonal(A, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """The diagonals of the matrices over (dim1, dim2), as torch.linalg.diagonal."""
    return _diagonal(A, offset, dim1, dim2)


def tensorinv(A, ind: int = 2) -> Tensor:
    """The inverse of A seen as a matrix of its first `ind` dims by the rest."""
    rows, cols = A.shape[:ind], A.shape[ind:]
    return inv(A.reshape(math.prod(rows), math.prod(cols))).reshape(*cols, *rows)


def tensorsolve(A, B, dims=None) -> Tensor:
    """X with tensordot(A, X, X.ndim) = B (`dims` of A moved to the end first)."""
    if dims is not None:
        rest = [d for d in range(A.ndim) if d not in [d % A.ndim for d in dims]]
        A = A.permute(*rest, *[d % A.ndim for d in dims])
    out_shape = A.shape[B.ndim:]
    return solve(A.reshape(B.numel(), math.prod(out_shape)), B.reshape(-1)).reshape(*out_shape)


def vander(x, *, N=None) -> Tensor:
    """The Vandermonde matrix: column j holds x ** j, for j below N (default: len(x))."""
    n = x.shape[-1] if N is None else N
    return stack([x ** j for j in range(n)], -1)
