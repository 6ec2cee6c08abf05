"""The dashboard with a Trainer and in a hand-written loop: what reaches the page (every
History value once, the progress with ETA and throughput, the event log of checkpoints,
lr changes and early stopping), the frozen report, and the exports."""

from __future__ import annotations

import csv
import io
import json
import math
import re
import subprocess
import sys

import dlfree as dl
from dlfree import nn, optim
from dlfree.train import History, Monitor
from dlfree.train.callbacks import Dashboard
from dlfree.train.resources import NAMES

import pytest


def _fit(mlp, loaders, tmp_path, epochs=3, callbacks=(), **trainer_options):
    model = mlp()
    train, val = loaders()
    dashboard = Dashboard(port=0, interval=0.05, file=io.StringIO())
    trainer = dl.train.Trainer(model, optim.SGD(model.parameters(), lr=0.1),
                               nn.CrossEntropyLoss(), max_epochs=epochs, run_dir=tmp_path,
                               callbacks=[dashboard, *callbacks], **trainer_options)
    trainer.fit(train, val)
    return trainer, dashboard, dashboard.monitor.events.after(0)


def test_registered_by_name_and_every_history_value_reaches_the_page_once(mlp, loaders,
                                                                          tmp_path):
    model = mlp()
    train, val = loaders()
    out = io.StringIO()
    trainer = dl.train.Trainer(model, optim.SGD(model.parameters(), lr=0.1),
                               nn.CrossEntropyLoss(), max_epochs=2, run_dir=tmp_path,
                               callbacks=[("dashboard", {"port": 0, "file": out,
                                                         "resources": False})])
    trainer.fit(train, val)
    dashboard = trainer.callbacks[0]
    assert isinstance(dashboard, Dashboard)
    assert re.fullmatch(r"dashboard: http://127\.0\.0\.1:\d+/\n", out.getvalue())
    events = dashboard.monitor.events.after(0)
    points = {}
    for e in events:
        if e["kind"] == "point":
            points.setdefault(e["name"], []).append((e["step"], e["value"]))
    assert points == {name: list(zip(trainer.history[name].steps, trainer.history[name].values))
                      for name in trainer.history.names()}
    assert events[0]["kind"] == "config" and events[0]["config"]["max_epochs"] == 2
    assert events[-1] == {"id": len(events), "kind": "end", "status": "finished",
                          "t": events[-1]["t"]}


def test_progress_counts_epochs_steps_and_gives_eta_and_throughput(mlp, loaders, tmp_path):
    trainer, _, events = _fit(mlp, loaders, tmp_path, epochs=3)
    progress = [e for e in events if e["kind"] == "progress"]
    last = progress[-1]
    assert (last["epoch"], last["epochs"], last["step"], last["batches"]) == (3, 3, 18, 6)
    assert last["eta"] == 0.0 and last["unit"] == "batches"
    assert last["rate"] == pytest.approx(18 / last["elapsed"], rel=0.05)
    assert last["samples_rate"] == pytest.approx(4 * last["rate"], rel=1e-9)  # batches of 4
    middle = [e for e in progress if 0 < e["step"] < 18 and e["eta"] is not None]
    assert middle, progress
    for e in middle:  # the batches still to go at the rate so far
        left = 3 * 6 - ((e["epoch"] - 1) * 6 + e["batch"])
        assert e["eta"] == pytest.approx(left / e["rate"], rel=1e-6)


def test_resource_samples_go_to_the_history_and_the_page(mlp, loaders, tmp_path):
    class Slow:
        def dlfree_train_batch_end(self, trainer):
            dl.train.resources.time.sleep(0.01)

    trainer, _, events = _fit(mlp, loaders, tmp_path, epochs=2, callbacks=[Slow()])
    samples = [e for e in events if e["kind"] == "resources"]
    assert len(samples) >= 3
    for key in ("cpu", "rss", "rss_peak", "system_memory", "data_wait"):
        series = trainer.history[NAMES[key]]
        assert len(series) == len(samples)  # the last one taken at the end included
        assert series.values == [s["values"][key] for s in samples]
    rss = trainer.history[NAMES["rss"]].values
    assert min(rss) > 1 and all(peak >= now for peak, now in
                                zip(trainer.history[NAMES["rss_peak"]].values, rss))
    assert all(0 <= v <= 100 for v in trainer.history[NAMES["data_wait"]].values)
    # resources are sent as resource events, not again as points
    assert not [e for e in events if e["kind"] == "point" and e["name"] in NAMES.values()]


