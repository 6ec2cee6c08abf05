"""Parity cases for pooling, pixel shuffling and interpolation (see parity.py), and errors.

Max pools take distinct inputs so that finite differences never cross a tie; forward-only
rows with ties, NaNs and -inf check torch's choice of argmax exactly, through the returned
indices.
These ops are linear (or piecewise linear) in their input, so gradgrad rows cube the
output: the second derivative then runs through the op's backward.
"""

from __future__ import annotations

import math

import dlfree as dl

import numpy as np
import pytest
import torch

from support.parity import Case, cubed, run_family
from support.specs import Fixed, Float, Int


def F(m):
    """The functional namespace of either library."""
    return torch.nn.functional if m is torch else m.functional


def row(name, op, x, gradgrad=False, **kw):
    """A row calling `F.op(x, **kw)`; `x` is a shape or an input spec."""
    fn = lambda m, a: getattr(F(m), op)(a, **kw)  # noqa: E731
    return Case(name, cubed(fn) if gradgrad else fn, [x], gradgrad=gradgrad,
                grad=not isinstance(x, Int | Fixed))


def distinct(*shape):
    return Float(shape, distinct=True)


POSITIVE = Float((2, 2, 6, 6), 0.5, 2.0)
NAN, INF = math.nan, math.inf
# ties, a NaN (torch keeps the last NaN of a window) and a window of -inf only
SPECIAL = Fixed([[[[1, 3, 3, 0, NAN, 2],
                   [3, 1, 0, NAN, 5, 1],
                   [-INF, -INF, 2, 2, NAN, 1],
                   [-INF, -INF, 2, 2, NAN, 1]]]], "float32")

# small integers as floats: many ties (torch has no integer adaptive max pooling)
FLOAT_TIES = Fixed(np.random.default_rng(0).integers(0, 3, (2, 2, 6, 5)), "float32")

