"""History and the trend queries of its Series, on written-out sequences."""

from __future__ import annotations

import math

import dlfree as dl
from dlfree.train import History, Series

import numpy as np
import pytest
import scipy.stats


def series(values, name="val_loss"):
    history = History()
    for step, value in enumerate(values):
        history.log(name, value, step)
    return history[name]


@pytest.mark.parametrize("values, n, mode, want", [
    ([5, 4, 3, 2], 3, "min", True),
    ([5, 4, 3, 3], 3, "min", False),      # equal is not better
    ([9, 5, 4, 3, 2], 3, "min", True),    # only the last n changes count
    ([1, 5, 4, 3], 3, "min", False),      # needs all n changes, the first went up
    ([4, 3], 2, "min", False),            # needs n + 1 values
    ([1, 2, 3], 2, "max", True),
    ([1, 2, 3], 2, "min", False),
])
def test_improving_means_each_of_the_last_n_values_beats_its_predecessor(values, n, mode,
                                                                         want):
    assert series(values).improving(n, mode=mode) is want


@pytest.mark.parametrize("values, n, tol, mode, want", [
    ([3.0, 2.0, 2.5, 2.2], 2, 0.0, "min", True),     # best before the last 2 is 2.0
    ([3.0, 2.0, 2.5, 1.9], 2, 0.0, "min", False),    # 1.9 beats 2.0
    ([3.0, 2.0, 2.5, 1.9], 2, 0.2, "min", True),     # ... but not by more than 0.2
    ([3.0, 2.0, 2.5, 1.7], 2, 0.2, "min", False),
    ([2.0, 2.5], 2, 0.0, "min", False),              # needs n + 1 values
    ([0.5, 0.9, 0.8, 0.85], 3, 0.0, "max", False),   # 0.9 beat 0.5
    ([0.5, 0.9, 0.8, 0.85], 2, 0.0, "max", True),
])
def test_stalled_means_no_recent_value_beat_the_earlier_best_by_more_than_tol(values, n, tol,
                                                                            mode, want):
    assert series(values).stalled(n, tol, mode=mode) is want


@pytest.mark.parametrize("values, n, tol, want", [
    ([9.0, 1.0, 1.25, 0.75], 3, 0.5, True),     # spread 0.5
    ([9.0, 1.0, 1.25, 0.75], 3, 0.25, False),
    ([9.0, 1.0, 1.25, 0.75], 4, 1.0, False),
    ([1.0, 1.0], 3, 1.0, False),                 # needs n values
])
def test_converged_means_the_last_n_values_lie_within_tol(values, n, tol, want):
    assert series(values).converged(n, tol) is want


def test_slope_is_the_least_squares_slope_of_the_last_n_values():
    values = [5.0, 4.1, 3.0, 2.2, 1.1, 0.9]
    for n in (2, 4, 6):
        want = scipy.stats.linregress(np.arange(n), values[-n:]).slope
        assert series(values).slope(n) == pytest.approx(want, rel=1e-12)
    assert series([1.0, 3.0, 5.0]).slope(3) == pytest.approx(2.0, rel=1e-12)
    assert math.isnan(series([1.0]).slope(2))


def test_best_last_and_logging():
    history = History()
    history.log("loss", dl.tensor(2.5), 10)
    history.log("loss", 1.5, 20)
    history.log("acc", 0.75, 20)
    s = history["loss"]
    assert s.values == [2.5, 1.5] and s.steps == [10, 20] and s.last == 1.5
    assert s.best("min") == 1.5 and s.best("max") == 2.5 and len(s) == 2
    assert history.names() == ["loss", "acc"] and "acc" in history and "x" not in history
    copy = History()
    copy.load_state_dict(history.state_dict())
    assert copy.state_dict() == history.state_dict()


def test_bad_queries_and_values_are_explained():
    s = series([1.0, 2.0])
    with pytest.raises(ValueError, match="mode must be 'min' .* got 'down'"):
        s.best("down")
    with pytest.raises(ValueError, match=r"improving: n must be an integer >= 1, got 0"):
        s.improving(0)
    with pytest.raises(ValueError, match=r"slope: n must be an integer >= 2, got 1"):
        s.slope(1)
    with pytest.raises(ValueError, match=r"stalled: tol must be a number >= 0, got -1"):
        s.stalled(1, -1)
    with pytest.raises(ValueError, match="nothing has been logged under 'empty'"):
        _ = Series("empty").last
    history = History()
    history.log("val_loss", 1.0, 0)
    with pytest.raises(KeyError, match="history has no series 'nope'; logged: val_loss"):
        _ = history["nope"]
    with pytest.raises(TypeError, match="value must be a number or a one-element tensor"):
        history.log("x", "high", 0)
