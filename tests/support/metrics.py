"""The metric harness: a result compared with its oracle in structure, shape and value,
and `check_streaming`, which checks a metric batch by batch, accumulated, merged, restored
from its state_dict and reset."""

from __future__ import annotations

import dlfree as dl

import numpy as np

TOL = 1e-6


def to_numpy(value):
    """A result (tensor, or nested tuples/lists/dicts of them) as NumPy arrays."""
    if isinstance(value, dl.Tensor):
        return value.numpy()
    if isinstance(value, list | tuple):
        return type(value)(to_numpy(v) for v in value)
    if isinstance(value, dict):
        return {k: to_numpy(v) for k, v in value.items()}
    return np.asarray(value)


def assert_close(actual, expected, tol=TOL):
    """`actual` (a metric result) equals `expected` in structure, shape and value (NaN where
    NaN), to `tol` absolute and relative."""
    if isinstance(expected, dict):
        assert set(actual) == set(expected)
        for key in expected:
            assert_close(actual[key], expected[key], tol)
        return
    if isinstance(expected, list | tuple) and not isinstance(actual, dl.Tensor):
        assert isinstance(actual, list | tuple) and len(actual) == len(expected)
        for a, e in zip(actual, expected):
            assert_close(a, e, tol)
        return
    assert isinstance(actual, dl.Tensor), type(actual)
    expected = np.asarray(expected, dtype=np.float64)
    assert tuple(actual.shape) == expected.shape
    np.testing.assert_allclose(actual.numpy().astype(np.float64), expected, rtol=tol, atol=tol,
                               equal_nan=True)


def _concat(batches):
    return [np.concatenate([b[i] for b in batches]) for i in range(len(batches[0]))]


def check_streaming(make, batches, oracle, tol=TOL):
    """`make()` builds a fresh metric; `batches` are tuples of NumPy arguments to `update`
    (preds, target); `oracle` computes the expected value from the concatenated arguments.
    Checks the value of each batch (forward), the accumulated value, the merge of two
    metrics fed different halves, a state_dict round trip, and reset."""
    metric = make()
    for batch in batches:
        assert_close(metric(*batch), oracle(*batch), tol)
    whole = oracle(*_concat(batches))
    assert_close(metric.compute(), whole, tol)
    half = max(1, len(batches) // 2)
    first, second = make(), make()
    for batch in batches[:half]:
        first.update(*batch)
    for batch in batches[half:]:
        second.update(*batch)
    assert_close(first.merge(second).compute(), whole, tol)
    restored = make()
    restored.load_state_dict(metric.state_dict())
    assert_close(restored.compute(), whole, tol)
    metric.reset()
    metric.update(*batches[-1])
    assert_close(metric.compute(), oracle(*batches[-1]), tol)
