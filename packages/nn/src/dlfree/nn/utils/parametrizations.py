"""Parametrizations torch.nn.utils.parametrizations provides: `weight_norm` (Salimans &
Kingma, "Weight Normalization", 2016), `spectral_norm` (Miyato et al., "Spectral
Normalization for Generative Adversarial Networks", ICLR 2018) and `orthogonal` (a matrix
with orthonormal columns or rows, through the matrix exponential, the Cayley map or
Householder reflectors, as in Lezcano-Casado & Martínez-Rubio, "Cheap Orthogonal
Constraints in Neural Networks", ICML 2019)."""

from __future__ import annotations

import dlfree as dl
from dlfree import functional as F

from ..module import Module
from .parametrize import register_parametrization

__all__ = ["weight_norm", "spectral_norm", "orthogonal"]

_ORTHOGONAL_MAPS = ("matrix_exp", "cayley", "householder")


def _norm_except(v, dim: int):
    """The 2-norm of `v` over every dim but `dim` (keeping them as size 1); over all of `v`
    for dim=-1, as torch's norm_except_dim."""
    if dim == -1:
        return v.square().sum().sqrt()
    dims = [d for d in range(v.ndim) if d != dim]
    return v.square().sum(dims, keepdim=True).sqrt()


class _WeightNorm(Module):
    """weight = g * v / ||v||, the norm over all dims but `dim`; stores (g, v)."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, weight_g, weight_v):
        return weight_v * (weight_g / _norm_except(weight_v, self.dim))

    def right_inverse(self, weight):
        return _norm_except(weight, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Reparametrize `module.<name>` as g * v / ||v|| (g: `original0`, v: `original1`),
    the norm taken over every dim but `dim` (over all of it for dim=None)."""
    weight = getattr(module, name)
    dim = -1 if dim is None else dim % weight.ndim
    return register_parametrization(module, name, _WeightNorm(dim))


class _SpectralNorm(Module):
    """weight / sigma, sigma the largest singular value of the weight as a matrix (dim
    `dim` first, the rest flattened), estimated by power iteration on the buffers u and v:
    `n_power_iterations` more each forward in training mode."""

    def __init__(self, weight, n_power_iterations: int, dim: int, eps: float):
        super().__init__()
        if n_power_iterations <= 0:
            raise ValueError(f"spectral_norm: n_power_iterations must be positive, got "
                             f"{n_power_iterations}")
        self.dim = dim % weight.ndim if weight.ndim else 0
        self.eps = eps
        self.n_power_iterations = n_power_iterations
        if weight.ndim > 1:
            matrix = self._matrix(weight)
            h, w = matrix.shape
            self.register_buffer("_u", F.normalize(dl.randn(h, dtype=weight.dtype), dim=0,
                                                   eps=eps))
            self.register_buffer("_v", F.normalize(dl.randn(w, dtype=weight.dtype), dim=0,
                                                   eps=eps))
            self._power_method(matrix, 15)

    def _matrix(self, weight):
        if self.dim != 0:
            weight = weight.permute(self.dim, *[d for d in range(weight.ndim) if d != self.dim])
        return weight.flatten(1)

    def _power_method(self, matrix, iterations: int) -> None:
        with dl.no_grad():
            for _ in range(iterations):
                self._u.copy_(F.normalize(matrix @ self._v, dim=0, eps=self.eps))
                self._v.copy_(F.normalize(matrix.t() @ self._u, dim=0, eps=self.eps))

    def forward(self, weight):
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        matrix = self._matrix(weight)
        if self.training:
            self._power_method(matrix.detach(), self.n_power_iterations)
        sigma = (self._u.clone() * (matrix @ self._v.clone())).sum()
        return weight / sigma


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: int | None = None) -> Module:
    """Divide `module.<name>` by its spectral norm on every access (buffers `_u`, `_v` of
    `parametrizations.<name>.0`); `dim` defaults to 1 for transposed convolutions, else 0."""
    weight = getattr(module, name)
    if dim is None:
        dim = 1 if type(module).__name__.startswith("ConvTranspose") else 0
    return register_parametrization(module, name,
                                    _SpectralNorm(weight, n_power_iterations, dim, eps))