def test_the_event_log_notes_checkpoints_lr_changes_and_early_stopping(mlp, loaders, tmp_path):
    class StepDown:  # lowers the lr after the first epoch, as ReduceOnStall would
        def dlfree_train_epoch_end(self, trainer, epoch):
            if epoch == 0:
                trainer.optimizer.param_groups[0]["lr"] = 0.05

    stopper = dl.train.EarlyStopping(monitor="loss", patience=1, min_delta=10.0)
    best = dl.train.ModelCheckpoint(tmp_path / "models", monitor="val_loss")
    trainer, _, events = _fit(mlp, loaders, tmp_path, epochs=10,
                              callbacks=[StepDown(), best, stopper],
                              checkpoint_dir=tmp_path / "state")
    notes = [e["text"] for e in events if e["kind"] == "note"]
    losses = trainer.history["val_loss"].values
    assert notes == [
        "training started: epoch 1, step 0",
        "training checkpoint saved: checkpoint-000000006.safetensors",
        f"best model saved: epoch 1, val_loss {losses[0]:.4g} (best.safetensors)",
        "lr 0.1 → 0.05",
        "training checkpoint saved: checkpoint-000000012.safetensors",
        f"best model saved: epoch 2, val_loss {losses[1]:.4g} (best.safetensors)",
        "early stop after epoch 2: loss did not improve for 1 epochs"]
    assert trainer.state.epoch == 2


def test_an_interrupted_or_failed_run_ends_the_page_and_writes_the_report(mlp, loaders,
                                                                          tmp_path):
    class Boom:
        def dlfree_train_batch_end(self, trainer, batch_index):
            if trainer.state.epoch == 1 and batch_index == 2:
                raise RuntimeError("disk on fire")

    with pytest.raises(RuntimeError, match="disk on fire"):
        _fit(mlp, loaders, tmp_path, callbacks=[Boom()])
    page = (tmp_path / "dashboard.html").read_text()
    events = json.loads(re.search(r'id="frozen-events">(.*?)</script>', page).group(1))
    assert events[-1]["kind"] == "end"
    # the error as the Trainer raised it: wrapped to name the callback and the event
    assert events[-1]["status"] == ("stopped by CallbackError[RuntimeError]: callback Boom "
                                    "(trainer.callbacks[1]) raised in dlfree_train_batch_end: "
                                    "RuntimeError: disk on fire")


def test_the_frozen_report_holds_every_event_and_needs_no_server(mlp, loaders, tmp_path):
    trainer, dashboard, events = _fit(mlp, loaders, tmp_path, epochs=2)
    assert dashboard.report == tmp_path / "dashboard.html"
    page = dashboard.report.read_text()
    frozen = json.loads(re.search(r'id="frozen-events">(.*?)</script>', page).group(1)
                        .replace("<\\/", "</"))
    assert frozen == json.loads(json.dumps(events))
    assert "new EventSource" in page and not re.search(r'(src|href)="(?!data:)', page)


def test_a_resumed_run_back_fills_its_earlier_epochs(mlp, loaders, tmp_path):
    _fit(mlp, loaders, tmp_path, epochs=2, checkpoint_dir=tmp_path / "state")
    trainer, _, events = _fit(mlp, loaders, tmp_path, epochs=3, checkpoint_dir=tmp_path / "state")
    loss_points = [e["step"] for e in events if e["kind"] == "point" and e["name"] == "loss"]
    assert loss_points == [6, 12, 18]
    # the first run's resource samples came back with its History, and are drawn once
    rss = [e for e in events if e["kind"] == "point" and e["name"] == NAMES["rss"]]
    sampled = [e for e in events if e["kind"] == "resources"]
    assert len(rss) + len(sampled) == len(trainer.history[NAMES["rss"]])
    assert rss and all(e["step"] <= 12 for e in rss)
    assert [e["text"] for e in events if e["kind"] == "note"][0] == \
        "training resumed at epoch 3, step 12"


