"""LLaMA (Touvron et al., 2023) and the decoders built like it: RMSNorm before each block,
rotary positions, grouped-query attention and a SwiGLU feed-forward, with transformers'
module and weight names (`model.layers.0.self_attn.q_proj.weight`, ...). Mistral and Qwen2
(mistral.py, qwen2.py) reuse these modules through their configs' traits.
"""

from __future__ import annotations

import dlfree as dl
from dlfree import functional as F
from dlfree import nn

import attrs

from ..configuration import (
    PretrainedConfig,
    optional,
    positive_float,
    positive_int,
    probability,
    token_id,
)
from ..generation import GenerationMixin
from ..modeling import PreTrainedModel, get_activation
from .decoder import (
    causal_lm_output,
    causal_mask,
    check_cache,
    default_positions,
    known_activation,
    last_token_classifier_output,
    run_layers,
    token_ids,
)
from .rope import RotaryEmbedding, apply_rotary, check_rope_parameters, normalize_rope_parameters

__all__ = ["LlamaFamilyConfig", "LlamaConfig", "LlamaModel", "LlamaForCausalLM",
           "LlamaForSequenceClassification", "LlamaAttention", "LlamaMLP", "LlamaDecoderLayer",
           "LlamaRMSNorm", "family_heads"]

_LEGACY_ROPE_KEYS = ("rope_theta", "rope_scaling")


@attrs.define(kw_only=True, slots=False)
class LlamaFamilyConfig(PretrainedConfig):
    """The fields Llama, Mistral and Qwen2 share, and the traits in which they differ
    (`projection_biases`, `mlp_bias_enabled`, `sliding_window_of`), which the shared modules
    read. RoPE settings are kept as one `rope_parameters` dict; config files with the older
    top-level `rope_theta` / `rope_scaling` keys are read into it."""

    vocab_size: int = attrs.field(default=32000, validator=positive_int)
    hidden_size: int = attrs.field(default=4096, validator=positive_int)
    intermediate_size: int = attrs.field(default=11008, validator=positive_int)
    num_hidden_layers: int = attrs.field(default=32, validator=positive_int)
    num_attention_heads: int = attrs.field(default=32, validator=positive_int)
    num_key_value_heads: int | None = attrs.field(default=None, validator=optional(positive_int))
    hidden_act: str = attrs.field(default="silu", validator=known_activation)
    max_position_embeddings: int = attrs.field(default=2048, validator=positive_int)
    initializer_range: float = attrs.field(default=0.02, validator=positive_float)
    rms_norm_eps: float = attrs.field(default=1e-6, validator=positive_float)
    use_cache: bool = True
    rope_parameters: dict | None = None
    attention_dropout: float = attrs.field(default=0.0, validator=probability)
    tie_word_embeddings: bool = False
    bos_token_id: int | list[int] | None = attrs.field(default=1, validator=token_id)
    eos_token_id: int | list[int] | None = attrs.field(default=2, validator=token_id)

    def __attrs_post_init__(self) -> None:
        if self.num_key_value_heads is None:
            self.num_key_value_heads = self.num_attention_heads
        self.rope_parameters = normalize_rope_parameters(
            self.rope_parameters, max_position_embeddings=self.max_position_embeddings)
        super().__attrs_post_init__()

    @classmethod
    def from_dict(cls, data: dict, **overrides) -> LlamaFamilyConfig:
        """As `PretrainedConfig.from_dict`; older files' `rope_theta` and `rope_scaling`
        become `rope_parameters`."""
        if not isinstance(data, dict):
            raise TypeError(f"{cls.__name__}.from_dict expects a dict, got {type(data).__name__}")
        legacy = {k: v for k, v in {**data, **overrides}.items() if k in _LEGACY_ROPE_KEYS}
        if legacy:
            data = {k: v for k, v in data.items() if k not in _LEGACY_ROPE_KEYS}
            overrides = {k: v for k, v in overrides.items() if k not in _LEGACY_ROPE_KEYS}
            if "rope_parameters" not in overrides:  # an override replaces the file's settings
                data["rope_parameters"] = normalize_rope_parameters(
                    data.get("rope_parameters"), legacy.get("rope_theta"),
                    legacy.get("rope_scaling"))
        return super().from_dict(data, **overrides)

    def validate(self) -> None:
        name = type(self).__name__
        heads, kv_heads = self.num_attention_heads, self.num_key_value_heads
        if self.hidden_size % heads:
            raise ValueError(f"{name}: hidden_size ({self.hidden_size}) must be divisible by "
                             f"num_attention_heads ({heads})")
        if heads % kv_heads:
            raise ValueError(f"{name}: num_attention_heads ({heads}) must be a multiple of "
                             f"num_key_value_heads ({kv_heads}) for grouped-query attention")
        if self.head_size % 2:
            raise ValueError(f"{name}: the head size ({self.head_size}) must be even for "
                             "rotary embeddings")
        if self.extra.get("pretraining_tp", 1) != 1:
            raise ValueError(f"{name}: pretraining_tp={self.extra['pretraining_tp']} (sliced "
                             "projections) is not supported; only 1")
        check_rope_parameters(self.rope_parameters, name)

    # ------------------------------------------------------------------ traits
    @property
    def head_size(self) -> int:
        """The size of one attention head."""
        return getattr(self, "head_dim", None) or self.hidden_size // self.num_attention_heads

    def projection_biases(self) -> tuple[bool, bool]:
        """Whether (q/k/v projections, output projection) have biases."""
        return False, False

    def mlp_bias_enabled(self) -> bool:
        return False

    def sliding_window_of(self, layer: int) -> int | None:
        """How many latest positions `layer` attends to (None: all of them)."""
        return None


