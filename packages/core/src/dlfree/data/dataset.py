"""Datasets: the map-style and iterable protocols, and ways to combine and split datasets."""

from __future__ import annotations

import bisect
import math
import numbers
from collections.abc import Sequence

from ..errors import ShapeError
from ..random import Generator, rng


class Dataset:
    """A map-style dataset: `dataset[i]` is the i-th item and `len(dataset)` their number.

    Subclasses implement `__getitem__` and usually `__len__`; `a + b` concatenates.
    """

    def __getitem__(self, index):
        raise NotImplementedError(
            f"{type(self).__name__} must implement __getitem__(index) to be a map-style dataset")

    def __add__(self, other: Dataset) -> ConcatDataset:
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A stream of items: subclasses implement `__iter__` (for data that is read in order,
    such as a file being parsed or a generator). A DataLoader iterates it once per epoch."""

    def __iter__(self):
        raise NotImplementedError(
            f"{type(self).__name__} must implement __iter__() to be an iterable dataset")

    def __add__(self, other):
        raise TypeError("iterable datasets cannot be concatenated with +; chain their "
                        "iterators in a new IterableDataset instead")


class TensorDataset(Dataset):
    """Rows of tensors (or arrays) that share their first dimension: item i is
    `tuple(t[i] for t in tensors)`."""

    def __init__(self, *tensors):
        if not tensors:
            raise ValueError("TensorDataset needs at least one tensor")
        sizes = [t.shape[0] if len(t.shape) else None for t in tensors]
        if None in sizes or len(set(sizes)) != 1:
            shapes = ", ".join(str(tuple(t.shape)) for t in tensors)
            raise ShapeError(f"TensorDataset: every tensor needs the same first dimension, "
                             f"got shapes {shapes}")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].shape[0]


class Subset(Dataset):
    """The items of `dataset` at `indices`, in that order."""

    def __init__(self, dataset, indices: Sequence[int]):
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, index):
        if isinstance(index, list):  # a batched fetch, passed on as one list (as in PyTorch)
            return self.dataset[[self.indices[i] for i in index]]
        return self.dataset[self.indices[index]]

    def __len__(self) -> int:
        return len(self.indices)


class ConcatDataset(Dataset):
    """Several map-style datasets one after another, indexed as one."""

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ConcatDataset needs at least one dataset")
        for k, d in enumerate(self.datasets):
            if isinstance(d, IterableDataset):
                raise TypeError(f"ConcatDataset: dataset {k} is an IterableDataset; only "
                                "map-style datasets (with __getitem__ and __len__) can be "
                                "concatenated")
        self.cumulative_sizes = []
        total = 0
        for d in self.datasets:
            total += len(d)
            self.cumulative_sizes.append(total)

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, index: int):
        n = len(self)
        if not -n <= index < n:
            raise IndexError(f"ConcatDataset: index {index} is out of range for {n} items")
        if index < 0:
            index += n
        which = bisect.bisect_right(self.cumulative_sizes, index)
        start = self.cumulative_sizes[which - 1] if which else 0
        return self.datasets[which][index - start]


def _split_lengths(lengths: Sequence[float], total: int) -> list[int]:
    """Turn fractions summing to 1 into item counts: floor each, then hand the remainder out
    one by one from the first split on (PyTorch's rule)."""
    counts = []
    for k, fraction in enumerate(lengths):
        if not 0 <= fraction <= 1:
            raise ValueError(f"random_split: fraction {fraction} at position {k} is not "
                             "between 0 and 1")
        counts.append(math.floor(total * fraction))
    for k in range(total - sum(counts)):
        counts[k % len(counts)] += 1
    return counts


def random_split(dataset, lengths: Sequence[float], generator: Generator | None = None
                 ) -> list[Subset]:
    """Split `dataset` into non-overlapping random subsets of the given sizes, or of the
    given fractions when they sum to 1. `generator` (default: the global one) fixes the split."""
    lengths = list(lengths)
    if not lengths:
        raise ValueError("random_split: lengths is empty; give sizes or fractions")
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        lengths = _split_lengths(lengths, len(dataset))
    for k, n in enumerate(lengths):
        if not isinstance(n, numbers.Integral) or n < 0:
            raise ValueError(f"random_split: length {n!r} at position {k} is not a "
                             "non-negative integer (or give fractions that sum to 1)")
    if sum(lengths) != len(dataset):
        raise ValueError(f"random_split: the lengths {lengths} sum to {sum(lengths)}, but the "
                         f"dataset has {len(dataset)} items")
    order = rng(generator).permutation(len(dataset)).tolist()
    splits, start = [], 0
    for n in lengths:
        splits.append(Subset(dataset, order[start:start + n]))
        start += n
    return splits
