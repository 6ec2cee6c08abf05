"""Parity cases for convolutions, transposed convolutions, unfold/fold and pad (see parity.py).

Shapes stay tiny: gradcheck perturbs every input element in turn.
"""

from __future__ import annotations

import dlfree as dl

import numpy as np
import pytest
import torch

from support.parity import Case, run_family


def F(m):
    """The functional namespace of either library."""
    return torch.nn.functional if m is torch else m.functional


def conv(name, dims, x, w, bias=True, gradgrad=False, marks=(), **kw):
    """A conv{dims}d row: input shape `x`, weight shape `w`, keyword arguments `kw`."""
    op = f"conv{dims}d"
    if bias:
        return Case(name, lambda m, a, b, c: getattr(F(m), op)(a, b, c, **kw),
                    [x, w, (w[0],)], gradgrad=gradgrad, marks=marks)
    return Case(name, lambda m, a, b: getattr(F(m), op)(a, b, **kw), [x, w],
                gradgrad=gradgrad, marks=marks)


def conv_t(name, dims, x, w, bias=True, gradgrad=False, **kw):
    """A conv_transpose{dims}d row; the bias has weight.shape[1] * groups entries."""
    op = f"conv_transpose{dims}d"
    if bias:
        out = (w[1] * kw.get("groups", 1),)
        return Case(name, lambda m, a, b, c: getattr(F(m), op)(a, b, c, **kw),
                    [x, w, out], gradgrad=gradgrad)
    return Case(name, lambda m, a, b: getattr(F(m), op)(a, b, **kw), [x, w],
                gradgrad=gradgrad)


def linear(name, op, x, gradgrad=False):
    """A row for a linear op (pad, unfold, fold). With `gradgrad` it squares the output:
    a linear op's second derivative is zero, while that of its square runs through the
    backward's own backward."""
    if gradgrad:
        return Case(name, lambda m, a: op(F(m), a) ** 2, [x], gradgrad=True)
    return Case(name, lambda m, a: op(F(m), a), [x])


def pad(name, x, widths, gradgrad=False, **kw):
    return linear(name, lambda f, a: f.pad(a, widths, **kw), x, gradgrad)


# torch warns that it copies the input for an asymmetric 'same' padding
SAME_EVEN = (pytest.mark.filterwarnings("ignore:Using padding='same'"),)

