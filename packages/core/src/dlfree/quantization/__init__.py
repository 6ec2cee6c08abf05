"""Quantization: observers that choose int8 scale/zero-point as torch.ao.quantization does,
fake quantization with straight-through gradients for quantization-aware training, and the
dynamically quantized Linear product."""

from dlfree.quantization.dynamic import dynamic_quantized_linear
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
    "dynamic_quantized_linear",
    "MinMaxObserver",
    "MovingAverageMinMaxObserver",
    "PerChannelMinMaxObserver",
    "fake_quantize_per_channel_affine",
    "fake_quantize_per_tensor_affine",
]
