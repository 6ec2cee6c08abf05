"""The one vocabulary in which parity tests describe their inputs, shared by the op harness
(support.parity) and the layer harness (support.torch_copy).

A spec says what an input is; `make_arrays` draws every input of a call from one seed, so
that dl.free and torch receive the same numbers. A bare shape tuple stands for `Float(shape)`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Float:
    """A floating input: values uniform on [low, high), or standard normal when both are None.

    `grad=False` makes it a constant; `distinct=True` spaces the values apart (for max/sort,
    so that finite differences never cross a tie). Drawn in float64; each harness casts it to
    the dtype it checks in.
    """

    shape: tuple
    low: float | None = None
    high: float | None = None
    grad: bool = True
    distinct: bool = False


@dataclass(frozen=True)
class Int:
    """An integer (int64) input, e.g. indices or class labels, drawn from [low, high)."""

    shape: tuple
    low: int = 0
    high: int = 5


@dataclass(frozen=True)
class Bool:
    """A boolean mask input, each element True with probability 1/2."""

    shape: tuple


@dataclass(frozen=True)
class Fixed:
    """A constant input given as a value (array or nested list), in `dtype` or the dtype NumPy
    infers; never requires grad."""

    value: Any
    dtype: str | None = None


def as_spec(x):
    """`x` as a spec: a bare shape tuple is a standard-normal `Float`."""
    return Float(x) if isinstance(x, tuple) else x


def wants_grad(spec) -> bool:
    """Whether the input asks for its gradient (floating inputs unless `grad=False`)."""
    return isinstance(spec, Float) and spec.grad


def make_arrays(specs, seed: int = 0) -> list[np.ndarray]:
    """The inputs' values as float64 / int64 / bool NumPy arrays (a `Fixed` as given), drawn
    in order from one generator seeded with `seed`."""
    rs = np.random.default_rng(seed)
    arrays = []
    for spec in map(as_spec, specs):
        if isinstance(spec, Float):
            n = int(np.prod(spec.shape))
            if spec.distinct:
                lo = -2.0 if spec.low is None else spec.low
                hi = 2.0 if spec.high is None else spec.high
                values = rs.permutation(np.linspace(lo, hi, max(n, 1)))[:n]
                arrays.append(values.reshape(spec.shape))
            elif spec.low is None:
                arrays.append(rs.standard_normal(spec.shape))
            else:
                arrays.append(rs.uniform(spec.low, spec.high, spec.shape))
        elif isinstance(spec, Int):
            arrays.append(rs.integers(spec.low, spec.high, spec.shape, dtype=np.int64))
        elif isinstance(spec, Bool):
            arrays.append(rs.random(spec.shape) < 0.5)
        else:
            arrays.append(np.asarray(spec.value, dtype=spec.dtype))
    return arrays