CASES = [
    # ------------------------------------------------------------------ conv1d
    conv("conv1d", 1, (2, 3, 7), (4, 3, 3), gradgrad=True),
    conv("conv1d_stride_pad_dilation", 1, (2, 2, 9), (3, 2, 3), bias=False, gradgrad=True,
         stride=2, padding=2, dilation=2),
    conv("conv1d_groups_same", 1, (1, 4, 6), (6, 2, 3), padding="same", groups=2),
    conv("conv1d_same_even_kernel", 1, (2, 2, 6), (3, 2, 4), padding="same", marks=SAME_EVEN),
    conv("conv1d_depthwise", 1, (2, 3, 8), (6, 1, 3), groups=3, padding=1),
    conv("conv1d_unbatched", 1, (3, 7), (2, 3, 2), stride=3),
    # ------------------------------------------------------------------ conv2d
    conv("conv2d", 2, (2, 3, 5, 5), (4, 3, 3, 3), gradgrad=True),
    conv("conv2d_stride_padding_tuples", 2, (2, 2, 6, 5), (3, 2, 3, 2), gradgrad=True,
         stride=(2, 1), padding=(1, 2)),
    conv("conv2d_dilation", 2, (1, 2, 7, 6), (2, 2, 3, 2), bias=False, dilation=2, padding=1),
    conv("conv2d_groups", 2, (2, 4, 5, 5), (6, 2, 3, 3), gradgrad=True, groups=2),
    conv("conv2d_depthwise", 2, (1, 3, 6, 6), (3, 1, 3, 3), bias=False, gradgrad=True,
         groups=3, stride=2, padding=1),
    conv("conv2d_same_dilated", 2, (1, 2, 5, 6), (3, 2, 3, 3), padding="same",
         dilation=(2, 1)),
    conv("conv2d_same_even_kernel", 2, (1, 2, 5, 5), (2, 2, 2, 4), bias=False,
         padding="same", marks=SAME_EVEN),
    conv("conv2d_valid", 2, (2, 2, 4, 6), (3, 2, 2, 3), padding="valid"),
    conv("conv2d_odd_sizes_stride3", 2, (1, 2, 7, 9), (2, 2, 2, 4), stride=3, padding=1),
    conv("conv2d_1x1", 2, (1, 3, 4, 4), (5, 3, 1, 1)),
    conv("conv2d_kernel_fills_input", 2, (2, 2, 3, 3), (3, 2, 3, 3)),
    conv("conv2d_empty_batch", 2, (0, 2, 5, 5), (3, 2, 3, 3), padding=1),
    conv("conv2d_unbatched", 2, (2, 5, 4), (3, 2, 3, 3), bias=False, padding=1),
    Case("conv2d_strided_input", lambda m, x, w: F(m).conv2d(x.transpose(2, 3), w, padding=1),
         [(2, 2, 5, 4), (3, 2, 3, 3)]),
    # ------------------------------------------------------------------ conv3d
    conv("conv3d", 3, (1, 2, 4, 4, 3), (3, 2, 2, 3, 2), gradgrad=True),
    conv("conv3d_stride_pad_groups", 3, (2, 2, 4, 5, 4), (2, 1, 3, 2, 2), bias=False,
         gradgrad=True, stride=(1, 2, 1), padding=1, dilation=(1, 1, 2), groups=2),
    # -------------------------------------------------------- transposed convs
    conv_t("conv_transpose1d", 1, (2, 3, 5), (3, 4, 3), gradgrad=True),
    conv_t("conv_transpose1d_stride_outpad_dilation", 1, (2, 2, 4), (2, 3, 3), gradgrad=True,
           stride=3, padding=1, output_padding=2, dilation=2),
    conv_t("conv_transpose1d_groups", 1, (1, 6, 4), (6, 2, 3), bias=False, groups=3),
    conv_t("conv_transpose2d", 2, (2, 3, 4, 4), (3, 2, 3, 3), gradgrad=True),
    conv_t("conv_transpose2d_stride_pad_outpad", 2, (1, 2, 3, 4), (2, 3, 3, 2), gradgrad=True,
           stride=2, padding=1, output_padding=1),
    conv_t("conv_transpose2d_groups_dilation", 2, (2, 4, 3, 3), (4, 1, 2, 3), gradgrad=True,
           groups=2, dilation=(2, 1), stride=(1, 2)),
    conv_t("conv_transpose2d_outpad_below_dilation", 2, (1, 2, 3, 3), (2, 2, 2, 2),
           bias=False, dilation=2, output_padding=1),
    conv_t("conv_transpose2d_unbatched", 2, (2, 3, 2), (2, 3, 2, 2), bias=False, stride=2),
    conv_t("conv_transpose2d_empty_batch", 2, (0, 2, 3, 3), (2, 3, 3, 3), stride=2),
    conv_t("conv_transpose3d", 3, (1, 2, 2, 3, 2), (2, 2, 2, 2, 2), stride=(2, 1, 2),
           padding=(0, 1, 0)),
    # ------------------------------------------------------------ unfold, fold
    linear("unfold", lambda f, x: f.unfold(x, (2, 3)), (2, 3, 4, 5)),
    linear("unfold_dilation_pad_stride",
           lambda f, x: f.unfold(x, 2, dilation=2, padding=1, stride=(2, 1)), (1, 2, 6, 5),
           gradgrad=True),
    linear("unfold_unbatched", lambda f, x: f.unfold(x, 3, padding=1, stride=2), (2, 4, 5)),
    linear("fold", lambda f, x: f.fold(x, (4, 5), 2), (2, 12, 12)),
    linear("fold_overlap_pad_stride", lambda f, x: f.fold(x, (5, 6), 3, padding=1, stride=2),
           (1, 18, 9), gradgrad=True),
    linear("fold_dilation_unbatched", lambda f, x: f.fold(x, 5, (2, 3), dilation=2), (12, 3)),
    # -------------------------------------------------------------------- pad
    pad("pad_constant", (2, 3, 4), (1, 2)),
    pad("pad_constant_three_dims_value", (2, 3, 4), (1, 0, 2, 1, 1, 1), value=0.5,
        gradgrad=True),
    pad("pad_constant_negative_crops", (2, 4, 5), (-1, 2, 1, -2), gradgrad=True),
    pad("pad_reflect_1d", (2, 3, 5), (2, 3), mode="reflect", gradgrad=True),
    pad("pad_reflect_2d", (1, 2, 4, 5), (1, 2, 3, 1), mode="reflect"),
    pad("pad_reflect_3d", (1, 1, 3, 4, 3), (1, 1, 2, 1, 0, 2), mode="reflect", gradgrad=True),
    pad("pad_replicate_2d", (2, 2, 3, 4), (2, 0, 1, 3), mode="replicate", gradgrad=True),
    pad("pad_replicate_3d_unbatched", (2, 3, 3, 2), (1, 2, 0, 1, 2, 1), mode="replicate"),
    pad("pad_replicate_empty_batch", (0, 2, 5), (1, 2), mode="replicate"),
    pad("pad_circular_1d_unbatched", (2, 5), (2, 3), mode="circular"),
    pad("pad_circular_2d", (1, 2, 3, 4), (1, 2, 3, 1), mode="circular", gradgrad=True),
    pad("pad_circular_3d", (1, 1, 3, 3, 4), (1, 1, 1, 1, 2, 2), mode="circular"),
    pad("pad_reflect_negative", (1, 2, 4, 5), (-1, 2, 2, -1), mode="reflect", gradgrad=True),
    pad("pad_replicate_negative", (1, 2, 5), (3, -2), mode="replicate", gradgrad=True),
    pad("pad_circular_negative", (1, 2, 5), (2, -1), mode="circular", gradgrad=True),
]

