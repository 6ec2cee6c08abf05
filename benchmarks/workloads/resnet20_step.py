"""One SGD-with-momentum training step of a CIFAR-10 ResNet-20, batch 128, 3x32x32, float32.

The network of He et al. (2016) for CIFAR: a 3x3 conv 3->16 + BatchNorm + ReLU, then
three stages of three basic blocks (two 3x3 convs, each followed by BatchNorm, ReLU
after the residual sum) at 16, 32 and 64 channels, the first block of stages 2 and 3
striding by 2; global average pooling and a linear 64->10. The shortcuts are option A,
as in the paper: the identity, or where the shape changes the input subsampled by 2 and
zero-padded with the new channels, so they have no parameters (the same in every
framework). BatchNorm runs in training mode on its own running statistics.

A step is the forward pass, softmax cross-entropy, the backward pass and an SGD step
(learning rate 0.1, momentum 0.9) of every parameter, with the gradients cleared for
the next step. Data and initial weights are fixed random numbers, the same for every
framework, in torch's layouts. Every `step()` returns (loss, parameters), so that the
smoke test can compare losses and, from the first update (the momentum buffer starts
as the gradient), the gradients.
"""

import math

import numpy as np

from .plan import Plan

NAME = "resnet20_step"
DESCRIPTION = "SGD+momentum step, CIFAR-10 ResNet-20 (option-A shortcuts, BN), 3x32x32, batch 128"
UNIT = "ms"
REFERENCE = "torch"
TARGETS = {"torch": 1.3}
PLANS = {"full": Plan(rounds=11, iterations=2, warmup=2),
         "quick": Plan(rounds=3, iterations=1, warmup=1)}

BATCH, SIZE, CLASSES = 128, 32, 10
WIDTHS, BLOCKS = (16, 32, 64), 3
LR, MOMENTUM = 0.1, 0.9


def _norm_widths() -> list:
    """The channels of each of the 19 BatchNorms, in order: the stem's, then two per block."""
    return [WIDTHS[0]] + [width for width in WIDTHS for _ in range(2 * BLOCKS)]


def _problem():
    """Inputs (BATCH, 3, 32, 32), int64 labels and the parameters in `_loss`'s order: per
    conv its weight (He-normal) and its BatchNorm's weight (1) and bias (0), then the
    linear layer's weight (He-normal) and bias (small)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((BATCH, 3, SIZE, SIZE), dtype=np.float32)
    y = rng.integers(0, CLASSES, BATCH)
    params, channels = [], 3
    for width in _norm_widths():
        fan_in = channels * 9
        params += [rng.standard_normal((width, channels, 3, 3), dtype=np.float32)
                   * np.float32(math.sqrt(2 / fan_in)),
                   np.ones(width, np.float32), np.zeros(width, np.float32)]
        channels = width
    params += [rng.standard_normal((CLASSES, channels), dtype=np.float32)
               * np.float32(math.sqrt(2 / channels)),
               rng.standard_normal(CLASSES, dtype=np.float32) * np.float32(0.1)]
    return x, y, params


def _statistics() -> list:
    """Running mean (zeros) and variance (ones) for each BatchNorm, in order."""
    return [np.full(width, value, np.float32) for width in _norm_widths()
            for value in (0.0, 1.0)]


def _loss(F, x, y, params, stats):
    """The ResNet-20 forward and loss in a framework with torch's API (`F` its functional
    module); dl.free and torch run this same code."""
    params, stats = iter(params), iter(stats)

    def conv_bn(h, stride):
        w, gamma, beta = next(params), next(params), next(params)
        h = F.conv2d(h, w, stride=stride, padding=1)
        return F.batch_norm(h, next(stats), next(stats), gamma, beta, training=True)

    h = F.relu(conv_bn(x, 1))
    channels = WIDTHS[0]
    for width in WIDTHS:
        for block in range(BLOCKS):
            stride = 2 if block == 0 and width != channels else 1
            out = F.relu(conv_bn(h, stride))
            out = conv_bn(out, 1)
            if stride == 1:
                shortcut = h
            else:  # option A: subsample, then zero channels on both sides
                extra = (width - channels) // 2
                shortcut = F.pad(h[:, :, ::2, ::2], (0, 0, 0, 0, extra, extra))
            h = F.relu(out + shortcut)
            channels = width
    w, b = next(params), next(params)
    return F.cross_entropy(F.linear(h.mean((2, 3)), w, b), y)


def build_dlfree():
    """Public API only, written as the torch version is, with dlfree.optim.SGD."""
    import dlfree as dl
    import dlfree.functional as F
    from dlfree.optim import SGD

    x_np, y_np, params_np = _problem()
    x, y = dl.tensor(x_np), dl.tensor(y_np)
    params = [dl.Parameter(p) for p in params_np]
    stats = [dl.tensor(s) for s in _statistics()]
    optimizer = SGD(params, lr=LR, momentum=MOMENTUM)

    def step():
        loss = _loss(F, x, y, params, stats)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return loss, params

    return step


def build_torch():
    """Plain PyTorch as usually written: `torch.nn.functional` ops and `optim.SGD`."""
    import torch
    import torch.nn.functional as F

    x_np, y_np, params_np = _problem()
    x, y = torch.from_numpy(x_np), torch.from_numpy(y_np)
    params = [torch.tensor(p, requires_grad=True) for p in params_np]
    stats = [torch.from_numpy(s) for s in _statistics()]
    optimizer = torch.optim.SGD(params, lr=LR, momentum=MOMENTUM)

    def step():
        loss = _loss(F, x, y, params, stats)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return loss, params

    return step


BUILDERS = {"dlfree": build_dlfree, "torch": build_torch}
