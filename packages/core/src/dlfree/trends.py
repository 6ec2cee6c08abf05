"""Trend queries over a series of logged numbers: `Series` with `improving`, `stalled`,
`converged` and `slope`.

They live in the core because two distributions ask them: dlfree-train's `History` (a
Trainer's logged values) and dlfree-nn's graphs (`Graph.trend`, values recorded by path);
neither may import the other.
"""

from __future__ import annotations

import math
import numbers

__all__ = ["Series"]

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
    """The values logged under one name, in order, with the step of each.

    The trend queries look at the last `n` values and answer False (`slope`: NaN) while
    fewer values than they need have been logged, so a callback can call them from the
    first epoch on.
    """

    def __init__(self, name: str, owner: str = "history"):
        self.name = name
        self.owner = owner  # how errors name where the series came from
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
            raise ValueError(f"{self.owner}[{self.name!r}].{what}: nothing has been logged under "
                             f"{self.name!r} yet")

    @property
    def last(self) -> float:
        """The most recent value."""
        self._need_values("last")
        return self.values[-1]

    def best(self, mode: str = "min") -> float:
        """The lowest value (mode "min") or the highest ("max")."""
        _check_mode(mode, f"{self.owner}[{self.name!r}].best")
        self._need_values("best")
        return min(self.values) if mode == "min" else max(self.values)

    def improving(self, n: int, mode: str = "min") -> bool:
        """Whether each of the last `n` values is better than the one before it (strictly
        lower in mode "min", higher in mode "max"); needs n + 1 values."""
        where = f"{self.owner}[{self.name!r}].improving"
        n, mode = _check_count(n, where), _check_mode(mode, where)
        if len(self.values) < n + 1:
            return False
        recent = self.values[-(n + 1):]
        sign = 1 if mode == "min" else -1
        return all(sign * (new - old) < 0 for old, new in zip(recent, recent[1:]))

    def stalled(self, n: int, tol: float = 0.0, mode: str = "min") -> bool:
        """Whether none of the last `n` values beat the best value before them by more than
        `tol` (the patience test of early stopping); needs n + 1 values."""
        where = f"{self.owner}[{self.name!r}].stalled"
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
        where = f"{self.owner}[{self.name!r}].converged"
        n, tol = _check_count(n, where), _check_tol(tol, where)
        if len(self.values) < n:
            return False
        recent = self.values[-n:]
        return max(recent) - min(recent) <= tol

    def slope(self, n: int) -> float:
        """The least-squares slope of the last `n` values against their position (change per
        logged value); NaN while fewer than `n` values have been logged."""
        n = _check_count(n, f"{self.owner}[{self.name!r}].slope", least=2)
        if len(self.values) < n:
            return math.nan
        recent = self.values[-n:]
        x_mean = (n - 1) / 2
        y_mean = math.fsum(recent) / n
        covariance = math.fsum((i - x_mean) * (y - y_mean) for i, y in enumerate(recent))
        variance = math.fsum((i - x_mean) ** 2 for i in range(n))
        return covariance / variance
