"""Collectives over many tensors at once: one flat buffer per dtype and device, one call
each (broadcasting a model's parameters, averaging them), instead of one per tensor."""

from __future__ import annotations

from ..errors import DistributedError
from ..tensor import Tensor
from .collectives import all_gather_object, all_reduce, broadcast
from .group import resolve
from .reduce_op import ReduceOp


def _by_kind(tensors) -> dict:
    kinds: dict = {}
    for t in tensors:
        kinds.setdefault((t._data.dtype, t._device), []).append(t)
    return kinds


def _coalesced(tensors, run) -> None:
    """Flatten `tensors` of one kind, `run(flat)` in place, and copy the parts back."""
    for (_, device), group in _by_kind(tensors).items():
        xp = device.xp
        flat = xp.concatenate([t._data.reshape(-1) for t in group])
        run(Tensor._make(flat, device))
        offset = 0
        for t in group:
            n = t._data.size
            xp.copyto(t._data, flat[offset:offset + n].reshape(t._data.shape))
            t._vc[0] += 1
            offset += n


def broadcast_tensors(tensors, src: int = 0, group=None) -> None:
    """Give every rank global rank `src`'s values of `tensors`, in place."""
    _coalesced(list(tensors), lambda flat: broadcast(flat, src, group))


def average_tensors(tensors, group=None) -> None:
    """Replace `tensors` on every rank by their mean over the ranks, in place."""
    _coalesced(list(tensors), lambda flat: all_reduce(flat, ReduceOp.AVG, group))


def check_same_layout(named_tensors, what: str, group=None) -> None:
    """A DistributedError on every rank unless all ranks hold tensors of the same names,
    shapes and dtypes, in the same order (a model built differently on some rank)."""
    pg = resolve(group, what)
    if pg is None:
        return
    layout = [(name, tuple(t.shape), str(t.dtype)) for name, t in named_tensors]
    layouts = [None] * pg.size
    all_gather_object(layouts, layout, group)
    for r, other in enumerate(layouts):
        if other == layouts[0]:
            continue
        diff = next((i for i, (a, b) in enumerate(zip(layouts[0], other)) if a != b),
                    min(len(layouts[0]), len(other)))
        first = layouts[0][diff] if diff < len(layouts[0]) else "nothing"
        theirs = other[diff] if diff < len(other) else "nothing"
        raise DistributedError(
            f"{what}: rank {pg.ranks[r]} has a different model than rank {pg.ranks[0]}: "
            f"tensor {diff} is {theirs} there and {first} on rank {pg.ranks[0]} "
            f"({len(other)} vs {len(layouts[0])} tensors); build the same model on every rank")
