"""Parity for each way a convolution or a max pool may be computed (see parity.py).

Convolutions of stride 1 may run in the shifted layout, copying the taps of the last
kernel dim (or of more, for few channels) into the GEMM's rows; their input gradient
either adds per-tap columns back (fewer image channels than output channels) or
convolves with the flipped kernel. Max pools whose windows tile the input take a
tap-by-tap path. The rows below reach every one of these ways on small shapes: the
`shifted` fixture takes the shifted layout wherever it applies (the cost estimate would
choose im2col for such small images) and lowers `_MIN_DEPTH`, so that a few channels
already decide how many kernel dims are copied.
"""

from __future__ import annotations

import math

import dlfree as dl
from dlfree import threads
from dlfree.backends import im2col
from dlfree.ops import conv

import numpy as np
import pytest
import torch

from support.parity import Case, check_forward, check_grad, check_gradcheck, check_gradgrad
from support.specs import Fixed, Float


def F(m):
    """The functional namespace of either library."""
    return torch.nn.functional if m is torch else m.functional


def conv_case(name, dims, x, w, **kw):
    op = f"conv{dims}d"
    return Case(name, lambda m, a, b, c: getattr(F(m), op)(a, b, c, **kw),
                [x, w, (w[0],)], gradgrad=True)


def conv_t_case(name, dims, x, w, **kw):
    op = f"conv_transpose{dims}d"
    out = (w[1] * kw.get("groups", 1),)
    return Case(name, lambda m, a, b, c: getattr(F(m), op)(a, b, c, **kw),
                [x, w, out], gradgrad=True)


# with _MIN_DEPTH = 4: 2 or more channels per group copy the last kernel dim's taps, 1
# copies more
CONV_CASES = [
    conv_case("conv2d_copy_last_dim", 2, (2, 4, 5, 4), (3, 4, 3, 2), padding=1),
    conv_case("conv2d_copy_last_dim_pad", 2, (2, 2, 5, 5), (5, 2, 3, 3), padding=(1, 2)),
    conv_case("conv2d_copy_all", 2, (2, 1, 6, 5), (3, 1, 3, 2)),
    conv_case("conv2d_groups_dilation", 2, (2, 6, 6, 5), (4, 3, 2, 3), groups=2,
              dilation=(2, 1), padding=(1, 0)),
    conv_case("conv2d_more_out_channels", 2, (2, 2, 4, 4), (6, 2, 3, 3), padding=1),
    conv_case("conv2d_fewer_out_channels", 2, (2, 5, 4, 4), (2, 5, 3, 3), padding="same"),
    conv_case("conv2d_padding_beyond_kernel", 2, (1, 2, 3, 4), (3, 2, 2, 2), padding=2),
    conv_case("conv2d_wide_padding_falls_back", 2, (1, 2, 2, 2), (2, 2, 2, 2), padding=3),
    conv_case("conv1d_shifted", 1, (3, 2, 7), (4, 2, 3), padding=2, dilation=2),
    conv_case("conv3d_copy_last_dim", 3, (1, 2, 3, 4, 3), (3, 2, 2, 2, 2), padding=(1, 0, 1)),
    conv_case("conv3d_copy_two_dims", 3, (2, 1, 3, 3, 4), (2, 1, 2, 2, 2), padding=1),
    conv_case("conv3d_groups_copy_last", 3, (2, 4, 3, 3, 4), (4, 2, 2, 2, 3), groups=2,
              padding=1),
    conv_t_case("conv_transpose2d_more_channels", 2, (2, 2, 3, 4), (2, 5, 3, 2), padding=1),
    conv_t_case("conv_transpose2d_fewer_channels", 2, (2, 5, 3, 3), (5, 2, 2, 3)),
    conv_t_case("conv_transpose2d_dilation_outpad", 2, (1, 3, 3, 3), (3, 2, 2, 2),
                dilation=2, output_padding=1, padding=1),
    conv_t_case("conv_transpose1d_groups", 1, (2, 4, 5), (4, 3, 3), groups=2, padding=1),
    # 1x1, stride 1, no padding: a GEMM per image, no copy (the 1x1 rows that stride or
    # pad, in test_parity_conv.py and below, take im2col)
    conv_case("conv2d_pointwise", 2, (3, 4, 3, 5), (6, 4, 1, 1)),
    conv_case("conv2d_pointwise_groups", 2, (2, 6, 4, 3), (9, 2, 1, 1), groups=3),
    conv_case("conv2d_pointwise_depthwise", 2, (2, 3, 4, 4), (6, 1, 1, 1), groups=3),
    conv_case("conv2d_pointwise_dilation", 2, (2, 3, 4, 4), (2, 3, 1, 1), dilation=2),
    conv_case("conv2d_1x1_padded", 2, (2, 3, 3, 3), (2, 3, 1, 1), padding=1),
    conv_case("conv1d_pointwise", 1, (2, 3, 7), (5, 3, 1)),
    conv_case("conv3d_pointwise_groups", 3, (2, 4, 2, 3, 2), (6, 2, 1, 1, 1), groups=2),
    conv_t_case("conv_transpose2d_pointwise_groups", 2, (2, 4, 3, 3), (4, 3, 1, 1), groups=2),
]


