"""Argument checks shared by the schedulers: each failure names the scheduler, the argument,
what it got and what would be valid."""

from __future__ import annotations

import math
import numbers


def check_int(owner: str, name: str, value, minimum: int) -> int:
    """Return `value` if it is an integer >= `minimum` (bools are not integers here)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"{owner}: {name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def check_real(owner: str, name: str, value, low: float = -math.inf, high: float = math.inf,
               low_open: bool = False, high_open: bool = False) -> float:
    """Return `value` if it is a finite real number in the interval from `low` to `high`,
    open at either end as asked."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or \
            not math.isfinite(value) or value < low or value > high or \
            (low_open and value == low) or (high_open and value == high):
        raise ValueError(f"{owner}: {name} must be {_interval(low, high, low_open, high_open)}, "
                         f"got {value!r}")
    return value


def check_choice(owner: str, name: str, value, choices: tuple[str, ...]) -> str:
    """Return `value` if it is one of `choices`."""
    if value not in choices:
        valid = ", ".join(repr(c) for c in choices)
        raise ValueError(f"{owner}: {name} must be one of {valid}, got {value!r}")
    return value


def check_flag(owner: str, name: str, value) -> bool:
    """Return `value` if it is True or False."""
    if not isinstance(value, bool):
        raise ValueError(f"{owner}: {name} must be True or False, got {value!r}")
    return value


def _interval(low: float, high: float, low_open: bool, high_open: bool) -> str:
    if high == math.inf:
        return f"a number {'>' if low_open else '>='} {low:g}"
    if low == -math.inf:
        return f"a number {'<' if high_open else '<='} {high:g}"
    return f"a number in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
