"""Matrix decompositions and the functions built on them (determinants, inverses, solves,
cholesky, qr, svd, eigh, lu, the matrix exponential), each with torch's gradient.

Every backward is written with Tensor ops. A decomposition with several outputs is one
`Decomposition` node whose outputs are `Output` nodes (as split's pieces are); when a
graph of its gradient is asked for, the backward recomputes the decomposition from the
saved inputs while recording, so that the second derivative sees how the factors move.
The gradients of svd and eigh are those of gauge-invariant functions of the factors (the
sign of a singular or eigen vector is arbitrary), as in torch.
"""

from __future__ import annotations

import math

from ..autograd.function import Function
from ..autograd.grad_mode import STATE
from ..errors import AutogradError, DeviceError, LinAlgError, ShapeError
from ..tensor import Tensor
from ._util import check_float, sum_to, tensor_method
from .indexing import tril, triu
from .shape import diag_embed, diagonal

__all__ = ["det", "logdet", "slogdet", "inverse", "pinverse", "cholesky", "qr", "svd",
           "matrix_exp", "matrix_power"]


def check_matrices(A, op: str, square: bool = True) -> None:
    """`A` is a floating tensor of (a batch of) matrices, square when `square`."""
    check_float(A, op)
    if A.ndim < 2 or (square and A.shape[-1] != A.shape[-2]):
        kind = "square matrices" if square else "matrices"
        raise ShapeError(f"{op}: expected a tensor of {kind} (..., n, n), got shape "
                         f"{tuple(A.shape)}" if square else
                         f"{op}: expected a tensor of {kind} (..., m, n), got shape "
                         f"{tuple(A.shape)}")


def lapack(op: str, call, *args, **kwargs):
    """`call(*args)` with a LAPACK failure (a singular or indefinite matrix) as `LinAlgError`."""
    try:
        return call(*args, **kwargs)
    except Exception as e:  # numpy.linalg.LinAlgError, or CuPy's
        if type(e).__name__ != "LinAlgError":
            raise
        raise LinAlgError(f"{op}: {e}") from None


def eye_like(A: Tensor, n: int | None = None) -> Tensor:
    """The n x n identity (n: A's last dim) in A's dtype, on A's device."""
    n = A.shape[-1] if n is None else n
    return Tensor._make(A._device.xp.eye(n, dtype=A._data.dtype), A._device)


# ---------------------------------------------------------------- several outputs
class Decomposition(Function):
    """The node of an op with several outputs. Subclasses write `compute(xp, *arrays,
    **params)` returning the output arrays and `gradient(inputs, outputs, grads)` with
    Tensor ops (a None in `grads` for an output that got no gradient)."""

    def forward(self, *arrays, **params):
        self.params = params
        self.results = self.compute(self.xp, *arrays, **params)
        self.n_outputs = len(self.results)
        self.saves = tuple(range(len(arrays)))
        return arrays[0]  # a placeholder: the outputs are the `Output` nodes

    @staticmethod
    def compute(xp, *arrays, **params) -> tuple:
        raise NotImplementedError

    def gradient(self, inputs: tuple, outputs: tuple, grads: list) -> tuple:
        raise NotImplementedError

    def backward(self, grads):
        inputs = self.saved_tensors
        if STATE.enabled:  # a graph of the gradient: the factors as functions of the inputs
            outputs = decompose(type(self), *inputs, **self.params)
        else:
            outputs = tuple(Tensor._make(a, self.device) for a in self.results)
        return self.gradient(inputs, outputs, grads)


class Output(Function):
    """One output of a `Decomposition`; its gradient goes to that node's backward."""

    complex_grad = True  # it has no backward of its own

    def forward(self, whole, value, index):
        self.output_index = index
        return value


def decompose(cls, *inputs: Tensor, op: str = "", **params) -> tuple:
    """The outputs of `cls` at `inputs`, under one node when recording; integer outputs
    (pivots, ranks) are constants."""
    device = inputs[0]._device
    if not (STATE.enabled and any(t.requires_grad for t in inputs)):
        with device.context():
            arrays = lapack(op, cls.compute, device.xp, *[t._data for t in inputs], **params)
        return tuple(Tensor._make(a, device) for a in arrays)
    whole = lapack(op, cls.apply, *inputs, **params)
    return tuple(Output.apply(whole, value=a, index=i) if a.dtype.kind in "fc"
                 else Tensor._make(a, device) for i, a in enumerate(whole.grad_fn.results))