@pytest.fixture
def shifted(monkeypatch):
    """The GEMM paths (numba's fused nine-tap loops, tested in test_conv_nine_taps.py,
    switched off), the shifted layout wherever it applies, and a `_MIN_DEPTH` at which
    these small channel counts choose every copy depth."""
    monkeypatch.setattr(conv, "_nine_tap_loops", lambda *args: None)
    monkeypatch.setattr(conv, "_shifted_pays", lambda *args: True)
    monkeypatch.setattr(conv, "_MIN_DEPTH", 4)


CHECKS = {"forward": check_forward, "grad": check_grad, "gradcheck": check_gradcheck,
          "gradgrad": check_gradgrad}


@pytest.mark.parametrize("check", list(CHECKS))
@pytest.mark.parametrize("case", CONV_CASES, ids=str)
def test_conv_paths(case, check, device, shifted):
    CHECKS[check](case, device)


@pytest.mark.parametrize("padding, stride, pointwise", [(0, 1, True), (1, 1, False),
                                                        (0, 2, False)])
def test_pointwise_path_only_for_unpadded_stride_1(padding, stride, pointwise):
    window = conv._window("conv2d", (4, 4), (1, 1), (1, 1), (stride, stride),
                          ((padding, padding),) * 2)
    assert conv._pointwise(window) == pointwise


def test_pointwise_empty_batch_and_channels():
    """No positions to infer a reshape from: an empty batch, or no input channels."""
    for x_shape, w_shape in (((0, 3, 2, 2), (4, 3, 1, 1)), ((2, 0, 2, 2), (4, 0, 1, 1))):
        x = dl.zeros(*x_shape, requires_grad=True)
        w = dl.ones(*w_shape, requires_grad=True)
        y = dl.functional.conv2d(x, w)
        assert tuple(y.shape) == (x_shape[0], 4, 2, 2)
        assert not y.detach().numpy().any()
        y.sum().backward()
        assert tuple(x.grad.shape) == x_shape and tuple(w.grad.shape) == w_shape


def test_copy_depth_follows_channels(shifted):
    assert conv._inner_dims(4, (3, 3)) == 1
    assert conv._inner_dims(1, (3, 3)) == 2
    assert conv._inner_dims(1, (2, 2, 2)) == 2


@pytest.mark.parametrize("shape, pays", [
    ((32, 64, 64, 3, 32, 1), True),  # a ResNet-like 3x3 conv: the copies dominate
    ((64, 6, 16, 5, 12, 0), True),  # LeNet's second conv
    ((16, 256, 256, 3, 8, 1), False),  # small images, many channels: the waste dominates
    ((2, 128, 128, 3, 4, 1), False),
])
def test_layout_choice(shape, pays):
    n, c, o, k, size, p = shape
    window = conv._window("conv2d", (size, size), (k, k), (1, 1), (1, 1), ((p, p), (p, p)))
    layout = im2col.Shifted.of(window, n)
    assert conv._shifted_pays(layout, c, o, conv._inner_dims(c, (k, k))) == pays


def test_im2col_where_the_shifted_layout_does_not_pay():
    """The last shape above, which the shifted layout could serve but for the estimate."""
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((2, 128, 4, 4)), rng.standard_normal((128, 128, 3, 3))
    g = rng.standard_normal((2, 128, 4, 4))
    ours = [dl.tensor(a, requires_grad=True) for a in (x, w)]
    ref = [torch.tensor(a, requires_grad=True) for a in (x, w)]
    out = dl.functional.conv2d(*ours, padding=1)
    expected = torch.nn.functional.conv2d(*ref, padding=1)
    out.backward(dl.tensor(g))
    expected.backward(torch.tensor(g))
    np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy(), atol=1e-11)
    for a, b in zip(ours, ref, strict=True):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), atol=1e-11)


def test_large_channels_at_default_depth():
    """64 -> 64 channels, 3x3, as in a ResNet block: no layout copy of y's taps."""
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((2, 64, 6, 5)), rng.standard_normal((64, 64, 3, 3)) * 0.1
    g = rng.standard_normal((2, 64, 6, 5))
    ours = [dl.tensor(a, requires_grad=True) for a in (x, w)]
    ref = [torch.tensor(a, requires_grad=True) for a in (x, w)]
    dl.functional.conv2d(*ours, padding=1).backward(dl.tensor(g))
    torch.nn.functional.conv2d(*ref, padding=1).backward(torch.tensor(g))
    for a, b in zip(ours, ref, strict=True):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-10, atol=1e-10)


