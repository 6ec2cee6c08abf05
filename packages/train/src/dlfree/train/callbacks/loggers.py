"""`CSVLogger` and `JSONLLogger`: a file with one row per epoch (and optionally per optimizer
step) of every logged value, synced to disk at each epoch's end; a resumed run continues it."""

from __future__ import annotations

import abc
import csv
import io
import json
import numbers
import os
from pathlib import Path

from dlfree import hookimpl
from dlfree.io import atomic_write

# Every row starts with these: what the row is ("epoch" or "step"), the 0-based epoch and the
# global step (optimizer steps taken) when it was written.
KEY_COLUMNS = ("kind", "epoch", "step")
# The History names of values logged once per optimizer step (the Trainer's "step_loss",
# "step_lr"; LRMonitor's "step_lr/group1", ...).
STEP_PREFIX = "step_"


def check_every_n_steps(owner: str, every_n_steps) -> int | None:
    """A logger's `every_n_steps`: a whole number >= 1, or None for epoch values only."""
    if every_n_steps is not None and (isinstance(every_n_steps, bool) or not isinstance(
            every_n_steps, numbers.Integral) or every_n_steps < 1):
        raise ValueError(f"{owner}: every_n_steps must be an integer >= 1 or None (epoch "
                         f"values only), got {every_n_steps!r}")
    return None if every_n_steps is None else int(every_n_steps)


def step_values(history, step: int) -> dict[str, float]:
    """The values `history` got at optimizer step `step` under a name beginning "step_"."""
    return {name: history[name].last for name in history.names()
            if name.startswith(STEP_PREFIX) and history[name].steps[-1] == step}


class MetricsLogger(abc.ABC):
    """What the CSV and JSONL loggers share: where the file goes, which rows a resumed run
    keeps, and when rows are written. Subclasses say how rows are read and written.

    Epoch rows hold the `logs` of `dlfree_train_epoch_end`: the Trainer's loss, lr and
    validation metrics, plus what callbacks listed before the logger added (LRMonitor's
    per-group lrs). With `every_n_steps`, a step row is written every that many optimizer
    steps, holding each History value logged at that step under a name beginning "step_".
    Rows are flushed and fsynced at each epoch's end (and when training ends or fails).

    At the start of `fit` the file is cut back to the run's position: rows of epochs not
    finished and of steps not taken are dropped (so a resumed run writes no duplicates, and
    a run starting from scratch replaces the file). Lines a crash cut short are dropped too.
    """

    rank_zero_only = True  # a distributed run writes it from rank 0 alone

    default_name = ""

    def __init__(self, path=None, every_n_steps: int | None = None):
        self.path = None if path is None else Path(path)
        self.every_n_steps = check_every_n_steps(type(self).__name__, every_n_steps)
        self._file = None
        self._last_step_row = 0

    # ------------------------------------------------------------------ events
    @hookimpl
    def dlfree_train_start(self, trainer):
        if self.path is None:
            if trainer.run_dir is None:
                raise ValueError(f"{type(self).__name__}: give path=, or a Trainer run_dir, to "
                                 "say where the metrics file goes")
            self.path = Path(trainer.run_dir) / self.default_name
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._close()
        epoch, step = trainer.state.epoch, trainer.state.global_step
        rows = [row for row in self._read() if
                (row["kind"] == "epoch" and row["epoch"] < epoch) or
                (row["kind"] == "step" and row["step"] <= step)]
        self._restart(rows)
        self._last_step_row = step
        self._file = self._open()

    @hookimpl
    def dlfree_train_batch_end(self, trainer):
        self._write_step_row(trainer)

    @hookimpl
    def dlfree_train_epoch_end(self, trainer, epoch, logs):
        self._write_step_row(trainer)  # a step the epoch's leftover batches took after them
        self._write({"kind": "epoch", "epoch": epoch, "step": trainer.state.global_step,
                     **logs})
        self._sync()

    @hookimpl
    def dlfree_train_end(self, trainer):
        self._close()

    @hookimpl
    def dlfree_train_exception(self, trainer, exception):
        self._close()

    # ------------------------------------------------------------------ rows
    def _write_step_row(self, trainer) -> None:
        step = trainer.state.global_step
        if self.every_n_steps is None or step == self._last_step_row or \
                step % self.every_n_steps:
            return
        self._last_step_row = step
        self._write({"kind": "step", "epoch": trainer.state.epoch, "step": step,
                     **step_values(trainer.history, step)})

    def _read(self) -> list[dict]:
        """The rows in the file, their key columns parsed; rows that do not parse are left
        out (a line a crash cut short)."""
        if not self.path.exists():
            return []
        text = self.path.read_text(encoding="utf-8")
        if not text.endswith("\n"):  # the last line was cut short: its values may be too
            text = text[:text.rfind("\n") + 1]
        rows = []
        for row in self._parse(text):
            try:
                kind, epoch, step = row["kind"], int(row["epoch"]), int(row["step"])
            except (KeyError, TypeError, ValueError):
                continue
            if kind in ("epoch", "step"):
                rows.append({**row, "epoch": epoch, "step": step})
        return rows

    def _open(self):
        return open(self.path, "a", encoding="utf-8", newline="")

    def _sync(self) -> None:
        if self._file is not None:
            self._file.flush()
            os.fsync(self._file.fileno())

    def _close(self) -> None:
        if self._file is not None:
            self._sync()
            self._file.close()
            self._file = None

    @abc.abstractmethod
    def _parse(self, text: str) -> list[dict]:
        """The rows in `text`, a file's contents."""

    @abc.abstractmethod
    def _restart(self, rows: list[dict]) -> None:
        """Replace the file's contents with `rows` (atomically)."""

    @abc.abstractmethod
    def _write(self, row: dict) -> None:
        """Append `row` to the open file."""


