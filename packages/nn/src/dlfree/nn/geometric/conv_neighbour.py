"""Graph convolutions that aggregate the neighbours' features directly: SAGEConv
(Hamilton, Ying & Leskovec 2017), GINConv and GINEConv (Xu et al. 2019; Hu et al. 2020),
GraphConv (Morris et al. 2019) and EdgeConv (Wang et al. 2019), with PyTorch Geometric's
arguments and state_dict names."""

from __future__ import annotations

import dlfree as dl
from dlfree import functional as F

from ..module import Module
from ._common import aggregation, check_count, glorot_linear
from .utils import check_edge_index, scatter

__all__ = ["SAGEConv", "GINConv", "GINEConv", "GraphConv", "EdgeConv"]


def _first_in_features(module) -> int | None:
    """The input width of `module` or of its first layer (what GINEConv maps edges to)."""
    for m in module.modules():
        if hasattr(m, "in_features"):
            return m.in_features
    return None


class SAGEConv(Module):
    """GraphSAGE: x'_i = W_l aggr_{j -> i} x_j + W_r x_i, aggr "mean", "max", "sum" (or
    another `scatter` reduction); `project` first maps the neighbours through ReLU(W x_j
    + b), `normalize` scales each output row to unit L2 norm, `root_weight=False` drops
    the W_r term."""

    def __init__(self, in_channels: int, out_channels: int, aggr: str = "mean",
                 normalize: bool = False, root_weight: bool = True, project: bool = False,
                 bias: bool = True):
        super().__init__()
        self.in_channels = check_count(in_channels, "in_channels", "SAGEConv")
        self.out_channels = check_count(out_channels, "out_channels", "SAGEConv")
        self.aggr = aggregation(aggr, "SAGEConv")
        self.normalize, self.root_weight, self.project = normalize, root_weight, project
        if project:
            self.lin = glorot_linear(in_channels, in_channels, bias=True)
        self.lin_l = glorot_linear(in_channels, out_channels, bias=bias)
        if root_weight:
            self.lin_r = glorot_linear(in_channels, out_channels, bias=False)

    def forward(self, x, edge_index, size=None):
        check_edge_index(edge_index, "SAGEConv")
        source = self.lin(x).relu() if self.project else x
        out = scatter(source[edge_index[0]], edge_index[1], 0, x.shape[0], self.aggr)
        out = self.lin_l(out)
        if self.root_weight:
            out = out + self.lin_r(x)
        return F.normalize(out, p=2.0, dim=-1) if self.normalize else out

    def extra_repr(self) -> str:
        return f"{self.in_channels}, {self.out_channels}, aggr={self.aggr!r}"


class GINConv(Module):
    """Graph isomorphism: x'_i = nn((1 + eps) x_i + sum_{j -> i} x_j), `eps` a buffer or,
    with `train_eps`, a parameter."""

    def __init__(self, nn: Module, eps: float = 0.0, train_eps: bool = False):
        super().__init__()
        self.nn = nn
        self.initial_eps, self.train_eps = eps, train_eps
        if train_eps:
            self.eps = dl.Parameter(dl.full((1,), float(eps)))
        else:
            self.register_buffer("eps", dl.full((1,), float(eps)))

    def _messages(self, x, edge_index, edge_attr):
        return x[edge_index[0]]

    def forward(self, x, edge_index, edge_attr=None, size=None):
        check_edge_index(edge_index, type(self).__name__)
        out = scatter(self._messages(x, edge_index, edge_attr), edge_index[1], 0,
                      x.shape[0], "sum")
        return self.nn(out + (1 + self.eps) * x)

    def extra_repr(self) -> str:
        return f"eps={self.initial_eps}, train_eps={self.train_eps}"


class GINEConv(GINConv):
    """GIN with edge features: x'_i = nn((1 + eps) x_i + sum_{j -> i} ReLU(x_j + e_ji));
    with `edge_dim` the edge features are first mapped to the node width by a Linear
    `lin`."""

    def __init__(self, nn: Module, eps: float = 0.0, train_eps: bool = False,
                 edge_dim: int | None = None):
        super().__init__(nn, eps, train_eps)
        self.edge_dim = edge_dim
        if edge_dim is not None:
            width = _first_in_features(nn)
            if width is None:
                raise ValueError("GINEConv: with edge_dim, nn must contain a layer with "
                                 "in_features (e.g. a Linear) to size the edge projection")
            self.lin = glorot_linear(edge_dim, width)

    def _messages(self, x, edge_index, edge_attr):
        if edge_attr is None:
            raise ValueError("GINEConv: edge_attr is required (one row per edge)")
        if self.edge_dim is not None:
            edge_attr = self.lin(edge_attr)
        if edge_attr.shape[-1] != x.shape[-1]:
            raise dl.ShapeError(f"GINEConv: edge_attr has {edge_attr.shape[-1]} features but "
                                f"the nodes have {x.shape[-1]}; set edge_dim to map them")
        return (x[edge_index[0]] + edge_attr).relu()


class GraphConv(Module):
    """x'_i = W_1 x_i + W_2 aggr_{j -> i} e_ji x_j (Weisfeiler-Leman network), aggr "add"
    by default, edges weighted by `edge_weight` when given."""

    def __init__(self, in_channels: int, out_channels: int, aggr: str = "add",
                 bias: bool = True):
        super().__init__()
        self.in_channels = check_count(in_channels, "in_channels", "GraphConv")
        self.out_channels = check_count(out_channels, "out_channels", "GraphConv")
        self.aggr = aggregation(aggr, "GraphConv")
        self.lin_rel = glorot_linear(in_channels, out_channels, bias=bias)
        self.lin_root = glorot_linear(in_channels, out_channels, bias=False)

    def forward(self, x, edge_index, edge_weight=None, size=None):
        check_edge_index(edge_index, "GraphConv")
        messages = x[edge_index[0]]
        if edge_weight is not None:
            messages = messages * edge_weight.reshape(-1, 1)
        out = scatter(messages, edge_index[1], 0, x.shape[0], self.aggr)
        return self.lin_rel(out) + self.lin_root(x)

    def extra_repr(self) -> str:
        return f"{self.in_channels}, {self.out_channels}"


class EdgeConv(Module):
    """Dynamic graph CNN: x'_i = aggr_{j -> i} nn([x_i, x_j - x_i]), aggr "max" by default."""

    def __init__(self, nn: Module, aggr: str = "max"):
        super().__init__()
        self.nn = nn
        self.aggr = aggregation(aggr, "EdgeConv")

    def forward(self, x, edge_index):
        check_edge_index(edge_index, "EdgeConv")
        x_i, x_j = x[edge_index[1]], x[edge_index[0]]
        messages = self.nn(dl.cat([x_i, x_j - x_i], -1))
        return scatter(messages, edge_index[1], 0, x.shape[0], self.aggr)

    def extra_repr(self) -> str:
        return f"aggr={self.aggr!r}"
