"""Checking and describing the Trainer's arguments: counts and limits, metrics, the
scheduler's kind, and mixed precision."""

from __future__ import annotations

import contextlib
import inspect
import math
import numbers
import re

from dlfree.tensor import Tensor


def count(name: str, value, least: int, optional: bool = True):
    """`value` as an int >= `least` (None passes when `optional`), else a ValueError."""
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < least:
        valid = f"an integer >= {least}" + (" or None" if optional else "")
        raise ValueError(f"Trainer: {name} must be {valid}, got {value!r}")
    return int(value)


def positive(name: str, value):
    """`value` as a positive finite float (None passes), else a ValueError."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not value > 0 or \
            not math.isfinite(value):
        raise ValueError(f"Trainer: {name} must be a positive finite number or None, got "
                         f"{value!r}")
    return float(value)


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def metric_table(metrics) -> dict:
    """{name: metric} from a dict, or from a list (each named by its `name` attribute or its
    class name in snake_case), each checked for update / compute / reset."""
    if metrics is None:
        return {}
    if isinstance(metrics, dict):
        table = dict(metrics)
    elif isinstance(metrics, list | tuple):
        table = {}
        for metric in metrics:
            name = getattr(metric, "name", None) or _snake(type(metric).__name__)
            if name in table:
                raise ValueError(f"Trainer: two metrics are named {name!r}; pass metrics as a "
                                 "dict {name: metric} to name them apart")
            table[name] = metric
    else:
        raise TypeError(f"Trainer: metrics must be a dict {{name: metric}} or a list of "
                        f"metrics, got {type(metrics).__name__}")
    for name, metric in table.items():
        missing = [m for m in ("update", "compute", "reset")
                   if not callable(getattr(metric, m, None))]
        if missing:
            raise TypeError(f"Trainer: metric {name!r} ({type(metric).__name__}) lacks "
                            f"{', '.join(missing)}; a metric needs update(preds, target), "
                            "compute() and reset()")
    return table


def name_of(obj) -> str | None:
    """A function's name or an object's class name, for `Trainer.config`."""
    if obj is None:
        return None
    return getattr(obj, "__name__", None) or type(obj).__name__


def data_length(data) -> int | None:
    """Batches per epoch, or None for data without a length."""
    try:
        return len(data)
    except TypeError:
        return None


def scalar(name: str, value) -> dict[str, float]:
    """A metric's result as {name: float} (a dict result gives one entry per key)."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            out.update(scalar(f"{name}_{key}", item))
        return out
    if isinstance(value, Tensor) and value.numel() != 1:
        raise TypeError(f"Trainer: metric {name!r} computed a tensor of shape "
                        f"{tuple(value.shape)}; the Trainer logs numbers, so give it a metric "
                        "that reduces to one value (e.g. an averaged form)")
    return {name: float(value)}


def step_takes_value(scheduler) -> bool:
    """Whether `scheduler.step` requires an argument (a monitored value, as ReduceLROnPlateau)."""
    try:
        parameters = inspect.signature(scheduler.step).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.default is inspect.Parameter.empty and
               p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in parameters)


def mixed_precision(amp):
    """(autocast context factory, GradScaler or None, dtype name or None) for `amp`."""
    if amp is False or amp is None:
        return contextlib.nullcontext, None, None
    from dlfree import amp as amp_module
    from dlfree.dtypes import as_dtype, float16

    dtype = float16 if amp is True else as_dtype(amp)
    amp_module.autocast(dtype=dtype)  # validates the dtype now rather than at the first batch
    return (lambda: amp_module.autocast(dtype=dtype)), amp_module.GradScaler(), dtype.name
