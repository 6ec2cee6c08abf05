"""Resampling: interpolate (nearest, linear, bilinear, bicubic, trilinear, area) and pixel
shuffling (pixel_shuffle, pixel_unshuffle).

Interpolation is a weighted sum of input taps along each spatial axis, the same linear maps
along one axis (`pool._Taps`) that the average pools use, so its derivatives of every order
are such maps too; 'area' mode is adaptive average pooling. Pixel shuffling is a reshape and
a permute.
"""

from __future__ import annotations

import numbers

from .. import dtypes
from ..errors import ShapeError
from ..tensor import Tensor
from ._util import check_float
from .pool import _INT64, _adaptive_avg_pool, _check_input, _separable, _Taps

__all__ = ["pixel_shuffle", "pixel_unshuffle", "interpolate"]


# -------------------------------------------------------------- pixel shuffle
def _check_shuffle(op: str, input: Tensor, factor, name: str) -> int:
    if input.ndim < 3:
        raise ShapeError(f"{op}: expected an input of shape (*, C, H, W) with at least 3 "
                         f"dimensions, got shape {tuple(input.shape)}")
    if not isinstance(factor, numbers.Integral) or factor <= 0:
        raise ShapeError(f"{op}: {name} must be a positive int, got {factor!r}")
    return int(factor)


