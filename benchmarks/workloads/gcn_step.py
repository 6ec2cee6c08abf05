"""One training step of a two-layer GCN (Kipf & Welling) on a graph of 100,000 nodes and
1,000,000 random edges, against PyTorch Geometric on the CPU.

16 input features, 16 hidden, 8 classes, ReLU between the layers; the normalised graph
is cached by both (`cached=True`, as for a fixed graph), so a step is the two sparse
propagations forward and back, the cross-entropy over every node and an SGD update.
"""

from . import graph_model
from .plan import Plan

NAME = "gcn_step"
DESCRIPTION = "2-layer GCN step (16-16-8), 100k nodes, 1M edges, float32"
UNIT = "ms"
REFERENCE = "torch_geometric"
TARGETS = {"torch_geometric": 1.5}
PLANS = {"full": Plan(rounds=7, iterations=3, warmup=2),
         "quick": Plan(rounds=3, iterations=1, warmup=1)}

NODES, EDGES, FEATURES, HIDDEN, CLASSES = 100_000, 1_000_000, 16, 16, 8


def _problem():
    return graph_model.graph(NODES, EDGES, FEATURES, CLASSES)


def _pyg_model():
    import torch

    pyg = graph_model.import_pyg()
    torch.manual_seed(0)
    return graph_model.two_layers(torch.nn, pyg.GCNConv(FEATURES, HIDDEN, cached=True),
                                  pyg.GCNConv(HIDDEN, CLASSES, cached=True), torch.relu)


def build_dlfree():
    """dlfree.nn.geometric.GCNConv twice, with PyG's initial weights."""
    from dlfree import nn
    from dlfree.nn import geometric as G

    model = graph_model.two_layers(nn, G.GCNConv(FEATURES, HIDDEN, cached=True),
                                   G.GCNConv(HIDDEN, CLASSES, cached=True),
                                   lambda h: h.relu())
    graph_model.same_weights(_pyg_model(), model)
    return graph_model.dlfree_step(model, _problem())


def build_torch_geometric():
    """torch_geometric.nn.GCNConv twice (scatter on torch's kernels, no torch_scatter)."""
    return graph_model.torch_step(_pyg_model(), _problem())


BUILDERS = {"dlfree": build_dlfree, "torch_geometric": build_torch_geometric}
