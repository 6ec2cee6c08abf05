"""Layers that rearrange or resample without parameters: `Flatten`, `Unflatten`,
`Upsample`, `PixelShuffle`, `PixelUnshuffle`, `ChannelShuffle`, `Unfold` (im2col) and
`Fold` (col2im)."""

from __future__ import annotations

import numbers

from dlfree import ShapeError
from dlfree import functional as F

from ..module import Module
from ._common import check_count

__all__ = ["Flatten", "Unflatten", "Upsample", "PixelShuffle", "PixelUnshuffle",
           "ChannelShuffle", "Unfold", "Fold"]


class Flatten(Module):
    """Merge dims start_dim..end_dim into one (by default all but the batch dim)."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1):
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input):
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Split dim `dim` into `unflattened_size` (one entry may be -1)."""

    def __init__(self, dim: int, unflattened_size):
        super().__init__()
        if not isinstance(unflattened_size, (tuple, list)) or not all(
                isinstance(s, numbers.Integral) for s in unflattened_size):
            raise TypeError(f"Unflatten: unflattened_size must be a tuple or list of ints, got "
                            f"{unflattened_size!r}")
        self.dim = dim
        self.unflattened_size = unflattened_size

    def forward(self, input):
        return input.unflatten(self.dim, tuple(self.unflattened_size))

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


class Upsample(Module):
    """Resample (N, C, *spatial) input to `size` or by `scale_factor` with `mode` ('nearest',
    'linear', 'bilinear', 'bicubic', 'trilinear', ...), as F.interpolate."""

    def __init__(self, size=None, scale_factor=None, mode: str = "nearest",
                 align_corners: bool | None = None, recompute_scale_factor: bool | None = None):
        super().__init__()
        self.name = type(self).__name__
        self.size = size
        if isinstance(scale_factor, tuple):
            self.scale_factor = tuple(float(f) for f in scale_factor)
        else:
            self.scale_factor = float(scale_factor) if scale_factor else None
        self.mode = mode
        self.align_corners = align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input):
        return F.interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                             recompute_scale_factor=self.recompute_scale_factor)

    def extra_repr(self) -> str:
        if self.scale_factor is not None:
            info = f"scale_factor={self.scale_factor!r}"
        else:
            info = f"size={self.size!r}"
        return info + f", mode={self.mode!r}"


class PixelShuffle(Module):
    """(*, C r^2, H, W) to (*, C, H r, W r): sub-pixel upsampling by `upscale_factor` r."""

    def __init__(self, upscale_factor: int):
        super().__init__()
        self.upscale_factor = check_count(upscale_factor, "upscale_factor", "PixelShuffle")

    def forward(self, input):
        return F.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self) -> str:
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """(*, C, H r, W r) to (*, C r^2, H, W): the inverse of PixelShuffle."""

    def __init__(self, downscale_factor: int):
        super().__init__()
        self.downscale_factor = check_count(downscale_factor, "downscale_factor",
                                            "PixelUnshuffle")

    def forward(self, input):
        return F.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self) -> str:
        return f"downscale_factor={self.downscale_factor}"


class Unfold(Module):
    """Sliding blocks of (N, C, H, W) images as columns (N, C * prod(kernel_size), L)."""

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input):
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")


class Fold(Module):
    """Sum columns (N, C * prod(kernel_size), L) back into (N, C, *output_size) images,
    overlaps added: Unfold's adjoint."""

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.output_size = output_size
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input):
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding,
                      self.stride)

    def extra_repr(self) -> str:
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, "
                f"dilation={self.dilation}, padding={self.padding}, stride={self.stride}")


class ChannelShuffle(Module):
    """Interleave the channels of (N, C, *) input from `groups` groups (ShuffleNet): channel
    g * (C / groups) + i moves to i * groups + g."""

    def __init__(self, groups: int):
        super().__init__()
        self.groups = check_count(groups, "groups", "ChannelShuffle")

    def forward(self, input):
        if input.ndim < 3 or input.shape[1] % self.groups:
            raise ShapeError(f"ChannelShuffle: expected (N, C, *) input with C divisible by "
                             f"groups={self.groups}, got shape {tuple(input.shape)}")
        n, c, *rest = input.shape
        grouped = input.reshape(n, self.groups, c // self.groups, *rest)
        return grouped.transpose(1, 2).reshape(n, c, *rest)

    def extra_repr(self) -> str:
        return f"groups={self.groups}"
