"""Whole-model rewrites: `fuse_modules` (Conv/Linear + BatchNorm + ReLU into one unit, the
batch norm folded into the weights), `prepare_qat`/`prepare` (swap layers for their
quantization-aware versions), `calibrate` and `convert` (fake-quantized inference), and
`quantize_dynamic` (int8-weight Linear)."""

from __future__ import annotations

import copy

import dlfree as dl
from dlfree import Parameter

import numpy as np

from ..containers import Identity
from ..layers.activation import ReLU
from ..layers.conv import Conv1d, Conv2d, Conv3d
from ..layers.linear import Linear
from ..layers.normalization import BatchNorm1d, BatchNorm2d, BatchNorm3d
from ..module import Module
from .fake_quant import FakeQuantize, default_qat_qconfig, default_qconfig
from .modules import (
    QAT_MODULES,
    DynamicQuantizedLinear,
    FusedReLU,
    QuantStub,
    default_dynamic_qconfig,
)

_LAYERS = (Linear, Conv1d, Conv2d, Conv3d)
_NORMS = (BatchNorm1d, BatchNorm2d, BatchNorm3d)


def _set(model: Module, name: str, module: Module) -> None:
    parent, _, leaf = name.rpartition(".")
    setattr(model.get_submodule(parent) if parent else model, leaf, module)


def _fold_bn(layer, bn):
    """A copy of `layer` computing layer-then-bn with bn's running statistics (eval mode):
    w * gamma / sqrt(var + eps) per output channel, (b - mean) * that + beta."""
    if bn.running_mean is None:
        raise ValueError("fuse_modules: the batch norm tracks no running statistics to fold")
    fused = copy.deepcopy(layer)
    w = layer.weight.detach().numpy()
    factor = np.float32(1) / np.sqrt(bn.running_var.detach().numpy() + np.float32(bn.eps))
    if bn.weight is not None:
        factor = factor * bn.weight.detach().numpy()
    b = layer.bias.detach().numpy() if layer.bias is not None else np.float32(0)
    b = (b - bn.running_mean.detach().numpy()) * factor
    if bn.bias is not None:
        b = b + bn.bias.detach().numpy()
    fused.weight = Parameter(dl.tensor((w * factor.reshape((-1,) + (1,) * (w.ndim - 1)))
                                       .astype(w.dtype)))
    fused.bias = Parameter(dl.tensor(b.astype(w.dtype)))
    return fused


def fuse_modules(model: Module, modules_to_fuse, inplace: bool = False) -> Module:
    """Fuse each listed group of submodule names, as torch.ao.quantization.fuse_modules:
    [conv_or_linear, bn], [conv_or_linear, bn, relu] or [conv_or_linear, relu]. The batch
    norm is folded into the layer's weight and bias (so the model must be in eval mode), the
    first name becomes the fused unit and the others `Identity`."""
    if not inplace:
        model = copy.deepcopy(model)
    groups = modules_to_fuse
    if groups and isinstance(groups[0], str):
        groups = [groups]
    for names in groups:
        mods = [model.get_submodule(n) for n in names]
        kinds = [type(m).__name__ for m in mods]
        ok = (isinstance(mods[0], _LAYERS) and 2 <= len(mods) <= 3
              and all(isinstance(m, _NORMS) for m in mods[1:-1])
              and (isinstance(mods[-1], (ReLU, *_NORMS))))
        if len(mods) == 3 and not isinstance(mods[1], _NORMS):
            ok = False
        if not ok:
            raise ValueError(
                f"fuse_modules: can fuse [Conv/Linear, BatchNorm], [Conv/Linear, BatchNorm, "
                f"ReLU] or [Conv/Linear, ReLU]; got {kinds} for {names}"
            )
        layer = mods[0]
        if isinstance(mods[1], _NORMS):
            if mods[1].training:
                raise ValueError(
                    f"fuse_modules: folding {names[1]} ({kinds[1]}) needs eval mode; call "
                    "model.eval() first"
                )
            layer = _fold_bn(layer, mods[1])
        fused = FusedReLU(layer, ReLU()) if isinstance(mods[-1], ReLU) else layer
        _set(model, names[0], fused)
        for n in names[1:]:
            _set(model, n, Identity())
    return model


