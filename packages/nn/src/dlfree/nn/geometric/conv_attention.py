"""Attention graph convolutions: GATConv (Velickovic et al. 2018), GATv2Conv (Brody, Alon &
Yahav 2022) and TransformerConv (Shi et al. 2021), with PyTorch Geometric's arguments and
state_dict names. Each edge's score is normalised by a softmax over the edges into its
target node, then weights the source's message; GAT and GATv2 run on the fused message
ops of `message.py`, over a graph they keep between calls."""

from __future__ import annotations

import math

import dlfree as dl
from dlfree import functional as F
from dlfree.ops.message import EdgeGraph, edge_softmax, gather_rows, message_sum

from .. import init
from ..module import Module
from ._common import check_count, glorot_linear, zero_bias
from .utils import add_self_loops, check_edge_index, remove_self_loops, scatter, softmax

__all__ = ["GATConv", "GATv2Conv", "TransformerConv"]


def _with_loops(edge_index, edge_attr, n, fill_value):
    """The edges without their self loops, then one loop per node (attributes filled as
    `add_self_loops` does): GAT attends to each node itself exactly once."""
    edge_index, edge_attr = remove_self_loops(edge_index, edge_attr)
    return add_self_loops(edge_index, edge_attr, fill_value, n)


def _combine_heads(out, heads: int, channels: int, concat: bool):
    """(N, heads, channels) as (N, heads * channels) with `concat`, else the heads' mean."""
    return out.reshape(-1, heads * channels) if concat else out.mean(1)


def _attention_parameter(heads: int, channels: int):
    p = dl.Parameter(dl.empty(1, heads, channels))
    init.xavier_uniform_(p)
    return p


class _GATBase(Module):
    """The arguments GATConv and GATv2Conv share."""

    layer = ""

    def _setup(self, in_channels, out_channels, heads, concat, negative_slope, dropout,
               add_self_loops, edge_dim, fill_value):
        self.in_channels = check_count(in_channels, "in_channels", self.layer)
        self.out_channels = check_count(out_channels, "out_channels", self.layer)
        self.heads = check_count(heads, "heads", self.layer)
        self.concat, self.negative_slope, self.dropout = concat, negative_slope, dropout
        self.add_self_loops, self.edge_dim, self.fill_value = add_self_loops, edge_dim, \
            fill_value

    def _graph(self, x, edge_index, edge_attr):
        """The EdgeGraph the layer attends over (self loops added unless told not to,
        sorted by target) and the edge attributes in its order. Without attributes the
        graph is kept for the next call with the same edge_index tensor, unchanged and
        with as many nodes, so that repeated steps on one graph skip the loops and the
        sorts."""
        check_edge_index(edge_index, self.layer)
        n = x.shape[0]
        key = (edge_index._vc[0], n, self.add_self_loops)
        cache = self.__dict__.get("_graph_cache")
        if edge_attr is None and cache is not None and cache[0] is edge_index and \
                cache[1] == key:
            return cache[2], None
        if edge_attr is not None and edge_attr.ndim == 1:
            edge_attr = edge_attr.reshape(-1, 1)
        if self.add_self_loops:
            edge_index_, edge_attr = _with_loops(edge_index, edge_attr, n, self.fill_value)
        else:
            edge_index_ = edge_index
        # sorted by target once, so that the softmax and the aggregation reduce runs
        order = dl.argsort(edge_index_[1], stable=True)
        graph = EdgeGraph(edge_index_[:, order], n)
        if edge_attr is None:
            self._graph_cache = (edge_index, key, graph)
            return graph, None
        return graph, edge_attr[order]

    def _aggregate(self, scores, values, graph):
        """softmax the (E, heads) scores per target, drop some in training, weight the
        (N, heads, C) source values by them and sum at the targets."""
        alpha = edge_softmax(scores, graph)
        alpha = F.dropout(alpha, self.dropout, self.training)
        out = message_sum(values, alpha, graph, "dst")
        out = _combine_heads(out, self.heads, self.out_channels, self.concat)
        return (out if self.bias is None else out + self.bias), alpha

    def extra_repr(self) -> str:
        return f"{self.in_channels}, {self.out_channels}, heads={self.heads}"


