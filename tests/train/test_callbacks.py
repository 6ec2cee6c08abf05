"""The built-in callbacks of dlfree.train.callbacks (progress bar, CSV/JSONL loggers, early
stopping, LR monitor, ReduceOnStall, HTML report): driven event by event through a stand-in
trainer, and through the real Trainer."""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
import select
from html.parser import HTMLParser
from types import SimpleNamespace

import dlfree as dl
from dlfree import functional as F
from dlfree import nn, optim
from dlfree.train.callbacks.early_stopping import EarlyStopping
from dlfree.train.callbacks.loggers import CSVLogger, JSONLLogger
from dlfree.train.callbacks.lr_monitor import LRMonitor, ReduceOnStall
from dlfree.train.callbacks.model_checkpoint import ModelCheckpoint
from dlfree.train.callbacks.progress import ProgressBar, SmoothedValue
from dlfree.train.callbacks.report import (
    BOTTOM,
    HEIGHT,
    LEFT,
    RIGHT,
    TOP,
    WIDTH,
    HTMLReport,
    nice_ticks,
)
from dlfree.train.events import Events
from dlfree.train.history import History
from dlfree.train.state import TrainState

import numpy as np
import pytest
import torch


# ---------------------------------------------------------------------- a stand-in trainer
def fake_trainer(tmp_path, *, epochs: int | None = 3, steps_per_epoch: int | None = 2,
                 lrs=(0.1,), config=None):
    """The attributes callbacks may use (train_common.md), without a model or data."""
    return SimpleNamespace(
        model=None, scheduler=None, history=History(), should_stop=False,
        optimizer=SimpleNamespace(param_groups=[{"lr": lr, "params": []} for lr in lrs]),
        state=TrainState(epochs=epochs, steps_per_epoch=steps_per_epoch),
        run_dir=tmp_path, checkpoint_dir=None, timings={"step": 0.25, "validation": 0.125},
        config={"optimizer": "SGD", "max_epochs": epochs} if config is None else config,
        validates=True, epoch_validated=False)


class Recorder:
    """Keeps each epoch's logs as the callbacks before it left them."""

    def __init__(self):
        self.logs: list[tuple[int, int, dict]] = []

    def dlfree_train_epoch_end(self, trainer, epoch, logs):
        self.logs.append((epoch, trainer.state.global_step, dict(logs)))


def drive(trainer, callbacks, epochs, lr_decay: float | None = None, end: bool = True):
    """Call the training events on `callbacks` in the order the Trainer does, from
    `trainer.state` on. Each entry of `epochs` is (batch losses, validation metrics or None);
    every batch is one optimizer step, after which the lrs are multiplied by `lr_decay`
    (a per-step scheduler). Logs into the History what the Trainer logs; a failure is
    reported with dlfree_train_exception and re-raised."""
    events = Events(callbacks)
    try:
        _run(trainer, events, epochs, lr_decay)
    except Exception as e:
        events("dlfree_train_exception", trainer=trainer, exception=e)
        raise
    if end:
        events("dlfree_train_end", trainer=trainer)


def _run(trainer, events, epochs, lr_decay):
    state, history, groups = trainer.state, trainer.history, trainer.optimizer.param_groups
    events("dlfree_train_start", trainer=trainer)
    for losses, val in epochs:
        epoch = state.epoch
        events("dlfree_train_epoch_start", trainer=trainer, epoch=epoch)
        for i, loss in enumerate(losses):
            batch = (np.array([i]),)
            events("dlfree_train_batch_start", trainer=trainer, batch=batch, batch_index=i)
            state.batch_index = i + 1
            state.global_step += 1
            history.log("step_loss", loss, state.global_step)
            history.log("step_lr", groups[0]["lr"], state.global_step)
            if lr_decay is not None:
                for group in groups:
                    group["lr"] *= lr_decay
            events("dlfree_train_batch_end", trainer=trainer, batch=batch, batch_index=i,
                   loss=loss, outputs=None)
        logs = {"loss": sum(losses) / len(losses), "lr": groups[0]["lr"]}
        trainer.epoch_validated = val is not None
        if val is not None:
            for name, value in val.items():
                history.log(name, value, state.global_step)
            events("dlfree_train_validation_end", trainer=trainer, metrics=dict(val))
            logs.update(val)
        history.log("loss", logs["loss"], state.global_step)
        history.log("lr", logs["lr"], state.global_step)
        events("dlfree_train_epoch_end", trainer=trainer, epoch=epoch, logs=logs)
        state.epoch += 1
        state.batch_index = 0
        if trainer.should_stop:
            break


def val_epochs(values, name: str = "val_loss", batches: int = 1):
    """Epochs with one made-up batch loss each and `values` as the monitored metric."""
    return [([1.0 + 0.125 * i] * batches, {name: v}) for i, v in enumerate(values)]


# ---------------------------------------------------------------------- early stopping
def early_stopping_by_rule(values, mode, patience, min_delta):
    """The early-stopping rule written out: an epoch improves when its value beats the best
    so far by more than min_delta (lower for "min", higher for "max"; the first value always
    does, NaN never) and then becomes the best; stop at the epoch that makes `patience`
    epochs in a row without one. Returns (stop epoch or None, best value, its epoch)."""
    best, best_epoch, wait = None, None, 0
    sign = 1 if mode == "min" else -1
    for epoch, value in enumerate(values):
        if not math.isnan(value) and (best is None or sign * (best - value) > min_delta):
            best, best_epoch, wait = value, epoch, 0
            continue
        wait += 1
        if wait == patience:
            return epoch, best, best_epoch
    return None, best, best_epoch


