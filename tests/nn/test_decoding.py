"""nn.Sampler and nn.BeamSearch on a model of the decoding contract written here: a bigram
table (the logits of the next token depend on the last token only) with a cache that
records what it is fed. Checked: greedy is the argmax chain, top-k and top-p never leave
their sets and reach all of them, the repetition penalty is transformers' (its processor as
the oracle), seeds repeat, one token is fed per step after the prompt, stop tokens, and
beam search equals an exhaustive search."""

from __future__ import annotations

import itertools

import dlfree as dl
import dlfree.nn as nn

import numpy as np
import pytest

VOCAB = 5


class BigramCache:
    """The tokens fed so far, per row, and the lengths of the calls."""

    def __init__(self):
        self.rows = None
        self.calls = []

    def append(self, ids):
        self.calls.append(ids.shape[1])
        self.rows = ids if self.rows is None else np.concatenate([self.rows, ids], axis=1)

    def repeat_interleave(self, times):
        self.rows = np.repeat(self.rows, times, axis=0)

    def reorder(self, rows):
        self.rows = self.rows[np.asarray(rows)]


class BigramLM:
    """logits[b, t] = table[ids[b, t]]: the model contract with a recording cache."""

    def __init__(self, table):
        self.table = np.asarray(table, dtype=np.float32)
        self.caches = []

    def new_cache(self):
        self.caches.append(BigramCache())
        return self.caches[-1]

    def __call__(self, ids, cache=None):
        ids = ids.numpy()
        if cache is not None:
            cache.append(ids)
        return dl.tensor(self.table[ids])


def _table(seed=0):
    return np.random.default_rng(seed).standard_normal((VOCAB, VOCAB)) * 2


def _log_softmax(row):
    shifted = row - row.max()
    return shifted - np.log(np.exp(shifted).sum())


def test_greedy_is_the_argmax_chain_and_feeds_one_token_per_step():
    model = BigramLM(_table())
    out = nn.Sampler(temperature=0).generate(model, dl.tensor([[1, 3], [4, 0]]), 6)
    for row in out.numpy():
        for t in range(2, 8):
            assert row[t] == model.table[row[t - 1]].argmax()
    assert model.caches[0].calls == [2, 1, 1, 1, 1, 1]  # the prompt, then one token a step
    assert out.dtype == dl.int64 and out.shape == (2, 8)


def test_top_k_draws_only_and_all_of_the_k_most_likely():
    logits = dl.tensor([[3.0, 0.5, 2.0, -1.0, 1.0]])
    sampler = nn.Sampler(top_k=3, generator=dl.Generator().manual_seed(0))
    drawn = {int(sampler(logits)[0]) for _ in range(400)}
    assert drawn == {0, 2, 4}


def test_top_p_keeps_the_smallest_set_holding_p_and_draws_it_in_proportion():
    probs = np.array([0.5, 0.3, 0.15, 0.05])
    logits = dl.tensor(np.log(probs)[None].astype(np.float32))
    sampler = nn.Sampler(top_p=0.75, generator=dl.Generator().manual_seed(1))
    draws = np.array([int(sampler(logits)[0]) for _ in range(3000)])
    assert set(draws) == {0, 1}  # 0.5 < 0.75 <= 0.5 + 0.3
    assert abs((draws == 0).mean() - 0.5 / 0.8) < 5 * np.sqrt(0.25 / 3000)


def test_temperature_divides_the_logits():
    logits = dl.tensor([[1.0, 0.0]])
    sampler = nn.Sampler(temperature=0.5, generator=dl.Generator().manual_seed(2))
    draws = np.array([int(sampler(logits)[0]) for _ in range(4000)])
    expected = 1 / (1 + np.exp(-2.0))  # softmax([2, 0])[0]
    assert abs((draws == 0).mean() - expected) < 5 * np.sqrt(0.25 / 4000)


def test_the_repetition_penalty_is_transformers():
    transformers = pytest.importorskip("transformers")
    torch = pytest.importorskip("torch")
    scores = np.random.default_rng(3).standard_normal((2, VOCAB)).astype(np.float32)
    previous = np.array([[0, 2, 2], [4, 1, 3]])
    ours = nn.Sampler(repetition_penalty=1.7).processors.process(previous, scores.copy(), np)
    theirs = transformers.RepetitionPenaltyLogitsProcessor(1.7)(torch.tensor(previous),
                                                                torch.tensor(scores))
    np.testing.assert_allclose(ours, theirs.numpy(), rtol=1e-6)
    # greedy with the penalty avoids what the text already holds when it has to
    sticky = dl.tensor([[2.0, 1.9, -1.0]])
    assert int(nn.Sampler(temperature=0)(sticky, dl.tensor([[0]]))[0]) == 0
    assert int(nn.Sampler(temperature=0, repetition_penalty=1.2)(sticky, dl.tensor([[0]]))[0]) \
        == 1


