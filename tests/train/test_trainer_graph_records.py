"""The Trainer closes the epoch of a model that records values by path (a dlfree.nn Graph)
and logs them: they are in its history and drawn in its HTML report."""

from __future__ import annotations

import dlfree as dl
import dlfree.nn as nn
import dlfree.optim as optim
from dlfree.nn.graph import FlowBuilder
from dlfree.train.callbacks import HTMLReport


def test_graph_recorded_paths_join_the_history_and_the_report(tmp_path, loaders):
    train, val = loaders(n=12, batch_size=4)
    dl.manual_seed(0)
    encoder = FlowBuilder.from_(nn.Linear(4, 8)).tag("features").through(nn.ReLU()).build()
    model = FlowBuilder.from_(encoder).label("encoder").through(nn.Linear(8, 3)).build()
    model.collect("encoder.features", reduce="norm")
    trainer = dl.train.Trainer(model, optim.SGD(model.parameters(), lr=0.1),
                               nn.CrossEntropyLoss(), callbacks=[HTMLReport()], max_epochs=3,
                               run_dir=tmp_path)
    history = trainer.fit(train, val)
    series = history["encoder.features"]
    assert len(series) == 3 and series.values == model.trend("encoder.features").values
    assert series.steps == history["loss"].steps
    assert 'data-series="encoder.features"' in (tmp_path / "report.html").read_text()
