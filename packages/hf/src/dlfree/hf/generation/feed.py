"""The feed of an HF causal LM for the decoding loops of dlfree.nn.decoding: HF models take
the cache, the attention mask and the positions as keyword arguments."""

from __future__ import annotations

import dlfree as dl

from .cache import KVCache

__all__ = ["ModelFeed"]


class ModelFeed:
    """Runs a causal LM while decoding: the prompt first, then only each step's new token,
    attending over the KV cache (or, with `use_cache=False`, the whole sequence again).

    `mask` and `positions` are (rows, max_length) arrays covering the prompt and every
    token still to come (None when there is no padding)."""

    def __init__(self, model, mask, positions, use_cache: bool, capacity: int, device):
        self.model, self.mask, self.positions, self.xp = model, mask, positions, device.xp
        self.cache = KVCache(reserve=capacity) if use_cache else None
        self.fed = 0

    def next_logits(self, tokens, length: int):
        """float32 logits (rows, vocab) of the token after `tokens[:, :length]`."""
        start = self.fed if self.cache is not None else 0
        out = self.model(
            dl.as_tensor(tokens[:, start:length]),
            attention_mask=None if self.mask is None else dl.as_tensor(self.mask[:, :length]),
            position_ids=None if self.positions is None
            else dl.as_tensor(self.positions[:, start:length]),
            past_key_values=self.cache, use_cache=self.cache is not None, logits_to_keep=1)
        self.fed = length
        logits = out.logits.array[:, -1]
        return logits.astype("float32", copy=True)

    def repeat(self, times: int) -> None:
        """Each row becomes `times` consecutive rows (one per beam)."""
        if self.mask is not None:
            self.mask = self.xp.repeat(self.mask, times, axis=0)
            self.positions = self.xp.repeat(self.positions, times, axis=0)
        if self.cache is not None:
            self.cache.repeat_interleave(times)

    def reorder(self, rows) -> None:
        """Row i continues from row `rows[i]` (beams within one prompt share mask and
        positions, so only the cache moves)."""
        if self.cache is not None:
            self.cache.reorder(rows)
