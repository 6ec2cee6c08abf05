"""Convolutions (1-d, 2-d, 3-d, transposed), unfold/fold and padding.

A convolution is a GEMM (batched over the groups) of the weights and its input's columns,
and so are its duals, which give its gradients: a convolution y = Conv(x, w), its input
gradient ConvTranspose and its weight gradient ConvWeight (a GEMM over the batch and the
positions). The three are one trilinear form read three ways, so each one's gradients
are the other two, and every derivative of any order is again one of them.

The columns come in one of two layouts. im2col copies every window out, (C * K, N * L),
for a single GEMM, and col2im adds them back. A window of stride 1 has the shifted layout
(`backends.im2col.Shifted`) instead, in which each kernel tap's columns are a shifted
view of the padded image: a GEMM per tap, after the taps of the last kernel dims are
copied into the rows to make it deep enough, sums to the result with far less copying
(BLAS adds each tap's product into the result, `backends.openblas.gemm`).
A 1x1 kernel of stride 1 without padding needs no columns at all (`_pointwise`): each
image, (C, L) as it lies, is the GEMM's operand, so the convolution and both its duals
are batched GEMMs over the images with no copy.
With numba installed, a 2-d convolution of stride 1 with nine taps (3x3) and one group,
in float32 or float64, skips the GEMMs (`_NineTaps`): compiled loops over the image in
the shifted layout form each output's nine products for every channel in cache, and its
duals are the same loops (the input gradient a nine-tap convolution with the flipped
kernel, the weight gradient nine dot products per channel pair). A strided one (ResNet's
downsampling) runs the same loops and its weight gradient too, on the stride phases of
the image (`im2col.phase_window`), where each tap reads one phase shifted. In a large
batch of stride 1 the loops pad a few images at a time into a buffer that stays in cache
(`_PASS_BYTES`) instead of copying the whole batch padded first. The tap copies and
partial sums that the GEMMs need cost more memory traffic than the multiplications at the
channel counts of CIFAR or early ImageNet layers (see docs/performance.md). With more
channels the balance turns: from 32 in and out a plain 3x3 of stride 1 takes Winograd's
F(2x2, 3x3) (`ops.winograd`: 16 batched GEMMs over transformed tiles, 4/9 of the
multiplications), and from 64 a dilated one runs as one GEMM per few images over rows of
their copied taps, made in cache (`_TapRows`).
`unfold` and `fold` are im2col and col2im on their own, each the other's adjoint.
"""

from __future__ import annotations

import math
import numbers

from ..autograd.autocasting import autocast_policy
from ..autograd.function import Function
from ..backends import numba_kernels
from ..backends.im2col import Shifted, Window, phase_window, scratch
from ..backends.openblas import gemm
from ..errors import DTypeError, ShapeError
from ..threads import parallel_for
from . import winograd
from ._util import check_float

__all__ = ["pad", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
           "conv_transpose3d", "unfold", "fold"]


# ----------------------------------------------------------------- the window ops
class Unfold(Function):
    """(N, C, *size) images to their (N, C*K, L) columns under a `Window`."""

    def forward(self, image, window):
        self.window = window
        return self.device.backend.im2col(image, window)

    def backward(self, g):
        return (Fold.apply(g, window=self.window),)


class Fold(Function):
    """(N, C*K, L) columns summed back into (N, C, *size) images: Unfold's adjoint."""

    def forward(self, columns, window):
        self.window = window
        return self.device.backend.col2im(columns, window)

    def backward(self, g):
        return (Unfold.apply(g, window=self.window),)


