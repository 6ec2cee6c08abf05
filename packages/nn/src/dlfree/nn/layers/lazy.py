"""Lazy layers, as torch.nn: `LazyLinear` and `LazyConv1d/2d/3d` leave the input size
(in_features, in_channels) to the first input they see, then become the plain layer.

Until then the weight and bias are empty placeholders, (0,) like torch's uninitialised
parameters; the first call fills them in place (an optimizer built before keeps valid
parameters), records the full constructor arguments (so `dl.save` writes the plain layer)
and switches the module's class to the plain one, as torch does.
"""

from __future__ import annotations

import dlfree as dl
from dlfree import Parameter

from ..module import Module
from .conv import Conv1d, Conv2d, Conv3d
from .linear import Linear

__all__ = ["LazyLinear", "LazyConv1d", "LazyConv2d", "LazyConv3d"]


class _Lazy(Module):
    """Subclasses set `cls_to_become` and say which input dim is the input size."""

    cls_to_become: type
    size_dim: int  # counted from the end: -1 for features, -(dims + 1) for channels

    def __init__(self, bias: bool, device, dtype, arguments: dict):
        super().__init__()
        object.__setattr__(self, "_pending", {**arguments, "bias": bias, "device": device,
                                              "dtype": dtype})
        self.weight = Parameter(dl.empty(0, device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(dl.empty(0, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)

    def has_uninitialized_params(self) -> bool:
        return True

    def initialize_parameters(self, input) -> None:
        """Build the plain layer for `input`'s size and take over its state."""
        if input.ndim < -self.size_dim:
            raise dl.ShapeError(f"{type(self).__name__}: the input of shape "
                                f"{tuple(input.shape)} has no dim {self.size_dim} to take "
                                "the input size from")
        size = input.shape[self.size_dim]
        plain = self.cls_to_become(size, **self._pending)
        own = set(Module().__dict__) - {"_init_arguments"}  # tables, hooks, mode: stay ours
        for name, value in plain.__dict__.items():
            if name not in own:
                object.__setattr__(self, name, value)
        for name, param in plain._parameters.items():
            placeholder = self._parameters[name]
            if param is not None:
                placeholder.data = param.data
        object.__delattr__(self, "_pending")
        self.__class__ = self.cls_to_become

    def forward(self, input, *args, **kwargs):
        self.initialize_parameters(input)
        return self.forward(input, *args, **kwargs)  # the plain layer's, hooks already ran


class LazyLinear(_Lazy):
    """`Linear` whose in_features is the last dim of the first input."""

    cls_to_become, size_dim = Linear, -1

    def __init__(self, out_features: int, bias: bool = True, device=None, dtype=None):
        super().__init__(bias, device, dtype, {"out_features": out_features})
        self.in_features, self.out_features = 0, out_features

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class _LazyConv(_Lazy):
    def __init__(self, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True, padding_mode: str = "zeros", device=None,
                 dtype=None):
        super().__init__(bias, device, dtype, {
            "out_channels": out_channels, "kernel_size": kernel_size, "stride": stride,
            "padding": padding, "dilation": dilation, "groups": groups,
            "padding_mode": padding_mode})
        probe = self.cls_to_become(groups, out_channels, kernel_size, stride, padding, dilation,
                                   groups, bias, padding_mode)  # checks the arguments now
        self.out_channels, self.kernel_size, self.stride = out_channels, probe.kernel_size, \
            probe.stride
        self._probe_repr = probe.extra_repr().split(", ", 2)[-1]

    def extra_repr(self) -> str:
        return f"0, {self.out_channels}, {self._probe_repr}"


class LazyConv1d(_LazyConv):
    """`Conv1d` whose in_channels is dim -2 of the first input."""

    cls_to_become, size_dim = Conv1d, -2


class LazyConv2d(_LazyConv):
    """`Conv2d` whose in_channels is dim -3 of the first input."""

    cls_to_become, size_dim = Conv2d, -3


class LazyConv3d(_LazyConv):
    """`Conv3d` whose in_channels is dim -4 of the first input."""

    cls_to_become, size_dim = Conv3d, -4
