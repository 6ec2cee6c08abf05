"""Graph neural networks in PyTorch Geometric's terms: graphs as `edge_index` tensors, the
helpers on them, `Data`/`Batch`, the global pools and the graph convolution layers, with
PyG's constructor arguments and state_dict names so that weights copy over."""

from .conv_attention import GATConv, GATv2Conv, TransformerConv
from .conv_neighbour import EdgeConv, GINConv, GINEConv, GraphConv, SAGEConv
from .conv_spectral import ChebConv, GCNConv
from .data import Batch, Data
from .pool import (
    GlobalAttention,
    SortAggregation,
    global_add_pool,
    global_max_pool,
    global_mean_pool,
)
from .utils import (
    add_remaining_self_loops,
    add_self_loops,
    coalesce,
    degree,
    gcn_norm,
    maybe_num_nodes,
    remove_self_loops,
    scatter,
    softmax,
    to_dense_batch,
    to_undirected,
)

LAYERS = ("GCNConv", "ChebConv", "GATConv", "GATv2Conv", "TransformerConv", "SAGEConv",
          "GINConv", "GINEConv", "GraphConv", "EdgeConv", "SortAggregation", "GlobalAttention")

__all__ = [*LAYERS, "Batch", "Data", "global_add_pool", "global_max_pool", "global_mean_pool",
           "add_remaining_self_loops", "add_self_loops", "coalesce", "degree", "gcn_norm",
           "maybe_num_nodes", "remove_self_loops", "scatter", "softmax", "to_dense_batch",
           "to_undirected"]
