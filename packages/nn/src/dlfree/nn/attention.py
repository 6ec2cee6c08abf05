"""`MultiheadAttention`: torch.nn's multi-head attention layer, all heads in batched matmuls
through F.scaled_dot_product_attention, with torch's masks, weights and parameter names."""

from __future__ import annotations

import math

import dlfree as dl
from dlfree import DTypeError, ShapeError
from dlfree import functional as F

from . import init
from .layers._common import check_count, check_probability, empty_parameter
from .layers.linear import Linear
from .module import Module

__all__ = ["MultiheadAttention"]


def additive_mask(mask, dtype, name: str, layer: str):
    """A bool mask (True = masked out) as a float mask of `dtype` holding -inf where masked
    and 0 elsewhere; a float mask as it is (torch's rule for attention masks)."""
    if mask is None:
        return None
    if not isinstance(mask, dl.Tensor):
        raise TypeError(f"{layer}: {name} must be a Tensor or None, got {type(mask).__name__}")
    if mask.dtype == dl.bool:
        # a where over the mask (not zeros of its shape) so a traced graph follows its size
        return dl.where(mask, dl.tensor(float("-inf"), dtype=dtype, device=mask.device),
                        dl.tensor(0.0, dtype=dtype, device=mask.device))
    if not mask.is_floating_point():
        raise DTypeError(f"{layer}: {name} must be bool (True = masked out) or floating "
                         f"(added to the scores), got {mask.dtype}")
    return mask


