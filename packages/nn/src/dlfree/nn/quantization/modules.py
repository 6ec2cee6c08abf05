"""Quantized stand-ins for float layers: quantization-aware Linear/Conv (fake-quantized weight
and output, an optional fused ReLU), the fused float pair `FusedReLU`, `QuantStub` for a
model's input, and `DynamicQuantizedLinear` (int8 weight, input quantized per call)."""

from __future__ import annotations

from functools import partial

import dlfree as dl
from dlfree import functional as F
from dlfree.quantization import MinMaxObserver, PerChannelMinMaxObserver
from dlfree.quantization.dynamic import dynamic_quantized_linear

import numpy as np

from ..containers import Sequential
from ..layers.conv import Conv1d, Conv2d, Conv3d
from ..layers.linear import Linear
from ..module import Module


class FusedReLU(Sequential):
    """A Linear or Conv followed by its ReLU (and any batch norm already folded in), made by
    `fuse_modules`: one unit, so that only the ReLU's output is quantized."""


class QuantStub(Module):
    """Marks where a model's float input becomes quantized: the identity until `prepare` or
    `prepare_qat` gives it an activation fake-quantizer."""

    def __init__(self):
        super().__init__()
        self.activation_post_process = None

    def forward(self, x):
        return x if self.activation_post_process is None else self.activation_post_process(x)


class _QAT:
    """What the quantization-aware layers share: built from a float layer (sharing its
    parameters), fake-quantize the weight, apply the fused ReLU, fake-quantize the output."""

    float_types: tuple = ()

    @classmethod
    def from_float(cls, mod, qconfig, relu=False):
        qat = cls.__new__(cls)
        Module.__init__(qat)
        for key, value in vars(mod).items():
            if not key.startswith("_"):
                object.__setattr__(qat, key, value)
        qat.weight = mod.weight
        qat.bias = mod.bias
        qat.training = mod.training
        qat.relu = relu
        qat.weight_fake_quant = qconfig.weight()
        qat.activation_post_process = qconfig.activation()
        return qat

    def _output(self, y):
        return self.activation_post_process(F.relu(y) if self.relu else y)


class QATLinear(_QAT, Linear):
    """Linear with a fake-quantized weight and output (torch's nn.qat.Linear, with the
    output's observer inside)."""

    def forward(self, input):
        return self._output(F.linear(input, self.weight_fake_quant(self.weight), self.bias))


class _QATConv(_QAT):
    def forward(self, input):
        return self._output(self._conv_forward(input, self.weight_fake_quant(self.weight),
                                               self.bias))


class QATConv1d(_QATConv, Conv1d):
    """Conv1d with a fake-quantized weight and output."""


class QATConv2d(_QATConv, Conv2d):
    """Conv2d with a fake-quantized weight and output."""


class QATConv3d(_QATConv, Conv3d):
    """Conv3d with a fake-quantized weight and output."""


QAT_MODULES = {Linear: QATLinear, Conv1d: QATConv1d, Conv2d: QATConv2d, Conv3d: QATConv3d}


class DynamicQuantizedLinear(Module):
    """Linear with an int8 weight (symmetric, one scale per tensor or per output row, as the
    weight observer gives) whose input is quantized to quint8 at each call from that input's
    own range (reduce_range, as torch's fbgemm kernels): the product is computed on the
    integers and rescaled to float, as torch's dynamic Linear. `weight_int8`,
    `weight_scale` and `bias` are buffers, so the state_dict holds the quantized layer."""

    def __init__(self, mod: Linear, weight_observer=None):
        super().__init__()
        self.in_features, self.out_features = mod.in_features, mod.out_features
        w = mod.weight.detach().numpy()
        obs = (weight_observer or default_dynamic_qconfig)()
        obs(w)
        scale, _ = obs.calculate_qparams()
        scale = np.asarray(scale, np.float32)
        rows = scale.reshape(-1, 1) if scale.ndim else scale
        self.register_buffer("weight_scale", dl.tensor(scale))
        self.register_buffer("weight_int8", dl.tensor(
            np.clip(np.rint(w * (np.float32(1) / rows)), -128, 127).astype(np.int8)))
        self.register_buffer("bias", None if mod.bias is None else mod.bias.detach().clone())

    def forward(self, input):
        return dynamic_quantized_linear(input, self.weight_int8, self.weight_scale, self.bias)

    def extra_repr(self) -> str:
        scheme = "per_channel" if self.weight_scale.ndim else "per_tensor"
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"dtype=qint8, qscheme={scheme}_symmetric")


default_dynamic_qconfig = partial(MinMaxObserver, dtype="qint8", qscheme="per_tensor_symmetric")
"""Dynamic quantization's weight observer: one scale per weight (torch's default)."""

per_channel_dynamic_qconfig = partial(PerChannelMinMaxObserver, ch_axis=0, dtype="qint8",
                                      qscheme="per_channel_symmetric")
"""One weight scale per output row (torch's per_channel_dynamic_qconfig): a wide-ranged
layer keeps the precision of its small rows."""
