"""Building a graph: mistakes reported at build() or at the first call with the step and
the shapes; forward references carried across calls (reset, detach_state, init) with
backpropagation through time checked by finite differences; save and load of graphs that
use every construct."""

from __future__ import annotations

import dlfree as dl
import dlfree.nn as nn
from dlfree import CheckpointError
from dlfree.autograd import gradcheck
from dlfree.nn.graph import FlowBuilder, Graph, GraphError

import numpy as np
import pytest


def test_graph_is_exported_from_dlfree_nn():
    assert nn.FlowBuilder is FlowBuilder and nn.Graph is Graph
    assert isinstance(FlowBuilder.from_(nn.Linear(2, 2)).build(), nn.Module)


@pytest.mark.parametrize(("flow", "message"), [
    (lambda: FlowBuilder.from_(nn.Linear(2, 2)).merge("add"),
     r"call 1 \.merge\(add\): has no \.split\(\) before it"),
    (lambda: FlowBuilder.from_(nn.Linear(2, 2)).split(nn.Linear(2, 2), nn.Linear(2, 2))
     .through(nn.ReLU()),
     r"call 1 \.split\(Linear, Linear\): must be followed by \.merge\(\), but call 2 is "
     r"\.through\(\)"),
    (lambda: FlowBuilder.from_(nn.Linear(2, 2)).loop(nn.Linear(2, 2)),
     r"\.loop\(Linear\): is never closed by \.for_n\(\) or \.while_\(\) or \.until\(\)"),
    (lambda: FlowBuilder.from_(nn.Linear(2, 2)).split(nn.Linear(2, 2), nn.Linear(2, 2))
     .merge("max"), r"valid merges are add, mean, cat or a callable"),
    (lambda: FlowBuilder.from_(nn.Linear(2, 2)).tag("hidden").using("hiden")
     .through(nn.Bilinear(2, 2, 2)),
     r"uses unknown tag 'hiden'; closest: hidden"),
    (lambda: FlowBuilder().label("x"), r"there is no step before it to label"),
    (lambda: FlowBuilder.from_(nn.Linear(2, 2)).tag("a").through(nn.ReLU()).tag("a"),
     r"'a' is already a tag"),
    (lambda: FlowBuilder.from_(nn.Linear(2, 2)).label("h").tag("h"),
     r"h: a name is both a label and a tag"),
    (lambda: FlowBuilder.from_(nn.Linear(2, 2)).loop(nn.Linear(2, 2)).for_n(0),
     r"for_n\(n\): the count must be an integer >= 1, got 0"),
    (lambda: FlowBuilder.from_(nn.Linear(2, 2)).using("h"),
     r"\.using\(h\) at the end has no step after it"),
])
def test_builder_mistakes_raise_at_build_naming_the_call(flow, message):
    builder = flow()
    with pytest.raises(GraphError, match=message):
        builder.build()


def test_a_shape_that_cannot_merge_fails_at_the_first_call_with_path_and_shapes():
    graph = FlowBuilder.from_(nn.Linear(4, 6)).split(nn.Linear(6, 3), nn.Linear(6, 5)) \
        .merge("add").label("heads").build()
    with pytest.raises(GraphError, match=r"graph step 1 \.through\(Split\) at 'heads' failed "
                                         r"on a stream of shape \(2, 6\).*merge\('add'\) "
                                         r"needs branches of one shape, got \(2, 3\) and "
                                         r"\(2, 5\)"):
        graph(dl.randn(2, 4))
    residual = FlowBuilder.from_(nn.Linear(4, 6)).also(nn.Linear(6, 3)).build()
    with pytest.raises(GraphError, match=r"step 1 \.also\(Linear\) at '1' failed on a stream "
                                         r"of shape \(2, 6\)"):
        residual(dl.randn(2, 4))


def test_inputs_are_checked_by_name():
    graph = FlowBuilder.from_(nn.Linear(2, 2)).input("memory").using("memory") \
        .through(nn.Bilinear(2, 2, 2)).build()
    with pytest.raises(GraphError, match=r"without input\(s\) memory; pass them as keywords"):
        graph(dl.randn(1, 2))
    with pytest.raises(GraphError, match=r"unknown input 'memroy'.*closest: memory"):
        graph(dl.randn(1, 2), memory=dl.randn(1, 2), memroy=1)


def _recurrent_graph():
    """h_t = tanh(W [x_t, h_{t-1}]) refined twice by a loop: the forward reference `h` is
    read before the step that tags it, so each call reads the previous call's value."""
    refine = nn.Sequential(nn.Linear(3, 3), nn.Tanh())
    return (FlowBuilder().using("h").through(nn.Bilinear(3, 3, 3)).loop(refine).for_n(2)
            .tag("h").build())


