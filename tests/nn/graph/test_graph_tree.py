"""The graph tree: dotted paths to labels, tags and inputs of nested graphs, errors that
name the closest valid paths, freezing and parameter groups by graph path, and
load_subgraph with its name-space and structural-hash checks."""

from __future__ import annotations

import dlfree as dl
import dlfree.nn as nn
from dlfree import CheckpointError
from dlfree.nn.graph import FlowBuilder, GraphError, structural_hash

import numpy as np
import pytest


def _encoder(proj_label: str = "proj"):
    scan = (FlowBuilder.from_(nn.Linear(6, 6)).label("cell").tag("hidden")
            .through(nn.Tanh()).build())
    return (FlowBuilder.from_(nn.Linear(4, 6)).label(proj_label)
            .through(scan).label("scan").build())


def _model(encoder=None):
    return (FlowBuilder.from_(encoder or _encoder()).label("encoder")
            .input("context")
            .fork(nn.Linear(6, 2)).label("aux").tag("aux_out")
            .through(nn.Linear(6, 3)).label("head").build())


def test_named_graph_paths_list_the_tree_in_flow_order():
    paths = {path: (info.kind, info.type) for path, info in _model().named_graph_paths()}
    assert list(paths) == ["context", "encoder", "encoder.proj", "encoder.scan",
                           "encoder.scan.cell", "encoder.scan.hidden", "encoder.scan.1",
                           "aux", "aux_out", "head"]
    assert paths["encoder"] == ("graph", "Graph")
    assert paths["encoder.scan.hidden"] == ("tag", "tag")
    assert paths["encoder.scan.cell"] == ("node", "Linear")
    assert paths["context"] == ("input", "input")


def test_validate_path_says_what_a_path_is_and_names_close_ones_when_wrong():
    model = _model()
    info = model.validate_path("encoder.scan.hidden")
    assert (info.kind, info.owner) == ("tag", "encoder.scan")
    assert str(info) == "encoder.scan.hidden: tag (tag) in graph 'encoder.scan'"
    with pytest.raises(GraphError, match=r"no graph path 'encoder.scan.hiden'; closest: "
                                         r"encoder.scan.hidden"):
        model.validate_path("encoder.scan.hiden")
    with pytest.raises(GraphError, match=r"closest: encoder.proj"):
        model.parameters_at("encoder.prj")


def test_freeze_thaw_and_parameters_at_take_graph_paths():
    model = _model()
    cell = model.get_submodule("encoder.scan.cell")
    assert model.parameters_at("encoder.scan.hidden") == list(cell.parameters())
    assert model.parameters_at("encoder.scan") == list(cell.parameters())
    assert model.parameters_at("context") == []
    model.freeze("encoder")
    frozen = {id(p) for p in model.get_submodule("encoder").parameters()}
    assert all(not p.requires_grad for p in model.get_submodule("encoder").parameters())
    model(dl.randn(2, 4), context=dl.zeros(1)).sum().backward()
    assert all(p.grad is None for p in model.parameters() if id(p) in frozen)
    assert all(p.grad is not None for p in model.parameters_at("head"))
    model.thaw("encoder.scan.hidden")
    assert all(p.requires_grad for p in cell.parameters())
    assert not any(p.requires_grad for p in model.parameters_at("encoder.proj"))


def test_load_subgraph_loads_a_component_trained_alone(tmp_path):
    encoder = _encoder()
    path = tmp_path / "encoder.safetensors"
    dl.save(encoder, path)
    model = _model()
    assert model.structural_hash("encoder") == structural_hash(encoder)
    model.load_subgraph("encoder", path)
    for key, value in encoder.state_dict().items():
        np.testing.assert_array_equal(model.get_submodule("encoder").state_dict()[key].numpy(),
                                      value.numpy())


def test_load_subgraph_refuses_a_renamed_parameter_naming_it(tmp_path):
    path = tmp_path / "encoder.safetensors"
    dl.save(_encoder(proj_label="project"), path)
    model = _model()
    before = {k: v.numpy().copy() for k, v in model.state_dict().items()}
    with pytest.raises(CheckpointError) as caught:
        model.load_subgraph("encoder", path)
    message = str(caught.value)
    assert "names the part has and the file lacks: 'proj.weight' (the file has " \
        "'project.weight'), 'proj.bias' (the file has 'project.bias')" in message, message
    assert "names the file has and the part lacks: 'project.bias', 'project.weight'" in message
    assert "structural hash differs" in message
    for key, value in model.state_dict().items():  # nothing was written
        np.testing.assert_array_equal(value.numpy(), before[key])


def test_load_subgraph_refuses_a_different_structure_with_the_same_names(tmp_path):
    scan = FlowBuilder.from_(nn.Linear(6, 6)).label("cell").tag("hidden") \
        .through(nn.Sigmoid()).build()
    other = FlowBuilder.from_(nn.Linear(4, 6)).label("proj").through(scan).label("scan").build()
    path = tmp_path / "other.safetensors"
    dl.save(other, path)
    with pytest.raises(CheckpointError, match=r"structural hash differs \(file \w+, part \w+\)"):
        _model().load_subgraph("encoder", path)
    with pytest.raises(GraphError, match=r"'aux_out' is a tag; only graphs and modules hold"):
        _model().load_subgraph("aux_out", path)
