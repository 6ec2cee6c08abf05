"""Products and distances built on matmul: mv, inner, vdot, trace, kron, cross, the BLAS-style
addmm/addmv/addbmm/baddbmm, cdist, dist and renorm.

All are compositions of matmul, elementwise ops and reductions, so they inherit their
gradients, and the matrix products refuse mixed dtypes as mm and bmm do.
"""

from __future__ import annotations

import warnings

from ..autograd.autocasting import autocast_policy
from ..errors import DTypeError, ShapeError
from ..tensor import Tensor
from ._util import normalize_dim, tensor_method
from .elementwise import where
from .inplace import _generic
from .linalg import bmm, dot, matmul, mm
from .reduction import vector_norm
from .shape import broadcast_tensors, stack

__all__ = ["mv", "inner", "vdot", "trace", "kron", "cross", "addmm", "addmv", "addbmm",
           "baddbmm", "cdist", "dist", "renorm"]


@tensor_method()
@autocast_policy("lower")
def mv(input, vec) -> Tensor:
    """Matrix times vector: (n, m) @ (m,)."""
    _need_ndims("mv", (input, vec), (2, 1), "a matrix and a vector")
    return matmul(input, vec)


def _need_ndims(op: str, tensors, ndims, valid: str) -> None:
    if tuple(t.ndim for t in tensors) != ndims:
        raise ShapeError(f"{op}: expected {valid}, got shapes "
                         f"{', '.join(str(tuple(t.shape)) for t in tensors)}")


@tensor_method()
def inner(input, other) -> Tensor:
    """Sums of products over the last dims: shape input.shape[:-1] + other.shape[:-1]
    (a product when either is 0-d)."""
    if input.ndim == 0 or other.ndim == 0:
        return input * other
    if input.shape[-1] != other.shape[-1]:
        raise ShapeError(f"inner: last dims must match, got shapes {tuple(input.shape)} and "
                         f"{tuple(other.shape)}")
    k = input.shape[-1]
    out = matmul(input.reshape(-1, k), other.reshape(-1, k).mT)
    return out.reshape(tuple(input.shape[:-1]) + tuple(other.shape[:-1]))


@tensor_method()
@autocast_policy("promote")
def vdot(input, other) -> Tensor:
    """The dot product of two 1-d tensors (for real tensors, dot)."""
    return dot(input, other)


@tensor_method()
def trace(input) -> Tensor:
    """The sum of a matrix's main diagonal."""
    _need_ndims("trace", (input,), (2,), "a matrix")
    return input.diagonal().sum()


@tensor_method()
def kron(input, other) -> Tensor:
    """The Kronecker product: every element of `input` times the whole of `other`."""
    n = max(input.ndim, other.ndim)
    a = input.reshape((1,) * (n - input.ndim) + tuple(input.shape))
    b = other.reshape((1,) * (n - other.ndim) + tuple(other.shape))
    interleaved_a = [s for dim in a.shape for s in (dim, 1)]
    interleaved_b = [s for dim in b.shape for s in (1, dim)]
    out = a.reshape(interleaved_a) * b.reshape(interleaved_b)
    return out.reshape(tuple(x * y for x, y in zip(a.shape, b.shape)))


@tensor_method()
@autocast_policy("promote")
def cross(input, other, dim=None) -> Tensor:
    """The cross product of 3-vectors along `dim` (by default the first dim of size 3),
    broadcasting the other dims."""
    a, b = broadcast_tensors(input, other)
    if dim is None:
        sized = [i for i, s in enumerate(a.shape) if s == 3]
        if not sized:
            raise ShapeError(f"cross: no dimension of size 3 in shape {tuple(a.shape)}")
        d = sized[0]
        warnings.warn("cross: calling it without dim is deprecated (as in torch): the first "
                      f"dimension of size 3 ({d}) is used; pass dim=, or use "
                      "dl.linalg.cross (dim=-1)", UserWarning, stacklevel=2)
    else:
        d = normalize_dim(dim, a.ndim, "cross")
    if a.shape[d] != 3:
        raise ShapeError(f"cross: dimension {d} has size {a.shape[d]}, valid: 3 (shapes "
                         f"{tuple(input.shape)} and {tuple(other.shape)})")
    a1, a2, a3 = a.unbind(d)
    b1, b2, b3 = b.unbind(d)
    return stack([a2 * b3 - a3 * b2, a3 * b1 - a1 * b3, a1 * b2 - a2 * b1], d)


