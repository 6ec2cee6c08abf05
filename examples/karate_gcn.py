"""Node classification on Zachary's karate club with a two-layer GCN (Kipf & Welling 2017).

The 34 members of the club (the graph networkx ships) split into two factions, Mr. Hi's
and the officer's. Only four members' factions are given for training, two per faction;
each member's input is its one-hot identity, so the network can tell them apart only by
whom they are linked to. Two GCNConv layers learn from the labelled four and the graph,
and the accuracy on the other 30 members is printed.

    python examples/karate_gcn.py [--epochs N]

Needs networkx (for the graph), dlfree-nn and dlfree-optim.
"""

import argparse

import dlfree as dl
from dlfree import functional as F
from dlfree import nn, optim
from dlfree.nn import geometric as G

import networkx as nx
import numpy as np

TRAIN = [0, 1, 32, 33]  # Mr. Hi and his closest ally; the officer and his


class GCN(nn.Module):
    def __init__(self, in_channels: int, hidden: int, classes: int):
        super().__init__()
        self.conv1 = G.GCNConv(in_channels, hidden, cached=True)
        self.conv2 = G.GCNConv(hidden, classes, cached=True)
        self.dropout = nn.Dropout(0.5)

    def forward(self, x, edge_index):
        h = self.dropout(self.conv1(x, edge_index).relu())
        return self.conv2(h, edge_index)


def karate():
    """(edge_index with both directions of each friendship, faction labels 0/1)."""
    graph = nx.karate_club_graph()
    edges = np.array(graph.edges(), dtype=np.int64).T
    labels = np.array([graph.nodes[n]["club"] != "Mr. Hi" for n in graph.nodes],
                      dtype=np.int64)
    return G.to_undirected(dl.tensor(edges)), dl.tensor(labels)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=100)
    args = parser.parse_args()
    dl.manual_seed(0)
    edge_index, labels = karate()
    n = labels.shape[0]
    x = dl.eye(n)
    model = GCN(n, 16, 2)
    opt = optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
    train = dl.tensor(TRAIN)
    for epoch in range(args.epochs):
        model.train()
        loss = F.cross_entropy(model(x, edge_index)[train], labels[train])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if (epoch + 1) % 20 == 0:
            print(f"epoch {epoch + 1}: loss {loss.item():.4f}")
    model.eval()
    predicted = model(x, edge_index).argmax(1).numpy()
    rest = np.setdiff1d(np.arange(n), TRAIN)
    accuracy = float((predicted[rest] == labels.numpy()[rest]).mean())
    print(f"accuracy on the {len(rest)} unlabelled members {100 * accuracy:.1f}%")


if __name__ == "__main__":
    main()
