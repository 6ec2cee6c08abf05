"""`EarlyStopping`: stop training once a monitored value has not improved for `patience`
epochs, optionally putting back the best weights."""

from __future__ import annotations

import copy
import math
import numbers

from dlfree import hookimpl
from dlfree.tensor import Tensor

from ..watched import check_monitor, monitored_value, require_validation


class EarlyStopping:
    """Sets `trainer.should_stop` once `monitor` has gone `patience` epochs (that logged it)
    without improving on the best value so far by more than `min_delta`: lower by more than
    `min_delta` in mode "min", higher in mode "max". NaN never counts as an improvement.

    `best`, `best_epoch` and `stopped_epoch` (None until it stops) tell what happened. With
    `restore_best`, the model's weights from the best epoch are copied back when training
    ends. Its state is saved in the Trainer's training checkpoints, so a resumed run keeps
    counting where it was.
    """

    def __init__(self, monitor: str = "val_loss", mode: str = "min", patience: int = 3,
                 min_delta: float = 0.0, restore_best: bool = False):
        check_monitor("EarlyStopping", monitor, mode)
        if isinstance(patience, bool) or not isinstance(patience, numbers.Integral) or \
                patience < 1:
            raise ValueError(f"EarlyStopping: patience must be an integer >= 1 (epochs without "
                             f"improvement before stopping), got {patience!r}")
        if isinstance(min_delta, bool) or not isinstance(min_delta, numbers.Real) or \
                not 0 <= min_delta < math.inf:
            raise ValueError(f"EarlyStopping: min_delta must be a finite number >= 0, got "
                             f"{min_delta!r}")
        self.monitor = monitor
        self.mode = mode
        self.patience = int(patience)
        self.min_delta = float(min_delta)
        self.restore_best = bool(restore_best)
        self.best: float | None = None
        self.best_epoch: int | None = None
        self.stopped_epoch: int | None = None
        self.wait = 0
        self._best_weights: dict | None = None

    def improves(self, value: float) -> bool:
        """Whether `value` beats the best so far by more than `min_delta`."""
        if math.isnan(value):
            return False
        if self.best is None:
            return True
        if self.mode == "min":
            return value < self.best - self.min_delta
        return value > self.best + self.min_delta

    @hookimpl
    def dlfree_train_start(self, trainer):
        require_validation("EarlyStopping", self.monitor, trainer)

    @hookimpl
    def dlfree_train_epoch_end(self, trainer, epoch, logs):
        value = monitored_value("EarlyStopping", self.monitor, logs, trainer)
        if value is None:
            return
        if self.improves(value):
            self.best, self.best_epoch, self.wait = value, epoch, 0
            if self.restore_best:
                self._best_weights = {name: _copy(v)
                                      for name, v in trainer.model.state_dict().items()}
            return
        self.wait += 1
        if self.wait >= self.patience:
            self.stopped_epoch = epoch
            trainer.should_stop = True

    @hookimpl
    def dlfree_train_end(self, trainer):
        if self.restore_best and self._best_weights is not None:
            trainer.model.load_state_dict(self._best_weights)

    def state_dict(self) -> dict:
        """The counters (and, with `restore_best`, the best weights as tensors)."""
        return {"best": self.best, "best_epoch": self.best_epoch,
                "stopped_epoch": self.stopped_epoch, "wait": self.wait,
                "best_weights": self._best_weights}

    def load_state_dict(self, state: dict) -> None:
        """Continue from what `state_dict()` returned."""
        self.best = state["best"]
        self.best_epoch = state["best_epoch"]
        self.stopped_epoch = state["stopped_epoch"]
        self.wait = int(state["wait"])
        self._best_weights = state["best_weights"]


def _copy(value):
    # state_dict() tensors share memory with the parameters, which the optimizer changes
    return value.detach().clone() if isinstance(value, Tensor) else copy.deepcopy(value)