class _Orthogonal(Module):
    """An (n, k) matrix (or a batch) with orthonormal columns, or rows when it is wide, from
    an unconstrained one X of the same shape.

    matrix_exp and cayley map the skew-symmetric A = L - L^T (L: X's lower triangle, padded
    to n x n) to exp(A) or (I - A/2)^-1 (I + A/2) and keep k columns; householder
    multiplies the reflectors stored below X's diagonal, signed by X's diagonal. With the
    trivialization (the default) the result is also multiplied by the orthogonal `base`
    buffer, which assigning a weight sets, so X starts at the identity point."""

    def __init__(self, weight, orthogonal_map: str, *, use_trivialization: bool = True):
        super().__init__()
        self.shape = tuple(weight.shape)
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X):
        n, k = X.shape[-2:]
        transposed = n < k
        if transposed:
            X, n, k = X.mT, k, n
        if self.orthogonal_map == "householder":
            A = X.tril(-1)
            tau = 2.0 / (1.0 + (A * A).sum(-2))
            # the diagonal's signs (+-1, not learned: the cast carries no gradient)
            Q = dl.linalg.householder_product(A, tau) * X.diagonal(0, -2, -1).int().unsqueeze(-2)
        else:
            L = X.tril()
            if n != k:  # embedded in an n x n matrix
                L = dl.cat([L, dl.zeros(*L.shape[:-1], n - k, dtype=L.dtype,
                                        device=L.device)], -1)
            A = L - L.mT
            if self.orthogonal_map == "matrix_exp":
                Q = dl.linalg.matrix_exp(A)
            else:
                eye = dl.eye(n, dtype=A.dtype, device=A.device)
                Q = dl.linalg.solve(eye - A / 2, eye + A / 2)
            Q = Q[..., :k]
        if "base" in self._buffers:
            Q = self.base @ Q
        return Q.mT if transposed else Q

    def right_inverse(self, Q):
        """The X giving `Q`: with the trivialization, `base` becomes Q (made orthogonal,
        completed to n x n) and X is -I; without it, householder's X comes from Q's QR."""
        if tuple(Q.shape) != self.shape:
            raise ValueError(f"orthogonal: expected a matrix or batch of matrices of shape "
                             f"{self.shape}, got {tuple(Q.shape)}")
        with dl.no_grad():
            given = Q
            n, k = Q.shape[-2:]
            transposed = n < k
            if transposed:
                Q, n, k = Q.mT, k, n
            if "base" not in self._buffers:
                if self.orthogonal_map != "householder":
                    raise NotImplementedError(
                        f"orthogonal: a weight cannot be assigned to the "
                        f"{self.orthogonal_map} map with use_trivialization=False (only "
                        f"householder's X can be recovered from Q)")
                A, tau = dl.geqrf(Q)
                # diag(R) > 0, and a reflector LAPACK skipped (tau = 0) flips its sign
                diagonal = A.diagonal(0, -2, -1)
                diagonal.copy_(diagonal.sign() * dl.where(tau == 0, -1.0, 1.0).to(A.dtype))
                return A.mT if transposed else A
            if n == k and _is_orthogonal(Q):
                base = Q.clone()
            elif n == k:
                base = _orthonormalised(Q)
            else:  # completed with random columns to a square orthogonal matrix
                extra = dl.randn(*Q.shape[:-1], n - k, dtype=Q.dtype, device=Q.device)
                base = _orthonormalised(dl.cat([Q, extra], -1))
            self.base = base
            X = dl.zeros_like(given)
            X.diagonal(0, -2, -1).fill_(-1.0)
            return X


def _is_orthogonal(Q) -> bool:
    """Whether Q^T Q is the identity within 10 n eps of Q's dtype."""
    n, k = Q.shape[-2:]
    eye = dl.eye(k, dtype=Q.dtype, device=Q.device)
    return bool(dl.allclose(Q.mT @ Q, eye, atol=10.0 * n * float(dl.finfo(Q.dtype).eps)))


def _orthonormalised(A):
    """The Q of A = QR with diag(R) >= 0 (a tall A)."""
    Q, R = dl.linalg.qr(A)
    return Q * R.diagonal(0, -2, -1).sign().unsqueeze(-2)


def orthogonal(module: Module, name: str = "weight", orthogonal_map: str | None = None, *,
               use_trivialization: bool = True) -> Module:
    """Constrain `module.<name>` to orthonormal columns (rows for a wide matrix), through
    `orthogonal_map`: "matrix_exp" (the default for square matrices), "cayley" or
    "householder" (the default otherwise). The current weight is kept: it becomes the
    `base` of the trivialization (made orthogonal first if it is not)."""
    weight = getattr(module, name, None)
    if not isinstance(weight, dl.Tensor):
        raise ValueError(f"orthogonal: {type(module).__name__} has no parameter or buffer "
                         f"named {name!r}")
    if weight.ndim < 2:
        raise ValueError(f"orthogonal: expected a matrix or a batch of matrices, got a tensor "
                         f"of {weight.ndim} dimension(s)")
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if weight.shape[-2] == weight.shape[-1] or \
            weight.is_complex() else "householder"
    if orthogonal_map not in _ORTHOGONAL_MAPS:
        raise ValueError(f"orthogonal: orthogonal_map must be one of {_ORTHOGONAL_MAPS}, got "
                         f"{orthogonal_map!r}")
    if orthogonal_map == "householder" and weight.is_complex():
        raise ValueError("orthogonal: the householder map does not support complex tensors")
    return register_parametrization(
        module, name, _Orthogonal(weight, orthogonal_map, use_trivialization=use_trivialization),
        unsafe=True)
