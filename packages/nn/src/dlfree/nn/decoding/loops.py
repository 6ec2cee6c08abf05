"""The decoding loops: greedy and sampled decoding, and beam search (transformers' vectorised
beam search, step for step), over any model through a *feed*: an object with
`next_logits(tokens, length)` (float32 logits (rows, vocab) of the token after
`tokens[:, :length]`, feeding the model only what its cache has not seen), `repeat(times)`
(each row becomes `times` consecutive rows, one per beam) and `reorder(rows)` (row i
continues from row `rows[i]`). `sampler.ModelFeed` is the feed of a model that takes
`model(ids, cache=cache)`; dlfree-hf has its own for HF models' keyword arguments.

Token bookkeeping runs on the backend arrays of the model's device, in buffers sized for the
longest output, so no step concatenates.
"""

from __future__ import annotations

import dlfree as dl

from .processors import LogitsProcessorList

__all__ = ["decode", "beam_search", "draw"]

_NEG = -1.0e9  # transformers' score for "not a candidate" in beam search


def draw(scores, generator, xp, device):
    """One token per row, sampled from softmax(scores) by inverting its cumulative sum with
    a uniform number from `generator`."""
    probs = xp.exp(scores - scores.max(axis=-1, keepdims=True))
    cumulative = xp.cumsum(probs, axis=-1, dtype="float64")
    uniform = dl.rand(scores.shape[0], generator=generator, dtype=dl.float64,
                      device=device).array
    threshold = uniform[:, None] * cumulative[:, -1:]
    # the first token whose cumulative mass exceeds the threshold (never a zero-probability one)
    chosen = (cumulative <= threshold).sum(axis=-1)
    return xp.minimum(chosen, scores.shape[-1] - 1)


def decode(feed, tokens, length: int, max_length: int,
           processors: LogitsProcessorList, do_sample: bool, generator, eos, pad,
           streamer, device) -> int:
    """Greedy (argmax) or sampled decoding into `tokens` (rows, max_length), whose first
    `length` columns hold the prompt; returns the final length. A row that has produced an
    end token is finished and gets `pad` from then on; decoding stops when every row is
    finished or `max_length` is reached."""
    xp = device.xp
    unfinished = xp.ones(tokens.shape[0], dtype=bool)
    while True:
        scores = processors.process(tokens[:, :length], feed.next_logits(tokens, length), xp)
        chosen = draw(scores, generator, xp, device) if do_sample else scores.argmax(axis=-1)
        if eos is not None:
            chosen = xp.where(unfinished, chosen, pad)
        tokens[:, length] = chosen
        length += 1
        if streamer is not None:
            streamer(dl.as_tensor(tokens[:, length - 1].copy()))
        if eos is not None:
            unfinished &= ~xp.isin(chosen, eos)
        if length >= max_length or not bool(unfinished.any()):
            return length


def _top(values, k: int, xp):
    """Indices of the k largest values per row, largest first (ties: lower index first)."""
    return xp.argsort(-values, axis=-1, kind="stable")[:, :k]


def _take(array, index, xp):
    """array[b, index[b, j]] along dim 1, keeping any trailing dims."""
    while index.ndim < array.ndim:
        index = index[..., None]
    return xp.take_along_axis(array, index, axis=1)