def _blas(input, product, beta, alpha) -> Tensor:
    """beta * input + alpha * product; beta = 0 ignores input (NaN in it does not spread,
    and its gradient is zero, as torch's)."""
    scaled = product if alpha == 1 else product * alpha
    if beta == 0:
        everywhere = input.isnan() | ~input.isnan()
        return scaled + where(everywhere, 0.0, input)
    return (input if beta == 1 else input * beta) + scaled


def _blas_call(op: str, input, a, b, product, beta, alpha) -> Tensor:
    """beta * input + alpha * product(a, b), all three of one dtype (torch's rule)."""
    for t in (a, b):
        if t.dtype is not input.dtype:
            raise DTypeError(f"{op}: expected all tensors of one dtype, got "
                             f"{input.dtype.name} and {t.dtype.name}")
    return _blas(input, product(a, b), beta, alpha)


@tensor_method()
@autocast_policy("lower")
def addmm(input, mat1, mat2, *, beta=1, alpha=1) -> Tensor:
    """beta * input + alpha * (mat1 @ mat2), input broadcast to the product's shape."""
    return _blas_call("addmm", input, mat1, mat2, mm, beta, alpha)


@tensor_method()
@autocast_policy("lower")
def addmv(input, mat, vec, *, beta=1, alpha=1) -> Tensor:
    """beta * input + alpha * (mat @ vec)."""
    return _blas_call("addmv", input, mat, vec, mv, beta, alpha)


@tensor_method()
@autocast_policy("lower")
def baddbmm(input, batch1, batch2, *, beta=1, alpha=1) -> Tensor:
    """beta * input + alpha * bmm(batch1, batch2)."""
    return _blas_call("baddbmm", input, batch1, batch2, bmm, beta, alpha)


def _summed_bmm(batch1, batch2) -> Tensor:
    return bmm(batch1, batch2).sum(0)


@tensor_method()
@autocast_policy("lower")
def addbmm(input, batch1, batch2, *, beta=1, alpha=1) -> Tensor:
    """beta * input + alpha * Σ_b batch1[b] @ batch2[b]."""
    return _blas_call("addbmm", input, batch1, batch2, _summed_bmm, beta, alpha)


@autocast_policy("float32")
def cdist(x1, x2, p: float = 2.0, compute_mode=None) -> Tensor:
    """The p-norm distance between each row of x1 (…, P, M) and each row of x2 (…, R, M),
    shaped (…, P, R); batch dims broadcast."""
    if x1.ndim < 2 or x2.ndim < 2 or x1.shape[-1] != x2.shape[-1]:
        raise ShapeError(f"cdist: expected (…, P, M) and (…, R, M) with the same M, got shapes "
                         f"{tuple(x1.shape)} and {tuple(x2.shape)}")
    if p < 0:
        raise ValueError(f"cdist: p must be non-negative, got {p}")
    if x1.dtype is not x2.dtype:
        raise DTypeError(f"cdist: expected x1 and x2 of one dtype, got {x1.dtype.name} and "
                         f"{x2.dtype.name}")
    return vector_norm(x1.unsqueeze(-2) - x2.unsqueeze(-3), p, -1)


@tensor_method()
@autocast_policy("float32")
def dist(input, other, p: float = 2) -> Tensor:
    """The p-norm of input - other (broadcast)."""
    return vector_norm(input - other, p)


@tensor_method()
@autocast_policy("float32")
def renorm(input, p: float, dim: int, maxnorm: float) -> Tensor:
    """Each slice along `dim` whose p-norm exceeds `maxnorm` scaled down to norm `maxnorm`."""
    d = normalize_dim(dim, input.ndim, "renorm")
    others = tuple(i for i in range(input.ndim) if i != d)
    norms = vector_norm(input, p, others, keepdim=True)
    factor = where(norms > maxnorm, maxnorm / (norms + 1e-7), 1.0)
    return input * factor


for _name in ("addmm", "addmv", "addbmm", "baddbmm", "renorm"):
    setattr(Tensor, f"{_name}_", _generic(_name))
