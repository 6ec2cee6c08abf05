"""PyTorch Geometric, the oracle of the graph layers, imported with its import-time
warnings silenced (torch deprecates the `torch.jit.script` that PyG calls while loading;
the suite turns warnings into errors)."""

from __future__ import annotations

import warnings

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    import torch_geometric
    import torch_geometric.nn as nn
    import torch_geometric.utils as utils
    from torch_geometric.nn.conv.gcn_conv import gcn_norm

__all__ = ["torch_geometric", "nn", "utils", "gcn_norm"]
