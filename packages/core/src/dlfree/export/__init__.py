"""Static graphs for deployment: `trace` records one call into a `Graph`, which runs without
autograd and is simplified by the passes of `dlfree.export.passes`."""

from __future__ import annotations

from ..tracing_state import is_tracing
from .graph import Graph, Node
from .passes import eliminate_dead_code, fold_batch_norm, fold_constants, unflatten_linears
from .trace import TracerWarning, trace

__all__ = ["trace", "is_tracing", "Graph", "Node", "TracerWarning", "eliminate_dead_code",
           "fold_constants", "fold_batch_norm", "unflatten_linears"]
