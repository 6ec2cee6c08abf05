"""Convolutions: `Conv1d`/`Conv2d`/`Conv3d` (with zeros, reflect, replicate or circular
padding, and padding='same'/'valid') and `ConvTranspose1d`/`ConvTranspose2d`."""

from __future__ import annotations

import math

from dlfree import functional as F

from .. import init
from ..module import Module
from ._common import check_choice, check_count, empty_parameter, ntuple

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
           "ConvTranspose3d"]

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")
_CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}
_CONV_TRANSPOSE = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}


class _ConvNd(Module):
    """What every convolution shares: arguments as d-tuples, the weight and bias, torch's
    default initialisation and repr. Subclasses set `dims` and `transposed`."""

    dims: int
    transposed: bool

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation,
                 output_padding, groups, bias, padding_mode, device, dtype):
        super().__init__()
        name, d = type(self).__name__, self.dims
        self.in_channels = check_count(in_channels, "in_channels", name)
        self.out_channels = check_count(out_channels, "out_channels", name)
        self.groups = check_count(groups, "groups", name)
        if in_channels % groups or out_channels % groups:
            raise ValueError(f"{name}: in_channels ({in_channels}) and out_channels "
                             f"({out_channels}) must both be divisible by groups ({groups})")
        self.kernel_size = ntuple(kernel_size, d)
        self.stride = ntuple(stride, d)
        self.dilation = ntuple(dilation, d)
        self.output_padding = ntuple(output_padding, d)
        for arg in ("kernel_size", "stride", "dilation", "output_padding"):
            values = getattr(self, arg)
            if len(values) != d:
                raise ValueError(f"{name}: {arg} must be an int or {d} ints, got {values!r}")
        self.padding_mode = check_choice(padding_mode, "padding_mode", name, _PADDING_MODES)
        if isinstance(padding, str):
            check_choice(padding, "padding", name, ("same", "valid"))
            if padding == "same" and any(s != 1 for s in self.stride):
                raise ValueError(f"{name}: padding='same' is not supported for strided "
                                 f"convolutions (stride={self.stride}); use stride 1 or "
                                 "explicit padding")
            self.padding = padding
        else:
            self.padding = ntuple(padding, d)
            if len(self.padding) != d:
                raise ValueError(f"{name}: padding must be an int, {d} ints, 'same' or 'valid', "
                                 f"got {padding!r}")
        # the (left, right) amounts F.pad takes, last dim first, for the non-zero modes
        self._reversed_padding_repeated_twice = self._pad_amounts()
        shape = ((in_channels, out_channels // groups) if self.transposed
                 else (out_channels, in_channels // groups)) + self.kernel_size
        self.weight = empty_parameter(*shape, device=device, dtype=dtype)
        if bias:
            self.bias = empty_parameter(out_channels, device=device, dtype=dtype)
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def _pad_amounts(self) -> list:
        if self.padding == "valid":
            return [0, 0] * self.dims
        if self.padding == "same":
            totals = [dl * (k - 1) for dl, k in zip(self.dilation, self.kernel_size)]
            return [p for t in reversed(totals) for p in (t // 2, t - t // 2)]
        return [p for p in reversed(self.padding) for _ in range(2)]

    def reset_parameters(self) -> None:
        # kaiming_uniform_ with a=sqrt(5) is U(-1/sqrt(fan_in), 1/sqrt(fan_in)), torch's default
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.weight.shape[1] * math.prod(self.kernel_size)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def extra_repr(self) -> str:
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}")
        if self.padding != (0,) * len(self.padding):
            s += f", padding={self.padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class _Conv(_ConvNd):
    transposed = False

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 dilation=1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                 device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, 0,
                         groups, bias, padding_mode, device, dtype)

    def forward(self, input):
        return self._conv_forward(input, self.weight, self.bias)

    def _conv_forward(self, input, weight, bias):
        """The convolution with this layer's settings and the given weight and bias (a
        quantization-aware layer passes its fake-quantized weight)."""
        conv = _CONV[self.dims]
        if self.padding_mode != "zeros":
            padded = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            return conv(padded, weight, bias, self.stride, 0, self.dilation, self.groups)
        return conv(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)


class Conv1d(_Conv):
    """1-d convolution (cross-correlation) over (N, C_in, L) or (C_in, L): weight
    (out_channels, in_channels / groups, k)."""

    dims = 1


class Conv2d(_Conv):
    """2-d convolution (cross-correlation) over (N, C_in, H, W) or (C_in, H, W): weight
    (out_channels, in_channels / groups, kH, kW)."""

    dims = 2


class Conv3d(_Conv):
    """3-d convolution (cross-correlation) over (N, C_in, D, H, W) or (C_in, D, H, W):
    weight (out_channels, in_channels / groups, kD, kH, kW)."""

    dims = 3


class _ConvTranspose(_ConvNd):
    transposed = True

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 output_padding=0, groups: int = 1, bias: bool = True, dilation=1,
                 padding_mode: str = "zeros", device=None, dtype=None):
        name = type(self).__name__
        if padding_mode != "zeros":
            raise ValueError(f"{name}: only padding_mode='zeros' is supported, got "
                             f"{padding_mode!r}")
        if isinstance(padding, str):
            raise ValueError(f"{name}: padding must be an int or {self.dims} ints, got "
                             f"{padding!r}")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         output_padding, groups, bias, padding_mode, device, dtype)

    def _output_padding(self, input, output_size) -> tuple:
        """The output_padding that gives `output_size` (spatial sizes, optionally preceded
        by the batch and channel sizes), or the layer's own when none is asked for."""
        if output_size is None:
            return self.output_padding
        name, d = type(self).__name__, self.dims
        output_size = tuple(output_size)
        leading = input.ndim - d
        if len(output_size) == leading + d:
            output_size = output_size[leading:]
        if len(output_size) != d:
            raise ValueError(f"{name}: for a {input.ndim}-d input, output_size must have {d} "
                             f"or {leading + d} elements, got {len(output_size)}")
        smallest = tuple((n - 1) * s - 2 * p + dl * (k - 1) + 1 for n, s, p, dl, k in zip(
            input.shape[leading:], self.stride, self.padding, self.dilation, self.kernel_size))
        largest = tuple(m + s - 1 for m, s in zip(smallest, self.stride))
        if any(not lo <= n <= hi for n, lo, hi in zip(output_size, smallest, largest)):
            raise ValueError(f"{name}: requested an output size of {output_size}, but valid "
                             f"sizes range from {smallest} to {largest} (for an input of "
                             f"{tuple(input.shape[leading:])})")
        return tuple(n - lo for n, lo in zip(output_size, smallest))

    def forward(self, input, output_size=None):
        output_padding = self._output_padding(input, output_size)
        return _CONV_TRANSPOSE[self.dims](input, self.weight, self.bias, self.stride,
                                          self.padding, output_padding, self.groups,
                                          self.dilation)


class ConvTranspose1d(_ConvTranspose):
    """1-d transposed convolution (the gradient of Conv1d with respect to its input): weight
    (in_channels, out_channels / groups, k); `output_size` in forward picks among the
    output lengths a stride allows."""

    dims = 1


class ConvTranspose2d(_ConvTranspose):
    """2-d transposed convolution (the gradient of Conv2d with respect to its input): weight
    (in_channels, out_channels / groups, kH, kW); `output_size` in forward picks among the
    output sizes a stride allows."""

    dims = 2


class ConvTranspose3d(_ConvTranspose):
    """3-d transposed convolution (the gradient of Conv3d with respect to its input): weight
    (in_channels, out_channels / groups, kD, kH, kW); `output_size` in forward picks among
    the output sizes a stride allows."""

    dims = 3