class MultiheadAttention(Module):
    """Attention with `num_heads` heads over embeddings of size `embed_dim`.

    The query, key and value are projected by `in_proj_weight` (3·embed_dim, embed_dim) when
    kdim and vdim equal embed_dim, else by `q_proj_weight`, `k_proj_weight` and
    `v_proj_weight`; `in_proj_bias` (3·embed_dim) and `out_proj` follow. `add_bias_kv`
    appends the learned `bias_k`/`bias_v` to the key and value sequences, `add_zero_attn`
    a zero key and value. Inputs are (L, N, E), (N, L, E) with `batch_first`, or unbatched
    (L, E). The projections start xavier-uniform, their biases at zero.
    """

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim: int | None = None,
                 vdim: int | None = None, batch_first: bool = False, device=None, dtype=None):
        super().__init__()
        self.embed_dim = check_count(embed_dim, "embed_dim", "MultiheadAttention")
        self.num_heads = check_count(num_heads, "num_heads", "MultiheadAttention")
        if embed_dim % num_heads:
            raise ValueError(f"MultiheadAttention: embed_dim ({embed_dim}) must be divisible by "
                             f"num_heads ({num_heads})")
        self.kdim = embed_dim if kdim is None else check_count(kdim, "kdim", "MultiheadAttention")
        self.vdim = embed_dim if vdim is None else check_count(vdim, "vdim", "MultiheadAttention")
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.dropout = check_probability(dropout, "MultiheadAttention")
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        self.add_zero_attn = add_zero_attn
        factory = {"device": device, "dtype": dtype}
        if self._qkv_same_embed_dim:
            self.in_proj_weight = empty_parameter(3 * embed_dim, embed_dim, **factory)
            for name in ("q_proj_weight", "k_proj_weight", "v_proj_weight"):
                self.register_parameter(name, None)
        else:
            self.q_proj_weight = empty_parameter(embed_dim, embed_dim, **factory)
            self.k_proj_weight = empty_parameter(embed_dim, self.kdim, **factory)
            self.v_proj_weight = empty_parameter(embed_dim, self.vdim, **factory)
            self.register_parameter("in_proj_weight", None)
        if bias:
            self.in_proj_bias = empty_parameter(3 * embed_dim, **factory)
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = Linear(embed_dim, embed_dim, bias=bias, **factory)
        if add_bias_kv:
            self.bias_k = empty_parameter(1, 1, embed_dim, **factory)
            self.bias_v = empty_parameter(1, 1, embed_dim, **factory)
        else:
            self.register_parameter("bias_k", None)
            self.register_parameter("bias_v", None)
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        for weight in (self.in_proj_weight, self.q_proj_weight, self.k_proj_weight,
                       self.v_proj_weight):
            if weight is not None:
                init.xavier_uniform_(weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        for extra in (self.bias_k, self.bias_v):
            if extra is not None:
                init.xavier_normal_(extra)

    def forward(self, query, key, value, key_padding_mask=None, need_weights: bool = True,
                attn_mask=None, average_attn_weights: bool = True, is_causal: bool = False):
        """Attend from `query` (L) to `key`/`value` (S); returns (output, weights).

        `key_padding_mask` (N, S) and `attn_mask` (L, S) or (N·num_heads, L, S) are bool
        (True = may not attend) or float (added to the scores). `is_causal` is a hint that
        `attn_mask` is the causal mask (it must still be given, as in torch); without a key
        padding mask and weights it lets attention skip the masked half. `weights` is None
        unless `need_weights`: (N, L, S) averaged over heads, or (N, num_heads, L, S).
        """
        layer = "MultiheadAttention"
        batched = self._check_shapes(query, key, value, key_padding_mask, attn_mask)
        self_attention, shared_kv = query is key and key is value, key is value
        if batched and not self.batch_first:  # internally batch-major: (N, L, E)
            query, key, value = (t.transpose(0, 1) for t in (query, key, value))
        elif not batched:
            query, key, value = (t.unsqueeze(0) for t in (query, key, value))
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        batch, target, source = query.shape[0], query.shape[1], key.shape[1]
        key_padding_mask = additive_mask(key_padding_mask, query.dtype, "key_padding_mask",
                                         layer)
        if is_causal and attn_mask is None:
            raise ValueError(f"{layer}: is_causal=True is a hint that attn_mask is the causal "
                             "mask and needs attn_mask too (as in torch); build it with "
                             "Transformer.generate_square_subsequent_mask(L)")
        causal = is_causal and key_padding_mask is None and not need_weights
        attn_mask = None if causal else additive_mask(attn_mask, query.dtype, "attn_mask",
                                                      layer)
        self._check_masks(key_padding_mask, attn_mask, batch, target, source)
        q, k, v = self._project(query, key, value, self_attention, shared_kv)
        if self.bias_k is not None:
            k = dl.cat([k, self.bias_k.expand(batch, 1, self.embed_dim)], 1)
            v = dl.cat([v, self.bias_v.expand(batch, 1, self.embed_dim)], 1)
            attn_mask, key_padding_mask = _pad_keys(attn_mask, key_padding_mask)
        q, k, v = (self._split_heads(t) for t in (q, k, v))
        if self.add_zero_attn:
            zeros = dl.zeros(batch, self.num_heads, 1, self.head_dim, dtype=k.dtype,
                             device=k.device)
            k, v = dl.cat([k, zeros], 2), dl.cat([v, zeros], 2)
            attn_mask, key_padding_mask = _pad_keys(attn_mask, key_padding_mask)
        mask = self._merge_masks(attn_mask, key_padding_mask, batch)
        dropout = self.dropout if self.training else 0.0
        weights = None
        if need_weights:
            scores = (q * (1.0 / math.sqrt(self.head_dim))) @ k.transpose(-2, -1)
            weights = F.softmax(scores if mask is None else scores + mask, -1)
            if dropout:  # torch returns the weights after dropout
                weights = F.dropout(weights, dropout, True)
            out = weights @ v
            if average_attn_weights:
                weights = weights.mean(1)
        else:
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout,
                                                 is_causal=causal)
        out = F.linear(out.transpose(1, 2).reshape(batch, target, self.embed_dim),
                       self.out_proj.weight, self.out_proj.bias)
        if not batched:
            return out[0], None if weights is None else weights[0]
        return (out if self.batch_first else out.transpose(0, 1)), weights

    def _check_shapes(self, query, key, value, key_padding_mask, attn_mask) -> bool:
        """Whether the input is batched; raises for shapes torch rejects."""
        layer = "MultiheadAttention"
        for name, t in (("query", query), ("key", key), ("value", value)):
            if not isinstance(t, dl.Tensor):
                raise TypeError(f"{layer}: {name} must be a Tensor, got {type(t).__name__}")
        shapes = (f"query {tuple(query.shape)}, key {tuple(key.shape)}, value "
                  f"{tuple(value.shape)}")
        if query.ndim not in (2, 3) or key.ndim != query.ndim or value.ndim != query.ndim:
            raise ShapeError(f"{layer}: query, key and value must all be 3-D (batched) or all "
                             f"2-D (unbatched), got {shapes}")
        if query.shape[-1] != self.embed_dim or key.shape[-1] != self.kdim or \
                value.shape[-1] != self.vdim or key.shape[:-1] != value.shape[:-1]:
            raise ShapeError(f"{layer}: expected feature sizes query {self.embed_dim}, key "
                             f"{self.kdim}, value {self.vdim} and key and value of one length "
                             f"and batch, got {shapes}")
        batch_dim = 0 if self.batch_first else 1
        if query.ndim == 3 and query.shape[batch_dim] != key.shape[batch_dim]:
            raise ShapeError(f"{layer}: query and key have different batch sizes: {shapes} "
                             f"(batch_first={self.batch_first})")
        if key_padding_mask is not None and key_padding_mask.ndim != query.ndim - 1:
            raise ShapeError(f"{layer}: key_padding_mask must be (N, S), or (S,) for "
                             f"unbatched input, got {tuple(key_padding_mask.shape)}")
        if attn_mask is not None and attn_mask.ndim not in (2, 3):
            raise ShapeError(f"{layer}: attn_mask must be (L, S) or (N*num_heads, L, S), got "
                             f"{tuple(attn_mask.shape)}")
        return query.ndim == 3

    def _check_masks(self, key_padding_mask, attn_mask, batch: int, target: int,
                     source: int) -> None:
        layer = "MultiheadAttention"
        if key_padding_mask is not None and tuple(key_padding_mask.shape) != (batch, source):
            raise ShapeError(f"{layer}: key_padding_mask must be (N, S) = {(batch, source)}, "
                             f"got {tuple(key_padding_mask.shape)}")
        if attn_mask is not None:
            valid = [(target, source), (batch * self.num_heads, target, source)]
            if tuple(attn_mask.shape) not in valid:
                raise ShapeError(f"{layer}: attn_mask must be (L, S) = {valid[0]} or "
                                 f"(N*num_heads, L, S) = {valid[1]}, got "
                                 f"{tuple(attn_mask.shape)}")

    def _project(self, query, key, value, self_attention: bool, shared_kv: bool) -> tuple:
        """The input projections, sharing one GEMM where the inputs are one tensor."""
        e, bias = self.embed_dim, self.in_proj_bias
        if not self._qkv_same_embed_dim:
            bq, bk, bv = (None,) * 3 if bias is None else (bias[:e], bias[e:2 * e], bias[2 * e:])
            return (F.linear(query, self.q_proj_weight, bq), F.linear(key, self.k_proj_weight, bk),
                    F.linear(value, self.v_proj_weight, bv))
        weight = self.in_proj_weight
        if self_attention:
            return F.linear(query, weight, bias).split(e, -1)
        q = F.linear(query, weight[:e], None if bias is None else bias[:e])
        if shared_kv:
            return (q, *F.linear(key, weight[e:], None if bias is None else bias[e:]).split(e, -1))
        return (q, F.linear(key, weight[e:2 * e], None if bias is None else bias[e:2 * e]),
                F.linear(value, weight[2 * e:], None if bias is None else bias[2 * e:]))

    def _split_heads(self, t):
        """(N, S, E) -> (N, num_heads, S, head_dim), a view where the layout allows."""
        return t.reshape(t.shape[0], t.shape[1], self.num_heads, self.head_dim).transpose(1, 2)

    def _merge_masks(self, attn_mask, key_padding_mask, batch: int):
        """One float mask that broadcasts to the scores (N, num_heads, L, S), or None."""
        if attn_mask is not None and attn_mask.ndim == 3:
            attn_mask = attn_mask.reshape(batch, self.num_heads, *attn_mask.shape[1:])
        if key_padding_mask is None:
            return attn_mask
        key_padding_mask = key_padding_mask.reshape(batch, 1, 1, key_padding_mask.shape[-1])
        return key_padding_mask if attn_mask is None else attn_mask + key_padding_mask

    def extra_repr(self) -> str:
        return f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, " \
            f"dropout={self.dropout}, batch_first={self.batch_first}"


def _pad_keys(attn_mask, key_padding_mask) -> tuple:
    """Both masks widened by one attendable key at the end."""
    return tuple(None if m is None else F.pad(m, (0, 1)) for m in (attn_mask, key_padding_mask))