# -------------------------------------------------------------- inverse and solve
class Inverse(Function):
    save_output = True

    def forward(self, a):
        return self.xp.linalg.inv(a)

    def backward(self, g):
        (x,) = self.saved_tensors
        return (-(x.mT @ g @ x.mT),)


@tensor_method()
def inverse(input) -> Tensor:
    """The inverse of each square matrix (torch.inverse, torch.linalg.inv)."""
    check_matrices(input, "inverse")
    return lapack("inverse", Inverse.apply, input)


class Solve(Function):
    """X with A X = B for matrices B (..., n, k); the batch dims broadcast."""

    save_output = True
    complex_grad = True

    def forward(self, a, b):
        self.saves = (0,)
        self.shapes = (a.shape, b.shape)
        return self.xp.linalg.solve(a, b)

    def backward(self, g):
        a, x = self.saved_tensors
        if x._data.dtype.kind == "c":  # the adjoint solve: conjugate transposes
            from .complex_numbers import conj

            a, x = conj(a), conj(x)
        gb = solve_matrices(a.mT, g)
        ga = -(gb @ x.mT)
        return sum_to(ga, self.shapes[0]), sum_to(gb, self.shapes[1])


def solve_matrices(A: Tensor, B: Tensor, op: str = "linalg.solve") -> Tensor:
    """`Solve` with a clear error for a singular matrix or batch dims that do not broadcast."""
    try:
        return lapack(op, Solve.apply, A, B)
    except ValueError as e:
        if isinstance(e, LinAlgError):
            raise
        raise ShapeError(f"{op}: the batch dims of A {tuple(A.shape)} and B {tuple(B.shape)} "
                         f"do not broadcast: {e}") from None


# ---------------------------------------------------------------- determinants
class LogAbsDet(Function):
    def forward(self, a):
        self.saves = (0,)
        return self.xp.linalg.slogdet(a)[1]

    def backward(self, g):
        (a,) = self.saved_tensors
        return (g[..., None, None] * inverse(a).mT,)


class Det(Function):
    save_output = True

    def forward(self, a):
        self.saves = (0,)
        return self.xp.linalg.det(a)

    def backward(self, g):
        a, d = self.saved_tensors
        return ((g * d)[..., None, None] * inverse(a).mT,)


@tensor_method()
def det(input) -> Tensor:
    """The determinant of each square matrix."""
    check_matrices(input, "det")
    return Det.apply(input)


@tensor_method()
def slogdet(input) -> tuple:
    """(sign, log|det|) of each square matrix; the sign is a constant."""
    check_matrices(input, "slogdet")
    dev = input._device
    sign = Tensor._make(dev.xp.asarray(dev.xp.sign(dev.xp.linalg.det(input._data))), dev)
    return sign, LogAbsDet.apply(input)


@tensor_method()
def logdet(input) -> Tensor:
    """log(det) of each square matrix: nan where the determinant is negative."""
    sign, logabs = slogdet(input)
    xp = input._device.xp
    nan_where_negative = xp.where(sign._data < 0, math.nan, 0).astype(logabs._data.dtype)
    return logabs + Tensor._make(nan_where_negative, input._device)


# --------------------------------------------------------------------- cholesky
class Cholesky(Function):
    """L lower-triangular with L L^T = A; its gradient is symmetric, as torch's."""

    save_output = True

    def forward(self, a):
        return self.xp.linalg.cholesky(a)

    def backward(self, g):
        (low,) = self.saved_tensors
        phi = tril(low.mT @ g)
        phi = phi - 0.5 * diag_embed(diagonal(phi, 0, -2, -1))
        inv_low = inverse(low)
        s = inv_low.mT @ phi @ inv_low
        return (0.5 * (s + s.mT),)


@tensor_method()
def cholesky(input, upper: bool = False) -> Tensor:
    """The Cholesky factor of each symmetric positive-definite matrix: lower-triangular L
    with L L^T = A, or U = L^T with `upper=True`."""
    check_matrices(input, "cholesky")
    low = lapack("cholesky", Cholesky.apply, input)
    return low.mT if upper else low


