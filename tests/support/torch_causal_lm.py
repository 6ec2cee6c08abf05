"""`TorchCausalTransformer`: dlfree.nn.CausalTransformer written independently in plain
PyTorch, with the same parameter names, for parity tests (weights are copied by state_dict).

    theirs = TorchCausalTransformer(vocab_size=11, max_len=16, d_model=8, n_heads=2)
    torch_to_dl(theirs, ours)
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat([-x[..., half:], x[..., :half]], dim=-1)


class _Attention(nn.Module):
    def __init__(self, d_model: int, n_heads: int, bias: bool):
        super().__init__()
        self.n_heads = n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=bias)
        self.proj = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x, rotary):
        batch, length, width = x.shape
        q, k, v = self.qkv(x).view(batch, length, 3, self.n_heads, -1).permute(2, 0, 3, 1, 4)
        if rotary is not None:
            cos, sin = rotary
            q, k = q * cos + _rotate_half(q) * sin, k * cos + _rotate_half(k) * sin
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(out.transpose(1, 2).reshape(batch, length, width))


class _Block(nn.Module):
    def __init__(self, d_model: int, n_heads: int, d_ff: int, bias: bool, eps: float):
        super().__init__()
        self.norm1 = nn.LayerNorm(d_model, eps=eps, bias=bias)
        self.attn = _Attention(d_model, n_heads, bias)
        self.norm2 = nn.LayerNorm(d_model, eps=eps, bias=bias)
        self.fc1 = nn.Linear(d_model, d_ff, bias=bias)
        self.fc2 = nn.Linear(d_ff, d_model, bias=bias)

    def forward(self, x, rotary):
        x = x + self.attn(self.norm1(x), rotary)
        return x + self.fc2(F.gelu(self.fc1(self.norm2(x))))


class TorchCausalTransformer(nn.Module):
    """The same decoder-only model (no dropout): token (+ learned position) embeddings or
    rotary positions (rotate_half form, theta^(-2i/d)), pre-norm blocks, final norm, LM head
    optionally tied to the token table."""

    def __init__(self, vocab_size: int, max_len: int, d_model: int, n_heads: int,
                 n_layers: int = 2, d_ff: int | None = None, positions: str = "learned",
                 tie_weights: bool = True, bias: bool = True, norm_eps: float = 1e-5,
                 rope_theta: float = 10_000.0):
        super().__init__()
        self.positions = positions
        self.tok_emb = nn.Embedding(vocab_size, d_model)
        if positions == "learned":
            self.pos_emb = nn.Embedding(max_len, d_model)
        else:
            head_dim = d_model // n_heads
            inv_freq = rope_theta ** (-torch.arange(0, head_dim, 2, dtype=torch.float64)
                                      / head_dim)
            angles = torch.outer(torch.arange(max_len, dtype=torch.float64), inv_freq)
            angles = torch.cat([angles, angles], dim=-1)
            self.register_buffer("cos", angles.cos().float(), persistent=False)
            self.register_buffer("sin", angles.sin().float(), persistent=False)
        d_ff = d_ff or 4 * d_model
        self.blocks = nn.ModuleList([_Block(d_model, n_heads, d_ff, bias, norm_eps)
                                     for _ in range(n_layers)])
        self.norm = nn.LayerNorm(d_model, eps=norm_eps, bias=bias)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)
        if tie_weights:
            self.lm_head.weight = self.tok_emb.weight

    def forward(self, ids):
        length = ids.shape[1]
        x = self.tok_emb(ids)
        rotary = None
        if self.positions == "learned":
            x = x + self.pos_emb.weight[:length]
        else:
            rotary = (self.cos[:length], self.sin[:length])
        for block in self.blocks:
            x = block(x, rotary)
        return self.lm_head(self.norm(x))
