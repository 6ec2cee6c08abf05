"""numba's nine-tap convolutions: the fused loops (`ops.conv._NineTaps`) and, for many
channels, the GEMMs over rows of copied taps (`ops.conv._TapRows`): 2-d convolutions of
stride 1 with a 3x3 (or 1x9) kernel and one group, in float32 and float64, forward and
both gradients, when numba is installed. The cases here are small; the `path` fixture
sends the stride-1 ones down each way.

The loops sum each output in another order than a GEMM (per input channel, its nine taps,
then the next channel), and the rows' GEMM in BLAS's order, so in float32 neither rounds
as torch does. Their bound, stated
here, is the standard one for a sum of K products computed in any order:
|computed - exact| <= K * u * sum |terms|, with u = 2**-24 the unit roundoff and K the
number of terms (C * 9 + 1 for an output, O * 9 for an input gradient, N * H * W for a
weight gradient); the exact values and the sums of |terms| come from torch in float64.
In float64 they are held to torch by gradcheck (finite differences) and double backward.
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

# (x shape, weight shape, conv2d keywords): output channels not a multiple of 4 (zero
# rows) and odd (the weight gradient's pairs), one channel, one image, padding beyond the
# kernel, asymmetric 'same' padding of a 1x9 kernel, dilation, no padding; then strided,
# on the images' stride phases: ResNet's downsampling, a stride in one dim only on odd
# sizes, and a stride equal to the kernel (in one dim) with padding beyond it
CASES = [
    ((2, 5, 4, 4), (2, 5, 3, 3), {"padding": "same"}),
    ((3, 4, 6, 7), (6, 4, 3, 3), {"padding": 1}),
    ((1, 1, 5, 5), (5, 1, 3, 3), {"padding": 2}),
    ((2, 3, 7, 6), (4, 3, 3, 3), {"padding": 2, "dilation": 2}),
    ((2, 3, 6, 12), (3, 3, 1, 9), {"padding": "same"}),
    ((2, 8, 6, 5), (8, 8, 3, 3), {}),
    ((2, 5, 8, 8), (6, 5, 3, 3), {"padding": 1, "stride": 2}),
    ((3, 4, 9, 7), (5, 4, 3, 3), {"stride": (2, 1)}),
    ((2, 3, 11, 10), (4, 3, 3, 3), {"padding": 2, "stride": (3, 2)}),
]
STRIDED = CASES[6:]


@pytest.fixture
def compiled():
    numba_kernels.set_enabled(True)
    yield
    numba_kernels.set_enabled(None)


class _Counting:
    """The module of compiled loops, counting the calls from Python to some of them."""

    def __init__(self, module, counts: dict):
        self._module, self._counts = module, counts

    def __getattr__(self, name):
        loop = getattr(self._module, name)
        if name not in self._counts:
            return loop

        def counted(*args):
            self._counts[name] += 1
            return loop(*args)
        return counted


@pytest.fixture
def calls(monkeypatch):
    """How many calls each fused loop got from Python (one per thread that took a share of
    the work); a pass over a few images calls the whole-batch loops from numba, which
    this does not see (the compiled drivers bind them at compile time)."""
    counts = {"conv_nine_taps": 0, "conv_nine_taps_weight_grad": 0,
              "conv_nine_taps_by_images": 0, "conv_nine_taps_weight_grad_by_images": 0,
              "tap_rows": 0, "rows_to_images": 0, "images_to_rows": 0, "rows_to_image_grads": 0}
    numba_kernels.kernels()  # imports the module
    monkeypatch.setattr(numba_kernels, "_module", _Counting(numba_kernels._module, counts))
    return counts


@pytest.fixture(params=["whole batch", "passes", "gemm rows"])
def path(request, monkeypatch):
    """How stride-1 convolutions run: the fused loops over the whole batch padded at once,
    as these small ones do by the rule (`conv._images_per_pass`), or over a few images at
    a time (one per pass, two per weight-gradient pass), as large batches do; or as
    GEMMs over rows of copied taps, one image per work item, as convolutions of many
    channels do (`conv._tap_rows_pay`) where Winograd's algorithm does not take them
    (tests/core/test_conv_winograd.py)."""
    if request.param == "passes":
        monkeypatch.setattr(conv, "_images_per_pass", lambda x, window: 1)
    if request.param == "gemm rows":
        monkeypatch.setattr(conv, "_ROWS_MIN_CHANNELS", 1)
        monkeypatch.setattr(conv, "_ROWS_MIN_STRIDED", 1)
        monkeypatch.setattr(conv, "_ROWS_BYTES", 1)
        monkeypatch.setattr(winograd, "WINOGRAD_MIN_CHANNELS", 1 << 30)
    return request.param


def _fused(calls, path: str, strided: bool) -> bool:
    """Whether the forward and weight-gradient loops of `path` ran (a strided convolution
    takes the whole-batch loops on the paths of the fused loops)."""
    if path == "passes" and not strided:
        return calls["conv_nine_taps_by_images"] > 0 and \
            calls["conv_nine_taps_weight_grad_by_images"] > 0
    if path == "gemm rows":  # a strided one's input gradient adds its rows back too
        return calls["tap_rows"] > 0 and calls["rows_to_images"] > 0 and \
            calls["images_to_rows"] > 0 and (calls["rows_to_image_grads"] > 0 or not strided)
    return calls["conv_nine_taps"] > 0 and calls["conv_nine_taps_weight_grad"] > 0


def _abs_conv(x, w, kw):
    """torch in float64: the exact convolution and that of the absolute values."""
    f = torch.nn.functional.conv2d
    return f(x, w, **kw), f(x.abs(), w.abs(), **kw)


def _run(x, w, b, g, kw):
    ours = [dl.tensor(a, requires_grad=True) for a in (x, w, b)]
    out = dl.functional.conv2d(*ours, **kw)
    out.backward(dl.tensor(g))
    return [out.detach().numpy()] + [a.grad.numpy() for a in ours]


@pytest.mark.parametrize("xs, ws, kw", CASES, ids=str)
def test_float32_within_the_summation_bound(compiled, calls, path, xs, ws, kw):
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal(xs).astype(np.float32), rng.standard_normal(ws).astype(np.float32)
    b = rng.standard_normal(ws[0]).astype(np.float32)
    x64, w64, b64 = (torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in (x, w, b))
    exact = torch.nn.functional.conv2d(x64, w64, b64, **kw)
    g = rng.standard_normal(tuple(exact.shape)).astype(np.float32)
    g64 = torch.tensor(g, dtype=torch.float64)
    exact.backward(g64)
    out, gx, gw, gb = _run(x, w, b, g, kw)
    assert _fused(calls, path, "stride" in kw)

    _, magnitude = _abs_conv(x64.detach(), w64.detach(), kw)
    magnitude = magnitude + b64.detach().abs().reshape(-1, 1, 1)
    bound = (xs[1] * 9 + 1) * U32 * magnitude.numpy()
    assert np.all(np.abs(out - exact.detach().numpy()) <= bound)

    # grad x is the convolution's adjoint applied to g; of |g| and |w|, its terms' sizes
    x_abs = torch.zeros_like(x64, requires_grad=True)
    (torch.nn.functional.conv2d(x_abs, w64.detach().abs(), **kw) * g64.abs()).sum().backward()
    assert np.all(np.abs(gx - x64.grad.numpy()) <= ws[0] * 9 * U32 * x_abs.grad.numpy())

    w_abs = torch.zeros_like(w64, requires_grad=True)
    (torch.nn.functional.conv2d(x64.detach().abs(), w_abs, **kw) * g64.abs()).sum().backward()
    terms = g.shape[0] * g.shape[2] * g.shape[3]
    assert np.all(np.abs(gw - w64.grad.numpy()) <= terms * U32 * w_abs.grad.numpy())
    np.testing.assert_allclose(gb, b64.grad.numpy(), rtol=1e-5)


# Whether the input gradient's padded copy of g also serves as the weight gradient's grid
# (both layouts have rows of one padded width), per case of CASES; a strided
# convolution's input gradient takes no fused loop, so there is no copy to share
SHARES_G = [True, True, False, True, True, False, False, False, False]


@pytest.mark.parametrize("xs, ws, kw, shared", [c + (s,) for c, s in zip(CASES, SHARES_G)],
                         ids=str)
def test_the_weight_gradient_reads_the_input_gradients_copy_of_g(compiled, monkeypatch, xs,
                                                                 ws, kw, shared):
    """Where the layouts allow, the weight gradient reads g from the padded copy the input
    gradient made, not from a copy of its own; it sums the same values in the same order,
    so it equals, bit for bit, the weight gradient computed alone."""
    rng = np.random.default_rng(2)
    x, w = rng.standard_normal(xs).astype(np.float32), rng.standard_normal(ws).astype(np.float32)
    out_shape = torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(w), **kw).shape
    g = dl.tensor(rng.standard_normal(tuple(out_shape)).astype(np.float32))
    copies = []
    grid = im2col.Shifted.grid
    monkeypatch.setattr(im2col.Shifted, "grid",
                        lambda self, *a: copies.append(1) or grid(self, *a))

    def weight_grad(x_needs_grad):
        xt, wt = dl.tensor(x, requires_grad=x_needs_grad), dl.tensor(w, requires_grad=True)
        dl.functional.conv2d(xt, wt, **kw).backward(g)
        return wt.grad.numpy()

    both = weight_grad(True)
    assert len(copies) == (0 if shared else 1)
    alone = weight_grad(False)
    assert len(copies) == (1 if shared else 2)
    np.testing.assert_array_equal(both, alone)


def _case(xs, ws, kw):
    return Case(f"conv2d{xs}{ws}", lambda m, a, b, c: (torch.nn.functional if m is torch
                                                       else m.functional).conv2d(a, b, c, **kw),
                [xs, ws, (ws[0],)], gradgrad=True)


@pytest.mark.parametrize("check", [check_gradcheck, check_gradgrad],
                         ids=["gradcheck", "gradgrad"])
@pytest.mark.parametrize("xs, ws, kw", CASES[:4] + STRIDED, ids=str)
def test_float64_gradients_and_double_backward(compiled, calls, path, check, xs, ws, kw):
    check(_case(xs, ws, kw), "cpu")
    assert _fused(calls, path, "stride" in kw)


@pytest.mark.parametrize("xs, ws, kw", CASES[:6], ids=str)
def test_passes_over_a_few_images_give_every_output_the_whole_batchs_value(
        compiled, calls, monkeypatch, xs, ws, kw):
    """An output and an input-gradient entry are summed in one order whichever images
    share its pass, so they equal, bit for bit, those of the whole batch padded at once;
    the weight gradient adds up the passes' sums (within its bound, tested above)."""
    rng = np.random.default_rng(4)
    xs = (5,) + xs[1:]  # passes of 1 image (2 for the weight gradient, the last of 1)
    x, w = rng.standard_normal(xs).astype(np.float32), rng.standard_normal(ws).astype(np.float32)
    b = rng.standard_normal(ws[0]).astype(np.float32)
    grid = torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(w), **kw).shape[2:]
    g = rng.standard_normal((5, ws[0]) + tuple(grid)).astype(np.float32)
    whole = _run(x, w, b, g, kw)
    assert calls["conv_nine_taps_by_images"] == 0
    monkeypatch.setattr(conv, "_images_per_pass", lambda x, window: 1)
    passes = _run(x, w, b, g, kw)
    assert _fused(calls, "passes", False)
    for one, other in zip(whole[:2], passes[:2], strict=True):
        np.testing.assert_array_equal(one, other)
    np.testing.assert_allclose(passes[2], whole[2], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape, dtype, kw, part", [
    ((128, 16, 32, 32), np.float32, {"padding": 1}, 3),  # ResNet-20's three stages
    ((128, 32, 16, 16), np.float32, {"padding": 1}, 6),
    ((128, 64, 8, 8), np.float32, {"padding": 1}, 10),
    ((128, 16, 32, 32), np.float64, {"padding": 1}, 1),  # twice the bytes per image
    ((128, 16, 30, 30), np.float32, {}, 4),  # no padding: (30, 30) images
    ((8, 16, 32, 32), np.float32, {"padding": 1}, 0),  # 3 passes: the batch at once
    ((128, 64, 64, 64), np.float32, {"padding": 1}, 0),  # one image exceeds the buffer
])
def test_the_images_per_pass(shape, dtype, kw, part):
    """As many padded images as fit in `_PASS_BYTES`, where the batch takes at least
    `_MIN_PASSES` passes, else 0 (the whole batch at once)."""
    x = np.zeros(shape, dtype)
    pad = kw.get("padding", 0)
    window = conv._window("conv2d", shape[2:], (3, 3), (1, 1), (1, 1), ((pad, pad),) * 2)
    assert conv._images_per_pass(x, window) == part


