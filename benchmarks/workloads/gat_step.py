"""One training step of a two-layer GAT (Velickovic et al.) on a graph of 50,000 nodes and
500,000 random edges, against PyTorch Geometric on the CPU.

16 input features, 4 heads of 8 hidden features (concatenated), ELU, then one head for the
8 classes; self loops added by both layers, no dropout (so the step is deterministic). A
step is forward, cross-entropy over every node, backward and an SGD update.
"""

from . import graph_model
from .plan import Plan

NAME = "gat_step"
DESCRIPTION = "2-layer GAT step (16-4x8-8), 50k nodes, 500k edges, float32"
UNIT = "ms"
REFERENCE = "torch_geometric"
TARGETS = {"torch_geometric": 1.5}
PLANS = {"full": Plan(rounds=7, iterations=3, warmup=2),
         "quick": Plan(rounds=3, iterations=1, warmup=1)}

NODES, EDGES, FEATURES, HEADS, HIDDEN, CLASSES = 50_000, 500_000, 16, 4, 8, 8


def _problem():
    return graph_model.graph(NODES, EDGES, FEATURES, CLASSES)


def _pyg_model():
    import torch

    pyg = graph_model.import_pyg()
    torch.manual_seed(0)
    return graph_model.two_layers(torch.nn, pyg.GATConv(FEATURES, HIDDEN, heads=HEADS),
                                  pyg.GATConv(HEADS * HIDDEN, CLASSES),
                                  torch.nn.functional.elu)


def build_dlfree():
    """dlfree.nn.geometric.GATConv twice, with PyG's initial weights."""
    from dlfree import functional as F
    from dlfree import nn
    from dlfree.nn import geometric as G

    model = graph_model.two_layers(nn, G.GATConv(FEATURES, HIDDEN, heads=HEADS),
                                   G.GATConv(HEADS * HIDDEN, CLASSES), F.elu)
    graph_model.same_weights(_pyg_model(), model)
    return graph_model.dlfree_step(model, _problem())


def build_torch_geometric():
    """torch_geometric.nn.GATConv twice (torch's own scatter kernels)."""
    return graph_model.torch_step(_pyg_model(), _problem())


BUILDERS = {"dlfree": build_dlfree, "torch_geometric": build_torch_geometric}
