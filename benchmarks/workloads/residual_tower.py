"""A residual tower: a projection, 8 residual blocks x + W2 relu(W1 x), a classifier head;
one SGD step (forward, cross-entropy, backward, update), batch 64, width 256, float32.

dl.free states it with `FlowBuilder.also`; torch is the same network hand-written, and so
is "dlfree_by_hand" (a dlfree.nn Module with its own forward): the graph's ratio to it is
what running a compiled plan costs beyond calling the same modules by hand.
"""

from . import graph_nets
from .plan import Plan

NAME = "residual_tower"
DESCRIPTION = "SGD step, graph: 8 residual blocks (.also) of 256, batch 64, vs torch by hand"
UNIT = "ms"
REFERENCE = "torch"
TARGETS = {"torch": 1.3, "dlfree_by_hand": 1.1}
LIBRARIES = {"dlfree_by_hand": "dlfree"}
PLANS = {"full": Plan(rounds=15, iterations=10, warmup=5),
         "quick": Plan(rounds=3, iterations=3, warmup=2)}

WIDTH, BLOCKS, BATCH, CLASSES = 256, 8, 64, 10


def build_dlfree():
    import dlfree as dl
    import dlfree.nn as nn
    from dlfree.nn import FlowBuilder

    flow = FlowBuilder.from_(nn.Linear(WIDTH, WIDTH))
    for _ in range(BLOCKS):
        flow = flow.also(nn.Sequential(nn.Linear(WIDTH, WIDTH), nn.ReLU(),
                                       nn.Linear(WIDTH, WIDTH)))
    model = flow.through(nn.Linear(WIDTH, CLASSES)).build()
    x, y = (dl.tensor(a) for a in graph_nets.batch((BATCH, WIDTH), CLASSES))
    return graph_nets.dlfree_step(model, lambda m, F: F.cross_entropy(m(x), y))


def _tower(nn):
    """The tower hand-written on `nn` (torch.nn or dlfree.nn: the same code runs on both),
    with the graph's state_dict names."""

    class Tower(nn.Module):
        def __init__(self):
            super().__init__()
            self.add_module("0", nn.Linear(WIDTH, WIDTH))
            for i in range(1, BLOCKS + 1):
                self.add_module(str(i), nn.Sequential(nn.Linear(WIDTH, WIDTH), nn.ReLU(),
                                                      nn.Linear(WIDTH, WIDTH)))
            self.add_module(str(BLOCKS + 1), nn.Linear(WIDTH, CLASSES))

        def forward(self, x):
            layers = list(self.children())
            x = layers[0](x)
            for block in layers[1:-1]:
                x = x + block(x)
            return layers[-1](x)

    return Tower()


def build_dlfree_by_hand():
    import dlfree as dl
    import dlfree.nn as nn

    x, y = (dl.tensor(a) for a in graph_nets.batch((BATCH, WIDTH), CLASSES))
    return graph_nets.dlfree_step(_tower(nn), lambda m, F: F.cross_entropy(m(x), y))


def build_torch():
    import torch
    from torch import nn

    x, y = (torch.from_numpy(a) for a in graph_nets.batch((BATCH, WIDTH), CLASSES))
    return graph_nets.torch_step(_tower(nn), lambda m, F: F.cross_entropy(m(x), y))


BUILDERS = {"dlfree": build_dlfree, "dlfree_by_hand": build_dlfree_by_hand,
            "torch": build_torch}
