"""One SGD training step of a LeNet-style CNN on 1x28x28 inputs, batch 64, float32.

conv 1->6 5x5, relu, max-pool 2, conv 6->16 5x5, relu, max-pool 2, flatten (256),
linear 256->120, relu, linear 120->10, softmax cross-entropy; then backward and an
in-place SGD update (learning rate 0.05, no momentum) of every parameter, with the
gradients cleared for the next step. Data and initial weights are fixed random numbers,
the same for every framework; weights keep torch's layouts ((out, in, kh, kw) and
(out, in)). Every `step()` returns (loss, parameters), so that the smoke test can
compare losses and, from the updated parameters, the gradients.
"""

import math

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from .plan import Plan

NAME = "cnn_step"
DESCRIPTION = "SGD step, LeNet-style CNN (2 conv 5x5 + pool, 2 linear), 1x28x28, batch 64"
UNIT = "ms"
TARGETS = {"torch": 2.0}
PLANS = {"full": Plan(rounds=21, iterations=8, warmup=8),
         "quick": Plan(rounds=3, iterations=3, warmup=2)}

BATCH, SIZE, CLASSES, KERNEL = 64, 28, 10, 5
LR = 0.05
# name: shape, in torch's layout; biases follow their weights
SHAPES = {"conv1": (6, 1, KERNEL, KERNEL), "conv2": (16, 6, KERNEL, KERNEL),
          "fc1": (120, 256), "fc2": (CLASSES, 120)}


def _problem():
    """Inputs (64, 1, 28, 28), int64 labels and [w1, b1, w2, b2, w3, b3, w4, b4]."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((BATCH, 1, SIZE, SIZE), dtype=np.float32)
    y = rng.integers(0, CLASSES, BATCH)
    params = []
    for shape in SHAPES.values():
        fan_in = math.prod(shape[1:])
        w = rng.standard_normal(shape, dtype=np.float32) * np.float32(math.sqrt(2 / fan_in))
        b = rng.standard_normal(shape[0], dtype=np.float32) * np.float32(0.1)
        params += [w, b]
    return x, y, params


def _loss(F, x, y, params):
    """The LeNet forward and loss in a framework with torch's API (`F` its functional
    module); dl.free and torch run this same code."""
    w1, b1, w2, b2, w3, b3, w4, b4 = params
    h = F.max_pool2d(F.relu(F.conv2d(x, w1, b1)), 2)
    h = F.max_pool2d(F.relu(F.conv2d(h, w2, b2)), 2)
    h = F.relu(F.linear(h.flatten(1), w3, b3))
    return F.cross_entropy(F.linear(h, w4, b4), y)


def build_dlfree():
    """Public API only, written as the torch version is, then `sub_` under `no_grad`."""
    import dlfree as dl
    import dlfree.functional as F

    x_np, y_np, params_np = _problem()
    x, y = dl.tensor(x_np), dl.tensor(y_np)
    params = [dl.Parameter(p) for p in params_np]

    def step():
        loss = _loss(F, x, y, params)
        loss.backward()
        with dl.no_grad():
            for p in params:
                p.sub_(p.grad, alpha=LR)
                p.grad = None
        return loss, params

    return step


def _conv_forward(x, w, b):
    """A valid (unpadded) convolution of channels-last `x` (n, h, w, c) by im2col + GEMM.

    Returns the output as (n*ho*wo, out_channels), the columns (n*ho*wo, k*k*c) ordered
    (kernel row, kernel column, channel), and the weight as (out_channels, k*k*c) in
    that order.
    """
    n, _, _, c = x.shape
    out_channels, k = w.shape[0], w.shape[-1]
    windows = sliding_window_view(x, (k, k), axis=(1, 2))  # (n, ho, wo, c, k, k)
    columns = windows.transpose(0, 1, 2, 4, 5, 3).reshape(-1, k * k * c)
    w2d = w.transpose(0, 2, 3, 1).reshape(out_channels, k * k * c)
    out = columns @ w2d.T
    out += b
    return out, columns, w2d


def _conv_weight_grad(grad_out, columns, shape):
    """The weight gradient in torch's (out, in, kh, kw) layout from the im2col columns."""
    out_channels, in_channels, k, _ = shape
    grad = grad_out.T @ columns  # (out, k*k*in), ordered (kernel row, column, channel)
    return grad.reshape(out_channels, k, k, in_channels).transpose(0, 3, 1, 2)


