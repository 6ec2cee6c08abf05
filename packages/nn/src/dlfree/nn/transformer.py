"""The Transformer of "Attention Is All You Need" as torch.nn builds it: encoder and decoder
layers, their stacks and the full encoder-decoder model, with torch's names and masks."""

from __future__ import annotations

import copy

import dlfree as dl
from dlfree import ShapeError
from dlfree import functional as F

from . import init
from .attention import MultiheadAttention, additive_mask
from .containers import ModuleList
from .layers.dropout import Dropout
from .layers.linear import Linear
from .layers.normalization import LayerNorm
from .module import Module

__all__ = ["Transformer", "TransformerEncoder", "TransformerDecoder", "TransformerEncoderLayer",
           "TransformerDecoderLayer"]

_ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu}


def _activation(activation, layer: str):
    """The function for "relu" or "gelu"; a callable (or a Module) as it is."""
    if isinstance(activation, str):
        if activation not in _ACTIVATIONS:
            raise ValueError(f"{layer}: activation must be 'relu', 'gelu' or a callable, got "
                             f"{activation!r}")
        return _ACTIVATIONS[activation]
    if not callable(activation):
        raise TypeError(f"{layer}: activation must be 'relu', 'gelu' or a callable, got "
                        f"{type(activation).__name__}")
    return activation


def _square_subsequent_mask(size: int, device=None, dtype=None):
    return dl.triu(dl.full((size, size), float("-inf"), dtype=dtype, device=device), 1)


def _sequence_length(x, batch_first: bool) -> int:
    return x.shape[0] if x.ndim == 2 else x.shape[1 if batch_first else 0]


def _detect_causal(mask, is_causal, size: int) -> bool:
    """`is_causal` when given; when None, whether `mask` is exactly the causal mask."""
    if is_causal is not None or mask is None:
        return bool(is_causal)
    if tuple(mask.shape) != (size, size):
        return False
    causal = _square_subsequent_mask(size, device=mask.device, dtype=mask.dtype)
    return bool((mask == causal).all())


class TransformerEncoderLayer(Module):
    """Self-attention then a feed-forward block (linear1, activation, linear2), each with
    dropout, a residual connection and a LayerNorm: after the block (post-norm, default) or
    before it (`norm_first`). `activation` is "relu" or "gelu"; a callable works too, but
    then the model cannot be saved to a model file (its config must be JSON)."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation="relu", layer_norm_eps: float = 1e-5,
                 batch_first: bool = False, norm_first: bool = False, bias: bool = True,
                 device=None, dtype=None):
        super().__init__()
        factory = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, **factory)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **factory)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **factory)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.activation = _activation(activation, "TransformerEncoderLayer")

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal: bool = False):
        """src (S, N, E), (N, S, E) with batch_first, or (S, E); masks as in
        MultiheadAttention (`src_mask` is its attn_mask)."""
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            return x + self._ff_block(self.norm2(x))
        x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
        return self.norm2(x + self._ff_block(x))

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal: bool):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           need_weights=False, is_causal=is_causal)[0]
        return self.dropout1(x)

    def _ff_block(self, x):
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerDecoderLayer(Module):
    """Self-attention over the target, attention to the encoder's output (`memory`), then
    a feed-forward block; each with dropout, a residual connection and a LayerNorm (after,
    or before with `norm_first`). `activation` as in TransformerEncoderLayer."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation="relu", layer_norm_eps: float = 1e-5,
                 batch_first: bool = False, norm_first: bool = False, bias: bool = True,
                 device=None, dtype=None):
        super().__init__()
        factory = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout,
                                            batch_first=batch_first, bias=bias, **factory)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout,
                                                 batch_first=batch_first, bias=bias, **factory)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **factory)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **factory)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        self.activation = _activation(activation, "TransformerDecoderLayer")

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal: bool = False,
                memory_is_causal: bool = False):
        """tgt (T, N, E) and memory (S, N, E) (batch first with `batch_first`, or without N);
        `tgt_mask` (T, T) and `memory_mask` (T, S) as MultiheadAttention's attn_mask."""
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask, memory_key_padding_mask,
                                    memory_is_causal)
            return x + self._ff_block(self.norm3(x))
        x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
        x = self.norm2(x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask,
                                           memory_is_causal))
        return self.norm3(x + self._ff_block(x))

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal: bool):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           is_causal=is_causal, need_weights=False)[0]
        return self.dropout1(x)

    def _mha_block(self, x, memory, attn_mask, key_padding_mask, is_causal: bool):
        x = self.multihead_attn(x, memory, memory, attn_mask=attn_mask,
                                key_padding_mask=key_padding_mask, is_causal=is_causal,
                                need_weights=False)[0]
        return self.dropout2(x)

    def _ff_block(self, x):
        return self.dropout3(self.linear2(self.dropout(self.activation(self.linear1(x)))))


