"""`Trainer`: the training loop (fit / evaluate / predict) with event hooks, gradient
accumulation and clipping, mixed precision, and resumable training checkpoints."""

from __future__ import annotations

import contextlib
import signal
import threading
import time
import warnings
from pathlib import Path

from dlfree.autograd import no_grad
from dlfree.device import Device
from dlfree.optim import clip_grad_norm_, clip_grad_value_
from dlfree.random import manual_seed
from dlfree.tensor import Tensor

from . import batches, resume
from .events import Events
from .history import History
from .parallel import Parallel, refuse_under_parameter_server
from .settings import (
    count,
    data_length,
    metric_table,
    mixed_precision,
    name_of,
    positive,
    scalar,
    step_takes_value,
)
from .state import EpochProgress, TrainState
from .state_file import (
    ResumeWarning,
    checkpoint_path,
    checkpoint_paths,
    clean_temporaries,
    newest_valid,
    prune,
    read_checkpoint,
    write_checkpoint,
)
from .state_schema import check_fits
from .watched import monitored_value, require_validation

SCHEDULER_INTERVALS = ("epoch", "step")
# Training checkpoints kept in checkpoint_dir: the newest, and the one before it for when the
# newest turns out to be unreadable.
KEEP_CHECKPOINTS = 2


class Trainer:
    """Trains `model` with `optimizer` on `loss_fn(model(*inputs), target)`, calling the
    training events (see `dlfree.train.hookspecs`) on `callbacks` and on the installed plugins.

    - Batches are (*inputs, target) tuples or dicts (the target under "target", "targets",
      "label", "labels" or "y"; the other items are keyword inputs), moved to `device`. A
      custom `step_fn(trainer, batch)` replaces the forward pass and loss: it returns the
      loss, or (loss, outputs). Without `loss_fn`, the whole batch (target included) goes
      to the model, whose outputs carry the loss (`outputs["loss"]` or `outputs.loss`).
      With no optimizer, `step_fn` updates the model itself and the Trainer only records
      the losses.
    - `callbacks`: objects with some of the training-event methods, names registered
      through `dlfree_register_callbacks`, or (name, {arguments}) pairs; `trainer.callbacks`
      holds the objects. A callback with `state_dict()`/`load_state_dict()` has its state
      saved in training checkpoints.
    - `max_epochs` and `max_steps` count from the start of the run: a resumed run (or a
      second `fit`) continues toward them.
    - `grad_accumulation=k` takes one optimizer step per k batches, each batch's loss divided
      by k, so equal batches give the gradient of the mean loss over their union. The last
      group of an epoch with a known length is divided by its own size; an epoch's leftover
      batches are always stepped on. `global_step` counts optimizer steps; `max_steps` and
      `checkpoint_every_n_steps` count them too.
    - `grad_clip_norm` scales the gradients to that total L2 norm at most; `grad_clip_value`
      clamps them; both after unscaling under `amp`, by `dlfree.optim.clip_grad_norm_` and
      `clip_grad_value_` (as torch.nn.utils clips).
    - `amp=True` (or a dtype, float16) runs the forward pass in `dl.amp.autocast` and scales
      the loss with a `dl.amp.GradScaler` (`trainer.scaler`).
    - `scheduler` steps after each epoch or each optimizer step (`scheduler_interval`); a
      scheduler whose `step` needs a value (ReduceLROnPlateau) gets the epoch's
      `scheduler_monitor` (by default "val_loss").
    - `metrics` (dict name -> metric, or a list named after their classes) are computed on
      `val_data` every `validate_every_n_epochs` epochs and on the last, as "val_<name>".
      `trainer.validates` says whether the current `fit` has `val_data`, and
      `trainer.epoch_validated` whether the epoch now ending ran it. A callback or scheduler
      that watches a "val_" value makes `fit` raise at the start when there is no
      `val_data`, and skips the epochs that do not validate.
    - The History (`trainer.history`) records per epoch "loss" (the mean batch loss), "lr"
      (of the first param group), "val_loss" and "val_<metric>"; per optimizer step
      "step_loss" and "step_lr". `trainer.timings` holds the seconds spent per phase
      ("data", "step", "validation", "checkpoint", "callbacks", "total"), `trainer.config`
      the run's settings as JSON-able data.
    - `checkpoint_dir`: a training checkpoint (everything needed to continue bit for bit) is
      written atomically at each epoch's end, every `checkpoint_every_n_steps` optimizer
      steps, and when the run is interrupted with Ctrl-C; the newest two are kept. `fit`
      resumes from the newest readable one, warning (`ResumeWarning`) about each newer one it
      refuses.
    - Ctrl-C (SIGINT) stops at the end of the batch in progress (a second one stops at
      once): `fit` saves a checkpoint and returns with `trainer.interrupted` True. That holds
      wherever in `fit` it comes once training has begun: in `dlfree_train_start` (the run
      stops before the first batch), in a batch, during validation, while a checkpoint is
      written (which completes), and in `dlfree_train_end`; before that (while resuming),
      the KeyboardInterrupt is raised. A KeyboardInterrupt raised any other way is handled
      the same, and if it came in the middle of a batch no checkpoint is written for it (a
      `ResumeWarning` says so).
    - An exception raised by a callback's or plugin's event hook is re-raised as a
      `CallbackError` naming the callback (or the plugin and its distribution) and the
      event, with the original as its cause (and still an instance of the original's type
      where that type allows); `on_callback_error="warn"` makes it a `CallbackWarning` and
      the run goes on.
    - On several processes (launched by `mpiexec` or `srun`, with the default
      `strategy="auto"`, or with a strategy named), `fit` and `evaluate` join the process
      group (`dlfree.distributed.init_process_group` unless it ran) and `fit` trains
      data-parallel (`strategy=None`: this process alone, whatever launched it):
      `strategy="ddp"` (what "auto" picks) runs training through
      `dlfree.distributed.DistributedDataParallel` (`trainer.train_model`; no gradient
      averaging but on the last batch of an accumulation group), `"periodic"` averages the
      parameters every `strategy_options["period"]` optimizer steps (`PeriodicAveraging`);
      `strategy_options` go to that wrapper. `"parameter_server"` (`strategy_options`
      "servers", default 1, and "max_staleness", default 0) makes the first "servers"
      ranks `dlfree.distributed.ParameterServer` servers, which step `optimizer` on the
      gradients the other ranks (the workers) push, and whose `fit` returns when the
      workers' ends; everything below then holds among the workers, the first of them in
      rank 0's place; it refuses grad_accumulation, amp, a scheduler and checkpoint_dir,
      and clipping clips each worker's gradients. A DataLoader's sampler becomes each rank's
      `DistributedSampler` shard (seeded by `seed`, `set_epoch` at each epoch), validation
      loaders are split into disjoint shards, and the validation loss and metric states
      (merged by their declared reductions) are combined over the ranks, so every value is
      the whole set's; "loss" is the mean over every rank's batches ("step_loss" stays this
      rank's). `should_stop` on any rank stops every rank at the epoch's end. Callbacks
      marked `rank_zero_only` (progress, loggers, report, ModelCheckpoint) and training
      checkpoints run on rank 0 only; every rank resumes from the checkpoint rank 0 picks.
      An exception nobody catches aborts every rank (see `init_process_group`).
    """

    def __init__(self, model, optimizer=None, loss_fn=None, *, step_fn=None, scheduler=None,
                 scheduler_interval: str = "epoch", scheduler_monitor: str = "val_loss",
                 metrics=None, callbacks=(), max_epochs: int | None = None,
                 max_steps: int | None = None, grad_accumulation: int = 1,
                 grad_clip_norm: float | None = None, grad_clip_value: float | None = None,
                 amp=False, device=None, seed: int | None = None, checkpoint_dir=None,
                 checkpoint_every_n_steps: int | None = None, run_dir=None,
                 validate_every_n_epochs: int = 1, strategy: str | None = "auto",
                 strategy_options: dict | None = None, on_callback_error: str = "raise"):
        if not callable(model):
            raise TypeError(f"Trainer: model must be callable (a module), got "
                            f"{type(model).__name__}")
        if optimizer is not None and not (callable(getattr(optimizer, "step", None)) and
                                          callable(getattr(optimizer, "zero_grad", None))):
            raise TypeError(f"Trainer: optimizer must have step() and zero_grad(), got "
                            f"{type(optimizer).__name__}")
        for name, fn in (("loss_fn", loss_fn), ("step_fn", step_fn)):
            if fn is not None and not callable(fn):
                raise TypeError(f"Trainer: {name} must be callable, got {type(fn).__name__}")
        if scheduler is not None and not callable(getattr(scheduler, "step", None)):
            raise TypeError(f"Trainer: scheduler must have a step() method, got "
                            f"{type(scheduler).__name__}")
        if scheduler_interval not in SCHEDULER_INTERVALS:
            raise ValueError(f"Trainer: scheduler_interval must be 'epoch' or 'step', got "
                             f"{scheduler_interval!r}")
        if isinstance(callbacks, str) or not isinstance(callbacks, list | tuple):
            raise TypeError(f"Trainer: callbacks must be a list of callbacks, names or "
                            f"(name, {{arguments}}) pairs, got {type(callbacks).__name__}")
        self.model = model
        self.optimizer = optimizer
        self.loss_fn = loss_fn
        self.step_fn = step_fn
        self.scheduler = scheduler
        self.scheduler_interval = scheduler_interval
        self.scheduler_monitor = scheduler_monitor
        self._scheduler_wants_value = scheduler is not None and step_takes_value(scheduler)
        if self._scheduler_wants_value and scheduler_interval == "step":
            raise ValueError(f"Trainer: {type(scheduler).__name__}.step needs a monitored "
                             "value, which exists once per epoch; use scheduler_interval='epoch'")
        self.metrics = metric_table(metrics)
        self.max_epochs = count("max_epochs", max_epochs, 1)
        self.max_steps = count("max_steps", max_steps, 1)
        self.grad_accumulation = count("grad_accumulation", grad_accumulation, 1, False)
        self.grad_clip_norm = positive("grad_clip_norm", grad_clip_norm)
        self.grad_clip_value = positive("grad_clip_value", grad_clip_value)
        self.checkpoint_every_n_steps = count("checkpoint_every_n_steps",
                                               checkpoint_every_n_steps, 1)
        self.validate_every_n_epochs = count("validate_every_n_epochs",
                                              validate_every_n_epochs, 1, False)
        self.seed = count("seed", seed, 0)
        self.device = None if device is None else Device(device)
        self.checkpoint_dir = None if checkpoint_dir is None else Path(checkpoint_dir)
        self.run_dir = None if run_dir is None else Path(run_dir)
        self._autocast, self.scaler, amp_dtype = mixed_precision(amp)
        self.parallel = Parallel(strategy, strategy_options)
        if strategy == "parameter_server":
            refuse_under_parameter_server({
                "no optimizer (the servers apply the gradients with the Trainer's optimizer)":
                    optimizer is None,
                "grad_accumulation > 1 (every batch's gradients are pushed as they are)":
                    self.grad_accumulation > 1,
                "amp (the servers' optimizer would see scaled gradients)": amp_dtype is not None,
                "a scheduler (it would step the workers' copy of the optimizer, which the "
                "servers' does not see)": scheduler is not None,
                "checkpoint_dir (the optimizer's state lives on the servers, so a worker's "
                "checkpoint could not resume the run)": checkpoint_dir is not None,
            })
        self.events = Events(callbacks, on_callback_error)
        self.callbacks = self.events.callbacks
        self.history = History()
        self.state = TrainState(epochs=self.max_epochs, max_steps=self.max_steps)
        self.progress = EpochProgress()
        self.should_stop = False
        self.interrupted = False
        self.timings: dict[str, float] = {}
        self.config = {
            "model": name_of(model), "optimizer": name_of(optimizer),
            "lr": [g.get("lr") for g in getattr(optimizer, "param_groups", [])],
            "loss_fn": name_of(loss_fn), "step_fn": name_of(step_fn),
            "scheduler": name_of(scheduler), "scheduler_interval": scheduler_interval,
            "scheduler_monitor": scheduler_monitor if self._scheduler_wants_value else None,
            "metrics": list(self.metrics), "callbacks": [name_of(c) for c in self.callbacks],
            "max_epochs": self.max_epochs, "max_steps": self.max_steps,
            "grad_accumulation": self.grad_accumulation, "grad_clip_norm": self.grad_clip_norm,
            "grad_clip_value": self.grad_clip_value, "amp": amp_dtype,
            "device": None if self.device is None else str(self.device), "seed": self.seed,
            "checkpoint_dir": None if checkpoint_dir is None else str(self.checkpoint_dir),
            "checkpoint_every_n_steps": self.checkpoint_every_n_steps,
            "run_dir": None if run_dir is None else str(self.run_dir),
            "validate_every_n_epochs": self.validate_every_n_epochs,
            "strategy": strategy, "strategy_options": self.parallel.options or None,
            "on_callback_error": on_callback_error,
        }
        self._train_data = None
        self._consistent = True  # whether the state now is one a checkpoint may capture
        self._sigint_pending = False

    # ------------------------------------------------------------------ public API
    def fit(self, train_data, val_data=None) -> History:
        """Train on `train_data` (any iterable of batches; a DataLoader's order is resumable)
        until `max_epochs` or `max_steps` or `should_stop`, validating on `val_data`.
        Returns the History."""
        if self.optimizer is None and self.step_fn is None:
            raise ValueError("Trainer.fit: give an optimizer, or a step_fn that updates the "
                             "model itself")
        if self.max_epochs is None and self.max_steps is None:
            raise ValueError("Trainer.fit: give max_epochs or max_steps (or both) to say when "
                             "training ends")
        self.validates, self.epoch_validated = val_data is not None, False
        if self._scheduler_wants_value:
            require_validation(f"Trainer: the scheduler {type(self.scheduler).__name__}",
                               self.scheduler_monitor, self)
        self.should_stop = self.interrupted = False
        self._sigint_pending = False
        if self.seed is not None:
            manual_seed(self.seed)
        if self.device is not None and callable(getattr(self.model, "to", None)):
            self.model.to(self.device)
        self._join_ranks()
        if self.parallel.serving:  # a parameter server: its loop is the whole fit
            self.parallel.serve()
            return self.history
        train_data = self.parallel.train_data(train_data, self.seed or 0)
        val_data = self.parallel.eval_data(val_data)
        self._train_data = train_data
        self.state.steps_per_epoch = data_length(train_data)
        if self.run_dir is not None:
            self.run_dir.mkdir(parents=True, exist_ok=True)
        skip = self._resume(train_data)
        started = time.perf_counter()
        with self._deferred_sigint():
            try:
                self._emit("dlfree_train_start", trainer=self)
                self._stop_if_interrupted()
                self._run(train_data, val_data, skip)
                self.parallel.finish()
                self._emit("dlfree_train_end", trainer=self)
                self._stop_if_interrupted()  # (a Ctrl-C after the last batch is not lost)
            except KeyboardInterrupt as e:
                self.parallel.finish()  # (a worker stopping early lets the others go on)
                self.interrupted = True
                self._emit("dlfree_train_exception", trainer=self, exception=e)
                self._save_interrupted()
            except Exception as e:
                self._emit("dlfree_train_exception", trainer=self, exception=e)
                raise
            finally:
                self._time("total", started)
        return self.history

    def evaluate(self, data) -> dict[str, float]:
        """The mean loss over `data` ("loss", weighted by batch size; absent when neither a
        loss_fn, a step_fn nor the model's outputs give one) and each metric's value, with
        the model in eval mode and no gradients. Batches go to the model as in training."""
        self.parallel.join()
        return self._evaluate(self.parallel.eval_data(data), prefix="")

    def predict(self, data):
        """The model's outputs for every batch of `data` (inputs as in training; a target in
        the batch is ignored), concatenated along dim 0 when they are tensors that fit
        together, else a list with one entry per batch."""
        outputs = []
        with self._eval_mode(), no_grad():
            for batch in data:
                batch = self._place(batch)
                args, kwargs, _ = batches.split(batch)
                with self._autocast():
                    outputs.append(self.model(*args, **kwargs))
        return batches.gather(outputs)

    # ------------------------------------------------------------------ the loop
    def _run(self, data, val_data, skip: int) -> None:
        while True:
            begun = self.progress.batches_done or self.state.batch_index > 0  # (when resumed)
            if not begun and self._limit_reached():
                return
            if self._step_limit_reached():  # resumed just after the last step: end its epoch
                self.progress.batches_done = True
            if not self.progress.batches_done:
                self._set_train_mode(True)
                self.parallel.set_epoch(data, self.state.epoch)
                self._emit("dlfree_train_epoch_start", trainer=self, epoch=self.state.epoch)
                self._train_epoch(data, skip)
                skip = 0
            self._end_epoch(val_data)
            if self.should_stop:
                return

    def _limit_reached(self) -> bool:
        return (self.max_epochs is not None and self.state.epoch >= self.max_epochs) or \
            (self.max_steps is not None and self.state.global_step >= self.max_steps)

    def _train_epoch(self, data, skip: int) -> None:
        iterator = iter(data)
        for _ in range(skip):  # data that cannot restore its position: read past what was done
            next(iterator, None)
        mark = time.perf_counter()
        fresh_epoch = self.state.batch_index == 0
        for batch in iterator:
            fresh_epoch = False
            self._time("data", mark)
            self._consistent = False
            batch = self._place(batch)
            index = self.state.batch_index
            self._emit("dlfree_train_batch_start", trainer=self, batch=batch, batch_index=index)
            loss, outputs, stepped = self._train_batch(batch, index)
            self._consistent = True
            self._emit("dlfree_train_batch_end", trainer=self, batch=batch, batch_index=index,
                       loss=loss, outputs=outputs)
            if stepped:
                self._periodic_checkpoint()
            self._stop_if_interrupted()
            if self.should_stop or self._step_limit_reached():
                break
            mark = time.perf_counter()
        if fresh_epoch:
            raise ValueError(f"Trainer.fit: the training data yielded no batches in epoch "
                             f"{self.state.epoch}; give data with at least one batch")
        if self.progress.accumulated:
            self._consistent = False
            self._step()
            self._consistent = True
            self._periodic_checkpoint()
        self.progress.batches_done = True

    def _step_limit_reached(self) -> bool:
        return self.max_steps is not None and self.state.global_step >= self.max_steps and \
            not self.progress.accumulated

    def _train_batch(self, batch, index: int) -> tuple[float, object, bool]:
        started = time.perf_counter()
        progress = self.progress
        if progress.accumulated == 0:
            left = None if self.state.steps_per_epoch is None else \
                self.state.steps_per_epoch - index
            progress.group_size = self.grad_accumulation if left is None or left < 1 else \
                min(self.grad_accumulation, left)
        with self.parallel.no_sync(progress.accumulated + 1 >= progress.group_size):
            with self._autocast():
                loss, outputs, _ = self._loss(batch, model=self.train_model)
            if self.optimizer is not None:
                scaled = loss / progress.group_size if progress.group_size > 1 else loss
                if self.scaler is not None:
                    scaled = self.scaler.scale(scaled)
                scaled.backward()
        value = float(loss.detach())
        progress.loss_sum += value
        progress.loss_count += 1
        progress.accumulated += 1
        progress.accumulated_loss += value
        self.state.batch_index += 1
        stepped = progress.accumulated >= progress.group_size
        if stepped:
            self._step()
        self._time("step", started)
        return value, outputs, stepped

    def _step(self) -> None:
        """One optimizer step on the accumulated gradients, and its bookkeeping."""
        optimizer, progress = self.optimizer, self.progress
        lr = self._lr()
        if optimizer is not None:
            if self.scaler is not None and (self.grad_clip_norm or self.grad_clip_value):
                self.scaler.unscale_(optimizer)
            params = self._parameters()
            if self.grad_clip_norm is not None:
                clip_grad_norm_(params, self.grad_clip_norm)
            if self.grad_clip_value is not None:
                clip_grad_value_(params, self.grad_clip_value)
            if self.scaler is not None:
                self.scaler.step(optimizer)
                self.scaler.update()
            else:
                self.parallel.optimizer_step(optimizer)
            optimizer.zero_grad()
            self.parallel.after_step()
        self.state.global_step += 1
        step = self.state.global_step
        self.history.log("step_loss", progress.accumulated_loss / progress.accumulated, step)
        if lr is not None:
            self.history.log("step_lr", lr, step)
        progress.accumulated, progress.accumulated_loss = 0, 0.0
        if self.scheduler is not None and self.scheduler_interval == "step":
            self.scheduler.step()

    def _flush_model_records(self) -> dict[str, float]:
        """Close the epoch of a model that records values by path (a dlfree.nn `Graph`:
        `flush()` and `recorded_paths()`), found by duck typing: those values join the
        history and the report under their paths."""
        flush = getattr(self.model, "flush", None)
        if not (callable(flush) and callable(getattr(self.model, "recorded_paths", None))):
            return {}
        return {str(name): float(value) for name, value in flush().items()}

    def _end_epoch(self, val_data) -> None:
        epoch, progress = self.state.epoch, self.progress
        logs: dict[str, float] = {}
        loss_sum, loss_count = self.parallel.sums(progress.loss_sum, progress.loss_count)
        if loss_count:
            logs["loss"] = loss_sum / loss_count
        lr = self._lr()
        if lr is not None:
            logs["lr"] = lr
        self.should_stop = self.parallel.any(self.should_stop)
        finishing = self.should_stop or self._step_limit_reached() or \
            (self.max_epochs is not None and epoch + 1 >= self.max_epochs)
        self.epoch_validated = val_data is not None and \
            ((epoch + 1) % self.validate_every_n_epochs == 0 or finishing)
        if self.epoch_validated:
            started = time.perf_counter()
            metrics = self._evaluate(val_data, prefix="val_")
            self._time("validation", started)
            self._consistent = False
            for name, value in metrics.items():
                self.history.log(name, value, self.state.global_step)
            self._emit("dlfree_train_validation_end", trainer=self, metrics=dict(metrics))
            logs.update(metrics)
        self._consistent = False
        records = self._flush_model_records()
        logs.update(records)
        for name in ("loss", "lr", *records):
            if name in logs:
                self.history.log(name, logs[name], self.state.global_step)
        if self.scheduler is not None and self.scheduler_interval == "epoch":
            self._scheduler_epoch_step(logs)
        self._emit("dlfree_train_epoch_end", trainer=self, epoch=epoch, logs=dict(logs))
        self.state.epoch += 1
        self.state.batch_index = 0
        self.progress = EpochProgress()
        self._consistent = True
        if self.checkpoint_dir is not None:
            self._save_checkpoint()
        self._stop_if_interrupted()

    def _stop_if_interrupted(self) -> None:
        """End the run here if a Ctrl-C came since the last check (the state is consistent)."""
        if self._sigint_pending:
            raise KeyboardInterrupt

    def _scheduler_epoch_step(self, logs: dict) -> None:
        if not self._scheduler_wants_value:
            self.scheduler.step()
            return
        value = monitored_value(f"Trainer: the scheduler {type(self.scheduler).__name__}",
                                self.scheduler_monitor, logs, self)
        if value is not None:  # (None: an epoch that did not validate)
            self.scheduler.step(value)

    # ------------------------------------------------------------------ evaluation
    def _loss(self, batch, required: bool = True, model=None):
        """(loss, outputs, target) of a batch, by `step_fn` or `model` (by default the
        Trainer's) and `loss_fn`; the loss is None when not `required` and the model's
        outputs carry none."""
        model = self.model if model is None else model
        if self.step_fn is not None:
            result = self.step_fn(self, batch)
            if isinstance(result, tuple) and len(result) == 2:
                loss, outputs = result
            else:
                loss, outputs = result, None
            target = batches.split(batch)[2] if self.metrics else None
        elif self.loss_fn is not None:
            args, kwargs, target = batches.split(batch)
            if target is None:
                raise ValueError("Trainer: the batch has no target for loss_fn; give "
                                 "(*inputs, target) tuples or a dict with a 'target' or "
                                 "'labels' key, or a step_fn")
            outputs = model(*args, **kwargs)
            loss = self.loss_fn(outputs, target)
        else:
            args, kwargs = batches.whole(batch)
            outputs = model(*args, **kwargs)
            loss = batches.loss_of(outputs)
            target = batches.split(batch)[2]
            if loss is None and not required:
                return None, outputs, target
        if not isinstance(loss, Tensor) or loss.numel() != 1:
            what = type(loss).__name__ if not isinstance(loss, Tensor) else \
                f"a tensor of shape {tuple(loss.shape)}"
            raise TypeError(f"Trainer: the loss must be a one-element tensor, got {what}; "
                            "give a loss_fn, a model whose outputs carry 'loss', or a step_fn "
                            "returning the loss (or (loss, outputs))")
        return loss, outputs, target

    def _evaluate(self, data, prefix: str) -> dict[str, float]:
        for metric in self.metrics.values():
            metric.reset()
        total, count = 0.0, 0
        with self._eval_mode(), no_grad():
            for batch in data:
                batch = self._place(batch)
                with self._autocast():
                    loss, outputs, target = self._loss(batch, required=False)
                if loss is not None:
                    n = batches.size(batch, target)
                    total += float(loss) * n
                    count += n
                for name, metric in self.metrics.items():
                    if target is None or outputs is None:
                        raise ValueError(f"Trainer: metric {name!r} needs the model's outputs "
                                         "and the batch's target; with a step_fn return "
                                         "(loss, outputs)")
                    metric.update(batches.predictions(outputs), target)
        total, count = self.parallel.sums(total, count)
        results = {f"{prefix}loss": total / count} if count else {}
        for name, metric in self.metrics.items():
            self.parallel.sync_metric(name, metric)
            results.update(scalar(f"{prefix}{name}", metric.compute()))
        return results

    # ------------------------------------------------------------------ checkpoints
    def _resume(self, data) -> int:
        if self.checkpoint_dir is None:
            return 0
        found = None
        if self.parallel.rank == 0:  # rank 0 picks the checkpoint, and every rank reads it
            self.checkpoint_dir.mkdir(parents=True, exist_ok=True)
            clean_temporaries(self.checkpoint_dir)
            found = newest_valid(self.checkpoint_dir,
                                 accept=lambda state, tensors, path: check_fits(
                                     self, state, tensors, path))
        path = self.parallel.broadcast(None if found is None else found[0])
        if path is None:
            return 0
        state, tensors = found[1:] if found is not None else read_checkpoint(path)
        return resume.restore(self, data, state, tensors, path)

    def _periodic_checkpoint(self) -> None:
        every = self.checkpoint_every_n_steps
        if self.checkpoint_dir is not None and every and self.state.global_step % every == 0:
            self._save_checkpoint()

    def _save_checkpoint(self) -> None:
        if self.parallel.rank != 0:  # every rank holds the same state; rank 0 writes it
            return
        started = time.perf_counter()
        state, tensors = resume.capture(self, self._train_data)
        path = checkpoint_path(self.checkpoint_dir, self.state.global_step)
        write_checkpoint(path, state, tensors)
        prune(self.checkpoint_dir, KEEP_CHECKPOINTS, path)
        self._time("checkpoint", started)

    def _save_interrupted(self) -> None:
        if self.checkpoint_dir is None:
            return
        if self._consistent:
            self._save_checkpoint()
            return
        saved = checkpoint_paths(self.checkpoint_dir)
        warnings.warn("Trainer: interrupted in the middle of a batch, so no checkpoint was "
                      "written for this moment; resuming starts from "
                      f"{saved[0].name if saved else 'the beginning'}", ResumeWarning,
                      stacklevel=3)

    @contextlib.contextmanager
    def _deferred_sigint(self):
        """While training, a first Ctrl-C asks the loop to stop after the batch in progress
        (so the checkpoint it writes is consistent); a second one interrupts at once."""
        if threading.current_thread() is not threading.main_thread() or \
                signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
            yield
            return

        def on_sigint(signum, frame):
            if self._sigint_pending:
                raise KeyboardInterrupt
            self._sigint_pending = True

        signal.signal(signal.SIGINT, on_sigint)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, signal.default_int_handler)

    # ------------------------------------------------------------------ helpers
    def _join_ranks(self) -> None:
        """Set up data-parallel training when there are several ranks (or a strategy)."""
        self.parallel.setup(self.model, self.optimizer)
        if self.parallel.rank != 0:
            self.events.leave_out_rank_zero_only()

    @property
    def train_model(self):
        """What training batches run through: the DDP wrapper of `model` in a distributed
        run, else `model` itself (which is what is saved and evaluated)."""
        return self.parallel.train_model if self.parallel.train_model is not None else \
            self.model

    def _emit(self, event: str, **kwargs) -> None:
        started = time.perf_counter()
        try:
            self.events(event, **kwargs)
        finally:
            self._time("callbacks", started)

    def _time(self, phase: str, started: float) -> None:
        self.timings[phase] = self.timings.get(phase, 0.0) + time.perf_counter() - started

    def _place(self, batch):
        return batch if self.device is None else batches.to_device(batch, self.device)

    def _parameters(self) -> list:
        if self.optimizer is not None and getattr(self.optimizer, "param_groups", None):
            return [p for group in self.optimizer.param_groups for p in group["params"]]
        return list(self.model.parameters())

    def _lr(self) -> float | None:
        groups = getattr(self.optimizer, "param_groups", None)
        return float(groups[0]["lr"]) if groups and "lr" in groups[0] else None

    def _set_train_mode(self, mode: bool) -> None:
        if callable(getattr(self.model, "train", None)):
            self.model.train(mode)

    @contextlib.contextmanager
    def _eval_mode(self):
        was_training = getattr(self.model, "training", True)
        self._set_train_mode(False)
        try:
            yield
        finally:
            self._set_train_mode(was_training)
