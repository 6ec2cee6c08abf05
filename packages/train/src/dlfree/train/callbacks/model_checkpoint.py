"""`ModelCheckpoint`: model files (`dl.save`) at the end of epochs: the last, the best by a
monitored metric, and the most recent few, numbered by epoch."""

from __future__ import annotations

import math
import numbers
import re
from pathlib import Path

from dlfree.io import save
from dlfree.io.atomic import remove_stale_temporaries

from ..watched import monitored_value, require_validation

_NUMBERED = re.compile(r"^epoch-(\d+)\.safetensors$")
_OWN = re.compile(r"^(last|best|epoch-\d+)\.safetensors$")


class ModelCheckpoint:
    """Saves the model with `dl.save` at the end of every `every_n_epochs`-th epoch:

    - `last.safetensors` each time (with `save_last`);
    - `best.safetensors` when the epoch's `monitor` value beats the best so far (lower in
      mode "min", higher in "max"; `monitor=None` saves no best file);
    - `epoch-NNNN.safetensors` (NNNN the 0-based epoch), keeping the `keep` most recent.

    Files go to `dirpath`, or else the Trainer's `checkpoint_dir`, or else its `run_dir`.
    `best_score`, `best_epoch`, `best_path` and `last_path` tell what was saved; its state
    is part of the Trainer's training checkpoints, so a resumed run keeps the best so far.
    """

    rank_zero_only = True  # a distributed run writes it from rank 0 alone

    def __init__(self, dirpath=None, monitor: str | None = "val_loss", mode: str = "min",
                 keep: int = 0, save_last: bool = True, every_n_epochs: int = 1):
        if mode not in ("min", "max"):
            raise ValueError(f"ModelCheckpoint: mode must be 'min' or 'max', got {mode!r}")
        for name, value, least in (("keep", keep, 0), ("every_n_epochs", every_n_epochs, 1)):
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or \
                    value < least:
                raise ValueError(f"ModelCheckpoint: {name} must be an integer >= {least}, got "
                                 f"{value!r}")
        if monitor is not None and not isinstance(monitor, str):
            raise TypeError(f"ModelCheckpoint: monitor must be a logged name (such as "
                            f"'val_loss') or None, got {monitor!r}")
        self.dirpath = None if dirpath is None else Path(dirpath)
        self.monitor = monitor
        self.mode = mode
        self.keep = int(keep)
        self.save_last = bool(save_last)
        self.every_n_epochs = int(every_n_epochs)
        self.best_score: float | None = None
        self.best_epoch: int | None = None

    @property
    def best_path(self) -> Path | None:
        return None if self.dirpath is None else self.dirpath / "best.safetensors"

    @property
    def last_path(self) -> Path | None:
        return None if self.dirpath is None else self.dirpath / "last.safetensors"

    def dlfree_train_start(self, trainer) -> None:
        if self.dirpath is None:
            self.dirpath = trainer.checkpoint_dir or trainer.run_dir
        if self.dirpath is None:
            raise ValueError("ModelCheckpoint: give dirpath=, or a Trainer checkpoint_dir or "
                             "run_dir, to say where the model files go")
        if self.monitor is not None:
            require_validation("ModelCheckpoint", self.monitor, trainer)
        self.dirpath.mkdir(parents=True, exist_ok=True)
        remove_stale_temporaries(self.dirpath, _OWN)  # (of a run killed while saving)

    def dlfree_train_epoch_end(self, trainer, epoch, logs) -> None:
        if (epoch + 1) % self.every_n_epochs:
            return
        if self.monitor is not None:
            self._check_best(trainer, epoch, logs)
        if self.save_last:
            save(trainer.model, self.last_path)
        if self.keep:
            save(trainer.model, self.dirpath / f"epoch-{epoch:04d}.safetensors")
            # this epoch's file and the keep - 1 before it; later ones are of a timeline a
            # resumed run went back past
            numbered = sorted(((int(m.group(1)), p) for p in self.dirpath.iterdir()
                               if (m := _NUMBERED.match(p.name))), reverse=True)
            older = [p for n, p in numbered if n < epoch]
            for path in [p for n, p in numbered if n > epoch] + older[self.keep - 1:]:
                path.unlink(missing_ok=True)

    def _check_best(self, trainer, epoch: int, logs: dict) -> None:
        value = monitored_value("ModelCheckpoint", self.monitor, logs, trainer)
        if value is None or math.isnan(value):  # an epoch without validation, or no number
            return
        best = self.best_score
        if best is None or (value < best if self.mode == "min" else value > best):
            self.best_score, self.best_epoch = value, epoch
            save(trainer.model, self.best_path)

    def state_dict(self) -> dict:
        return {"best_score": self.best_score, "best_epoch": self.best_epoch}

    def load_state_dict(self, state: dict) -> None:
        self.best_score = state["best_score"]
        self.best_epoch = state["best_epoch"]