class GATConv(_GATBase):
    """Graph attention: score(j -> i) = LeakyReLU(a_src . W x_j + a_dst . W x_i
    [+ a_edge . W_e e_ji]), softmax over the edges into i, out_i = sum_j alpha W x_j,
    per head; heads concatenated or averaged. Self loops are added (their attributes the
    mean of the node's incoming ones, by default) unless add_self_loops=False."""

    layer = "GATConv"

    def __init__(self, in_channels: int, out_channels: int, heads: int = 1,
                 concat: bool = True, negative_slope: float = 0.2, dropout: float = 0.0,
                 add_self_loops: bool = True, edge_dim: int | None = None,
                 fill_value="mean", bias: bool = True):
        super().__init__()
        self._setup(in_channels, out_channels, heads, concat, negative_slope, dropout,
                    add_self_loops, edge_dim, fill_value)
        width = heads * out_channels
        self.att_src = _attention_parameter(heads, out_channels)
        self.att_dst = _attention_parameter(heads, out_channels)
        if edge_dim is not None:
            self.att_edge = _attention_parameter(heads, out_channels)
        zero_bias(self, width if concat else out_channels, bias)
        self.lin = glorot_linear(in_channels, width, bias=False)
        if edge_dim is not None:
            self.lin_edge = glorot_linear(edge_dim, width, bias=False)

    def forward(self, x, edge_index, edge_attr=None, return_attention_weights=None):
        graph, edge_attr = self._graph(x, edge_index, edge_attr)
        h = self.lin(x).reshape(-1, self.heads, self.out_channels)
        a_src = (h * self.att_src).sum(-1)
        a_dst = (h * self.att_dst).sum(-1)
        scores = gather_rows(a_src, graph, "src") + gather_rows(a_dst, graph, "dst")
        if self.edge_dim is not None and edge_attr is not None:
            e = self.lin_edge(edge_attr).reshape(-1, self.heads, self.out_channels)
            scores = scores + (e * self.att_edge).sum(-1)
        scores = F.leaky_relu(scores, self.negative_slope)
        out, alpha = self._aggregate(scores, h, graph)
        return (out, (graph.edge_index, alpha)) if return_attention_weights else out


class GATv2Conv(_GATBase):
    """Dynamic graph attention: score(j -> i) = a . LeakyReLU(W_l x_j + W_r x_i
    [+ W_e e_ji]), so the ranking of neighbours can depend on the node attending;
    messages are W_l x_j. `share_weights` uses one matrix for both sides."""

    layer = "GATv2Conv"

    def __init__(self, in_channels: int, out_channels: int, heads: int = 1,
                 concat: bool = True, negative_slope: float = 0.2, dropout: float = 0.0,
                 add_self_loops: bool = True, edge_dim: int | None = None,
                 fill_value="mean", bias: bool = True, share_weights: bool = False):
        super().__init__()
        self._setup(in_channels, out_channels, heads, concat, negative_slope, dropout,
                    add_self_loops, edge_dim, fill_value)
        self.share_weights = share_weights
        width = heads * out_channels
        self.att = _attention_parameter(heads, out_channels)
        zero_bias(self, width if concat else out_channels, bias)
        self.lin_l = glorot_linear(in_channels, width, bias=bias)
        self.lin_r = self.lin_l if share_weights else glorot_linear(in_channels, width,
                                                                    bias=bias)
        if edge_dim is not None:
            self.lin_edge = glorot_linear(edge_dim, width, bias=False)

    def forward(self, x, edge_index, edge_attr=None, return_attention_weights=None):
        graph, edge_attr = self._graph(x, edge_index, edge_attr)
        shape = (-1, self.heads, self.out_channels)
        x_l = self.lin_l(x).reshape(*shape)
        x_r = x_l if self.share_weights else self.lin_r(x).reshape(*shape)
        z = gather_rows(x_l, graph, "src") + gather_rows(x_r, graph, "dst")
        if self.edge_dim is not None and edge_attr is not None:
            z = z + self.lin_edge(edge_attr).reshape(*shape)
        scores = (F.leaky_relu(z, self.negative_slope) * self.att).sum(-1)
        out, alpha = self._aggregate(scores, x_l, graph)
        return (out, (graph.edge_index, alpha)) if return_attention_weights else out


