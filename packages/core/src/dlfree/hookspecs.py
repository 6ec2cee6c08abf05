"""The hooks a dl.free plugin can implement.

Register-style hooks: the host passes `register`, and the plugin calls it once per
thing it provides. An implementation may accept a subset of a hook's arguments.
"""

from __future__ import annotations

import pluggy

hookspec = pluggy.HookspecMarker("dlfree")
hookimpl = pluggy.HookimplMarker("dlfree")


@hookspec
def dlfree_register_backends(register):
    """Call `register(BackendClass)` for each array backend (a `dlfree.backends.Backend`)."""


@hookspec
def dlfree_register_layers(register):
    """Call `register(ModuleClass, name=None)` for each layer; the name defaults to the class's."""


@hookspec
def dlfree_register_losses(register):
    """Call `register(LossClass, name=None)` for each loss module."""


@hookspec
def dlfree_register_initializers(register):
    """Call `register(fn, name)` for each weight initializer (a function filling a tensor)."""


@hookspec
def dlfree_register_optimizers(register):
    """Call `register(OptimizerClass, name=None)` for each optimizer."""


@hookspec
def dlfree_register_schedulers(register):
    """Call `register(SchedulerClass, name=None)` for each learning-rate scheduler."""


@hookspec
def dlfree_register_metrics(register):
    """Call `register(MetricClass, name=None)` for each metric."""


@hookspec
def dlfree_register_architectures(register):
    """Call `register(model_type, config_cls, {head: ModelClass})` for each model family."""


@hookspec
def dlfree_register_callbacks(register):
    """Call `register(CallbackClass, name=None)` for each training-loop callback."""


@hookspec
def dlfree_register_commands(cli):
    """Add subcommands to the `dlfree` command: `cli` is an argparse subparsers object;
    set `func=` on your parser (`parser.set_defaults(func=run)`); `run(args)` is called."""


# Training-loop events: a `dlfree.train.Trainer` calls these on its callbacks (which may be
# plain objects with methods of these names) and on every registered plugin.
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
