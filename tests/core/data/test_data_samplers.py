"""Samplers: the deterministic ones against torch.utils.data; the random ones by their
properties (permutations, reproducibility, frequencies within binomial tolerance)."""

from __future__ import annotations

import json

import dlfree as dl
from dlfree.data import (
    BatchSampler,
    DistributedSampler,
    RandomSampler,
    SequentialSampler,
    WeightedRandomSampler,
)

import numpy as np
import pytest
import torch
import torch.utils.data as tud


@pytest.mark.parametrize("n", [0, 1, 7])
def test_sequential_sampler_matches_torch(n):
    data = list(range(n))
    assert list(SequentialSampler(data)) == list(tud.SequentialSampler(data))
    assert len(SequentialSampler(data)) == n


@pytest.mark.parametrize("n, batch_size, drop_last", [
    (10, 3, False), (10, 3, True), (9, 3, True), (2, 5, False), (2, 5, True), (0, 4, False),
])
def test_batch_sampler_matches_torch(n, batch_size, drop_last):
    ours = BatchSampler(range(n), batch_size, drop_last)
    theirs = tud.BatchSampler(range(n), batch_size, drop_last)
    assert list(ours) == list(theirs) and len(ours) == len(theirs)


@pytest.mark.parametrize("kwargs, message", [
    ({"batch_size": 0, "drop_last": False}, "batch_size must be a positive integer"),
    ({"batch_size": True, "drop_last": False}, "batch_size must be a positive integer"),
    ({"batch_size": 2, "drop_last": 1}, "drop_last must be True or False"),
])
def test_batch_sampler_validates(kwargs, message):
    with pytest.raises(ValueError, match=message):
        BatchSampler(range(4), **kwargs)


DISTRIBUTED_CASES = [(10, 3, False), (10, 3, True), (9, 3, True), (2, 4, False), (11, 4, True),
                     (12, 4, False), (1, 3, False)]


@pytest.mark.parametrize("n, replicas, drop_last", DISTRIBUTED_CASES)
def test_distributed_sampler_partitions_like_torch_in_order(n, replicas, drop_last):
    for rank in range(replicas):
        ours = DistributedSampler(range(n), replicas, rank, shuffle=False, drop_last=drop_last)
        theirs = tud.DistributedSampler(range(n), replicas, rank, shuffle=False,
                                        drop_last=drop_last)
        assert list(ours) == list(theirs) and len(ours) == len(theirs)


@pytest.mark.parametrize("n, replicas, drop_last", DISTRIBUTED_CASES)
def test_distributed_sampler_partitions_like_torch_given_torchs_permutation(
        n, replicas, drop_last, monkeypatch):
    seed, epoch = 17, 3
    generator = torch.Generator().manual_seed(seed + epoch)
    permutation = torch.randperm(n, generator=generator).tolist()
    monkeypatch.setattr(DistributedSampler, "_permutation", lambda self: list(permutation))
    for rank in range(replicas):
        ours = DistributedSampler(range(n), replicas, rank, seed=seed, drop_last=drop_last)
        theirs = tud.DistributedSampler(range(n), replicas, rank, seed=seed, drop_last=drop_last)
        theirs.set_epoch(epoch)
        assert list(ours) == list(theirs)


def test_distributed_sampler_epochs_change_the_order_the_same_way_on_every_replica():
    def shares(epoch, seed=0):
        samplers = [DistributedSampler(range(12), 3, r, seed=seed) for r in range(3)]
        for s in samplers:
            s.set_epoch(epoch)
        return [list(s) for s in samplers]

    first = shares(0)
    assert sorted(sum(first, [])) == list(range(12))  # disjoint shares covering the data
    assert first == shares(0)
    assert first != shares(1) and first != shares(0, seed=1)
    assert sorted(sum(shares(1), [])) == list(range(12))


def test_distributed_sampler_reads_the_launchers_environment(monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "4")
    monkeypatch.setenv("RANK", "2")
    sampler = DistributedSampler(range(8), shuffle=False)
    assert (sampler.num_replicas, sampler.rank, list(sampler)) == (4, 2, [2, 6])
    monkeypatch.delenv("RANK")
    with pytest.raises(ValueError, match=r"pass rank= \(or call dlfree.distributed"
                                         r".init_process_group\(\) first, or set RANK"):
        DistributedSampler(range(8))
    with pytest.raises(ValueError, match=r"rank must be an integer in \[0, 1\], got 2"):
        DistributedSampler(range(8), num_replicas=2, rank=2)