def test_a_hand_written_loop_with_monitor(tmp_path):
    out = io.StringIO()
    with Monitor(port=0, total_steps=4, config={"lr": 0.5}, interval=0.05, file=out) as monitor:
        for step in range(1, 5):
            monitor.log(step, loss=1.0 / step, lr=dl.tensor(0.5))
        monitor.note("halfway")
    assert out.getvalue() == f"dashboard: {monitor.url}\n"
    assert monitor.history["loss"].values == [1.0, 0.5, 1 / 3, 0.25]
    assert monitor.history["lr"].steps == [1, 2, 3, 4]
    events = monitor.events.after(0)
    assert events[-1]["status"] == "finished"
    progress = [e for e in events if e["kind"] == "progress"][-1]
    assert (progress["step"], progress["total_steps"], progress["eta"]) == (4, 4, 0.0)
    monitor.export_csv(tmp_path / "run.csv")
    rows = list(csv.DictReader(io.StringIO((tmp_path / "run.csv").read_text())))
    assert [(r["name"], r["step"], float(r["value"])) for r in rows if r["name"] == "loss"] == \
        [("loss", "1", 1.0), ("loss", "2", 0.5), ("loss", "3", 1 / 3), ("loss", "4", 0.25)]
    assert {r["name"] for r in rows} >= {NAMES["rss"], NAMES["cpu"]}  # resources exported too
    with pytest.raises(RuntimeError, match="the monitor has finished"):
        monitor.note("late")
    with pytest.raises(TypeError, match="step must be a whole number"):
        Monitor(serve=False, resources=False).log(1.5, loss=1.0)


def test_a_failing_loop_ends_the_monitor_with_the_error():
    with pytest.raises(ZeroDivisionError), Monitor(serve=False, resources=False) as monitor:
        monitor.log(0, loss=1 / 0)
    assert monitor.events.after(0)[-1]["status"] == "stopped by ZeroDivisionError: " \
        "division by zero"


def test_history_exports_every_value_in_long_form(tmp_path):
    history = History()
    history.log("loss", 0.5, 1)
    history.log("loss", float("nan"), 2)
    history.log("val_acc", 0.9, 2)
    history.to_csv(tmp_path / "h.csv")
    assert (tmp_path / "h.csv").read_text().splitlines() == \
        ["name,step,value", "loss,1,0.5", "loss,2,nan", "val_acc,2,0.9"]
    history.to_jsonl(tmp_path / "h.jsonl")
    rows = [json.loads(line) for line in (tmp_path / "h.jsonl").read_text().splitlines()]
    assert rows[0] == {"name": "loss", "step": 1, "value": 0.5}
    assert math.isnan(rows[1]["value"]) and rows[2] == {"name": "val_acc", "step": 2,
                                                        "value": 0.9}


def test_the_callback_checks_its_arguments_when_made():
    with pytest.raises(ValueError, match="port must be a whole number from 0"):
        Dashboard(port=-1)
    with pytest.raises(ValueError, match="interval must be a number of seconds > 0"):
        Dashboard(interval=0)
    with pytest.raises(TypeError, match="title must be a string"):
        Dashboard(title=3)


def test_monitor_checks_its_arguments():
    with pytest.raises(ValueError, match="total_steps must be a whole number >= 1"):
        Monitor(serve=False, resources=False, total_steps=0)
    with pytest.raises(TypeError, match="config must be a dict"):
        Monitor(serve=False, resources=False, config=[1])
    with pytest.raises(ValueError, match="interval must be a number of seconds > 0"):
        Monitor(serve=False, interval=0)


def test_importing_dlfree_train_starts_no_thread_and_loads_no_psutil():
    out = subprocess.run(
        [sys.executable, "-c", "import sys, threading, dlfree.train; "
         "print('psutil' in sys.modules, threading.active_count())"],
        capture_output=True, text=True, check=True).stdout
    assert out == "False 1\n"
