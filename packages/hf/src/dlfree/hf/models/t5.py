"""T5 (Raffel et al., 2020) and T5 v1.1 / Flan-T5: an encoder–decoder with RMS layer norms,
no biases, unscaled attention over learned relative-position buckets, and a ReLU or gated-GELU
feed-forward; transformers' module and weight names (`encoder.block.0.layer.0.SelfAttention.q`).

Original T5 ties the LM head to the shared embeddings and scales the decoder output by
d_model ** -0.5 before it; v1.1 checkpoints (`tie_word_embeddings: false`) have their own
head and no scaling.
"""

from __future__ import annotations

import math

import dlfree as dl
from dlfree import Tensor, nn
from dlfree import functional as F

import attrs
import numpy as np

from ..configuration import (
    PretrainedConfig,
    boolean,
    optional,
    positive_float,
    positive_int,
    probability,
    token_id,
)
from ..generation.cache import EncoderDecoderCache
from ..generation.seq2seq import Seq2SeqGenerationMixin
from ..modeling import (
    ACTIVATIONS,
    BaseModelOutput,
    PreTrainedModel,
    Seq2SeqLMOutput,
    Seq2SeqModelOutput,
    embedding,
    get_activation,
    token_classification_loss,
)
from .decoder import run_layers, token_ids

__all__ = ["T5Config", "T5PreTrainedModel", "T5Model", "T5ForConditionalGeneration",
           "T5EncoderModel", "relative_position_bucket"]


def _feed_forward_proj(instance, attribute, value) -> None:
    parts = value.split("-") if isinstance(value, str) else []
    activation = "gelu_new" if value == "gated-gelu" else parts[-1] if parts else None
    if not parts or len(parts) > 2 or (len(parts) == 2 and parts[0] != "gated") \
            or activation not in ACTIVATIONS:
        raise ValueError(f"T5Config.feed_forward_proj must be an activation or 'gated-' and "
                         f"an activation (e.g. 'relu', 'gated-gelu'; activations: "
                         f"{', '.join(sorted(ACTIVATIONS))}), got {value!r}")


@attrs.define(kw_only=True, slots=False)
class T5Config(PretrainedConfig):
    """transformers' T5Config fields (t5-small's values by default)."""

    model_type = "t5"
    attribute_map = {"hidden_size": "d_model", "num_attention_heads": "num_heads",
                     "num_hidden_layers": "num_layers", "head_dim": "d_kv"}

    vocab_size: int = attrs.field(default=32128, validator=positive_int)
    d_model: int = attrs.field(default=512, validator=positive_int)
    d_kv: int = attrs.field(default=64, validator=positive_int)
    d_ff: int = attrs.field(default=2048, validator=positive_int)
    num_layers: int = attrs.field(default=6, validator=positive_int)
    num_decoder_layers: int | None = attrs.field(default=None, validator=optional(positive_int))
    num_heads: int = attrs.field(default=8, validator=positive_int)
    relative_attention_num_buckets: int = attrs.field(default=32, validator=positive_int)
    relative_attention_max_distance: int = attrs.field(default=128, validator=positive_int)
    dropout_rate: float = attrs.field(default=0.1, validator=probability)
    layer_norm_epsilon: float = attrs.field(default=1e-6, validator=positive_float)
    initializer_factor: float = attrs.field(default=1.0, validator=positive_float)
    feed_forward_proj: str = attrs.field(default="relu", validator=_feed_forward_proj)
    is_encoder_decoder: bool = attrs.field(default=True, validator=boolean)
    use_cache: bool = attrs.field(default=True, validator=boolean)
    classifier_dropout: float = attrs.field(default=0.0, validator=probability)
    pad_token_id: int | None = attrs.field(default=0, validator=token_id)
    eos_token_id: int | list[int] | None = attrs.field(default=1, validator=token_id)
    decoder_start_token_id: int | None = attrs.field(default=0, validator=token_id)
    # Whether the decoder output is scaled by d_model ** -0.5 before the LM head. Written
    # by transformers >= 5; older configs imply it by tie_word_embeddings, and it is
    # resolved so, then written out explicitly (transformers reads a null as False).
    scale_decoder_outputs: bool | None = attrs.field(default=None, validator=optional(boolean))

    def __attrs_post_init__(self) -> None:
        if self.num_decoder_layers is None:  # symmetric by default, as in transformers
            self.num_decoder_layers = self.num_layers
        if self.scale_decoder_outputs is None:
            self.scale_decoder_outputs = self.tie_word_embeddings
        super().__attrs_post_init__()

    @property
    def is_gated_act(self) -> bool:
        return self.feed_forward_proj.startswith("gated-")

    @property
    def dense_act_fn(self) -> str:
        # "gated-gelu" is T5 v1.1's name for the tanh-approximated GELU
        return "gelu_new" if self.feed_forward_proj == "gated-gelu" \
            else self.feed_forward_proj.split("-")[-1]


