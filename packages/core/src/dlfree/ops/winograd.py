"""3x3 convolutions of stride 1 over many channels by Winograd's F(2x2, 3x3) (Lavin and
Gray, "Fast Algorithms for Convolutional Neural Networks", 2016), with numba's loops.

Each 2x2 block of outputs is computed from the 4x4 tile of the padded image under it: the
tile d is transformed to V = B^T d B and the kernel g to U = G g G^T, their 16 values are
multiplied pairwise and summed over the channels, and A^T (U ⊙ V) A is the block. Summed
over the channels, each of the 16 products is a GEMM of the tiles' values by the
transformed weights, (T, C) @ (C, O): 16 multiplications per 4 outputs and channel pair
where the direct convolution takes 36, so the GEMMs do 4/9 of its work; the transforms
are adds in cache. The weight gradient is the exact adjoint of that forward, the tiles'
values times the output gradients transformed by A (a GEMM per product, summed over the
tiles), transformed back by G; the input gradient is the adjoint convolution, itself a
3x3 of stride 1, which runs here too (`ops.conv._adjoint_taps`).

The transforms have coefficients 1 and 1/2 only, so the rounding error is about the direct
sum's (0.6-1.3x its largest, measured): tests/core/test_conv_winograd.py states and checks
the bound. (F(4x4, 3x3), tried, ran 20 % faster and rounded 17x worse; docs/performance.md.)
Work items take whole images, as many as make about `_TILES_PER_ITEM` tiles, so that each
item's values, (16, T, C), and products stay in the L2 cache while the GEMMs read them;
one BLAS thread runs per item, and the weight gradient's per-item sums are added in item
order (the result does not depend on the thread count).
"""

from __future__ import annotations

from ..backends.im2col import scratch
from ..threads import parallel_for

# From this many channels in and out a stride-1 3x3 convolution takes Winograd's
# algorithm: at 32 its GEMMs are deep enough to beat numba's fused loops (docs/
# performance.md, "Convolutions").
WINOGRAD_MIN_CHANNELS = 32
# Tiles per work item: 256 tiles of 64 channels are 1 MiB of values and as many of products
# (a 32x32 image, or sixteen 8x8 ones), which an L2 cache of 2 MiB per core keeps.
_TILES_PER_ITEM = 256

# F(2x2, 3x3)'s kernel transform G (4x3); B^T and A^T, all adds, are written out in the loops.
_G = ((1.0, 0.0, 0.0), (0.5, 0.5, 0.5), (0.5, -0.5, 0.5), (0.0, 0.0, 1.0))


def _kernel_transform(xp, dtype):
    """G ⊗ G, (16, 9): row 4 a + b times a kernel's nine taps, row-major, is the value
    (a, b) of G g G^T, so that one GEMM transforms every kernel of a layer at once."""
    g = xp.asarray(_G, dtype)
    return xp.kron(g, g)


def winograd_pays(x, window, groups: int, out_channels: int) -> bool:
    """Whether Winograd's F(2x2, 3x3) serves the convolution of `x` under `window` to
    `out_channels`: a 3x3 kernel of stride 1 and dilation 1, one group, and at least
    `WINOGRAD_MIN_CHANNELS` channels in and out (any padding)."""
    return groups == 1 and window.kernel == (3, 3) and window.stride == (1, 1) and \
        window.dilation == (1, 1) and min(x.shape[1], out_channels) >= WINOGRAD_MIN_CHANNELS