@attrs.define(kw_only=True, slots=False)
class LlamaConfig(LlamaFamilyConfig):
    """transformers' LlamaConfig fields (Llama-2-7B's values by default)."""

    model_type = "llama"

    head_dim: int | None = attrs.field(default=None, validator=optional(positive_int))
    attention_bias: bool = False
    mlp_bias: bool = False

    def __attrs_post_init__(self) -> None:
        if self.head_dim is None:
            self.head_dim = self.hidden_size // self.num_attention_heads
        super().__attrs_post_init__()

    def projection_biases(self) -> tuple[bool, bool]:
        return self.attention_bias, self.attention_bias

    def mlp_bias_enabled(self) -> bool:
        return self.mlp_bias


# ------------------------------------------------------------------------ layers
class LlamaRMSNorm(nn.RMSNorm):
    """RMSNorm that normalises half-precision inputs in float32 (as transformers): squares
    of the large activations these models have would overflow float16."""

    def __init__(self, hidden_size: int, eps: float):
        super().__init__(hidden_size, eps=eps)

    def forward(self, input):
        if input.dtype != dl.float16:
            return super().forward(input)
        normalized = F.rms_norm(input.float(), self.normalized_shape, None, self.eps)
        return self.weight * normalized.to(input.dtype)


class LlamaMLP(nn.Module):
    """SwiGLU feed-forward: down(act(gate(x)) * up(x))."""

    def __init__(self, config: LlamaFamilyConfig):
        super().__init__()
        bias = config.mlp_bias_enabled()
        self.gate_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=bias)
        self.up_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=bias)
        self.down_proj = nn.Linear(config.intermediate_size, config.hidden_size, bias=bias)
        self.act_fn = get_activation(config.hidden_act)

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class LlamaAttention(nn.Module):
    """Self-attention with rotary positions; `num_key_value_heads` key/value heads are each
    shared by a group of query heads (`enable_gqa`, no loop over heads)."""

    def __init__(self, config: LlamaFamilyConfig, layer_idx: int):
        super().__init__()
        self.layer_idx = layer_idx
        self.num_heads = config.num_attention_heads
        self.num_kv_heads = config.num_key_value_heads
        self.head_dim = config.head_size
        self.dropout_p = config.attention_dropout
        qkv_bias, out_bias = config.projection_biases()
        width, kv_width = self.num_heads * self.head_dim, self.num_kv_heads * self.head_dim
        self.q_proj = nn.Linear(config.hidden_size, width, bias=qkv_bias)
        self.k_proj = nn.Linear(config.hidden_size, kv_width, bias=qkv_bias)
        self.v_proj = nn.Linear(config.hidden_size, kv_width, bias=qkv_bias)
        self.o_proj = nn.Linear(width, config.hidden_size, bias=out_bias)

    def forward(self, hidden_states, rotary, mask, cache):
        """`rotary` is (cos, signed sin) for these positions (see `rope.apply_rotary`),
        `mask` is (bool mask or None, is_causal)."""
        batch, length, _ = hidden_states.shape
        cos, sin = rotary
        # rotate in the (batch, length, heads, dim) layout the projections come in, so that
        # the heads-first views below keep it (attention writes its output in it too)
        query = apply_rotary(self.q_proj(hidden_states).view(batch, length, self.num_heads,
                                                             self.head_dim), cos, sin)
        key = apply_rotary(self.k_proj(hidden_states).view(batch, length, self.num_kv_heads,
                                                           self.head_dim), cos, sin)
        value = self.v_proj(hidden_states).view(batch, length, self.num_kv_heads, self.head_dim)
        query, key, value = query.transpose(1, 2), key.transpose(1, 2), value.transpose(1, 2)
        if cache is not None:
            key, value = cache.update(self.layer_idx, key, value)
        attn_mask, is_causal = mask
        context = F.scaled_dot_product_attention(
            query, key, value, attn_mask=attn_mask, is_causal=is_causal,
            dropout_p=self.dropout_p if self.training else 0.0,
            enable_gqa=self.num_kv_heads != self.num_heads)
        return self.o_proj(context.transpose(1, 2).reshape(batch, length, -1))


