"""Iterative refinement: a projection, one refinement block tanh(W x + b) applied 6 times
(weights shared across passes, backpropagation through every pass), a classifier head; one
SGD step, batch 64, width 128, float32.

dl.free states it with `FlowBuilder.loop(...).for_n(6)`; torch is the same network
hand-written.
"""

from . import graph_nets
from .plan import Plan

NAME = "iterative_refine"
DESCRIPTION = "SGD step, graph: loop of a tanh block 6 times, 128 wide, batch 64, vs torch"
UNIT = "ms"
REFERENCE = "torch"
TARGETS = {"torch": 1.3}
PLANS = {"full": Plan(rounds=15, iterations=10, warmup=5),
         "quick": Plan(rounds=3, iterations=3, warmup=2)}

WIDTH, PASSES, BATCH, CLASSES = 128, 6, 64, 10


def build_dlfree():
    import dlfree as dl
    import dlfree.nn as nn
    from dlfree.nn import FlowBuilder

    model = (FlowBuilder.from_(nn.Linear(WIDTH, WIDTH))
             .loop(nn.Sequential(nn.Linear(WIDTH, WIDTH), nn.Tanh())).for_n(PASSES)
             .through(nn.Linear(WIDTH, CLASSES)).build())
    x, y = (dl.tensor(a) for a in graph_nets.batch((BATCH, WIDTH), CLASSES))
    return graph_nets.dlfree_step(model, lambda m, F: F.cross_entropy(m(x), y))


def build_torch():
    import torch
    from torch import nn

    class Loop(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Sequential(nn.Linear(WIDTH, WIDTH), nn.Tanh())

        def forward(self, x):
            for _ in range(PASSES):
                x = self.body(x)
            return x

    model = nn.Sequential(nn.Linear(WIDTH, WIDTH), Loop(), nn.Linear(WIDTH, CLASSES))
    x, y = (torch.from_numpy(a) for a in graph_nets.batch((BATCH, WIDTH), CLASSES))
    return graph_nets.torch_step(model, lambda m, F: F.cross_entropy(m(x), y))


BUILDERS = {"dlfree": build_dlfree, "torch": build_torch}