test_forward, test_grad, test_gradcheck, test_gradgrad = run_family(CASES)


# ---------------------------------------------------------------------- errors
def _t(*shape, dtype=None):
    return dl.ones(*shape, dtype=dtype)


@pytest.mark.parametrize("call, message", [
    (lambda: dl.functional.conv2d(_t(1, 3, 5, 5), _t(4, 2, 3, 3)),
     r"conv2d: input of shape \(1, 3, 5, 5\) has 3 channels, but weight of shape "
     r"\(4, 2, 3, 3\) with groups=1 expects 2; valid: input channels = weight.shape\[1\] \* "
     r"groups"),
    (lambda: dl.functional.conv2d(_t(1, 6, 5, 5), _t(4, 2, 3, 3), groups=3),
     r"conv2d: out_channels 4 \(weight shape \(4, 2, 3, 3\)\) is not divisible by groups=3"),
    (lambda: dl.functional.conv2d(_t(1, 1, 2, 4), _t(1, 1, 3, 3), padding=(0, 1)),
     r"conv2d: the spatial size \(2, 4\) padded to \(2, 6\) is smaller than the kernel "
     r"\(3, 3\), which spans \(3, 3\) with dilation \(1, 1\)"),
    (lambda: dl.functional.conv1d(_t(1, 1, 4, 4), _t(1, 1, 3)),
     r"conv1d: expected a 2-D \(unbatched\) or 3-D \(batched\) input, got shape \(1, 1, 4, 4\)"),
    (lambda: dl.functional.conv3d(_t(1, 2, 3, 3, 3), _t(2, 2, 3, 3)),
     r"conv3d: expected a 5-D weight \(out_channels, in_channels / groups, \*kernel\), got "
     r"shape \(2, 2, 3, 3\)"),
    (lambda: dl.functional.conv2d(_t(1, 2, 5, 5), _t(3, 2, 3, 3), _t(2)),
     r"conv2d: bias of shape \(2,\) does not fit 3 output channels; valid: shape \(3,\)"),
    (lambda: dl.functional.conv2d(_t(1, 2, 5, 5), _t(3, 2, 3, 3), stride=2, padding="same"),
     r"conv2d: padding='same' needs stride 1, got stride \(2, 2\)"),
    (lambda: dl.functional.conv2d(_t(1, 2, 5, 5), _t(3, 2, 3, 3), stride=(1, 2, 3)),
     r"conv2d: stride must be an int or 2 ints, each >= 1; got \(1, 2, 3\)"),
    (lambda: dl.functional.conv_transpose2d(_t(1, 3, 4, 4), _t(2, 3, 3, 3)),
     r"conv_transpose2d: input of shape \(1, 3, 4, 4\) has 3 channels, but weight of shape "
     r"\(2, 3, 3, 3\) expects 2"),
    (lambda: dl.functional.conv_transpose1d(_t(1, 2, 4), _t(2, 3, 3), stride=2,
                                            output_padding=2),
     r"conv_transpose1d: output_padding \(2,\) must be smaller than either the stride \(2,\) "
     r"or the dilation \(1,\)"),
    (lambda: dl.functional.conv_transpose2d(_t(1, 2, 1, 1), _t(2, 3, 1, 1), padding=1),
     r"conv_transpose2d: input of shape \(1, 2, 1, 1\) with padding \(1, 1\) gives an output "
     r"of spatial size \(-1, -1\)"),
    (lambda: dl.functional.fold(_t(1, 12, 10), (4, 5), 2),
     r"fold: input of shape \(1, 12, 10\) has 10 blocks, but output_size \(4, 5\) with "
     r"kernel_size \(2, 2\), dilation \(1, 1\), padding 0 and stride \(1, 1\) makes "
     r"3 \* 4 = 12"),
    (lambda: dl.functional.fold(_t(1, 10, 12), (4, 5), 2),
     r"fold: input of shape \(1, 10, 12\) has 10 rows, not a multiple of the 4 taps"),
    (lambda: dl.functional.unfold(_t(1, 1, 1, 2, 3), 2),
     r"unfold: expected a 3-D \(unbatched\) or 4-D \(batched\) input"),
    (lambda: dl.functional.pad(_t(1, 2, 3), (3, 3), mode="reflect"),
     r"pad: mode='reflect' needs each pad smaller than its dim; got pad \(3, 3\) for an input "
     r"of shape \(1, 2, 3\)"),
    (lambda: dl.functional.pad(_t(1, 2, 3), (4, 0), mode="circular"),
     r"pad: mode='circular' needs each pad at most its dim"),
    (lambda: dl.functional.pad(_t(2, 3), (1, 1, 1)),
     r"pad: pad \(1, 1, 1\) for an input of shape \(2, 3\); valid: \(before, after\) pairs"),
    (lambda: dl.functional.pad(_t(1, 1, 2, 3), (1, 1), mode="replicate"),
     r"pad: mode='replicate' pads the last 1, 2 or 3 dims of an input with 1 or 2 more dims"),
    (lambda: dl.functional.pad(_t(2, 3), (-2, -2)),
     r"pad: pad \(-2, -2\) crops more than the input of shape \(2, 3\) holds"),
])
def test_shape_errors_name_op_shapes_and_rule(call, message):
    with pytest.raises(dl.ShapeError, match=message):
        call()


