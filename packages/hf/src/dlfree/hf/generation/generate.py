"""`GenerationMixin.generate`: text generation for causal LMs with transformers' arguments and
defaults — greedy, sampling (temperature, top-k, top-p, repetition penalty, seeded), beam
search, end tokens and a streaming callback — over a KV cache.
"""

from __future__ import annotations

import math

import dlfree as dl
from dlfree import DTypeError, ShapeError, Tensor
from dlfree.nn.decoding import (
    LogitsProcessorList,
    RepetitionPenaltyLogitsProcessor,
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
    beam_search,
    decode,
)

from .feed import ModelFeed

__all__ = ["GenerationMixin", "DEFAULT_MAX_LENGTH"]

DEFAULT_MAX_LENGTH = 20  # transformers' max_length when neither length is given


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _count(value, name: str, minimum: int = 1) -> int:
    if not _is_int(value) or value < minimum:
        raise ValueError(f"generate: {name} must be an int >= {minimum}, got {value!r}")
    return value


def _token_list(value, name: str) -> list[int] | None:
    """An end-token setting (an id, a list of ids, or None) as a list of ids or None."""
    if value is None:
        return None
    ids = [value] if _is_int(value) else value
    if not isinstance(ids, (list, tuple)) or not ids or not all(_is_int(i) and i >= 0
                                                               for i in ids):
        raise ValueError(f"generate: {name} must be a token id (int >= 0), a non-empty list of "
                         f"them, or None; got {value!r}")
    return list(ids)


def _prompt(input_ids) -> Tensor:
    ids = input_ids if isinstance(input_ids, Tensor) else dl.as_tensor(input_ids)
    if ids.ndim != 2 or ids.shape[1] == 0:
        raise ShapeError(f"generate: input_ids must be a non-empty (batch, sequence) prompt, "
                         f"got shape {tuple(ids.shape)}")
    if ids.is_floating_point() or ids.dtype == dl.bool:
        raise DTypeError(f"generate: input_ids must hold integer token ids, got {ids.dtype}")
    return ids.long()


def _check_options(num_beams, num_return_sequences, do_sample, early_stopping, length_penalty,
                   streamer, generator) -> None:
    """Refuse decoding options that are invalid or do not go together, naming them."""
    _count(num_beams, "num_beams")
    _count(num_return_sequences, "num_return_sequences")
    if early_stopping not in (True, False, "never"):
        raise ValueError(f"generate: early_stopping must be True, False or 'never', got "
                         f"{early_stopping!r}")
    if isinstance(length_penalty, bool) or not isinstance(length_penalty, (int, float)) \
            or not math.isfinite(length_penalty):
        raise ValueError(f"generate: length_penalty must be a finite number, got "
                         f"{length_penalty!r}")
    if num_beams > 1 and num_return_sequences > num_beams:
        raise ValueError(f"generate: num_return_sequences ({num_return_sequences}) cannot "
                         f"exceed num_beams ({num_beams})")
    if num_beams == 1 and num_return_sequences > 1 and not do_sample:
        raise ValueError("generate: greedy decoding gives one sequence per prompt; use "
                         "do_sample=True or num_beams >= num_return_sequences")
    if streamer is not None and (not callable(streamer) or num_beams > 1):
        raise ValueError("generate: streamer must be a callable taking each step's new "
                         "tokens, and works without beam search (num_beams=1)")
    if generator is not None and not isinstance(generator, dl.Generator):
        raise TypeError(f"generate: generator must be a dl.Generator, got "
                        f"{type(generator).__name__}")