class LlamaDecoderLayer(nn.Module):
    """x + attention(norm(x)), then x + mlp(norm(x))."""

    def __init__(self, config: LlamaFamilyConfig, layer_idx: int):
        super().__init__()
        self.self_attn = LlamaAttention(config, layer_idx)
        self.mlp = LlamaMLP(config)
        self.input_layernorm = LlamaRMSNorm(config.hidden_size, config.rms_norm_eps)
        self.post_attention_layernorm = LlamaRMSNorm(config.hidden_size, config.rms_norm_eps)

    def forward(self, hidden_states, rotary, mask, cache):
        hidden_states = hidden_states + self.self_attn(self.input_layernorm(hidden_states),
                                                       rotary, mask, cache)
        return hidden_states + self.mlp(self.post_attention_layernorm(hidden_states))


# ------------------------------------------------------------------------ models
class LlamaModel(PreTrainedModel):
    """The decoder stack: `last_hidden_state` (batch, sequence, hidden) after the final
    RMSNorm, and the KV cache when one is used."""

    config_class = LlamaConfig
    base_model_prefix = "model"

    def __init__(self, config: LlamaFamilyConfig):
        super().__init__(config)
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size,
                                         padding_idx=_padding_index(config))
        self.layers = nn.ModuleList([LlamaDecoderLayer(config, i)
                                     for i in range(config.num_hidden_layers)])
        self.norm = LlamaRMSNorm(config.hidden_size, config.rms_norm_eps)
        self.rotary_emb = RotaryEmbedding(config.rope_parameters, config.head_size,
                                          config.max_position_embeddings)
        self.post_init()

    def forward(self, input_ids=None, attention_mask=None, position_ids=None,
                past_key_values=None, use_cache: bool = False,
                output_hidden_states: bool = False):
        """`attention_mask` (batch, cached + new tokens): 1 for tokens, 0 for padding.
        `past_key_values` (a KVCache from an earlier call) holds the prefix's keys and
        values, so `input_ids` are only the new tokens; `use_cache=True` starts one."""
        ids = token_ids(input_ids)
        batch, length = ids.shape
        cache = check_cache(past_key_values, use_cache)
        past = cache.get_seq_length() if cache is not None else 0
        hidden = self.embed_tokens(ids)
        if position_ids is None:
            position_ids = default_positions(length, past, ids.device)
        rotary = self.rotary_emb(position_ids, hidden.dtype)
        windows = [self.config.sliding_window_of(i) for i in range(len(self.layers))]
        masks = {window: causal_mask(attention_mask, batch, length, past + length, window,
                                     ids.device) for window in set(windows)}
        return run_layers(hidden, self.layers, [(rotary, masks[w], cache) for w in windows],
                          self.norm, cache, output_hidden_states)


