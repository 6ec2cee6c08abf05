"""Attention graph convolutions: GATConv (Velickovic et al. 2018), GATv2Conv (Brody, Alon &
Yahav 2022) and TransformerConv (Shi et al. 2021), with PyTorch Geometric's arguments and
state_dict names. Each edge's score is normalised by `softmax` over the edges into its
target node, then weights the source's message."""

from __future__ import annotations

import math

import dlfree as dl
from dlfree import functional as F

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
        check_edge_index(edge_index, self.layer)
        if edge_attr is not None and edge_attr.ndim == 1:
            edge_attr = edge_attr.reshape(-1, 1)
        if self.add_self_loops:
            edge_index, edge_attr = _with_loops(edge_index, edge_attr, x.shape[0],
                                                self.fill_value)
        # sorted by target once here, so that the step's grouped reductions by target (the
        # softmax's max and sum, the aggregation, and their adjoints) find their ids sorted
        # and skip a sort each: on a 500k-edge graph those sorts were most of a GAT step
        order = dl.argsort(edge_index[1], stable=True)
        edge_index = edge_index[:, order]
        return edge_index, (None if edge_attr is None else edge_attr[order])

    def _aggregate(self, scores, values, edge_index, n):
        """softmax the (E, heads) scores per target, drop some in training, weight the
        (E, heads, C) values by them and sum at the targets."""
        alpha = softmax(scores, edge_index[1], num_nodes=n)
        alpha = F.dropout(alpha, self.dropout, self.training)
        out = scatter(values * alpha.unsqueeze(-1), edge_index[1], 0, n, "sum")
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
        edge_index, edge_attr = self._graph(x, edge_index, edge_attr)
        h = self.lin(x).reshape(-1, self.heads, self.out_channels)
        src, dst = edge_index[0], edge_index[1]
        a_src = (h * self.att_src).sum(-1)
        a_dst = (h * self.att_dst).sum(-1)
        scores = a_src[src] + a_dst[dst]
        if self.edge_dim is not None and edge_attr is not None:
            e = self.lin_edge(edge_attr).reshape(-1, self.heads, self.out_channels)
            scores = scores + (e * self.att_edge).sum(-1)
        scores = F.leaky_relu(scores, self.negative_slope)
        out, alpha = self._aggregate(scores, h[src], edge_index, x.shape[0])
        return (out, (edge_index, alpha)) if return_attention_weights else out


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
        edge_index, edge_attr = self._graph(x, edge_index, edge_attr)
        shape = (-1, self.heads, self.out_channels)
        x_l = self.lin_l(x).reshape(*shape)
        x_r = x_l if self.share_weights else self.lin_r(x).reshape(*shape)
        src, dst = edge_index[0], edge_index[1]
        messages = x_l[src]
        z = messages + x_r[dst]
        if self.edge_dim is not None and edge_attr is not None:
            z = z + self.lin_edge(edge_attr).reshape(*shape)
        scores = (F.leaky_relu(z, self.negative_slope) * self.att).sum(-1)
        out, alpha = self._aggregate(scores, messages, edge_index, x.shape[0])
        return (out, (edge_index, alpha)) if return_attention_weights else out


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
