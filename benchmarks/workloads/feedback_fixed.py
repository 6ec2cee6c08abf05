"""Feedback over a fixed number of calls: a projection, an RNN cell reading its own output
from the previous call (a forward reference), a classifier head; 5 calls over a sequence,
the summed loss backpropagated through all of them, one SGD step; batch 64, width 128.

dl.free states the feedback with `FlowBuilder.using("h")` before `.tag("h")` (and `reset()`
per sequence); torch is the same network with the state carried by hand.
"""

from . import graph_nets
from .plan import Plan

NAME = "feedback_fixed"
DESCRIPTION = "SGD step, graph: RNN-cell feedback (forward ref) over 5 calls, 128, batch 64"
UNIT = "ms"
REFERENCE = "torch"
TARGETS = {"torch": 1.3}
PLANS = {"full": Plan(rounds=15, iterations=10, warmup=5),
         "quick": Plan(rounds=3, iterations=3, warmup=2)}

WIDTH, CALLS, BATCH, CLASSES = 128, 5, 64, 10


def _sequence_loss(calls, reset):
    """The summed cross-entropy of `CALLS` calls, each on its own step of the sequence."""
    def loss_of(model, F):
        reset(model)
        loss = None
        for x, y in calls:
            step = F.cross_entropy(model(x), y)
            loss = step if loss is None else loss + step
        return loss
    return loss_of


def build_dlfree():
    import dlfree as dl
    import dlfree.nn as nn
    from dlfree.nn import FlowBuilder

    model = (FlowBuilder.from_(nn.Linear(WIDTH, WIDTH))
             .using("h").through(nn.RNNCell(WIDTH, WIDTH)).tag("h")
             .through(nn.Linear(WIDTH, CLASSES)).build())
    calls = [tuple(dl.tensor(a) for a in graph_nets.batch((BATCH, WIDTH), CLASSES, seed=t))
             for t in range(CALLS)]
    return graph_nets.dlfree_step(model, _sequence_loss(calls, lambda m: m.reset()))


def build_torch():
    import torch
    from torch import nn

    class Feedback(nn.Module):
        def __init__(self):
            super().__init__()
            self.add_module("0", nn.Linear(WIDTH, WIDTH))
            self.add_module("1", nn.RNNCell(WIDTH, WIDTH))
            self.add_module("2", nn.Linear(WIDTH, CLASSES))
            self.h = None

        def forward(self, x):
            proj, cell, head = self.children()
            x = proj(x)
            self.h = cell(x, torch.zeros_like(x) if self.h is None else self.h)
            return head(self.h)

    def reset(model):
        model.h = None

    calls = [tuple(torch.from_numpy(a) for a in graph_nets.batch((BATCH, WIDTH), CLASSES,
                                                                  seed=t))
             for t in range(CALLS)]
    return graph_nets.torch_step(Feedback(), _sequence_loss(calls, reset))


BUILDERS = {"dlfree": build_dlfree, "torch": build_torch}
