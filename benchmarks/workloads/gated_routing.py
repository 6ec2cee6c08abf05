"""Soft routing over experts: a projection, a gate (softmax of a router's logits weighting 4
expert MLPs, summed), a classifier head; one SGD step, batch 64, width 128, float32.

dl.free states it with `FlowBuilder.gate`; torch is the same network hand-written.
"""

from . import graph_nets
from .plan import Plan

NAME = "gated_routing"
DESCRIPTION = "SGD step, graph: gate over 4 expert MLPs of 128, batch 64, vs torch by hand"
UNIT = "ms"
REFERENCE = "torch"
TARGETS = {"torch": 1.3}
PLANS = {"full": Plan(rounds=15, iterations=10, warmup=5),
         "quick": Plan(rounds=3, iterations=3, warmup=2)}

WIDTH, EXPERTS, BATCH, CLASSES = 128, 4, 64, 10


def build_dlfree():
    import dlfree as dl
    import dlfree.nn as nn
    from dlfree.nn import FlowBuilder

    experts = [nn.Sequential(nn.Linear(WIDTH, WIDTH), nn.ReLU(), nn.Linear(WIDTH, WIDTH))
               for _ in range(EXPERTS)]
    model = (FlowBuilder.from_(nn.Linear(WIDTH, WIDTH))
             .gate(nn.Linear(WIDTH, EXPERTS), *experts)
             .through(nn.Linear(WIDTH, CLASSES)).build())
    x, y = (dl.tensor(a) for a in graph_nets.batch((BATCH, WIDTH), CLASSES))
    return graph_nets.dlfree_step(model, lambda m, F: F.cross_entropy(m(x), y))


def build_torch():
    import torch
    from torch import nn

    class Gate(nn.Module):
        def __init__(self):
            super().__init__()
            self.router = nn.Linear(WIDTH, EXPERTS)
            self.experts = nn.ModuleList(
                nn.Sequential(nn.Linear(WIDTH, WIDTH), nn.ReLU(), nn.Linear(WIDTH, WIDTH))
                for _ in range(EXPERTS))

        def forward(self, x):
            weights = torch.softmax(self.router(x), dim=-1)
            outs = torch.stack([expert(x) for expert in self.experts], dim=-1)
            return (outs * weights.unsqueeze(1)).sum(-1)

    model = nn.Sequential(nn.Linear(WIDTH, WIDTH), Gate(), nn.Linear(WIDTH, CLASSES))
    x, y = (torch.from_numpy(a) for a in graph_nets.batch((BATCH, WIDTH), CLASSES))
    return graph_nets.torch_step(model, lambda m, F: F.cross_entropy(m(x), y))


BUILDERS = {"dlfree": build_dlfree, "torch": build_torch}
