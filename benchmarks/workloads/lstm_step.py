"""One SGD training step of a 2-layer LSTM, 128 -> 256 hidden, batch 32, 64 time steps.

float32, sequence-first input (64, 32, 128), zero initial state; the loss is the summed
squared error of the last layer's outputs (64, 32, 256) against a fixed target, over the
batch size (a mean over every element would leave gradients that SGD's float32 update
cannot carry, and the smoke test recovers the gradients from that update). A step is
forward, backward and an SGD update (learning rate 0.1) of all eight weights, with the
gradients cleared for the next step. Data and weights are fixed random numbers, the same
for every framework, in torch's layout and order. Every `step()` returns (loss, parameters).
"""

import math

import numpy as np

from .plan import Plan

NAME = "lstm_step"
DESCRIPTION = "SGD step, 2-layer LSTM 128->256, batch 32, 64 steps, MSE, float32"
UNIT = "ms"
REFERENCE = "torch"
TARGETS = {"torch": 1.1}
PLANS = {"full": Plan(rounds=11, iterations=3, warmup=2),
         "quick": Plan(rounds=3, iterations=1, warmup=1)}

STEPS, BATCH, INPUT, HIDDEN, LAYERS = 64, 32, 128, 256, 2
LR = 0.1
GATES = {"LSTM": 4, "GRU": 3}  # gate blocks per layer; workloads/gru_step.py runs the GRU


def flops(kind: str) -> int:
    """The gate GEMMs, forward (2 * rows * gates * H * (in + H) per layer) and twice that
    backward."""
    return 3 * 2 * STEPS * BATCH * GATES[kind] * HIDDEN * ((INPUT + HIDDEN) + (HIDDEN + HIDDEN))


FLOPS = flops("LSTM")


def _problem(kind="LSTM"):
    """Input (T, B, INPUT), target (T, B, HIDDEN) and, per layer, weight_ih, weight_hh,
    bias_ih, bias_hh drawn as torch draws them, U(-1/sqrt(H), 1/sqrt(H))."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((STEPS, BATCH, INPUT), dtype=np.float32)
    target = rng.standard_normal((STEPS, BATCH, HIDDEN), dtype=np.float32) * np.float32(0.1)
    bound, params = 1 / math.sqrt(HIDDEN), []
    for layer in range(LAYERS):
        fan_in = INPUT if layer == 0 else HIDDEN
        width = GATES[kind] * HIDDEN
        for shape in ((width, fan_in), (width, HIDDEN), (width,), (width,)):
            params.append(rng.uniform(-bound, bound, shape).astype(np.float32))
    return (x, target), None, params


def build(framework, tensor, kind="LSTM"):
    """An LSTM or GRU (`kind`) of `framework` (dlfree or torch, same API) holding
    `_problem`'s weights, and the step with that framework's SGD."""
    F, nn, optim = framework.nn.functional, framework.nn, framework.optim
    (x_np, target_np), _, params_np = _problem(kind)
    x, target = tensor(x_np), tensor(target_np)
    lstm = getattr(nn, kind)(INPUT, HIDDEN, LAYERS)
    params = list(lstm.parameters())
    with framework.no_grad():
        for p, value in zip(params, params_np, strict=True):
            p.copy_(tensor(value))
    optimizer = optim.SGD(params, lr=LR)

    def step():
        out, _ = lstm(x)
        loss = F.mse_loss(out, target, reduction="sum") / BATCH
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return loss, params

    return step


def build_dlfree():
    """`dlfree.nn.LSTM` and `dlfree.optim.SGD`, written as the torch version is."""
    import dlfree as dl
    import dlfree.nn
    import dlfree.optim  # noqa: F401

    return build(dl, dl.tensor)


def build_torch():
    """`torch.nn.LSTM` and `torch.optim.SGD`."""
    import torch

    return build(torch, torch.from_numpy)


BUILDERS = {"dlfree": build_dlfree, "torch": build_torch}
