"""Pooling layers: max and average pooling over sliding windows (1-d, 2-d, 3-d), and
adaptive pooling to a fixed output size."""

from __future__ import annotations

from dlfree import functional as F

from ..module import Module
from ._common import ntuple

__all__ = ["MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d",
           "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "AdaptiveMaxPool1d",
           "AdaptiveMaxPool2d", "AdaptiveMaxPool3d"]


class _WindowPool(Module):
    """A sliding-window pooling's window: `stride` defaults to the kernel."""

    def __init__(self, kernel_size, stride, padding, ceil_mode: bool):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode


class _MaxPool(_WindowPool):
    """Arguments as given (torch keeps ints as ints here)."""

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1,
                 return_indices: bool = False, ceil_mode: bool = False):
        super().__init__(kernel_size, stride, padding, ceil_mode)
        self.dilation = dilation
        self.return_indices = return_indices

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(_MaxPool):
    """The maximum over each window of (N, C, L) or (C, L); `return_indices` also gives the
    flat positions of the maxima in L."""

    def forward(self, input):
        return F.max_pool1d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class MaxPool2d(_MaxPool):
    """The maximum over each window of (N, C, H, W) or (C, H, W); `return_indices` also
    gives the flat positions of the maxima in H * W."""

    def forward(self, input):
        return F.max_pool2d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class MaxPool3d(_MaxPool):
    """The maximum over each window of (N, C, D, H, W) or (C, D, H, W); `return_indices`
    also gives the flat positions of the maxima in D * H * W."""

    def forward(self, input):
        return F.max_pool3d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class _AvgPool(_WindowPool):
    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool1d(_AvgPool):
    """The mean over each window of (N, C, L) or (C, L); zero padding counts towards the
    mean unless `count_include_pad=False`."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True):
        # torch stores the 1-d window as 1-tuples
        super().__init__(ntuple(kernel_size, 1),
                         ntuple(stride if stride is not None else kernel_size, 1),
                         ntuple(padding, 1), ceil_mode)
        self.count_include_pad = count_include_pad

    def forward(self, input):
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)


class AvgPool2d(_AvgPool):
    """The mean over each window of (N, C, H, W) or (C, H, W); `divisor_override` replaces
    the window size as the divisor."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True, divisor_override: int | None = None):
        super().__init__(kernel_size, stride, padding, ceil_mode)
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def forward(self, input):
        return F.avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)


class AvgPool3d(AvgPool2d):
    """The mean over each window of (N, C, D, H, W) or (C, D, H, W), with AvgPool2d's
    options."""

    def forward(self, input):
        return F.avg_pool3d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)


class _Adaptive(Module):
    """Pooling to a fixed `output_size`, whatever the input's size."""

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_Adaptive):
    """Mean pooling of (N, C, L) or (C, L) to `output_size` windows that tile L."""

    def forward(self, input):
        return F.adaptive_avg_pool1d(input, self.output_size)


class AdaptiveAvgPool2d(_Adaptive):
    """Mean pooling of (N, C, H, W) or (C, H, W) to `output_size` (an int, a pair, None
    keeping that size)."""

    def forward(self, input):
        return F.adaptive_avg_pool2d(input, self.output_size)


class AdaptiveAvgPool3d(_Adaptive):
    """Mean pooling of (N, C, D, H, W) or (C, D, H, W) to `output_size`."""

    def forward(self, input):
        return F.adaptive_avg_pool3d(input, self.output_size)


class _AdaptiveMax(_Adaptive):
    """Max pooling to `output_size`; `return_indices` also gives the flat positions of the
    maxima. Subclasses name their functional op."""

    pool: staticmethod

    def __init__(self, output_size, return_indices: bool = False):
        super().__init__(output_size)
        self.return_indices = return_indices

    def forward(self, input):
        return type(self).pool(input, self.output_size, self.return_indices)


class AdaptiveMaxPool1d(_AdaptiveMax):
    """Max pooling of (N, C, L) or (C, L) to `output_size` windows that tile L."""

    pool = staticmethod(F.adaptive_max_pool1d)


class AdaptiveMaxPool2d(_AdaptiveMax):
    """Max pooling of (N, C, H, W) or (C, H, W) to `output_size`."""

    pool = staticmethod(F.adaptive_max_pool2d)


class AdaptiveMaxPool3d(_AdaptiveMax):
    """Max pooling of (N, C, D, H, W) or (C, D, H, W) to `output_size`."""

    pool = staticmethod(F.adaptive_max_pool3d)