def test_conv_keeps_float32():
    rng = np.random.default_rng(0)
    x = dl.tensor(rng.standard_normal((2, 3, 5, 5)).astype(np.float32), requires_grad=True)
    w = dl.tensor(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), requires_grad=True)
    b = dl.tensor(np.zeros(4, np.float32), requires_grad=True)
    y = dl.functional.conv2d(x, w, b, padding=1)
    y.backward(dl.ones(*y.shape))
    assert {t.dtype for t in (y, x.grad, w.grad, b.grad)} == {dl.float32}
    assert y.detach().numpy().flags.c_contiguous


# ------------------------------------------------------------------ max pooling
def pool_case(name, op, x, gradgrad=False, **kw):
    def fn(m, a):
        out = getattr(F(m), op)(a, **kw)
        return tuple(o ** 3 if o.is_floating_point() else o for o in out) \
            if isinstance(out, tuple) else out ** 3
    return Case(name, fn, [x], gradgrad=gradgrad, grad=not isinstance(x, Fixed))


def distinct(*shape):
    return Float(shape, distinct=True)


NAN, INF = math.nan, math.inf
SPECIAL = Fixed([[[[1, 3, 3, 0, NAN, 2, 7],
                   [3, 1, 0, NAN, 5, NAN, 7],
                   [-INF, -INF, 2, 2, NAN, 1, 0],
                   [-INF, -INF, 2, 2, 4, NAN, 0]]]], "float32")

POOL_CASES = [
    pool_case("max_pool2d_tiles", "max_pool2d", distinct(2, 3, 6, 8), gradgrad=True,
              kernel_size=2, return_indices=True),
    pool_case("max_pool2d_tiles_cropped", "max_pool2d", distinct(2, 2, 7, 8), gradgrad=True,
              kernel_size=(3, 2), return_indices=True),
    pool_case("max_pool2d_tiles_stride_given", "max_pool2d", distinct(1, 2, 4, 6),
              kernel_size=(2, 3), stride=(2, 3)),
    pool_case("max_pool2d_tiles_unbatched", "max_pool2d", distinct(2, 4, 4), kernel_size=2),
    pool_case("max_pool2d_tiles_ceil_exact", "max_pool2d", distinct(1, 2, 4, 4),
              kernel_size=2, ceil_mode=True),
    pool_case("max_pool2d_tiles_empty_batch", "max_pool2d", (0, 2, 4, 4), kernel_size=2),
    pool_case("max_pool2d_tiles_nan_inf_ties", "max_pool2d", SPECIAL, kernel_size=2,
              return_indices=True),
    pool_case("max_pool2d_tiles_int_ties", "max_pool2d",
              Fixed(np.random.default_rng(0).integers(0, 3, (2, 2, 4, 6)), "int64"),
              kernel_size=2, return_indices=True),
    pool_case("max_pool1d_tiles", "max_pool1d", distinct(2, 3, 9), gradgrad=True,
              kernel_size=3, return_indices=True),
    pool_case("max_pool3d_tiles", "max_pool3d", distinct(1, 2, 4, 4, 5), gradgrad=True,
              kernel_size=2, return_indices=True),
]


@pytest.mark.parametrize("check", list(CHECKS))
@pytest.mark.parametrize("case", POOL_CASES, ids=str)
def test_max_pool_tiles(case, check, device):
    if check != "forward" and not case.grad or check == "gradgrad" and not case.gradgrad:
        pytest.skip("forward-only row")
    CHECKS[check](case, device)


def test_max_pool_tiles_routes_only_the_picked_gradient():
    """Each window's gradient, non-finite ones too, reaches only its first maximum (ties
    at 0, as after a relu, included) and every other input gets exactly 0."""
    x = np.zeros((1, 1, 4, 4), np.float32)
    x[0, 0, 0, 1] = 5
    g = np.array([[[[np.inf, np.nan], [1.0, -2.0]]]], np.float32)
    ours = dl.tensor(x, requires_grad=True)
    ref = torch.tensor(x, requires_grad=True)
    dl.functional.max_pool2d(ours, 2).backward(dl.tensor(g))
    torch.nn.functional.max_pool2d(ref, 2).backward(torch.tensor(g))
    np.testing.assert_array_equal(ours.grad.numpy(), ref.grad.numpy())


# --------------------------------------------------------------- scratch memory
@pytest.fixture
def pooled(monkeypatch):
    """Every kernel array from a fresh pool, however small."""
    monkeypatch.setattr(im2col, "_SCRATCH_MIN", 0)
    monkeypatch.setattr(im2col, "_POOL", im2col._Pool())
    return im2col._POOL