# --------------------------------------------------------------------------- qr
class QR(Decomposition):
    @staticmethod
    def compute(xp, a, mode):
        q, r = xp.linalg.qr(a, mode="reduced" if mode == "r" else mode)
        return (xp.empty((0,), a.dtype), r) if mode == "r" else (q, r)

    def gradient(self, inputs, outputs, grads):
        (a,), (q, r), (gq, gr) = inputs, outputs, grads
        m, n = a.shape[-2:]
        if self.params["mode"] == "r" or (self.params["mode"] == "complete" and m > n):
            raise AutogradError(f"linalg.qr: the gradient needs mode='reduced' (or 'complete' "
                                f"for square matrices), got mode={self.params['mode']!r}")
        if m < n:
            raise AutogradError(f"linalg.qr: the gradient is implemented for matrices with at "
                                f"least as many rows as columns, got shape {tuple(a.shape)}")
        # gA = (gQ + Q copyltu(M)) R^-T with M = R gR^T - gQ^T Q (copyltu: lower mirrored)
        gq = gq if gq is not None else q * 0
        mmat = -(gq.mT @ q) if gr is None else r @ gr.mT - gq.mT @ q
        copyltu = tril(mmat) + tril(mmat, -1).mT
        b = gq + q @ copyltu
        return (solve_matrices(r, b.mT).mT,)


@tensor_method()
def qr(input, some: bool = True) -> tuple:
    """(Q, R) of each matrix (torch.qr): reduced unless `some=False`."""
    check_matrices(input, "qr", square=False)
    return decompose(QR, input, op="qr", mode="reduced" if some else "complete")


# -------------------------------------------------------------------------- svd
class SVD(Decomposition):
    @staticmethod
    def compute(xp, a, full_matrices):
        u, s, vh = xp.linalg.svd(a, full_matrices=full_matrices)
        return u, s, vh

    def gradient(self, inputs, outputs, grads):
        (u, s, vh), (gu, gs, gvh) = outputs, grads
        k = s.shape[-1]
        if self.params["full_matrices"]:  # the extra columns are arbitrary: only the first k
            u, vh = u[..., :k], vh[..., :k, :]
            gu = None if gu is None else gu[..., :k]
            gvh = None if gvh is None else gvh[..., :k, :]
        if gu is None and gvh is None:
            return ((u * gs.unsqueeze(-2)) @ vh,)
        # gA = U [(skew(U^T gU)/E) S + S (skew(V^T gV)/E) + diag(gS)] V^T
        #      + (I - U U^T) gU S^-1 V^T + U S^-1 gV^T (I - V V^T),  E_jk = S_k^2 - S_j^2
        s2 = s * s
        e = s2.unsqueeze(-2) - s2.unsqueeze(-1) + diag_embed(s2 * 0 + 1)
        inner = diag_embed(gs) if gs is not None else diag_embed(s * 0)
        result = 0
        if gu is not None:
            utgu = u.mT @ gu
            inner = inner + ((utgu - utgu.mT) / e) * s.unsqueeze(-2)
            result = ((gu - u @ utgu) / s.unsqueeze(-2)) @ vh
        if gvh is not None:
            vtgv = vh @ gvh.mT
            inner = inner + s.unsqueeze(-1) * ((vtgv - vtgv.mT) / e)
            result = result + (u / s.unsqueeze(-2)) @ (gvh - (gvh @ vh.mT) @ vh)
        return (u @ inner @ vh + result,)


def singular_values(A: Tensor) -> Tensor:
    """The singular values of each matrix, largest first (differentiable twice)."""
    return decompose(SVD, A, op="linalg.svdvals", full_matrices=False)[1]


@tensor_method()
def svd(input, some: bool = True, compute_uv: bool = True) -> tuple:
    """(U, S, V) of each matrix (torch.svd: V, not V^T; reduced unless `some=False`)."""
    check_matrices(input, "svd", square=False)
    if not compute_uv:  # torch's zero-filled factors of the full shapes
        xp, (m, n) = input._device.xp, input.shape[-2:]
        zeros = [Tensor._make(xp.zeros(input.shape[:-2] + (k, k), input._data.dtype),
                              input._device) for k in (m, n)]
        return zeros[0], singular_values(input), zeros[1]
    u, s, vh = decompose(SVD, input, op="svd", full_matrices=not some)
    return u, s, vh.mT


