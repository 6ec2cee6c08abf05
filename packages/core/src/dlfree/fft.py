"""`dl.fft`: torch.fft's transforms on NumPy/CuPy's FFT, with torch's gradients.

`n`/`s` crop or zero-pad the input along the transformed dims first, as torch does;
`norm` is "backward" (the default: no scale forward, 1/n inverse), "ortho" (1/sqrt(n)
both ways) or "forward" (1/n forward). Integer inputs become the default float dtype. The
transforms themselves (and their backward rules) are ops, in `dlfree/ops/spectral.py`.
"""

from __future__ import annotations

import numbers

from . import dtypes
from .creation import arange
from .errors import DTypeError, ShapeError
from .ops._util import normalize_dim
from .ops.complex_numbers import conj
from .ops.shape import roll
from .ops.spectral import SWAPPED, c2c, c2r, cat_zeros, r2c
from .tensor import Tensor

__all__ = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2",
           "irfft2", "hfft2", "ihfft2", "fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn",
           "fftfreq", "rfftfreq", "fftshift", "ifftshift"]


def _norm(norm, op: str) -> str:
    if norm is None:
        return "backward"
    if norm not in SWAPPED:
        raise ValueError(f"fft.{op}: norm={norm!r}; valid: 'backward', 'ortho', 'forward' or "
                         "None")
    return norm


def _floating(x, op: str, real: bool = False) -> Tensor:
    if not isinstance(x, Tensor):
        raise DTypeError(f"fft.{op}: expected a Tensor, got {type(x).__name__}")
    kind = x._data.dtype.kind
    if real and kind == "c":
        raise DTypeError(f"fft.{op}: expects a real input tensor, got {x.dtype.name}; valid: "
                         "integer or floating-point tensors (use fft.fft for complex ones)")
    return x if kind in "fc" else x.to(dtypes.get_default_dtype())


def _dims_and_sizes(x: Tensor, s, dim, op: str) -> tuple:
    """The transformed dims (non-negative) and their sizes after cropping or padding."""
    if isinstance(dim, numbers.Integral):
        dim = (dim,)
    if isinstance(s, numbers.Integral):
        s = (s,)
    if dim is None:
        dim = tuple(range(x.ndim)) if s is None else tuple(range(x.ndim - len(s), x.ndim))
    dims = tuple(normalize_dim(d, x.ndim, f"fft.{op}") for d in dim)
    if len(set(dims)) != len(dims):
        raise ShapeError(f"fft.{op}: dim={dim} names a dimension twice")
    if s is not None and len(s) != len(dims):
        raise ShapeError(f"fft.{op}: s={tuple(s)} gives {len(s)} size(s) for {len(dims)} "
                         "dim(s); valid: one size per transformed dim")
    sizes = tuple(x.shape[d] for d in dims) if s is None else \
        tuple(x.shape[d] if n == -1 else int(n) for d, n in zip(dims, s, strict=True))
    if any(n < 1 for n in sizes):
        raise ShapeError(f"fft.{op}: invalid signal size {sizes} for shape {tuple(x.shape)}; "
                         "valid: sizes of at least 1")
    return dims, sizes


def _resized(x: Tensor, dims: tuple, sizes: tuple) -> Tensor:
    """`x` cropped or zero-padded along `dims` to `sizes`."""
    for d, n in zip(dims, sizes, strict=True):
        if x.shape[d] > n:
            x = x.narrow(d, 0, n)
        elif x.shape[d] < n:
            missing = list(x.shape)
            missing[d] = n - x.shape[d]
            x = cat_zeros(x, d, missing)
    return x


def _complex_transform(x, s, dim, norm, inverse: bool, op: str) -> Tensor:
    x = _floating(x, op)
    dims, sizes = _dims_and_sizes(x, s, dim, op)
    return c2c(_resized(x, dims, sizes), dims, _norm(norm, op), inverse)


def _real_to_half(x, s, dim, norm, op: str) -> Tensor:
    x = _floating(x, op, real=True)
    dims, sizes = _dims_and_sizes(x, s, dim, op)
    return r2c(_resized(x, dims, sizes), dims, _norm(norm, op))


