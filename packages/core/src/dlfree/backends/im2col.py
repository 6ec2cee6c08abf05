"""im2col and col2im, the sliding-window kernels of convolution, written against any `xp`.

A `Window` describes one geometry over the trailing d dims of an (N, C, *size) image: the
image is zero-padded by `pads`, and a kernel of `kernel` taps spaced `dilation` apart
steps over it by `stride`, to `grid` positions per dim. Columns are laid out as
PyTorch's unfold lays them out: (N, C * prod(kernel), prod(grid)), channel-major, then
the taps, then the positions.

A window of stride 1 has a cheaper layout, `Shifted`: the padded image flattened so
that each kernel tap's columns are one shifted view of it, which a GEMM reads in place.
Convolutions then need no im2col copy (or only a few taps' worth) and no col2im at all.
Its copies between layouts are strided, bound by memory latency more than bandwidth, so on
NumPy the channels are shared out among the intra-op threads (`dlfree.threads`); a copy
moves the same values on any count of threads.
"""

from __future__ import annotations

import itertools
import math
import sys
import threading
from typing import NamedTuple

from ..threads import for_large_blocks
from . import numba_kernels


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
        windows = windows.transpose((*range(1, d + 2), 0, *range(d + 2, 2 * d + 2)))
        out = xp.empty(windows.shape, dtype=image.dtype)

        def copy(lo: int, hi: int) -> None:
            out[lo:hi] = windows[lo:hi]
        for_large_blocks(xp, c, out.nbytes, copy)  # per channel: a strided gather
        return out.reshape(taps, n * blocks)
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
    landings = list(itertools.product(*(_landings(window, dim) for dim in range(d))))

    def add(lo: int, hi: int) -> None:  # channels lo:hi, every pixel's taps in one order
        for tap in landings:
            offsets, image_index, grid_index = zip(*tap, strict=True)
            image[(slice(None), slice(lo, hi)) + image_index] += \
                taps[(slice(None), slice(lo, hi)) + offsets + grid_index]
    for_large_blocks(xp, c, columns.nbytes, add)
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


# ------------------------------------------------------------------ scratch memory
# A large array fresh from the allocator costs a page fault per 4 KiB page: glibc hands
# freed memory back to the system once enough of it gathers at the top of its heap, as
# it does after each training step, and takes it back page by page in the next. So the
# kernels' large temporaries (and the columns Conv keeps for its backward) come from a
# per-thread pool of NumPy buffers, each reused as soon as no array refers to it any
# more. The pool holds at most `_SCRATCH_LIMIT` bytes per thread and serves only the
# kernels' own arrays (their results are allocated as usual); CuPy has a pool of its own.
_SCRATCH_LIMIT = 128 << 20
_SCRATCH_MIN = 64 << 10  # smaller arrays come from the allocator, which keeps them well


class _Pool(threading.local):
    """One thread's buffers (flat uint8 arrays) and the bytes they hold."""

    def __init__(self):
        self.buffers, self.held = [], 0


_POOL = _Pool()


def _references(buffers: list, i: int) -> int:
    """The reference count of buffers[i], as seen from here."""
    return sys.getrefcount(buffers[i])


# A free buffer's count: the pool's list alone refers to it (every view of a buffer
# keeps it as its base, so each live view adds one).
_FREE = _references([bytearray()], 0)


def scratch(xp, shape: tuple, dtype, zero: bool = False):
    """An uninitialised array (zeros with `zero`) for a kernel's own use, from the pool
    when `xp` is NumPy and the array is large; the pool drops free buffers to stay
    within its limit, and past it gives a plain array."""
    nbytes = math.prod(shape) * xp.dtype(dtype).itemsize
    if xp.__name__ != "numpy" or not _SCRATCH_MIN <= nbytes <= _SCRATCH_LIMIT:
        return (xp.zeros if zero else xp.empty)(shape, dtype=dtype)
    pool = _POOL
    free = [i for i in range(len(pool.buffers)) if _references(pool.buffers, i) == _FREE]
    fits = [i for i in free if pool.buffers[i].nbytes >= nbytes]
    if fits:
        buffer = pool.buffers[min(fits, key=lambda i: pool.buffers[i].nbytes)]
    else:
        for i in sorted(free, reverse=True):  # drop free buffers until the new one fits
            if pool.held + nbytes <= _SCRATCH_LIMIT:
                break
            pool.held -= pool.buffers.pop(i).nbytes
        if pool.held + nbytes > _SCRATCH_LIMIT:
            return (xp.zeros if zero else xp.empty)(shape, dtype=dtype)
        buffer = xp.empty(nbytes, dtype=xp.uint8)
        pool.buffers.append(buffer)
        pool.held += nbytes
    out = buffer[:nbytes].view(dtype).reshape(shape)
    if zero:
        out.fill(0)
    return out