def stop_epoch_by_rule(values, mode, patience, min_delta):
    return early_stopping_by_rule(values, mode, patience, min_delta)[0]


EARLY_STOPPING_CASES = [
    # values, mode, patience, min_delta, the epoch it stops at
    ([1.0, 0.8, 0.85, 0.9, 0.7, 0.75, 0.76, 0.77, 0.6], "min", 3, 0.0, 7),
    ([0.5, 0.6, 0.6, 0.59, 0.7, 0.7], "max", 2, 0.0, 3),
    ([1.0, 0.95, 0.92, 0.85, 0.84, 0.83], "min", 2, 0.1, 2),
    ([1.0, 0.95, 0.92, 0.85, 0.84, 0.83], "min", 2, 0.04, 5),
    ([0.1, 0.2, 0.25, 0.31, 0.3], "max", 1, 0.05, 2),
    ([3.0, 2.0, 1.0], "min", 1, 0.0, None),
    ([1.0, math.nan, math.nan, 0.5], "min", 2, 0.0, 2),
]


@pytest.mark.parametrize("values, mode, patience, min_delta, stop", EARLY_STOPPING_CASES)
def test_early_stopping_stops_at_the_right_epoch(tmp_path, values, mode, patience, min_delta,
                                                 stop):
    assert stop_epoch_by_rule(values, mode, patience, min_delta) == stop
    trainer = fake_trainer(tmp_path, epochs=len(values))
    stopper = EarlyStopping("val_loss", mode=mode, patience=patience, min_delta=min_delta)
    drive(trainer, [stopper], val_epochs(values))
    assert stopper.stopped_epoch == stop
    assert trainer.should_stop is (stop is not None)
    assert trainer.state.epoch == (len(values) if stop is None else stop + 1)
    assert (stopper.best, stopper.best_epoch) == \
        early_stopping_by_rule(values, mode, patience, min_delta)[1:]


def test_early_stopping_agrees_with_the_rule_on_random_sequences(tmp_path):
    rng = np.random.default_rng(7)
    for trial in range(40):
        values = np.round(rng.normal(size=12).cumsum() * 0.1, 2).tolist()
        mode = ("min", "max")[trial % 2]
        patience, min_delta = int(rng.integers(1, 4)), float(rng.choice([0.0, 0.05, 0.1]))
        trainer = fake_trainer(tmp_path, epochs=len(values))
        stopper = EarlyStopping(mode=mode, patience=patience, min_delta=min_delta)
        drive(trainer, [stopper], val_epochs(values))
        assert stopper.stopped_epoch == stop_epoch_by_rule(values, mode, patience, min_delta)


def test_early_stopping_state_dict_continues_a_resumed_run(tmp_path):
    values = [1.0, 0.9, 0.95, 0.96, 0.8, 0.85, 0.86, 0.87]
    whole = EarlyStopping(patience=3)
    drive(fake_trainer(tmp_path, epochs=8), [whole], val_epochs(values))
    first = EarlyStopping(patience=3)
    trainer = fake_trainer(tmp_path, epochs=8)
    drive(trainer, [first], val_epochs(values[:6]), end=False)
    state = json.loads(json.dumps(first.state_dict()))  # JSON-able without restore_best
    second = EarlyStopping(patience=3)
    second.load_state_dict(state)
    drive(trainer, [second], val_epochs(values)[6:])
    assert second.stopped_epoch == whole.stopped_epoch == 7
    assert (second.best, second.best_epoch) == (whole.best, whole.best_epoch) == (0.8, 4)


def test_early_stopping_skips_epochs_without_validation_and_names_missing_values(tmp_path):
    trainer = fake_trainer(tmp_path, epochs=6)
    stopper = EarlyStopping(patience=2)
    drive(trainer, [stopper], [([1.0], {"val_loss": 1.0}), ([1.0], None),
                               ([1.0], {"val_loss": 2.0}), ([1.0], None),
                               ([1.0], {"val_loss": 3.0}), ([1.0], None)])
    assert stopper.stopped_epoch == 4
    with pytest.raises(KeyError, match=r"'val_acc' was not logged; the epoch logged loss, lr, "
                                       r"val_loss"):
        drive(fake_trainer(tmp_path), [EarlyStopping("val_acc", mode="max")],
              val_epochs([0.5]))
    with pytest.raises(KeyError, match="'train_acc' was not logged"):
        drive(fake_trainer(tmp_path), [EarlyStopping("train_acc")], [([1.0], None)])


@pytest.mark.parametrize("make", [lambda p: EarlyStopping(), lambda p: ReduceOnStall(),
                                  lambda p: ModelCheckpoint(p, monitor="val_loss")],
                         ids=["EarlyStopping", "ReduceOnStall", "ModelCheckpoint"])