def beam_search(feed, prompt, max_length: int, processors: LogitsProcessorList,
                num_beams: int, length_penalty: float, early_stopping, eos, fill: int,
                num_return_sequences: int, do_sample: bool, generator, device):
    """Beam search as transformers runs it (its `_beam_search`): at each step the best
    `keep` = max(2, 1 + number of end tokens) × num_beams continuations over all beams (or,
    sampling, that many drawn without replacement), the best `num_beams` unfinished ones
    continuing, and finished ones (end token or max_length) scored by
    sum log p / generated_length ** length_penalty kept if among the best `num_beams`.
    `early_stopping`: True stops a prompt once it has num_beams finished hypotheses; False
    stops when the best running beam, at its current length, cannot beat the worst
    finished one; "never" (with length_penalty > 0) judges it at max_length instead.
    Returns (rows × num_return_sequences, length) token ids, best first, padded with `fill`.
    """
    xp = device.xp
    batch, prompt_length = prompt.shape
    keep = max(2, 1 + (0 if eos is None else len(eos))) * num_beams
    running = xp.full((batch, num_beams, max_length), fill, dtype=prompt.dtype)
    running[:, :, :prompt_length] = prompt[:, None]
    sequences = running.copy()
    running_scores = xp.zeros((batch, num_beams), dtype="float32")
    running_scores[:, 1:] = _NEG  # the beams start identical: explore from the first only
    scores = xp.full((batch, num_beams), _NEG, dtype="float32")
    lengths = xp.zeros((batch, num_beams), dtype="int64")  # generated tokens per hypothesis
    finished = xp.zeros((batch, num_beams), dtype=bool)
    improvable = xp.ones((batch, 1), dtype=bool)
    among_best = xp.arange(keep) < num_beams
    beam_offsets = (xp.arange(batch) * num_beams)[:, None]
    neg = xp.float32(_NEG)

    logits = xp.repeat(feed.next_logits(prompt, prompt_length), num_beams, axis=0)
    feed.repeat(num_beams)
    length = prompt_length
    while True:
        flat = running[:, :, :length].reshape(batch * num_beams, length)
        log_probs = logits - logits.max(axis=-1, keepdims=True)
        log_probs -= xp.log(xp.exp(log_probs).sum(axis=-1, keepdims=True))
        log_probs = processors.process(flat, log_probs, xp)
        vocab = log_probs.shape[-1]
        totals = (log_probs.reshape(batch, num_beams, vocab)
                  + running_scores[:, :, None]).reshape(batch, num_beams * vocab)

        if do_sample:  # Gumbel top-k draws `keep` candidates without replacement
            uniform = dl.rand(*totals.shape, generator=generator, dtype=dl.float64,
                              device=device).array
            picked = _top(totals - xp.log(-xp.log(uniform)), keep, xp)
            picked = _take(picked, _top(_take(totals, picked, xp), keep, xp), xp)
        else:
            picked = _top(totals, keep, xp)
        candidate_scores = _take(totals, picked, xp)
        parents, new_tokens = picked // vocab, picked % vocab
        candidates = _take(running, parents, xp)
        candidates[:, :, length] = new_tokens
        done = xp.full(new_tokens.shape, length + 1 >= max_length, dtype=bool)
        if eos is not None:
            done |= xp.isin(new_tokens, eos)

        # the best unfinished candidates continue
        continuing = candidate_scores + done.astype("float32") * neg
        best = _top(continuing, num_beams, xp)
        running = _take(candidates, best, xp)
        running_scores = _take(continuing, best, xp)
        source_rows = (_take(parents, best, xp) + beam_offsets).reshape(-1)

        # finished candidates among the best num_beams join the hypotheses if good enough
        just_finished = done & among_best[None, :]
        finals = candidate_scores / ((length + 1 - prompt_length) ** length_penalty)
        if early_stopping is True:
            finals += finished.all(axis=-1, keepdims=True).astype("float32") * neg
        finals += (~improvable).astype("float32") * neg
        finals += (~just_finished).astype("float32") * neg
        merged = xp.concatenate([scores, finals], axis=1)
        best = _top(merged, num_beams, xp)
        sequences = _take(xp.concatenate([sequences, candidates], axis=1), best, xp)
        scores = _take(merged, best, xp)
        new_lengths = xp.full(new_tokens.shape, length + 1 - prompt_length, dtype="int64")
        lengths = _take(xp.concatenate([lengths, new_lengths], axis=1), best, xp)
        finished = _take(xp.concatenate([finished, just_finished], axis=1), best, xp)

        length += 1
        improvable = _still_improvable(improvable, running_scores, scores, finished, length,
                                       max_length, prompt_length, early_stopping,
                                       length_penalty, xp)
        settled = bool(finished.all()) and early_stopping is True
        if not bool(improvable.any()) or settled or bool(done.all()):
            break
        feed.reorder(source_rows)
        logits = feed.next_logits(running.reshape(batch * num_beams, max_length), length)

    best_length = prompt_length + int(lengths[:, :num_return_sequences].max())
    return sequences[:, :num_return_sequences, :best_length].reshape(-1, best_length)


def _still_improvable(improvable, running_scores, scores, finished, length, max_length,
                      prompt_length, early_stopping, length_penalty, xp):
    """Whether each prompt's best running beam could still beat its worst finished
    hypothesis (transformers' early-stopping heuristic)."""
    if early_stopping == "never" and length_penalty > 0.0:
        best_length = max_length - prompt_length
    else:
        best_length = length - prompt_length
    best_running = running_scores[:, :1] / (best_length ** length_penalty)
    worst_finished = xp.where(finished, scores.min(axis=1, keepdims=True), xp.float32(_NEG))
    return improvable & (best_running > worst_finished).any(axis=-1, keepdims=True)