@pytest.mark.usefixtures("kernel_path")
def test_pooled_buffers_are_fully_overwritten(pooled, shifted):
    """Kernels never read what a reused buffer held before: results match torch after
    every pooled buffer is filled with NaN."""
    rng = np.random.default_rng(0)
    cases = [((2, 1, 6, 5), (3, 1, 3, 2), {}), ((2, 2, 5, 5), (5, 2, 3, 3), {"padding": 1}),
             ((2, 5, 4, 4), (2, 5, 3, 3), {"padding": (2, 1)}),
             ((2, 4, 5, 6), (4, 2, 2, 3), {"groups": 2, "dilation": 2, "padding": 1})]
    for poison in (False, True):
        for xs, ws, kw in cases:
            if poison:
                for buffer in pooled.buffers:
                    buffer.fill(255)  # NaN in every float dtype
            x, w = rng.standard_normal(xs), rng.standard_normal(ws)
            ours = [dl.tensor(a, requires_grad=True) for a in (x, w)]
            ref = [torch.tensor(a, requires_grad=True) for a in (x, w)]
            out = torch.nn.functional.conv2d(*ref, **kw)
            g = rng.standard_normal(tuple(out.shape))
            out.backward(torch.tensor(g))
            mine = dl.functional.conv2d(*ours, **kw)
            mine.backward(dl.tensor(g))
            np.testing.assert_allclose(mine.detach().numpy(), out.detach().numpy(), atol=1e-12)
            for a, b in zip(ours, ref, strict=True):
                np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), atol=1e-12)
    assert pooled.buffers


def test_scratch_reuses_only_unreferenced_buffers(pooled, monkeypatch):
    monkeypatch.setattr(im2col, "_SCRATCH_LIMIT", 1000)
    a = im2col.scratch(np, (10, 10), np.float32)
    view = a[2:].T
    del a
    b = im2col.scratch(np, (10, 10), np.float32)
    assert b.base is not view.base  # a view still holds the first buffer
    del view
    c = im2col.scratch(np, (5, 10), np.float32, zero=True)
    assert c.base is not b.base and not c.any()  # the first buffer again, zeroed
    assert pooled.held == 800
    d = im2col.scratch(np, (100,), np.float64)  # 800 bytes: past the limit, not pooled
    assert d.base is None and pooled.held == 800
    del b, c
    e = im2col.scratch(np, (100,), np.float64)  # free buffers make room
    assert e.base is not None and pooled.held <= 1000


# ------------------------------------------------------- threaded layout copies
THREADED_CASES = [  # (x shape, w shape, conv2d keywords): each layout copy of the layout
    ((3, 5, 6, 7), (4, 5, 3, 3), {"padding": 1}),  # image, taps, ungrid with bias, grid
    ((2, 2, 5, 6), (7, 2, 3, 2), {"padding": (2, 1)}),  # input grad by add_taps
    ((2, 6, 5, 5), (6, 3, 3, 3), {"groups": 2, "dilation": 2, "padding": 2}),
    ((2, 4, 7, 6), (5, 4, 3, 3), {"stride": 2, "padding": 1}),  # im2col and col2im
]


@pytest.mark.usefixtures("kernel_path")  # the layout's copies by NumPy, or by numba's loops
@pytest.mark.parametrize("thread_count", [2, 3])
@pytest.mark.parametrize("xs, ws, kw", THREADED_CASES)
def test_threaded_layout_copies_give_the_serial_results(shifted, monkeypatch, thread_count,
                                                         xs, ws, kw):
    """With every layout copy shared out by channels (however small), a convolution and
    its gradients are bit for bit what one thread computes, and match torch."""
    rng = np.random.default_rng(0)
    x, w, b = rng.standard_normal(xs), rng.standard_normal(ws), rng.standard_normal(ws[0])
    ref = [torch.tensor(a, requires_grad=True) for a in (x, w, b)]
    expected = torch.nn.functional.conv2d(*ref, **kw)
    g = rng.standard_normal(tuple(expected.shape))
    expected.backward(torch.tensor(g))

    def run(count: int) -> list:
        before = dl.get_num_threads()
        dl.set_num_threads(count)
        try:
            ours = [dl.tensor(a, requires_grad=True) for a in (x, w, b)]
            out = dl.functional.conv2d(*ours, **kw)
            out.backward(dl.tensor(g))
            return [out.detach().numpy()] + [a.grad.numpy() for a in ours]
        finally:
            dl.set_num_threads(before)

    serial = run(1)
    monkeypatch.setattr(threads, "_THREADED_BYTES", 0)
    threaded = run(thread_count)
    for mine, one, theirs in zip(threaded, serial,
                                 [expected.detach()] + [a.grad for a in ref], strict=True):
        np.testing.assert_array_equal(mine, one)
        np.testing.assert_allclose(mine, theirs.numpy(), atol=1e-12)
