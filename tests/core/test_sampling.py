"""multinomial, bernoulli and the in-place random fills: the distributions they draw (checked
by their moments and frequencies on many draws, bounds set at about 5 standard errors), that
a seeded `dl.Generator` repeats them, and their errors."""

from __future__ import annotations

import math

import dlfree as dl

import numpy as np
import pytest

N = 20000


def _gen(seed=0):
    return dl.Generator().manual_seed(seed)


def test_multinomial_with_replacement_follows_the_weights():
    weights = dl.tensor([[1.0, 2.0, 0.0, 5.0], [0.0, 0.0, 1.0, 1.0]])
    out = dl.multinomial(weights, N, replacement=True, generator=_gen())
    assert out.shape == (2, N) and out.dtype == dl.int64
    freq = np.stack([np.bincount(row, minlength=4) for row in out.numpy()]) / N
    expected = weights.numpy() / weights.numpy().sum(1, keepdims=True)
    np.testing.assert_allclose(freq, expected, atol=5 * math.sqrt(0.25 / N))


def test_multinomial_without_replacement_draws_distinct_categories():
    weights = dl.tensor([1.0, 1.0, 8.0, 0.0, 2.0])
    draws = np.stack([dl.multinomial(weights, 3, generator=_gen(s)).numpy()
                      for s in range(2000)])
    assert all(len(set(row)) == 3 for row in draws)
    assert not (draws == 3).any()  # zero weight: never drawn
    # the heaviest category comes first most often: P = 8 / 12
    assert abs((draws[:, 0] == 2).mean() - 8 / 12) < 5 * math.sqrt(0.25 / 2000)


def test_a_seeded_generator_repeats_its_samples():
    w = dl.tensor([0.2, 0.3, 0.5])
    assert dl.multinomial(w, 5, True, generator=_gen(3)).tolist() == \
        dl.multinomial(w, 5, True, generator=_gen(3)).tolist()
    p = dl.full((4, 4), 0.5)
    assert dl.bernoulli(p, generator=_gen(1)).tolist() == \
        dl.bernoulli(p, generator=_gen(1)).tolist()


def test_bernoulli_follows_its_probabilities_and_has_a_zero_gradient():
    p = dl.tensor([0.1, 0.5, 0.9] * (N // 3), requires_grad=True)
    out = dl.bernoulli(p, generator=_gen())
    assert out.dtype == dl.float32 and set(np.unique(out.detach().numpy())) <= {0.0, 1.0}
    np.testing.assert_allclose(out.detach().numpy().reshape(-1, 3).mean(0), [0.1, 0.5, 0.9],
                               atol=5 * math.sqrt(0.25 / (N // 3)))
    out.sum().backward()
    assert not p.grad.numpy().any()
    assert abs(dl.zeros(N).bernoulli(0.25).mean().item() - 0.25) < 0.02


@pytest.mark.parametrize("fill, mean, var", [
    (lambda t, g: t.exponential_(2.0, generator=g), 0.5, 0.25),
    (lambda t, g: t.geometric_(0.25, generator=g), 4.0, 0.75 / 0.25 ** 2),
    (lambda t, g: t.log_normal_(0.0, 0.5, generator=g), math.exp(0.125),
     (math.exp(0.25) - 1) * math.exp(0.25)),
    (lambda t, g: t.random_(3, 7, generator=g), 4.5, (16 - 1) / 12),
    (lambda t, g: t.random_(10, generator=g), 4.5, (100 - 1) / 12),
])
def test_random_fills_draw_their_distribution(fill, mean, var):
    t = dl.empty(N, dtype=dl.float64)
    assert fill(t, _gen()) is t
    values = t.numpy()
    assert abs(values.mean() - mean) < 5 * math.sqrt(var / N)
    assert abs(values.var() - var) < 0.1 * var


def test_cauchy_fill_has_its_median_and_quartiles():
    values = dl.empty(N).cauchy_(1.0, 2.0, generator=_gen()).numpy()
    q1, median, q3 = np.quantile(values, [0.25, 0.5, 0.75])
    assert abs(median - 1.0) < 0.1 and abs(q1 + 1.0) < 0.15 and abs(q3 - 3.0) < 0.15


def test_random_fill_of_integers_and_bools():
    assert set(np.unique(dl.empty(1000, dtype=dl.bool).random_().numpy())) == {False, True}
    ints = dl.empty(1000, dtype=dl.int8).random_(-5, 5).numpy()
    assert ints.min() == -5 and ints.max() == 4
    with pytest.raises(ValueError, match=r"random_: \[0, 300\) does not fit int8"):
        dl.empty(3, dtype=dl.int8).random_(300)


@pytest.mark.parametrize("call, message", [
    (lambda: dl.multinomial(dl.tensor([1.0, -1.0]), 1), "must be finite and non-negative"),
    (lambda: dl.multinomial(dl.tensor([0.0, 0.0]), 1), "needs a positive sum"),
    (lambda: dl.multinomial(dl.tensor([1.0, 1.0]), 3),
     "cannot draw 3 samples without replacement from 2 categories"),
    (lambda: dl.multinomial(dl.tensor([1.0, 0.0, 0.0]), 2),
     "fewer than 2 categories of positive weight"),
    (lambda: dl.bernoulli(dl.tensor([1.5])), r"probabilities must lie in \[0, 1\]"),
    (lambda: dl.empty(2).exponential_(0.0), "lambd must be positive"),
    (lambda: dl.empty(2).geometric_(0.0), r"p must lie in \(0, 1\]"),
])
def test_bad_distributions_are_refused(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_multinomial_needs_floating_weights():
    with pytest.raises(dl.DTypeError, match="multinomial: not supported for int64"):
        dl.multinomial(dl.tensor([1, 2]), 1)


@pytest.mark.parametrize("fill, mean, var", [
    (lambda t, g: t.normal_(2.0, 0.5, generator=g), 2.0, 0.25),
    (lambda t, g: t.uniform_(-1.0, 3.0, generator=g), 1.0, 16 / 12),
    (lambda t, g: t.bernoulli_(0.3, generator=g), 0.3, 0.21),
])
def test_the_continuous_and_bernoulli_fills_draw_their_distribution(fill, mean, var):
    t = dl.empty(N, dtype=dl.float64)
    assert fill(t, _gen()) is t
    values = t.numpy()
    assert abs(values.mean() - mean) < 5 * math.sqrt(var / N)
    assert abs(values.var() - var) < 0.05 * var
    again = fill(dl.empty(N, dtype=dl.float64), _gen())
    assert again.tolist() == t.tolist()  # the same seed, the same fill