CASES = [
    # max pooling
    row("max_pool2d", "max_pool2d", distinct(2, 3, 6, 6), gradgrad=True, kernel_size=2),
    row("max_pool2d_pad_indices", "max_pool2d", distinct(2, 2, 7, 7), kernel_size=3, stride=2,
        padding=1, return_indices=True),
    row("max_pool2d_dilation_ceil", "max_pool2d", distinct(1, 2, 8, 7), gradgrad=True,
        kernel_size=(3, 2), stride=(2, 3), padding=1, dilation=(2, 1), ceil_mode=True,
        return_indices=True),
    row("max_pool2d_overlap", "max_pool2d", distinct(2, 2, 5, 6), kernel_size=(2, 3),
        stride=1),
    row("max_pool2d_unbatched_ceil", "max_pool2d", distinct(3, 6, 5), kernel_size=3, stride=2,
        padding=1, ceil_mode=True, return_indices=True),
    row("max_pool2d_empty_batch", "max_pool2d", (0, 2, 4, 4), kernel_size=2),
    row("max_pool2d_int_ties", "max_pool2d", Int((2, 2, 5, 5), 0, 3), kernel_size=3,
        stride=1, padding=1, return_indices=True),
    row("max_pool2d_nan_inf_ties", "max_pool2d", SPECIAL, kernel_size=2, stride=1, padding=1,
        return_indices=True),
    row("max_pool1d", "max_pool1d", distinct(2, 3, 9), gradgrad=True, kernel_size=3, stride=2,
        padding=1, return_indices=True),
    row("max_pool1d_dilation_ceil", "max_pool1d", distinct(1, 2, 10), kernel_size=3, stride=2,
        dilation=2, ceil_mode=True),
    row("max_pool1d_unbatched", "max_pool1d", distinct(3, 7), kernel_size=2),
    row("max_pool3d", "max_pool3d", distinct(1, 2, 4, 3, 4), kernel_size=2, padding=1,
        return_indices=True),
    # average pooling
    row("avg_pool2d", "avg_pool2d", (2, 3, 6, 6), gradgrad=True, kernel_size=2),
    row("avg_pool2d_pad_exclude", "avg_pool2d", (2, 2, 7, 6), gradgrad=True, kernel_size=3,
        stride=2, padding=1, count_include_pad=False),
    row("avg_pool2d_ceil_include_pad", "avg_pool2d", (1, 2, 7, 8), kernel_size=(3, 2),
        stride=2, padding=(1, 0), ceil_mode=True),
    row("avg_pool2d_ceil_exclude_pad", "avg_pool2d", (1, 2, 7, 8), kernel_size=(3, 2),
        stride=2, padding=(1, 0), ceil_mode=True, count_include_pad=False),
    row("avg_pool2d_divisor_override", "avg_pool2d", (2, 2, 5, 5), kernel_size=3, stride=2,
        padding=1, divisor_override=4),
    row("avg_pool2d_unbatched", "avg_pool2d", (3, 5, 4), kernel_size=2, stride=1),
    row("avg_pool2d_empty_batch", "avg_pool2d", (0, 2, 4, 4), kernel_size=2),
    row("avg_pool1d", "avg_pool1d", (2, 3, 9), gradgrad=True, kernel_size=3, stride=2,
        padding=1, ceil_mode=True),
    row("avg_pool1d_exclude_pad", "avg_pool1d", (1, 2, 8), kernel_size=4, stride=3,
        padding=2, ceil_mode=True, count_include_pad=False),
    row("avg_pool3d", "avg_pool3d", (1, 2, 5, 4, 4), kernel_size=2, stride=(2, 1, 2),
        padding=1),
    # adaptive pooling: windows that overlap, vary in size, or repeat (output > input)
    row("adaptive_avg_pool2d_global", "adaptive_avg_pool2d", (2, 3, 5, 5), output_size=1),
    row("adaptive_avg_pool2d_uneven", "adaptive_avg_pool2d", (2, 2, 7, 5), gradgrad=True,
        output_size=(3, 4)),
    row("adaptive_avg_pool2d_upsample", "adaptive_avg_pool2d", (1, 2, 3, 2),
        output_size=(5, 7)),
    row("adaptive_avg_pool2d_none", "adaptive_avg_pool2d", (2, 2, 6, 5),
        output_size=(None, 3)),
    row("adaptive_avg_pool1d", "adaptive_avg_pool1d", (2, 3, 10), gradgrad=True,
        output_size=4),
    row("adaptive_avg_pool1d_wide", "adaptive_avg_pool1d", (2, 2, 41), gradgrad=True,
        output_size=2),
    row("adaptive_avg_pool1d_unbatched", "adaptive_avg_pool1d", (3, 7), output_size=3),
    row("adaptive_avg_pool3d", "adaptive_avg_pool3d", (1, 2, 5, 4, 3), output_size=(2, 3, 2)),
    row("adaptive_max_pool2d_uneven", "adaptive_max_pool2d", distinct(2, 2, 7, 5),
        gradgrad=True, output_size=(3, 4), return_indices=True),
    row("adaptive_max_pool2d_upsample", "adaptive_max_pool2d", distinct(1, 2, 3, 4),
        output_size=(5, 6), return_indices=True),
    row("adaptive_max_pool2d_ties", "adaptive_max_pool2d", FLOAT_TIES, output_size=(4, 3),
        return_indices=True),
    row("adaptive_max_pool1d", "adaptive_max_pool1d", distinct(2, 2, 9), output_size=4,
        return_indices=True),
    row("adaptive_max_pool3d", "adaptive_max_pool3d", distinct(1, 2, 5, 4, 3),
        output_size=(2, 3, 2), return_indices=True),
    # power-average pooling
    Case("lp_pool2d_p2", lambda m, a: F(m).lp_pool2d(a, 2, 2), [POSITIVE], gradgrad=True),
    Case("lp_pool2d_p3_ceil", lambda m, a: F(m).lp_pool2d(a, 3, 3, stride=2, ceil_mode=True),
         [Float((1, 2, 7, 5), 0.5, 2.0)]),
    Case("lp_pool1d_fractional", lambda m, a: F(m).lp_pool1d(a, 1.5, 3, stride=2),
         [Float((2, 2, 9), 0.5, 2.0)], gradgrad=True),
    Case("lp_pool3d", lambda m, a: F(m).lp_pool3d(a, 2, 2), [Float((1, 2, 4, 4, 5), 0.5, 2.0)]),
    Case("lp_pool2d_inf", lambda m, a: F(m).lp_pool2d(a, math.inf, 2),
         [Float((2, 2, 6, 6), 0.1, 2.0, distinct=True)]),
    # pixel shuffle
    row("pixel_shuffle", "pixel_shuffle", (2, 8, 3, 4), gradgrad=True, upscale_factor=2),
    row("pixel_shuffle_lead_dims", "pixel_shuffle", (2, 2, 9, 2, 3), upscale_factor=3),
    row("pixel_unshuffle", "pixel_unshuffle", (2, 3, 4, 6), gradgrad=True,
        downscale_factor=2),
    row("pixel_unshuffle_unbatched", "pixel_unshuffle", (2, 6, 9), downscale_factor=3),
    # interpolation
    row("nearest_scale2", "interpolate", (2, 3, 4, 5), gradgrad=True, scale_factor=2),
    row("nearest_size", "interpolate", (2, 2, 5, 7), size=(3, 10)),
    row("nearest_scale_fractional", "interpolate", (1, 2, 5, 4), scale_factor=(1.7, 0.6)),
    row("nearest_exact", "interpolate", (1, 2, 5, 4), size=(8, 3), mode="nearest-exact"),
    row("nearest_1d", "interpolate", (2, 3, 5), size=12),
    row("nearest_empty_batch", "interpolate", (0, 2, 3, 3), scale_factor=2),
    row("bilinear", "interpolate", (2, 2, 4, 5), gradgrad=True, size=(7, 3), mode="bilinear"),
    row("bilinear_align_corners", "interpolate", (2, 2, 4, 5), gradgrad=True, size=(7, 9),
        mode="bilinear", align_corners=True),
    row("bilinear_scale", "interpolate", (1, 2, 5, 4), scale_factor=(2.5, 0.5),
        mode="bilinear"),
    row("bilinear_recompute_scale", "interpolate", (1, 2, 5, 4), scale_factor=1.7,
        mode="bilinear", recompute_scale_factor=True),
    row("linear", "interpolate", (2, 3, 6), size=13, mode="linear"),
    row("linear_align_corners", "interpolate", (2, 3, 6), gradgrad=True, scale_factor=0.5,
        mode="linear", align_corners=True),
    row("bicubic", "interpolate", (1, 2, 4, 5), size=(7, 8), mode="bicubic"),
    row("bicubic_align_corners", "interpolate", (1, 2, 4, 5), size=(6, 3), mode="bicubic",
        align_corners=True),
    row("trilinear", "interpolate", (1, 2, 3, 4, 3), size=(5, 3, 6), mode="trilinear"),
    row("area", "interpolate", (2, 2, 7, 6), size=(3, 4), mode="area"),
]

