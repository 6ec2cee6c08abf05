"""Quantization of dlfree-nn models, after torch.ao.quantization: fake-quantizing modules and
qconfigs, layer fusion, quantization-aware training, post-training static calibration and
dynamic int8 Linear. The observers and fake-quantize ops are dlfree.quantization's."""

from .fake_quant import (
    FakeQuantize,
    QConfig,
    default_per_channel_qat_qconfig,
    default_qat_qconfig,
    default_qconfig,
)
from .modules import (
    DynamicQuantizedLinear,
    FusedReLU,
    QATConv1d,
    QATConv2d,
    QATConv3d,
    QATLinear,
    QuantStub,
    default_dynamic_qconfig,
    per_channel_dynamic_qconfig,
)
from .transforms import calibrate, convert, fuse_modules, prepare, prepare_qat, quantize_dynamic

__all__ = [
    "DynamicQuantizedLinear", "FakeQuantize", "FusedReLU", "QATConv1d", "QATConv2d",
    "QATConv3d", "QATLinear", "QConfig", "QuantStub", "calibrate", "convert",
    "default_dynamic_qconfig", "default_per_channel_qat_qconfig", "default_qat_qconfig",
    "default_qconfig", "fuse_modules", "per_channel_dynamic_qconfig", "prepare", "prepare_qat",
    "quantize_dynamic",
]
