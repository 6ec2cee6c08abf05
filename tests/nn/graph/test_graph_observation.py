"""Observation: collected tags and recorded scalars averaged per epoch by flush(), across
the graph tree, with the same trend queries as a Trainer's history."""

from __future__ import annotations

import dlfree as dl
import dlfree.nn as nn
from dlfree.nn.graph import FlowBuilder, GraphError
from dlfree.train import History

import numpy as np
import pytest


def _model():
    scan = FlowBuilder.from_(nn.Linear(3, 3)).tag("hidden").through(nn.ReLU()).build()
    return FlowBuilder.from_(nn.Linear(2, 3)).tag("features").through(scan).label("scan") \
        .build()


def test_collect_averages_each_batch_then_each_epoch():
    model = _model().collect("features", "scan.hidden")
    model.collect("scan.hidden", reduce="max")  # replaces the mean for this tag
    xs = [dl.randn(4, 2) for _ in range(3)]
    features, hidden = [], []
    for x in xs:
        model(x)
        features.append(float(model.get_submodule("0")(x).mean()))
        hidden.append(float(model.get_submodule("scan.0")(model.get_submodule("0")(x)).max()))
    model.eval()
    model(dl.randn(4, 2))  # evaluation batches are not collected
    closed = model.flush()
    assert set(closed) == {"features", "scan.hidden"}
    assert closed["features"] == pytest.approx(np.mean(features), rel=1e-6)
    assert closed["scan.hidden"] == pytest.approx(np.mean(hidden), rel=1e-6)
    assert model.recorded_paths() == ["features", "scan.hidden"]


def test_record_and_record_at_reach_nested_graphs_and_trends_match_history():
    model = _model()
    losses = [1.0, 0.8, 0.7, 0.69, 0.69, 0.69]
    history = History()
    for epoch, loss in enumerate(losses):
        model.record_at("scan.loss", loss)
        model.record_at("scan.loss", dl.tensor(loss, dtype=dl.float64))  # a tensor counts too
        model.record("accuracy", 0.5 + epoch / 10)
        model.flush()
        history.log("scan.loss", loss, epoch)
    trend = model.trend("scan.loss")
    series = history["scan.loss"]
    assert trend.values == pytest.approx(series.values)
    for query in (lambda s: s.stalled(3), lambda s: s.improving(2),
                  lambda s: s.converged(3, 0.01),
                  lambda s: s.best()):
        assert query(trend) == query(series)
    assert trend.slope(4) == pytest.approx(series.slope(4))
    assert trend.stalled(2) and not trend.stalled(3) and not trend.improving(3)
    assert model.trend("accuracy").improving(5, mode="max")
    with pytest.raises(GraphError, match=r"trend\('scan.los'\): nothing has been flushed under "
                                         r"that path; closest: scan.loss"):
        model.trend("scan.los")


def test_observation_errors_name_what_is_valid():
    model = _model()
    with pytest.raises(GraphError, match=r"collect\('scan'\): that path is a graph; collect "
                                         r"takes tags"):
        model.collect("scan")
    with pytest.raises(GraphError, match=r"valid reductions are mean, sum, max, min, norm"):
        model.collect("features", reduce="median")
    with pytest.raises(GraphError, match=r"no graph path 'scann'; closest: scan"):
        model.record_at("scann.loss", 1.0)
    with pytest.raises(TypeError, match=r"record\('x'\): expected a number or a one-element"):
        model.record("x", "high")