def test_watching_a_validation_value_without_val_data_fails_at_the_start(tmp_path, make):
    """Without val_data a "val_" value never appears: refuse at once rather than never act."""
    trainer = fake_trainer(tmp_path)
    trainer.validates = False
    callback = make(tmp_path)
    with pytest.raises(ValueError, match="monitors 'val_loss', a validation value, but fit"
                                         r"\(\) got no val_data"):
        drive(trainer, [callback], [([1.0], None)])
    trainer = fake_trainer(tmp_path)  # a training value needs no validation
    trainer.validates = False
    for watcher in (EarlyStopping("loss"), ReduceOnStall("loss")):
        drive(trainer, [watcher], [([1.0], None)])


@pytest.mark.parametrize("kwargs, error, match", [
    ({"mode": "lowest"}, ValueError, "mode must be 'min'"),
    ({"patience": 0}, ValueError, "patience must be an integer >= 1"),
    ({"patience": 2.5}, ValueError, "patience must be an integer >= 1"),
    ({"min_delta": -0.1}, ValueError, "min_delta must be a finite number >= 0"),
    ({"monitor": 3}, TypeError, "monitor must be the name of a logged value"),
])
def test_early_stopping_rejects_bad_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        EarlyStopping(**kwargs)


class ScriptedMetric:
    """A metric whose compute() returns the next of `values` (update/reset do nothing)."""

    def __init__(self, values):
        self.values = list(values)
        self.calls = 0

    def reset(self):
        pass

    def update(self, preds, target):
        pass

    def compute(self):
        self.calls += 1
        return self.values[self.calls - 1]


class WeightSnapshots:
    """The model's weights at the end of each epoch."""

    def __init__(self):
        self.weights: list[dict] = []

    def dlfree_train_epoch_end(self, trainer):
        self.weights.append({k: v.numpy().copy() for k, v in trainer.model.state_dict().items()})


def test_early_stopping_through_the_trainer_restores_the_best_weights(mlp, loaders):
    values = [0.2, 0.5, 0.4, 0.45, 0.3, 0.6, 0.9]
    train, val = loaders(n=12, batch_size=4)
    model = mlp()
    snapshots = WeightSnapshots()
    stopper = EarlyStopping("val_score", mode="max", patience=3, restore_best=True)
    trainer = dl.train.Trainer(model, optim.SGD(model.parameters(), lr=0.1),
                               nn.CrossEntropyLoss(), metrics={"score": ScriptedMetric(values)},
                               callbacks=[snapshots, stopper], max_epochs=len(values))
    history = trainer.fit(train, val)
    assert stopper.stopped_epoch == stop_epoch_by_rule(values, "max", 3, 0.0) == 4
    assert history["val_score"].values == values[:5]
    assert stopper.best_epoch == 1
    for name, value in model.state_dict().items():
        np.testing.assert_array_equal(value.numpy(), snapshots.weights[1][name])
        assert not np.array_equal(value.numpy(), snapshots.weights[4][name])


def test_early_stopping_resumes_from_a_training_checkpoint(tmp_path, mlp, loaders):
    values = [0.2, 0.5, 0.4, 0.45, 0.3, 0.6, 0.9]
    train, val = loaders(n=12, batch_size=4)
    snapshots = WeightSnapshots()

    def fit(scores, max_epochs):
        model = mlp()
        stopper = EarlyStopping("val_score", mode="max", patience=3, restore_best=True)
        trainer = dl.train.Trainer(
            model, optim.SGD(model.parameters(), lr=0.1), nn.CrossEntropyLoss(),
            metrics={"score": ScriptedMetric(scores)}, callbacks=[snapshots, stopper],
            max_epochs=max_epochs, checkpoint_dir=tmp_path)
        trainer.fit(train, val)
        return model, stopper

    fit(values[:3], 3)
    model, stopper = fit(values[3:], len(values))  # resumes at epoch 3 with its state
    assert (stopper.stopped_epoch, stopper.best_epoch, stopper.best) == (4, 1, 0.5)
    assert len(snapshots.weights) == 5
    for name, value in model.state_dict().items():  # the best weights came from the file
        np.testing.assert_array_equal(value.numpy(), snapshots.weights[1][name])


