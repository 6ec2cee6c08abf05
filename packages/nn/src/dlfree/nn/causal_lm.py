"""`CausalTransformer`: a decoder-only (GPT-style) language model built from scratch, with
learned or rotary positions, pre-norm blocks, optional weight tying and a key/value cache
(`CausalTransformerCache`) so that generation feeds one token per step."""

from __future__ import annotations

import math

import dlfree as dl
from dlfree import DTypeError, ShapeError, Tensor
from dlfree import functional as F

from . import init
from .containers import ModuleList
from .layers._common import check_choice, check_count, check_probability
from .layers.dropout import Dropout
from .layers.embedding import Embedding
from .layers.linear import Linear
from .layers.normalization import LayerNorm
from .module import Module

__all__ = ["CausalTransformer", "CausalTransformerCache"]

_LAYER = "CausalTransformer"
POSITIONS = ("learned", "rotary")


class CausalTransformerCache:
    """The keys and values every layer of a `CausalTransformer` has seen, for generation.

    Each layer's buffers, (batch, heads, capacity, head_dim), are allocated once, at the
    first update, for the model's whole context (`capacity` = its `max_len`): appending a
    token writes one position and never copies the prefix. The cache holds arrays without
    autograd history; a cached pass is inference (see `CausalTransformer.forward`).
    """

    def __init__(self, capacity: int):
        self.capacity = check_count(capacity, "capacity", "CausalTransformerCache")
        self._keys: list = []
        self._values: list = []
        self._lengths: list[int] = []
        self._xp = None  # the array module of the buffers, known at the first update

    def get_seq_length(self, layer: int = 0) -> int:
        """How many positions `layer` holds (0 before the first update)."""
        return self._lengths[layer] if layer < len(self._lengths) else 0

    def update(self, layer: int, key: Tensor, value: Tensor) -> tuple[Tensor, Tensor]:
        """Write `key` and `value` (batch, heads, new, head_dim) after `layer`'s cached
        positions; return all of that layer's keys and values so far (views, no copy)."""
        while len(self._keys) <= layer:
            self._keys.append(None)
            self._values.append(None)
            self._lengths.append(0)
        start = self._lengths[layer]
        end = start + key.shape[2]
        if end > self.capacity:
            raise ShapeError(f"CausalTransformerCache.update: layer {layer} holds {start} "
                             f"positions and cannot take {key.shape[2]} more: its capacity "
                             f"is {self.capacity}")
        if self._keys[layer] is None:
            self._xp, (batch, heads, _, dim) = key.device.xp, key.shape
            shape = (batch, heads, self.capacity, dim)
            self._keys[layer] = self._xp.empty(shape, key.array.dtype)
            self._values[layer] = self._xp.empty(shape, value.array.dtype)
        keys, values = self._keys[layer], self._values[layer]
        held = (keys.shape[0], keys.shape[1], keys.shape[3])
        if (key.shape[0], key.shape[1], key.shape[3]) != held:
            raise ShapeError(f"CausalTransformerCache.update: layer {layer} caches (batch, "
                             f"heads, head_dim) = {held}, got keys of shape "
                             f"{tuple(key.shape)}")
        keys[:, :, start:end] = key.array
        values[:, :, start:end] = value.array
        self._lengths[layer] = end
        return dl.as_tensor(keys[:, :, :end]), dl.as_tensor(values[:, :, :end])

    def reorder(self, indices) -> None:
        """Keep batch rows `indices` (a Tensor or a sequence of ints), in that order (beam
        search: each new beam takes its parent's keys and values)."""
        for i, keys in enumerate(self._keys):
            if keys is not None:
                index = indices.array if isinstance(indices, Tensor) else \
                    self._xp.asarray(indices)
                self._keys[i], self._values[i] = keys[index], self._values[i][index]

    def repeat_interleave(self, repeats: int) -> None:
        """Repeat every batch row `repeats` times in place (one prompt's cache per beam)."""
        for i, keys in enumerate(self._keys):
            if keys is not None:
                self._keys[i] = keys.repeat(repeats, axis=0)
                self._values[i] = self._values[i].repeat(repeats, axis=0)