def test_forward_reference_carries_the_previous_call_and_reset_forgets_it():
    graph = _recurrent_graph()
    x = dl.randn(2, 3)
    first = graph(x).detach().numpy()
    second = graph(x).detach().numpy()
    assert not np.allclose(first, second)
    graph.reset()
    np.testing.assert_allclose(graph(x).detach().numpy(), first, rtol=1e-6)
    bil = graph.get_submodule("0")
    h0 = dl.zeros_like(x)
    loop = graph.get_submodule("1")
    by_hand = loop(bil(x, loop(bil(x, h0))))
    np.testing.assert_allclose(second, by_hand.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_bptt_through_calls_and_loop_passes_gradcheck():
    graph = _recurrent_graph().to(dl.float64)
    x1 = dl.randn(2, 3, dtype=dl.float64, requires_grad=True)
    x2 = dl.randn(2, 3, dtype=dl.float64, requires_grad=True)

    def two_steps(a, b):
        graph.reset()
        graph(a)
        return graph(b)
    assert gradcheck(two_steps, (x1, x2))
    graph.reset()
    graph(x1)
    graph.detach_state()
    graph(x2).sum().backward()
    assert x1.grad is None  # the carried value was cut from the first call


def test_forward_reference_init_tensor_and_callable():
    start = dl.full((1, 3), 0.5)
    graph = FlowBuilder().using("h", init={"h": start}).through(nn.Bilinear(3, 3, 3)) \
        .tag("h").build()
    x = dl.randn(1, 3)
    expected = graph.get_submodule("0")(x, start)
    np.testing.assert_allclose(graph(x).detach().numpy(), expected.detach().numpy(), rtol=1e-6)
    assert "init_h" in graph.state_dict()
    ones = FlowBuilder().using("h", init={"h": dl.ones_like}).through(nn.Bilinear(3, 3, 3)) \
        .tag("h").build()
    np.testing.assert_allclose(ones(x).detach().numpy(),
                               ones.get_submodule("0")(x, dl.ones_like(x)).detach().numpy(),
                               rtol=1e-6)
    with pytest.raises(GraphError, match=r"init given for 'g', which is not a forward "
                                         r"reference \(a tag used before it is set\); "
                                         r"forward references: h"):
        FlowBuilder().using("h", init={"g": start}).through(nn.Bilinear(3, 3, 3)).tag("h") \
            .build()


def _every_construct():
    """A graph with a registered module at every step (so it can be saved)."""
    inner = FlowBuilder.from_(nn.Linear(8, 8)).tag("hidden").through(nn.Tanh()).build()
    return (FlowBuilder.from_(nn.Linear(4, 8)).label("encoder")
            .also(nn.Linear(8, 8))
            .fork(nn.Linear(8, 8)).tag("side")
            .through(inner).label("scan")
            .split(nn.Linear(8, 8), nn.Linear(8, 8)).merge("mean")
            .using("side").through(nn.Bilinear(8, 8, 8))
            .using("state", init={"state": dl.full((3, 8), 0.1)}).through(nn.Bilinear(8, 8, 8))
            .loop(nn.Sequential(nn.Linear(8, 8), nn.Tanh())).for_n(2)
            .gate(nn.Linear(8, 2), nn.Linear(8, 8), nn.Linear(8, 8))
            .switch(nn.Linear(8, 2), nn.Linear(8, 8), nn.Linear(8, 8)).tag("state")
            .map(nn.Linear(4, 4)).slices(2)
            .build())


def test_save_and_load_a_graph_with_every_construct(tmp_path):
    graph = _every_construct()
    x = dl.randn(3, 4)
    graph(x)
    path = tmp_path / "graph.safetensors"
    dl.save(graph, path)
    loaded = dl.load(path)
    assert isinstance(loaded, Graph)
    assert list(loaded.state_dict()) == list(graph.state_dict())
    assert repr(loaded) == repr(graph)
    graph.reset()
    for _ in range(2):  # the second call reads the forward reference `state`
        np.testing.assert_allclose(loaded(x).detach().numpy(), graph(x).detach().numpy(),
                                   rtol=1e-6, atol=1e-7)
    assert [p for p, _ in loaded.named_graph_paths()] == \
        [p for p, _ in graph.named_graph_paths()]


def test_a_graph_with_a_plain_function_step_cannot_be_saved(tmp_path):
    graph = FlowBuilder.from_(nn.Linear(2, 2)).through(lambda x: x * 2).build()
    assert graph(dl.ones(1, 2)).shape == (1, 2)
    with pytest.raises(CheckpointError, match=r"function is not a value a model file can "
                                              r"hold"):
        dl.save(graph, tmp_path / "g.safetensors")


def test_graphs_nest_and_move():
    inner = FlowBuilder.from_(nn.Linear(3, 3)).also(nn.Linear(3, 3)).build()
    outer = nn.Sequential(nn.Linear(2, 3), FlowBuilder.from_(inner).label("block").build())
    assert list(outer.state_dict()) == ["0.weight", "0.bias", "1.block.0.weight",
                                        "1.block.0.bias", "1.block.1.weight", "1.block.1.bias"]
    outer.to(dl.float64)
    out = outer(dl.randn(2, 2, dtype=dl.float64))
    assert out.dtype == dl.float64


def test_a_graph_moved_to_a_device_computes_what_it_does_on_the_cpu(device, tmp_path):
    graph = _every_construct()
    path = tmp_path / "graph.safetensors"
    dl.save(graph, path)
    moved = dl.load(path, device=device)
    x = dl.randn(3, 4)
    for _ in range(2):  # the second call reads the carried state on the device
        out = moved(x.to(device))
        assert out.device.type == dl.Device(device).type
        np.testing.assert_allclose(out.detach().cpu().numpy(), graph(x).detach().numpy(),
                                   rtol=1e-5, atol=1e-6)
    out.sum().backward()
    assert all(p.grad is not None for p in moved.parameters_at("encoder"))


def test_a_nested_graph_receives_tagged_values_as_its_declared_inputs():
    inner = FlowBuilder.from_(nn.Linear(3, 3)).input("context").using("context") \
        .through(nn.Bilinear(3, 3, 3)).build()
    outer = FlowBuilder.from_(nn.Linear(2, 3)).tag("start").using("start").through(inner) \
        .build()
    x = dl.randn(4, 2)
    start = outer.get_submodule("0")(x)
    expected = inner(start, context=start)
    np.testing.assert_allclose(outer(x).detach().numpy(), expected.detach().numpy(), rtol=1e-6)
    with pytest.raises(GraphError, match=r"2 values after the stream; it declares 1 input"):
        inner(x, start, start)