# ---------------------------------------------------------------------- loggers
def read_rows(path) -> list[dict]:
    """The logger's rows with numbers parsed, empty CSV cells left out."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".csv":
        raw = list(csv.DictReader(io.StringIO(text, newline="")))
    else:
        raw = [json.loads(line) for line in text.splitlines()]
    rows = []
    for row in raw:
        parsed = {}
        for key, value in row.items():
            if value == "":
                continue
            if key == "kind":
                parsed[key] = value
            elif key in ("epoch", "step"):
                parsed[key] = int(value)
            else:
                parsed[key] = float(value)
        rows.append(parsed)
    return rows


def expected_rows(trainer, recorder, every_n_steps=None) -> list[dict]:
    """What the loggers should have written, from the History and the recorded epoch logs."""
    rows, history = [], trainer.history
    epoch_end_steps = {step: (epoch, logs) for epoch, step, logs in recorder.logs}
    steps = history["step_loss"].steps
    for i, step in enumerate(steps):
        if every_n_steps and step % every_n_steps == 0:
            rows.append({"kind": "step", "epoch": next(e for e, s, _ in recorder.logs
                                                       if s >= step),
                         "step": step, "step_loss": history["step_loss"].values[i],
                         "step_lr": history["step_lr"].values[i]})
        if step in epoch_end_steps:
            epoch, logs = epoch_end_steps[step]
            rows.append({"kind": "epoch", "epoch": epoch, "step": step, **logs})
    return rows


LOGGERS = [pytest.param(CSVLogger, "metrics.csv", id="csv"),
           pytest.param(JSONLLogger, "metrics.jsonl", id="jsonl")]
# the first epoch does not validate, so the CSV header must grow when val_loss appears
EPOCHS = [([0.9, 0.7, 0.8], None), ([0.6, 0.5, 0.55], {"val_loss": 0.52, "val_acc": 0.75}),
          ([0.4, 0.3, 0.35], {"val_loss": 0.41, "val_acc": 0.875})]


@pytest.mark.parametrize("logger_class, name", LOGGERS)
@pytest.mark.parametrize("every_n_steps", [None, 2])
def test_loggers_write_a_row_per_epoch_and_step(tmp_path, logger_class, name, every_n_steps):
    trainer = fake_trainer(tmp_path, steps_per_epoch=3)
    recorder = Recorder()
    drive(trainer, [logger_class(every_n_steps=every_n_steps), recorder], EPOCHS, lr_decay=0.5)
    rows = read_rows(tmp_path / name)
    assert rows == expected_rows(trainer, recorder, every_n_steps)
    assert sum(row["kind"] == "epoch" for row in rows) == 3
    assert sum(row["kind"] == "step" for row in rows) == (4 if every_n_steps else 0)
    if logger_class is CSVLogger:
        header = (tmp_path / name).read_text().splitlines()[0].split(",")
        assert header[:3] == ["kind", "epoch", "step"]
        assert {"loss", "lr", "val_loss", "val_acc"} <= set(header)


@pytest.mark.parametrize("logger_class, name", LOGGERS)
def test_loggers_resume_without_duplicates(tmp_path, logger_class, name):
    whole_dir, resumed_dir = tmp_path / "whole", tmp_path / "resumed"
    epochs = EPOCHS + [([0.3, 0.2, 0.25], {"val_loss": 0.4, "val_acc": 0.9})]
    for folder in (whole_dir, resumed_dir):
        folder.mkdir()
    whole = fake_trainer(whole_dir, epochs=4, steps_per_epoch=3)
    drive(whole, [logger_class(every_n_steps=1)], epochs, lr_decay=0.5)

    # the first run goes on past its last checkpoint (end of epoch 1, step 6): two more steps
    # and a whole epoch are written, then the run dies and resumes from that checkpoint
    trainer = fake_trainer(resumed_dir, epochs=4, steps_per_epoch=3)
    drive(trainer, [logger_class(every_n_steps=1)], epochs[:3], lr_decay=0.5)
    with open(resumed_dir / name, "a", encoding="utf-8") as f:
        f.write("epoch,3,11,0.2" if name.endswith("csv") else '{"kind": "epoch", "ep')
    checkpoint = {"epoch": 2, "global_step": 6, "batch_index": 0}
    resumed = fake_trainer(resumed_dir, epochs=4, steps_per_epoch=3)
    resumed.state.load(checkpoint)
    resumed.optimizer.param_groups[0]["lr"] = 0.1 * 0.5 ** 6
    drive(resumed, [logger_class(every_n_steps=1)], epochs[2:], lr_decay=0.5)
    assert read_rows(resumed_dir / name) == read_rows(whole_dir / name)

    # a run started from scratch replaces the file
    fresh = fake_trainer(resumed_dir, epochs=1, steps_per_epoch=3)
    drive(fresh, [logger_class()], epochs[:1])
    assert [row["epoch"] for row in read_rows(resumed_dir / name)] == [0]


def test_loggers_sync_to_disk_at_each_epoch_end(tmp_path, monkeypatch):
    synced = []
    real_fsync = os.fsync

    def fsync(fd):
        synced.append(os.fstat(fd).st_ino)
        real_fsync(fd)

    monkeypatch.setattr("dlfree.train.callbacks.loggers.os.fsync", fsync)

    class Count:
        def dlfree_train_epoch_end(self):
            synced.append("epoch end")

    drive(fake_trainer(tmp_path, steps_per_epoch=3), [JSONLLogger(every_n_steps=1), Count()],
          [([0.5, 0.4, 0.3], None)] * 2)
    log = (tmp_path / "metrics.jsonl").stat().st_ino
    # the (atomic) start of the file, each epoch's rows before the next callback runs, the end
    assert [s for s in synced if s in (log, "epoch end")] == \
        [log, log, "epoch end", log, "epoch end", log]


def test_loggers_need_a_place_for_their_file(tmp_path):
    trainer = fake_trainer(tmp_path)
    trainer.run_dir = None
    with pytest.raises(ValueError, match="CSVLogger: give path=, or a Trainer run_dir"):
        drive(trainer, [CSVLogger()], EPOCHS)
    with pytest.raises(ValueError, match="every_n_steps must be an integer >= 1"):
        JSONLLogger(every_n_steps=0)


def test_loggers_through_the_trainer_resume_from_a_checkpoint(tmp_path, mlp, loaders):
    train, val = loaders(n=12, batch_size=4)
    run_dir, checkpoint_dir = tmp_path / "run", tmp_path / "checkpoints"

    def fit(max_epochs):
        model = mlp()
        trainer = dl.train.Trainer(
            model, optim.SGD(model.parameters(), lr=0.1), nn.CrossEntropyLoss(),
            callbacks=[CSVLogger(every_n_steps=2), JSONLLogger(), HTMLReport()],
            max_epochs=max_epochs, run_dir=run_dir, checkpoint_dir=checkpoint_dir)
        return trainer.fit(train, val)

    fit(2)
    history = fit(3)
    # the report's state came back from the checkpoint: it times all three epochs
    report = parse(run_dir / "report.html")
    assert {"epoch 1", "epoch 2", "epoch 3"} <= set(report.cells)
    assert "epoch 4" not in report.cells
    assert len(polylines(report)["loss"]) == 3
    for name in ("metrics.csv", "metrics.jsonl"):
        rows = read_rows(run_dir / name)
        epoch_rows = [row for row in rows if row["kind"] == "epoch"]
        assert [row["epoch"] for row in epoch_rows] == [0, 1, 2]
        for key in ("loss", "lr", "val_loss"):
            assert [row[key] for row in epoch_rows] == history[key].values
            assert [row["step"] for row in epoch_rows] == history[key].steps
        step_rows = [row for row in rows if row["kind"] == "step"]
        assert [row["step"] for row in step_rows] == \
            ([2, 4, 6, 8] if name.endswith("csv") else [])
        assert [row["step_loss"] for row in step_rows] == \
            [history["step_loss"].values[s - 1] for s in (2, 4, 6, 8)][:len(step_rows)]


# ---------------------------------------------------------------------- LR monitor
def test_lr_monitor_records_every_group(tmp_path):
    trainer = fake_trainer(tmp_path, lrs=(0.1, 0.02, 0.3), steps_per_epoch=2)
    used, after = [], []

    class Watch:
        def dlfree_train_batch_start(self, trainer):
            used.append([g["lr"] for g in trainer.optimizer.param_groups])

        def dlfree_train_epoch_end(self, trainer):
            after.append([g["lr"] for g in trainer.optimizer.param_groups])

    recorder = Recorder()
    drive(trainer, [Watch(), LRMonitor(every_step=True), recorder, CSVLogger()],
          [([1.0, 0.9], None)] * 3, lr_decay=0.5)
    history = trainer.history
    for group in range(3):
        suffix = "" if group == 0 else f"/group{group}"
        assert history[f"step_lr{suffix}"].values == [lrs[group] for lrs in used]
        assert history[f"step_lr{suffix}"].steps == list(range(1, 7))
        assert history[f"lr{suffix}"].values == [lrs[group] for lrs in after]
        assert history[f"lr{suffix}"].steps == [2, 4, 6]
    # group 0 is the Trainer's own "lr": not logged twice
    assert len(history["lr"]) == len(history["step_lr"]) // 2 == 3
    assert [logs["lr/group2"] for _, _, logs in recorder.logs] == [lrs[2] for lrs in after]
    assert [row["lr/group1"] for row in read_rows(tmp_path / "metrics.csv")] == \
        [lrs[1] for lrs in after]
    epoch_only = fake_trainer(tmp_path, lrs=(0.1, 0.02))
    drive(epoch_only, [LRMonitor()], [([1.0, 0.9], None)] * 2, lr_decay=0.5)
    assert "step_lr/group1" not in epoch_only.history
    assert epoch_only.history["lr/group1"].values == [0.005, 0.00125]


def torch_lrs(lrs, step_size, gamma, steps, steps_per_epoch):
    """PyTorch's lrs for SGD groups under StepLR stepped once per optimizer step: those each
    step used, and those after each epoch's last step."""
    groups = [{"params": [torch.zeros(1, requires_grad=True)], "lr": lr} for lr in lrs]
    opt = torch.optim.SGD(groups, lr=lrs[0])
    scheduler = torch.optim.lr_scheduler.StepLR(opt, step_size=step_size, gamma=gamma)
    used, after = [], []
    for step in range(1, steps + 1):
        used.append([g["lr"] for g in opt.param_groups])
        opt.step()
        scheduler.step()
        if step % steps_per_epoch == 0:
            after.append([g["lr"] for g in opt.param_groups])
    return used, after


