"""Spectral graph convolutions: GCNConv (Kipf & Welling 2017) and ChebConv (Defferrard,
Bresson & Vandergheynst 2016), with PyTorch Geometric's arguments and state_dict names."""

from __future__ import annotations

import dlfree as dl
from dlfree.ops.message import EdgeGraph, message_sum

from ..containers import ModuleList
from ..module import Module
from ._common import check_choice, check_count, glorot_linear, zero_bias
from .utils import check_edge_index, gcn_norm, remove_self_loops, scatter

__all__ = ["GCNConv", "ChebConv"]


def _by_target(edge_index, edge_weight, n: int):
    """The normalised edges sorted by target as an EdgeGraph, and their weights in its
    order: the weighted sum at the targets then reduces runs and sorts nothing (once per
    call, or once for good with `cached`)."""
    order = dl.as_tensor(edge_index.device.xp.argsort(edge_index[1].array, kind="stable"),
                         device=edge_index.device)
    return EdgeGraph(edge_index[:, order], n), edge_weight[order]


class GCNConv(Module):
    """x' = D^-1/2 (A + I) D^-1/2 x W^T + b: each node averages its neighbours and itself,
    weighted by the inverse square roots of both degrees. `improved` gives the loops weight
    2; `cached` keeps the normalised graph of the first call (for a fixed graph, as in
    transductive node classification); `normalize=False` uses the edge weights as given."""

    def __init__(self, in_channels: int, out_channels: int, improved: bool = False,
                 cached: bool = False, add_self_loops: bool = True, normalize: bool = True,
                 bias: bool = True):
        super().__init__()
        self.in_channels = check_count(in_channels, "in_channels", "GCNConv")
        self.out_channels = check_count(out_channels, "out_channels", "GCNConv")
        self.improved, self.cached = improved, cached
        self.add_self_loops, self.normalize = add_self_loops, normalize
        zero_bias(self, out_channels, bias)
        self.lin = glorot_linear(in_channels, out_channels, bias=False)
        self._cached_graph = None

    def _normalised(self, x, edge_index, edge_weight):
        """The normalised graph (EdgeGraph, weights): the kept one, with `cached`."""
        if self._cached_graph is not None:
            return self._cached_graph
        graph = _by_target(*gcn_norm(edge_index, edge_weight, x.shape[0], self.improved,
                                     self.add_self_loops, dtype=x.dtype), x.shape[0])
        if self.cached:
            self._cached_graph = graph
        return graph

    def forward(self, x, edge_index, edge_weight=None):
        check_edge_index(edge_index, "GCNConv")
        x = self.lin(x)
        if self.normalize:
            edges, weight = self._normalised(x, edge_index, edge_weight)
            out = message_sum(x.unsqueeze(1), weight.reshape(-1, 1), edges).squeeze(1)
        else:
            messages = x[edge_index[0]]
            if edge_weight is not None:
                messages = messages * edge_weight.reshape(-1, 1)
            out = scatter(messages, edge_index[1], 0, x.shape[0], "sum")
        return out if self.bias is None else out + self.bias

    def extra_repr(self) -> str:
        return f"{self.in_channels}, {self.out_channels}"


class ChebConv(Module):
    """x' = sum_k T_k(L^) x W_k^T + b, with the Chebyshev polynomials T_k of the scaled
    Laplacian L^ = 2 L / lambda_max - I (L = I - D^-1/2 A D^-1/2 for "sym", I - D^-1 A
    for "rw", D - A for None, which needs lambda_max); K terms, one Linear each."""

    def __init__(self, in_channels: int, out_channels: int, K: int,
                 normalization: str | None = "sym", bias: bool = True):
        super().__init__()
        self.in_channels = check_count(in_channels, "in_channels", "ChebConv")
        self.out_channels = check_count(out_channels, "out_channels", "ChebConv")
        self.K = check_count(K, "K", "ChebConv")
        if normalization is not None:
            check_choice(normalization, "normalization", "ChebConv", ("sym", "rw"))
        self.normalization = normalization
        zero_bias(self, out_channels, bias)
        self.lins = ModuleList([glorot_linear(in_channels, out_channels, bias=False)
                                for _ in range(K)])

    def _scaled_laplacian(self, edge_index, edge_weight, n, lambda_max, dtype):
        """The off-diagonal weights of L^ on the edges, and its diagonal value."""
        edge_index, edge_weight = remove_self_loops(edge_index, edge_weight)
        if edge_weight is None:
            edge_weight = dl.ones(edge_index.shape[1], dtype=dtype, device=edge_index.device)
        row, col = edge_index[0], edge_index[1]
        deg = scatter(edge_weight, row, 0, n, "sum")
        if self.normalization == "sym":
            inv = deg.pow(-0.5)
            inv = inv.masked_fill(inv == float("inf"), 0.0)
            off = -(inv[row] * edge_weight * inv[col])
            diag = 1.0
        elif self.normalization == "rw":
            inv = deg.reciprocal()
            inv = inv.masked_fill(inv == float("inf"), 0.0)
            off, diag = -(inv[row] * edge_weight), 1.0
        else:
            off, diag = -edge_weight, deg
        if lambda_max is None:
            if self.normalization is None:
                raise ValueError("ChebConv: normalization=None needs lambda_max, the largest "
                                 "eigenvalue of the Laplacian D - A")
            lambda_max = 2.0
        return edge_index, off * (2.0 / lambda_max), diag * (2.0 / lambda_max) - 1.0

    def forward(self, x, edge_index, edge_weight=None, batch=None, lambda_max=None):
        check_edge_index(edge_index, "ChebConv")
        n = x.shape[0]
        edge_index, weight, diag = self._scaled_laplacian(edge_index, edge_weight, n,
                                                          lambda_max, x.dtype)

        def laplacian(h):
            spread = scatter(h[edge_index[0]] * weight.reshape(-1, 1), edge_index[1], 0, n)
            if isinstance(diag, dl.Tensor):
                return spread + h * diag.reshape(-1, 1)
            return spread + h * diag if diag else spread

        t_prev, t_cur = x, None
        out = self.lins[0](x)
        if self.K > 1:
            t_cur = laplacian(x)
            out = out + self.lins[1](t_cur)
        for lin in list(self.lins)[2:]:
            t_prev, t_cur = t_cur, 2.0 * laplacian(t_cur) - t_prev
            out = out + lin(t_cur)
        return out if self.bias is None else out + self.bias

    def extra_repr(self) -> str:
        return (f"{self.in_channels}, {self.out_channels}, K={self.K}, "
                f"normalization={self.normalization}")

