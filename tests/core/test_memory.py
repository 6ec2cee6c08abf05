"""Memory: training stays flat over many steps, and a graph dies with its last reference.

The graph is a tree of plain references, so dropping the loss frees every node and every
saved activation at once; a reference cycle would leave them to the cyclic garbage
collector, which runs late, and large arrays would pile up in between.
"""

from __future__ import annotations

import gc
import tracemalloc
import weakref
from itertools import pairwise

import dlfree as dl

import numpy as np
import pytest

SIZES = (64, 32, 32, 10)
BATCH = 32
LEARNING_RATE = 0.1


def make_training_step():
    """One SGD step of a small ReLU MLP with softmax cross-entropy, on fixed random data."""
    rng = np.random.default_rng(0)
    x = dl.tensor(rng.standard_normal((BATCH, SIZES[0]), dtype=np.float32))
    y = dl.tensor(rng.integers(0, SIZES[-1], BATCH))
    rows = dl.arange(BATCH)
    params = []
    for fan_in, fan_out in pairwise(SIZES):
        # float32 throughout: matmul refuses mixed dtypes, as torch does
        w = (rng.standard_normal((fan_in, fan_out)) / np.sqrt(fan_in)).astype(np.float32)
        params += [dl.Parameter(w), dl.Parameter(np.zeros(fan_out, dtype=np.float32))]
    w1, b1, w2, b2, w3, b3 = params

    def step():
        h = dl.relu(x @ w1 + b1)
        h = dl.relu(h @ w2 + b2)
        loss = -dl.log_softmax(h @ w3 + b3, dim=1)[rows, y].mean()
        loss.backward()
        with dl.no_grad():
            for p in params:
                p.sub_(p.grad, alpha=LEARNING_RATE)
                p.grad = None

    return step


def live_tensors() -> int:
    gc.collect()
    # issubclass on the type: isinstance would touch foreign proxies (torch's deprecated
    # module attributes warn when probed)
    return sum(1 for obj in gc.get_objects() if issubclass(type(obj), dl.Tensor))


def test_a_thousand_training_steps_keep_memory_flat():
    step = make_training_step()
    tracemalloc.start()
    try:
        for _ in range(100):
            step()
        gc.collect()
        memory_100 = tracemalloc.get_traced_memory()[0]
        tensors_100 = live_tensors()
        for _ in range(900):
            step()
        gc.collect()
        memory_1000 = tracemalloc.get_traced_memory()[0]
        tensors_1000 = live_tensors()
    finally:
        tracemalloc.stop()
    assert memory_1000 - memory_100 < 64 * 1024
    assert tensors_1000 == tensors_100


@pytest.fixture
def gc_disabled():
    """Only reference counting frees objects while the test runs."""
    was_enabled = gc.isenabled()
    gc.disable()
    yield
    if was_enabled:
        gc.enable()


def test_dropping_the_loss_frees_the_graph_without_the_garbage_collector(gc_disabled):
    x = dl.randn(256, 256, requires_grad=True)
    hidden = dl.relu(x @ x)
    activation = weakref.ref(hidden.array)  # kept by the graph: ReLU's backward reads it
    loss = (hidden * 2.0).sum()
    node = weakref.ref(loss.grad_fn)
    del hidden
    assert activation() is not None and node() is not None
    del loss
    assert node() is None, "the loss's grad_fn outlived the loss: a reference cycle"
    assert activation() is None, "a saved activation outlived its graph: a reference cycle"