def relative_position_bucket(relative_position: Tensor, bidirectional: bool,
                             num_buckets: int, max_distance: int) -> Tensor:
    """T5's bucket of each relative position (key - query, an int64 Tensor): exact below half
    the buckets, then logarithmically spaced up to `max_distance`, the last bucket beyond; a
    bidirectional (encoder) attention gives half the buckets to each direction, a causal
    one only sees the past. The logarithm is taken in float32, as transformers does, so the
    bucket edges agree. Tensor ops throughout, so that a trace records them and an exported
    graph computes the buckets of each sequence length."""
    if bidirectional:
        num_buckets //= 2
        buckets = (relative_position > 0).to(dl.int64) * num_buckets
        distance = relative_position.abs()
    else:
        buckets = dl.zeros_like(relative_position)
        distance = -relative_position.clamp(max=0)
    max_exact = num_buckets // 2
    # the logarithm's argument kept >= 1: below max_exact its value is not used
    scaled = ((distance.clamp(min=1).to(dl.float32) / max_exact).log()
              / math.log(max_distance / max_exact) * (num_buckets - max_exact))
    large = (scaled.to(dl.int64) + max_exact).clamp(max=num_buckets - 1)
    return buckets + dl.where(distance < max_exact, distance, large)


def _additive(allowed: Tensor, dtype) -> Tensor:
    """A bool mask as 0 where allowed and the dtype's lowest value elsewhere (transformers'
    form, which stays finite when a row is all padding); Tensor ops, so a trace follows
    the mask."""
    zero = dl.zeros((), dtype=dtype, device=allowed.device)
    return dl.where(allowed, zero, zero + float(np.finfo(dtype.name).min))


def _key_mask(attention_mask, batch: int, keys: int, where: str):
    """(batch, 1, 1, keys) bool Tensor from a (batch, keys) 0/1 mask, or None."""
    if attention_mask is None:
        return None
    mask = attention_mask if isinstance(attention_mask, Tensor) else dl.as_tensor(attention_mask)
    if tuple(mask.shape) != (batch, keys):
        raise dl.ShapeError(f"T5: {where} must be (batch, sequence) = {(batch, keys)} "
                            f"(1 = token, 0 = padding), got {tuple(mask.shape)}")
    return (mask != 0).reshape(batch, 1, 1, keys)


