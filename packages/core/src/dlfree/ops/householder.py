"""Householder reflections: LAPACK's compact QR (`geqrf`) and the product of the reflectors
it stores (`orgqr`, torch.linalg.householder_product), as torch has them.

`geqrf(A)` returns (a, tau): R on and above the diagonal of `a`, the reflector vectors
below it (each with an implicit 1 on the diagonal), H_i = I - tau_i v_i v_i^T. Like
torch's it has no derivative. `householder_product(A, tau)` multiplies the first k
reflectors into the first n columns of an m x m identity, Q = H_1 ... H_k I[:, :n]; it
is written with Tensor ops, one rank-1 update per reflector, so its gradient (and the
second derivative) come from the ops it is made of.
"""

from __future__ import annotations

from typing import NamedTuple

from ..errors import AutogradError, ShapeError
from ..tensor import Tensor
from ._util import check_float, tensor_method
from .decomposition import Decomposition, check_matrices, decompose
from .indexing import tril

__all__ = ["geqrf", "orgqr"]


class GeqrfResult(NamedTuple):
    a: Tensor
    tau: Tensor


class Geqrf(Decomposition):
    @staticmethod
    def compute(xp, a):
        h, tau = xp.linalg.qr(a, mode="raw")  # h is transposed, as Fortran reads it
        return xp.ascontiguousarray(h.swapaxes(-1, -2)), tau

    def gradient(self, inputs, outputs, grads):
        raise AutogradError("geqrf: there is no derivative of LAPACK's compact QR (torch has "
                            "none either); differentiate linalg.qr or householder_product")


@tensor_method()
def geqrf(input) -> GeqrfResult:
    """(a, tau) of LAPACK's geqrf for each matrix: R in the upper triangle of `a`, the
    Householder vectors below its diagonal, their scales in `tau` (length min(m, n))."""
    check_matrices(input, "geqrf", square=False)
    return GeqrfResult(*decompose(Geqrf, input, op="geqrf"))


def householder_product(A, tau) -> Tensor:
    """The first n columns of H_1 ... H_k, H_i = I - tau_i v_i v_i^T with v_i the i-th
    column of `A` below the diagonal and 1 on it; A is (..., m, n) with m >= n, tau
    (..., k) with k <= n."""
    op = "linalg.householder_product"
    check_matrices(A, op, square=False)
    if not isinstance(tau, Tensor):
        raise TypeError(f"{op}: tau must be a Tensor, got {type(tau).__name__}")
    check_float(tau, op)
    m, n = A.shape[-2:]
    k = tau.shape[-1] if tau.ndim else -1
    if m < n:
        raise ShapeError(f"{op}: A must have at least as many rows as columns, got shape "
                         f"{tuple(A.shape)}")
    if tau.ndim != A.ndim - 1 or k > n or tuple(tau.shape[:-1]) != tuple(A.shape[:-2]):
        raise ShapeError(f"{op}: tau must have shape (*batch, k) with batch {tuple(A.shape[:-2])}"
                         f" and k <= {n}, got {tuple(tau.shape)}")
    if A.dtype != tau.dtype:
        raise TypeError(f"{op}: A and tau must have the same dtype, got {A.dtype} and "
                        f"{tau.dtype}")
    eye = Tensor._make(A._device.xp.eye(m, n, dtype=A._data.dtype), A._device)
    vectors = tril(A, -1) + eye  # column i is v_i: zeros above, 1 on the diagonal
    q = eye.expand(*A.shape[:-2], m, n) if A.ndim > 2 else eye
    for i in reversed(range(k)):
        v = vectors[..., :, i:i + 1]
        q = q - tau[..., i:i + 1].unsqueeze(-1) * (v @ (v.mT @ q))
    return q


@tensor_method()
def orgqr(input, input2) -> Tensor:
    """torch.orgqr: `householder_product(input, input2)`."""
    return householder_product(input, input2)