def test_the_same_seed_gives_the_same_tokens():
    model = BigramLM(_table(1))

    def run(seed):
        sampler = nn.Sampler(temperature=1.3, generator=dl.Generator().manual_seed(seed))
        return sampler.generate(model, dl.tensor([[0], [1], [2]]), 12).tolist()

    assert run(5) == run(5)
    assert run(5) != run(6)


def test_stop_tokens_finish_a_row_which_is_padded_until_all_are_done():
    table = np.full((VOCAB, VOCAB), -9.0)
    table[0, 1] = table[1, 2] = table[2, 4] = table[3, 3] = 9.0  # 0 -> 1 -> 2 -> stop 4
    out = nn.Sampler(temperature=0).generate(BigramLM(table), dl.tensor([[0], [1]]), 10,
                                             stop_tokens=[4], pad_token=3)
    assert out.tolist() == [[0, 1, 2, 4], [1, 2, 4, 3]]


def _exhaustive(table, prompt, length):
    """Every continuation of `length` tokens with its summed log-probability, best first."""
    log_p = np.stack([_log_softmax(row) for row in table.astype(np.float64)])
    scored = []
    for tail in itertools.product(range(VOCAB), repeat=length):
        previous, total = prompt[-1], 0.0
        for token in tail:
            total += log_p[previous, token]
            previous = token
        scored.append((total, list(prompt) + list(tail)))
    return [seq for _, seq in sorted(scored, key=lambda s: -s[0])]


def test_beam_search_with_enough_beams_is_an_exhaustive_search():
    table = _table(4)
    model = BigramLM(table)
    search = nn.BeamSearch(num_beams=VOCAB ** 2, max_new_tokens=3, num_return_sequences=3)
    out = search.generate(model, dl.tensor([[2], [0]]))
    assert out.shape == (6, 4)
    assert out.numpy()[:3].tolist() == _exhaustive(table, [2], 3)[:3]
    assert out.numpy()[3:].tolist() == _exhaustive(table, [0], 3)[:3]
    assert model.caches[0].calls == [1, 1, 1]  # the prompt, then one token per beam a step


def test_a_length_penalty_favours_what_stops_early_or_late():
    table = np.full((VOCAB, VOCAB), -4.0)
    table[0, 4], table[0, 1] = 0.0, 0.2  # stop at once (4), or go on through 1 -> 2 -> 4
    table[1, 2], table[2, 4] = 3.0, 3.0
    prompt = dl.tensor([[0]])
    short = nn.BeamSearch(2, length_penalty=-1.0, stop_tokens=4, max_new_tokens=5,
                          early_stopping=True).generate(BigramLM(table), prompt)
    long = nn.BeamSearch(2, length_penalty=3.0, stop_tokens=4, max_new_tokens=5,
                         early_stopping="never").generate(BigramLM(table), prompt)
    assert short.tolist()[0][:2] == [0, 4]
    assert long.tolist()[0] == [0, 1, 2, 4]


def test_a_model_without_a_cache_is_run_on_the_whole_sequence():
    table = _table(2)

    class NoCache:
        def __call__(self, ids, cache=None):
            assert cache is None
            return dl.tensor(table.astype(np.float32)[ids.numpy()])

    cached = nn.Sampler(temperature=0).generate(BigramLM(table), dl.tensor([[1]]), 5)
    assert nn.Sampler(temperature=0).generate(NoCache(), dl.tensor([[1]]), 5).tolist() == \
        cached.tolist()
    beams = nn.BeamSearch(3, max_new_tokens=4).generate(NoCache(), dl.tensor([[1]]))
    assert beams.tolist() == nn.BeamSearch(3, max_new_tokens=4).generate(
        BigramLM(table), dl.tensor([[1]])).tolist()


@pytest.mark.parametrize("make, message", [
    (lambda: nn.Sampler(temperature=-1), "temperature must be a number >= 0"),
    (lambda: nn.Sampler(top_k=0), "top_k must be an int >= 1"),
    (lambda: nn.Sampler(top_p=1.5), r"top_p must be a number >= 0.0 and <= 1.0"),
    (lambda: nn.Sampler(repetition_penalty=0), "repetition_penalty must be a number > 0"),
    (lambda: nn.BeamSearch(2, num_return_sequences=3),
     r"num_return_sequences \(3\) must be at most num_beams \(2\)"),
    (lambda: nn.BeamSearch(2, early_stopping="soon"), "True, False or 'never'"),
    (lambda: nn.BeamSearch(2, stop_tokens=[-1]), "stop_tokens must be a token id"),
])
def test_bad_settings_say_what_is_valid(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_bad_inputs_name_the_expected_shape():
    with pytest.raises(dl.ShapeError, match=r"ids must be an integer tensor \(batch, prompt"):
        nn.Sampler().generate(BigramLM(_table()), dl.tensor([1, 2]), 3)
    with pytest.raises(dl.ShapeError, match=r"logits must be a tensor \(batch, vocab\)"):
        nn.Sampler()(dl.zeros(2, 3, 4))
    with pytest.raises(ValueError, match="max_new_tokens must be an int >= 1"):
        nn.Sampler().generate(BigramLM(_table()), dl.tensor([[1]]), 0)