def _rotary_tables(max_len: int, head_dim: int, theta: float, device, dtype):
    """cos and signed sin, (max_len, head_dim), for rotating pairs (i, i + head_dim/2) by
    position × theta^(-2i/head_dim); computed in float64, then cast to `dtype`."""
    frequencies = dl.exp(dl.arange(0, head_dim, 2, dtype=dl.float64) *
                         (-math.log(theta) / head_dim))
    angles = dl.arange(max_len, dtype=dl.float64).unsqueeze(1) * frequencies
    cos, sin = angles.cos(), angles.sin()
    cos, signed_sin = dl.cat([cos, cos], dim=-1), dl.cat([-sin, sin], dim=-1)
    dtype = dtype or dl.get_default_dtype()
    return cos.to(device=device, dtype=dtype), signed_sin.to(device=device, dtype=dtype)


def _rotate(x: Tensor, cos: Tensor, signed_sin: Tensor) -> Tensor:
    """x (batch, heads, length, head_dim) with each pair (i, i + head_dim/2) rotated: the
    halves swapped (a roll) times the signed sin gives rotate_half(x) · sin."""
    return x * cos + x.roll(x.shape[-1] // 2, dims=-1) * signed_sin


class CausalSelfAttention(Module):
    """Multi-head self-attention in which each position attends to itself and the positions
    before it (and to those in the cache): `qkv` projects to queries, keys and values in one
    GEMM, `proj` mixes the heads back."""

    def __init__(self, d_model: int, n_heads: int, dropout: float, bias: bool, device=None,
                 dtype=None):
        super().__init__()
        self.n_heads, self.head_dim = n_heads, d_model // n_heads
        self.dropout = dropout
        self.qkv = Linear(d_model, 3 * d_model, bias=bias, device=device, dtype=dtype)
        self.proj = Linear(d_model, d_model, bias=bias, device=device, dtype=dtype)
        self.resid_dropout = Dropout(dropout)

    def forward(self, x: Tensor, batch: int, rotary, cache, layer: int) -> Tensor:
        """x is (batch · length, width): the residual stream stays 2-D, so that the linear
        layers run without reshapes; only attention sees (batch, heads, length, head_dim)."""
        length, width = x.shape[0] // batch, x.shape[1]
        q, k, v = self.qkv(x).reshape(batch, length, 3, self.n_heads,
                                      self.head_dim).permute(2, 0, 3, 1, 4).unbind(0)
        if rotary is not None:
            q, k = _rotate(q, *rotary), _rotate(k, *rotary)
        start = 0
        if cache is not None:
            start = cache.get_seq_length(layer)
            k, v = cache.update(layer, k, v)
        dropout = self.dropout if self.training else 0.0
        if start == 0:
            out = F.scaled_dot_product_attention(q, k, v, dropout_p=dropout, is_causal=True)
        else:  # the cached prefix is visible to every new query; the new ones causally
            mask = None if length == 1 else dl.ones(length, start + length, dtype=dl.bool,
                                                    device=x.device).tril(start)
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout)
        return self.resid_dropout(self.proj(out.transpose(1, 2).reshape(batch * length, width)))


