"""ModelCheckpoint: last, best by a monitored metric (min and max), keep N numbered files,
and its best score surviving a resumed run."""

from __future__ import annotations

import dlfree as dl
from dlfree import nn, optim
from dlfree.metrics import Accuracy
from dlfree.train import ModelCheckpoint

import numpy as np
import pytest


class Snapshots:
    """The model's weights at each epoch end (listed after ModelCheckpoint, so they are the
    weights it saved)."""

    def __init__(self):
        self.weights: list[dict] = []

    def dlfree_train_epoch_end(self, trainer):
        self.weights.append({k: v.numpy().copy() for k, v in trainer.model.state_dict().items()})


def _same(model, weights: dict) -> bool:
    state = model.state_dict()
    return state.keys() == weights.keys() and \
        all(np.array_equal(state[k].numpy(), v) for k, v in weights.items())


def _trainer(mlp, callbacks, lr=2.0, **options):
    model = mlp()
    return dl.train.Trainer(model, optim.SGD(model.parameters(), lr=lr), nn.CrossEntropyLoss(),
                            callbacks=callbacks,
                            metrics={"acc": Accuracy(task="multiclass", num_classes=3)},
                            **{"max_epochs": 5, **options})


@pytest.mark.parametrize("monitor, mode", [("val_loss", "min"), ("val_acc", "max")])
def test_last_best_and_keep_n(mlp, loaders, tmp_path, monitor, mode):
    checkpoint = ModelCheckpoint(tmp_path, monitor=monitor, mode=mode, keep=2)
    snapshots = Snapshots()
    trainer = _trainer(mlp, [checkpoint, snapshots])
    train, val = loaders()
    trainer.fit(train, val)
    values = trainer.history[monitor].values
    best = int(np.argmin(values) if mode == "min" else np.argmax(values))
    assert (checkpoint.best_epoch, checkpoint.best_score) == (best, values[best])
    assert _same(dl.load(checkpoint.best_path), snapshots.weights[best])
    assert _same(dl.load(checkpoint.last_path), snapshots.weights[-1])
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "best.safetensors", "epoch-0003.safetensors", "epoch-0004.safetensors",
        "last.safetensors"]
    assert _same(dl.load(tmp_path / "epoch-0003.safetensors"), snapshots.weights[3])


def test_best_score_survives_a_resumed_run(mlp, loaders, tmp_path):
    class Interrupt:
        def dlfree_train_batch_end(self, trainer, batch_index):
            if trainer.state.epoch == 2 and batch_index == 1:
                raise KeyboardInterrupt

    # mode "max" on a falling val_loss puts the best in the first epoch, before the
    # interruption, so the resumed run can only report it if the state was restored
    train, val = loaders()
    whole = ModelCheckpoint(tmp_path / "whole", mode="max")
    _trainer(mlp, [whole]).fit(train, val)
    assert whole.best_epoch == 0
    first = ModelCheckpoint(mode="max")
    interrupted = _trainer(mlp, [first, Interrupt()], checkpoint_dir=tmp_path / "run")
    interrupted.fit(train, val)
    assert interrupted.interrupted
    second = ModelCheckpoint(mode="max")
    _trainer(mlp, [second], checkpoint_dir=tmp_path / "run").fit(train, val)
    assert second.dirpath == tmp_path / "run"
    assert (second.best_epoch, second.best_score) == (whole.best_epoch, whole.best_score)
    assert _same(dl.load(second.best_path),
                 {k: v.numpy() for k, v in dl.load(whole.best_path).state_dict().items()})


def test_mistakes_are_explained(mlp, loaders, tmp_path):
    train, _ = loaders()
    with pytest.raises(ValueError, match="ModelCheckpoint: monitors 'val_loss', a validation "
                                         r"value, but fit\(\) got no val_data"):
        _trainer(mlp, [ModelCheckpoint(tmp_path)]).fit(train)
    with pytest.raises(ValueError, match="give dirpath=, or a Trainer checkpoint_dir or run_dir"):
        _trainer(mlp, [ModelCheckpoint()]).fit(train)
    with pytest.raises(ValueError, match="mode must be 'min' or 'max', got 'low'"):
        ModelCheckpoint(mode="low")
    with pytest.raises(ValueError, match="keep must be an integer >= 0, got -1"):
        ModelCheckpoint(keep=-1)


def test_epochs_without_validation_are_skipped_not_an_error(mlp, loaders, tmp_path):
    checkpoint = ModelCheckpoint(tmp_path, monitor="val_acc", mode="max")
    trainer = _trainer(mlp, [checkpoint], max_epochs=4, validate_every_n_epochs=2)
    train, val = loaders()
    trainer.fit(train, val)
    values = trainer.history["val_acc"].values
    assert len(values) == 2
    assert checkpoint.best_epoch in (1, 3) and checkpoint.best_score == max(values)
    with pytest.raises(KeyError, match="'val_f1' was not logged"):
        _trainer(mlp, [ModelCheckpoint(tmp_path / "b", monitor="val_f1")],
                 max_epochs=1).fit(train, val)


def test_a_killed_save_leaves_nothing_and_keep_survives_going_back(mlp, loaders, tmp_path):
    dead = tmp_path / ".last.safetensors.999999999.abc.tmp"  # a writer that no longer runs
    dead.write_bytes(b"half a model")
    later = tmp_path / "epoch-0007.safetensors"  # from a run this one went back past
    later.write_bytes(b"old")
    train, val = loaders()
    _trainer(mlp, [ModelCheckpoint(tmp_path, keep=2)], max_epochs=3).fit(train, val)
    assert not dead.exists()
    assert sorted(p.name for p in tmp_path.glob("epoch-*")) == ["epoch-0001.safetensors",
                                                                "epoch-0002.safetensors"]