def test_dtype_and_argument_errors():
    with pytest.raises(dl.DTypeError, match=r"conv2d: input is .*float32.* but weight is "
                                            r".*float64.*; valid: one floating dtype"):
        dl.functional.conv2d(_t(1, 2, 5, 5), _t(3, 2, 3, 3, dtype=dl.float64))
    with pytest.raises(ValueError, match=r"conv1d: padding must be 'valid', 'same'"):
        dl.functional.conv1d(_t(1, 2, 5), _t(3, 2, 3), padding="full")
    with pytest.raises(ValueError, match=r"pad: mode must be 'constant', 'reflect'"):
        dl.functional.pad(_t(1, 2, 3), (1, 1), mode="edge")
    with pytest.raises(ValueError, match=r"pad: mode='reflect' takes no value"):
        dl.functional.pad(_t(1, 2, 3), (1, 1), mode="reflect", value=1.0)


def test_conv_backward_twice_with_retained_graph():
    rng = np.random.default_rng(0)
    x = dl.tensor(rng.standard_normal((2, 3, 5, 5)), requires_grad=True)
    w = dl.tensor(rng.standard_normal((4, 3, 3, 3)), requires_grad=True)
    y = dl.functional.conv2d(x, w, padding=1).sum()
    y.backward(retain_graph=True)
    first = (x.grad.numpy().copy(), w.grad.numpy().copy())
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * first[0])
    np.testing.assert_allclose(w.grad.numpy(), 2 * first[1])