def test_lr_monitor_through_the_trainer_matches_pytorch(mlp, loaders):
    train, val = loaders(n=12, batch_size=4)
    model = mlp()
    opt = optim.SGD([{"params": list(model[0].parameters())},
                     {"params": list(model[2].parameters()), "lr": 0.3}], lr=0.1)
    scheduler = optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    trainer = dl.train.Trainer(model, opt, nn.CrossEntropyLoss(), scheduler=scheduler,
                               scheduler_interval="step", max_epochs=2,
                               callbacks=[LRMonitor(every_step=True)])
    history = trainer.fit(train, val)
    used, after = torch_lrs([0.1, 0.3], 2, 0.5, steps=6, steps_per_epoch=3)
    assert history["step_lr"].values == [lrs[0] for lrs in used]
    assert history["step_lr/group1"].values == [lrs[1] for lrs in used]
    assert history["lr"].values == [lrs[0] for lrs in after]
    assert history["lr/group1"].values == [lrs[1] for lrs in after]


# ---------------------------------------------------------------------- ReduceOnStall
@pytest.mark.parametrize("mode", ["min", "max"])
@pytest.mark.parametrize("patience, factor, min_lr", [(1, 0.5, 0.0), (2, 0.1, 1e-4),
                                                      (3, 0.3, 0.0)])
