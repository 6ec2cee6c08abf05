"""The learning rate in training: `LRMonitor` records every param group's, and `ReduceOnStall`
lowers them when a monitored value stalls (a trend query on the History)."""

from __future__ import annotations

import math
import numbers

from dlfree import hookimpl

from ..watched import check_monitor, monitored_value, require_validation


def group_lrs(optimizer) -> list[float | None]:
    """The lr of each of `optimizer`'s param groups (None for a group without one)."""
    groups = getattr(optimizer, "param_groups", None) or []
    return [float(group["lr"]) if "lr" in group else None for group in groups]


def lr_names(lrs: list[float | None], prefix: str = "") -> dict[str, float]:
    """History names for each group's lr: "lr" for group 0, "lr/group1", ... (after
    `prefix`)."""
    return {prefix + ("lr" if i == 0 else f"lr/group{i}"): lr
            for i, lr in enumerate(lrs) if lr is not None}


class LRMonitor:
    """Records the lr of every param group in `trainer.history`, once per epoch (and with
    `every_step`, once per optimizer step too).

    Group 0's lr is "lr" per epoch and "step_lr" per step, the names the Trainer already
    logs it under (a value already logged at that step is not logged again); group i's is
    "lr/group<i>" and "step_lr/group<i>". A step's value is the lr that step used; an
    epoch's is the lr as it stands after the epoch's last batch (so an epoch-wise
    scheduler's next step is not in it), the point where the Trainer reads "lr". The epoch
    values are also put in the epoch's logs, so loggers and reports listed after this
    callback record them.
    """

    def __init__(self, every_step: bool = False):
        if not isinstance(every_step, bool):
            raise TypeError(f"LRMonitor: every_step must be True or False, got {every_step!r}")
        self.every_step = every_step
        self._used: list[float | None] = []  # the lrs the batch in progress trains with
        self._after_batch: list[float | None] | None = None
        self._last_logged_step: int | None = None

    @hookimpl
    def dlfree_train_start(self, trainer):
        self._last_logged_step = trainer.state.global_step
        self._after_batch = None

    @hookimpl
    def dlfree_train_epoch_start(self, trainer):
        self._after_batch = None

    @hookimpl
    def dlfree_train_batch_start(self, trainer):
        self._used = group_lrs(trainer.optimizer)

    @hookimpl
    def dlfree_train_batch_end(self, trainer):
        self._after_batch = group_lrs(trainer.optimizer)
        self._log_step(trainer)

    @hookimpl
    def dlfree_train_epoch_end(self, trainer, logs):
        self._log_step(trainer)  # the step an epoch's leftover accumulated batches took
        lrs = self._after_batch if self._after_batch is not None else \
            group_lrs(trainer.optimizer)
        values = lr_names(lrs)
        _log(trainer, values)
        for name, lr in values.items():
            logs.setdefault(name, lr)

    def _log_step(self, trainer) -> None:
        step = trainer.state.global_step
        if not self.every_step or step == self._last_logged_step:
            return
        self._last_logged_step = step
        _log(trainer, lr_names(self._used, prefix="step_"))


def _log(trainer, values: dict[str, float]) -> None:
    history, step = trainer.history, trainer.state.global_step
    for name, value in values.items():
        if name not in history or history[name].steps[-1] != step:
            history.log(name, value, step)


class ReduceOnStall:
    """Multiplies every param group's lr by `factor` (but not below `min_lr`) at the end of
    an epoch where `trainer.history[monitor].stalled(patience, tol, mode)`: none of the last
    `patience` values beat the best one before them by more than `tol`. After lowering the lr
    it waits for `patience` new values before it looks again.

    With `tol=0` this is PyTorch's `ReduceLROnPlateau(patience=patience - 1,
    threshold_mode="abs", threshold=0)`. It sets the lr directly, so pair it with no
    scheduler, or one that changes the lr relative to its current value. `decay_epochs`
    lists the epochs at which it lowered the lr; its state is saved in training checkpoints.
    """

    def __init__(self, monitor: str = "val_loss", mode: str = "min", patience: int = 3,
                 tol: float = 0.0, factor: float = 0.1, min_lr: float = 0.0):
        check_monitor("ReduceOnStall", monitor, mode)
        if isinstance(patience, bool) or not isinstance(patience, numbers.Integral) or \
                patience < 1:
            raise ValueError(f"ReduceOnStall: patience must be an integer >= 1, got "
                             f"{patience!r}")
        for name, value, valid, ok in (
                ("tol", tol, "a finite number >= 0", lambda v: 0 <= v < math.inf),
                ("factor", factor, "a number in (0, 1)", lambda v: 0 < v < 1),
                ("min_lr", min_lr, "a finite number >= 0", lambda v: 0 <= v < math.inf)):
            if isinstance(value, bool) or not isinstance(value, numbers.Real) or not ok(value):
                raise ValueError(f"ReduceOnStall: {name} must be {valid}, got {value!r}")
        self.monitor = monitor
        self.mode = mode
        self.patience = int(patience)
        self.tol = float(tol)
        self.factor = float(factor)
        self.min_lr = float(min_lr)
        self.decay_epochs: list[int] = []
        self._values_at_decay = 0

    @hookimpl
    def dlfree_train_start(self, trainer):
        if not getattr(trainer.optimizer, "param_groups", None):
            raise TypeError(f"ReduceOnStall: the Trainer's optimizer "
                            f"({type(trainer.optimizer).__name__}) has no param_groups whose "
                            "lr it could lower")
        require_validation("ReduceOnStall", self.monitor, trainer)

    @hookimpl
    def dlfree_train_epoch_end(self, trainer, epoch, logs):
        if monitored_value("ReduceOnStall", self.monitor, logs, trainer) is None:
            return
        series = trainer.history[self.monitor]
        if len(series) - self._values_at_decay < self.patience or \
                not series.stalled(self.patience, self.tol, self.mode):
            return
        for group in trainer.optimizer.param_groups:
            group["lr"] = max(group["lr"] * self.factor, self.min_lr)
        self._values_at_decay = len(series)
        self.decay_epochs.append(epoch)

    def state_dict(self) -> dict:
        return {"decay_epochs": list(self.decay_epochs),
                "values_at_decay": self._values_at_decay}

    def load_state_dict(self, state: dict) -> None:
        self.decay_epochs = [int(e) for e in state["decay_epochs"]]
        self._values_at_decay = int(state["values_at_decay"])
