"""Graph passes: dead-code removal and constant folding, each returning a new `Graph`."""

from __future__ import annotations

from dataclasses import replace

from .graph import Graph, run_node


def eliminate_dead_code(graph: Graph) -> Graph:
    """Drop the nodes whose outputs no graph output depends on, and unread constants."""
    needed = set(graph.outputs)
    kept = []
    for node in reversed(graph.nodes):
        if node.output in needed:
            kept.append(node)
            needed.update(node.inputs)
    return replace(graph, nodes=kept[::-1],
                   parameters={k: v for k, v in graph.parameters.items() if k in needed},
                   constants={k: v for k, v in graph.constants.items() if k in needed})


def fold_constants(graph: Graph) -> Graph:
    """Evaluate the nodes whose inputs are all constants, turning their outputs into
    constants; then drop what no longer is read."""
    constants = dict(graph.constants)
    nodes = []
    for node in graph.nodes:
        if node.inputs and all(i in constants for i in node.inputs):
            constants[node.output] = run_node(node, [constants[i] for i in node.inputs],
                                              graph.device)
        else:
            nodes.append(node)
    return eliminate_dead_code(replace(graph, nodes=nodes, constants=constants))
