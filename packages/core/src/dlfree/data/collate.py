"""Collation: turning a list of dataset items into one batch of tensors.

`default_collate` follows torch.utils.data.default_collate: arrays, tensors and numbers are
stacked along a new first dimension, dicts, tuples, lists and namedtuples are collated field
by field, strings stay lists. Each stacked field is one preallocated buffer that the items
are copied into, with no intermediate copies.
"""

from __future__ import annotations

import collections.abc
import copy
import numbers

import numpy as np

from ..creation import as_tensor
from ..device import CPU
from ..dtypes import float64
from ..errors import DeviceError, ShapeError
from ..tensor import Tensor

__all__ = ["default_collate", "default_convert"]


def default_collate(batch: list):
    """Stack a list of items into a batch, recursing into dicts, tuples, lists and
    namedtuples. Tensors and NumPy arrays become one tensor of shape (len(batch), *shape)
    with their dtype; Python floats become float64, ints int64 and bools bool tensors
    (as in PyTorch); NumPy scalars keep their dtype; strings and bytes stay a list.
    The batch is new memory, outside any autograd graph. Items whose shapes differ raise a
    ShapeError naming the field and both shapes."""
    if not isinstance(batch, collections.abc.Sequence) or not batch:
        raise ValueError(f"default_collate: expected a non-empty list of items, got {batch!r}")
    return _collate(list(batch), "batch")


def _collate(items: list, field: str):
    elem = items[0]
    if isinstance(elem, Tensor):
        return _stack_tensors(items, field)
    if isinstance(elem, np.ndarray):
        return _stack_arrays([_host_array(a, field) for a in items], CPU, field)
    if isinstance(elem, np.bool_ | np.number):
        return as_tensor(np.asarray(items))
    if isinstance(elem, str | bytes):
        return items
    if isinstance(elem, numbers.Number):
        return _numbers(items, field)
    if isinstance(elem, collections.abc.Mapping):
        return _collate_mapping(items, field)
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # a namedtuple
        return type(elem)(*(_collate(list(values), f"{field}.{name}")
                            for name, values in zip(elem._fields, zip(*items))))
    if isinstance(elem, collections.abc.Sequence):
        return _collate_sequence(items, field)
    raise TypeError(f"default_collate: {field} holds a {type(elem).__name__}; valid: tensors, "
                    "NumPy arrays, numbers, strings, and dicts/tuples/lists/namedtuples of "
                    "them (or pass a collate_fn)")


def _host_array(array, field: str) -> np.ndarray:
    if not isinstance(array, np.ndarray):
        raise TypeError(f"default_collate: {field} is a NumPy array in item 0 but a "
                        f"{type(array).__name__} in another item")
    if array.dtype.kind in "OSUV":
        raise TypeError(f"default_collate: {field} holds NumPy arrays of dtype {array.dtype}, "
                        "which cannot become tensors; valid: bool, integer and float arrays")
    return array


def _stack_tensors(items: list, field: str) -> Tensor:
    device = items[0].device
    for k, t in enumerate(items):
        if not isinstance(t, Tensor):
            raise TypeError(f"default_collate: {field} is a Tensor in item 0 but a "
                            f"{type(t).__name__} in item {k}")
        if t.device is not device:
            raise DeviceError(f"default_collate: {field} is on {device} in item 0 but on "
                              f"{t.device} in item {k}; move the items to one device")
    return _stack_arrays([t.array for t in items], device, field)


def _stack_arrays(arrays: list, device, field: str) -> Tensor:
    """Copy same-shaped arrays into one new (len(arrays), *shape) buffer on `device`."""
    shape = arrays[0].shape
    for k, a in enumerate(arrays):
        if getattr(a, "shape", None) != shape:
            found = a.shape if hasattr(a, "shape") else type(a).__name__
            raise ShapeError(f"default_collate: {field} has shape {shape} in item 0 but "
                             f"{found} in item {k}; items of a batch must have equal shapes "
                             "(resize them in the dataset, or pass a collate_fn that pads)")
    dtype = np.result_type(*{a.dtype for a in arrays})
    with device.context():
        out = device.xp.empty((len(arrays), *shape), dtype=dtype)
        for k, a in enumerate(arrays):
            out[k] = a
    return as_tensor(out, device=device)


def _numbers(items: list, field: str) -> Tensor:
    for k, x in enumerate(items):
        if not isinstance(x, numbers.Real):
            raise TypeError(f"default_collate: {field} is a number in item 0 but a "
                            f"{type(x).__name__} in item {k}")
    # torch.tensor's inference: ints -> int64, bools -> bool, a float among ints -> the
    # default float dtype; but a batch that starts with a float is float64.
    return as_tensor(items, dtype=float64 if isinstance(items[0], float) else None)


def _collate_mapping(items: list, field: str):
    elem = items[0]
    for k, item in enumerate(items):
        if not isinstance(item, collections.abc.Mapping) or item.keys() != elem.keys():
            found = sorted(item) if isinstance(item, collections.abc.Mapping) else \
                type(item).__name__
            raise ShapeError(f"default_collate: {field} has keys {sorted(elem)} in item 0 but "
                             f"{found} in item {k}")
    return rebuild_mapping(elem, {key: _collate([d[key] for d in items], f"{field}[{key!r}]")
                                  for key in elem})


def rebuild_mapping(like: collections.abc.Mapping, values: dict):
    """`values` in a mapping of the same type as `like` (a dict when that type can't be
    rebuilt from a dict)."""
    if isinstance(like, collections.abc.MutableMapping):
        clone = copy.copy(like)  # keeps the type and its extras (OrderedDict, defaultdict, ...)
        clone.update(values)
        return clone
    try:
        return type(like)(values)
    except TypeError:
        return values


def _collate_sequence(items: list, field: str):
    size = len(items[0])
    for k, item in enumerate(items):
        if len(item) != size:
            raise ShapeError(f"default_collate: {field} has {size} elements in item 0 but "
                             f"{len(item)} in item {k}; sequences in a batch need equal lengths")
    columns = [_collate(list(column), f"{field}[{i}]") for i, column in
               enumerate(zip(*items))]
    elem = items[0]
    if isinstance(elem, tuple | list):
        return columns  # tuples become lists, as in PyTorch
    try:
        return type(elem)(columns)
    except TypeError:
        return columns


def default_convert(item):
    """Turn NumPy arrays and scalars inside `item` into tensors without batching
    (the collate function of a DataLoader with batch_size=None)."""
    if isinstance(item, np.ndarray) and item.dtype.kind not in "OSUV":
        return as_tensor(item)
    if isinstance(item, np.bool_ | np.number):
        return as_tensor(np.asarray(item))
    if isinstance(item, str | bytes | Tensor):
        return item
    if isinstance(item, collections.abc.Mapping):
        return rebuild_mapping(item, {key: default_convert(v) for key, v in item.items()})
    if isinstance(item, tuple) and hasattr(item, "_fields"):
        return type(item)(*(default_convert(v) for v in item))
    if isinstance(item, tuple | list):
        return [default_convert(v) for v in item]
    return item
