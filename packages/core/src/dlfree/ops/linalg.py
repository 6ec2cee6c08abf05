"""Matrix products: matmul (@), mm, bmm, dot, outer, einsum, tensordot; `dl.linalg.norm`."""

from __future__ import annotations

from ..autograd.function import Function
from ..errors import ShapeError
from ..tensor import Tensor
from ._util import promote, sum_to, tensor_method

__all__ = ["matmul"]


class MatMul(Function):
    """Batched, broadcast matrix product with NumPy's 1-d promotion rules."""

    def forward(self, a, b):
        na, nb = self.needs_input_grad or (False, False)
        self.saves = ((1,) if na else ()) + ((0,) if nb else ())
        self.ndims = (a.ndim, b.ndim)
        self.shapes = (a.shape, b.shape)
        return a @ b

    def backward(self, g):
        na, nb = self.needs_input_grad
        saved = self.saved_tensors
        b = saved[0] if na else None
        a = saved[-1] if nb else None
        da, db = self.ndims
        if da == 1 and db == 1:
            return (g * b if na else None, g * a if nb else None)
        # lift 1-d operands to matrices so that every case is a (batched) matrix product
        if da == 1:
            g = g.unsqueeze(-2)
        if db == 1:
            g = g.unsqueeze(-1)
        ga = gb = None
        if na:
            bm = b.unsqueeze(-1) if db == 1 else b
            ga = g @ bm.mT
            ga = ga.squeeze(-2) if da == 1 else ga
            ga = sum_to(ga, self.shapes[0])
        if nb:
            am = a.unsqueeze(-2) if da == 1 else a
            gb = am.mT @ g
            gb = gb.squeeze(-1) if db == 1 else gb
            gb = sum_to(gb, self.shapes[1])
        return ga, gb


@tensor_method("matmul", "__matmul__")
def matmul(input, other) -> Tensor:
    """Matrix product with broadcasting over batch dimensions (PyTorch's torch.matmul)."""
    a, b = promote(input, other, "matmul")
    if a.ndim == 0 or b.ndim == 0:
        raise ShapeError("matmul: both arguments need at least 1 dimension, got shapes "
                         f"{tuple(a.shape)} and {tuple(b.shape)}")
    k_a = a.shape[-1]
    k_b = b.shape[-2] if b.ndim > 1 else b.shape[0]
    if k_a != k_b:
        raise ShapeError(
            f"matmul: shapes {tuple(a.shape)} and {tuple(b.shape)} cannot be multiplied "
            f"({k_a} columns vs {k_b} rows); valid: the last dim of the first equals the "
            f"{'second-to-last' if b.ndim > 1 else 'only'} dim of the second"
        )
    try:
        return MatMul.apply(a, b)
    except ValueError as e:
        raise ShapeError(f"matmul: batch dimensions of {tuple(a.shape)} and {tuple(b.shape)} "
                         f"do not broadcast: {e}") from None


@tensor_method("__rmatmul__")
def _rmatmul(self, other) -> Tensor:
    return matmul(other, self)
