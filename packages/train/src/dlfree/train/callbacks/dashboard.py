"""`Dashboard`: the Trainer's live dashboard (a `Monitor` fed by the training events), with
the run's position, throughput and ETA, resources, configuration and an event log of
checkpoints saved, learning-rate changes and early stopping; the frozen page at the end."""

from __future__ import annotations

import math
from pathlib import Path

from dlfree import hookimpl

from .. import batches
from ..dashboard.monitor import Monitor
from ..dashboard.server import check_address
from ..resources import ResourceSampler, check_interval
from ..settings import name_of
from ..state_file import checkpoint_paths
from .early_stopping import EarlyStopping
from .model_checkpoint import ModelCheckpoint


class Dashboard:
    """Serves the run live while `fit` runs: `Trainer(callbacks=[("dashboard", {"port":
    0})])` prints the page's URL once when training starts, and the server stops with the
    run. `host`, `port`, `resources` (sampled every `interval` seconds) and `file` are
    `Monitor`'s. The curves are the Trainer's History (a resumed run's earlier values
    included) and the resource samples go into it too. At the end (finished, failed or
    interrupted) the frozen page is written to `report` (default: `dashboard.html` in the
    Trainer's run_dir; none without either). `monitor` is the Monitor of the run in progress
    (or of the last one)."""

    rank_zero_only = True  # a distributed run serves it from rank 0 alone

    def __init__(self, port: int = 0, host: str = "127.0.0.1", *, resources: bool = True,
                 interval: float = 1.0, report=None, title: str | None = None, file=None):
        check_address(host, port)
        if title is not None and not isinstance(title, str):
            raise TypeError(f"Dashboard: title must be a string, got {type(title).__name__}")
        self.port, self.host = port, host
        self.resources, self.interval = bool(resources), check_interval(interval)
        self.report = None if report is None else Path(report)
        self.title = title
        self.file = file
        self.monitor: Monitor | None = None
        self._batches = self._samples = 0  # trained in this fit, for the throughput
        self._watch: dict = {}  # what the event log last noted: lr, checkpoint, best epochs

    @hookimpl
    def dlfree_train_start(self, trainer):
        sampler = ResourceSampler(
            self.interval, step=lambda: trainer.state.global_step, device=trainer.device,
            data_seconds=lambda: trainer.timings.get("data", 0.0)) if self.resources else False
        state = trainer.state
        self.monitor = Monitor(
            port=self.port, host=self.host, resources=sampler, history=trainer.history,
            title=self.title or f"{name_of(trainer.model)} training",
            config=dict(trainer.config or {}), file=self.file)
        self._batches = self._samples = 0
        self._watch = {"lr": self._epoch_lr(trainer), "checkpoint": self._newest(trainer),
                       "best": {id(c): c.best_epoch for c in self._model_checkpoints(trainer)}}
        resumed = state.global_step > 0 or state.epoch > 0
        self.monitor.note(f"training {'resumed at' if resumed else 'started:'} epoch "
                          f"{state.epoch + 1}, step {state.global_step}")
        self.monitor.sync()
        self._progress(trainer, force=True)

    @hookimpl
    def dlfree_train_epoch_start(self, trainer):
        self._notice(trainer)

    @hookimpl
    def dlfree_train_batch_end(self, trainer, batch):
        self._batches += 1
        self._samples += batches.size(batch, None)
        self.monitor.sync()
        self._progress(trainer)

    @hookimpl
    def dlfree_train_epoch_end(self, trainer):
        self.monitor.sample_resources()
        self.monitor.sync()
        self._progress(trainer, force=True)

    @hookimpl
    def dlfree_train_end(self, trainer):
        self._notice(trainer)
        stoppers = [c for c in trainer.callbacks if isinstance(c, EarlyStopping)
                    and c.stopped_epoch is not None]
        if stoppers:
            c = stoppers[0]
            self.monitor.note(f"early stop after epoch {c.stopped_epoch + 1}: {c.monitor} did "
                              f"not improve for {c.patience} epochs")
        elif trainer.should_stop:
            self.monitor.note(f"stopped after epoch {trainer.state.epoch} (should_stop)")
        self._end(trainer, "finished")

    @hookimpl
    def dlfree_train_exception(self, trainer, exception):
        if self.monitor is None or self.monitor.finished:
            return
        status = "interrupted (Ctrl-C)" if isinstance(exception, KeyboardInterrupt) else \
            f"stopped by {type(exception).__name__}: {exception}"
        self.monitor.note(status)
        self._end(trainer, status)

    # ------------------------------------------------------------------ helpers
    def _end(self, trainer, status: str) -> None:
        self.monitor.finish(status)
        path = self.report
        if path is None and trainer.run_dir is not None:
            path = Path(trainer.run_dir) / "dashboard.html"
        if path is not None:
            self.monitor.write_report(path)
            self.report = path

    def _progress(self, trainer, force: bool = False) -> None:
        state = trainer.state
        left = []
        if state.epochs is not None and state.steps_per_epoch:
            left.append((state.epochs - state.epoch) * state.steps_per_epoch - state.batch_index)
        if state.max_steps is not None:
            left.append((state.max_steps - state.global_step) * trainer.grad_accumulation)
        pace = self.monitor.pace(self._batches, max(0, min(left)) if left else None, "batches",
                                 self._samples)
        self.monitor.progress(
            force=force, epoch=min(state.epoch + 1, state.epochs or math.inf),
            epochs=state.epochs, step=state.global_step, max_steps=state.max_steps,
            batch=state.batch_index, batches=state.steps_per_epoch, **pace)

    def _notice(self, trainer) -> None:
        """Note what changed since the last epoch boundary: the lr (when no per-step
        scheduler moves it every step), a training checkpoint, a best model saved. Run at
        boundaries, after every callback's epoch end, so the order of callbacks is moot."""
        watch, monitor = self._watch, self.monitor
        lr = self._epoch_lr(trainer)
        if lr is not None and watch["lr"] is not None and lr != watch["lr"] and \
                not (trainer.scheduler is not None and trainer.scheduler_interval == "step"):
            monitor.note(f"lr {watch['lr']:.4g} → {lr:.4g}")
        watch["lr"] = lr
        newest = self._newest(trainer)
        if newest is not None and newest != watch["checkpoint"]:
            monitor.note(f"training checkpoint saved: {newest}")
        watch["checkpoint"] = newest
        for c in self._model_checkpoints(trainer):
            if c.best_epoch is not None and c.best_epoch != watch["best"].get(id(c)):
                monitor.note(f"best model saved: epoch {c.best_epoch + 1}, {c.monitor} "
                             f"{c.best_score:.4g} ({c.best_path.name})")
            watch["best"][id(c)] = c.best_epoch

    @staticmethod
    def _epoch_lr(trainer) -> float | None:
        return trainer.history["lr"].last if "lr" in trainer.history else None

    @staticmethod
    def _newest(trainer) -> str | None:
        if trainer.checkpoint_dir is None:
            return None
        found = checkpoint_paths(trainer.checkpoint_dir)
        return found[0].name if found else None

    @staticmethod
    def _model_checkpoints(trainer) -> list[ModelCheckpoint]:
        return [c for c in trainer.callbacks if isinstance(c, ModelCheckpoint)]