def test_reduce_on_stall_matches_pytorch_reduce_lr_on_plateau(tmp_path, mode, patience,
                                                               factor, min_lr):
    rng = np.random.default_rng(patience)
    # plateaus: a value repeats or worsens for a few epochs, then improves
    steps = rng.choice([0.0, 0.0, 0.1, -0.2, 0.05], size=30)
    values = (1.0 - np.cumsum(steps) * (1 if mode == "min" else -1)).round(3).tolist()
    trainer = fake_trainer(tmp_path, epochs=len(values), lrs=(0.1, 0.02))
    lrs_seen = []

    class Watch:
        def dlfree_train_epoch_end(self, trainer):
            lrs_seen.append([g["lr"] for g in trainer.optimizer.param_groups])

    reducer = ReduceOnStall(mode=mode, patience=patience, factor=factor, min_lr=min_lr)
    drive(trainer, [reducer, Watch()], val_epochs(values))

    groups = [{"params": [torch.zeros(1, requires_grad=True)], "lr": lr} for lr in (0.1, 0.02)]
    opt = torch.optim.SGD(groups, lr=0.1)
    plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(
        opt, mode=mode, factor=factor, patience=patience - 1, threshold=0.0,
        threshold_mode="abs", cooldown=0, min_lr=min_lr, eps=0.0)
    want = []
    for value in values:
        plateau.step(value)
        want.append([g["lr"] for g in opt.param_groups])
    assert lrs_seen == want
    assert len(reducer.decay_epochs) > 0


def test_reduce_on_stall_state_dict_and_arguments(tmp_path):
    values = [1.0, 1.0, 1.0, 0.5, 0.6, 0.7, 0.8, 0.9]
    whole = ReduceOnStall(patience=2, factor=0.5)
    drive(fake_trainer(tmp_path, epochs=8), [whole], val_epochs(values))
    trainer = fake_trainer(tmp_path, epochs=8)
    first = ReduceOnStall(patience=2, factor=0.5)
    drive(trainer, [first], val_epochs(values[:5]), end=False)
    second = ReduceOnStall(patience=2, factor=0.5)
    second.load_state_dict(json.loads(json.dumps(first.state_dict())))
    drive(trainer, [second], val_epochs(values)[5:])
    assert second.decay_epochs == whole.decay_epochs == [2, 5, 7]
    assert trainer.optimizer.param_groups[0]["lr"] == 0.1 * 0.5 ** 3
    for kwargs, match in [({"factor": 1.0}, "factor must be a number in"),
                          ({"tol": -1}, "tol must be a finite number >= 0"),
                          ({"patience": 0}, "patience must be an integer >= 1")]:
        with pytest.raises(ValueError, match=match):
            ReduceOnStall(**kwargs)
    no_groups = fake_trainer(tmp_path)
    no_groups.optimizer = None
    with pytest.raises(TypeError, match="has no param_groups"):
        ReduceOnStall().dlfree_train_start(no_groups)


# ---------------------------------------------------------------------- progress bar
def smoothed_by_rule(losses, weight):
    """The shown loss written out: a weighted mean of the losses so far, the newest weighing
    `weight` and each older one (1 - weight) times the next newer; weight 0: the plain mean."""
    if weight == 0:
        return sum(losses) / len(losses)
    weights = [(1 - weight) ** (len(losses) - 1 - i) for i in range(len(losses))]
    return sum(w * x for w, x in zip(weights, losses)) / sum(weights)


@pytest.mark.parametrize("weight", [0.0, 0.1, 0.5, 1.0])
def test_smoothed_loss_follows_the_rule(weight):
    losses = [2.0, 1.5, 1.75, 0.5, 0.25, 1.0]
    smoothed = SmoothedValue(weight)
    for n in range(1, len(losses) + 1):
        assert smoothed.add(losses[n - 1]) == pytest.approx(
            smoothed_by_rule(losses[:n], weight), rel=1e-12)


def test_progress_bar_shows_loss_rate_eta_and_epochs(tmp_path):
    out = io.StringIO()
    losses = [[0.9, 0.7, 0.8, 0.6], [0.5, 0.55, 0.4, 0.45]]
    trainer = fake_trainer(tmp_path, epochs=2, steps_per_epoch=4)
    drive(trainer, [ProgressBar(file=out, bar=True, smoothing=0.5, refresh_interval=0)],
          [(losses[0], None), (losses[1], {"val_loss": 0.375})])
    text = out.getvalue()
    for epoch in (0, 1):
        assert f"epoch {epoch + 1}/2" in text
        for n in range(1, 5):
            shown = f"{smoothed_by_rule(losses[epoch][:n], 0.5):.4g}"
            assert re.search(rf"{n}/4 \[[\d:]+<[\d:]+, +[\d.]+it/s, loss={re.escape(shown)}\]",
                             text), (n, shown, text)
    assert "4/4" in text and "val_loss=0.375" in text and "lr=0.1" in text
    assert f"loss={sum(losses[1]) / 4:.4g}, lr=0.1, val_loss=0.375]" in text


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
def test_progress_bar_on_a_terminal_that_reports_no_width(tmp_path):
    """A fresh pseudo-terminal reports 0 columns, as some CI terminals do: the bar takes
    the width it needs rather than drawing empty lines."""
    leader, follower = os.openpty()
    assert os.get_terminal_size(follower).columns == 0
    shown = b""
    with os.fdopen(follower, "w") as terminal:
        drive(fake_trainer(tmp_path, epochs=1, steps_per_epoch=3),
              [ProgressBar(file=terminal, refresh_interval=0)], [([0.5, 0.25, 0.75], None)])
        terminal.flush()
        while select.select([leader], [], [], 0.5)[0]:  # read while the terminal is open
            shown += os.read(leader, 65536)
    os.close(leader)
    lines = [line.strip() for line in shown.decode().replace("\r", "\n").split("\n")]
    drawn = [line for line in lines if line]
    assert drawn and all(line.startswith("epoch 1/1") for line in drawn), lines
    assert any("3/3" in line and "loss=0.5" in line for line in drawn), drawn