def test_random_sampler_yields_a_reproducible_permutation():
    def order(seed):
        return list(RandomSampler(range(50), generator=dl.Generator().manual_seed(seed)))

    assert sorted(order(1)) == list(range(50))
    assert order(1) == order(1) and order(1) != order(2)


def test_random_sampler_without_generator_follows_the_global_seed():
    sampler = RandomSampler(range(30))
    dl.manual_seed(5)
    first, second = list(sampler), list(sampler)
    assert first != second  # each pass draws a new seed
    dl.manual_seed(5)
    assert [list(sampler), list(sampler)] == [first, second]


def test_random_sampler_num_samples_and_replacement():
    generator = dl.Generator().manual_seed(0)
    repeated = list(RandomSampler(range(5), num_samples=12, generator=generator))
    assert sorted(repeated[:5]) == sorted(repeated[5:10]) == list(range(5))
    assert len(set(repeated[10:])) == 2 and len(repeated) == 12
    drawn = list(RandomSampler(range(5), replacement=True, num_samples=200, generator=generator))
    assert len(drawn) == 200 and set(drawn) == set(range(5))
    assert len(RandomSampler(range(5), num_samples=12)) == 12
    with pytest.raises(ValueError, match="num_samples must be a positive integer, got 0"):
        RandomSampler(range(5), num_samples=0)
    with pytest.raises(ValueError, match="replacement must be True or False"):
        RandomSampler(range(5), replacement="yes")


def test_weighted_sampler_frequencies_are_within_binomial_tolerance():
    weights = np.array([1.0, 2.0, 3.0, 0.0, 4.0])
    draws = 20000
    sampler = WeightedRandomSampler(weights, draws, generator=dl.Generator().manual_seed(3))
    counts = np.bincount(list(sampler), minlength=5)
    p = weights / weights.sum()
    tolerance = 5 * np.sqrt(draws * p * (1 - p))  # five standard deviations
    assert np.all(np.abs(counts - draws * p) <= tolerance) and counts[3] == 0


def test_weighted_sampler_without_replacement_draws_distinct_nonzero_indices():
    weights = dl.tensor([0.5, 0.0, 2.0, 1.0, 3.0])
    sampler = WeightedRandomSampler(weights, 4, replacement=False,
                                    generator=dl.Generator().manual_seed(1))
    assert sorted(sampler) == [0, 2, 3, 4]
    with pytest.raises(ValueError, match="cannot draw 5 distinct indices .* from 4 non-zero"):
        WeightedRandomSampler(weights, 5, replacement=False)


@pytest.mark.parametrize("weights, message", [
    ([1.0, -1.0], "finite, non-negative"), ([0.0, 0.0], "not all zero"),
    ([1.0, float("nan")], "finite"), ([[1.0, 2.0]], r"1-D sequence, got shape \(1, 2\)"),
])
def test_weighted_sampler_validates_weights(weights, message):
    with pytest.raises(ValueError, match=message):
        WeightedRandomSampler(weights, 3)


@pytest.mark.parametrize("make", [
    lambda g: RandomSampler(range(20), generator=g),
    lambda g: RandomSampler(range(20)),
    lambda g: WeightedRandomSampler(np.arange(1.0, 21.0), 15, generator=g),
])
def test_random_samplers_replay_a_pass_from_their_state(make):
    dl.manual_seed(11)
    sampler = make(dl.Generator().manual_seed(2))
    list(sampler)
    iterator = iter(sampler)
    state = json.loads(json.dumps(sampler.state_dict()))  # the running pass's state
    this_pass = list(iterator)
    next_pass = list(sampler)
    dl.manual_seed(99)
    fresh = make(dl.Generator().manual_seed(7))
    fresh.load_state_dict(state)
    assert list(fresh) == this_pass
    if fresh.generator is not None:  # the generator continues as in the original run
        assert list(fresh) == next_pass


def test_sampler_state_must_fit_the_sampler():
    seeded = RandomSampler(range(4), generator=dl.Generator())
    with pytest.raises(ValueError, match="saved by a sampler without a generator"):
        seeded.load_state_dict({"seed": 3})
    with pytest.raises(ValueError, match="expected a dict with 'generator' or 'seed'"):
        seeded.load_state_dict({"epoch": 1})


def test_batch_sampler_exposes_its_samplers_state():
    inner = RandomSampler(range(10), generator=dl.Generator().manual_seed(0))
    batches = BatchSampler(inner, 4, False)
    assert batches.state_dict() == inner.state_dict()
    assert BatchSampler(range(3), 2, False).state_dict() is None
    with pytest.raises(ValueError, match="wrapped range keeps no state"):
        BatchSampler(range(3), 2, False).load_state_dict({"seed": 1})
    assert len(batches) == 3
