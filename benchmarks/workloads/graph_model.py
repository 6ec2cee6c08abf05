"""What the graph workloads share: a fixed random graph, node features and labels, the
two-layer models built in dl.free and in PyTorch Geometric from the same weights, and the
training step (forward, cross-entropy over all nodes, backward, SGD step)."""

import warnings

import numpy as np

LR = 0.1


def graph(nodes: int, edges: int, features: int, classes: int):
    """(edge_index (2, E) int64, features (N, F) float32, labels (N,)): random edges
    between random nodes, seed 0."""
    rng = np.random.default_rng(0)
    edge_index = rng.integers(0, nodes, (2, edges), dtype=np.int64)
    x = rng.standard_normal((nodes, features), dtype=np.float32)
    return edge_index, x, rng.integers(0, classes, nodes)


def import_pyg():
    """torch_geometric.nn, imported with its import-time deprecation warnings silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import torch_geometric.nn

    return torch_geometric.nn


def same_weights(theirs, ours):
    """Copy the PyG model's initial weights into the dl.free one (by state_dict name)."""
    ours.load_state_dict({k: v.detach().numpy().copy() for k, v in theirs.state_dict().items()})


def training_step(model, problem, as_tensor, F, optimizer):
    """A training step over `problem` (edge_index, x, labels) that returns the loss, in a
    framework with torch's API: dl.free and torch run this same code, given their tensor
    constructor, functional module and SGD class."""
    edge_index, x, y = (as_tensor(a) for a in problem)
    opt = optimizer(model.parameters(), lr=LR)

    def step():
        loss = F.cross_entropy(model(x, edge_index), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    return step


def dlfree_step(model, problem):
    import dlfree as dl
    import dlfree.functional as F
    from dlfree import optim

    return training_step(model, problem, dl.tensor, F, optim.SGD)


def torch_step(model, problem):
    import torch

    return training_step(model, problem, torch.from_numpy, torch.nn.functional,
                         torch.optim.SGD)


def two_layers(lib, first, second, activation):
    """A module of `lib` (dlfree.nn or torch.nn) applying first, the activation, second."""

    class TwoLayers(lib.Module):
        def __init__(self):
            super().__init__()
            self.first, self.second = first, second

        def forward(self, x, edge_index):
            return self.second(activation(self.first(x, edge_index)), edge_index)

    return TwoLayers()