def _swap(model: Module, qconfig) -> None:
    for name, child in list(model.named_children()):
        if isinstance(child, FusedReLU):
            _set(model, name, QAT_MODULES[type(child[0])].from_float(child[0], qconfig, True))
        elif type(child) in QAT_MODULES:
            _set(model, name, QAT_MODULES[type(child)].from_float(child, qconfig))
        elif isinstance(child, QuantStub):
            child.activation_post_process = qconfig.activation()
        else:
            _swap(child, qconfig)


def _fake_quantizers(model: Module):
    return [m for m in model.modules() if isinstance(m, FakeQuantize)]


def prepare_qat(model: Module, qconfig=None, inplace: bool = False) -> Module:
    """Replace every Linear/Conv1-3d (and `FusedReLU` from `fuse_modules`) by its
    quantization-aware version, sharing the parameters, and give each `QuantStub` an input
    fake-quantizer; the model then trains with fake quantization (`qconfig` defaults to
    `default_qat_qconfig`)."""
    if not model.training:
        raise ValueError("prepare_qat: the model must be in training mode; call model.train()")
    if not inplace:
        model = copy.deepcopy(model)
    _swap(model, qconfig or default_qat_qconfig)
    return model


def prepare(model: Module, qconfig=None, inplace: bool = False) -> Module:
    """Post-training static quantization, step one: the same rewrite as `prepare_qat` with
    observers only (no fake quantization yet); run `calibrate`, then `convert`. `qconfig`
    defaults to `default_qconfig`."""
    if not inplace:
        model = copy.deepcopy(model)
    _swap(model, qconfig or default_qconfig)
    for fq in _fake_quantizers(model):
        fq.fake_quant_enabled = False
    return model


def calibrate(model: Module, batches) -> Module:
    """Run the prepared model in eval mode on each input batch of `batches` so that its
    observers see the data's ranges."""
    if not _fake_quantizers(model):
        raise ValueError("calibrate: the model has no observers; call prepare(model) first")
    model.eval()
    with dl.no_grad():
        for batch in batches:
            model(batch)
    return model


def convert(model: Module, inplace: bool = False) -> Module:
    """Freeze a prepared or quantization-aware model for fake-quantized inference: the
    observed qparams stay fixed, weights and activations are quantized, eval mode."""
    if not _fake_quantizers(model):
        raise ValueError("convert: the model has no fake quantizers; call prepare or "
                         "prepare_qat first")
    if not inplace:
        model = copy.deepcopy(model)
    for fq in _fake_quantizers(model):
        fq.observer_enabled = False
        fq.fake_quant_enabled = True
    return model.eval()


def quantize_dynamic(model: Module, qconfig_spec=None, dtype: str = "qint8",
                     inplace: bool = False) -> Module:
    """Replace each Linear by a `DynamicQuantizedLinear` (int8 weight, input quantized per
    call), as torch.ao.quantization.quantize_dynamic(model, qconfig_spec, dtype=torch.qint8).
    `qconfig_spec` is {nn.Linear} (the default: one weight scale per layer) or
    {nn.Linear: per_channel_dynamic_qconfig} for one scale per output row."""
    if dtype != "qint8":
        raise ValueError(f"quantize_dynamic: dtype must be 'qint8', got {dtype!r}")
    spec = qconfig_spec if isinstance(qconfig_spec, dict) else \
        dict.fromkeys(qconfig_spec or {Linear}, default_dynamic_qconfig)
    if not set(spec) <= {Linear}:
        raise ValueError(f"quantize_dynamic: only nn.Linear is supported, got {set(spec)}")
    observer = spec.get(Linear) or default_dynamic_qconfig
    if not inplace:
        model = copy.deepcopy(model)

    def swap(m):
        for name, child in list(m.named_children()):
            if type(child) is Linear:
                _set(m, name, DynamicQuantizedLinear(child, observer))
            else:
                swap(child)

    if type(model) is Linear:
        return DynamicQuantizedLinear(model, observer)
    swap(model)
    return model
