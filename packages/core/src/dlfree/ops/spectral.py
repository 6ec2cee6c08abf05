"""The discrete Fourier transforms behind `dl.fft`: complex-to-complex, real-to-complex
(the half spectrum) and complex-to-real, over any dims, with torch's gradients.

Each backward is the adjoint transform: the opposite direction with the normalization
swapped ("backward" <-> "forward"), so it is itself differentiable. A real input's gradient
is the real part; the half spectrum's adjoint pads the missing half with zeros, and the
complex-to-real adjoint counts twice the bins that stand for a conjugate pair.
"""

from __future__ import annotations

from .. import dtypes
from ..autograd.function import Function
from ..tensor import Tensor
from .complex_numbers import real

SWAPPED = {"backward": "forward", "forward": "backward", "ortho": "ortho"}


def _complex_of(np_dtype):
    return dtypes._complex_of[np_dtype] if np_dtype.kind == "f" else np_dtype


class FourierC2C(Function):
    complex_grad = True

    def forward(self, x, dims, norm, inverse):
        self.dims, self.norm, self.inverse = dims, norm, inverse
        self.real_input = x.dtype.kind != "c"
        transform = self.xp.fft.ifftn if inverse else self.xp.fft.fftn
        return transform(x, axes=dims, norm=norm).astype(_complex_of(x.dtype), copy=False)

    def backward(self, g):
        gx = c2c(g, self.dims, SWAPPED[self.norm], not self.inverse)
        return (real(gx) if self.real_input else gx,)


class FourierR2C(Function):
    """The half spectrum (last of `dims` cut to n // 2 + 1) of a real input."""

    complex_grad = True

    def forward(self, x, dims, norm):
        self.dims, self.norm, self.n = dims, norm, x.shape[dims[-1]]
        return self.xp.fft.rfftn(x, axes=dims, norm=norm).astype(_complex_of(x.dtype),
                                                                  copy=False)

    def backward(self, g):
        last = self.dims[-1]
        missing = list(g.shape)
        missing[last] = self.n - g.shape[last]
        full = cat_zeros(g, last, missing)
        return (real(c2c(full, self.dims, SWAPPED[self.norm], True)),)


class FourierC2R(Function):
    """The real signal (last of `dims` of size `n`) of a half spectrum of n // 2 + 1 bins."""

    complex_grad = True

    def forward(self, y, dims, norm, n):
        self.dims, self.norm, self.n = dims, norm, n
        sizes = [y.shape[d] for d in dims[:-1]] + [n]
        out = self.xp.fft.irfftn(y, s=sizes, axes=dims, norm=norm)
        return out.astype(y.real.dtype, copy=False)

    def backward(self, g):
        gy = r2c(g, self.dims, SWAPPED[self.norm])
        last, bins = self.dims[-1], gy.shape[self.dims[-1]]
        # bins 1 .. n - bins stand for themselves and their conjugate mirror
        xp = g._device.xp
        weight = xp.ones(bins, dtype=g._data.dtype)
        weight[1:1 + self.n - bins] = 2
        shape = [1] * gy.ndim
        shape[last] = bins
        return (gy * Tensor._make(weight.reshape(shape), g._device),)


def cat_zeros(x: Tensor, dim: int, shape: list) -> Tensor:
    """`x` followed along `dim` by zeros of `shape` (nothing when that dim is 0)."""
    from .shape import cat

    if shape[dim] == 0:
        return x
    zeros = Tensor._make(x._device.xp.zeros(shape, dtype=x._data.dtype), x._device)
    return cat([x, zeros], dim)


def c2c(x: Tensor, dims: tuple, norm: str, inverse: bool) -> Tensor:
    return FourierC2C.apply(x, dims=dims, norm=norm, inverse=inverse)


def r2c(x: Tensor, dims: tuple, norm: str) -> Tensor:
    return FourierR2C.apply(x, dims=dims, norm=norm)


def c2r(y: Tensor, dims: tuple, norm: str, n: int) -> Tensor:
    return FourierC2R.apply(y, dims=dims, norm=norm, n=n)