def _padding_index(config: LlamaFamilyConfig) -> int | None:
    pad = config.pad_token_id
    return pad if isinstance(pad, int) and 0 <= pad < config.vocab_size else None


class LlamaForCausalLM(GenerationMixin, PreTrainedModel):
    """Next-token scores over the vocabulary (`lm_head`, tied to the embeddings when
    `config.tie_word_embeddings`); `labels` gives the causal-LM loss; `generate` decodes."""

    config_class = LlamaConfig
    base_model_class = LlamaModel
    base_model_prefix = "model"
    _tied_weights = [("lm_head.weight", "model.embed_tokens.weight")]

    def __init__(self, config: LlamaFamilyConfig):
        super().__init__(config)
        self.model = self.base_model_class(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.post_init()

    def forward(self, input_ids=None, attention_mask=None, position_ids=None,
                past_key_values=None, use_cache: bool = False, labels=None,
                logits_to_keep: int = 0, output_hidden_states: bool = False):
        """`logits_to_keep=n` scores only the last n positions (generation needs one)."""
        out = self.model(input_ids, attention_mask, position_ids, past_key_values, use_cache,
                         output_hidden_states)
        return causal_lm_output(self.lm_head, out, labels, logits_to_keep)


class LlamaForSequenceClassification(PreTrainedModel):
    """A linear classifier (`score`, no bias) on each sequence's last non-padding token."""

    config_class = LlamaConfig
    base_model_class = LlamaModel
    base_model_prefix = "model"

    def __init__(self, config: LlamaFamilyConfig):
        super().__init__(config)
        self.model = self.base_model_class(config)
        self.score = nn.Linear(config.hidden_size, config.num_labels, bias=False)
        self.post_init()

    def forward(self, input_ids=None, attention_mask=None, position_ids=None, labels=None,
                output_hidden_states: bool = False):
        ids = token_ids(input_ids)
        out = self.model(ids, attention_mask, position_ids,
                         output_hidden_states=output_hidden_states)
        return last_token_classifier_output(self.score, out, ids, labels, self.config)


def family_heads(name: str, config_class: type[LlamaFamilyConfig], module: str) -> dict:
    """The base, causal-LM and sequence-classification models of a LLaMA-family member (a
    plugin's HEADS): the Llama models as `{name}Model`, `{name}ForCausalLM` and
    `{name}ForSequenceClassification` in `module`, built from `config_class`."""
    def subclass(base: type, suffix: str, **attributes) -> type:
        qualname = name + suffix
        return type(qualname, (base,), {"__module__": module, "__qualname__": qualname,
                                        "__doc__": base.__doc__, "config_class": config_class,
                                        **attributes})

    model = subclass(LlamaModel, "Model")
    return {"base": model,
            "causal_lm": subclass(LlamaForCausalLM, "ForCausalLM", base_model_class=model),
            "sequence_classification": subclass(LlamaForSequenceClassification,
                                                "ForSequenceClassification",
                                                base_model_class=model)}


MODEL_TYPE = "llama"
CONFIG = LlamaConfig
HEADS = {"base": LlamaModel, "causal_lm": LlamaForCausalLM,
         "sequence_classification": LlamaForSequenceClassification}
