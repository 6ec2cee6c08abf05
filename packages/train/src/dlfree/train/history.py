"""`History`: every value a training run logs, by name, with trend queries a callback can
use to decide to stop or to decay the learning rate (the queries are the core's
`dlfree.trends.Series`, shared with dlfree-nn's graphs)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from dlfree.io import atomic_write
from dlfree.trends import Series

__all__ = ["History", "Series"]


class History:
    """Series by name: `history.log("val_loss", 0.3, step)`, then `history["val_loss"]`."""

    def __init__(self):
        self._series: dict[str, Series] = {}

    def __repr__(self) -> str:
        return f"History({', '.join(self._series) or 'empty'})"

    def log(self, name: str, value, step: int) -> None:
        """Append `value` (a number or a one-element tensor) to the series `name` at global
        step `step`."""
        if not isinstance(name, str) or not name:
            raise TypeError(f"History.log: name must be a non-empty string, got {name!r}")
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise TypeError(f"History.log({name!r}): value must be a number or a one-element "
                            f"tensor, got {type(value).__name__}") from None
        series = self._series.get(name)
        if series is None:
            series = self._series[name] = Series(name)
        series.append(number, int(step))

    def __getitem__(self, name: str) -> Series:
        try:
            return self._series[name]
        except KeyError:
            logged = ", ".join(self._series) or "nothing yet"
            raise KeyError(f"history has no series {name!r}; logged: {logged}") from None

    def __contains__(self, name: str) -> bool:
        return name in self._series

    def __iter__(self):
        return iter(self._series)

    def __len__(self) -> int:
        return len(self._series)

    def names(self) -> list[str]:
        """The logged names, in the order first logged."""
        return list(self._series)

    def rows(self):
        """Every value logged as (name, step, value), series by series in the order first
        logged, each in logging order."""
        for name, series in self._series.items():
            for step, value in zip(series.steps, series.values):
                yield name, step, value

    def to_csv(self, path) -> Path:
        """Write every value to a CSV file at `path` (atomically), one row per value with
        the columns name, step, value: the long form, which keeps values logged at
        different steps, and pivots to one column per name in a spreadsheet or pandas."""
        buffer = io.StringIO(newline="")
        writer = csv.writer(buffer)
        writer.writerow(("name", "step", "value"))
        writer.writerows(self.rows())
        return atomic_write(Path(path), buffer.getvalue().encode("utf-8"))

    def to_jsonl(self, path) -> Path:
        """Write every value to a JSON Lines file at `path` (atomically), one object
        {"name", "step", "value"} per line (NaN and the infinities as JSON's common
        NaN/Infinity extensions, which Python and pandas read)."""
        lines = "".join(json.dumps({"name": name, "step": step, "value": value}) + "\n"
                        for name, step, value in self.rows())
        return atomic_write(Path(path), lines.encode("utf-8"))

    def state_dict(self) -> dict:
        """Every series as JSON-able data ({name: {"values": [...], "steps": [...]}})."""
        return {name: {"values": list(s.values), "steps": list(s.steps)}
                for name, s in self._series.items()}

    def load_state_dict(self, state: dict) -> None:
        """Replace the contents with what `state_dict()` returned."""
        series = {}
        for name, data in state.items():
            if not isinstance(data, dict) or set(data) != {"values", "steps"} or \
                    len(data["values"]) != len(data["steps"]):
                raise ValueError(f"History.load_state_dict: series {name!r} must be a dict of "
                                 "equally long 'values' and 'steps' lists")
            s = series[name] = Series(name)
            s.values = [float(v) for v in data["values"]]
            s.steps = [int(v) for v in data["steps"]]
        self._series = series
