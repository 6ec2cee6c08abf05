"""Parametrizations torch.nn.utils.parametrizations provides: `weight_norm` (Salimans &
Kingma, "Weight Normalization", 2016) and `spectral_norm` (Miyato et al., "Spectral
Normalization for Generative Adversarial Networks", ICLR 2018)."""

from __future__ import annotations

import dlfree as dl
from dlfree import functional as F

from ..module import Module
from .parametrize import register_parametrization

__all__ = ["weight_norm", "spectral_norm"]


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
