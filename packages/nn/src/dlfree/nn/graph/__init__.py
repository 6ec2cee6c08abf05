"""`dlfree.nn.graph`: architectures as data flow (`FlowBuilder`), built into a `Graph` that
is a `Module` and knows its own structure: nested graphs addressed by dotted paths,
freezing and checkpoints by part, observation with trend queries, and diagrams."""

from .builder import FlowBuilder
from .diagrams import step_times
from .errors import GraphError
from .graph import Graph
from .nodes import MERGES, Gate, Loop, Map, Split, Switch
from .observation import REDUCTIONS
from .tree import PathInfo, structural_hash

__all__ = ["FlowBuilder", "Graph", "GraphError", "PathInfo", "Split", "Loop", "Gate",
           "Switch", "Map", "MERGES", "REDUCTIONS", "structural_hash", "step_times"]

# the classes a model file names, registered by dlfree.nn's plugin as layers "graph.<name>"
NODES = ("Graph", "Split", "Loop", "Gate", "Switch", "Map")