class GenerationMixin:
    """Adds `generate` to a causal LM whose forward takes (input_ids, attention_mask,
    position_ids, past_key_values, use_cache, logits_to_keep) and returns `.logits`."""

    def generate(self, input_ids, attention_mask=None, *, max_new_tokens: int | None = None,
                 max_length: int | None = None, do_sample: bool = False,
                 temperature: float = 1.0, top_k: int | None = 50, top_p: float = 1.0,
                 repetition_penalty: float = 1.0, num_beams: int = 1,
                 num_return_sequences: int = 1, length_penalty: float = 1.0,
                 early_stopping: bool | str = False, eos_token_id=None, pad_token_id=None,
                 generator: dl.Generator | None = None, streamer=None,
                 use_cache: bool = True) -> Tensor:
        """Continue each prompt of `input_ids` (batch, sequence); returns the prompts with
        their continuations, (batch × num_return_sequences, length), as transformers'
        `generate` does with the same arguments.

        Length: `max_new_tokens` new tokens, or up to `max_length` tokens in all (default
        20, prompt included). `attention_mask` (1 = token, 0 = padding) allows left-padded
        batches; without it, tokens equal to the pad id are taken as padding (unless the pad
        id is an end token). Positions count from each row's first real token.

        Decoding: greedy by default; `do_sample=True` samples after the processors
        temperature, `top_k` (default 50; 0 or None: off) and `top_p` (1.0: off), drawing
        from `generator` (default: dl's global one, so `dl.manual_seed` reproduces a run).
        `repetition_penalty` (> 1 discourages repeats) applies in every mode.
        `num_beams > 1` runs beam search, scoring a finished hypothesis by its summed log
        probability / generated_length ** `length_penalty`; `early_stopping` is True,
        False or "never" (see `search.beam_search`).

        Stopping: a row ends at any of `eos_token_id` (an id or a list; default
        `config.eos_token_id`) and is padded with `pad_token_id` (default
        `config.pad_token_id`, else the first end token) while others continue; beam
        search fills short hypotheses as transformers does (with the pad id, but with the
        first end token when the pad id is 0).
        `streamer(tokens)` is called with each step's new tokens (batch,) (not with beam
        search). `use_cache=False` recomputes the whole sequence every step (same tokens,
        slower)."""
        ids = _prompt(input_ids)
        start_length = self._start_length(ids)
        eos = _token_list(eos_token_id if eos_token_id is not None
                          else self.config.eos_token_id, "eos_token_id")
        pad = pad_token_id if pad_token_id is not None else self.config.pad_token_id
        if isinstance(pad, list):
            pad = pad[0] if pad else None
        if pad is None and eos is not None:
            pad = eos[0]
        if pad is not None and (not _is_int(pad) or pad < 0):
            raise ValueError(f"generate: pad_token_id must be a token id (int >= 0) or None, "
                             f"got {pad!r}")
        if max_new_tokens is not None:
            max_length = start_length + _count(max_new_tokens, "max_new_tokens")
        elif max_length is None:
            max_length = DEFAULT_MAX_LENGTH
        if not _is_int(max_length) or max_length <= start_length:
            raise ValueError(f"generate: max_length={max_length!r} leaves no room after the "
                             f"{start_length} tokens decoding starts from; give "
                             "max_new_tokens instead")
        _check_options(num_beams, num_return_sequences, do_sample, early_stopping,
                       length_penalty, streamer, generator)

        xp = ids.device.xp
        copies = num_return_sequences if num_beams == 1 else 1
        with dl.no_grad():
            start, mask, feed = self._decoding_setup(ids, attention_mask, pad, eos, copies,
                                                     max_length, use_cache)
        processors = _processors(mask, do_sample, temperature, top_k, top_p,
                                 repetition_penalty, num_beams, eos, xp)
        with dl.no_grad():
            if num_beams > 1:
                # transformers' filler for short hypotheses: the pad id, but the first end
                # token when the pad id is 0 (falsy) or unset, and -1 without end tokens
                fill = -1 if eos is None else (pad or eos[0])
                out = beam_search(feed, start, max_length, processors, num_beams,
                                  float(length_penalty), early_stopping,
                                  None if eos is None else xp.asarray(eos), fill,
                                  num_return_sequences, do_sample, generator, ids.device)
                return dl.as_tensor(out)
            tokens = xp.empty((start.shape[0], max_length), dtype=start.dtype)
            tokens[:, :start_length] = start
            length = decode(feed, tokens, start_length, max_length, processors, do_sample,
                            generator, None if eos is None else xp.asarray(eos), pad,
                            streamer, ids.device)
        return dl.as_tensor(tokens[:, :length].copy())

    def _start_length(self, ids: Tensor) -> int:
        """How many tokens decoding continues from: a causal LM continues its prompt."""
        return ids.shape[1]

    def _decoding_setup(self, ids: Tensor, attention_mask, pad, eos, copies: int,
                        max_length: int, use_cache: bool):
        """(the tokens decoding continues, (rows, start length) array; the prompt's padding
        mask for the logits processors, or None; the ModelFeed), each prompt repeated
        `copies` times. A causal LM continues the prompt itself; positions count from each
        row's first real token."""
        xp = ids.device.xp
        mask = self._prompt_mask(ids, attention_mask, pad, eos)
        start = ids.array
        if copies > 1:
            start = xp.repeat(start, copies, axis=0)
            mask = None if mask is None else xp.repeat(mask, copies, axis=0)
        full = positions = None
        if mask is not None:
            full = xp.ones((start.shape[0], max_length), dtype=mask.dtype)
            full[:, :start.shape[1]] = mask
            positions = xp.where(full == 0, 0, xp.cumsum(full, axis=1) - 1)
        return start, mask, ModelFeed(self, full, positions, use_cache, max_length, ids.device)

    def _prompt_mask(self, ids: Tensor, attention_mask, pad, eos):
        """The prompt's padding mask as an array, or None when nothing is padded. Without a
        mask, pad tokens are padding unless the pad id is also an end token (transformers'
        inference)."""
        if attention_mask is not None:
            mask = attention_mask if isinstance(attention_mask, Tensor) \
                else dl.as_tensor(attention_mask)
            if tuple(mask.shape) != tuple(ids.shape):
                raise ShapeError(f"generate: attention_mask must have the prompt's shape "
                                 f"{tuple(ids.shape)}, got {tuple(mask.shape)}")
            mask = (mask.array != 0).astype(ids.array.dtype)
        elif pad is not None and (eos is None or pad not in eos):
            mask = (ids.array != pad).astype(ids.array.dtype)
        else:
            return None
        return None if bool(mask.all()) else mask


def _processors(mask, do_sample, temperature, top_k, top_p, repetition_penalty, num_beams,
                eos, xp) -> LogitsProcessorList:
    """transformers' processors for these settings, in its order. With beam search the
    processors see every beam of a prompt as one row."""
    processors = LogitsProcessorList()
    if repetition_penalty != 1.0:
        # left padding is not part of the text: skip it (transformers does the same)
        skip = None if mask is None else xp.repeat((mask != 0).argmax(axis=1), num_beams)
        processors.append(RepetitionPenaltyLogitsProcessor(repetition_penalty, skip))
    warpers = [TemperatureLogitsWarper(temperature)]
    keep = 1 if num_beams == 1 else max(2, 1 + (0 if eos is None else len(eos)))
    if top_k:
        warpers.append(TopKLogitsWarper(top_k, min_tokens_to_keep=keep))
    warpers.append(TopPLogitsWarper(top_p, min_tokens_to_keep=keep))
    if do_sample:  # built either way, so a bad value fails whatever the mode
        processors.extend(w for w in warpers if not _is_identity(w))
    return processors


def _is_identity(warper) -> bool:
    return (isinstance(warper, TemperatureLogitsWarper) and warper.temperature == 1.0) or \
        (isinstance(warper, TopPLogitsWarper) and warper.top_p >= 1.0)
