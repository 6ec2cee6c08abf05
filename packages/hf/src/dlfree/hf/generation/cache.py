"""`KVCache`: the keys and values every attention layer has seen, so that a decoding step feeds
only its new tokens and attends over the cached prefix instead of recomputing it.
"""

from __future__ import annotations

import dlfree as dl
from dlfree import AutogradError, ShapeError, Tensor

__all__ = ["KVCache", "EncoderDecoderCache"]


class _LayerCache:
    """One layer's keys and values in buffers of shape (batch, heads, capacity, head_dim), the
    first `length` positions filled."""

    __slots__ = ("keys", "values", "length", "xp")

    def __init__(self):
        self.keys = self.values = self.xp = None
        self.length = 0


class KVCache:
    """Keys and values per attention layer, for inference (as transformers' `DynamicCache`).

    Each layer's buffer is preallocated (`reserve`) or grows by doubling, so appending a token
    copies one position, not the whole prefix; `update` returns views of the filled part. The
    cache holds values without autograd history: cached passes run under `dl.no_grad()`.
    """

    def __init__(self, reserve: int = 0):
        if not isinstance(reserve, int) or isinstance(reserve, bool) or reserve < 0:
            raise ValueError(f"KVCache: reserve must be an int >= 0 (positions to preallocate), "
                             f"got {reserve!r}")
        self._reserve = reserve
        self._layers: list[_LayerCache] = []

    def get_seq_length(self, layer: int = 0) -> int:
        """How many positions the cache holds (those of `layer`; 0 before the first update)."""
        return self._layers[layer].length if layer < len(self._layers) else 0

    def __len__(self) -> int:
        return len(self._layers)

    def update(self, layer: int, key: Tensor, value: Tensor) -> tuple[Tensor, Tensor]:
        """Append `key` and `value` (batch, heads, new, head_dim) to `layer`'s cache; return all
        of that layer's keys and values so far (views into the cache)."""
        if dl.is_grad_enabled() and (key.requires_grad or value.requires_grad):
            raise AutogradError("KVCache.update: the cache keeps keys and values without "
                                "autograd history (it is for inference); run cached passes "
                                "under dl.no_grad(), or pass use_cache=False when training")
        while len(self._layers) <= layer:
            self._layers.append(_LayerCache())
        entry = self._layers[layer]
        new = key.shape[-2]
        end = entry.length + new
        if entry.keys is None or end > entry.keys.shape[2]:
            self._grow(entry, key, value, end)
        elif key.shape[:2] != entry.keys.shape[:2] or key.shape[-1] != entry.keys.shape[-1]:
            raise ShapeError(f"KVCache.update: layer {layer} caches (batch, heads, _, head_dim) "
                             f"= {tuple(entry.keys.shape[:2]) + (entry.keys.shape[-1],)}, "
                             f"got keys of shape {tuple(key.shape)}")
        entry.keys[:, :, entry.length:end] = key.array
        entry.values[:, :, entry.length:end] = value.array
        entry.length = end
        return self.get(layer)

    def get(self, layer: int) -> tuple[Tensor, Tensor]:
        """`layer`'s keys and values so far (views into the cache)."""
        if layer >= len(self._layers) or not self._layers[layer].length:
            raise IndexError(f"KVCache.get: layer {layer} holds nothing yet")
        entry = self._layers[layer]
        return (dl.as_tensor(entry.keys[:, :, :entry.length]),
                dl.as_tensor(entry.values[:, :, :entry.length]))

    def _grow(self, entry: _LayerCache, key: Tensor, value: Tensor, needed: int) -> None:
        xp = key.device.xp
        old = 0 if entry.keys is None else entry.keys.shape[2]
        capacity = max(needed, 2 * old, self._reserve)
        batch, heads, _, dim = key.shape
        keys = xp.empty((batch, heads, capacity, dim), dtype=key.array.dtype)
        values = xp.empty((batch, heads, capacity, value.shape[-1]), dtype=value.array.dtype)
        if entry.length:
            if entry.keys.shape[:2] != (batch, heads):
                raise ShapeError(f"KVCache.update: the cache holds (batch, heads) = "
                                 f"{tuple(entry.keys.shape[:2])}, got keys of shape "
                                 f"{tuple(key.shape)}")
            keys[:, :, :entry.length] = entry.keys[:, :, :entry.length]
            values[:, :, :entry.length] = entry.values[:, :, :entry.length]
        entry.keys, entry.values, entry.xp = keys, values, xp

    def reorder(self, indices) -> None:
        """Keep batch rows `indices` (beam search: each new beam takes its parent's cache)."""
        for entry in self._layers:
            if entry.keys is not None:
                index = indices.array if isinstance(indices, Tensor) else entry.xp.asarray(indices)
                entry.keys, entry.values = entry.keys[index], entry.values[index]

    def repeat_interleave(self, repeats: int) -> None:
        """Repeat every batch row `repeats` times in place (one prompt's cache per beam)."""
        for entry in self._layers:
            if entry.keys is not None:
                entry.keys = entry.xp.repeat(entry.keys, repeats, axis=0)
                entry.values = entry.xp.repeat(entry.values, repeats, axis=0)


class EncoderDecoderCache:
    """An encoder–decoder's caches (as transformers' class of that name): the decoder's
    self-attention keys and values, growing by a token per step, and each layer's
    cross-attention keys and values over the encoder output, computed at the first step and
    read at every later one."""

    def __init__(self, reserve: int = 0):
        self.self_attention = KVCache(reserve)
        self.cross_attention = KVCache()

    def get_seq_length(self, layer: int = 0) -> int:
        """How many decoder positions the cache holds."""
        return self.self_attention.get_seq_length(layer)

    def reorder(self, indices) -> None:
        """Keep batch rows `indices` in both caches (beam search)."""
        self.self_attention.reorder(indices)
        self.cross_attention.reorder(indices)

    def repeat_interleave(self, repeats: int) -> None:
        """Repeat every batch row `repeats` times in both caches."""
        self.self_attention.repeat_interleave(repeats)
        self.cross_attention.repeat_interleave(repeats)
