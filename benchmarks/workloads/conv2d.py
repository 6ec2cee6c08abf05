"""Forward and backward of one 3x3 convolution, 64 -> 64 channels, padding 1, with bias.

The input, float32 of shape (32, 64, 32, 32), requires grad; the backward pass starts
from a fixed random output gradient and produces the gradients of the input, the
weight and the bias. Inputs, weights and the output gradient are fixed random numbers,
the same for every framework. Every `step()` returns (output, grad input, grad weight,
grad bias), which the smoke test compares across frameworks.
"""

import math

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from .plan import Plan

NAME = "conv2d"
DESCRIPTION = "conv2d 3x3, 64->64 channels, padding 1, bias, (32,64,32,32) float32, fwd+bwd"
UNIT = "ms"
TARGETS = {"torch": 1.2}
PLANS = {"full": Plan(rounds=15, iterations=3, warmup=2),
         "quick": Plan(rounds=3, iterations=1, warmup=1)}

BATCH, CHANNELS, SIZE, KERNEL, PADDING = 32, 64, 32, 3, 1
# the convolution as a GEMM, forward and twice that backward (input and weight gradients)
FLOPS = 3 * 2 * BATCH * CHANNELS * SIZE * SIZE * CHANNELS * KERNEL * KERNEL


def _problem():
    """Input (N, C, H, W), weight (O, C, k, k), bias (O,) and output gradient (N, O, H, W)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((BATCH, CHANNELS, SIZE, SIZE), dtype=np.float32)
    fan_in = CHANNELS * KERNEL * KERNEL
    w = rng.standard_normal((CHANNELS, CHANNELS, KERNEL, KERNEL), dtype=np.float32)
    w *= math.sqrt(2 / fan_in)
    b = rng.standard_normal(CHANNELS, dtype=np.float32) * np.float32(0.1)
    grad_out = rng.standard_normal((BATCH, CHANNELS, SIZE, SIZE), dtype=np.float32)
    return x, w, b, grad_out


def _autograd_step(F, x, w, b, grad_out):
    """`F.conv2d` forward and backward in a framework with torch's API; dl.free and torch
    run this same code. Gradients are cleared before every step."""

    def step():
        x.grad = w.grad = b.grad = None
        out = F.conv2d(x, w, b, padding=PADDING)
        out.backward(grad_out)
        return out, x.grad, w.grad, b.grad

    return step


def build_dlfree():
    """`dlfree.functional.conv2d` on tensors that require grad."""
    import dlfree as dl
    import dlfree.functional as F

    x_np, w_np, b_np, g_np = _problem()
    return _autograd_step(F, dl.tensor(x_np, requires_grad=True), dl.Parameter(w_np),
                          dl.Parameter(b_np), dl.tensor(g_np))


def build_numpy():
    """im2col with `sliding_window_view`, one GEMM each way, col2im by k*k slice adds.

    Inside, activations are channels-last (NHWC) and the columns are ordered
    (kernel row, kernel column, channel): then every GEMM is one large 2-d product and
    col2im adds contiguous channel vectors. This measured several times faster than
    NCHW columns (N, C*k*k, H*W) with batched products and strided col2im. The padded
    and column buffers are allocated once; the output and input gradient are NCHW views.
    """
    x, w, b, grad_out = _problem()
    n, c, h, width = x.shape
    out_channels, k = w.shape[0], KERNEL
    rows = n * h * width
    padded = np.zeros((n, h + 2 * PADDING, width + 2 * PADDING, c), dtype=np.float32)
    interior = (slice(None), slice(PADDING, PADDING + h), slice(PADDING, PADDING + width))
    grad_padded = np.empty_like(padded)
    # the two (rows, k*k*c) matrices are 75 MB each: reused, not page-faulted in anew
    columns = np.empty((rows, k * k * c), dtype=np.float32)
    grad_columns = np.empty_like(columns)
    columns6d = columns.reshape(n, h, width, k, k, c)
    grad_columns6d = grad_columns.reshape(n, h, width, k, k, c)

    def step():
        padded[interior] = x.transpose(0, 2, 3, 1)
        windows = sliding_window_view(padded, (k, k), axis=(1, 2))  # (n, h, w, c, k, k)
        columns6d[...] = windows.transpose(0, 1, 2, 4, 5, 3)
        w2d = w.transpose(0, 2, 3, 1).reshape(out_channels, k * k * c)
        out = columns @ w2d.T  # (rows, out_channels)
        out += b
        # backward
        grad_out2d = grad_out.transpose(0, 2, 3, 1).reshape(rows, out_channels)
        grad_b = grad_out2d.sum(axis=0)
        grad_w = (grad_out2d.T @ columns).reshape(out_channels, k, k, c).transpose(0, 3, 1, 2)
        np.matmul(grad_out2d, w2d, out=grad_columns)
        grad_padded.fill(0)
        for i in range(k):
            for j in range(k):
                grad_padded[:, i:i + h, j:j + width] += grad_columns6d[:, :, :, i, j]
        return (out.reshape(n, h, width, out_channels).transpose(0, 3, 1, 2),
                grad_padded[interior].transpose(0, 3, 1, 2), grad_w, grad_b)

    return step


def build_torch():
    """`torch.nn.functional.conv2d` and autograd."""
    import torch
    import torch.nn.functional as F

    x_np, w_np, b_np, g_np = _problem()
    return _autograd_step(F, torch.tensor(x_np, requires_grad=True),
                          torch.tensor(w_np, requires_grad=True),
                          torch.tensor(b_np, requires_grad=True), torch.from_numpy(g_np))


BUILDERS = {"dlfree": build_dlfree, "numpy": build_numpy, "torch": build_torch}
