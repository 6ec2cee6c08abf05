"""Dynamically quantized matrix products: the input is quantized to quint8 at each call from
its own range, the weight is int8 ahead of time, and the product is taken on the integers."""

from __future__ import annotations

import numpy as np

from ..tensor import Tensor
from ..tracing_state import recorded
from .observers import qparams


@recorded
def dynamic_quantized_linear(input: Tensor, weight_int8: Tensor, weight_scale: Tensor,
                             bias: Tensor | None = None) -> Tensor:
    """input @ weight.T + bias with `weight_int8` (out, in) standing for weight_int8 *
    weight_scale (one float32 scale, 0-d, or one per output row, (out,)) and the input
    quantized to 0..127 (quint8 with reduce_range, as torch's fbgemm dynamic Linear) from
    its min and max: the integer product is rescaled to float.
    Inference only: the result carries no gradient. A trace records the call as one node,
    which ONNX export writes as DynamicQuantizeLinear and MatMulInteger."""
    x = input._data
    xp = input._device.xp
    lo, hi = (float(x.min()), float(x.max())) if x.size else (0.0, 0.0)
    scale, zero_point = qparams(lo, hi, 0, 127, False, "quint8")
    q = xp.clip(xp.rint(x * (np.float32(1) / scale)) + int(zero_point), 0, 127)
    acc = (q.astype(xp.int64) - int(zero_point)) @ weight_int8._data.astype(xp.int64).T
    y = (acc * (np.float64(scale) * weight_scale._data.astype(xp.float64))).astype(x.dtype)
    if bias is not None:
        y = y + bias._data
    return Tensor._make(y, input._device)
