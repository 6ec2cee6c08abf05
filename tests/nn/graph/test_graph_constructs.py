"""Every FlowBuilder construct against the same architecture written by hand, as a plain
dlfree.nn Module and as a torch.nn Module (weights copied by state_dict name): the same
state_dict names, forward values to 1e-5 and every gradient to 1e-4 (support.torch_copy)."""

from __future__ import annotations

import dlfree as dl
import dlfree.nn as nn
from dlfree.nn.graph import FlowBuilder

import numpy as np
import pytest

from support.graph import DlTwin, Row, TorchTwin, graph_of, repeated
from support.specs import Float
from support.torch_copy import check_pair, dl_to_torch


def _through(m, x, ops, state):
    at = m.get_submodule
    return at("2")(at("1")(at("enc")(x)))


def _also(m, x, ops, state):
    h = m.get_submodule("0")(x)
    return h + m.get_submodule("1")(h)


def _fork(m, x, ops, state):
    h = m.get_submodule("0")(x)
    side = m.get_submodule("aux")(h)
    return m.get_submodule("2")(h, side)


def _split(how):
    def forward(m, x, ops, state):
        h = m.get_submodule("0")(x)
        parts = [m.get_submodule(f"1.{i}")(h) for i in range(3)]
        if how == "add":
            return parts[0] + parts[1] + parts[2]
        if how == "mean":
            return (parts[0] + parts[1] + parts[2]) / 3
        if how == "cat":
            return ops.cat(parts, dim=-1)
        return _product_merge(parts)
    return forward


def _product_merge(parts):
    return parts[0] * parts[1] + parts[2]


def _split_children(nn_):
    return {"0": nn_.Linear(4, 6), "1": {str(i): nn_.Linear(6, 6) for i in range(3)}}


def _loop_children(nn_):
    return {"0": nn_.Linear(4, 6),
            "1": {"body": {"0": nn_.Sequential(nn_.Linear(6, 6), nn_.Softplus())}}}


def _rising_body(c):
    """x + softplus(linear(x)): every pass raises the mean by a good margin, so the loop
    conditions below are far from ties."""
    return FlowBuilder().also(c["1"]["body"]["0"]).build()


def _loop(passes=None, stop_above=None, check_before=True):
    def forward(m, x, ops, state):
        h = m.get_submodule("0")(x)
        body = m.get_submodule("1.body.0")
        if passes is not None:
            for _ in range(passes):
                h = h + body(h)
            return h
        for _ in range(20):
            if check_before and not float(h.detach().mean()) < stop_above:
                break
            h = h + body(h)
            if not check_before and float(h.detach().mean()) > stop_above:
                break
        return h
    return forward


def _gate(m, x, ops, state):
    h = m.get_submodule("0")(x)
    w = ops.softmax(m.get_submodule("1.router")(h), dim=-1)
    outs = [m.get_submodule(f"1.experts.{e}")(h) for e in range(3)]
    return sum(w[:, e:e + 1] * outs[e] for e in range(3))


def _switch_rows(m, x, ops, state):
    h = m.get_submodule("0")(x)
    choice = ops.argmax(m.get_submodule("1.selector")(h), dim=1)
    state["choices"] = set(np.asarray(choice.tolist()).tolist())
    a, b = m.get_submodule("1.branches.0")(h), m.get_submodule("1.branches.1")(h)
    return ops.where((choice == 0).reshape(-1, 1), a, b)


def _switch_batch(m, x, ops, state):
    h = m.get_submodule("0")(x)
    return m.get_submodule("1.branches.1")(h)


def _map_each(m, x, ops, state):
    body = m.get_submodule("0.body")
    return ops.stack([body(x[:, t]) for t in range(x.shape[1])], dim=1)


def _map_slices(m, x, ops, state):
    body = m.get_submodule("0.body")
    return ops.cat([body(x[:, :4]), body(x[:, 4:])], dim=-1)


def _recurrent(m, x, ops, state):
    h = state.get("h")
    if h is None:
        h = ops.zeros_like(x)
    h = m.get_submodule("0")(x, h)
    state["h"] = h
    return m.get_submodule("1")(h)