# ------------------------------------------------------------------------- eigh
class Eigh(Decomposition):
    @staticmethod
    def compute(xp, a, uplo):
        w, v = xp.linalg.eigh(a, UPLO=uplo)
        return w, v

    def gradient(self, inputs, outputs, grads):
        (w, v), (gw, gv) = outputs, grads
        inner = diag_embed(gw) if gw is not None else diag_embed(w * 0)
        if gv is not None:
            vtgv = v.mT @ gv
            e = w.unsqueeze(-2) - w.unsqueeze(-1) + diag_embed(w * 0 + 1)
            inner = inner + 0.5 * (vtgv - vtgv.mT) / e
        return (v @ inner @ v.mT,)


class Eig(Decomposition):
    """Eigenvalues and unit eigenvectors of a general square matrix, always complex (as
    torch's); the gradient is torch's, for functions invariant to each vector's phase."""

    complex_grad = True

    @staticmethod
    def compute(xp, a):
        if not hasattr(xp.linalg, "eig"):
            raise DeviceError("linalg.eig: CuPy has no general eigensolver; valid: a CPU "
                              "tensor (A.cpu()), or linalg.eigh for symmetric matrices")
        w, v = xp.linalg.eig(a)
        kind = a.dtype if a.dtype.kind == "c" else xp.result_type(a.dtype, xp.complex64)
        return w.astype(kind, copy=False), v.astype(kind, copy=False)

    def gradient(self, inputs, outputs, grads):
        from .complex_numbers import conj, real

        (a,), (w, v), (gw, gv) = inputs, outputs, grads
        vh = conj(v).mT
        inner = diag_embed(gw) if gw is not None else diag_embed(w * 0)
        if gv is not None:
            vhgv = vh @ gv
            # keep the vectors' unit norm: remove V^H V diag(re(V^H gV))
            vhgv = vhgv - vh @ (v * real(diagonal(vhgv, 0, -2, -1)).unsqueeze(-2))
            e = conj(w.unsqueeze(-2) - w.unsqueeze(-1)) + diag_embed(w * 0 + 1)
            inner = inner + vhgv / e
        ga = solve_matrices(vh, inner @ vh, "linalg.eig")
        return (ga if a._data.dtype.kind == "c" else real(ga),)


# ------------------------------------------------------------------------- pinv
class PseudoInverse(Function):
    """The pseudo-inverse from the singular values above a cutoff; its gradient, where the
    rank does not change, is Golub and Pereyra's (1973)."""

    save_output = True

    def forward(self, a, atol, rtol):
        self.saves = (0,)
        xp = self.xp
        u, s, vh = xp.linalg.svd(a, full_matrices=False)
        cutoff = xp.maximum(atol, rtol * s.max(-1, initial=0.0, keepdims=True))
        s_inv = xp.where(s > cutoff, 1 / xp.where(s > cutoff, s, 1), 0)
        return (vh.swapaxes(-1, -2) * s_inv[..., None, :]) @ u.swapaxes(-1, -2)

    def backward(self, g):
        a, p = self.saved_tensors
        pt, gt = p.mT, g.mT
        m, n = a.shape[-2:]
        return (-(pt @ g @ pt)
                + (eye_like(a, m) - a @ p) @ gt @ (p @ pt)
                + (pt @ p) @ gt @ (eye_like(a, n) - p @ a),)


def pinv_cutoffs(A: Tensor, atol, rtol) -> tuple:
    """torch's defaults: rtol = eps * max(m, n) unless atol is given (then 0)."""
    import numpy as np

    eps = float(np.finfo(A._data.dtype).eps)
    if rtol is None:
        rtol = eps * max(A.shape[-2:]) if atol is None or atol == 0 else 0.0
    return float(atol or 0.0), float(rtol)


@tensor_method()
def pinverse(input, rcond: float = 1e-15) -> Tensor:
    """The Moore-Penrose pseudo-inverse (torch.pinverse: singular values below
    `rcond` times the largest count as zero)."""
    check_matrices(input, "pinverse", square=False)
    return PseudoInverse.apply(input, atol=0.0, rtol=float(rcond))


