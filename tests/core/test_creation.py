"""Factories, dtype inference, the default dtype and seeded random streams."""

from __future__ import annotations

import dlfree as dl

import numpy as np
import pytest
import torch


def _same(ours, ref):
    assert tuple(ours.shape) == tuple(ref.shape)
    assert str(ours.dtype).split(".")[-1] == str(ref.dtype).split(".")[-1]
    np.testing.assert_allclose(ours.numpy(), ref.numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("call", [
    lambda m: m.tensor([1.0, 2.5]),
    lambda m: m.tensor([[1, 2], [3, 4]]),
    lambda m: m.tensor([True, False]),
    lambda m: m.tensor(3.5),
    lambda m: m.tensor(np.arange(3, dtype=np.float64)),
    lambda m: m.tensor(np.arange(3, dtype=np.int16)),
    lambda m: m.tensor([1, 2], dtype=m.float64),
    lambda m: m.zeros(2, 3),
    lambda m: m.ones((2, 3), dtype=m.int32),
    lambda m: m.full((2,), 7),
    lambda m: m.full((2,), 7.5),
    lambda m: m.full((2,), True),
    lambda m: m.arange(5),
    lambda m: m.arange(1, 4),
    lambda m: m.arange(0, 1, 0.1),
    lambda m: m.arange(10, 0, -3),
    lambda m: m.arange(0.5, 3),
    lambda m: m.linspace(-1, 1, 7),
    lambda m: m.eye(3),
    lambda m: m.eye(2, 4),
    lambda m: m.zeros_like(m.ones(2, dtype=m.int64)),
    lambda m: m.ones_like(m.zeros(3)),
    lambda m: m.full_like(m.zeros(2, 2), 4),
    lambda m: m.empty(0, 3),
], ids=lambda f: "")
def test_factories_match_torch(call):
    ours, ref = call(dl), call(torch)
    _same(ours, ref)


def test_default_dtype_switch():
    dl.set_default_dtype(dl.float64)
    try:
        assert dl.tensor([1.5]).dtype == dl.float64
        assert dl.zeros(1).dtype == dl.float64
        assert (dl.arange(3) * 0.5).dtype == dl.float64
    finally:
        dl.set_default_dtype(dl.float32)
    assert dl.get_default_dtype() == dl.float32
    assert dl.tensor([1.5]).dtype == dl.float32


def test_from_numpy_and_as_tensor_share_memory():
    a = np.zeros(3, dtype=np.float32)
    t = dl.from_numpy(a)
    u = dl.as_tensor(a)
    a[0] = 5
    assert t[0].item() == 5 and u[0].item() == 5
    c = dl.tensor(a)
    a[1] = 7
    assert c[1].item() == 0  # tensor() copies


def test_ragged_and_object_data_are_refused():
    with pytest.raises(dl.ShapeError, match="ragged"):
        dl.tensor([[1, 2], [3]])
    with pytest.raises(dl.DTypeError, match="cannot build a tensor"):
        dl.tensor(["a", "b"])
    with pytest.raises(dl.ShapeError, match="non-negative integers"):
        dl.zeros(-1)


def test_manual_seed_reproduces_streams():
    dl.manual_seed(42)
    a = [dl.rand(3), dl.randn(2, 2), dl.randint(0, 10, (5,)), dl.randperm(6), dl.normal(0, 1, (3,))]
    dl.manual_seed(42)
    b = [dl.rand(3), dl.randn(2, 2), dl.randint(0, 10, (5,)), dl.randperm(6), dl.normal(0, 1, (3,))]
    for x, y in zip(a, b):
        assert x.tolist() == y.tolist()


def test_generators_are_independent_and_restorable():
    g1 = dl.Generator().manual_seed(1)
    g2 = dl.Generator().manual_seed(1)
    x = dl.randn(4, generator=g1)
    dl.randn(100)  # the default stream does not disturb g2
    assert dl.randn(4, generator=g2).tolist() == x.tolist()
    state = g1.get_state()
    first = dl.rand(5, generator=g1).tolist()
    g1.set_state(state)
    assert dl.rand(5, generator=g1).tolist() == first
    import json

    json.dumps(state)  # checkpoints store it as plain data


def test_random_distributions():
    dl.manual_seed(0)
    r = dl.rand(100000, dtype=dl.float64).numpy()
    assert r.min() >= 0 and r.max() < 1 and abs(r.mean() - 0.5) < 0.01
    n = dl.randn(100000, dtype=dl.float64).numpy()
    assert abs(n.mean()) < 0.01 and abs(n.std() - 1) < 0.01
    i = dl.randint(3, 7, (10000,))
    assert i.dtype == dl.int64 and set(i.tolist()) == {3, 4, 5, 6}
    p = dl.randperm(50)
    assert sorted(p.tolist()) == list(range(50))
    m = dl.normal(dl.tensor([0.0, 100.0]), 1.0)
    assert m.shape == (2,) and abs(m[1].item() - 100) < 6
    like = dl.randn_like(dl.zeros(2, 3, dtype=dl.float64))
    assert like.shape == (2, 3) and like.dtype == dl.float64


def test_requires_grad_on_factories():
    t = dl.zeros(2, requires_grad=True)
    assert t.requires_grad and t.is_leaf
    with pytest.raises(dl.DTypeError):
        dl.arange(3, requires_grad=True)


def test_the_like_factories_take_shape_and_dtype_from_their_tensor():
    dl.manual_seed(1)
    base = dl.zeros(50000, dtype=dl.float64)
    r = dl.rand_like(base).numpy()
    assert r.dtype == np.float64 and r.min() >= 0 and r.max() < 1 and abs(r.mean() - 0.5) < 0.01
    i = dl.randint_like(base, 2, 5)
    assert i.dtype == dl.float64 and set(np.unique(i.numpy())) == {2.0, 3.0, 4.0}
    assert set(np.unique(dl.randint_like(dl.zeros(1000, dtype=dl.int32), 3).numpy())) == \
        {0, 1, 2}
    for empty in (dl.empty_like(dl.ones(2, 3, dtype=dl.int16)), dl.ones(1).new_empty(2, 3,
                                                                             dtype=dl.int16)):
        assert empty.shape == (2, 3) and empty.dtype == dl.int16  # values are uninitialised


def test_the_default_stream_s_state_round_trips_and_its_seed_is_kept():
    dl.manual_seed(7)
    assert dl.initial_seed() == 7
    state = dl.get_rng_state()
    first = dl.randn(4).tolist()
    dl.set_rng_state(state)
    assert dl.randn(4).tolist() == first
    drawn = dl.seed()  # a fresh, non-deterministic seed, reported back
    assert dl.initial_seed() == drawn
    dl.manual_seed(drawn)
    again = dl.rand(3).tolist()
    dl.manual_seed(drawn)
    assert dl.rand(3).tolist() == again