# ------------------------------------------------------------------------ layers
class T5Attention(nn.Module):
    """Multi-head attention without biases or 1/sqrt(d) scaling (T5 folds it into the
    initialisation); the first layer of each stack owns the relative-position bias table
    the others reuse."""

    def __init__(self, config: T5Config, has_relative_attention_bias: bool, causal: bool):
        super().__init__()
        self.num_heads, self.head_dim = config.num_heads, config.d_kv
        inner = config.num_heads * config.d_kv
        self.causal = causal
        self.num_buckets = config.relative_attention_num_buckets
        self.max_distance = config.relative_attention_max_distance
        self.dropout_p = config.dropout_rate
        self.q = nn.Linear(config.d_model, inner, bias=False)
        self.k = nn.Linear(config.d_model, inner, bias=False)
        self.v = nn.Linear(config.d_model, inner, bias=False)
        self.o = nn.Linear(inner, config.d_model, bias=False)
        if has_relative_attention_bias:
            self.relative_attention_bias = embedding(self.num_buckets, config.num_heads)

    def position_bias(self, queries: int, keys: int, device) -> Tensor:
        """(1, heads, queries, keys) learned bias of the last `queries` of `keys` positions."""
        query_at = dl.arange(keys - queries, keys, device=device)[:, None]
        relative = dl.arange(keys, device=device)[None, :] - query_at
        buckets = relative_position_bucket(relative, not self.causal, self.num_buckets,
                                           self.max_distance)
        values = self.relative_attention_bias(buckets)
        return values.permute(2, 0, 1).unsqueeze(0)

    def _heads(self, x):
        return x.reshape(x.shape[0], x.shape[1], self.num_heads, self.head_dim).transpose(1, 2)

    def forward(self, hidden_states, bias, key_value_states=None, cache=None, index: int = 0):
        """Self-attention (`key_value_states` None; `cache` a KVCache it appends to) or
        cross-attention over `key_value_states` (`cache` a KVCache holding their keys and
        values after the first step); `bias` is added to the scores (or None)."""
        query = self._heads(self.q(hidden_states))
        if key_value_states is None:
            key, value = self._heads(self.k(hidden_states)), self._heads(self.v(hidden_states))
            if cache is not None:
                key, value = cache.update(index, key, value)
        elif cache is not None and cache.get_seq_length(index):
            key, value = cache.get(index)
        else:
            key = self._heads(self.k(key_value_states))
            value = self._heads(self.v(key_value_states))
            if cache is not None:
                cache.update(index, key, value)
        context = F.scaled_dot_product_attention(
            query, key, value, attn_mask=bias, scale=1.0,
            dropout_p=self.dropout_p if self.training else 0.0)
        batch, _, length, _ = context.shape
        return self.o(context.transpose(1, 2).reshape(batch, length, -1))


class T5LayerSelfAttention(nn.Module):
    def __init__(self, config: T5Config, has_relative_attention_bias: bool, causal: bool):
        super().__init__()
        self.SelfAttention = T5Attention(config, has_relative_attention_bias, causal)
        self.layer_norm = nn.RMSNorm(config.d_model, eps=config.layer_norm_epsilon)
        self.dropout = nn.Dropout(config.dropout_rate)

    def forward(self, hidden_states, bias, cache, index):
        attended = self.SelfAttention(self.layer_norm(hidden_states), bias, cache=cache,
                                      index=index)
        return hidden_states + self.dropout(attended)


class T5LayerCrossAttention(nn.Module):
    def __init__(self, config: T5Config):
        super().__init__()
        self.EncDecAttention = T5Attention(config, False, causal=False)
        self.layer_norm = nn.RMSNorm(config.d_model, eps=config.layer_norm_epsilon)
        self.dropout = nn.Dropout(config.dropout_rate)

    def forward(self, hidden_states, encoder_states, bias, cache, index):
        attended = self.EncDecAttention(self.layer_norm(hidden_states), bias, encoder_states,
                                        cache, index)
        return hidden_states + self.dropout(attended)


class T5DenseActDense(nn.Module):
    """wo(dropout(act(wi(x)))), or with the gated feed-forward wo(dropout(act(wi_0(x)) *
    wi_1(x)))."""

    def __init__(self, config: T5Config):
        super().__init__()
        self.gated = config.is_gated_act
        if self.gated:
            self.wi_0 = nn.Linear(config.d_model, config.d_ff, bias=False)
            self.wi_1 = nn.Linear(config.d_model, config.d_ff, bias=False)
        else:
            self.wi = nn.Linear(config.d_model, config.d_ff, bias=False)
        self.wo = nn.Linear(config.d_ff, config.d_model, bias=False)
        self.dropout = nn.Dropout(config.dropout_rate)
        self.act = get_activation(config.dense_act_fn)

    def forward(self, hidden_states):
        if self.gated:
            hidden = self.act(self.wi_0(hidden_states)) * self.wi_1(hidden_states)
        else:
            hidden = self.act(self.wi(hidden_states))
        return self.wo(self.dropout(hidden))