def pixel_shuffle(input, upscale_factor):
    """Rearrange (*, C r^2, H, W) into (*, C, H r, W r): each group of r^2 channels becomes
    an r x r block of pixels."""
    r = _check_shuffle("pixel_shuffle", input, upscale_factor, "upscale_factor")
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise ShapeError(f"pixel_shuffle: the channel dimension {c} of input shape "
                         f"{tuple(input.shape)} must be divisible by upscale_factor^2 = {r * r}")
    n = len(lead)
    x = input.reshape(tuple(lead) + (c // (r * r), r, r, h, w))
    x = x.permute(tuple(range(n + 1)) + (n + 3, n + 1, n + 4, n + 2))
    return x.reshape(tuple(lead) + (c // (r * r), h * r, w * r))


def pixel_unshuffle(input, downscale_factor):
    """Rearrange (*, C, H r, W r) into (*, C r^2, H, W), the inverse of pixel_shuffle."""
    r = _check_shuffle("pixel_unshuffle", input, downscale_factor, "downscale_factor")
    *lead, c, h, w = input.shape
    if h % r or w % r:
        raise ShapeError(f"pixel_unshuffle: the height {h} and width {w} of input shape "
                         f"{tuple(input.shape)} must be divisible by downscale_factor {r}")
    n = len(lead)
    x = input.reshape(tuple(lead) + (c, h // r, r, w // r, r))
    x = x.permute(tuple(range(n + 1)) + (n + 2, n + 4, n + 1, n + 3))
    return x.reshape(tuple(lead) + (c * r * r, h // r, w // r))


# -------------------------------------------------------------- interpolation
_MODE_RANKS = {"nearest": (3, 4, 5), "nearest-exact": (3, 4, 5), "area": (3, 4, 5),
               "linear": (3,), "bilinear": (4,), "bicubic": (4,), "trilinear": (5,)}
_CUBIC_A = -0.75


def _source(xp, n: int, out: int, scale, align_corners: bool, centred: bool, dt):
    """torch's source coordinate of each output position along an axis, in `dt`:
    step * (i + 0.5) - 0.5 when `centred` (rounded once, as the fused multiply-add of
    torch's compiled kernels), else step * i."""
    if align_corners:
        step = dt(n - 1) / dt(out - 1) if out > 1 else dt(0)
    else:
        step = dt(1.0 / scale) if scale else dt(n) / dt(out)
    if not centred:
        return xp.arange(out, dtype=dt) * step
    return (float(step) * (xp.arange(out, dtype=xp.float64) + 0.5) - 0.5).astype(dt)


def _cubic_weights(xp, t, dt):
    """Keys' cubic convolution weights (a = -0.75, as torch) of the 4 taps around `t`."""
    a = dt(_CUBIC_A)

    def near(x):  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    rest = 1 - t
    return xp.stack([far(t + 1), near(t), near(rest), far(rest + 1)], 1)


def _interp_taps(xp, mode: str, n: int, out: int, scale, align_corners: bool, dt):
    """The `_Taps` resampling an axis of size `n` to `out` (None: the identity)."""
    nearest = mode in ("nearest", "nearest-exact")
    if out == n and (scale is None if nearest else mode != "bicubic" and not align_corners):
        return None  # torch copies this axis
    if mode == "nearest":
        src = _source(xp, n, out, scale, False, False, dt)
    elif mode == "nearest-exact":
        src = xp.maximum(_source(xp, n, out, scale, False, True, dt), dt(0))
        src = (src.astype(xp.float64) + 0.5).astype(dt)
    else:
        src = _source(xp, n, out, scale, align_corners, not align_corners, dt)
    if mode == "bicubic":
        base = xp.floor(src).astype(_INT64)
        taps = xp.clip(base[:, None] + xp.arange(-1, 3), 0, n - 1)
        return _Taps(xp, taps, n, _cubic_weights(xp, src - base, dt))
    src = xp.maximum(src, dt(0))
    base = xp.minimum(xp.floor(src).astype(_INT64), n - 1)
    if nearest:
        return _Taps(xp, base[:, None], n)
    frac = xp.clip(src - base, dt(0), dt(1))
    taps = xp.stack([base, xp.minimum(base + 1, n - 1)], 1)
    return _Taps(xp, taps, n, xp.stack([1 - frac, frac], 1))


def _per_axis(value, d: int, name: str, input: Tensor) -> tuple:
    """A number for every spatial axis, or a sequence with one entry per axis."""
    if isinstance(value, numbers.Real):
        return (value,) * d
    if len(value) != d:
        raise ShapeError(f"interpolate: {name} {value!r} must have one entry per spatial "
                         f"dimension of the input of shape {tuple(input.shape)}")
    return tuple(value)


def _interp_sizes(input: Tensor, d: int, size, scale_factor, mode: str,
                  recompute: bool) -> tuple:
    """Output sizes and the scale factors that set the source coordinates (None: sizes)."""
    if (size is None) == (scale_factor is None):
        raise ShapeError("interpolate: give exactly one of size and scale_factor, got "
                         f"size={size!r} and scale_factor={scale_factor!r}")
    spatial = tuple(input.shape)[2:]
    if size is not None:
        if recompute:
            raise ShapeError("interpolate: recompute_scale_factor is not meaningful with an "
                             "explicit size")
        sizes = tuple(int(s) for s in _per_axis(size, d, "size", input))
        scales = (None,) * d
    else:
        scales = tuple(float(s) for s in _per_axis(scale_factor, d, "scale_factor", input))
        sizes = tuple(int(n * s) for n, s in zip(spatial, scales, strict=True))
        if recompute:
            scales = (None,) * d
    if min(sizes) < 0 or min(sizes) == 0 and mode != "area":
        raise ShapeError(f"interpolate: input and output sizes must be greater than 0, got "
                         f"input {spatial} and output {sizes}")
    return sizes, tuple(s if s is not None and s > 0 else None for s in scales)


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """Resample (N, C, *spatial) input to `size` or by `scale_factor`, as torch's interpolate.

    Modes: 'nearest' and 'nearest-exact' (3-, 4- or 5-d), 'linear' (3-d), 'bilinear' and
    'bicubic' (4-d), 'trilinear' (5-d), 'area' (adaptive average pooling). `align_corners`
    (linear modes only) maps the corner pixels' centres onto each other.
    """
    if mode not in _MODE_RANKS:
        raise ValueError(f"interpolate: unknown mode {mode!r}; valid: {', '.join(_MODE_RANKS)}")
    if input.ndim not in _MODE_RANKS[mode]:
        raise ShapeError(f"interpolate: mode {mode!r} expects a "
                         f"{' or '.join(map(str, _MODE_RANKS[mode]))}-d input (N, C, ...), got "
                         f"shape {tuple(input.shape)}")
    if align_corners is not None and mode in ("nearest", "nearest-exact", "area"):
        raise ValueError(f"interpolate: align_corners can only be set with the interpolating "
                         f"modes linear, bilinear, bicubic and trilinear, not {mode!r}")
    if antialias:
        raise NotImplementedError("interpolate: antialias=True is not supported; downsample "
                                  "with mode='area' for an anti-aliased result")
    check_float(input, "interpolate")
    d = input.ndim - 2
    _check_input(input, d, "interpolate", unbatched=False)
    # area mode needs integer sizes, as if recompute_scale_factor were set
    recompute = bool(recompute_scale_factor) or (mode == "area" and size is None)
    sizes, scales = _interp_sizes(input, d, size, scale_factor, mode, recompute)
    if mode == "area":
        return _adaptive_avg_pool("interpolate", d, input, sizes)
    xp = input._device.xp
    dt = (dtypes.float64 if input._data.dtype == dtypes.float64.np else dtypes.float32).np.type
    per_axis = [_interp_taps(xp, mode, n, out, scale, align_corners, dt)
                for n, out, scale in zip(input._data.shape[2:], sizes, scales, strict=True)]
    return _separable(input, per_axis)
