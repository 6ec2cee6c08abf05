"""im2col and col2im, the sliding-window kernels of convolution, written against any `xp`.

A `Window` describes one geometry over the trailing d dims of an (N, C, *size) image: the
image is zero-padded by `pads`, and a kernel of `kernel` taps spaced `dilation` apart
steps over it by `stride`, to `grid` positions per dim. Columns are laid out as
PyTorch's unfold lays them out: (N, C * prod(kernel), prod(grid)), channel-major, then
the taps, then the positions.
"""

from __future__ import annotations

import itertools
import math
from typing import NamedTuple


class Window(NamedTuple):
    """One sliding-window geometry (see the module docstring)."""

    size: tuple      # the image's spatial size, before padding
    kernel: tuple
    dilation: tuple
    stride: tuple
    pads: tuple      # (before, after) per dim
    grid: tuple      # kernel positions per dim

    @property
    def padded(self) -> tuple:
        return tuple(n + lo + hi for n, (lo, hi) in zip(self.size, self.pads, strict=True))

    @property
    def interior(self) -> tuple:
        """The index of the unpadded image inside the padded one."""
        return (Ellipsis,) + tuple(slice(lo, lo + n)
                                   for n, (lo, _) in zip(self.size, self.pads, strict=True))


def im2col(xp, image, window: Window, batch_last: bool = False):
    """The columns of `image`: one strided view of all its windows, copied once.

    They come as (N, C*K, L), or with `batch_last` as (C*K, N*L), a matrix that one
    GEMM multiplies for the whole batch.
    """
    n, c = image.shape[:2]
    if any(lo or hi for lo, hi in window.pads):
        padded = xp.zeros((n, c) + window.padded, dtype=image.dtype)
        padded[window.interior] = image
        image = padded
    steps = image.strides[2:]
    windows = xp.lib.stride_tricks.as_strided(
        image,
        shape=(n, c) + window.kernel + window.grid,
        strides=image.strides[:2]
        + tuple(s * d for s, d in zip(steps, window.dilation, strict=True))
        + tuple(s * k for s, k in zip(steps, window.stride, strict=True)),
    )
    taps, blocks = c * math.prod(window.kernel), math.prod(window.grid)
    if batch_last:  # (N, C, *K, *grid) -> (C, *K, N, *grid)
        d = len(window.kernel)
        order = (*range(1, d + 2), 0, *range(d + 2, 2 * d + 2))
        return windows.transpose(order).reshape(taps, n * blocks)
    return windows.reshape(n, taps, blocks)


def col2im(xp, columns, window: Window, batch_last: bool = False):
    """The adjoint of `im2col` (same layouts): every column entry added back to the pixel
    it came from, entries that came from the padding dropped.

    Windows overlap, so this accumulates one kernel tap at a time: each tap's entries
    land on a strided slice of the image with no repeats, which makes it a plain add.
    """
    d, blocks = len(window.kernel), math.prod(window.grid)
    if batch_last:
        n, c = columns.shape[1] // blocks, columns.shape[0] // math.prod(window.kernel)
        taps = columns.reshape((c,) + window.kernel + (n,) + window.grid)
        # (C, *K, N, *grid) -> (N, C, *K, *grid)
        taps = taps.transpose((d + 1, 0, *range(1, d + 1), *range(d + 2, 2 * d + 2)))
    else:
        n, c = columns.shape[0], columns.shape[1] // math.prod(window.kernel)
        taps = columns.reshape((n, c) + window.kernel + window.grid)
    image = xp.zeros((n, c) + window.size, dtype=columns.dtype)
    for tap in itertools.product(*(_landings(window, dim) for dim in range(d))):
        offsets, image_index, grid_index = zip(*tap, strict=True)
        image[(Ellipsis,) + image_index] += taps[(slice(None), slice(None)) + offsets + grid_index]
    return image


def _landings(window: Window, dim: int) -> list:
    """Where each kernel offset t along `dim` sends its entries: (t, the slice of the
    unpadded image it lands on, the slice of grid positions that land inside the image
    rather than in the padding)."""
    dl, s, g = window.dilation[dim], window.stride[dim], window.grid[dim]
    n, lo = window.size[dim], window.pads[dim][0]
    out = []
    for t in range(window.kernel[dim]):
        offset = t * dl - lo  # the pixel of grid position 0, in unpadded coordinates
        first = min(g, max(0, -(offset // s)))
        end = max(first, min(g, -((offset - n) // s)))
        out.append((t, slice(offset + s * first, offset + s * end, s), slice(first, end)))
    return out