# ------------------------------------------------------------------------- lu
class LUFactor(Decomposition):
    """Partial-pivot LU, packed as LAPACK's getrf: L below the diagonal (its unit diagonal
    implied) and U on and above, and 1-based pivots (row i was swapped with pivots[i])."""

    @staticmethod
    def compute(xp, a):
        m, n = a.shape[-2:]
        k = min(m, n)
        lu = a.reshape((-1, m, n)).copy()
        rows = xp.arange(lu.shape[0])
        pivots = xp.zeros((lu.shape[0], k), dtype=xp.int32)
        for j in range(k):
            p = xp.abs(lu[:, j:, j]).argmax(-1) + j
            pivots[:, j] = p + 1
            swapped = lu[rows, p].copy()
            lu[rows, p] = lu[:, j]
            lu[:, j] = swapped
            pivot = lu[:, j, j]
            lu[:, j + 1:, j] /= xp.where(pivot == 0, 1, pivot)[:, None]
            lu[:, j + 1:, j + 1:] -= lu[:, j + 1:, j, None] * lu[:, j, None, j + 1:]
        return lu.reshape(a.shape), pivots.reshape(a.shape[:-2] + (k,))

    def gradient(self, inputs, outputs, grads):
        (a,), (lu, pivots), (glu, _) = inputs, outputs, grads
        m, n = a.shape[-2:]
        if m != n:
            raise AutogradError(f"linalg.lu_factor: the gradient is implemented for square "
                                f"matrices, got shape {tuple(a.shape)}")
        low = tril(lu, -1) + eye_like(a)
        up = triu(lu)
        # A = P L U: gA = P L^-T (tril(L^T gL, -1) + triu(gU U^T)) U^-T
        inner = tril(low.mT @ tril(glu, -1), -1) + triu(triu(glu) @ up.mT)
        x = solve_matrices(low.mT, inner)
        x = solve_matrices(up, x.mT).mT
        return (permutation_matrix(pivots, a) @ x,)


def permutation_matrix(pivots: Tensor, like: Tensor) -> Tensor:
    """P with A = P L U, from 1-based LAPACK pivots, for matrices shaped like `like`."""
    xp, dev = like._device.xp, like._device
    m = like.shape[-2]
    piv = pivots._data.reshape((-1, pivots.shape[-1])) - 1
    rows = xp.arange(piv.shape[0])
    perm = xp.broadcast_to(xp.arange(m), (piv.shape[0], m)).copy()
    for j in range(piv.shape[-1]):  # replay the row swaps: row i of P^T A is row perm[i]
        swapped = perm[rows, piv[:, j]].copy()
        perm[rows, piv[:, j]] = perm[:, j]
        perm[:, j] = swapped
    p = xp.eye(m, dtype=like._data.dtype)[perm].swapaxes(-1, -2)
    return Tensor._make(p.reshape(like.shape[:-2] + (m, m)).copy(), dev)


# -------------------------------------------------------------- matrix exponential
class MatrixExp(Function):
    """exp(A) by scaling and squaring a degree-18 Taylor polynomial; its gradient is the
    upper-right block of exp([[A^T, G], [0, A^T]]) (the Fréchet derivative at A^T)."""

    def forward(self, a):
        self.saves = (0,)
        xp = self.xp
        norm = float(xp.abs(a).sum(-2).max()) if a.size else 0.0
        squarings = max(0, math.ceil(math.log2(norm)) + 1) if norm > 0 else 0
        x = a / 2.0 ** squarings
        result = term = xp.broadcast_to(xp.eye(a.shape[-1], dtype=a.dtype), a.shape).copy()
        for k in range(1, 19):
            term = term @ x / k
            result = result + term
        for _ in range(squarings):
            result = result @ result
        return result

    def backward(self, g):
        from .shape import cat

        (a,) = self.saved_tensors
        n = a.shape[-1]
        at = a.mT
        block = cat([cat([at, g], -1), cat([at * 0, at], -1)], -2)
        return (matrix_exp(block)[..., :n, n:],)


@tensor_method()
def matrix_exp(input) -> Tensor:
    """The matrix exponential of each square matrix."""
    check_matrices(input, "matrix_exp")
    return MatrixExp.apply(input)


@tensor_method()
def matrix_power(input, n: int) -> Tensor:
    """The integer power of each square matrix by repeated squaring (the inverse's for
    n < 0, the identity for n = 0)."""
    check_matrices(input, "matrix_power")
    if n < 0:
        return matrix_power(inverse(input), -n)
    result, base = None, input
    while n:
        if n & 1:
            result = base if result is None else result @ base
        n >>= 1
        if n:
            base = base @ base
    if result is None:  # the identity, with torch's zero gradient
        return eye_like(input) + 0 * input
    return result
