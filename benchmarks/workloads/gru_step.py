"""One SGD training step of a 2-layer GRU, 128 -> 256 hidden, batch 32, 64 time steps: the
problem, loss and step of workloads/lstm_step.py with a GRU's three gate blocks per layer.
Every `step()` returns (loss, parameters)."""

from . import lstm_step
from .plan import Plan

NAME = "gru_step"
DESCRIPTION = "SGD step, 2-layer GRU 128->256, batch 32, 64 steps, MSE, float32"
UNIT = "ms"
REFERENCE = "torch"
TARGETS = {"torch": 1.1}
PLANS = {"full": Plan(rounds=11, iterations=3, warmup=2),
         "quick": Plan(rounds=3, iterations=1, warmup=1)}
FLOPS = lstm_step.flops("GRU")
LR = lstm_step.LR


def _problem():
    """lstm_step's data with a GRU's weights (the smoke test recovers the gradients from
    them)."""
    return lstm_step._problem("GRU")


def build_dlfree():
    """`dlfree.nn.GRU` and `dlfree.optim.SGD`, written as the torch version is."""
    import dlfree as dl
    import dlfree.nn
    import dlfree.optim  # noqa: F401

    return lstm_step.build(dl, dl.tensor, "GRU")


def build_torch():
    """`torch.nn.GRU` and `torch.optim.SGD`."""
    import torch

    return lstm_step.build(torch, torch.from_numpy, "GRU")


BUILDERS = {"dlfree": build_dlfree, "torch": build_torch}
