"""Fake quantization: round to the integer grid and back in floating point, so training sees
the error int8 inference will make; the gradient passes straight through inside the range."""

from __future__ import annotations

import numpy as np

from ..autograd.function import Function
from ..errors import ShapeError
from ..tensor import Tensor


def _check_range(name, quant_min, quant_max, zero_point):
    if not quant_min < quant_max:
        raise ValueError(f"{name}: quant_min must be below quant_max, got {quant_min}, {quant_max}")
    zp = np.asarray(zero_point)
    if ((zp < quant_min) | (zp > quant_max)).any():
        raise ValueError(
            f"{name}: zero_point must lie in [quant_min, quant_max] = [{quant_min}, {quant_max}]"
        )


class FakeQuantize(Function):
    """(clamp(rint(x / scale) + zp, qmin, qmax) - zp) * scale, with torch's arithmetic (x times
    the float32 reciprocal of the scale); the gradient is the incoming one where the rounded
    value lies in [qmin, qmax] and zero elsewhere. `scale`/`zero_point` arrive broadcastable
    to x (one value, or one per channel)."""

    @classmethod
    def data_attributes(cls, params: dict) -> list:
        """None: scale and zero_point are the quantizer's state, not values computed from
        the input, so a traced graph rightly keeps them (and exports them as QDQ nodes)."""
        return []

    def forward(self, x, scale, zero_point, quant_min, quant_max):
        xp = self.xp
        inv = (xp.float32(1.0) / scale).astype(x.dtype)
        zp = zero_point.astype(x.dtype)
        q = xp.rint(x * inv) + zp
        self.mask = (q >= quant_min) & (q <= quant_max)
        return (xp.clip(q, quant_min, quant_max) - zp) * scale.astype(x.dtype)

    def backward(self, g):
        return (g * Tensor._make(self.mask.astype(g._data.dtype), self.device),)


def _param(x, value, dtype):
    return x._device.xp.asarray(np.asarray(value, dtype=dtype))


def fake_quantize_per_tensor_affine(input, scale, zero_point, quant_min, quant_max):
    """torch.fake_quantize_per_tensor_affine: one float `scale` and integer `zero_point`."""
    _check_range("fake_quantize_per_tensor_affine", quant_min, quant_max, int(zero_point))
    if float(scale) <= 0:
        raise ValueError(f"fake_quantize_per_tensor_affine: scale must be positive, got {scale}")
    s = _param(input, float(scale), np.float32)
    z = _param(input, int(zero_point), np.int64)
    return FakeQuantize.apply(input, scale=s, zero_point=z, quant_min=quant_min,
                              quant_max=quant_max)


def fake_quantize_per_channel_affine(input, scale, zero_point, axis, quant_min, quant_max):
    """torch.fake_quantize_per_channel_affine: `scale`/`zero_point` hold one value per slice of
    `input` along `axis` (arrays or Tensors)."""
    name = "fake_quantize_per_channel_affine"
    s = np.asarray(scale.numpy() if hasattr(scale, "numpy") else scale, np.float32).ravel()
    z = np.asarray(zero_point.numpy() if hasattr(zero_point, "numpy") else zero_point)
    z = z.astype(np.int64).ravel()
    _check_range(name, quant_min, quant_max, z)
    if not -input.ndim <= axis < input.ndim:
        raise ShapeError(f"{name}: axis {axis} is out of range for {input.ndim} dimensions")
    n = input.shape[axis]
    if s.shape != (n,) or z.shape != (n,):
        raise ShapeError(
            f"{name}: scale and zero_point need {n} values (the size of axis {axis}), got "
            f"{s.size} and {z.size}"
        )
    if (s <= 0).any():
        raise ValueError(f"{name}: every scale must be positive")
    shape = [1] * input.ndim
    shape[axis] = n
    return FakeQuantize.apply(input, scale=_param(input, s.reshape(shape), np.float32),
                              zero_point=_param(input, z.reshape(shape), np.int64),
                              quant_min=quant_min, quant_max=quant_max)