def test_progress_lines_without_a_terminal(tmp_path):
    out = io.StringIO()  # not a terminal: the default is one line per epoch
    drive(fake_trainer(tmp_path, epochs=2, steps_per_epoch=3), [ProgressBar(file=out)],
          [([0.5, 0.25, 0.75], None), ([0.25, 0.5, 0.5], {"val_loss": 0.125})])
    lines = out.getvalue().splitlines()
    assert len(lines) == 2
    assert re.fullmatch(r"epoch 1/2: loss=0\.5, lr=0\.1 \(3 batches in [\d.]+ s, [\d.]+ it/s\)",
                        lines[0])
    assert lines[1].startswith("epoch 2/2: loss=0.4167, lr=0.1, val_loss=0.125 (3 batches")
    with pytest.raises(ValueError, match="smoothing must be a number in"):
        ProgressBar(smoothing=1.5)
    with pytest.raises(TypeError, match="bar must be True, False or None"):
        ProgressBar(bar="yes")


def test_progress_bar_through_the_trainer(mlp, loaders):
    train, val = loaders(n=12, batch_size=4)
    model = mlp()
    out = io.StringIO()
    trainer = dl.train.Trainer(model, optim.SGD(model.parameters(), lr=0.1),
                               nn.CrossEntropyLoss(), max_epochs=2,
                               callbacks=[ProgressBar(file=out, bar=True)])
    history = trainer.fit(train, val)
    text = out.getvalue()
    assert "epoch 1/2" in text and "epoch 2/2" in text and "3/3" in text and "it/s" in text
    assert f"val_loss={history['val_loss'].last:.4g}" in text


# ---------------------------------------------------------------------- HTML report
VOID = {"meta", "br", "hr", "img", "input", "link", "area", "base", "col", "source", "wbr"}


