"""`dl.linalg`: norms and matrix functions (PyTorch's torch.linalg names)."""

from __future__ import annotations

import numbers

from .errors import ShapeError
from .ops import products
from .ops.linalg import matmul, matrix_norm
from .ops.reduction import vector_norm

__all__ = ["norm", "vector_norm", "matrix_norm", "matmul", "cross"]


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
