"""Quantization: observers that choose int8 scale/zero-point as torch.ao.quantization does,
and fake quantization with straight-through gradients for quantization-aware training."""

from dlfree.quantization.fake_quantize import (
    fake_quantize_per_channel_affine,
    fake_quantize_per_tensor_affine,
)
from dlfree.quantization.observers import (
    MinMaxObserver,
    MovingAverageMinMaxObserver,
    PerChannelMinMaxObserver,
)

__all__ = [
    "MinMaxObserver",
    "MovingAverageMinMaxObserver",
    "PerChannelMinMaxObserver",
    "fake_quantize_per_channel_affine",
    "fake_quantize_per_tensor_affine",
]
