"""`Sampler` and `BeamSearch`: decoding for any model that returns logits and keeps a cache.

The model contract: `model(ids, cache=cache)` returns logits (batch, sequence, vocab) for
the ids (batch, sequence) it is given, appending them to `cache`; `model.new_cache()`
makes an empty cache. After the prompt only each new token is fed. A model without
`new_cache` is run on the whole sequence at every step. Beam search moves rows of the
cache with its `repeat_interleave(times)` and `reorder(rows)` (as dlfree-nn's
`CausalTransformer` cache and dlfree-hf's `KVCache` have them); a cache without them is
not used for beam search, which then recomputes the sequence at each step.
"""

from __future__ import annotations

import dlfree as dl
from dlfree import ShapeError, Tensor

from .loops import beam_search, decode, draw
from .processors import (
    LogitsProcessorList,
    RepetitionPenaltyLogitsProcessor,
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
    _integer,
    _number,
)

__all__ = ["Sampler", "BeamSearch", "ModelFeed"]


class ModelFeed:
    """Feeds a model of the contract above for the decoding loops (see loops.py): the
    prompt, then only the tokens `cache` has not seen (everything each step when `cache`
    is None)."""

    def __init__(self, model, cache=None):
        self.model, self.cache = model, cache
        self.fed = 0

    def next_logits(self, tokens, length: int):
        """float32 logits (rows, vocab) of the token after `tokens[:, :length]`."""
        with dl.no_grad():
            if self.cache is None:
                logits = self.model(dl.as_tensor(tokens[:, :length]))
            else:
                logits = self.model(dl.as_tensor(tokens[:, self.fed:length]), cache=self.cache)
        self.fed = length
        if logits.ndim != 3:
            raise ShapeError(f"decoding: the model must return logits (batch, sequence, "
                             f"vocab), got shape {tuple(logits.shape)}")
        return logits.array[:, -1].astype("float32", copy=True)

    def repeat(self, times: int) -> None:
        if self.cache is not None:
            self.cache.repeat_interleave(times)

    def reorder(self, rows) -> None:
        if self.cache is not None:
            self.cache.reorder(rows)


def _new_cache(model):
    """The model's empty cache, or None for a model without one."""
    return model.new_cache() if hasattr(model, "new_cache") else None


def _prompt(ids, op: str):
    if not isinstance(ids, Tensor) or ids.ndim != 2 or ids.dtype.is_floating_point or \
            ids.dtype.is_complex or ids.shape[1] == 0:
        got = tuple(ids.shape) if isinstance(ids, Tensor) else type(ids).__name__
        raise ShapeError(f"{op}: ids must be an integer tensor (batch, prompt length >= 1), "
                         f"got {got}")
    return ids.array


def _tokens(values, name: str):
    """Stop tokens as a tuple of ints (None: none)."""
    if values is None:
        return None
    values = (values,) if isinstance(values, int) else tuple(values)
    if not values or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0
                             for v in values):
        raise ValueError(f"{name} must be a token id or a non-empty list of them (ints >= 0), "
                         f"got {values!r}")
    return values


def _buffer(prompt, new_tokens: int, fill: int, xp):
    """(batch, prompt + new_tokens) ids, the prompt first and `fill` after it."""
    tokens = xp.full((prompt.shape[0], prompt.shape[1] + new_tokens), fill, dtype="int64")
    tokens[:, :prompt.shape[1]] = prompt
    return tokens


