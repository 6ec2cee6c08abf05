"""Winograd's F(2x2, 3x3) for 3x3 convolutions of stride 1 over many channels
(`ops.winograd`): forward, input gradient and weight gradient, float32 and float64, when
numba is installed. The `everywhere` fixture lowers the channel count from which it
applies to 1, so that small cases take it.

Its rounding error is bounded here the standard way, for the sums it computes rather than
the direct convolution's: |computed - exact| <= K * u * S, with u = 2**-24, S the same
Winograd expression evaluated on absolute values in float64 (|A^T| (sum over channels of
(|G| |w| |G^T|) ⊙ (|B^T| |d| |B|)) |A|, plus |b|), and K the longest chain of roundings
behind an entry: the channel sum (C terms, or O for the input gradient, or every tile of
the batch for the weight gradient) plus 16 for the rest (the kernel's transform, a sum of
up to 9 terms, 8; the tile's, 2; the pairwise product, 1; the transform back, 4; the
bias, 1), or plus 20 for the weight gradient (the gradient's and the tile's transforms,
2 each, the product, and the transform back by G, a sum of 16 terms). S exceeds the direct sum of
|terms| (the transforms mix neighbouring pixels and taps), but with coefficients of 1 and
1/2 only it stays small: measured, the largest error is within 2x of the direct
convolution's (`test_the_error_is_about_the_direct_sums`). In
float64 gradcheck and double backward hold the path to finite differences and torch.
"""

from __future__ import annotations

import importlib.util

import dlfree as dl
from dlfree import threads
from dlfree.backends import im2col, numba_kernels
from dlfree.ops import conv, winograd

import numpy as np
import pytest
import torch

from support.conv_checks import check_against_torch, check_strided_input_and_broadcast_gradient
from support.parity import Case, check_gradcheck, check_gradgrad

pytestmark = pytest.mark.skipif(importlib.util.find_spec("numba") is None,
                                reason="numba is not installed (pip install dlfree[numba])")

U32 = 2.0 ** -24

# F(2x2, 3x3)'s matrices (as in the paper; ops.winograd writes B^T and A^T out as adds)
B_T = np.array([[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]], np.float64)
G = np.array([[1, 0, 0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0, 0, 1]], np.float64)
A_T = np.array([[1, 1, 1, 0], [0, 1, -1, -1]], np.float64)

# (x shape, out channels, padding): even and odd grids (a tile past the edge), one pixel,
# padding 2 and none, padding that differs by dim, and more output channels than input
CASES = [
    ((2, 5, 4, 4), 3, 1),
    ((3, 4, 7, 6), 6, 1),
    ((1, 3, 1, 1), 2, 1),
    ((2, 3, 5, 5), 4, 2),
    ((2, 6, 7, 5), 5, 0),
    ((2, 4, 6, 9), 4, (0, 1)),
]


@pytest.fixture
def compiled():
    numba_kernels.set_enabled(True)
    yield
    numba_kernels.set_enabled(None)


@pytest.fixture
def everywhere(monkeypatch, compiled):
    """Winograd's algorithm for every 3x3 convolution of stride 1, however few channels."""
    monkeypatch.setattr(winograd, "WINOGRAD_MIN_CHANNELS", 1)


@pytest.fixture
def calls(monkeypatch):
    """How many calls each Winograd loop got from Python."""
    counts = {"winograd_tiles": 0, "winograd_outputs": 0, "winograd_grad_tiles": 0,
              "tap_rows": 0, "conv_nine_taps": 0}
    module = numba_kernels.kernels()

    class Counting:
        def __getattr__(self, name):
            loop = getattr(module, name)
            if name not in counts:
                return loop

            def counted(*args):
                counts[name] += 1
                return loop(*args)
            return counted

    monkeypatch.setattr(numba_kernels, "_module", Counting())
    return counts


def _took_winograd(calls) -> bool:
    return calls["winograd_tiles"] > 0 and calls["winograd_outputs"] > 0 and \
        calls["winograd_grad_tiles"] > 0