class TransformerConv(Module):
    """Graph transformer: per head, alpha_ij = softmax_j((W_q x_i) . (W_k x_j + W_e e_ij) /
    sqrt(C)) over the edges into i, out_i = sum_j alpha_ij (W_v x_j + W_e e_ij), heads
    concatenated or averaged; then the root term W_s x_i is added, or with `beta` mixed
    in by a learned gate beta = sigmoid(w . [out, W_s x_i, out - W_s x_i])."""

    def __init__(self, in_channels: int, out_channels: int, heads: int = 1,
                 concat: bool = True, beta: bool = False, dropout: float = 0.0,
                 edge_dim: int | None = None, bias: bool = True, root_weight: bool = True):
        super().__init__()
        self.in_channels = check_count(in_channels, "in_channels", "TransformerConv")
        self.out_channels = check_count(out_channels, "out_channels", "TransformerConv")
        self.heads = check_count(heads, "heads", "TransformerConv")
        self.concat, self.beta, self.dropout = concat, beta and root_weight, dropout
        self.edge_dim, self.root_weight = edge_dim, root_weight
        width = heads * out_channels
        self.lin_key = glorot_linear(in_channels, width, bias=bias)
        self.lin_query = glorot_linear(in_channels, width, bias=bias)
        self.lin_value = glorot_linear(in_channels, width, bias=bias)
        if edge_dim is not None:
            self.lin_edge = glorot_linear(edge_dim, width, bias=False)
        out_width = width if concat else out_channels
        # PyG keeps lin_skip even with root_weight=False (unused then), so state_dicts match
        self.lin_skip = glorot_linear(in_channels, out_width, bias=bias)
        if self.beta:
            self.lin_beta = glorot_linear(3 * out_width, 1, bias=False)

    def forward(self, x, edge_index, edge_attr=None, return_attention_weights=None):
        check_edge_index(edge_index, "TransformerConv")
        shape = (-1, self.heads, self.out_channels)
        n = x.shape[0]
        src, dst = edge_index[0], edge_index[1]
        query = self.lin_query(x).reshape(*shape)[dst]
        key = self.lin_key(x).reshape(*shape)[src]
        value = self.lin_value(x).reshape(*shape)[src]
        if self.edge_dim is not None and edge_attr is not None:
            e = self.lin_edge(edge_attr.reshape(edge_attr.shape[0], -1)).reshape(*shape)
            key, value = key + e, value + e
        scores = (query * key).sum(-1) / math.sqrt(self.out_channels)
        alpha = F.dropout(softmax(scores, dst, num_nodes=n), self.dropout, self.training)
        out = scatter(value * alpha.unsqueeze(-1), dst, 0, n, "sum")
        out = _combine_heads(out, self.heads, self.out_channels, self.concat)
        if self.root_weight:
            skip = self.lin_skip(x)
            if self.beta:
                gate = self.lin_beta(dl.cat([out, skip, out - skip], -1)).sigmoid()
                out = gate * skip + (1 - gate) * out
            else:
                out = out + skip
        return (out, (edge_index, alpha)) if return_attention_weights else out

    def extra_repr(self) -> str:
        return f"{self.in_channels}, {self.out_channels}, heads={self.heads}"