class StrictParser(HTMLParser):
    """Collects tags, attributes and text, and insists that every element is closed in
    order."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.open: list[str] = []
        self.tags: list[tuple[str, dict]] = []
        self.cells: list[str] = []
        self.text: list[str] = []
        self.charts: list[list[str]] = []  # the series drawn in each <svg>

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag == "svg":
            self.charts.append([])
        if tag not in VOID:
            self.open.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag == "polyline":
            self.charts[-1].append(dict(attrs)["data-series"])

    def handle_endtag(self, tag):
        assert self.open and self.open[-1] == tag, f"</{tag}> closes {self.open[-1:]}"
        self.open.pop()

    def handle_data(self, data):
        self.text.append(data)
        if self.open and self.open[-1] in ("td", "th"):
            self.cells.append(data)


def parse(path) -> StrictParser:
    parser = StrictParser()
    parser.feed(path.read_text(encoding="utf-8"))
    parser.close()
    assert parser.open == []
    return parser


def assert_self_contained(parser: StrictParser, text: str):
    names = {tag for tag, _ in parser.tags}
    assert not names & {"script", "link", "img", "iframe", "object", "embed"}
    for tag, attrs in parser.tags:
        assert not {"src", "href", "xlink:href"} & set(attrs), (tag, attrs)
        assert not any("http:" in str(v) or "https:" in str(v) for v in attrs.values())
    assert "url(" not in text and "@import" not in text


def polylines(parser: StrictParser) -> dict[str, list[tuple[float, float]]]:
    return {attrs["data-series"]: [tuple(map(float, p.split(",")))
                                   for p in attrs["points"].split()]
            for tag, attrs in parser.tags if tag == "polyline"}


def test_html_report_through_the_trainer(tmp_path, mlp, loaders):
    train, val = loaders(n=12, batch_size=4)
    model = mlp()
    report = HTMLReport()
    trainer = dl.train.Trainer(
        model, optim.SGD(model.parameters(), lr=0.1), nn.CrossEntropyLoss(), max_epochs=3,
        metrics={"acc": dl.metrics.Accuracy("multiclass", num_classes=3)},
        callbacks=[LRMonitor(), report], run_dir=tmp_path)
    history = trainer.fit(train, val)
    path = tmp_path / "report.html"
    assert report.path == path
    text = path.read_text(encoding="utf-8")
    parser = parse(path)
    assert_self_contained(parser, text)
    # train, validation and per-step values of one quantity share a chart
    assert sorted(map(sorted, parser.charts)) == [["loss", "step_loss", "val_loss"],
                                                   ["lr", "step_lr"], ["val_acc"]]
    lines = polylines(parser)
    assert set(lines) == set(history.names())
    for name, points in lines.items():
        series = history[name]
        assert len(points) == len(series.values)
        xs, ys = [x for x, _ in points], [y for _, y in points]
        assert all(LEFT <= x <= WIDTH - RIGHT for x in xs)
        assert all(TOP <= y <= HEIGHT - BOTTOM for y in ys)
        # x grows with the step and y falls as the value grows, both linearly
        if len(set(series.steps)) > 1:
            slope = (xs[-1] - xs[0]) / (series.steps[-1] - series.steps[0])
            assert slope > 0
            assert xs == pytest.approx([xs[0] + slope * (s - series.steps[0])
                                        for s in series.steps], abs=0.11)
        if max(series.values) > min(series.values):
            top, low = series.values.index(max(series.values)), series.values.index(
                min(series.values))
            slope = (ys[top] - ys[low]) / (series.values[top] - series.values[low])
            assert slope < 0
            assert ys == pytest.approx([ys[low] + slope * (v - series.values[low])
                                        for v in series.values], abs=0.11)
    cells = parser.cells
    for key, value in trainer.config.items():
        assert key in cells
        assert (value if isinstance(value, str) else json.dumps(value)) in cells
    for name in history.names():
        assert f"{history[name].last:.4g}" in cells
    for phase in ("step", "validation", "data"):
        assert phase in cells and f"{round(trainer.timings[phase], 4):.4g}" in cells
    assert {"total", "epoch 1", "epoch 2", "epoch 3"} <= set(cells)
    assert "Training finished" in "".join(parser.text)


def test_html_report_escapes_text_and_reports_failures(tmp_path):
    nasty = '<script>alert("x")</script> & <b>'
    trainer = fake_trainer(tmp_path, config={"note": nasty, "layers": [3, "<i>"]})
    path = tmp_path / "out" / "r.html"

    class Fail:
        def dlfree_train_epoch_end(self, epoch):
            if epoch == 1:
                raise RuntimeError(f"diverged {nasty}")

    trainer.history.log(f"val_{nasty}", 0.5, 0)
    with pytest.raises(RuntimeError, match="diverged"):
        drive(trainer, [HTMLReport(path=path), Fail()], [([0.5, 0.4], {"val_loss": 0.3})] * 3)
    text = path.read_text(encoding="utf-8")
    parser = parse(path)
    assert_self_contained(parser, text)
    assert "<script>" not in text and "<b>" not in text and "<i>" not in text
    assert nasty in parser.cells and '[3, "<i>"]' in parser.cells
    assert "Training stopped by CallbackError[RuntimeError]: callback Fail " \
        f"(trainer.callbacks[1]) raised in dlfree_train_epoch_end: RuntimeError: diverged " \
        f"{nasty}" in "".join(parser.text)
    assert len(polylines(parser)[f"val_{nasty}"]) == 1
    assert len(polylines(parser)["val_loss"]) == 2

    unstarted = HTMLReport(path=tmp_path / "never.html")  # failed before its train_start
    unstarted.dlfree_train_exception(trainer, RuntimeError("early"))
    assert not (tmp_path / "never.html").exists()
    no_dir = fake_trainer(tmp_path)
    no_dir.run_dir = None
    with pytest.raises(ValueError, match="HTMLReport: give path=, or a Trainer run_dir"):
        drive(no_dir, [HTMLReport()], [])


def test_html_report_is_written_when_training_fails(tmp_path, mlp, loaders):
    train, _ = loaders(n=8, batch_size=4)
    model = mlp()

    def step_fn(trainer, batch):
        if trainer.state.global_step == 3:
            raise FloatingPointError("loss became NaN")
        x, y = batch
        return F.cross_entropy(model(x), y)

    trainer = dl.train.Trainer(model, optim.SGD(model.parameters(), lr=0.1), step_fn=step_fn,
                               max_epochs=3, run_dir=tmp_path, callbacks=[HTMLReport()])
    with pytest.raises(FloatingPointError):
        trainer.fit(train)
    parser = parse(tmp_path / "report.html")
    assert "Training stopped by FloatingPointError: loss became NaN" in "".join(parser.text)
    assert len(polylines(parser)["step_loss"]) == 3
    assert len(polylines(parser)["loss"]) == 1


@pytest.mark.parametrize("low, high, integer", [
    (0.0, 1.0, False), (0.0013, 0.0071, False), (-3.2, 47.0, False), (5.0, 5.0, False),
    (1e-9, 3e-9, False), (0.0, 0.0, False), (1.0, 7.0, True), (0.0, 1000.0, True),
    (3.0, 3.0, True), (2.302, 2.3021, False),
])
def test_chart_ticks_are_round_and_cover_the_data(low, high, integer):
    ticks = nice_ticks(low, high, integer=integer)
    step = ticks[1] - ticks[0]
    assert ticks[0] <= low and ticks[-1] >= high
    assert 2 <= len(ticks) - 1 <= 7
    assert np.diff(ticks) == pytest.approx([step] * (len(ticks) - 1), rel=1e-9)
    mantissa = step / 10 ** math.floor(math.log10(step))
    assert min(abs(mantissa - m) for m in (1, 2, 5, 10)) < 1e-9
    if integer:
        assert all(t == int(t) for t in ticks)