# ------------------------------------------------------- a convolution and its duals
# They work on channel-major matrices, (C, N * L) and (C * K, N * L), or their shifted
# layout, so that one GEMM (per group and tap) serves the whole batch.
def _channels_first(xp, a, groups: int):
    """(N, C, *grid) as a contiguous (groups, C / groups, N * L) stack of matrices."""
    n, c = a.shape[:2]
    matrix = xp.ascontiguousarray(a.swapaxes(0, 1))
    return matrix.reshape(groups, c // groups, n * math.prod(a.shape[2:]))


def _rows_order(d: int, inner: int) -> tuple:
    """The axes of (groups, O/groups, C/groups, *kernel) weights in `_weight_rows`' order:
    the outer kernel dims, the groups, the output channels, the inner kernel dims, the
    input channels."""
    return (*range(3, 3 + d - inner), 0, 1, *range(3 + d - inner, 3 + d), 2)


def _weight_rows(w, groups: int, inner: int):
    """(O, C/groups, *kernel) weights as an (outer taps, groups, O/groups, K) stack: for
    each tap of the leading kernel dims, the rows multiplying the columns, which hold the
    taps of the `inner` trailing kernel dims and then the channels."""
    o, c, kernel = w.shape[0], w.shape[1], w.shape[2:]
    d = len(kernel)
    w = w.reshape((groups, o // groups, c) + kernel).transpose(_rows_order(d, inner))
    return w.reshape(math.prod(kernel[:d - inner]), groups, o // groups, -1)


def _weight_from_rows(rows, shape: tuple, groups: int, inner: int):
    """`_weight_rows`' inverse: the stack back as (O, C/groups, *kernel) weights."""
    o, c, kernel = shape[0], shape[1], shape[2:]
    d = len(kernel)
    split = kernel[:d - inner] + (groups, o // groups) + kernel[d - inner:] + (c,)
    order = _rows_order(d, inner)
    back = sorted(range(len(order)), key=order.__getitem__)
    return rows.reshape(split).transpose(back).reshape(shape)


# Taps copied into the rows of one GEMM until its inner dimension reaches this depth:
# below it the GEMMs run slowly and the partial sums cost more than the copy. Above it the
# copy costs more: at 16 or 32 channels a 3x3 kernel's rows copying one kernel row (depth
# 48 or 96) made a CIFAR ResNet-20 step 27 % faster than copying all nine taps, whose
# columns (85 MB at batch 128) neither stay in cache nor in the scratch pool.
_MIN_DEPTH = 32
# What the shifted layout costs next to im2col, per output position and in units of the
# time im2col takes to copy one entry out (strided): a contiguous copy takes about half
# of that, adding an entry of a partial sum a third, a multiply-add a fiftieth (measured
# with NumPy and OpenBLAS on x86; only the ratios matter).
_COPY_COST, _ADD_COST, _MULTIPLY_ADD_COST = 0.47, 0.33, 0.02


def _inner_dims(channels: int, kernel: tuple) -> int:
    """How many trailing kernel dims the shifted layout copies into the GEMM's rows: the
    last one (copying it costs little more than the image's own layout change, and its
    taps deepen the GEMM), then as many more as it takes the depth, the taps copied times
    `channels`, to reach `_MIN_DEPTH`."""
    d = len(kernel)
    inner = 1
    while inner < d and channels * math.prod(kernel[d - inner:]) < _MIN_DEPTH:
        inner += 1
    return inner


def _shifted_pays(layout, channels: int, out_channels: int, inner: int) -> bool:
    """Whether the shifted layout beats im2col for a convolution of `channels` to
    `out_channels` (per group) under `layout`, by the costs above: it copies only the
    inner taps, but adds partial sums and computes `waste` times the outputs needed."""
    window = layout.window
    taps = math.prod(window.kernel)
    copied = math.prod(window.kernel[len(window.kernel) - inner:])
    waste = layout.span / (layout.batch * math.prod(window.grid))
    shifted = waste * (_COPY_COST * copied * channels
                       + _ADD_COST * (taps // copied - 1) * out_channels)
    shifted += _MULTIPLY_ADD_COST * (waste - 1) * out_channels * taps * channels
    return shifted < taps * channels


def _columns(backend, x, window, groups: int):
    """im2col of `x` as a (groups, C * K / groups, N * L) stack of matrices."""
    columns = backend.im2col(x, window, batch_last=True)
    return columns.reshape(groups, columns.shape[0] // groups, columns.shape[1])


def _nine_tap_loops(xp, shape: tuple, window, groups: int, like):
    """numba's fused loops for a convolution of images of `shape` (N, C, ...) and the dtype
    of the array `like` under `window`, or None: they serve one group of float32 or
    float64 images with a 2-d nine-tap kernel (3x3, or 1x9), when numba is installed: of
    stride 1 (any padding and dilation) in the shifted layout, or strided without
    dilation on the stride phases of the images (`_tap_layout`)."""
    if groups != 1 or len(window.kernel) != 2 or math.prod(window.kernel) != 9 or \
            0 in shape[:2] or _tap_layout(window, shape[0]) is None:
        return None
    return numba_kernels.kernels_for(xp, "fd", like)


def _tap_layout(window, batch: int):
    """The shifted layout that the fused loops read images under `window` in: the
    window's own for stride 1; for a strided one, that of its `phase_window`, a stride-1
    window over each stride phase of the images, where every tap reads one phase
    shifted (so a strided convolution computes only the outputs it keeps); or None."""
    if all(s == 1 for s in window.stride):
        return Shifted.of(window, batch)
    phases = phase_window(window)
    return None if phases is None else Shifted.of(phases, batch)


# Output positions per work item of the fused loops (rounded down to whole layout rows):
# four output channels' partial sums over this many (16 KiB in float32) stay in the L1
# cache while every input channel's nine shifted rows stream past; the weight gradient's
# sums run over longer stretches.
_TAP_CHUNK, _TAP_GRAD_CHUNK = 1024, 4096
# Where a batch's padded images would not stay in cache, the loops take them a few at a
# time: each work item pads as many images as fit in `_PASS_BYTES` into a buffer of its
# own and convolves them while they stay in the L2 cache (with the partial sums and, for
# the weight gradient, as many bytes of the gradients' grid), instead of reading a
# padded copy of the whole batch from memory. 256 KiB (3, 6 and 10 images at 16, 32 and
# 64 channels of 32, 16 and 8 pixels square) ran ResNet-20's convolutions fastest of
# 128 to 512 KiB on a 1 MiB L2 cache per core. The weight gradient's passes take twice
# as many images: its sums over each pass end in one horizontal add per weight, which
# shorter passes pay for more often. A batch of fewer than `_MIN_PASSES` passes is padded
# whole, and so is an image larger than the buffer.
_PASS_BYTES, _GRAD_PASS_IMAGES, _MIN_PASSES = 256 << 10, 2, 4


def _images_per_pass(x, window) -> int:
    """How many images of `x` one pass of the fused loops pads under the stride-1
    `window`, or 0 where the whole batch is padded at once (`_PASS_BYTES`)."""
    part = _PASS_BYTES // (x.shape[1] * math.prod(window.padded) * x.itemsize)
    return part if part and -(-x.shape[0] // part) >= _MIN_PASSES else 0


def _tap_offsets(xp, window):
    """Each kernel tap's (row, column) offset in the padded image under the 2-d `window`,
    row-major, as the (taps, 2) int64 array numba's per-image loops read."""
    return xp.array([(i * window.dilation[0], j * window.dilation[1])
                     for i in range(window.kernel[0]) for j in range(window.kernel[1])],
                    xp.int64)


class _NineTaps:
    """A nine-tap convolution computed by numba's fused loops (`_nine_tap_loops`): the
    image in the shifted layout, no tap copied, and each output the sum of its nine
    shifted products over every channel, formed in cache. GEMMs over copied taps pay
    for a memory pass per tap; this reads each image once per four output channels.
    A stride-1 window over a large batch (`_images_per_pass`) keeps no padded copy: each
    work item pads its few images itself."""

    def __init__(self, loops, xp, x, window):
        self.loops, self.xp, self.window = loops, xp, window
        self.layout = layout = _tap_layout(window, x.shape[0])
        self.part = _images_per_pass(x, window) if layout.window is window else 0
        if self.part:  # the loops pad the images `part` at a time, in cache
            self.x, self.matrix = x, None
            self.taps = _tap_offsets(xp, window)
            return
        if layout.window is window:
            self.matrix = layout.image(xp, x, 1)[0]  # (C, length)
            shifts = layout.offsets(range(len(window.kernel)))
        else:  # (C, phases * length)
            self.matrix, shifts = layout.phase_image(xp, x, window)
        self.shifts = xp.array(shifts, xp.int64)

    def convolve(self, w, bias=None):
        """x ⋆ w (+ bias, one per output channel) as (N, O, *grid)."""
        xp, layout, o, c = self.xp, self.layout, w.shape[0], w.shape[1]
        taps = xp.zeros((-(-o // 4) * 4, c, 9), w.dtype)  # zero rows up to a multiple of 4
        taps[:o] = w.reshape(o, c, 9)
        bias = xp.zeros(0, w.dtype) if bias is None else bias
        out = xp.empty((layout.batch, o) + layout.window.grid, w.dtype)
        width = layout.window.padded[1]  # one row of the layout: a padded image row
        rows = max(1, _TAP_CHUNK // width)
        if self.part:
            return self._convolve_by_images(taps, bias, out, rows)
        blocks = -(-layout.span // (rows * width))

        def run(lo: int, hi: int) -> None:
            acc = xp.empty((4, rows * width), w.dtype)
            self.loops.conv_nine_taps(self.matrix, taps, bias, self.shifts, acc, out,
                                      layout.span, rows, lo, hi)
        parallel_for(blocks * (taps.shape[0] // 4), run)
        return out

    def _convolve_by_images(self, taps, bias, out, rows: int):
        """`convolve` `part` images per work item, each pass padded into a buffer of its
        own that stays in cache."""
        xp, window, x, part = self.xp, self.window, self.x, self.part
        padded, (top, left) = window.padded, (lo for lo, _ in window.pads)

        def run(lo: int, hi: int) -> None:
            local = scratch(xp, (x.shape[1] * padded[0] * part * padded[1],), x.dtype)
            acc = xp.empty((4, rows * padded[1]), x.dtype)
            self.loops.conv_nine_taps_by_images(x, taps, bias, self.taps, top, left, padded,
                                                part, local, acc, out, rows, lo, hi)
        parallel_for(-(-x.shape[0] // part), run, single=True)
        return out

    def weight_grad(self, y, shape: tuple, taps=None):
        """The gradient of the weights, of `shape`, for the output gradient `y`; `taps`
        may be the `_NineTaps` of y that computed the input gradient, whose copy of y
        then serves here too (`grid_of`)."""
        xp, layout = self.xp, self.layout
        if self.part:
            return self._weight_grad_by_images(y, shape)
        grid = None if taps is None else taps.grid_of(layout)
        grads, offset = (layout.grid(xp, y), 0) if grid is None else grid
        dw = xp.zeros((shape[0], shape[1], 9), y.dtype)

        def run(lo: int, hi: int) -> None:
            self.loops.conv_nine_taps_weight_grad(self.matrix, grads, offset, self.shifts,
                                                  dw, layout.span, _TAP_GRAD_CHUNK, lo, hi)
        parallel_for(-(-shape[0] // 2), run)
        return dw.reshape(shape)

    def _weight_grad_by_images(self, y, shape: tuple):
        """`weight_grad` `part` · `_GRAD_PASS_IMAGES` images per work item, each pass's
        images and gradients copied into buffers of its own; the passes' sums are added
        in order, so the result does not depend on which thread ran which."""
        xp, window, x, part = self.xp, self.window, self.x, self.part * _GRAD_PASS_IMAGES
        padded, (top, left) = window.padded, (lo for lo, _ in window.pads)
        items = -(-x.shape[0] // part)
        dw = xp.zeros((items, shape[0], shape[1], 9), y.dtype)

        def run(lo: int, hi: int) -> None:
            local = scratch(xp, (x.shape[1] * padded[0] * part * padded[1],), x.dtype)
            grid = scratch(xp, (y.shape[1] * window.grid[0] * part * padded[1],), y.dtype)
            self.loops.conv_nine_taps_weight_grad_by_images(
                x, y, self.taps, top, left, padded, part, local, grid, dw,
                _TAP_GRAD_CHUNK, lo, hi)
        parallel_for(items, run, single=True)
        return dw.sum(axis=0).reshape(shape)

    def grid_of(self, layout):
        """These padded images (output gradients, under the adjoint window) read as the
        output grid of `layout`: (matrix, offset), grid position q at matrix[:, offset + q],
        or None. It is one where both layouts have rows of one padded width: then the
        grid's dropped columns fall on this image's zero padding, past its right edge or
        wrapped onto the next row's left one."""
        mine = self.layout
        if self.part or mine.window.padded[1] != layout.window.padded[1] or \
                mine.batch != layout.batch:
            return None
        offset = self.window.pads[0][0] * mine.steps[0] + self.window.pads[1][0]
        return (self.matrix, offset) if offset + layout.span <= mine.length else None


# From this many channels in and out, a stride-1 nine-tap convolution that Winograd's
# algorithm does not take (dilated) runs as GEMMs over a few images' rows at a time
# (`_TapRows`) rather than the fused loops: at 64 channels of 8x8 images the loops run at
# about 40 % of the sgemm peak and the GEMMs at 90 % (docs/performance.md,
# "Convolutions"). A strided one takes them from `_ROWS_MIN_STRIDED` channels in: the
# loops on the stride phases read each phase shifted, with short rows, and its input
# gradient would otherwise be W^T @ g and col2im over the whole batch. A work item takes
# as many images as keep its rows within `_ROWS_BYTES` (at least one).
_ROWS_MIN_CHANNELS, _ROWS_MIN_STRIDED, _ROWS_BYTES = 64, 16, 1 << 20


def _tap_rows_pay(channels: int, window, out_channels: int) -> bool:
    """Whether `_TapRows` serves a convolution of `channels` to `out_channels` under
    `window` that numba's loops can run: many channels in and out, fewer where it is
    strided."""
    least = _ROWS_MIN_CHANNELS if all(s == 1 for s in window.stride) else _ROWS_MIN_STRIDED
    return min(channels, out_channels) >= least


class _TapRows:
    """A nine-tap convolution over many channels as GEMMs: each work item copies a few
    images' taps, channels last, into the rows of a matrix (numba's `tap_rows`,
    (positions, 9 · C), in cache) and multiplies it by the weights, one BLAS thread per
    item; the output gradient's images, transposed the same way, give the weight
    gradient, and times the weights transposed, rows whose taps added back in place
    (`rows_to_image_grads`) are the input gradient. Where the channels are many, the
    GEMM's deep products beat the fused loops' shifted multiply-adds (`_tap_rows_pay`).
    Made for the input gradient alone, it needs only the images' `shape` (N, C), not x."""

    def __init__(self, loops, xp, window, shape: tuple, dtype, x=None):
        self.loops, self.xp, self.x, self.window = loops, xp, x, window
        self.shape, self.dtype = shape, dtype
        self.taps = _tap_offsets(xp, window)
        self.positions = math.prod(window.grid)
        row_bytes = self.positions * 9 * shape[1] * xp.dtype(dtype).itemsize
        self.part = max(1, _ROWS_BYTES // row_bytes)
        self.items = -(-shape[0] // self.part)

    def _images(self, item: int) -> tuple:
        """Work item `item`'s images n0:n1."""
        n0 = item * self.part
        return n0, min(self.shape[0], n0 + self.part)

    def _local(self):
        """One padded image, channels last, zero (a scratch buffer)."""
        return scratch(self.xp, self.window.padded + (self.shape[1],), self.dtype, zero=True)

    def _rows(self, item: int) -> tuple:
        """Work item `item`'s images n0:n1 and their rows (a scratch buffer)."""
        n0, n1 = self._images(item)
        rows = scratch(self.xp, ((n1 - n0) * self.positions, 9 * self.shape[1]), self.dtype)
        top, left = (lo for lo, _ in self.window.pads)
        self.loops.tap_rows(self.x, self.taps, top, left, self.window.stride,
                            self.window.grid, self._local(), rows, n0, n1)
        return n0, n1, rows

    def _weights(self, w):
        """(O, C, k0, k1) nine-tap weights as the rows' (9 · C, O) matrix."""
        return self.xp.ascontiguousarray(w.transpose(2, 3, 1, 0).reshape(-1, w.shape[0]))

    def convolve(self, w, bias=None):
        """x ⋆ w (+ bias, one per output channel) as (N, O, *grid)."""
        xp, o = self.xp, w.shape[0]
        weights = self._weights(w)
        bias = xp.zeros(o, w.dtype) if bias is None else xp.ascontiguousarray(bias)
        out = xp.empty((self.shape[0], o) + self.window.grid, w.dtype)
        images = out.reshape(out.shape[0], o, self.positions)

        def run(lo: int, hi: int) -> None:
            for item in range(lo, hi):
                n0, n1, rows = self._rows(item)
                result = scratch(xp, (rows.shape[0], o), w.dtype)
                gemm(rows, weights, result)
                self.loops.rows_to_images(result, bias, n0, n1, images)
        parallel_for(self.items, run, products=True, single=True)
        return out

    def input_grad(self, y, w):
        """The gradient of the images, (N, C, *size), for the output gradient `y` and the
        nine-tap weights `w` (O, C, k0, k1)."""
        xp, window = self.xp, self.window
        weights = self._weights(w).T  # (O, 9 · C)
        grads = y.reshape(y.shape[0], y.shape[1], self.positions)
        out = xp.empty(self.shape + window.size, self.dtype)
        top, left = (lo for lo, _ in window.pads)

        def run(lo: int, hi: int) -> None:
            for item in range(lo, hi):
                n0, n1 = self._images(item)
                g = scratch(xp, ((n1 - n0) * self.positions, y.shape[1]), self.dtype)
                self.loops.images_to_rows(grads, n0, n1, g)
                rows = scratch(xp, (g.shape[0], weights.shape[1]), self.dtype)
                gemm(g, weights, rows)
                self.loops.rows_to_image_grads(rows, self.taps, top, left, window.stride,
                                               window.grid, self._local(), out, n0, n1)
        parallel_for(self.items, run, products=True, single=True)
        return out

    def weight_grad(self, y, shape: tuple, taps=None):
        """The gradient of the weights, of `shape`, for the output gradient `y` (`taps`,
        which `_NineTaps` can share, has nothing to give here); each item's sum is its
        own, and the items' are added in order, so the result does not depend on which
        thread ran which."""
        xp, o = self.xp, shape[0]
        grads = y.reshape(y.shape[0], o, self.positions)
        parts = xp.empty((self.items, 9 * shape[1], o), y.dtype)

        def run(lo: int, hi: int) -> None:
            for item in range(lo, hi):
                n0, n1, rows = self._rows(item)
                g = scratch(xp, (rows.shape[0], o), y.dtype)
                self.loops.images_to_rows(grads, n0, n1, g)
                gemm(rows.T, g, parts[item])
        parallel_for(self.items, run, products=True, single=True)
        dw = parts.sum(axis=0).reshape(shape[2:] + shape[1::-1])  # (k0, k1, C, O)
        return xp.ascontiguousarray(dw.transpose(3, 2, 0, 1))


def _columns_for(device, x, window, groups: int, out_channels: int):
    """What Conv multiplies by the weights and ConvWeight by the output gradient: numba's
    nine-tap GEMM rows or fused loops where they apply (`_tap_engine`), else `_Columns`."""
    engine = _tap_engine(device.xp, x, window, groups, out_channels)
    return _Columns(device, x, window, groups, out_channels) if engine is None else engine


def _tap_engine(xp, x, window, groups: int, out_channels: int):
    """numba's way to convolve `x` under `window` to `out_channels`: Winograd's F(2x2, 3x3)
    where it pays (`winograd.winograd_pays`), else `_TapRows` where they do
    (`_tap_rows_pay`), else `_NineTaps`; None where numba's loops do not apply
    (`_nine_tap_loops`)."""
    if winograd.winograd_pays(x, window, groups, out_channels):
        loops = numba_kernels.kernels_for(xp, "fd", x)
        if loops is not None:
            return winograd.Winograd(loops, xp, x, window)
    loops = _nine_tap_loops(xp, x.shape, window, groups, x)
    if loops is None:
        return None
    if _tap_rows_pay(x.shape[1], window, out_channels):
        return _TapRows(loops, xp, window, x.shape[:2], x.dtype, x)
    return _NineTaps(loops, xp, x, window)


class _Columns:
    """The columns of images `x` under a window, for a convolution to `out_channels`, in
    the layout that serves it best (of im2col, the shifted layout with taps copied, and
    the images themselves for a 1x1 kernel)."""

    def __init__(self, device, x, window, groups: int, out_channels: int):
        self.xp, self.window, self.groups = device.xp, window, groups
        channels = x.shape[1] // groups
        self.pointwise = _pointwise(window)
        if self.pointwise:  # the images are their own columns, (N, groups, C/groups, L)
            self.layout = None
            self.matrix = x.reshape(x.shape[0], groups, channels, math.prod(window.grid))
            return
        self.layout = Shifted.of(window, x.shape[0]) if channels else None
        if self.layout is not None:
            self.inner = _inner_dims(channels, window.kernel)
            if not _shifted_pays(self.layout, channels, out_channels // groups, self.inner):
                self.layout = None
        if self.layout is None:
            self.matrix = _columns(device.backend, x, window, groups)
        else:
            self.matrix, self.outer = self.layout.columns(self.xp, x, groups, self.inner)

    def convolve(self, w, bias=None):
        """x ⋆ w (+ bias, one per output channel) as (N, O, *grid)."""
        xp, groups, layout = self.xp, self.groups, self.layout
        out_channels = w.shape[0]
        if self.pointwise:
            y = xp.matmul(w.reshape(groups, out_channels // groups, w.shape[1]), self.matrix)
            y = y.reshape((y.shape[0], out_channels) + self.window.grid)
            if bias is not None:
                y += bias.reshape((-1,) + (1,) * len(self.window.grid))
            return y
        if layout is None:
            y = w.reshape(groups, out_channels // groups, -1) @ self.matrix
            y = y.reshape((out_channels, -1) + self.window.grid).swapaxes(0, 1)
            if bias is None:
                return xp.ascontiguousarray(y)
            out = xp.empty(y.shape, dtype=y.dtype)
            return xp.add(y, bias.reshape((-1,) + (1,) * len(self.window.grid)), out=out)
        rows = _weight_rows(w, groups, self.inner)
        span = layout.span
        out = scratch(xp, (groups, out_channels // groups, self.window.grid[0] * layout.steps[0]),
                      w.dtype)
        total = out[:, :, :span]
        if groups == 1 and xp.__name__ == "numpy":  # BLAS adds each tap's product in place
            for i, (tap, shift) in enumerate(zip(rows, self.outer, strict=True)):
                gemm(tap[0], self.matrix[0, :, shift:shift + span], total[0], accumulate=i > 0)
            return layout.ungrid(xp, out.reshape(out_channels, -1), bias)
        xp.matmul(rows[0], self.matrix[:, :, :span], out=total)
        if len(self.outer) > 1:  # the partial sums of the other taps
            part = scratch(xp, total.shape, w.dtype)
            for tap, shift in zip(rows[1:], self.outer[1:], strict=True):
                xp.matmul(tap, self.matrix[:, :, shift:shift + span], out=part)
                total += part
        return layout.ungrid(xp, out.reshape(out_channels, -1), bias)

    def weight_grad(self, y, shape: tuple):
        """The gradient of the weights, of `shape`, for the output gradient `y`."""
        xp, groups, layout = self.xp, self.groups, self.layout
        if self.pointwise:  # per image, then summed over the batch
            y = y.reshape(self.matrix.shape[:2] + (shape[0] // groups, self.matrix.shape[3]))
            return xp.matmul(y, self.matrix.swapaxes(2, 3)).sum(axis=0).reshape(shape)
        if layout is None:
            w = _channels_first(xp, y, groups) @ self.matrix.transpose(0, 2, 1)
            return w.reshape(shape)
        span = layout.span
        grads = layout.grid(xp, y).reshape(groups, shape[0] // groups, -1)[:, :, :span]
        # each tap's (K, O/groups) block: this orientation of the long product runs faster
        rows = xp.empty((len(self.outer), groups, self.matrix.shape[1], shape[0] // groups),
                        dtype=y.dtype)
        for i, shift in enumerate(self.outer):
            xp.matmul(self.matrix[:, :, shift:shift + span], grads.swapaxes(1, 2), out=rows[i])
        return _weight_from_rows(rows.swapaxes(2, 3), shape, groups, self.inner)


def _pointwise(window: Window) -> bool:
    """Whether `window` is a 1x1 kernel of stride 1 without padding: then a convolution
    is a plain GEMM of the weights and each image as it is, (C, L), with no copy."""
    return math.prod(window.kernel) == 1 and all(s == 1 for s in window.stride) and \
        not any(lo or hi for lo, hi in window.pads)


def _adjoint_window(window: Window):
    """The stride-1 window whose convolution with the flipped kernel is the adjoint of a
    stride-1 convolution under `window` (its input gradient), or None when a stride is
    not 1 or that window would need negative padding."""
    if any(s != 1 for s in window.stride):
        return None
    pads = []
    for n, g, k, dl, (lo, _) in zip(window.size, window.grid, window.kernel, window.dilation,
                                    window.pads, strict=True):
        before = dl * (k - 1) - lo
        pads.append((before, n - g + dl * (k - 1) - before))
    if any(lo < 0 or hi < 0 for lo, hi in pads):
        return None
    return Window(window.grid, window.kernel, window.dilation, window.stride, tuple(pads),
                  window.size)


def _adjoint_weight(xp, w, groups: int):
    """(O, C/groups, *k) weights as the (C, O/groups, *k) weights of the adjoint
    convolution: each group's matrix transposed, the kernel flipped."""
    o, c, kernel = w.shape[0], w.shape[1], w.shape[2:]
    w = w.reshape((groups, o // groups, c) + kernel).swapaxes(1, 2)
    w = w.reshape((groups * c, o // groups) + kernel)
    return xp.flip(w, axis=tuple(range(2, 2 + len(kernel))))


class Conv(Function):
    """y = x ⋆ w (+ b): (N, C, *size) images, (O, C/groups, *kernel) weights and an
    optional (O,) bias to (N, O, *grid)."""

    def forward(self, x, w, *bias, window, groups):
        nx, nw = (self.needs_input_grad or (False, False))[:2]
        self.saves = ((0,) if nw else ()) + ((1,) if nx else ())
        self.window, self.groups = window, groups
        columns = _columns_for(self.device, x, window, groups, w.shape[0])
        if nw:  # the weight gradient multiplies them again; keeping them saves a copy
            self.columns = columns
        return columns.convolve(w, *bias)

    def backward(self, g):
        nx, nw, *nb = self.needs_input_grad
        saved = self.saved_tensors
        x, w = saved[0] if nw else None, saved[-1] if nx else None
        params = {"window": self.window, "groups": self.groups}
        shared = {}  # the fused loops' copy of g, made for the input gradient, serves both
        if nx and nw and isinstance(self.columns, _NineTaps) and w.numel():
            taps = _adjoint_taps(self.xp, g._data, self.window, self.groups,
                                 w.shape[1] * self.groups)
            shared = {"taps": taps} if isinstance(taps, _NineTaps) else {}
        grads = (ConvTranspose.apply(g, w, **params, **shared) if nx else None,
                 ConvWeight.apply(x, g, columns=self.columns, **params, **shared)
                 if nw else None)
        if not nb:
            return grads
        return grads + (g.sum(dim=(0, *range(2, g.ndim))) if nb[0] else None,)


class ConvTranspose(Function):
    """Conv's adjoint in x, applied to y: W^T @ y per group, then col2im (see
    `_convolve_transposed` for the faster ways that stride 1 allows)."""

    def forward(self, y, w, window, groups, taps=None):
        ny, nw = self.needs_input_grad or (False, False)
        self.saves = ((0,) if nw else ()) + ((1,) if ny else ())
        self.window, self.groups = window, groups
        return _convolve_transposed(self.device, y, w, window, groups, taps)

    def backward(self, g):
        ny, nw = self.needs_input_grad
        saved = self.saved_tensors
        y, w = saved[0] if nw else None, saved[-1] if ny else None
        params = {"window": self.window, "groups": self.groups}
        return (Conv.apply(g, w, **params) if ny else None,
                ConvWeight.apply(g, y, **params) if nw else None)


def _adjoint_taps(xp, y, window, groups: int, channels: int):
    """numba's engine (`_tap_engine`) for the adjoint convolution of `window` (the input
    gradient, to `channels`) of output gradients `y`, or None where it does not apply."""
    adjoint = _adjoint_window(window)
    return None if adjoint is None else _tap_engine(xp, y, adjoint, groups, channels)


def _rows_input_grad(xp, y, w, window, groups: int):
    """The input gradient of a strided nine-tap convolution, for the output gradient `y`
    and the weights `w`, by `_TapRows` where they serve that convolution, else None."""
    shape = (y.shape[0], w.shape[1] * groups)
    if all(s == 1 for s in window.stride) or not w.size:
        return None
    loops = _nine_tap_loops(xp, shape, window, groups, y)
    if loops is None or not _tap_rows_pay(shape[1], window, w.shape[0]):
        return None
    return _TapRows(loops, xp, window, shape, y.dtype).input_grad(y, w)


def _convolve_transposed(device, y, w, window, groups: int, taps=None):
    """(N, O, *grid) y times Conv's adjoint in x, for (O, C/groups, *kernel) weights w.

    With stride 1 it takes one of three shapes. Where numba's nine-tap loops apply to the
    adjoint convolution, they compute it (from `taps`, `_adjoint_taps` of y, when
    given). When the images have fewer channels than y (per group), W^T @ y gives each
    tap's columns in the shifted layout, which are added at their shifts (col2im, but
    with contiguous adds). Otherwise it is a
    convolution of y with the flipped, transposed kernel, which copies y's columns
    instead: fewer of them in that case. A strided nine-tap one takes numba's GEMM rows
    where they serve it (`_rows_input_grad`); other strides take W^T @ y and col2im.
    """
    xp, d = device.xp, len(window.kernel)
    out_channels, channels = w.shape[0] // groups, w.shape[1]
    if _pointwise(window):
        w_t = w.reshape(groups, out_channels, channels).swapaxes(1, 2)
        y = y.reshape(y.shape[0], groups, out_channels, math.prod(window.grid))
        x = xp.matmul(w_t, y)
        return x.reshape((y.shape[0], groups * channels) + window.size)
    if taps is None and w.size:
        taps = _adjoint_taps(xp, y, window, groups, channels * groups)
    if taps is not None:
        return taps.convolve(_adjoint_weight(xp, w, groups))
    x = _rows_input_grad(xp, y, w, window, groups)
    if x is not None:
        return x
    adjoint = _adjoint_window(window) if w.size else None
    layout = Shifted.of(window, y.shape[0]) if w.size else None
    if layout is not None and channels < out_channels:
        rows = _weight_rows(w, groups, d)[0].swapaxes(1, 2)  # (groups, T * C/g, O/g)
        grads = layout.grid(xp, y).reshape(groups, out_channels, -1)[:, :, :layout.span]
        taps = xp.matmul(rows, grads, out=scratch(xp, rows.shape[:2] + grads.shape[2:], y.dtype))
        taps = taps.reshape(groups, -1, channels, layout.span)
        return layout.add_taps(xp, taps, layout.offsets(range(d)))
    if adjoint is not None and Shifted.of(adjoint, y.shape[0]) is not None:
        columns = _Columns(device, y, adjoint, groups, channels * groups)
        return columns.convolve(_adjoint_weight(xp, w, groups))
    w_t = w.reshape(groups, out_channels, -1).transpose(0, 2, 1)
    columns = w_t @ _channels_first(xp, y, groups)
    taps = columns.shape[0] * columns.shape[1]
    return device.backend.col2im(columns.reshape(taps, columns.shape[2]), window,
                                 batch_last=True)


class ConvWeight(Function):
    """Conv's adjoint in w, applied to y: y @ columns(x)^T per group, which sums over the
    batch and the positions in one GEMM (one per outer tap in the shifted layout);
    `columns` may come ready from Conv's forward, and with them (a `_NineTaps`) `taps`,
    the `_adjoint_taps` of y that computed the input gradient."""

    def forward(self, x, y, window, groups, columns=None, taps=None):
        nx, ny = self.needs_input_grad or (False, False)
        self.saves = ((0,) if ny else ()) + ((1,) if nx else ())
        self.window, self.groups = window, groups
        if columns is None:
            columns = _columns_for(self.device, x, window, groups, y.shape[1])
        shape = (y.shape[1], x.shape[1] // groups) + window.kernel
        if taps is not None:
            return columns.weight_grad(y, shape, taps)
        return columns.weight_grad(y, shape)

    def backward(self, g):
        nx, ny = self.needs_input_grad
        saved = self.saved_tensors
        x, y = saved[0] if ny else None, saved[-1] if nx else None
        params = {"window": self.window, "groups": self.groups}
        return (ConvTranspose.apply(y, g, **params) if nx else None,
                Conv.apply(x, g, **params) if ny else None)


# ------------------------------------------------------------------ argument checks
def _ints(value, d: int, name: str, op: str, low: int) -> tuple:
    """An int, or a sequence of 1 or d ints, as a d-tuple whose entries are >= `low`."""
    values = (value,) if isinstance(value, numbers.Integral) else tuple(value)
    if len(values) == 1:
        values *= d
    if len(values) != d or not all(isinstance(v, numbers.Integral) and v >= low
                                   for v in values):
        raise ShapeError(f"{op}: {name} must be an int or {d} ints, each >= {low}; "
                         f"got {value!r}")
    return tuple(int(v) for v in values)


def _batched(input, d: int, op: str) -> tuple:
    """`input` with a batch dim (added when it has none), and whether one was added."""
    if input.ndim not in (d + 1, d + 2):
        raise ShapeError(f"{op}: expected a {d + 1}-D (unbatched) or {d + 2}-D (batched) "
                         f"input, got shape {tuple(input.shape)}")
    return (input.unsqueeze(0), True) if input.ndim == d + 1 else (input, False)


def _check_operands(op: str, input, weight, bias, d: int, layout: str) -> None:
    check_float(input, op)
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and t.dtype != input.dtype:
            raise DTypeError(f"{op}: input is {input.dtype!r} but {name} is {t.dtype!r}; "
                             f"valid: one floating dtype for all, e.g. {name}.to(input.dtype)")
    if weight.ndim != d + 2:
        raise ShapeError(f"{op}: expected a {d + 2}-D weight {layout}, got shape "
                         f"{tuple(weight.shape)}")


def _check_groups(op: str, groups, channels: int, what: str, shape: tuple) -> int:
    if not isinstance(groups, numbers.Integral) or groups < 1:
        raise ShapeError(f"{op}: groups must be a positive int, got {groups!r}")
    if channels % groups:
        raise ShapeError(f"{op}: {what} {channels} (weight shape {shape}) is not divisible by "
                         f"groups={groups}; valid: a groups value that divides it")
    return int(groups)


def _check_bias(op: str, bias, channels: int) -> None:
    if bias is not None and tuple(bias.shape) != (channels,):
        raise ShapeError(f"{op}: bias of shape {tuple(bias.shape)} does not fit {channels} "
                         f"output channels; valid: shape ({channels},)")


def _window(op: str, size: tuple, kernel: tuple, dilation: tuple, stride: tuple,
            pads: tuple) -> Window:
    """The window of a kernel sliding over a padded `size`, which it must fit into."""
    spans = tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilation, strict=True))
    padded = tuple(n + lo + hi for n, (lo, hi) in zip(size, pads, strict=True))
    if any(p < s for p, s in zip(padded, spans, strict=True)):
        raise ShapeError(f"{op}: the spatial size {size} padded to {padded} is smaller than "
                         f"the kernel {kernel}, which spans {spans} with dilation {dilation}; "
                         "valid: a padded size at least (kernel - 1) * dilation + 1 per dim")
    grid = tuple((p - s) // st + 1 for p, s, st in zip(padded, spans, stride, strict=True))
    return Window(size, kernel, dilation, stride, pads, grid)


def _conv_pads(op: str, padding, d: int, kernel: tuple, dilation: tuple,
               stride: tuple) -> tuple:
    """(before, after) per dim; 'same' puts an odd total's extra pixel after, as torch."""
    if not isinstance(padding, str):
        return tuple((p, p) for p in _ints(padding, d, "padding", op, 0))
    if padding == "valid":
        return ((0, 0),) * d
    if padding != "same":
        raise ValueError(f"{op}: padding must be 'valid', 'same', an int or {d} ints; "
                         f"got {padding!r}")
    if any(s != 1 for s in stride):
        raise ShapeError(f"{op}: padding='same' needs stride 1, got stride {stride}; "
                         "valid: stride=1, or explicit padding for a strided convolution")
    totals = tuple(dl * (k - 1) for k, dl in zip(kernel, dilation, strict=True))
    return tuple((t // 2, t - t // 2) for t in totals)


def _finish(out, bias, d: int, unbatched: bool):
    if bias is not None:
        out = out + bias.reshape((bias.shape[0],) + (1,) * d)
    return out.squeeze(0) if unbatched else out


# -------------------------------------------------------------------- convolutions
def _conv(op, d, input, weight, bias, stride, padding, dilation, groups):
    _check_operands(op, input, weight, bias, d, "(out_channels, in_channels / groups, *kernel)")
    x, unbatched = _batched(input, d, op)
    channels = x.shape[1]
    out_channels, group_in = weight.shape[:2]
    kernel = tuple(weight.shape[2:])
    groups = _check_groups(op, groups, out_channels, "out_channels", tuple(weight.shape))
    if channels != group_in * groups:
        raise ShapeError(f"{op}: input of shape {tuple(input.shape)} has {channels} channels, "
                         f"but weight of shape {tuple(weight.shape)} with groups={groups} "
                         f"expects {group_in * groups}; valid: input channels = "
                         "weight.shape[1] * groups")
    _check_bias(op, bias, out_channels)
    stride = _ints(stride, d, "stride", op, 1)
    dilation = _ints(dilation, d, "dilation", op, 1)
    pads = _conv_pads(op, padding, d, kernel, dilation, stride)
    window = _window(op, tuple(x.shape[2:]), kernel, dilation, stride, pads)
    operands = (x, weight) if bias is None else (x, weight, bias)
    out = Conv.apply(*operands, window=window, groups=groups)
    return out.squeeze(0) if unbatched else out


@autocast_policy("lower")
def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-d convolution (cross-correlation) of (N, C_in, L) by (C_out, C_in / groups, k).

    `padding` is an int, a tuple, 'valid' (none) or 'same' (output as long as the input,
    stride 1 only); `groups` splits the channels into independent convolutions.
    """
    return _conv("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


@autocast_policy("lower")
def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-d convolution of (N, C_in, H, W) by (C_out, C_in / groups, kH, kW); see conv1d."""
    return _conv("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


@autocast_policy("lower")
def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-d convolution of (N, C_in, D, H, W) by (C_out, C_in / groups, kD, kH, kW)."""
    return _conv("conv3d", 3, input, weight, bias, stride, padding, dilation, groups)


def _conv_transpose(op, d, input, weight, bias, stride, padding, output_padding, groups,
                    dilation):
    _check_operands(op, input, weight, bias, d, "(in_channels, out_channels / groups, *kernel)")
    x, unbatched = _batched(input, d, op)
    channels = x.shape[1]
    if weight.shape[0] != channels:
        raise ShapeError(f"{op}: input of shape {tuple(input.shape)} has {channels} channels, "
                         f"but weight of shape {tuple(weight.shape)} expects "
                         f"{weight.shape[0]}; valid: input channels = weight.shape[0]")
    groups = _check_groups(op, groups, channels, "in_channels", tuple(weight.shape))
    kernel = tuple(weight.shape[2:])
    out_channels = weight.shape[1] * groups
    _check_bias(op, bias, out_channels)
    stride = _ints(stride, d, "stride", op, 1)
    padding = _ints(padding, d, "padding", op, 0)
    output_padding = _ints(output_padding, d, "output_padding", op, 0)
    dilation = _ints(dilation, d, "dilation", op, 1)
    if any(o >= s and o >= dl for o, s, dl in zip(output_padding, stride, dilation, strict=True)):
        raise ShapeError(f"{op}: output_padding {output_padding} must be smaller than either "
                         f"the stride {stride} or the dilation {dilation} in every dim")
    grid = tuple(x.shape[2:])
    if 0 in grid:
        raise ShapeError(f"{op}: input of shape {tuple(input.shape)} has an empty spatial dim; "
                         "valid: spatial sizes >= 1 (the batch may be empty)")
    size = tuple((i - 1) * s - 2 * p + dl * (k - 1) + o + 1 for i, s, p, dl, k, o in
                 zip(grid, stride, padding, dilation, kernel, output_padding, strict=True))
    if any(s <= 0 for s in size):
        raise ShapeError(f"{op}: input of shape {tuple(input.shape)} with padding {padding} "
                         f"gives an output of spatial size {size}; valid: a positive size, "
                         "so less padding or a larger input")
    window = Window(size, kernel, dilation, stride, tuple((p, p) for p in padding), grid)
    out = ConvTranspose.apply(x, weight, window=window, groups=groups)
    return _finish(out, bias, d, unbatched)


@autocast_policy("lower")
def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups=1, dilation=1):
    """Transposed 1-d convolution of (N, C_in, L) by (C_in, C_out / groups, k): the
    gradient of conv1d with respect to its input. `output_padding` adds to one side of the
    output to pick among the sizes a strided conv1d maps to the same input size."""
    return _conv_transpose("conv_transpose1d", 1, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)


@autocast_policy("lower")
def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups=1, dilation=1):
    """Transposed 2-d convolution of (N, C_in, H, W) by (C_in, C_out / groups, kH, kW)."""
    return _conv_transpose("conv_transpose2d", 2, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)


@autocast_policy("lower")
def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups=1, dilation=1):
    """Transposed 3-d convolution of (N, C_in, D, H, W) by (C_in, C_out / groups, *k)."""
    return _conv_transpose("conv_transpose3d", 3, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)


# ------------------------------------------------------------------ unfold and fold
def _window_args(op, size, kernel_size, dilation, padding, stride) -> Window:
    kernel = _ints(kernel_size, 2, "kernel_size", op, 1)
    pads = tuple((p, p) for p in _ints(padding, 2, "padding", op, 0))
    return _window(op, size, kernel, _ints(dilation, 2, "dilation", op, 1), pads=pads,
                   stride=_ints(stride, 2, "stride", op, 1))


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """The sliding blocks of (N, C, H, W) images as columns, (N, C * kH * kW, L): one
    column per kernel position, channel-major (im2col)."""
    x, unbatched = _batched(input, 2, "unfold")
    window = _window_args("unfold", tuple(x.shape[2:]), kernel_size, dilation, padding, stride)
    out = Unfold.apply(x, window=window)
    return out.squeeze(0) if unbatched else out


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """Sum (N, C * kH * kW, L) columns back into (N, C, *output_size) images, overlaps
    added (col2im): the adjoint of unfold."""
    if input.ndim not in (2, 3):
        raise ShapeError(f"fold: expected a 2-D (unbatched) or 3-D (batched) input "
                         f"(N, C * prod(kernel_size), L), got shape {tuple(input.shape)}")
    columns = input.unsqueeze(0) if input.ndim == 2 else input
    size = _ints(output_size, 2, "output_size", "fold", 1)
    window = _window_args("fold", size, kernel_size, dilation, padding, stride)
    taps, blocks = math.prod(window.kernel), math.prod(window.grid)
    if columns.shape[1] % taps:
        raise ShapeError(f"fold: input of shape {tuple(input.shape)} has {columns.shape[1]} "
                         f"rows, not a multiple of the {taps} taps of kernel_size "
                         f"{window.kernel}")
    if columns.shape[2] != blocks:
        raise ShapeError(f"fold: input of shape {tuple(input.shape)} has {columns.shape[2]} "
                         f"blocks, but output_size {size} with kernel_size {window.kernel}, "
                         f"dilation {window.dilation}, padding {padding} and stride "
                         f"{window.stride} makes {' * '.join(map(str, window.grid))} = "
                         f"{blocks}")
    out = Fold.apply(columns, window=window)
    return out.squeeze(0) if input.ndim == 2 else out


# -------------------------------------------------------------------------- padding
class ConstantPad(Function):
    """Each dim widened by its (before, after) `widths` with `value`; negative widths crop."""

    def forward(self, x, widths, value):
        self.widths = widths
        shape = tuple(n + lo + hi for n, (lo, hi) in zip(x.shape, widths, strict=True))
        out = self.xp.full(shape, value, dtype=x.dtype)
        dst = tuple(slice(max(lo, 0), m - max(hi, 0))
                    for m, (lo, hi) in zip(shape, widths, strict=True))
        src = tuple(slice(max(-lo, 0), n - max(-hi, 0))
                    for n, (lo, hi) in zip(x.shape, widths, strict=True))
        out[dst] = x[src]
        return out

    def backward(self, g):
        return (ConstantPad.apply(g, widths=tuple((-lo, -hi) for lo, hi in self.widths),
                                  value=0),)


_NUMPY_MODES = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}


class ModePad(Function):
    """Each dim widened by its (before, after) `widths` with values taken from the input:
    mirrored ('reflect'), the edge repeated ('replicate') or wrapped ('circular')."""

    def forward(self, x, widths, mode):
        self.widths, self.mode = widths, mode
        return self.xp.pad(x, widths, mode=_NUMPY_MODES[mode])

    def backward(self, g):
        return (ModePadAdjoint.apply(g, widths=self.widths, mode=self.mode),)


class ModePadAdjoint(Function):
    """ModePad's adjoint: the border of each padded dim added back onto its sources."""

    def forward(self, g, widths, mode):
        self.widths, self.mode = widths, mode
        for axis, (lo, hi) in enumerate(widths):
            if lo or hi:
                g = self._fold_border(g, axis, lo, hi, mode)
        return g

    def _fold_border(self, g, axis: int, lo: int, hi: int, mode: str):
        lead = (slice(None),) * axis
        n = g.shape[axis] - lo - hi
        core = g[lead + (slice(lo, lo + n),)].copy()
        before, after = g[lead + (slice(0, lo),)], g[lead + (slice(lo + n, None),)]
        if mode == "reflect":  # output lo - j mirrors input j, for j in 1..lo
            core[lead + (slice(1, lo + 1),)] += self.xp.flip(before, axis)
            core[lead + (slice(n - 1 - hi, n - 1),)] += self.xp.flip(after, axis)
        elif mode == "replicate":
            core[lead + (slice(0, 1),)] += before.sum(axis, keepdims=True)
            core[lead + (slice(n - 1, n),)] += after.sum(axis, keepdims=True)
        else:
            core[lead + (slice(n - lo, n),)] += before
            core[lead + (slice(0, hi),)] += after
        return core

    def backward(self, gg):
        return (ModePad.apply(gg, widths=self.widths, mode=self.mode),)


_MODE_LIMITS = {
    "reflect": ("each pad smaller than its dim", lambda w, n: w < n),
    "replicate": ("a non-empty dim wherever it pads", lambda w, n: w == 0 or n > 0),
    "circular": ("each pad at most its dim", lambda w, n: w <= n),
}


def _mode_pad(input, widths: tuple, mode: str, pad: tuple):
    """reflect/replicate/circular padding; negative widths crop, as in torch: after the
    padding for reflect and replicate, before it for circular (which wraps the crop)."""
    grow = tuple((max(lo, 0), max(hi, 0)) for lo, hi in widths)
    crop = tuple((min(lo, 0), min(hi, 0)) for lo, hi in widths)
    crops = any(lo or hi for lo, hi in crop)
    if mode == "circular" and crops:
        input = ConstantPad.apply(input, widths=crop, value=0)
    rule, fits = _MODE_LIMITS[mode]
    if not all(fits(lo, n) and fits(hi, n) for n, (lo, hi) in zip(input.shape, grow, strict=True)):
        raise ShapeError(f"pad: mode={mode!r} needs {rule}; got pad {pad} for an input of "
                         f"shape {tuple(input.shape)}")
    out = ModePad.apply(input, widths=grow, mode=mode)
    if mode != "circular" and crops:
        out = ConstantPad.apply(out, widths=crop, value=0)
    return out


def pad(input, pad, mode: str = "constant", value=None):
    """Pad the last len(pad) // 2 dims: `pad` is (before, after) for the last dim, then
    for the one before it, and so on; negative entries crop.

    'constant' fills with `value` (default 0) and pads any number of dims; 'reflect',
    'replicate' and 'circular' pad the last 1, 2 or 3 dims of a batched or unbatched input.
    """
    pad = tuple(int(p) for p in pad)
    k = len(pad) // 2
    if len(pad) % 2 or k > input.ndim:
        raise ShapeError(f"pad: pad {pad} for an input of shape {tuple(input.shape)}; valid: "
                         f"(before, after) pairs, last dim first, at most {input.ndim} pairs")
    widths = ((0, 0),) * (input.ndim - k) + tuple((pad[2 * i], pad[2 * i + 1])
                                                  for i in reversed(range(k)))
    if mode == "constant":
        if any(n + min(lo, 0) + min(hi, 0) < 0
               for n, (lo, hi) in zip(input.shape, widths, strict=True)):
            raise ShapeError(f"pad: pad {pad} crops more than the input of shape "
                             f"{tuple(input.shape)} holds")
        return ConstantPad.apply(input, widths=widths, value=0 if value is None else value)
    if mode not in _NUMPY_MODES:
        raise ValueError(f"pad: mode must be 'constant', 'reflect', 'replicate' or "
                         f"'circular'; got {mode!r}")
    if value is not None:
        raise ValueError(f"pad: mode={mode!r} takes no value (only mode='constant' fills)")
    if k not in (1, 2, 3) or input.ndim not in (k + 1, k + 2):
        raise ShapeError(f"pad: mode={mode!r} pads the last 1, 2 or 3 dims of an input with "
                         f"1 or 2 more dims (batch, channels); got pad {pad} ({k} dims) for "
                         f"an input of shape {tuple(input.shape)}")
    return _mode_pad(input, widths, mode, pad)
