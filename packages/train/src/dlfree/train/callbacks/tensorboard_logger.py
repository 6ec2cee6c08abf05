"""`TensorBoardLogger`: the run as TensorBoard event files, written with the `tensorboard`
package's own event writer and protocol buffers (no TensorFlow, and not tensorboardX, which
imports torch when it is installed): scalars per step and per epoch, histograms of the
weights and their gradients, and the hyperparameters with the final values."""

from __future__ import annotations

import time
from pathlib import Path

from dlfree import hookimpl

import numpy as np

from .external import ExternalLogger, flat_params

# Buckets of a histogram: TensorBoard redraws them into its own bins, so a few dozen do.
HISTOGRAM_BUCKETS = 30


class EventWriter:
    """One TensorBoard event file in `folder`: scalars, histograms and the hyperparameters
    (a session-start summary, which TensorBoard's HPARAMS tab reads) at a step."""

    def __init__(self, folder):
        from tensorboard.summary.writer.event_file_writer import EventFileWriter

        self._file = EventFileWriter(str(folder))

    def _write(self, step: int, summary) -> None:
        from tensorboard.compat.proto import event_pb2

        self._file.add_event(event_pb2.Event(wall_time=time.time(), step=step,
                                             summary=summary))

    def scalars(self, values: dict[str, float], step: int) -> None:
        from tensorboard.compat.proto import summary_pb2

        self._write(step, summary_pb2.Summary(value=[
            summary_pb2.Summary.Value(tag=tag, simple_value=float(v))
            for tag, v in values.items()]))

    def histogram(self, tag: str, values, step: int) -> None:
        from tensorboard.compat.proto import summary_pb2

        flat = np.asarray(values, dtype=np.float64).ravel()
        counts, edges = np.histogram(flat, bins=HISTOGRAM_BUCKETS)
        histogram = summary_pb2.HistogramProto(
            min=float(flat.min()), max=float(flat.max()), num=flat.size,
            sum=float(flat.sum()), sum_squares=float(np.dot(flat, flat)),
            bucket_limit=edges[1:].tolist(), bucket=counts.astype(np.float64).tolist())
        self._write(step, summary_pb2.Summary(value=[
            summary_pb2.Summary.Value(tag=tag, histo=histogram)]))

    def hparams(self, params: dict, step: int) -> None:
        from tensorboard.plugins.hparams import summary_v2

        self._write(step, summary_v2.hparams_pb(params))

    def flush(self) -> None:
        self._file.flush()

    def close(self) -> None:
        self._file.close()


class TensorBoardLogger(ExternalLogger):
    """Writes TensorBoard event files to `log_dir` (default: `tensorboard/` in the Trainer's
    run_dir), for `tensorboard --logdir`:

    - the per-step values ("step_loss", "step_lr", ...) every `every_n_steps` optimizer
      steps (None: none) and each epoch's values ("loss", "lr", "val_...") at the epoch's
      last step, tagged by their History names;
    - every `histogram_every_n_steps` optimizer steps (None: never), a histogram of each
      parameter ("weights/<name>") and of its gradient ("grads/<name>") as that step
      applied it;
    - at the end, the run's configuration as hyperparameters and the last epoch's values
      as "final/<name>", their metrics in TensorBoard's HPARAMS tab.

    Needs `tensorboard` (which also reads the files back). A failure while writing is
    reported once (`LoggerWarning`) and training goes on.
    """

    modules = ("tensorboard",)
    install = "tensorboard"

    def __init__(self, log_dir=None, every_n_steps: int | None = 1,
                 histogram_every_n_steps: int | None = 100):
        super().__init__(every_n_steps)
        if histogram_every_n_steps is not None and (
                isinstance(histogram_every_n_steps, bool) or
                not isinstance(histogram_every_n_steps, int) or histogram_every_n_steps < 1):
            raise ValueError("TensorBoardLogger: histogram_every_n_steps must be a whole number"
                             f" >= 1 or None (no histograms), got {histogram_every_n_steps!r}")
        self.log_dir = None if log_dir is None else Path(log_dir)
        self.histogram_every_n_steps = histogram_every_n_steps
        self._writer = None
        self._grads: dict[str, object] = {}
        self._hooks: list = []
        self._last_logs: dict[str, float] = {}

    @hookimpl
    def dlfree_train_start(self, trainer):
        if self.log_dir is None:
            if trainer.run_dir is None:
                raise ValueError("TensorBoardLogger: give log_dir=, or a Trainer run_dir, to "
                                 "say where the event files go")
            self.log_dir = Path(trainer.run_dir) / "tensorboard"
        self.failure, self._last_step, self._last_logs = None, trainer.state.global_step, {}
        self.guarded("opening the event file", self._open)

    def _open(self) -> None:
        self._writer = EventWriter(self.log_dir)

    @hookimpl
    def dlfree_train_batch_start(self, trainer):
        every = self.histogram_every_n_steps
        if every is None or self._writer is None or (trainer.state.global_step + 1) % every:
            return
        if not self._hooks:  # the step about to be taken is one to draw: watch its gradients
            self._hooks = [p.register_post_accumulate_grad_hook(self._keeper(name))
                           for name, p in _named_parameters(trainer) if p.requires_grad]

    def _keeper(self, name: str):
        def keep(parameter):
            self._grads[name] = parameter.grad.numpy(force=True).copy()
        return keep

    @hookimpl
    def dlfree_train_batch_end(self, trainer):
        step = trainer.state.global_step
        values = self.due_step_values(trainer)
        if values and self._writer is not None:
            self.guarded("writing scalars", self._writer.scalars, values, step)
        every = self.histogram_every_n_steps
        if self._hooks and every is not None and step % every == 0 and step > 0:
            for hook in self._hooks:
                hook.remove()
            self._hooks = []
            if self._writer is not None:
                self.guarded("writing histograms", self._histograms, trainer, step)
            self._grads = {}

    def _histograms(self, trainer, step: int) -> None:
        for name, p in _named_parameters(trainer):
            self._writer.histogram(f"weights/{name}", p.detach().numpy(force=True), step)
            if name in self._grads:
                self._writer.histogram(f"grads/{name}", self._grads[name], step)

    @hookimpl
    def dlfree_train_epoch_end(self, trainer, logs):
        self._last_logs = {k: float(v) for k, v in logs.items()}
        if self._writer is not None:
            self.guarded("writing scalars", self._writer.scalars, self._last_logs,
                         trainer.state.global_step)
            self.guarded("flushing the event file", self._writer.flush)

    @hookimpl
    def dlfree_train_end(self, trainer):
        if self._writer is not None:
            self.guarded("writing the hyperparameters", self._hparams, trainer)
        self._close()

    @hookimpl
    def dlfree_train_exception(self, trainer, exception):
        self._close()

    def _hparams(self, trainer) -> None:
        step = trainer.state.global_step
        self._writer.hparams(flat_params(dict(trainer.config or {})), step)
        self._writer.scalars({f"final/{k}": v for k, v in self._last_logs.items()}, step)

    def _close(self) -> None:
        for hook in self._hooks:
            hook.remove()
        self._hooks, self._grads = [], {}
        if self._writer is not None:
            self.guarded("closing the event file", self._writer.close)
            self._writer = None


def _named_parameters(trainer):
    named = getattr(trainer.model, "named_parameters", None)
    if callable(named):
        return list(named())
    return [(str(i), p) for i, p in enumerate(trainer.model.parameters())]