def _tiles(x, pads):
    """The 4x4 tiles, at stride 2, of (N, C, H, W) x padded by ((top, bottom), (left,
    right)), zero past the last whole tile: (N, C, rows, columns, 4, 4)."""
    (top, bottom), (left, right) = pads
    grid = (x.shape[2] + top + bottom - 2, x.shape[3] + left + right - 2)
    rows, columns = -(-grid[0] // 2), -(-grid[1] // 2)
    padded = np.zeros(x.shape[:2] + (2 * rows + 2, 2 * columns + 2))
    padded[:, :, top:top + x.shape[2], left:left + x.shape[3]] = x
    windows = np.lib.stride_tricks.sliding_window_view(padded, (4, 4), axis=(2, 3))
    return windows[:, :, ::2, ::2], grid


def _magnitude(x, w, pads):
    """S for the convolution of x with w: the Winograd expression on absolute values."""
    tiles, grid = _tiles(np.abs(x), pads)
    v = np.einsum("ia,ncyxab,jb->ncyxij", np.abs(B_T), tiles, np.abs(B_T))
    u = np.einsum("ia,ocab,jb->ocij", np.abs(G), np.abs(w), np.abs(G))
    m = np.einsum("ncyxij,ocij->noyxij", v, u)
    y = np.einsum("pi,noyxij,qj->noypxq", np.abs(A_T), m, np.abs(A_T))
    y = y.reshape(y.shape[:2] + (2 * tiles.shape[2], 2 * tiles.shape[3]))
    return y[:, :, :grid[0], :grid[1]]


def _weight_magnitude(x, g, pads):
    """S for the weight gradient of x's convolution, for the output gradient g."""
    tiles, grid = _tiles(np.abs(x), pads)
    v = np.einsum("ia,ncyxab,jb->ncyxij", np.abs(B_T), tiles, np.abs(B_T))
    blocks = np.zeros(g.shape[:2] + (2 * tiles.shape[2], 2 * tiles.shape[3]))
    blocks[:, :, :grid[0], :grid[1]] = np.abs(g)
    blocks = blocks.reshape(g.shape[:2] + (tiles.shape[2], 2, tiles.shape[3], 2))
    dm = np.einsum("pi,noypxq,qj->noyxij", np.abs(A_T), blocks, np.abs(A_T))
    du = np.einsum("ncyxij,noyxij->ocij", v, dm)
    return np.einsum("iu,ocij,jv->ocuv", np.abs(G), du, np.abs(G))


def _pads(padding):
    return tuple((p, p) for p in ((padding,) * 2 if isinstance(padding, int) else padding))


def _problem(xs, out_channels, padding, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(xs).astype(np.float32)
    w = rng.standard_normal((out_channels, xs[1], 3, 3)).astype(np.float32)
    b = rng.standard_normal(out_channels).astype(np.float32)
    grid = tuple(n + 2 * p - 2 for n, (p, _) in zip(xs[2:], _pads(padding)))
    g = rng.standard_normal((xs[0], out_channels) + grid).astype(np.float32)
    return x, w, b, g


def _run(x, w, b, g, padding):
    ours = [dl.tensor(a, requires_grad=True) for a in (x, w, b)]
    out = dl.functional.conv2d(*ours, padding=padding)
    out.backward(dl.tensor(g))
    return [out.detach().numpy()] + [a.grad.numpy() for a in ours]


@pytest.mark.parametrize("xs, out_channels, padding", CASES, ids=str)
def test_float32_within_the_winograd_bound(everywhere, calls, xs, out_channels, padding):
    x, w, b, g = _problem(xs, out_channels, padding)
    x64, w64, b64 = (torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in (x, w, b))
    exact = torch.nn.functional.conv2d(x64, w64, b64, padding=padding)
    exact.backward(torch.tensor(g, dtype=torch.float64))
    out, gx, gw, gb = _run(x, w, b, g, padding)
    assert _took_winograd(calls)
    pads = _pads(padding)

    bound = (xs[1] + 16) * U32 * (_magnitude(x, w, pads) + np.abs(b).reshape(-1, 1, 1))
    assert np.all(np.abs(out - exact.detach().numpy()) <= bound)

    # the input gradient: the adjoint convolution of g, the kernel flipped and transposed
    adjoint = np.flip(w.transpose(1, 0, 2, 3), axis=(2, 3))
    mirrored = tuple((2 - lo, 2 - hi) for lo, hi in pads)
    bound = (out_channels + 16) * U32 * _magnitude(g, adjoint, mirrored)
    assert np.all(np.abs(gx - x64.grad.numpy()) <= bound)

    terms = xs[0] * np.prod([-(-n // 2) for n in g.shape[2:]])
    bound = (terms + 20) * U32 * _weight_magnitude(x, g, pads)
    assert np.all(np.abs(gw - w64.grad.numpy()) <= bound)
    np.testing.assert_allclose(gb, b64.grad.numpy(), rtol=1e-5)


@pytest.mark.parametrize("channels, size", [(32, 16), (64, 8), (64, 32), (256, 8)])
def test_the_error_is_about_the_direct_sums(compiled, monkeypatch, channels, size):
    """In practice F(2x2, 3x3) rounds about as the direct convolution does (0.6-1.3x its
    largest error here, against float64): within 2x of it at these shapes."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, channels, size, size)).astype(np.float32)
    w = (rng.standard_normal((channels, channels, 3, 3)) / np.sqrt(9 * channels)).astype(
        np.float32)
    exact = torch.nn.functional.conv2d(torch.tensor(x, dtype=torch.float64),
                                       torch.tensor(w, dtype=torch.float64), padding=1).numpy()
    errors = []
    for least in (1, 1 << 30):  # Winograd's, then the fused loops' or the GEMM rows'
        monkeypatch.setattr(winograd, "WINOGRAD_MIN_CHANNELS", least)
        out = dl.functional.conv2d(dl.tensor(x), dl.tensor(w), padding=1).numpy()
        errors.append(np.abs(out - exact).max())
    assert errors[0] <= 2 * errors[1]


def _case(xs, out_channels, padding):
    return Case(f"conv2d{xs}->{out_channels}",
                lambda m, a, b, c: (torch.nn.functional if m is torch
                                    else m.functional).conv2d(a, b, c, padding=padding),
                [xs, (out_channels, xs[1], 3, 3), (out_channels,)], gradgrad=True)


@pytest.mark.parametrize("check", [check_gradcheck, check_gradgrad],
                         ids=["gradcheck", "gradgrad"])
@pytest.mark.parametrize("xs, out_channels, padding", CASES[:2] + CASES[4:], ids=str)
def test_float64_gradients_and_double_backward(everywhere, calls, check, xs, out_channels,
                                               padding):
    check(_case(xs, out_channels, padding), "cpu")
    assert _took_winograd(calls)


def test_results_do_not_depend_on_the_thread_count(everywhere, monkeypatch):
    """Each output is summed by one work item, and the weight gradient's items' sums are
    added in item order, so one thread and three give the same bits."""
    monkeypatch.setattr(winograd, "_TILES_PER_ITEM", 1)  # an image per item: 5 items
    x, w, b, g = _problem((5, 6, 9, 12), 7, 1, seed=1)
    before = dl.get_num_threads()
    try:
        dl.set_num_threads(1)
        serial = _run(x, w, b, g, 1)
        monkeypatch.setattr(threads, "_THREADED_BYTES", 0)
        dl.set_num_threads(3)
        threaded = _run(x, w, b, g, 1)
    finally:
        dl.set_num_threads(before)
    for one, many in zip(serial, threaded, strict=True):
        np.testing.assert_array_equal(one, many)


def test_pooled_buffers_are_fully_overwritten(everywhere, monkeypatch):
    """The loops never read what a reused scratch buffer held: NaN in every pooled
    buffer changes nothing."""
    monkeypatch.setattr(im2col, "_SCRATCH_MIN", 0)
    monkeypatch.setattr(im2col, "_POOL", im2col._Pool())
    x, w, b, g = (a.astype(np.float64) for a in _problem((3, 3, 5, 7), 5, 1, seed=2))
    clean = _run(x, w, b, g, 1)
    assert im2col._POOL.buffers
    for buffer in im2col._POOL.buffers:
        buffer.fill(255)  # NaN in every float dtype
    for first, again in zip(clean, _run(x, w, b, g, 1), strict=True):
        np.testing.assert_array_equal(first, again)


def test_strided_inputs_and_a_broadcast_gradient(everywhere, calls):
    """A transposed view as the input and the expanded gradient of sum() are read where
    they lie."""
    check_strided_input_and_broadcast_gradient()
    assert _took_winograd(calls)


@pytest.mark.parametrize("channels, out_channels, kw, dtype, taken", [
    (64, 64, {"padding": 1}, np.float32, True),  # ResNet-20's last stage, the conv2d bench
    (32, 32, {"padding": 1}, np.float32, True),  # its middle stage: the smallest taken
    (32, 32, {"padding": 1}, np.float64, True),
    (32, 48, {}, np.float32, True),  # no padding
    (16, 64, {"padding": 1}, np.float32, False),  # too few channels in: the fused loops
    (64, 16, {"padding": 1}, np.float32, False),  # too few out
    (64, 64, {"padding": 1, "stride": 2}, np.float32, False),  # strided: the loops
    (64, 64, {"padding": 2, "dilation": 2}, np.float32, False),  # dilated: GEMM rows
    (64, 64, {"padding": 1, "groups": 2}, np.float32, False),  # grouped
])
def test_which_convolutions_take_winograd(compiled, calls, channels, out_channels, kw, dtype,
                                          taken):
    """From `WINOGRAD_MIN_CHANNELS` channels in and out, a 3x3 convolution of stride 1,
    dilation 1 and one group and both its gradients take Winograd's algorithm."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, channels, 6, 5)).astype(dtype)
    groups = kw.get("groups", 1)
    w = rng.standard_normal((out_channels, channels // groups, 3, 3)).astype(dtype)
    ours = [dl.tensor(a, requires_grad=True) for a in (x, w)]
    out = dl.functional.conv2d(*ours, **kw)
    out.backward(dl.tensor(np.ones(out.shape, dtype)))
    assert _took_winograd(calls) == taken
    assert calls["tap_rows"] + calls["conv_nine_taps"] == 0 or not taken
    check_against_torch(x, w, kw, out, [t.grad for t in ours])


@pytest.mark.parametrize("shape, part", [((32, 64, 32, 32), 1), ((128, 64, 8, 8), 16),
                                         ((128, 32, 16, 16), 4), ((2, 64, 64, 64), 1),
                                         ((8, 32, 7, 7), 16)])
def test_the_images_per_work_item(shape, part):
    """A work item takes as many whole images as make `_TILES_PER_ITEM` tiles, at least one."""
    x = np.zeros(shape, np.float32)
    window = conv._window("conv2d", shape[2:], (3, 3), (1, 1), (1, 1), ((1, 1),) * 2)
    engine = winograd.Winograd(numba_kernels.kernels(), np, x, window)
    assert engine.part == part
    assert engine.items == -(-shape[0] // part)
