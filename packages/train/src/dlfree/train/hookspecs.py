"""The training-loop events, the hooks a `Trainer` calls on its callbacks (which may be plain
objects with methods of these names) and on every registered plugin. dlfree-train's plugin
adds them to dl.free's plugin manager through `dlfree_add_hookspecs`."""

from __future__ import annotations

from dlfree import hookspec


@hookspec
def dlfree_train_start(trainer):
    """Called once when `Trainer.fit` starts (also when it resumes from a checkpoint)."""


@hookspec
def dlfree_train_epoch_start(trainer, epoch):
    """Called before the first batch of epoch `epoch` (0-based), also when a resumed run
    re-enters an epoch it had begun."""


@hookspec
def dlfree_train_batch_start(trainer, batch, batch_index):
    """Called before the training step on `batch`, the `batch_index`-th (0-based) of its epoch."""


@hookspec
def dlfree_train_batch_end(trainer, batch, batch_index, loss, outputs):
    """Called after the training step on `batch`: `loss` is its loss as a float, `outputs`
    the model's outputs (None when a custom step function returned only the loss)."""


@hookspec
def dlfree_train_validation_end(trainer, metrics):
    """Called after validation with `metrics`, a dict of names ("val_loss", "val_<metric>")
    to floats."""


@hookspec
def dlfree_train_epoch_end(trainer, epoch, logs):
    """Called at the end of epoch `epoch` with `logs`, the epoch's values by name ("loss",
    "lr", and the validation metrics when it validated); set `trainer.should_stop` to stop."""


@hookspec
def dlfree_train_end(trainer):
    """Called once when training finishes (not when it is interrupted or fails)."""


@hookspec
def dlfree_train_exception(trainer, exception):
    """Called when training stops on `exception` (KeyboardInterrupt included) before it is
    re-raised, or, for a KeyboardInterrupt, before `fit` saves a checkpoint and returns."""