class CSVLogger(MetricsLogger):
    """Logs to a CSV file (default: `metrics.csv` in the Trainer's run_dir) with the columns
    kind, epoch, step and then each value's name in the order first logged; a row leaves the
    values it lacks empty. When a new name appears the file is rewritten (atomically) with
    the wider header. See `MetricsLogger` for which rows are written and kept on resume."""

    default_name = "metrics.csv"

    def __init__(self, path=None, every_n_steps: int | None = None):
        super().__init__(path, every_n_steps)
        self._columns: list[str] = list(KEY_COLUMNS)
        self._rows: list[dict] = []

    def _parse(self, text: str) -> list[dict]:
        # a malformed row has too few fields (DictReader fills in None) or too many (kept
        # under the key None)
        return [row for row in csv.DictReader(io.StringIO(text, newline=""))
                if None not in row.values() and None not in row]

    def _restart(self, rows: list[dict]) -> None:
        self._rows = rows
        self._columns = list(KEY_COLUMNS)
        for row in rows:
            self._add_columns(row)
        self._rewrite()

    def _add_columns(self, row: dict) -> bool:
        new = [name for name in row if name not in self._columns]
        self._columns.extend(new)
        return bool(new)

    def _rewrite(self) -> None:
        buffer = io.StringIO(newline="")
        writer = csv.DictWriter(buffer, self._columns, restval="")
        writer.writeheader()
        writer.writerows(self._rows)
        atomic_write(self.path, buffer.getvalue().encode("utf-8"))

    def _write(self, row: dict) -> None:
        self._rows.append(row)
        if self._add_columns(row):
            self._close()
            self._rewrite()
            self._file = self._open()
            return
        csv.DictWriter(self._file, self._columns, restval="").writerow(row)


class JSONLLogger(MetricsLogger):
    """Logs to a JSON Lines file (default: `metrics.jsonl` in the Trainer's run_dir): one JSON
    object per row with kind, epoch, step and the row's values (NaN and infinities as JSON's
    common NaN/Infinity extensions, which Python and pandas read). See `MetricsLogger` for
    which rows are written and kept on resume."""

    default_name = "metrics.jsonl"

    def _parse(self, text: str) -> list[dict]:
        rows = []
        for line in text.splitlines():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(row, dict):
                rows.append(row)
        return rows

    def _restart(self, rows: list[dict]) -> None:
        atomic_write(self.path, "".join(_line(row) for row in rows).encode("utf-8"))

    def _write(self, row: dict) -> None:
        self._file.write(_line(row))


def _line(row: dict) -> str:
    # NumPy scalars a callback may have put in the logs become plain numbers
    return json.dumps({k: v if isinstance(v, str | numbers.Integral) or not isinstance(
        v, numbers.Real) else float(v) for k, v in row.items()}) + "\n"