# ------------------------------------------------------- stride 1: shifted views
# A layout computing more than this many outputs per needed one is not worth it (the
# discarded outputs cost GEMM time); im2col serves such windows.
_MAX_WASTE = 2.0


class Shifted(NamedTuple):
    """A stride-1 `Window` over a batch of `batch` images, in the shifted layout.

    The zero-padded image is stored channel-major as (C, P0, N, P1, ..., P[d-1]) and
    each channel flattened to `length` entries, where a step along spatial dim i is
    `steps[i]` entries. The kernel tap at offsets (t0, t1, ...) then reads, for the
    output at flat position q, entry q + sum(t_i * dilation_i * steps[i]): its columns
    are the image shifted by a constant, a (C, span) view with the image's row stride.
    Outputs live on the same grid, (O, grid0, N, P1, ...); those past `grid` in dims
    1.. are computed and dropped, and `span` columns reach the last one needed.
    """

    window: Window
    batch: int
    steps: tuple
    length: int
    span: int

    @classmethod
    def of(cls, window: Window, batch: int):
        """The layout of `window`, or None where it does not apply or cannot help: a
        stride above 1, an empty batch or grid, a kernel of one tap (whose columns are
        the image itself), or too many discarded outputs (more than `_MAX_WASTE` per
        kept one)."""
        padded, grid = window.padded, window.grid
        if batch == 0 or any(s != 1 for s in window.stride) or 0 in grid or \
                math.prod(window.kernel) == 1 or \
                math.prod(padded[1:]) > _MAX_WASTE * math.prod(grid[1:]):
            return None
        steps = [math.prod(padded[i + 1:]) for i in range(len(padded))]
        steps[0] *= batch
        span = 1 + (batch - 1) * math.prod(padded[1:]) + sum(
            (g - 1) * s for g, s in zip(grid, steps, strict=True))
        return cls(window, batch, tuple(steps), padded[0] * steps[0], span)

    def offsets(self, dims: range) -> list:
        """The column shift of every tap over kernel `dims`, in row-major tap order."""
        w = self.window
        shifts = [0]
        for i in dims:
            shifts = [s + t * w.dilation[i] * self.steps[i]
                      for s in shifts for t in range(w.kernel[i])]
        return shifts

    def image(self, xp, image, groups: int, into=None):
        """(N, C, *size) images as a (groups, C / groups, length) stack: padded, in this
        layout; written into `into` (a view of that shape) when given."""
        c = image.shape[1]
        out = scratch(xp, (groups, c // groups, self.length), image.dtype) if into is None \
            else into
        for_large_blocks(xp, c // groups, out.nbytes, self._image_copy(xp, image, groups, out))
        return out

    def _image_copy(self, xp, image, groups: int, out):
        """copy(lo, hi): channels lo:hi of each group of `image` into `out`, a (groups,
        C / groups, length) view, padded, in this layout: one pass by numba's loop for one
        group of 2-d images (`numba_kernels`), else strided copies and border zeroing."""
        w, (n, c) = self.window, image.shape[:2]
        padded = out.reshape((groups, c // groups, w.padded[0], self.batch) + w.padded[1:])
        loops = numba_kernels.kernels_for(xp, "fd", image, out) if groups == 1 and \
            len(w.size) == 2 else None
        if loops is not None:
            top, left = w.pads[0][0], w.pads[1][0]
            return lambda lo, hi: loops.shifted_image(image, padded[0], top, left, lo, hi)
        source = _channel_row_major(image.reshape((n, groups, c // groups) + image.shape[2:]), 2)
        interior = (slice(None),) + self._interior()

        def copy(lo: int, hi: int) -> None:
            part = padded[:, lo:hi]
            _zero_around(part, interior)
            part[interior] = source[:, lo:hi]
        return copy

    def phase_image(self, xp, image, window: Window):
        """(N, C, H, W) images under the strided 2-d `window` whose `phase_window` this
        layout is, as its stride phases: a (C, S0 * S1 * length) matrix, phase (a, b)
        (rows a, a + S0, ... and columns b, b + S1, ... of the padded images) in this
        layout at columns (a * S1 + b) * length onwards; and the column shift of each of
        `window`'s taps, row-major, which reads the phase that tap falls on. numba's
        `phase_images` copies them: only its fused convolution loops read this layout."""
        (s0, s1), c = window.stride, image.shape[1]
        out = scratch(xp, (c, s0, s1, self.window.padded[0], self.batch, self.window.padded[1]),
                      image.dtype)
        loops = numba_kernels.kernels()
        top, left = window.pads[0][0], window.pads[1][0]
        for_large_blocks(xp, c, out.nbytes,
                         lambda lo, hi: loops.phase_images(image, out, top, left, lo, hi))
        shifts = [((i % s0) * s1 + j % s1) * self.length + (i // s0) * self.steps[0] + j // s1
                  for i in range(window.kernel[0]) for j in range(window.kernel[1])]
        return out.reshape(c, -1), shifts

    def columns(self, xp, image, groups: int, inner: int):
        """The columns of `image` for one GEMM per outer tap: a (groups, K, length)
        stack of matrices, and the shift of each outer tap, which gives that tap's
        columns.

        The taps of the `inner` trailing kernel dims are copied into the rows (each with
        its shift applied, from the first, which is the image itself), so K is their
        number times C / groups; the other, outer taps are shifted views. A copy
        shifted by s leaves its last s columns unset: no outer tap reaches them.
        """
        d, c = len(self.window.kernel), image.shape[1] // groups
        outer = self.offsets(range(d - inner))
        copied = self.offsets(range(d - inner, d))
        rows = scratch(xp, (groups, len(copied), c, self.length), image.dtype)
        image_copy = self._image_copy(xp, image, groups, rows[:, 0])

        def copy(lo: int, hi: int) -> None:
            image_copy(lo, hi)
            for i, shift in enumerate(copied[1:], 1):
                rows[:, i, lo:hi, :self.length - shift] = rows[:, 0, lo:hi, shift:]
        for_large_blocks(xp, c, rows.nbytes, copy)
        return rows.reshape(groups, len(copied) * c, self.length), outer

    def add_taps(self, xp, taps, shifts: list):
        """Images from per-tap column blocks: `taps` (groups, T, C / groups, span) added
        at their `shifts`, the padding dropped (the adjoint of `columns`), as (N, C, *size)."""
        w = self.window
        groups, _, c, span = taps.shape
        flat = scratch(xp, (groups, c, self.length), taps.dtype)
        padded = flat.reshape((groups, c, w.padded[0], self.batch) + w.padded[1:])
        out = xp.empty((self.batch, groups, c) + w.size, taps.dtype)
        interior = (slice(None),) + self._interior()
        # (groups, C, S0, N, *rest) -> (N, groups, C, S0, *rest)
        order = (3, 0, 1, 2, *range(4, padded.ndim))

        def copy(lo: int, hi: int) -> None:
            flat[:, lo:hi] = 0
            for i, shift in enumerate(shifts):
                flat[:, lo:hi, shift:shift + span] += taps[:, i, lo:hi]
            out[:, :, lo:hi] = padded[:, lo:hi][interior].transpose(order)
        for_large_blocks(xp, c, flat.nbytes, copy)
        return out.reshape((self.batch, groups * c) + w.size)

    def grid(self, xp, values):
        """(N, O, *grid) outputs (or their gradients) as an (O, grid0 * steps[0]) matrix in
        this layout, with zeros at the positions that are dropped."""
        w, o = self.window, values.shape[1]
        flat = scratch(xp, (o, w.grid[0], self.batch) + w.padded[1:], values.dtype)
        kept, source = self._kept(), _channel_row_major(values)
        loops = numba_kernels.kernels_for(xp, "fd", values) if len(w.size) == 2 else None

        def copy(lo: int, hi: int) -> None:
            if loops is not None:  # one pass, the dropped columns zeroed on the way
                loops.shifted_grid(values, flat, lo, hi)
                return
            part = flat[lo:hi]
            _zero_around(part, kept)
            part[kept] = source[lo:hi]
        for_large_blocks(xp, o, flat.nbytes, copy)
        return flat.reshape(o, w.grid[0] * self.steps[0])

    def ungrid(self, xp, matrix, bias=None):
        """An (O, grid0 * steps[0]) matrix in this layout as (N, O, *grid) outputs, plus
        `bias` (per output channel) when given."""
        w, o = self.window, matrix.shape[0]
        kept = matrix.reshape((o, w.grid[0], self.batch) + w.padded[1:])[self._kept()]
        kept = kept.swapaxes(0, 2).swapaxes(1, 2)  # (O, g0, N, *rest) -> (N, O, g0, *rest)
        out = xp.empty(kept.shape, dtype=matrix.dtype)
        bias = None if bias is None else bias.reshape((o,) + (1,) * len(w.grid))

        def copy(lo: int, hi: int) -> None:
            if bias is None:
                out[:, lo:hi] = kept[:, lo:hi]
            else:
                xp.add(kept[:, lo:hi], bias[lo:hi], out=out[:, lo:hi])
        for_large_blocks(xp, o, out.nbytes, copy)
        return out

    def _interior(self) -> tuple:
        """The index of the unpadded images in the (C, P0, N, P1, ...) view."""
        (lo0, _), *pads = self.window.pads
        size0, *size = self.window.size
        return (slice(None), slice(lo0, lo0 + size0), slice(None)) + tuple(
            slice(lo, lo + n) for n, (lo, _) in zip(size, pads, strict=True))

    def _kept(self) -> tuple:
        """The index of the outputs kept, in the (O, grid0, N, P1, ...) view."""
        return (slice(None),) * 3 + tuple(slice(0, g) for g in self.window.grid[1:])


def phase_window(window: Window):
    """The stride-1 window that a strided 2-d `window` of dilation 1 is on each of the
    stride phases of its padded images (`Shifted.phase_image`): a tap at offset t along
    a dim of stride s reads phase t mod s at offset t // s, so its kernel is (k - 1) // s
    + 1 taps long, its images that many more than the grid; or None where the strides
    are all 1, the dilation is not, or a stride exceeds the kernel (a phase no tap reads)."""
    kernel, stride = window.kernel, window.stride
    if len(kernel) != 2 or all(s == 1 for s in stride) or any(d != 1 for d in window.dilation) \
            or any(s > k for s, k in zip(stride, kernel, strict=True)):
        return None
    reach = tuple((k - 1) // s for k, s in zip(kernel, stride, strict=True))
    return Window(tuple(g + r for g, r in zip(window.grid, reach, strict=True)),
                  tuple(r + 1 for r in reach), (1, 1), (1, 1), ((0, 0), (0, 0)), window.grid)


def _channel_row_major(image, channel_dims: int = 1):
    """(N, *channels, S0, *rest) as a (*channels, S0, N, *rest) view, for `channel_dims`
    channel axes."""
    order = (*range(1, channel_dims + 2), 0, *range(channel_dims + 2, image.ndim))
    return image.transpose(order)


def _zero_around(a, index: tuple) -> None:
    """Zero every entry of `a` outside `index`, a slice per axis: its border slabs."""
    for axis, part in enumerate(index):
        start, stop, _ = part.indices(a.shape[axis])
        lead = (slice(None),) * axis
        if start:
            a[lead + (slice(0, start),)] = 0
        if stop < a.shape[axis]:
            a[lead + (slice(stop, None),)] = 0