def _half_to_real(x, s, dim, norm, op: str) -> Tensor:
    x = _floating(x, op)
    dims, sizes = _dims_and_sizes(x, s, dim, op)
    if s is None:  # the signal the half spectrum came from, of even length by default
        sizes = sizes[:-1] + (2 * (sizes[-1] - 1),)
    if sizes[-1] < 1:
        raise ShapeError(f"fft.{op}: invalid output size {sizes[-1]} for an input of shape "
                         f"{tuple(x.shape)}; valid: n of at least 1")
    half = _resized(x, dims, sizes[:-1] + (sizes[-1] // 2 + 1,))
    if half._data.dtype.kind != "c":
        half = half.to(dtypes.from_np(dtypes._complex_of[half._data.dtype]))
    return c2r(half, dims, _norm(norm, op), sizes[-1])


def fft(input, n=None, dim: int = -1, norm=None) -> Tensor:
    """The one-dimensional discrete Fourier transform along `dim`."""
    return _complex_transform(input, None if n is None else (n,), (dim,), norm, False, "fft")


def ifft(input, n=None, dim: int = -1, norm=None) -> Tensor:
    """The inverse of `fft`."""
    return _complex_transform(input, None if n is None else (n,), (dim,), norm, True, "ifft")


def rfft(input, n=None, dim: int = -1, norm=None) -> Tensor:
    """The FFT of a real signal: the n // 2 + 1 non-negative frequencies."""
    return _real_to_half(input, None if n is None else (n,), (dim,), norm, "rfft")


def irfft(input, n=None, dim: int = -1, norm=None) -> Tensor:
    """The real signal of length n (default 2 (m - 1)) with half spectrum `input`."""
    return _half_to_real(input, None if n is None else (n,), (dim,), norm, "irfft")


def hfft(input, n=None, dim: int = -1, norm=None) -> Tensor:
    """The FFT of a signal with Hermitian symmetry given by its first half: a real result."""
    return _half_to_real(conj(_floating(input, "hfft")), None if n is None else (n,), (dim,),
                         SWAPPED[_norm(norm, "hfft")], "hfft")


def ihfft(input, n=None, dim: int = -1, norm=None) -> Tensor:
    """The inverse of `hfft`: the half spectrum of a real signal's inverse FFT."""
    return conj(_real_to_half(input, None if n is None else (n,), (dim,),
                              SWAPPED[_norm(norm, "ihfft")], "ihfft"))


def fft2(input, s=None, dim=(-2, -1), norm=None) -> Tensor:
    """The two-dimensional FFT over `dim`."""
    return _complex_transform(input, s, dim, norm, False, "fft2")


def ifft2(input, s=None, dim=(-2, -1), norm=None) -> Tensor:
    """The inverse of `fft2`."""
    return _complex_transform(input, s, dim, norm, True, "ifft2")


def rfft2(input, s=None, dim=(-2, -1), norm=None) -> Tensor:
    """`rfftn` over two dims."""
    return _real_to_half(input, s, dim, norm, "rfft2")


def irfft2(input, s=None, dim=(-2, -1), norm=None) -> Tensor:
    """The inverse of `rfft2`."""
    return _half_to_real(input, s, dim, norm, "irfft2")


def hfft2(input, s=None, dim=(-2, -1), norm=None) -> Tensor:
    """`hfftn` over two dims."""
    return hfftn(input, s, dim, norm)


def ihfft2(input, s=None, dim=(-2, -1), norm=None) -> Tensor:
    """`ihfftn` over two dims."""
    return ihfftn(input, s, dim, norm)


def fftn(input, s=None, dim=None, norm=None) -> Tensor:
    """The n-dimensional FFT over `dim` (every dim by default, or the last len(s))."""
    return _complex_transform(input, s, dim, norm, False, "fftn")


def ifftn(input, s=None, dim=None, norm=None) -> Tensor:
    """The inverse of `fftn`."""
    return _complex_transform(input, s, dim, norm, True, "ifftn")


def rfftn(input, s=None, dim=None, norm=None) -> Tensor:
    """The n-dimensional FFT of a real input, the last dim cut to its n // 2 + 1
    non-negative frequencies."""
    return _real_to_half(input, s, dim, norm, "rfftn")


def irfftn(input, s=None, dim=None, norm=None) -> Tensor:
    """The inverse of `rfftn` (the last dim's length 2 (m - 1) unless `s` says)."""
    return _half_to_real(input, s, dim, norm, "irfftn")


def hfftn(input, s=None, dim=None, norm=None) -> Tensor:
    """The n-dimensional FFT of a signal Hermitian-symmetric in its last dim, given by its
    first half: a real result."""
    return _half_to_real(conj(_floating(input, "hfftn")), s, dim,
                         SWAPPED[_norm(norm, "hfftn")], "hfftn")


def ihfftn(input, s=None, dim=None, norm=None) -> Tensor:
    """The inverse of `hfftn`."""
    return conj(_real_to_half(input, s, dim, SWAPPED[_norm(norm, "ihfftn")], "ihfftn"))


def fftfreq(n: int, d: float = 1.0, *, dtype=None, device=None,
            requires_grad: bool = False) -> Tensor:
    """The sample frequencies of an n-point FFT with spacing d: [0, 1, ..., -1] / (d n)."""
    k = arange(n, dtype=dtypes.int64, device=device)
    freqs = roll(k - n // 2, -(n // 2)) if n else k
    out = freqs.to(dtype or dtypes.get_default_dtype()) / (d * n)
    return out.requires_grad_() if requires_grad else out


def rfftfreq(n: int, d: float = 1.0, *, dtype=None, device=None,
             requires_grad: bool = False) -> Tensor:
    """The non-negative sample frequencies of an n-point real FFT: [0, 1, ..., n // 2] /
    (d n)."""
    out = arange(n // 2 + 1, dtype=dtype or dtypes.get_default_dtype(), device=device) / (d * n)
    return out.requires_grad_() if requires_grad else out


def _shift_dims(x: Tensor, dim) -> tuple:
    if dim is None:
        return tuple(range(x.ndim))
    return (dim,) if isinstance(dim, numbers.Integral) else tuple(dim)


def fftshift(input, dim=None) -> Tensor:
    """The zero frequency moved to the middle of `dim` (all dims by default)."""
    dims = _shift_dims(input, dim)
    return roll(input, tuple(input.shape[d] // 2 for d in dims), dims)


def ifftshift(input, dim=None) -> Tensor:
    """The inverse of `fftshift`."""
    dims = _shift_dims(input, dim)
    return roll(input, tuple(-(input.shape[d] // 2) for d in dims), dims)
