"""Affine layers: `Linear` (x W^T + b) and `Bilinear` (x1^T W x2 + b)."""

from __future__ import annotations

import math

from dlfree import functional as F

from .. import init
from ..module import Module
from ._common import check_count, empty_parameter

__all__ = ["Linear", "Bilinear"]


def _add_bias(module: Module, bias: bool, out_features: int, device, dtype) -> None:
    """Register an (out_features,) `bias`, or None when bias=False."""
    if bias:
        module.bias = empty_parameter(out_features, device=device, dtype=dtype)
    else:
        module.register_parameter("bias", None)


class Linear(Module):
    """y = x W^T + b over the last dim: weight (out_features, in_features), bias
    (out_features), both U(-1/sqrt(in_features), 1/sqrt(in_features)) at first."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device=None,
                 dtype=None):
        super().__init__()
        self.in_features = check_count(in_features, "in_features", "Linear", 0)
        self.out_features = check_count(out_features, "out_features", "Linear", 0)
        self.weight = empty_parameter(out_features, in_features, device=device, dtype=dtype)
        _add_bias(self, bias, out_features, device, dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        # kaiming_uniform_ with a=sqrt(5) is U(-1/sqrt(fan_in), 1/sqrt(fan_in)), torch's default
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.weight.shape[1]
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input):
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class Bilinear(Module):
    """y_k = x1^T W_k x2 + b_k: weight (out_features, in1_features, in2_features), bias
    (out_features), both U(-1/sqrt(in1_features), 1/sqrt(in1_features)) at first."""

    def __init__(self, in1_features: int, in2_features: int, out_features: int,
                 bias: bool = True, device=None, dtype=None):
        super().__init__()
        self.in1_features = check_count(in1_features, "in1_features", "Bilinear")
        self.in2_features = check_count(in2_features, "in2_features", "Bilinear")
        self.out_features = check_count(out_features, "out_features", "Bilinear")
        self.weight = empty_parameter(out_features, in1_features, in2_features, device=device,
                                      dtype=dtype)
        _add_bias(self, bias, out_features, device, dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        bound = 1 / math.sqrt(self.weight.shape[1])
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")