def _relu_pool_forward(out, n, size):
    """relu in place, then 2x2 max-pool; `out` is (n*size*size, c) channels-last.

    Returns the pooled (n, size/2, size/2, c) and the relu output seen as 2x2 blocks
    (n, size/2, 2, size/2, 2, c). The maximum of the four strided corners measured ~5x
    faster than `blocks.max(axis=(2, 4))`.
    """
    np.maximum(out, 0, out=out)
    blocks = out.reshape(n, size // 2, 2, size // 2, 2, -1)
    top = np.maximum(blocks[:, :, 0, :, 0], blocks[:, :, 0, :, 1])
    return np.maximum(top, np.maximum(blocks[:, :, 1, :, 0], blocks[:, :, 1, :, 1])), blocks


def _relu_pool_backward(grad_pooled, pooled, blocks):
    """The gradient of the conv output before relu and pooling, in `blocks`' shape.

    It flows to the maximum of each block, unless that maximum is 0: then relu clipped
    the whole block, and its gradient there is 0. So ties, which only happen at 0,
    send nothing.
    """
    grad_pooled = grad_pooled * (pooled > 0)
    spread = (slice(None), slice(None), None, slice(None), None, slice(None))
    return (blocks == pooled[spread]) * grad_pooled[spread]


def build_numpy():
    """By hand: channels-last activations, im2col + GEMM, col2im by k*k slice adds, 2x2
    max-pool as the maximum of strided corners, fused softmax-cross-entropy gradient,
    in-place updates."""
    x, y, params = _problem()
    w1, b1, w2, b2, w3, b3, w4, b4 = params
    x = x.transpose(0, 2, 3, 1)  # channels-last; a view, as there is one channel
    n, rows, k = BATCH, np.arange(BATCH), KERNEL
    size1 = SIZE - k + 1  # 24, then pooled to 12
    size2 = size1 // 2 - k + 1  # 8, then pooled to 4

    def step():
        out1, cols1, w1_2d = _conv_forward(x, w1, b1)
        pool1, blocks1 = _relu_pool_forward(out1, n, size1)
        out2, cols2, w2_2d = _conv_forward(pool1, w2, b2)
        pool2, blocks2 = _relu_pool_forward(out2, n, size2)
        flat = pool2.transpose(0, 3, 1, 2).reshape(n, -1)  # torch's (c, h, w) order
        h3 = flat @ w3.T
        h3 += b3
        np.maximum(h3, 0, out=h3)
        logits = h3 @ w4.T
        logits += b4
        logits -= logits.max(axis=1, keepdims=True)
        logp = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
        loss = -logp[rows, y].mean()
        # d loss / d logits of softmax cross-entropy: (softmax - onehot) / batch
        d_logits = np.exp(logp)
        d_logits[rows, y] -= 1
        d_logits /= n
        d_h3 = d_logits @ w4
        d_h3 *= h3 > 0
        d_flat = d_h3 @ w3
        d_pool2 = d_flat.reshape(n, pool2.shape[3], *pool2.shape[1:3]).transpose(0, 2, 3, 1)
        d_out2 = _relu_pool_backward(d_pool2, pool2, blocks2).reshape(out2.shape)
        d_cols2 = (d_out2 @ w2_2d).reshape(n, size2, size2, k, k, -1)
        d_pool1 = np.zeros_like(pool1)
        for i in range(k):
            for j in range(k):
                d_pool1[:, i:i + size2, j:j + size2] += d_cols2[:, :, :, i, j]
        d_out1 = _relu_pool_backward(d_pool1, pool1, blocks1).reshape(out1.shape)
        grads = (_conv_weight_grad(d_out1, cols1, w1.shape), d_out1.sum(axis=0),
                 _conv_weight_grad(d_out2, cols2, w2.shape), d_out2.sum(axis=0),
                 d_h3.T @ flat, d_h3.sum(axis=0), d_logits.T @ h3, d_logits.sum(axis=0))
        for p, g in zip(params, grads, strict=True):
            g *= LR
            p -= g
        return loss, params

    return step


def build_torch():
    """Plain PyTorch as usually written: `torch.nn.functional` ops and `optim.SGD`."""
    import torch
    import torch.nn.functional as F

    x_np, y_np, params_np = _problem()
    x, y = torch.from_numpy(x_np), torch.from_numpy(y_np)
    params = [torch.tensor(p, requires_grad=True) for p in params_np]
    optimizer = torch.optim.SGD(params, lr=LR)

    def step():
        loss = _loss(F, x, y, params)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return loss, params

    return step


BUILDERS = {"dlfree": build_dlfree, "numpy": build_numpy, "torch": build_torch}