class Sampler:
    """Picks the next token from logits: a repetition penalty (Keskar et al. 2019, as
    transformers applies it), then at temperature 0 the most likely token, else a draw from
    softmax(logits / temperature) restricted to the `top_k` most likely tokens and to the
    smallest set holding `top_p` of the probability (nucleus sampling, Holtzman et al.
    2020), from `generator` (the default one when None): the same seed, the same tokens."""

    def __init__(self, temperature: float = 1.0, top_k: int | None = None,
                 top_p: float | None = None, repetition_penalty: float = 1.0,
                 generator: dl.Generator | None = None):
        self.greedy = _number(temperature, "temperature", 0.0, low_open=False) == 0
        self.temperature, self.top_k, self.top_p = temperature, top_k, top_p
        self.generator = generator
        self.processors = LogitsProcessorList()
        if repetition_penalty != 1.0:
            self.processors.append(RepetitionPenaltyLogitsProcessor(repetition_penalty))
        warpers = [] if self.greedy else [TemperatureLogitsWarper(temperature)]
        if top_k is not None:
            warpers.append(TopKLogitsWarper(top_k))
        if top_p is not None:
            warpers.append(TopPLogitsWarper(top_p))
        if not self.greedy:  # (built either way above, so a bad value fails either way)
            self.processors.extend(warpers)

    def __call__(self, logits: Tensor, previous: Tensor | None = None) -> Tensor:
        """The next token id of each row (batch,) for logits (batch, vocab); `previous`
        (batch, sequence) are the tokens so far, for the repetition penalty."""
        if not isinstance(logits, Tensor) or logits.ndim != 2:
            got = tuple(logits.shape) if isinstance(logits, Tensor) else type(logits).__name__
            raise ShapeError(f"Sampler: logits must be a tensor (batch, vocab), got {got}")
        xp = logits.device.xp
        seen = xp.zeros((logits.shape[0], 0), dtype="int64") if previous is None else \
            _prompt(previous, "Sampler")
        scores = self.processors.process(seen, logits.array.astype("float32"), xp)
        chosen = scores.argmax(axis=-1) if self.greedy else \
            draw(scores, self.generator, xp, logits.device)
        return dl.as_tensor(chosen.astype("int64"))

    def generate(self, model, ids: Tensor, max_new_tokens: int, stop_tokens=None,
                 pad_token: int | None = None) -> Tensor:
        """`ids` (batch, prompt) followed by up to `max_new_tokens` tokens picked one at a
        time through the model's cache. A row that picks a stop token is finished and is
        padded with `pad_token` (the first stop token by default) while the others go on;
        decoding ends when every row is finished."""
        prompt = _prompt(ids, "Sampler.generate")
        _integer(max_new_tokens, "max_new_tokens", 1)
        stop = _tokens(stop_tokens, "stop_tokens")
        pad = pad_token if pad_token is not None else (stop[0] if stop else 0)
        xp = ids.device.xp
        tokens = _buffer(prompt, max_new_tokens, pad, xp)
        length = decode(ModelFeed(model, _new_cache(model)), tokens, prompt.shape[1],
                        tokens.shape[1], self.processors, not self.greedy, self.generator,
                        None if stop is None else xp.asarray(stop), pad, None, ids.device)
        return dl.as_tensor(tokens[:, :length].copy())


class BeamSearch:
    """Beam search with transformers' semantics: `num_beams` hypotheses per prompt, scored by
    the sum of their tokens' log-probabilities over generated_length ** length_penalty;
    a hypothesis ends at a stop token or after `max_new_tokens`. `early_stopping`: True
    stops a prompt once it has `num_beams` finished hypotheses, False once no running beam
    can beat the worst finished one, "never" judges that at the longest possible length.
    `generate` returns the best `num_return_sequences` per prompt, best first, padded with
    `pad_token` (the first stop token by default)."""

    def __init__(self, num_beams: int, length_penalty: float = 1.0, early_stopping=False,
                 stop_tokens=None, max_new_tokens: int = 20, num_return_sequences: int = 1,
                 pad_token: int | None = None):
        self.num_beams = _integer(num_beams, "num_beams", 1)
        self.max_new_tokens = _integer(max_new_tokens, "max_new_tokens", 1)
        self.num_return_sequences = _integer(num_return_sequences, "num_return_sequences", 1)
        if num_return_sequences > num_beams:
            raise ValueError(f"num_return_sequences ({num_return_sequences}) must be at most "
                             f"num_beams ({num_beams})")
        if early_stopping not in (True, False, "never"):
            raise ValueError(f"early_stopping must be True, False or 'never', got "
                             f"{early_stopping!r}")
        if isinstance(length_penalty, bool) or not isinstance(length_penalty, int | float):
            raise ValueError(f"length_penalty must be a number, got {length_penalty!r}")
        self.length_penalty, self.early_stopping = float(length_penalty), early_stopping
        self.stop_tokens = _tokens(stop_tokens, "stop_tokens")
        self.pad_token = pad_token

    def generate(self, model, ids: Tensor) -> Tensor:
        """(batch * num_return_sequences, length) token ids: each prompt's best hypotheses."""
        prompt = _prompt(ids, "BeamSearch.generate")
        stop = self.stop_tokens
        pad = self.pad_token if self.pad_token is not None else (stop[0] if stop else 0)
        xp = ids.device.xp
        cache = _new_cache(model)
        if not all(hasattr(cache, m) for m in ("repeat_interleave", "reorder")):
            cache = None  # its rows cannot follow the beams: recompute at each step
        out = beam_search(ModelFeed(model, cache), prompt.astype("int64"),
                          prompt.shape[1] + self.max_new_tokens, LogitsProcessorList(),
                          self.num_beams, self.length_penalty, self.early_stopping,
                          None if stop is None else xp.asarray(stop), pad,
                          self.num_return_sequences, False, None, ids.device)
        return dl.as_tensor(out)
