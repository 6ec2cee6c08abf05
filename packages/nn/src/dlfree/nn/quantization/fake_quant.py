"""The `FakeQuantize` module (an observer plus fake quantization) and `QConfig`, the pair of
factories that says how a layer's activations and weights are quantized."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import NamedTuple

from dlfree.quantization import (
    MinMaxObserver,
    MovingAverageMinMaxObserver,
    PerChannelMinMaxObserver,
    fake_quantize_per_channel_affine,
    fake_quantize_per_tensor_affine,
)

from ..module import Module


class FakeQuantize(Module):
    """Observe a tensor's range and fake-quantize it with the qparams observed so far, as
    torch.ao.quantization.FakeQuantize. `observer_enabled` and `fake_quant_enabled` switch the
    two parts: post-training calibration observes only, converted inference quantizes only."""

    def __init__(self, observer=MovingAverageMinMaxObserver, **observer_kwargs):
        super().__init__()
        self.activation_post_process = observer(**observer_kwargs)
        self.observer_enabled = True
        self.fake_quant_enabled = True

    @property
    def per_channel(self) -> bool:
        return isinstance(self.activation_post_process, PerChannelMinMaxObserver)

    def calculate_qparams(self):
        """(scale, zero_point) of the range observed so far."""
        return self.activation_post_process.calculate_qparams()

    def forward(self, x):
        obs = self.activation_post_process
        if self.observer_enabled:
            obs(x.detach())
        if not self.fake_quant_enabled:
            return x
        scale, zero_point = obs.calculate_qparams()
        if self.per_channel:
            return fake_quantize_per_channel_affine(x, scale, zero_point, obs.ch_axis,
                                                    obs.quant_min, obs.quant_max)
        return fake_quantize_per_tensor_affine(x, scale, zero_point, obs.quant_min,
                                               obs.quant_max)

    def extra_repr(self) -> str:
        obs = self.activation_post_process
        return (f"{type(obs).__name__}, dtype={obs.dtype}, qscheme={obs.qscheme}, "
                f"quant_min={obs.quant_min}, quant_max={obs.quant_max}, "
                f"observer_enabled={self.observer_enabled}, "
                f"fake_quant_enabled={self.fake_quant_enabled}")


class QConfig(NamedTuple):
    """How to quantize a layer: `activation` and `weight` are factories, each called with no
    argument to make one `FakeQuantize` for the layer's output or its weight."""

    activation: Callable[[], FakeQuantize]
    weight: Callable[[], FakeQuantize]


def _fq(observer, **kwargs):
    return partial(FakeQuantize, observer, **kwargs)


# torch's defaults: activations quint8 affine with reduce_range (0..127), weights qint8 symmetric
default_qat_qconfig = QConfig(
    activation=_fq(MovingAverageMinMaxObserver, dtype="quint8", reduce_range=True),
    weight=_fq(MovingAverageMinMaxObserver, dtype="qint8", qscheme="per_tensor_symmetric"),
)
"""Quantization-aware training: moving-average ranges, one weight scale per layer."""

default_per_channel_qat_qconfig = QConfig(
    activation=_fq(MovingAverageMinMaxObserver, dtype="quint8", reduce_range=True),
    weight=_fq(PerChannelMinMaxObserver, dtype="qint8", qscheme="per_channel_symmetric"),
)
"""Quantization-aware training with one weight scale per output channel."""

default_qconfig = QConfig(
    activation=_fq(MinMaxObserver, dtype="quint8", reduce_range=True),
    weight=_fq(MinMaxObserver, dtype="qint8", qscheme="per_tensor_symmetric"),
)
"""Post-training static quantization: the min/max seen over the calibration data."""