class T5LayerFF(nn.Module):
    def __init__(self, config: T5Config):
        super().__init__()
        self.DenseReluDense = T5DenseActDense(config)
        self.layer_norm = nn.RMSNorm(config.d_model, eps=config.layer_norm_epsilon)
        self.dropout = nn.Dropout(config.dropout_rate)

    def forward(self, hidden_states):
        return hidden_states + self.dropout(self.DenseReluDense(self.layer_norm(hidden_states)))


class T5Block(nn.Module):
    """Self-attention, cross-attention (decoder only) and the feed-forward, each pre-normed
    with a residual: `layer.0`, `layer.1` (, `layer.2`)."""

    def __init__(self, config: T5Config, has_relative_attention_bias: bool, is_decoder: bool):
        super().__init__()
        parts = [T5LayerSelfAttention(config, has_relative_attention_bias, causal=is_decoder)]
        if is_decoder:
            parts.append(T5LayerCrossAttention(config))
        parts.append(T5LayerFF(config))
        self.layer = nn.ModuleList(parts)

    def forward(self, hidden_states, self_bias, encoder_states, cross_bias, cache, index):
        hidden = self.layer[0](hidden_states, self_bias,
                               None if cache is None else cache.self_attention, index)
        if encoder_states is not None:
            hidden = self.layer[1](hidden, encoder_states, cross_bias,
                                   None if cache is None else cache.cross_attention, index)
        return self.layer[-1](hidden)


class T5Stack(nn.Module):
    """The encoder or the decoder: the shared embeddings, the blocks (block 0 owning the
    position-bias table), a final RMS norm."""

    def __init__(self, config: T5Config, embed_tokens: nn.Embedding, is_decoder: bool):
        super().__init__()
        self.is_decoder = is_decoder
        self.embed_tokens = embed_tokens
        layers = config.num_decoder_layers if is_decoder else config.num_layers
        self.block = nn.ModuleList([T5Block(config, i == 0, is_decoder) for i in range(layers)])
        self.final_layer_norm = nn.RMSNorm(config.d_model, eps=config.layer_norm_epsilon)
        self.dropout = nn.Dropout(config.dropout_rate)

    def _final(self, hidden_states):
        return self.dropout(self.final_layer_norm(hidden_states))

    def forward(self, input_ids, attention_mask=None, encoder_hidden_states=None,
                encoder_attention_mask=None, cache: EncoderDecoderCache | None = None,
                output_hidden_states: bool = False):
        ids = token_ids(input_ids)
        batch, length = ids.shape
        past = cache.get_seq_length() if cache is not None else 0
        keys = past + length
        hidden = self.dropout(self.embed_tokens(ids))
        device, dtype = hidden.device, hidden.dtype
        bias = self.block[0].layer[0].SelfAttention.position_bias(length, keys, device)
        allowed = _key_mask(attention_mask, batch, keys,
                            "decoder_attention_mask (cached + new tokens)" if self.is_decoder
                            else "attention_mask")
        if self.is_decoder:
            causal = dl.arange(keys, device=device)[None, :] <= \
                dl.arange(past, keys, device=device)[:, None]
            allowed = causal if allowed is None else allowed & causal
        if allowed is not None:
            bias = bias + _additive(allowed, dtype)
        cross_bias = None
        if encoder_hidden_states is not None:
            source = _key_mask(encoder_attention_mask, batch, encoder_hidden_states.shape[1],
                               "attention_mask")
            cross_bias = None if source is None else _additive(source, dtype)
        args = [(bias, encoder_hidden_states, cross_bias, cache, i)
                for i in range(len(self.block))]
        return run_layers(hidden, self.block, args, self._final, cache, output_hidden_states)


