"""`History`: every value a training run logs, by name, with trend queries a callback can
use to decide to stop or to decay the learning rate."""

from __future__ import annotations

import csv
import io
import json
import math
import numbers
from pathlib import Path

from dlfree.io import atomic_write

_MODES = ("min", "max")


def _check_mode(mode: str, where: str) -> str:
    if mode not in _MODES:
        raise ValueError(f"{where}: mode must be 'min' (lower is better) or 'max' (higher is "
                         f"better), got {mode!r}")
    return mode


def _check_count(n, where: str, least: int = 1) -> int:
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < least:
        raise ValueError(f"{where}: n must be an integer >= {least}, got {n!r}")
    return int(n)


def _check_tol(tol, where: str) -> float:
    if isinstance(tol, bool) or not isinstance(tol, numbers.Real) or not tol >= 0:
        raise ValueError(f"{where}: tol must be a number >= 0, got {tol!r}")
    return float(tol)


class Series:
    """The values logged under one name, in order, with the global step of each.

    The trend queries look at the last `n` values and answer False (`slope`: NaN) while
    fewer values than they need have been logged, so a callback can call them from the
    first epoch on.
    """

    def __init__(self, name: str):
        self.name = name
        self.values: list[float] = []
        self.steps: list[int] = []

    def __repr__(self) -> str:
        return f"Series({self.name!r}, {len(self.values)} values)"

    def __len__(self) -> int:
        return len(self.values)

    def __iter__(self):
        return iter(self.values)

    def append(self, value: float, step: int) -> None:
        self.values.append(value)
        self.steps.append(step)

    def _need_values(self, what: str) -> None:
        if not self.values:
            raise ValueError(f"history[{self.name!r}].{what}: nothing has been logged under "
                             f"{self.name!r} yet")

    @property
    def last(self) -> float:
        """The most recent value."""
        self._need_values("last")
        return self.values[-1]

    def best(self, mode: str = "min") -> float:
        """The lowest value (mode "min") or the highest ("max")."""
        _check_mode(mode, f"history[{self.name!r}].best")
        self._need_values("best")
        return min(self.values) if mode == "min" else max(self.values)

    def improving(self, n: int, mode: str = "min") -> bool:
        """Whether each of the last `n` values is better than the one before it (strictly
        lower in mode "min", higher in mode "max"); needs n + 1 values."""
        where = f"history[{self.name!r}].improving"
        n, mode = _check_count(n, where), _check_mode(mode, where)
        if len(self.values) < n + 1:
            return False
        recent = self.values[-(n + 1):]
        sign = 1 if mode == "min" else -1
        return all(sign * (new - old) < 0 for old, new in zip(recent, recent[1:]))

    def stalled(self, n: int, tol: float = 0.0, mode: str = "min") -> bool:
        """Whether none of the last `n` values beat the best value before them by more than
        `tol` (the patience test of early stopping); needs n + 1 values."""
        where = f"history[{self.name!r}].stalled"
        n, tol = _check_count(n, where), _check_tol(tol, where)
        mode = _check_mode(mode, where)
        if len(self.values) < n + 1:
            return False
        before, recent = self.values[:-n], self.values[-n:]
        if mode == "min":
            return not min(recent) < min(before) - tol
        return not max(recent) > max(before) + tol

    def converged(self, n: int, tol: float) -> bool:
        """Whether the last `n` values all lie within `tol` of each other (max - min <= tol);
        needs n values."""
        where = f"history[{self.name!r}].converged"
        n, tol = _check_count(n, where), _check_tol(tol, where)
        if len(self.values) < n:
            return False
        recent = self.values[-n:]
        return max(recent) - min(recent) <= tol

    def slope(self, n: int) -> float:
        """The least-squares slope of the last `n` values against their position (change per
        logged value); NaN while fewer than `n` values have been logged."""
        n = _check_count(n, f"history[{self.name!r}].slope", least=2)
        if len(self.values) < n:
            return math.nan
        recent = self.values[-n:]
        x_mean = (n - 1) / 2
        y_mean = math.fsum(recent) / n
        covariance = math.fsum((i - x_mean) * (y - y_mean) for i, y in enumerate(recent))
        variance = math.fsum((i - x_mean) ** 2 for i in range(n))
        return covariance / variance


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
