"""Sizes that follow the dynamic dims of a trace: `SymInt` is coeff * (product of named
dims) + offset, recovered by tracing again at other sizes (`fit`)."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class SymInt:
    """An int that follows dynamic dims: coeff * prod(sizes of `dims`) + offset."""

    coeff: int
    dims: tuple
    offset: int = 0

    def value(self, sizes: dict) -> int:
        """The int at the given {dim name: size}."""
        return self.coeff * math.prod(sizes[d] for d in self.dims) + self.offset

    def __str__(self) -> str:
        text = "*".join(([str(self.coeff)] if self.coeff != 1 else []) + list(self.dims))
        if self.offset:
            text += f"{'+' if self.offset > 0 else '-'}{abs(self.offset)}"
        return text

    __repr__ = __str__


def concrete(value, sizes: dict):
    """`value` with every SymInt in it (through tuples, lists, dicts and slices) evaluated at
    `sizes`."""
    if isinstance(value, SymInt):
        return value.value(sizes)
    if isinstance(value, tuple | list):
        return rebuild(value, [concrete(v, sizes) for v in value])
    if isinstance(value, slice):
        return slice(concrete(value.start, sizes), concrete(value.stop, sizes),
                     concrete(value.step, sizes))
    if isinstance(value, dict):
        return {k: concrete(v, sizes) for k, v in value.items()}
    return value


def rebuild(value: tuple | list, items: list):
    """A tuple, list or named tuple of `value`'s type holding `items`."""
    return type(value)(*items) if hasattr(value, "_fields") else type(value)(items)


def has_symbols(value) -> bool:
    """Whether a SymInt occurs in `value` (through tuples, lists, dicts and slices)."""
    if isinstance(value, SymInt):
        return True
    if isinstance(value, tuple | list):
        return any(has_symbols(v) for v in value)
    if isinstance(value, slice):
        return any(has_symbols(v) for v in (value.start, value.stop, value.step))
    if isinstance(value, dict):
        return any(has_symbols(v) for v in value.values())
    return False


class NotAffine(ValueError):
    """A traced int changed with the dynamic dims in a way `SymInt` cannot express."""


def fit(values: list, sizes: list):
    """Fit one traced int seen in several traces to a SymInt.

    `values[k]` is the int in trace k and `sizes[k]` that trace's {dim name: size}; trace 0
    is the base, trace 1 + i changes dim i alone, the last changes every dim (a check).
    Returns the int when it never changed, else a SymInt that gives every trace's value."""
    base = values[0]
    if all(v == base for v in values):
        return base
    names = list(sizes[0])
    moved = tuple(n for i, n in enumerate(names) if values[1 + i] != base)
    if not moved:
        raise NotAffine(f"changed only when all dynamic dims changed together ({values})")
    first = 1 + names.index(moved[0])
    product = [math.prod(s[d] for d in moved) for s in sizes]
    step = product[first] - product[0]
    coeff, rest = divmod(values[first] - base, step)
    if rest:
        raise NotAffine(f"is not an integer multiple of {' * '.join(moved)} ({values})")
    result = SymInt(coeff, moved, base - coeff * product[0])
    if result.coeff == 0 or any(result.value(s) != v for s, v in zip(sizes, values, strict=True)):
        raise NotAffine(f"is not of the form a * {' * '.join(moved)} + b ({values})")
    return result
