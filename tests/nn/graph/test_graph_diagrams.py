"""Diagrams: to_dot() parsed back by pydot has the expected nodes, edges, tag and forward
reference styles and clusters; to_svg renders through Graphviz (or says how to install it);
a profiler run colours the steps by time."""

from __future__ import annotations

import shutil
import warnings

import dlfree as dl
import dlfree.nn as nn
from dlfree.nn.graph import FlowBuilder, GraphError, step_times

import pydot
import pytest


def _model():
    scan = FlowBuilder.from_(nn.Linear(4, 4)).label("cell").tag("hidden").through(nn.Tanh()) \
        .build()
    return (FlowBuilder().using("state").through(nn.Bilinear(4, 4, 4)).label("mix")
            .through(scan).label("scan").tag("state")
            .split(nn.Linear(4, 2), nn.Linear(4, 2)).merge("cat").label("heads")
            .build())


def _parse(text: str):
    """(label by node name: (label, cluster label, node), edges) of DOT text, by pydot."""
    with warnings.catch_warnings():
        # pydot's parser still calls pyparsing's camelCase names, deprecated in pyparsing 3.3
        warnings.simplefilter("ignore", DeprecationWarning)
        (graph,) = pydot.graph_from_dot_data(text)
    nodes, edges = {}, []

    def walk(g, cluster):
        for node in g.get_nodes():
            if node.get("label") is not None:
                nodes[node.get_name()] = (_attr(node, "label"), cluster, node)
        for edge in g.get_edges():
            edges.append(edge)
        for sub in g.get_subgraphs():
            walk(sub, _attr(sub, "label"))
    walk(graph, None)
    return nodes, edges


def _attr(item, key: str):
    value = item.get(key)
    return None if value is None else value.strip('"')


def _by_label(nodes, label):
    return [name for name, (text, _, _) in nodes.items() if text.split("\\n")[0] == label]


def test_dot_has_a_node_per_step_edges_for_the_flow_and_clusters_for_parts():
    model = _model()
    model(dl.randn(2, 4))
    nodes, edges = _parse(model.to_dot())
    (mix,) = _by_label(nodes, "mix: Bilinear")
    (cell,) = _by_label(nodes, "cell: Linear")
    (state,) = _by_label(nodes, "state")
    (hidden,) = _by_label(nodes, "hidden")
    assert nodes[cell][1] == "scan: Graph" and nodes[hidden][1] == "scan: Graph"
    assert nodes[mix][0] == "mix: Bilinear\\n(2, 4)"  # the shape the first call recorded
    assert len(_by_label(nodes, "0: Linear")) == 1 and len(_by_label(nodes, "1: Linear")) == 1
    assert all(nodes[n][1] == "heads: Split" for n in _by_label(nodes, "0: Linear"))
    pairs = {(e.get_source(), e.get_destination()): e for e in edges}
    forward = pairs[(state, mix)]
    assert (_attr(forward, "style"), _attr(forward, "color")) == ("dashed", "red")
    assert _attr(forward, "label") == "previous call"
    assert (cell, hidden) in pairs
    (scan_output,) = [n for n, (text, cluster, _) in nodes.items()
                      if text == "output" and cluster == "scan: Graph"]
    assert (scan_output, state) in pairs  # the tag names the nested graph's output
    (inputs,) = [n for n, (text, cluster, _) in nodes.items() if text == "input" and not cluster]
    assert (inputs, mix) in pairs


@pytest.mark.skipif(shutil.which("dot") is None,
                    reason="Graphviz's dot is not installed (make test installs it)")
def test_to_svg_renders_with_graphviz(tmp_path):
    path = tmp_path / "graph.svg"
    _model().to_svg(path)
    text = path.read_text()
    assert "<svg" in text and "mix: Bilinear" in text


def test_to_svg_without_graphviz_says_how_to_install_it(tmp_path, monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(GraphError, match=r"needs Graphviz's `dot` program.*apt-get install "
                                         r"graphviz"):
        _model().to_svg(tmp_path / "graph.svg")


def test_profile_colours_steps_by_their_time():
    model = _model()
    x = dl.randn(64, 4)
    with dl.profiler.profile() as prof:
        model(x)
    times = step_times(model, prof)
    assert {"mix", "scan", "scan.cell", "scan.1", "heads"} <= set(times)
    assert times["scan"] >= times["scan.cell"]
    nodes, _ = _parse(model.to_dot(profile=prof))
    (mix,) = _by_label(nodes, "mix: Bilinear")
    node = nodes[mix][2]
    assert _attr(node, "style") == "filled"
    assert _attr(node, "fillcolor").startswith("#ff")
    assert " ms" in nodes[mix][0]
