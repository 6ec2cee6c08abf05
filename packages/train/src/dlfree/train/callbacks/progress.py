"""`ProgressBar`: training progress per epoch, as a tqdm bar (smoothed loss, rate, ETA) on a
terminal or as one line per epoch elsewhere."""

from __future__ import annotations

import io
import numbers
import os
import sys
import time

from dlfree import hookimpl


class SmoothedValue:
    """A bias-corrected exponential moving average: `weight` is the newest value's share
    (1: the last value alone); weight 0 is the plain mean, the limit of smaller weights."""

    def __init__(self, weight: float):
        self.weight = weight
        self.count = 0
        self._average = 0.0

    def add(self, value: float) -> float:
        """Take in `value`; returns the smoothed value."""
        self.count += 1
        if self.weight == 0:
            self._average += (value - self._average) / self.count
            return self._average
        self._average = self.weight * value + (1 - self.weight) * self._average
        return self._average / (1 - (1 - self.weight) ** self.count)


def format_values(values: dict) -> str:
    """`name=value` pairs, numbers to 4 significant digits: how the epoch's values are shown."""
    return ", ".join(f"{name}={value:.4g}" if isinstance(value, numbers.Real) else
                     f"{name}={value}" for name, value in values.items())


class ProgressBar:
    """Shows training progress on `file` (default: standard error, looked up when training
    starts).

    With a bar (`bar=True`, or by default when `file` is a terminal) each epoch gets a tqdm
    bar: batches done out of the epoch's length, elapsed and remaining time, the rate (it/s)
    and the batch loss smoothed with a moving average (`smoothing`: the newest loss's share;
    0 shows the epoch's plain mean). At the epoch's end the bar stays on screen with the
    epoch's values: the mean loss, the lr and the validation metrics. Without a bar (the
    default for a log file or CI, where a redrawn bar leaves carriage-return noise) it writes
    one line per epoch with the same values, the batch count, the time and the rate.
    `refresh_interval` is the least time in seconds between two redraws of a bar.
    """

    rank_zero_only = True  # a distributed run writes it from rank 0 alone

    def __init__(self, file=None, bar: bool | None = None, smoothing: float = 0.1,
                 refresh_interval: float = 0.1):
        if bar is not None and not isinstance(bar, bool):
            raise TypeError(f"ProgressBar: bar must be True, False or None (a bar on a "
                            f"terminal only), got {bar!r}")
        for name, value, high in (("smoothing", smoothing, 1.0),
                                  ("refresh_interval", refresh_interval, float("inf"))):
            if isinstance(value, bool) or not isinstance(value, numbers.Real) or \
                    not 0 <= value <= high:
                valid = "a number in [0, 1]" if high == 1.0 else "a number >= 0"
                raise ValueError(f"ProgressBar: {name} must be {valid}, got {value!r}")
        if file is not None and not callable(getattr(file, "write", None)):
            raise TypeError(f"ProgressBar: file must be a writable text stream, got "
                            f"{type(file).__name__}")
        self.file = file
        self.bar = bar
        self.smoothing = float(smoothing)
        self.refresh_interval = float(refresh_interval)
        self._bar = None
        self._loss: SmoothedValue | None = None
        self._batches = 0
        self._started = 0.0

    def _stream(self):
        return sys.stderr if self.file is None else self.file

    def _use_bar(self) -> bool:
        if self.bar is not None:
            return self.bar
        isatty = getattr(self._stream(), "isatty", None)
        return bool(callable(isatty) and isatty())

    def _width_known(self) -> bool:
        """Whether the stream is a terminal that reports its width: the bar then follows it.
        Elsewhere the bar takes the width it needs; a terminal reporting 0 columns (some
        containers and CI terminals do) would otherwise get empty lines."""
        try:
            return os.get_terminal_size(self._stream().fileno()).columns > 0
        except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
            return False

    @staticmethod
    def _label(trainer, epoch: int) -> str:
        epochs = trainer.state.epochs
        return f"epoch {epoch + 1}/{epochs}" if epochs else f"epoch {epoch + 1}"

    @hookimpl
    def dlfree_train_epoch_start(self, trainer, epoch):
        self._close()
        self._loss = SmoothedValue(self.smoothing)
        self._batches = 0
        self._started = time.perf_counter()
        if self._use_bar():
            from tqdm import tqdm  # (imported only when a progress bar is drawn)

            self._bar = tqdm(total=trainer.state.steps_per_epoch,
                             initial=trainer.state.batch_index, desc=self._label(trainer, epoch),
                             unit="it", file=self._stream(), leave=True,
                             mininterval=self.refresh_interval,
                             dynamic_ncols=self._width_known())

    @hookimpl
    def dlfree_train_batch_end(self, trainer, loss):
        self._batches += 1
        smoothed = self._loss.add(float(loss))
        if self._bar is not None:
            self._bar.set_postfix_str(f"loss={smoothed:.4g}", refresh=False)
            self._bar.update(1)

    @hookimpl
    def dlfree_train_epoch_end(self, trainer, epoch, logs):
        if self._bar is not None:
            self._bar.set_postfix_str(format_values(logs), refresh=False)
            self._close()
            return
        seconds = time.perf_counter() - self._started
        rate = f"{self._batches / seconds:.1f} it/s" if seconds > 0 else "? it/s"
        values = f": {format_values(logs)}" if logs else ""
        stream = self._stream()
        stream.write(f"{self._label(trainer, epoch)}{values} ({self._batches} batches in "
                     f"{seconds:.2f} s, {rate})\n")
        stream.flush()

    @hookimpl
    def dlfree_train_end(self, trainer):
        self._close()

    @hookimpl
    def dlfree_train_exception(self, trainer, exception):
        self._close()

    def _close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
