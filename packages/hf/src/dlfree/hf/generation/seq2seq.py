"""Generation for encoder–decoder models (T5): the encoder runs once on the prompt, and the
decoder continues from its start token over a cache of its own keys and values and of the
cross-attention keys and values over the encoder output."""

from __future__ import annotations

import dlfree as dl
from dlfree import Tensor

from ..modeling import BaseModelOutput
from .cache import EncoderDecoderCache
from .generate import GenerationMixin

__all__ = ["Seq2SeqFeed", "Seq2SeqGenerationMixin"]


class Seq2SeqFeed:
    """Runs the decoder while decoding (ModelFeed's interface): each step feeds only the new
    decoder token with the cache, or, with `use_cache=False`, all decoder tokens again; the
    encoder output and its mask are fixed."""

    def __init__(self, model, encoded: Tensor, mask, use_cache: bool, capacity: int):
        self.model, self.encoded, self.mask = model, encoded, mask
        self.cache = EncoderDecoderCache(reserve=capacity) if use_cache else None
        self.fed = 0

    def next_logits(self, tokens, length: int):
        """float32 logits (rows, vocab) of the decoder token after `tokens[:, :length]`."""
        start = self.fed if self.cache is not None else 0
        out = self.model(
            decoder_input_ids=dl.as_tensor(tokens[:, start:length]),
            encoder_outputs=BaseModelOutput(last_hidden_state=self.encoded),
            attention_mask=None if self.mask is None else dl.as_tensor(self.mask),
            past_key_values=self.cache, use_cache=self.cache is not None, logits_to_keep=1)
        self.fed = length
        return out.logits.array[:, -1].astype("float32", copy=True)

    def repeat(self, times: int) -> None:
        """Each row becomes `times` consecutive rows (one per beam)."""
        xp = self.encoded.device.xp
        self.encoded = dl.as_tensor(xp.repeat(self.encoded.array, times, axis=0))
        if self.mask is not None:
            self.mask = xp.repeat(self.mask, times, axis=0)
        if self.cache is not None:
            self.cache.repeat_interleave(times)

    def reorder(self, rows) -> None:
        """Row i continues from row `rows[i]` (beams of one prompt share the encoder output,
        so only the decoder's cache moves)."""
        if self.cache is not None:
            self.cache.reorder(rows)


class Seq2SeqGenerationMixin(GenerationMixin):
    """`generate` for an encoder–decoder whose forward takes (attention_mask,
    decoder_input_ids, encoder_outputs, past_key_values, use_cache, logits_to_keep) and
    has `encoder`. The arguments are GenerationMixin.generate's; the result is the decoder's
    tokens, starting with `config.decoder_start_token_id`, and lengths (`max_length`,
    default 20) count decoder tokens, as in transformers."""

    def _start_length(self, ids: Tensor) -> int:
        return 1

    def _decoding_setup(self, ids: Tensor, attention_mask, pad, eos, copies: int,
                        max_length: int, use_cache: bool):
        start_id = self.config.decoder_start_token_id
        if start_id is None:
            raise ValueError(f"generate: {type(self).__name__} needs "
                             "config.decoder_start_token_id, the decoder's first token")
        xp = ids.device.xp
        mask = self._prompt_mask(ids, attention_mask, pad, eos)
        encoded = self.encoder(ids, None if mask is None else dl.as_tensor(mask))
        states = encoded.last_hidden_state
        if copies > 1:
            states = dl.as_tensor(xp.repeat(states.array, copies, axis=0))
            mask = None if mask is None else xp.repeat(mask, copies, axis=0)
        start = xp.full((states.shape[0], 1), start_id, dtype=ids.array.dtype)
        # the decoder has no padding: the processors see no prompt mask
        return start, None, Seq2SeqFeed(self, states, mask, use_cache, max_length)