class Winograd:
    """A convolution engine (like `ops.conv._TapRows`: `convolve`, `weight_grad`) of images
    x (N, C, H, W) under a 3x3 `window` of stride 1, by F(2x2, 3x3) tiles."""

    def __init__(self, loops, xp, x, window):
        self.loops, self.xp, self.x, self.window = loops, xp, x, window
        grid = window.grid
        self.tiles = (-(-grid[0] // 2), -(-grid[1] // 2))
        per_image = self.tiles[0] * self.tiles[1]
        self.part = max(1, _TILES_PER_ITEM // per_image)
        self.items = -(-x.shape[0] // self.part)
        self.count = self.part * per_image  # tiles of a full item

    def _buffers(self, out_channels: int, dtype) -> tuple:
        """One chunk's buffers, from the pool: an image padded, channels last, with a zero
        border (`winograd_tiles` writes only its interior); B^T d of a row of tiles; the
        tiles' values and their products, 16 (T, channels) matrices each as one
        C-contiguous (16, T + 1, channels) array (numba vectorises over the last axis only
        of arrays it sees contiguous), whose rows each start one row further into the
        cache's sets than a multiple of the page would, so that the 16 values of a tile
        do not all map to one set; and a row of tiles' outputs, channels last."""
        xp, x, tiles = self.xp, self.x, self.tiles
        local = scratch(xp, (2 * tiles[0] + 2, 2 * tiles[1] + 2, x.shape[1]), dtype, zero=True)
        return (local, scratch(xp, (4,) + local.shape[1:], dtype),
                scratch(xp, (16, self.count + 1, x.shape[1]), dtype),
                scratch(xp, (16, self.count + 1, out_channels), dtype),
                xp.empty((2, 2 * tiles[1], out_channels), dtype))

    def _tiles(self, item: int, local, rows, v) -> tuple:
        """Item `item`'s images n0:n1 and the count of their tiles, whose values it puts
        in `v` (`_buffers`)."""
        n0 = item * self.part
        n1 = min(self.x.shape[0], n0 + self.part)
        top, left = (lo for lo, _ in self.window.pads)
        self.loops.winograd_tiles(self.x, top, left, self.tiles, local, rows, v, n0, n1)
        return n0, n1, (n1 - n0) * self.tiles[0] * self.tiles[1]

    def convolve(self, w, bias=None):
        """x ⋆ w (+ bias, one per output channel) as (N, O, *grid)."""
        xp, o = self.xp, w.shape[0]
        taps = xp.ascontiguousarray(w.transpose(2, 3, 1, 0)).reshape(9, -1)  # (9, C · O)
        u = (_kernel_transform(xp, w.dtype) @ taps).reshape(16, w.shape[1], o)
        bias = xp.zeros(o, w.dtype) if bias is None else xp.ascontiguousarray(bias)
        out = xp.empty((self.x.shape[0], o) + self.window.grid, w.dtype)

        def run(lo: int, hi: int) -> None:
            local, rows, v, m, outputs = self._buffers(o, w.dtype)
            sums = xp.empty((2, 4, o), w.dtype)
            for item in range(lo, hi):
                n0, n1, count = self._tiles(item, local, rows, v)
                xp.matmul(v[:, :count], u, out=m[:, :count])
                self.loops.winograd_outputs(m, self.tiles, bias, n0, n1, sums, outputs, out)
        parallel_for(self.items, run, products=True)
        return out

    def weight_grad(self, y, shape: tuple, taps=None):
        """The gradient of the weights, of `shape`, for the output gradient `y` (`taps`, which
        `_NineTaps` can share, has nothing to give here)."""
        xp, o = self.xp, shape[0]
        parts = xp.empty((self.items, 16, shape[1], o), y.dtype)

        def run(lo: int, hi: int) -> None:
            local, rows, v, dm, grads = self._buffers(o, y.dtype)
            for item in range(lo, hi):
                n0, n1, count = self._tiles(item, local, rows, v)
                self.loops.winograd_grad_tiles(y, self.tiles, n0, n1, grads, dm)
                xp.matmul(v[:, :count].transpose(0, 2, 1), dm[:, :count], out=parts[item])
        parallel_for(self.items, run, products=True)
        du = parts.sum(axis=0).reshape(16, -1)  # (16, C · O)
        dw = (_kernel_transform(xp, y.dtype).T @ du).reshape(3, 3, shape[1], o)
        return xp.ascontiguousarray(dw.transpose(3, 2, 0, 1))