test_forward, test_grad, test_gradcheck, test_gradgrad = run_family(CASES)


def x(*shape, dtype="float32"):
    return dl.tensor(np.zeros(shape, dtype=dtype))


@pytest.mark.parametrize("call, message", [
    (lambda: dl.functional.max_pool2d(x(4, 4), 2),
     r"max_pool2d: expected a 3 or 4-d input \(N, C, H, W\) or \(C, H, W\), got shape \(4, 4\)"),
    (lambda: dl.functional.max_pool2d(x(1, 1, 5, 5), 3, padding=2),
     r"max_pool2d: padding must be between 0 and half the kernel size, got padding=\(2, 2\) "
     r"for kernel_size=\(3, 3\)"),
    (lambda: dl.functional.avg_pool2d(x(1, 1, 2, 2), 3),
     r"avg_pool2d: input of shape \(1, 1, 2, 2\) is too small for kernel_size 3 .*output "
     r"size would be 0"),
    (lambda: dl.functional.max_pool1d(x(1, 2, 5), 2, stride=0),
     r"max_pool1d: stride must be positive, got \(0,\)"),
    (lambda: dl.functional.avg_pool2d(x(1, 1, 4, 4), (2, 2, 2)),
     r"avg_pool2d: kernel_size must be an int or a sequence of 2 ints, got \(2, 2, 2\)"),
    (lambda: dl.functional.adaptive_avg_pool2d(x(2, 0, 4, 4), 2),
     r"adaptive_avg_pool2d: expected non-zero sizes except the batch \(N\) .*got shape "
     r"\(2, 0, 4, 4\)"),
    (lambda: dl.functional.max_pool1d(x(1, 1, 1), 2, stride=2, padding=1, dilation=3,
                                      ceil_mode=True),
     r"max_pool1d: .* a window of an input of shape \(1, 1, 1\) covers no input element"),
    (lambda: dl.functional.pixel_shuffle(x(1, 3, 2, 2), 2),
     r"pixel_shuffle: the channel dimension 3 of input shape \(1, 3, 2, 2\) must be divisible "
     r"by upscale_factor\^2 = 4"),
    (lambda: dl.functional.pixel_unshuffle(x(1, 1, 3, 4), 2),
     r"pixel_unshuffle: the height 3 and width 4 .* must be divisible by downscale_factor 2"),
    (lambda: dl.functional.interpolate(x(1, 1, 4, 4), size=3, mode="linear"),
     r"interpolate: mode 'linear' expects a 3-d input \(N, C, \.\.\.\), got shape "
     r"\(1, 1, 4, 4\)"),
    (lambda: dl.functional.interpolate(x(1, 1, 4, 4), size=3, scale_factor=2),
     r"interpolate: give exactly one of size and scale_factor"),
    (lambda: dl.functional.interpolate(x(1, 1, 4, 4), scale_factor=0.2),
     r"interpolate: input and output sizes must be greater than 0, got input \(4, 4\) and "
     r"output \(0, 0\)"),
])
def test_shape_errors_name_op_shapes_and_rule(call, message):
    with pytest.raises(dl.ShapeError, match=message):
        call()


def test_argument_and_dtype_errors():
    with pytest.raises(dl.DTypeError,
                       match="avg_pool2d: not supported for int64 tensors; valid: floating-point"):
        dl.functional.avg_pool2d(x(1, 1, 4, 4, dtype="int64"), 2)
    with pytest.raises(ValueError, match="interpolate: align_corners can only be set"):
        dl.functional.interpolate(x(1, 1, 4, 4), scale_factor=2, align_corners=True)
    with pytest.raises(ValueError, match="interpolate: unknown mode 'cubic'"):
        dl.functional.interpolate(x(1, 1, 4, 4), scale_factor=2, mode="cubic")
