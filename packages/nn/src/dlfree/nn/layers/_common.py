"""Small helpers the layer families share: parameter creation with the factory kwargs,
argument tuples and argument checks."""

from __future__ import annotations

import numbers
from collections.abc import Iterable

import dlfree as dl
from dlfree import Parameter


def empty_parameter(*shape: int, device=None, dtype=None, requires_grad: bool = True):
    """An uninitialised parameter; the layer's `reset_parameters` fills it."""
    return Parameter(dl.empty(*shape, device=device, dtype=dtype), requires_grad=requires_grad)


def ntuple(value, n: int) -> tuple:
    """`value` as an n-tuple: a sequence as it is, a single value repeated (torch's rule)."""
    if isinstance(value, Iterable) and not isinstance(value, str):
        return tuple(value)
    return (value,) * n


def check_count(value, name: str, layer: str, minimum: int = 1) -> int:
    """An integer argument (a size, a count) of at least `minimum`."""
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < minimum:
        raise ValueError(f"{layer}: {name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def check_choice(value, name: str, layer: str, valid: Iterable[str]) -> str:
    """A string argument that must be one of `valid`."""
    valid = tuple(valid)
    if value not in valid:
        raise ValueError(f"{layer}: {name} must be one of {', '.join(map(repr, valid))}, got "
                         f"{value!r}")
    return value


def check_probability(p, layer: str) -> float:
    """A dropout probability in [0, 1]."""
    if not isinstance(p, numbers.Real) or not 0 <= p <= 1:
        raise ValueError(f"{layer}: dropout probability has to be between 0 and 1, but got {p!r}")
    return p