# ------------------------------------------------------------------------ models
def shift_right(labels: Tensor, start_token_id: int | None, pad_token_id: int | None) -> Tensor:
    """Teacher forcing's decoder inputs: the labels moved one step right after the start
    token, with -100 (ignored positions) replaced by the pad id."""
    if start_token_id is None or pad_token_id is None:
        raise ValueError("T5: decoder inputs made from labels need config.decoder_start_token_id "
                         "and config.pad_token_id (T5 uses 0 for both)")
    xp = labels.device.xp
    shifted = xp.empty(labels.shape, dtype=labels.array.dtype)
    shifted[:, 0] = start_token_id
    shifted[:, 1:] = labels.array[:, :-1]
    return dl.as_tensor(xp.where(shifted == -100, pad_token_id, shifted), device=labels.device)


class T5PreTrainedModel(PreTrainedModel):
    """T5's config class and initialisation (transformers' scaled normals, by
    `initializer_factor`); the encoder and decoder share `shared`, the embedding table."""

    config_class = T5Config
    base_model_prefix = "transformer"
    _tied_weights = [("encoder.embed_tokens.weight", "shared.weight"),
                     ("decoder.embed_tokens.weight", "shared.weight")]
    _ignore_on_load = [*PreTrainedModel._ignore_on_load,
                       r"^decoder\.block\.0\.layer\.1\.EncDecAttention\.relative_attention_bias"]

    def _init_weights(self, module: nn.Module) -> None:
        factor, config = self.config.initializer_factor, self.config
        normal = nn.init.normal_
        if isinstance(module, nn.RMSNorm):
            nn.init.constant_(module.weight, factor)
        elif isinstance(module, nn.Embedding):
            normal(module.weight, 0.0, factor)
        elif isinstance(module, T5Attention):
            if hasattr(module, "relative_attention_bias"):
                normal(module.relative_attention_bias.weight, 0.0,
                       factor * config.d_model ** -0.5)
            normal(module.q.weight, 0.0, factor * (config.d_model * config.d_kv) ** -0.5)
            normal(module.k.weight, 0.0, factor * config.d_model ** -0.5)
            normal(module.v.weight, 0.0, factor * config.d_model ** -0.5)
            normal(module.o.weight, 0.0, factor * (config.num_heads * config.d_kv) ** -0.5)
        elif isinstance(module, T5DenseActDense):
            for name in ("wi", "wi_0", "wi_1"):
                if hasattr(module, name):
                    normal(getattr(module, name).weight, 0.0, factor * config.d_model ** -0.5)
            normal(module.wo.weight, 0.0, factor * config.d_ff ** -0.5)
        elif isinstance(module, nn.Linear):  # the untied LM head
            normal(module.weight, 0.0, factor)

    def _add_stacks(self, config: T5Config, decoder: bool = True) -> None:
        self.shared = embedding(config.vocab_size, config.d_model)
        self.encoder = T5Stack(config, self.shared, is_decoder=False)
        if decoder:
            self.decoder = T5Stack(config, self.shared, is_decoder=True)

    def _encode(self, input_ids, attention_mask, encoder_outputs, output_hidden_states):
        if encoder_outputs is not None:
            return encoder_outputs
        out = self.encoder(input_ids, attention_mask, output_hidden_states=output_hidden_states)
        return BaseModelOutput(last_hidden_state=out.last_hidden_state,
                               hidden_states=out.hidden_states)

    def _decode(self, decoder_input_ids, decoder_attention_mask, encoded, attention_mask,
                past_key_values, use_cache: bool, output_hidden_states: bool):
        if decoder_input_ids is None:
            raise ValueError(f"{type(self).__name__}: give decoder_input_ids (or labels, from "
                             "which they are made)")
        cache = past_key_values
        if cache is None and use_cache:
            cache = EncoderDecoderCache()
        elif cache is not None and not isinstance(cache, EncoderDecoderCache):
            raise TypeError(f"past_key_values must be a dlfree.hf.generation."
                            f"EncoderDecoderCache (returned by a previous call with "
                            f"use_cache=True), got {type(cache).__name__}")
        return self.decoder(decoder_input_ids, decoder_attention_mask,
                            encoded.last_hidden_state, attention_mask, cache,
                            output_hidden_states)