def _clones(layer: Module, count: int, owner: str) -> ModuleList:
    if not isinstance(layer, Module):
        raise TypeError(f"{owner}: the layer to stack must be a Module, got "
                        f"{type(layer).__name__}")
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValueError(f"{owner}: num_layers must be an integer >= 1, got {count!r}")
    return ModuleList([copy.deepcopy(layer) for _ in range(count)])


class TransformerEncoder(Module):
    """`num_layers` independent copies of `encoder_layer` (`layers.0`, `layers.1`, ...)
    applied in turn, then `norm` if given. `enable_nested_tensor` and `mask_check` are
    accepted for torch's signature and change nothing: dl.free has no nested tensors, so
    padded positions are computed like the others (torch's nested fast path zeroes them)."""

    def __init__(self, encoder_layer: Module, num_layers: int, norm: Module | None = None,
                 enable_nested_tensor: bool = True, mask_check: bool = True):
        super().__init__()
        self.layers = _clones(encoder_layer, num_layers, "TransformerEncoder")
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        self.mask_check = mask_check

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal: bool | None = None):
        """`is_causal=None` checks whether `mask` is the causal mask, which lets attention
        skip the masked half."""
        layer = "TransformerEncoder"
        src_key_padding_mask = additive_mask(src_key_padding_mask, src.dtype,
                                             "src_key_padding_mask", layer)
        mask = additive_mask(mask, src.dtype, "mask", layer)
        batch_first = self.layers[0].self_attn.batch_first
        is_causal = _detect_causal(mask, is_causal, _sequence_length(src, batch_first))
        output = src
        for module in self.layers:
            output = module(output, src_mask=mask, src_key_padding_mask=src_key_padding_mask,
                            is_causal=is_causal)
        return output if self.norm is None else self.norm(output)


class TransformerDecoder(Module):
    """`num_layers` independent copies of `decoder_layer` (`layers.0`, ...) applied in turn,
    then `norm` if given."""

    def __init__(self, decoder_layer: Module, num_layers: int, norm: Module | None = None):
        super().__init__()
        self.layers = _clones(decoder_layer, num_layers, "TransformerDecoder")
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal: bool | None = None,
                memory_is_causal: bool = False):
        """`tgt_is_causal=None` checks whether `tgt_mask` is the causal mask."""
        batch_first = self.layers[0].self_attn.batch_first
        tgt_is_causal = _detect_causal(tgt_mask, tgt_is_causal,
                                       _sequence_length(tgt, batch_first))
        output = tgt
        for module in self.layers:
            output = module(output, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask,
                            tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)
        return output if self.norm is None else self.norm(output)


class Transformer(Module):
    """The encoder-decoder Transformer: `num_encoder_layers` encoder layers and
    `num_decoder_layers` decoder layers, each stack closed by a LayerNorm, every weight
    matrix xavier-uniform at first. `custom_encoder` / `custom_decoder` replace a stack."""

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6,
                 num_decoder_layers: int = 6, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation="relu", custom_encoder: Module | None = None,
                 custom_decoder: Module | None = None, layer_norm_eps: float = 1e-5,
                 batch_first: bool = False, norm_first: bool = False, bias: bool = True,
                 device=None, dtype=None):
        super().__init__()
        factory = {"device": device, "dtype": dtype}
        layer_args = (d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
                      batch_first, norm_first, bias)
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            self.encoder = TransformerEncoder(
                TransformerEncoderLayer(*layer_args, **factory), num_encoder_layers,
                LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory))
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            self.decoder = TransformerDecoder(
                TransformerDecoderLayer(*layer_args, **factory), num_decoder_layers,
                LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory))
        for param in self.parameters():
            if param.ndim > 1:
                init.xavier_uniform_(param)
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first

    def forward(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None,
                src_key_padding_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, src_is_causal: bool | None = None,
                tgt_is_causal: bool | None = None, memory_is_causal: bool = False):
        """Encode `src` (S, N, E) and decode `tgt` (T, N, E) against it (batch first with
        `batch_first`, or unbatched without N); returns (T, N, E)."""
        batch_dim = 0 if self.batch_first else 1
        if src.ndim == 3 and (tgt.ndim != 3 or src.shape[batch_dim] != tgt.shape[batch_dim]):
            raise ShapeError(f"Transformer: src {tuple(src.shape)} and tgt {tuple(tgt.shape)} "
                             f"must have the same batch size (dim {batch_dim}, "
                             f"batch_first={self.batch_first})")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise ShapeError(f"Transformer: the feature size (last dim) of src "
                             f"{tuple(src.shape)} and tgt {tuple(tgt.shape)} must be d_model "
                             f"= {self.d_model}")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask,
                            tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device=None, dtype=None):
        """The causal mask for `sz` positions: -inf above the diagonal, 0 elsewhere."""
        return _square_subsequent_mask(sz, device=device, dtype=dtype)