class CausalBlock(Module):
    """A pre-norm Transformer block: x + attention(norm1(x)), then + mlp(norm2(x)), the MLP
    being fc1 → GELU → fc2."""

    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float, bias: bool,
                 norm_eps: float, device=None, dtype=None):
        super().__init__()
        factory = {"device": device, "dtype": dtype}
        self.norm1 = LayerNorm(d_model, eps=norm_eps, bias=bias, **factory)
        self.attn = CausalSelfAttention(d_model, n_heads, dropout, bias, **factory)
        self.norm2 = LayerNorm(d_model, eps=norm_eps, bias=bias, **factory)
        self.fc1 = Linear(d_model, d_ff, bias=bias, **factory)
        self.fc2 = Linear(d_ff, d_model, bias=bias, **factory)
        self.mlp_dropout = Dropout(dropout)

    def forward(self, x: Tensor, batch: int, rotary, cache, layer: int) -> Tensor:
        """x is (batch · length, d_model), as CausalSelfAttention takes it."""
        x = x + self.attn(self.norm1(x), batch, rotary, cache, layer)
        return x + self.mlp_dropout(self.fc2(F.gelu(self.fc1(self.norm2(x)))))


class CausalTransformer(Module):
    """A decoder-only language model: token embeddings (`tok_emb`) plus learned position
    embeddings (`pos_emb`) or rotary positions in every attention, dropout, `n_layers`
    pre-norm blocks (`blocks.i`: norm1, attn.qkv, attn.proj, norm2, fc1, fc2), a final
    LayerNorm (`norm`) and the LM head (`lm_head`, no bias), whose weight is the token
    table itself with `tie_weights`.

    `model(ids)` gives the next-token logits (batch, seq, vocab) for int64 ids (batch,
    seq). For generation, `cache = model.new_cache()` then `model(prompt, cache=cache)` and
    `model(next_ids, cache=cache)`: positions continue from what the cache holds and the new
    tokens attend to the cached keys and values, so no prefix is recomputed. At most
    `max_len` positions in all. Weights start as GPT-2's: N(0, 0.02), the projections into
    the residual stream scaled by 1/sqrt(2·n_layers), biases zero.
    """

    def __init__(self, vocab_size: int, max_len: int = 256, d_model: int = 128,
                 n_heads: int = 4, n_layers: int = 4, d_ff: int | None = None,
                 dropout: float = 0.0, positions: str = "learned", tie_weights: bool = True,
                 bias: bool = True, norm_eps: float = 1e-5, rope_theta: float = 10_000.0,
                 device=None, dtype=None):
        super().__init__()
        self.vocab_size = check_count(vocab_size, "vocab_size", _LAYER)
        self.max_len = check_count(max_len, "max_len", _LAYER)
        self.d_model = check_count(d_model, "d_model", _LAYER)
        self.n_heads = check_count(n_heads, "n_heads", _LAYER)
        self.n_layers = check_count(n_layers, "n_layers", _LAYER)
        d_ff = 4 * d_model if d_ff is None else check_count(d_ff, "d_ff", _LAYER)
        self.positions = check_choice(positions, "positions", _LAYER, POSITIONS)
        check_probability(dropout, _LAYER)
        if d_model % n_heads:
            raise ValueError(f"{_LAYER}: d_model ({d_model}) must be divisible by n_heads "
                             f"({n_heads})")
        head_dim = d_model // n_heads
        if positions == "rotary" and head_dim % 2:
            raise ValueError(f"{_LAYER}: rotary positions rotate pairs of dims, so the head "
                             f"size d_model / n_heads must be even, got {head_dim}")
        if not rope_theta > 0:
            raise ValueError(f"{_LAYER}: rope_theta must be > 0, got {rope_theta!r}")
        factory = {"device": device, "dtype": dtype}
        self.tok_emb = Embedding(vocab_size, d_model, **factory)
        if positions == "learned":
            self.pos_emb = Embedding(max_len, d_model, **factory)
        else:
            cos, signed_sin = _rotary_tables(max_len, head_dim, rope_theta, device, dtype)
            self.register_buffer("rotary_cos", cos, persistent=False)
            self.register_buffer("rotary_sin", signed_sin, persistent=False)
        self.drop = Dropout(dropout)
        self.blocks = ModuleList([CausalBlock(d_model, n_heads, d_ff, dropout, bias, norm_eps,
                                              **factory) for _ in range(n_layers)])
        self.norm = LayerNorm(d_model, eps=norm_eps, bias=bias, **factory)
        self.lm_head = Linear(d_model, vocab_size, bias=False, **factory)
        self._reset_parameters()
        if tie_weights:
            self.lm_head.weight = self.tok_emb.weight

    def _reset_parameters(self) -> None:
        residual_std = 0.02 / math.sqrt(2 * self.n_layers)
        for name, param in self.named_parameters():
            if name.endswith("bias"):
                init.zeros_(param)
            elif param.ndim > 1:
                std = residual_std if name.endswith(("attn.proj.weight", "fc2.weight")) \
                    else 0.02
                init.normal_(param, 0.0, std)

    def new_cache(self) -> CausalTransformerCache:
        """An empty key/value cache for `forward(ids, cache=...)`, room for `max_len`
        positions in every layer (allocated at the first cached pass)."""
        return CausalTransformerCache(self.max_len)

    def forward(self, ids: Tensor, cache: CausalTransformerCache | None = None) -> Tensor:
        """Logits (batch, seq, vocab) for `ids` (batch, seq) of int64 in [0, vocab_size).

        With a cache the ids continue what it holds (their positions start at its length)
        and their keys and values are appended to it. A cached pass is inference: it runs
        without recording autograd (the cache keeps no history), so train without one."""
        start = self._check_ids(ids, cache)
        if cache is None:
            return self._logits(ids, start, None)
        with dl.no_grad():
            return self._logits(ids, start, cache)

    def _logits(self, ids: Tensor, start: int, cache) -> Tensor:
        (batch, length), end = ids.shape, start + ids.shape[1]
        x = self.tok_emb(ids)
        rotary = None
        if self.positions == "learned":
            x = x + self.pos_emb.weight[start:end]
        else:
            rotary = (self.rotary_cos[start:end], self.rotary_sin[start:end])
        x = self.drop(x).reshape(batch * length, self.d_model)
        for i, block in enumerate(self.blocks):
            x = block(x, batch, rotary, cache, i)
        return self.lm_head(self.norm(x)).reshape(batch, length, self.vocab_size)

    def _check_ids(self, ids, cache) -> int:
        """The position of ids' first token (the cache length); raises for bad ids."""
        if not isinstance(ids, Tensor):
            raise TypeError(f"{_LAYER}: ids must be a Tensor of int64 token ids, got "
                            f"{type(ids).__name__}")
        if ids.dtype.is_floating_point or ids.dtype == dl.bool or ids.dtype.is_complex:
            raise DTypeError(f"{_LAYER}: ids must be integer token ids, got {ids.dtype}")
        if ids.ndim != 2 or ids.shape[1] == 0:
            raise ShapeError(f"{_LAYER}: ids must be (batch, seq) with seq >= 1, got shape "
                             f"{tuple(ids.shape)}")
        if cache is not None and not isinstance(cache, CausalTransformerCache):
            raise TypeError(f"{_LAYER}: cache must come from model.new_cache(), got "
                            f"{type(cache).__name__}")
        start = 0 if cache is None else cache.get_seq_length()
        if start + ids.shape[1] > self.max_len:
            held = f" after the {start} positions in the cache" if start else ""
            raise ShapeError(f"{_LAYER}: {ids.shape[1]} tokens{held} exceed max_len = "
                             f"{self.max_len}, the context the model was built for")
        low, high = int(ids.array.min()), int(ids.array.max())  # not ops: nothing to record
        if low < 0 or high >= self.vocab_size:
            raise IndexError(f"{_LAYER}: token ids must be in [0, vocab_size = "
                             f"{self.vocab_size}), got ids from {low} to {high}")
        return start

    def extra_repr(self) -> str:
        return f"vocab_size={self.vocab_size}, max_len={self.max_len}, " \
            f"d_model={self.d_model}, n_heads={self.n_heads}, n_layers={self.n_layers}, " \
            f"positions={self.positions!r}"