@pytest.mark.parametrize("kw", [{"padding": 1}, {"padding": 1, "stride": 2}], ids=str)
def test_results_do_not_depend_on_the_thread_count(compiled, monkeypatch, path, kw):
    """Every output and weight-gradient entry is summed by one work item in one order."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 6, 9, 40)).astype(np.float32)
    w = rng.standard_normal((7, 6, 3, 3)).astype(np.float32)
    b = rng.standard_normal(7).astype(np.float32)
    grid = (9, 40) if "stride" not in kw else (5, 20)
    g = rng.standard_normal((4, 7) + grid).astype(np.float32)
    monkeypatch.setattr(conv, "_TAP_CHUNK", 64)  # many work items even at this size
    monkeypatch.setattr(conv, "_TAP_GRAD_CHUNK", 100)
    before = dl.get_num_threads()
    try:
        dl.set_num_threads(1)
        serial = _run(x, w, b, g, kw)
        monkeypatch.setattr(threads, "_THREADED_BYTES", 0)
        dl.set_num_threads(3)
        threaded = _run(x, w, b, g, kw)
    finally:
        dl.set_num_threads(before)
    for one, many in zip(serial, threaded, strict=True):
        np.testing.assert_array_equal(one, many)


@pytest.mark.parametrize("kw, grid", [({"padding": 1}, (5, 6)),
                                      ({"padding": 1, "stride": 2}, (3, 3))], ids=str)
def test_pooled_buffers_are_fully_overwritten(compiled, monkeypatch, path, kw, grid):
    """The loops never read what a reused scratch buffer held: NaN in every pooled
    buffer changes nothing."""
    monkeypatch.setattr(im2col, "_SCRATCH_MIN", 0)
    monkeypatch.setattr(im2col, "_POOL", im2col._Pool())
    rng = np.random.default_rng(2)
    x, w = rng.standard_normal((3, 3, 5, 6)), rng.standard_normal((5, 3, 3, 3))
    b, g = rng.standard_normal(5), rng.standard_normal((3, 5) + grid)
    clean = _run(x, w, b, g, kw)
    assert im2col._POOL.buffers
    for buffer in im2col._POOL.buffers:
        buffer.fill(255)  # NaN in every float dtype
    for first, again in zip(clean, _run(x, w, b, g, kw), strict=True):
        np.testing.assert_array_equal(first, again)


@pytest.mark.parametrize("kw, ws, dtype, fused", [
    ({"padding": 1}, (4, 3, 3, 3), np.float32, True),
    ({"padding": 1}, (4, 3, 3, 3), np.float64, True),
    ({"padding": 1, "stride": 2}, (4, 3, 3, 3), np.float32, True),  # on the stride phases
    ({"padding": 1, "stride": 4}, (4, 3, 3, 3), np.float32, False),  # a phase unread: im2col
    ({"padding": 2, "stride": 2, "dilation": 2}, (4, 3, 3, 3), np.float32, False),  # im2col
    ({"padding": 1, "groups": 3}, (3, 1, 3, 3), np.float32, False),  # grouped
    ({"padding": 1}, (4, 3, 5, 5), np.float32, False),  # 25 taps
    ({"padding": 1}, (4, 3, 3, 3), np.float16, False),  # no half-precision loop: GEMMs
])
def test_which_convolutions_take_the_loops(compiled, calls, kw, ws, dtype, fused):
    x = dl.tensor(np.ones((2, 3, 6, 6), dtype))
    w = dl.tensor(np.ones(ws, dtype))
    out = dl.functional.conv2d(x, w, **kw)
    assert (calls["conv_nine_taps"] > 0) == fused
    expected = torch.nn.functional.conv2d(torch.ones(2, 3, 6, 6, dtype=torch.float64),
                                          torch.ones(ws, dtype=torch.float64), **kw)
    np.testing.assert_array_equal(out.numpy(), expected.numpy().astype(dtype))


def test_switched_off_the_gemm_paths_run(calls):
    numba_kernels.set_enabled(False)
    try:
        x = dl.tensor(np.ones((2, 3, 6, 6), np.float32), requires_grad=True)
        w = dl.tensor(np.ones((4, 3, 3, 3), np.float32), requires_grad=True)
        dl.functional.conv2d(x, w, padding=1).sum().backward()
    finally:
        numba_kernels.set_enabled(None)
    assert not any(calls.values())


def test_strided_inputs_and_a_broadcast_gradient(compiled, calls, path):
    """A transposed view as the input and the expanded gradient of sum() are read where
    they lie."""
    check_strided_input_and_broadcast_gradient()
    assert _fused(calls, path, False)


@pytest.mark.parametrize("channels, out_channels, kw, rows", [
    (64, 64, {"padding": 2, "dilation": 2}, True),
    (256, 128, {"padding": 2, "dilation": 2}, True),
    (32, 64, {"padding": 2, "dilation": 2}, False),  # too few channels in: the loops
    (64, 48, {"padding": 2, "dilation": 2}, False),  # too few out
    (16, 32, {"padding": 1, "stride": 2}, True),  # strided: from fewer channels
    (64, 64, {"padding": 1, "stride": 2}, True),
    (8, 32, {"padding": 1, "stride": 2}, False),  # too few: the loops, on the stride phases
])
def test_which_convolutions_take_the_gemm_rows(compiled, calls, channels, out_channels,
                                              kw, rows):
    """From `_ROWS_MIN_CHANNELS` channels in and out, a stride-1 nine-tap convolution that
    Winograd's algorithm does not take (dilated here: tests/core/test_conv_winograd.py has
    the plain 3x3 ones) and both its gradients run as GEMMs over tap rows, and from
    `_ROWS_MIN_STRIDED` a strided one, its input gradient the rows added back in place;
    below, the fused loops."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, channels, 5, 4)).astype(np.float32)
    w = rng.standard_normal((out_channels, channels, 3, 3)).astype(np.float32)
    ours = [dl.tensor(a, requires_grad=True) for a in (x, w)]
    out = dl.functional.conv2d(*ours, **kw)
    out.backward(dl.tensor(np.ones(out.shape, np.float32)))
    assert (calls["tap_rows"] > 0) == rows
    assert (calls["images_to_rows"] > 0) == rows  # the weight gradient
    assert (calls["conv_nine_taps"] > 0) == (not rows)
    assert (calls["rows_to_image_grads"] > 0) == (rows and "stride" in kw)
    check_against_torch(x, w, kw, out, [t.grad for t in ours])


@pytest.mark.parametrize("shape, part", [((128, 64, 8, 8), 7), ((2, 64, 32, 32), 1),
                                         ((16, 256, 4, 4), 7)])
def test_the_images_per_gemm_rows_item(shape, part):
    """A work item takes as many images as keep its rows (positions by 9 · C) within
    `_ROWS_BYTES`, and one image where a single image's exceed them."""
    x = np.zeros(shape, np.float32)
    window = conv._window("conv2d", shape[2:], (3, 3), (1, 1), (1, 1), ((1, 1),) * 2)
    rows = conv._TapRows(numba_kernels.kernels(), np, window, x.shape[:2], x.dtype, x)
    assert rows.part == part
    assert rows.items == -(-shape[0] // part)
