"""What the Trainer does with a batch: place it on a device, split it into the model's inputs
and the target, and gather predictions."""

from __future__ import annotations

import collections.abc

from dlfree.ops import cat
from dlfree.tensor import Tensor

# Keys of a dict batch that hold the target rather than a model input, in order of preference.
TARGET_KEYS = ("target", "targets", "label", "labels", "y")


def to_device(batch, device):
    """`batch` with every tensor inside it (tuples, lists, dicts) moved to `device`."""
    if isinstance(batch, Tensor):
        return batch.to(device)
    if isinstance(batch, collections.abc.Mapping):
        return type(batch)((k, to_device(v, device)) for k, v in batch.items())
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return type(batch)(*(to_device(v, device) for v in batch))
    if isinstance(batch, tuple | list):
        return type(batch)(to_device(v, device) for v in batch)
    return batch


def split(batch) -> tuple[tuple, dict, object]:
    """(positional inputs, keyword inputs, target) of a batch.

    A tuple or list of two or more items is (*inputs, target); of one item, inputs only.
    A dict passes its items as keyword inputs, except the first of TARGET_KEYS present,
    which is the target. Anything else (a tensor) is the single input, without a target.
    """
    if isinstance(batch, collections.abc.Mapping):
        key = next((k for k in TARGET_KEYS if k in batch), None)
        inputs = {k: v for k, v in batch.items() if k != key}
        return (), inputs, None if key is None else batch[key]
    if isinstance(batch, tuple | list) and not hasattr(batch, "_fields"):
        if len(batch) >= 2:
            return tuple(batch[:-1]), {}, batch[-1]
        return tuple(batch), {}, None
    return (batch,), {}, None


def whole(batch) -> tuple[tuple, dict]:
    """(positional, keyword) arguments passing the whole batch, target included, to a model
    that computes its own loss."""
    if isinstance(batch, collections.abc.Mapping):
        return (), dict(batch)
    if isinstance(batch, tuple | list) and not hasattr(batch, "_fields"):
        return tuple(batch), {}
    return (batch,), {}


def size(batch, target) -> int:
    """The number of examples in a batch (its target's, or its first tensor's, first dim)."""
    for candidate in (target, *_tensors(batch)):
        if isinstance(candidate, Tensor) and candidate.ndim:
            return int(candidate.shape[0])
    return 1


def _tensors(batch):
    if isinstance(batch, Tensor):
        yield batch
    elif isinstance(batch, collections.abc.Mapping):
        for value in batch.values():
            yield from _tensors(value)
    elif isinstance(batch, tuple | list):
        for value in batch:
            yield from _tensors(value)


def loss_of(outputs):
    """The loss a model returned with its outputs (`outputs["loss"]` or `outputs.loss`)."""
    if isinstance(outputs, collections.abc.Mapping):
        return outputs.get("loss")
    return getattr(outputs, "loss", None)


def predictions(outputs):
    """What metrics compare with the target: the outputs themselves, or their `logits` when
    the model returns a structured output (HuggingFace style: loss, logits, ...)."""
    if isinstance(outputs, Tensor):
        return outputs
    if isinstance(outputs, dict):
        return outputs.get("logits", outputs)
    return getattr(outputs, "logits", outputs)


def gather(outputs: list):
    """Per-batch predictions as one tensor concatenated along dim 0 when they are tensors
    that fit together, else the list as it is."""
    if outputs and all(isinstance(o, Tensor) and o.ndim for o in outputs) and \
            len({(tuple(o.shape[1:]), o.device, o.dtype) for o in outputs}) == 1:
        return cat(outputs, 0)
    return outputs

