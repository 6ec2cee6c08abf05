"""Datasets against torch.utils.data on the same inputs: TensorDataset, Subset, ConcatDataset,
random_split's lengths; and the errors for bad input."""

from __future__ import annotations

import dlfree as dl
from dlfree.data import (
    ConcatDataset,
    Dataset,
    IterableDataset,
    Subset,
    TensorDataset,
    random_split,
)

import numpy as np
import pytest
import torch
import torch.utils.data as tud


class Squares(Dataset):
    def __init__(self, n: int, offset: int = 0):
        self.n, self.offset = n, offset

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if not -self.n <= i < self.n:
            raise IndexError(i)
        return (i % self.n + self.offset) ** 2


def test_tensor_dataset_rows_match_torch(rng):
    x, y = rng.normal(size=(5, 3)).astype(np.float32), rng.integers(0, 9, size=5)
    ours, theirs = TensorDataset(dl.tensor(x), dl.tensor(y)), tud.TensorDataset(
        torch.tensor(x), torch.tensor(y))
    assert len(ours) == len(theirs) == 5
    for i in range(-5, 5):
        (a, b), (ta, tb) = ours[i], theirs[i]
        np.testing.assert_array_equal(a.numpy(), ta.numpy())
        assert b.item() == tb.item()


def test_tensor_dataset_needs_one_first_dimension():
    with pytest.raises(dl.ShapeError, match=r"same first dimension.*\(4, 2\), \(3,\)"):
        TensorDataset(dl.zeros(4, 2), dl.zeros(3))
    with pytest.raises(ValueError, match="at least one tensor"):
        TensorDataset()


def test_subset_indexes_like_torch():
    indices = [7, 0, 3, 3, 9]
    ours, theirs = Subset(Squares(10), indices), tud.Subset(Squares(10), indices)
    assert len(ours) == len(theirs)
    assert [ours[i] for i in range(-5, 5)] == [theirs[i] for i in range(-5, 5)]
    squares = np.arange(10) ** 2  # supports list indexing, which both pass on in one call
    np.testing.assert_array_equal(Subset(squares, indices)[[0, 2, 4]],
                                  tud.Subset(squares, indices)[[0, 2, 4]])


@pytest.mark.parametrize("sizes", [(3,), (2, 5, 1), (4, 1, 3, 2)])
def test_concat_dataset_indexes_like_torch(sizes):
    parts = [Squares(n, offset=100 * k) for k, n in enumerate(sizes)]
    ours, theirs = ConcatDataset(parts), tud.ConcatDataset(parts)
    assert len(ours) == len(theirs) and ours.cumulative_sizes == theirs.cumulative_sizes
    n = len(ours)
    assert [ours[i] for i in range(-n, n)] == [theirs[i] for i in range(-n, n)]
    with pytest.raises(IndexError, match=f"index {n} is out of range for {n} items"):
        ours[n]
    with pytest.raises(IndexError, match="out of range"):
        ours[-n - 1]


def test_plus_concatenates_and_iterable_datasets_are_refused():
    both = Squares(2) + Squares(3, offset=10)
    assert isinstance(both, ConcatDataset) and [both[i] for i in range(5)] == [0, 1, 100, 121, 144]

    class Stream(IterableDataset):
        def __iter__(self):
            return iter(range(3))

    with pytest.raises(TypeError, match="dataset 1 is an IterableDataset"):
        ConcatDataset([Squares(2), Stream()])
    with pytest.raises(TypeError, match="cannot be concatenated"):
        Stream() + Stream()
    with pytest.raises(ValueError, match="at least one dataset"):
        ConcatDataset([])


def test_base_classes_name_what_a_subclass_must_implement():
    class Empty(Dataset):
        pass

    class EmptyStream(IterableDataset):
        pass

    with pytest.raises(NotImplementedError, match=r"Empty must implement __getitem__"):
        Empty()[0]
    with pytest.raises(NotImplementedError, match=r"EmptyStream must implement __iter__"):
        iter(EmptyStream())


@pytest.mark.parametrize("n, lengths", [
    (10, [3, 7]), (10, [10, 0]), (11, [0.25, 0.25, 0.5]), (30, [0.3, 0.3, 0.4]),
    (7, [0.5, 0.5]), (13, [0.1, 0.2, 0.3, 0.4]),
])
def test_random_split_lengths_match_torch(n, lengths):
    ours = random_split(Squares(n), lengths, generator=dl.Generator().manual_seed(0))
    theirs = tud.random_split(Squares(n), lengths, generator=torch.Generator().manual_seed(0))
    assert [len(s) for s in ours] == [len(s) for s in theirs]
    covered = sorted(i for s in ours for i in s.indices)
    assert covered == list(range(n))


def test_random_split_is_reproducible_with_a_seed_and_from_the_global_rng():
    def split(**kw):
        return [s.indices for s in random_split(Squares(20), [5, 15], **kw)]

    seeded = split(generator=dl.Generator().manual_seed(4))
    assert seeded == split(generator=dl.Generator().manual_seed(4))
    assert seeded != split(generator=dl.Generator().manual_seed(5))
    dl.manual_seed(8)
    first = split()
    dl.manual_seed(8)
    assert split() == first


@pytest.mark.parametrize("lengths, message", [
    ([3, 3], "sum to 6, but the dataset has 10 items"),
    ([0.5, 0.6], r"length 0.5 at position 0 .*or give fractions that sum to 1"),
    ([1.5, -0.5], r"fraction 1.5 at position 0 is not between 0 and 1"),
    ([], "lengths is empty"),
    ([2.5, 7.5], "length 2.5 at position 0 is not a non-negative integer"),
])
def test_random_split_rejects_bad_lengths(lengths, message):
    with pytest.raises(ValueError, match=message):
        random_split(Squares(10), lengths)
