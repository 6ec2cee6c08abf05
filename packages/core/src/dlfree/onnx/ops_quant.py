"""Converters of quantized ops to ONNX's quantized forms: a fake quantization becomes a
QuantizeLinear/DequantizeLinear pair (QDQ, which ONNX Runtime fuses into int8 kernels; a
weight is stored already quantized, as int8 with its DequantizeLinear), and a dynamically
quantized Linear becomes DynamicQuantizeLinear and MatMulInteger."""

from __future__ import annotations

import numpy as np

from .context import _to_numpy

_DTYPES = {np.int8: (-128, 127), np.uint8: (0, 255)}


def _qparams(ctx):
    """(scale, zero point, integer dtype, {"axis": a} or {}) of a fake quantization node: a
    per-channel scale (broadcastable to the input) becomes 1-D along its axis."""
    a = ctx.attributes
    scale = np.asarray(_to_numpy(a["scale"]), np.float32)
    zero_point = np.asarray(_to_numpy(a["zero_point"]))
    qmin, qmax = int(a["quant_min"]), int(a["quant_max"])
    dtype = np.int8 if qmin < 0 else np.uint8
    low, high = _DTYPES[dtype]
    if not low <= qmin < qmax <= high:
        raise ctx.fail(f"quant range [{qmin}, {qmax}] fits neither int8 nor uint8; valid: a "
                       "range inside [-128, 127] or [0, 255]")
    axes = [i for i, n in enumerate(scale.shape) if n > 1]
    if axes:
        extra = {"axis": axes[0]}
        scale, zero_point = scale.reshape(-1), zero_point.reshape(-1)
    else:
        extra = {}
        scale, zero_point = scale.reshape(()), zero_point.reshape(())
    return scale, zero_point.astype(dtype), (qmin, qmax), extra


def fake_quantize(ctx):
    scale, zero_point, (qmin, qmax), extra = _qparams(ctx)
    dtype = zero_point.dtype
    s, z = ctx.constant(scale), ctx.constant(zero_point)
    weight = ctx.constant_input(0)
    if weight is not None:  # quantized here, with FakeQuantize's own arithmetic
        shape = [1] * weight.ndim
        if extra:
            shape[extra["axis"]] = -1
        inverse = (np.float32(1) / scale).astype(weight.dtype).reshape(shape)
        q = np.rint(weight * inverse) + zero_point.astype(weight.dtype).reshape(shape)
        return ctx.add("DequantizeLinear", [ctx.constant(np.clip(q, qmin, qmax).astype(dtype)),
                                            s, z], **extra)
    q = ctx.add("QuantizeLinear", [ctx.inputs[0], s, z], **extra)
    if (qmin, qmax) != _DTYPES[dtype.type]:  # a narrower range (reduce_range): clip to it
        q = ctx.add("Clip", [q, ctx.constant(np.array(qmin, dtype)),
                             ctx.constant(np.array(qmax, dtype))])
    return ctx.add("DequantizeLinear", [q, s, z], **extra)


def _buffer(ctx, name: str):
    """The array of the node's input `name`, which must be a module's buffer (a constant)."""
    array = ctx.constant_input(ctx.node.arg_names.index(name))
    if array is None:
        raise ctx.fail(f"{name} is computed in the graph; valid: a quantized module's {name} "
                       "buffer")
    return array


def dynamic_quantized_linear(ctx):
    """ONNX's DynamicQuantizeLinear quantizes the input to the full uint8 range where
    dl.free (as torch's fbgemm kernel) takes 0..127: the exported model's rounding step on
    the input is half dl.free's, so the two agree within dl.free's step, not exactly."""
    named = ctx.named_inputs()
    weight, weight_scale = (_buffer(ctx, name) for name in ("weight_int8", "weight_scale"))
    x, x_scale, x_zero = ctx.add("DynamicQuantizeLinear", [named["input"]], outputs=3)
    product = ctx.add("MatMulInteger", [x, ctx.constant(np.ascontiguousarray(weight.T)), x_zero,
                                        ctx.constant(np.array(0, np.int8))])
    # one scale, or one per output column of the product: broadcast along its last dim
    scale = ctx.add("Mul", [x_scale, ctx.constant(np.asarray(weight_scale, np.float32))])
    out = ctx.add("Mul", [ctx.cast(product, np.float32), scale])
    return ctx.add("Add", [out, named["bias"]]) if "bias" in named else out


CONVERTERS = {"fakequantize": fake_quantize, "dynamic_quantized_linear": dynamic_quantized_linear}
