"""The DataLoader resume contract: state_dict() in the middle of an epoch, a new loader with
load_state_dict() yields the rest of the uninterrupted run without loading skipped batches."""

from __future__ import annotations

import json

import dlfree as dl
from dlfree.data import DataLoader, Dataset, DistributedSampler, IterableDataset

import numpy as np
import pytest


class Counted(Dataset):
    """Items 0..n-1 that count how often each one is loaded."""

    def __init__(self, n: int = 22):
        self.n, self.loads = n, []

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        self.loads.append(i)
        return np.float32(i)


class CountedStream(IterableDataset):
    def __init__(self, n: int = 22):
        self.n = n

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        return self.n


SETUPS = {
    "in order": lambda data, w: DataLoader(data, batch_size=4, num_workers=w),
    "seeded shuffle": lambda data, w: DataLoader(
        data, batch_size=4, shuffle=True, num_workers=w, generator=dl.Generator().manual_seed(3)),
    "global shuffle, drop_last": lambda data, w: DataLoader(
        data, batch_size=4, shuffle=True, drop_last=True, num_workers=w),
    "distributed": lambda data, w: DataLoader(
        data, batch_size=2, num_workers=w, sampler=DistributedSampler(data, 2, 1, seed=5)),
}


def batches(iterator, count=None) -> list[list[float]]:
    out = []
    for batch in iterator:
        out.append(batch.tolist())
        if count is not None and len(out) == count:
            break
    return out


def through_json(state: dict) -> dict:
    return json.loads(json.dumps(state))


@pytest.mark.parametrize("workers", [0, 2])
@pytest.mark.parametrize("setup", list(SETUPS))
def test_resume_mid_epoch_yields_the_rest_of_the_epoch(setup, workers):
    make = SETUPS[setup]
    dl.manual_seed(0)
    uninterrupted = make(Counted(), workers)
    epochs = [batches(uninterrupted), batches(uninterrupted)]

    dl.manual_seed(0)
    loader = make(Counted(), workers)
    head = batches(loader, 3)
    state, rng_state = through_json(loader.state_dict()), dl.get_rng_state()
    assert state["batches_yielded"] == 3

    dl.manual_seed(12345)  # a new process: the global RNG is elsewhere until restored
    data = Counted()
    resumed = make(data, workers)
    resumed.load_state_dict(state)
    dl.set_rng_state(rng_state)
    rest = batches(resumed)
    assert head + rest == epochs[0]
    assert sorted(data.loads) == sorted(x for batch in rest for x in batch)  # no skipped loads
    assert batches(resumed) == epochs[1]


@pytest.mark.parametrize("workers", [0, 2])
def test_resume_twice_and_at_an_epoch_boundary(workers):
    make = SETUPS["seeded shuffle"]
    reference = make(Counted(), workers)
    epochs = [batches(reference) for _ in range(3)]

    loader = make(Counted(), workers)
    got = batches(loader, 2)
    state = through_json(loader.state_dict())
    loader = make(Counted(), workers)
    loader.load_state_dict(state)
    iterator = iter(loader)
    got += batches(iterator, 3)
    assert through_json(loader.state_dict())["batches_yielded"] == 5
    state = through_json(loader.state_dict())
    del iterator
    loader = make(Counted(), workers)
    loader.load_state_dict(state)
    got += batches(loader)
    assert got == epochs[0]

    boundary = through_json(loader.state_dict())  # between epochs: the next one's start
    assert boundary["batches_yielded"] == 0
    loader = make(Counted(), workers)
    loader.load_state_dict(boundary)
    assert batches(loader) == epochs[1] and batches(loader) == epochs[2]


def test_resume_after_the_last_batch_yields_an_empty_rest_then_the_next_epoch():
    make = SETUPS["global shuffle, drop_last"]
    dl.manual_seed(1)
    reference = make(Counted(), 0)
    epochs = [batches(reference), batches(reference)]
    dl.manual_seed(1)
    loader = make(Counted(), 0)
    iterator = iter(loader)
    assert batches(iterator, len(loader)) == epochs[0]
    state, rng_state = through_json(loader.state_dict()), dl.get_rng_state()
    resumed = make(Counted(), 0)
    resumed.load_state_dict(state)
    dl.set_rng_state(rng_state)
    assert batches(resumed) == [] and batches(resumed) == epochs[1]


@pytest.mark.parametrize("workers", [0, 2])
def test_an_iterable_dataset_resumes_by_reading_past_the_yielded_batches(workers):
    full = batches(DataLoader(CountedStream(), batch_size=5, num_workers=workers))
    loader = DataLoader(CountedStream(), batch_size=5, num_workers=workers)
    head = batches(loader, 2)
    resumed = DataLoader(CountedStream(), batch_size=5, num_workers=workers)
    resumed.load_state_dict(through_json(loader.state_dict()))
    assert head + batches(resumed) == full


def test_loading_a_state_that_does_not_fit_is_refused():
    shuffled = SETUPS["seeded shuffle"](Counted(), 0)
    in_order = SETUPS["in order"](Counted(), 0)
    with pytest.raises(ValueError, match="keys 'sampler', 'batches_yielded'"):
        shuffled.load_state_dict({"batches_yielded": 1})
    with pytest.raises(ValueError, match="batches_yielded must be a non-negative integer"):
        shuffled.load_state_dict({"sampler": None, "batches_yielded": -1})
    with pytest.raises(ValueError, match="has 9 batches yielded, but this loader has only 6"):
        in_order.load_state_dict({"sampler": None, "batches_yielded": 9})
    with pytest.raises(ValueError, match="differ in whether they keep a random state"):
        shuffled.load_state_dict(in_order.state_dict())
    with pytest.raises(ValueError, match="saved by a sampler without a generator"):
        shuffled.load_state_dict(SETUPS["global shuffle, drop_last"](Counted(), 0).state_dict())
