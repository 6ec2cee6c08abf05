"""One SGD training step of a 784-512-512-10 ReLU MLP with softmax cross-entropy.

Batch 128, float32, learning rate 0.1, no momentum; the data and the initial weights
are fixed random numbers, the same for every framework. A step is forward, backward
and the parameter update, with the gradients cleared for the next step.
"""

import math
from itertools import pairwise

import numpy as np

from .plan import Plan

NAME = "mlp_step"
DESCRIPTION = "SGD step, 784-512-512-10 ReLU MLP, softmax CE, batch 128, float32"
UNIT = "ms"
TARGETS = {"torch": 1.3, "numpy": 1.15}
PLANS = {"full": Plan(rounds=21, iterations=30, warmup=20),
         "quick": Plan(rounds=3, iterations=5, warmup=3)}

SIZES = (784, 512, 512, 10)
BATCH = 128
LR = 0.1
# the GEMMs: forward, the weight gradients, and the input gradients of layers 2 and 3
FLOPS = 2 * BATCH * (2 * sum(a * b for a, b in pairwise(SIZES))
                     + sum(a * b for a, b in pairwise(SIZES[1:])))


def _problem():
    """Inputs (batch, 784), int64 labels and [w1, b1, w2, b2, w3, b3], w as (in, out)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((BATCH, SIZES[0]), dtype=np.float32)
    y = rng.integers(0, SIZES[-1], BATCH)
    params = []
    for fan_in, fan_out in pairwise(SIZES):
        w = rng.standard_normal((fan_in, fan_out), dtype=np.float32) * math.sqrt(2 / fan_in)
        params += [w, np.zeros(fan_out, dtype=np.float32)]
    return x, y, params


def _loss(F, x, y, params):
    """The MLP forward and loss in a framework with torch's API (`F` its functional
    module), weights as (out, in); dl.free and torch run this same code."""
    w1, b1, w2, b2, w3, b3 = params
    h = F.relu(F.linear(x, w1, b1))
    h = F.relu(F.linear(h, w2, b2))
    return F.cross_entropy(F.linear(h, w3, b3), y)


def build_dlfree():
    """Public API only, written as the torch version is: `F.linear`, `F.relu`,
    `F.cross_entropy`, then `sub_` under `no_grad` (weights kept as (out, in))."""
    import dlfree as dl
    import dlfree.functional as F

    x_np, y_np, params_np = _problem()
    x, y = dl.tensor(x_np), dl.tensor(y_np)
    params = [dl.Parameter(p.T.copy()) for p in params_np]

    def step():
        loss = _loss(F, x, y, params)
        loss.backward()
        with dl.no_grad():
            for p in params:
                p.sub_(p.grad, alpha=LR)
                p.grad = None
        return loss

    return step


def build_numpy():
    """By hand: fused softmax-cross-entropy gradient, in-place updates, float32 throughout."""
    x, y, params = _problem()
    w1, b1, w2, b2, w3, b3 = params
    rows = np.arange(BATCH)

    def step():
        h1 = x @ w1
        h1 += b1
        np.maximum(h1, 0, out=h1)
        h2 = h1 @ w2
        h2 += b2
        np.maximum(h2, 0, out=h2)
        logits = h2 @ w3
        logits += b3
        logits -= logits.max(axis=1, keepdims=True)
        logp = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
        loss = -logp[rows, y].mean()
        # d loss / d logits of softmax cross-entropy: (softmax - onehot) / batch
        d_logits = np.exp(logp)
        d_logits[rows, y] -= 1
        d_logits /= BATCH
        d_h2 = d_logits @ w3.T
        d_h2 *= h2 > 0  # not d_h2[h2 <= 0] = 0: that branches per element, ~10x slower
        d_h1 = d_h2 @ w2.T
        d_h1 *= h1 > 0
        grads = (x.T @ d_h1, d_h1.sum(axis=0), h1.T @ d_h2, d_h2.sum(axis=0),
                 h2.T @ d_logits, d_logits.sum(axis=0))
        for p, g in zip(params, grads, strict=True):
            g *= LR
            p -= g
        return loss

    return step


def build_torch():
    """Plain PyTorch as usually written: `F.linear`, `F.cross_entropy`, `optim.SGD`."""
    import torch
    import torch.nn.functional as F

    x_np, y_np, params_np = _problem()
    x, y = torch.from_numpy(x_np), torch.from_numpy(y_np)
    # torch's layers keep weights as (out, in)
    params = [torch.tensor(p.T.copy(), requires_grad=True) for p in params_np]
    optimizer = torch.optim.SGD(params, lr=LR)

    def step():
        loss = _loss(F, x, y, params)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return loss

    return step


BUILDERS = {"dlfree": build_dlfree, "numpy": build_numpy, "torch": build_torch}