ROWS = [
    Row("through_label", lambda n: {"enc": n.Linear(4, 6), "1": n.Tanh(), "2": n.Linear(6, 3)},
        lambda c: FlowBuilder.from_(c["enc"]).label("enc").through(c["1"]).through(c["2"])
        .build(), _through),
    Row("also", lambda n: {"0": n.Linear(4, 4), "1": n.Linear(4, 4)},
        lambda c: FlowBuilder.from_(c["0"]).also(c["1"]).build(), _also),
    Row("fork_tag_using", lambda n: {"0": n.Linear(4, 6), "aux": n.Linear(6, 6),
                                     "2": n.Bilinear(6, 6, 3)},
        lambda c: FlowBuilder.from_(c["0"]).fork(c["aux"]).label("aux").tag("side")
        .using("side").through(c["2"]).build(), _fork),
    *[Row(f"split_merge_{how if isinstance(how, str) else 'callable'}", _split_children,
          lambda c, how=how: FlowBuilder.from_(c["0"])
          .split(*(c["1"][str(i)] for i in range(3))).merge(how).build(),
          _split(how if isinstance(how, str) else "callable"))
      for how in ("add", "mean", "cat", _product_merge)],
    Row("loop_for_n", _loop_children,
        lambda c: FlowBuilder.from_(c["0"]).loop(_rising_body(c)).for_n(3).build(),
        _loop(passes=3)),
    Row("loop_while", _loop_children,
        lambda c: FlowBuilder.from_(c["0"]).loop(_rising_body(c))
        .while_(lambda h: h.mean() < 2.5, max_iter=20).build(), _loop(stop_above=2.5)),
    Row("loop_until", _loop_children,
        lambda c: FlowBuilder.from_(c["0"]).loop(_rising_body(c))
        .until(lambda h: h.mean() > 2.5, max_iter=20).build(),
        _loop(stop_above=2.5, check_before=False)),
    Row("gate", lambda n: {"0": n.Linear(4, 6), "1": {"router": n.Linear(6, 3), "experts": [
        n.Linear(6, 5) for _ in range(3)]}},
        lambda c: FlowBuilder.from_(c["0"]).gate(c["1"]["router"], *c["1"]["experts"]).build(),
        _gate),
    Row("switch_per_sample", lambda n: {"0": n.Linear(4, 6), "1": {
        "selector": n.Linear(6, 2), "branches": [n.Linear(6, 5), n.Linear(6, 5)]}},
        lambda c: FlowBuilder.from_(c["0"]).switch(c["1"]["selector"], *c["1"]["branches"])
        .build(), _switch_rows),
    Row("switch_whole_batch", lambda n: {"0": n.Linear(4, 6), "1": {
        "branches": [n.Linear(6, 5), n.Linear(6, 5)]}},
        lambda c: FlowBuilder.from_(c["0"]).switch(lambda h: 1, *c["1"]["branches"]).build(),
        _switch_batch),
    Row("map_each", lambda n: {"0": {"body": n.Linear(4, 3)}},
        lambda c: FlowBuilder().map(c["0"]["body"]).each().build(), _map_each),
    Row("map_slices", lambda n: {"0": {"body": n.Linear(4, 4)}},
        lambda c: FlowBuilder().map(c["0"]["body"]).slices(2).build(), _map_slices),
    Row("forward_reference", lambda n: {"0": n.RNNCell(4, 4), "1": n.Linear(4, 2)},
        lambda c: FlowBuilder().using("h").through(c["0"]).tag("h").through(c["1"]).build(),
        _recurrent, calls=3),
]
INPUTS = {"map_each": [Float((3, 5, 4))], "map_slices": [Float((3, 8))],
          "switch_per_sample": [Float((16, 4))]}


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.id)
def test_construct_matches_plain_module_and_torch(row):
    dl.manual_seed(0)  # weights that route the per-sample switch's batch both ways
    graph = graph_of(row)
    plain, theirs, reference = DlTwin(row), TorchTwin(row), TorchTwin(row)
    assert list(graph.state_dict()) == list(theirs.state_dict())
    plain.load_state_dict(graph.state_dict())
    dl_to_torch(graph, theirs)
    dl_to_torch(graph, reference)
    specs = INPUTS.get(row.id, [Float((3, 4))])
    call = repeated(row.calls) if row.calls > 1 else None
    check_pair(graph, theirs, specs, call=call)
    check_pair(plain, reference, specs, call=call)
    if row.id == "switch_per_sample":
        assert theirs.state["choices"] == {0, 1}, "the batch should exercise both branches"


def test_loops_ran_several_passes_and_stopped_by_their_conditions():
    dl.manual_seed(0)
    for row in ROWS:
        if row.id in ("loop_while", "loop_until"):
            graph = graph_of(row)
            graph(dl.randn(3, 4))
            passes = graph.get_submodule("1").iterations
            assert 1 < passes < 20, (row.id, passes)


def test_input_and_over_read_named_values():
    body, head = nn.Linear(4, 6), nn.Linear(6, 6)
    graph = FlowBuilder().input("memory").map(body).over("memory").through(head).build()
    x, memory = dl.randn(2, 4), dl.randn(2, 5, 4)
    out = graph(x, memory=memory)
    expected = head(dl.stack([body(memory[:, t]) for t in range(5)], dim=1))
    np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy(), rtol=1e-6)

    proj, mix = nn.Linear(4, 6), nn.Bilinear(6, 3, 2)
    graph = FlowBuilder.from_(proj).input("memory").using("memory").through(mix).build()
    memory = dl.randn(2, 3)
    out = graph(x, memory=memory)
    np.testing.assert_allclose(out.detach().numpy(), mix(proj(x), memory).detach().numpy(),
                               rtol=1e-6)