class T5EncoderModel(T5PreTrainedModel):
    """T5's encoder alone: `last_hidden_state` (batch, sequence, d_model)."""

    _tied_weights = [("encoder.embed_tokens.weight", "shared.weight")]

    def __init__(self, config: T5Config):
        super().__init__(config)
        self._add_stacks(config, decoder=False)
        self.post_init()

    def forward(self, input_ids=None, attention_mask=None, output_hidden_states: bool = False):
        return self._encode(input_ids, attention_mask, None, output_hidden_states)


class T5Model(T5PreTrainedModel):
    """The encoder and decoder: the decoder's `last_hidden_state`, its cache, and the
    encoder's output (`encoder_last_hidden_state`)."""

    def __init__(self, config: T5Config):
        super().__init__(config)
        self._add_stacks(config)
        self.post_init()

    def forward(self, input_ids=None, attention_mask=None, decoder_input_ids=None,
                decoder_attention_mask=None, encoder_outputs=None, past_key_values=None,
                use_cache: bool | None = None, output_hidden_states: bool = False):
        encoded = self._encode(input_ids, attention_mask, encoder_outputs, output_hidden_states)
        out = self._decode(decoder_input_ids, decoder_attention_mask, encoded, attention_mask,
                           past_key_values, bool(use_cache), output_hidden_states)
        return Seq2SeqModelOutput(last_hidden_state=out.last_hidden_state,
                                  past_key_values=out.past_key_values,
                                  decoder_hidden_states=out.hidden_states,
                                  encoder_last_hidden_state=encoded.last_hidden_state,
                                  encoder_hidden_states=encoded.hidden_states)


class T5ForConditionalGeneration(T5PreTrainedModel, Seq2SeqGenerationMixin):
    """T5 with its LM head: scores over the vocabulary for each decoder position; `labels`
    give the teacher-forced cross-entropy (decoder inputs made from them when not given),
    and `generate` decodes (greedy, sampling, beam search) with the encoder run once."""

    _tied_weights = [*T5PreTrainedModel._tied_weights, ("lm_head.weight", "shared.weight")]

    def __init__(self, config: T5Config):
        super().__init__(config)
        self._add_stacks(config)
        self.lm_head = nn.Linear(config.d_model, config.vocab_size, bias=False)
        self.post_init()

    def forward(self, input_ids=None, attention_mask=None, decoder_input_ids=None,
                decoder_attention_mask=None, encoder_outputs=None, past_key_values=None,
                labels=None, use_cache: bool | None = None, output_hidden_states: bool = False,
                logits_to_keep: int = 0):
        """`logits_to_keep=n` scores only the last n decoder positions (generation uses 1)."""
        if labels is not None:
            labels = labels if isinstance(labels, Tensor) else dl.as_tensor(labels)
            if decoder_input_ids is None:
                decoder_input_ids = shift_right(labels, self.config.decoder_start_token_id,
                                                self.config.pad_token_id)
        encoded = self._encode(input_ids, attention_mask, encoder_outputs, output_hidden_states)
        out = self._decode(decoder_input_ids, decoder_attention_mask, encoded, attention_mask,
                           past_key_values, bool(use_cache), output_hidden_states)
        hidden = out.last_hidden_state
        if logits_to_keep:
            hidden = hidden[:, -logits_to_keep:]
        if self.config.scale_decoder_outputs:
            hidden = hidden * self.config.d_model ** -0.5
        logits = self.lm_head(hidden)
        loss = token_classification_loss(logits, labels) if labels is not None else None
        return Seq2SeqLMOutput(loss=loss, logits=logits, past_key_values=out.past_key_values,
                               decoder_hidden_states=out.hidden_states,
                               encoder_last_hidden_state=encoded.last_hidden_state,
                               encoder_hidden_states=encoded.hidden_states)


MODEL_TYPE = "t5"
CONFIG = T5Config
HEADS = {"base": T5Model, "seq2seq_lm": T5ForConditionalGeneration,
         "encoder": T5EncoderModel}
