"""GPT-2 (Radford et al., 2019): learned positions, pre-LayerNorm blocks and a tied LM head,
with transformers' module and weight names (`transformer.h.0.attn.c_attn.weight`, ...).

HuggingFace stores GPT-2's projections as `Conv1D` weights of shape (in, out); here they are
`nn.Linear` (out, in), transposed on load and back on export.
"""

from __future__ import annotations

import itertools
import math
import re

import dlfree as dl
from dlfree import functional as F
from dlfree import nn
from dlfree.export import is_tracing

import attrs
import numpy as np

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

__all__ = ["GPT2Config", "GPT2Model", "GPT2LMHeadModel", "GPT2ForSequenceClassification",
           "GPT2Attention", "GPT2MLP", "GPT2Block"]

_CONV1D = re.compile(r"(^|\.)(c_attn|c_proj|c_fc)\.weight$")  # a checkpoint's Conv1D weights


@attrs.define(kw_only=True, slots=False)
class GPT2Config(PretrainedConfig):
    """transformers' GPT2Config fields (gpt2's values by default). `hidden_size`,
    `num_hidden_layers`, `num_attention_heads` and `max_position_embeddings` answer for
    n_embd, n_layer, n_head and n_positions. The summary_* fields (for transformers'
    double-heads model) are kept in `extra`."""

    model_type = "gpt2"
    attribute_map = {"hidden_size": "n_embd", "num_hidden_layers": "n_layer",
                     "num_attention_heads": "n_head", "max_position_embeddings": "n_positions"}

    vocab_size: int = attrs.field(default=50257, validator=positive_int)
    n_positions: int = attrs.field(default=1024, validator=positive_int)
    n_embd: int = attrs.field(default=768, validator=positive_int)
    n_layer: int = attrs.field(default=12, validator=positive_int)
    n_head: int = attrs.field(default=12, validator=positive_int)
    n_inner: int | None = attrs.field(default=None, validator=optional(positive_int))
    activation_function: str = attrs.field(default="gelu_new", validator=known_activation)
    resid_pdrop: float = attrs.field(default=0.1, validator=probability)
    embd_pdrop: float = attrs.field(default=0.1, validator=probability)
    attn_pdrop: float = attrs.field(default=0.1, validator=probability)
    layer_norm_epsilon: float = attrs.field(default=1e-5, validator=positive_float)
    initializer_range: float = attrs.field(default=0.02, validator=positive_float)
    scale_attn_weights: bool = True
    scale_attn_by_inverse_layer_idx: bool = False
    reorder_and_upcast_attn: bool = False
    add_cross_attention: bool = False
    use_cache: bool = True
    bos_token_id: int | list[int] | None = attrs.field(default=50256, validator=token_id)
    eos_token_id: int | list[int] | None = attrs.field(default=50256, validator=token_id)

    def validate(self) -> None:
        if self.n_embd % self.n_head:
            raise ValueError(f"GPT2Config: n_embd ({self.n_embd}) must be divisible by n_head "
                             f"({self.n_head})")
        if self.add_cross_attention:
            raise ValueError("GPT2Config.add_cross_attention=True is not supported: dl.free's "
                             "GPT-2 is a decoder-only language model")


# ------------------------------------------------------------------------ layers
class GPT2Attention(nn.Module):
    """Causal self-attention: one projection to queries, keys and values (`c_attn`), all
    heads at once, then `c_proj`."""

    def __init__(self, config: GPT2Config, layer_idx: int):
        super().__init__()
        self.layer_idx = layer_idx
        self.num_heads = config.n_head
        self.head_dim = config.n_embd // config.n_head
        scale = self.head_dim ** -0.5 if config.scale_attn_weights else 1.0
        if config.scale_attn_by_inverse_layer_idx:
            scale /= layer_idx + 1
        self.scale = scale
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd)
        self.attn_dropout_p = config.attn_pdrop
        self.resid_dropout = nn.Dropout(config.resid_pdrop)

    def forward(self, hidden_states, mask, cache):
        batch, length, width = hidden_states.shape
        qkv = self.c_attn(hidden_states).view(batch, length, 3, self.num_heads, self.head_dim)
        query, key, value = (qkv[:, :, i].transpose(1, 2) for i in range(3))
        if cache is not None:
            key, value = cache.update(self.layer_idx, key, value)
        attn_mask, is_causal = mask
        context = F.scaled_dot_product_attention(
            query, key, value, attn_mask=attn_mask, is_causal=is_causal, scale=self.scale,
            dropout_p=self.attn_dropout_p if self.training else 0.0)
        return self.resid_dropout(self.c_proj(context.transpose(1, 2).reshape(batch, length,
                                                                              width)))


class GPT2MLP(nn.Module):
    """c_proj(act(c_fc(x))), then dropout."""

    def __init__(self, config: GPT2Config):
        super().__init__()
        inner = config.n_inner or 4 * config.n_embd
        self.c_fc = nn.Linear(config.n_embd, inner)
        self.c_proj = nn.Linear(inner, config.n_embd)
        self.act = get_activation(config.activation_function)
        self.dropout = nn.Dropout(config.resid_pdrop)

    def forward(self, x):
        return self.dropout(self.c_proj(self.act(self.c_fc(x))))


class GPT2Block(nn.Module):
    """x + attn(ln_1(x)), then x + mlp(ln_2(x))."""

    def __init__(self, config: GPT2Config, layer_idx: int):
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.n_embd, eps=config.layer_norm_epsilon)
        self.attn = GPT2Attention(config, layer_idx)
        self.ln_2 = nn.LayerNorm(config.n_embd, eps=config.layer_norm_epsilon)
        self.mlp = GPT2MLP(config)

    def forward(self, hidden_states, mask, cache):
        hidden_states = hidden_states + self.attn(self.ln_1(hidden_states), mask, cache)
        return hidden_states + self.mlp(self.ln_2(hidden_states))


# ------------------------------------------------------------------------ models
class GPT2PreTrainedModel(PreTrainedModel):
    """What every GPT-2 model shares: the config class, the base-model prefix, the Conv1D
    layout of checkpoints, and GPT-2's initialisation."""

    config_class = GPT2Config
    base_model_prefix = "transformer"
    # older checkpoints saved each layer's causal-mask buffers
    _ignore_on_load = [r"(^|\.)position_ids$", r"\.attn\.(bias|masked_bias)$"]

    def _init_weights(self, module: nn.Module) -> None:
        """transformers' GPT-2 initialisation: N(0, initializer_range) weights, and the
        projections back into the residual stream scaled by 1/sqrt(2 n_layer)."""
        super()._init_weights(module)
        if isinstance(module, (GPT2Attention, GPT2MLP)):
            std = self.config.initializer_range / math.sqrt(2 * self.config.n_layer)
            nn.init.normal_(module.c_proj.weight, 0.0, std)

    def _convert_on_load(self, state: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return {name: _transposed(name, value) for name, value in state.items()}

    def _convert_on_export(self, state: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return {name: _transposed(name, value) for name, value in state.items()}


def _transposed(name: str, value: np.ndarray) -> np.ndarray:
    """A Conv1D weight (in, out) as a Linear weight (out, in), or back."""
    if _CONV1D.search(name) and value.ndim == 2:
        return np.ascontiguousarray(value.T)
    return value


class GPT2Model(GPT2PreTrainedModel):
    """Token + position embeddings, the blocks and the final LayerNorm:
    `last_hidden_state` (batch, sequence, n_embd), and the KV cache when one is used."""

    def __init__(self, config: GPT2Config):
        super().__init__(config)
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.wpe = nn.Embedding(config.n_positions, config.n_embd)
        self.drop = nn.Dropout(config.embd_pdrop)
        self.h = nn.ModuleList([GPT2Block(config, i) for i in range(config.n_layer)])
        self.ln_f = nn.LayerNorm(config.n_embd, eps=config.layer_norm_epsilon)
        self.post_init()

    def forward(self, input_ids=None, attention_mask=None, position_ids=None,
                past_key_values=None, use_cache: bool = False, token_type_ids=None,
                output_hidden_states: bool = False):
        """`attention_mask` (batch, cached + new tokens): 1 for tokens, 0 for padding.
        Positions default to 0, 1, ... after the cached ones (as transformers' forward;
        `generate` counts them from each row's first real token instead). `token_type_ids`
        index the token embeddings too, as in transformers."""
        ids = token_ids(input_ids)
        batch, length = ids.shape
        cache = check_cache(past_key_values, use_cache)
        past = cache.get_seq_length() if cache is not None else 0
        if position_ids is None:
            if past + length > self.config.n_positions:
                raise dl.ShapeError(f"GPT2Model: {past + length} positions exceed n_positions "
                                    f"({self.config.n_positions}); shorten the input")
            position_ids = default_positions(length, past, ids.device)
        elif length and not is_tracing() and int(position_ids.max()) >= self.config.n_positions:
            raise dl.ShapeError(f"GPT2Model: position {int(position_ids.max())} is beyond "
                                f"n_positions ({self.config.n_positions})")
        hidden = self.wte(ids) + self.wpe(position_ids)
        if token_type_ids is not None:
            hidden = hidden + self.wte(token_ids(token_type_ids))
        hidden = self.drop(hidden)
        mask = causal_mask(attention_mask, batch, length, past + length, device=ids.device)
        return run_layers(hidden, self.h, itertools.repeat((mask, cache)), self.ln_f, cache,
                          output_hidden_states)


class GPT2LMHeadModel(GenerationMixin, GPT2PreTrainedModel):
    """Next-token scores over the vocabulary (`lm_head`, tied to `wte` when
    `config.tie_word_embeddings`); `labels` gives the causal-LM loss; `generate` decodes."""

    _tied_weights = [("lm_head.weight", "transformer.wte.weight")]

    def __init__(self, config: GPT2Config):
        super().__init__(config)
        self.transformer = GPT2Model(config)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.post_init()

    def forward(self, input_ids=None, attention_mask=None, position_ids=None,
                past_key_values=None, use_cache: bool = False, labels=None,
                logits_to_keep: int = 0, token_type_ids=None,
                output_hidden_states: bool = False):
        """`logits_to_keep=n` scores only the last n positions (generation needs one)."""
        out = self.transformer(input_ids, attention_mask, position_ids, past_key_values,
                               use_cache, token_type_ids, output_hidden_states)
        return causal_lm_output(self.lm_head, out, labels, logits_to_keep)


class GPT2ForSequenceClassification(GPT2PreTrainedModel):
    """A linear classifier (`score`, no bias) on each sequence's last non-padding token."""

    def __init__(self, config: GPT2Config):
        super().__init__(config)
        self.transformer = GPT2Model(config)
        self.score = nn.Linear(config.n_embd, config.num_labels, bias=False)
        self.post_init()

    def forward(self, input_ids=None, attention_mask=None, position_ids=None, labels=None,
                token_type_ids=None, output_hidden_states: bool = False):
        ids = token_ids(input_ids)
        out = self.transformer(ids, attention_mask, position_ids,
                               token_type_ids=token_type_ids,
                               output_hidden_states=output_hidden_states)
        return last_token_classifier_output(self.score, out, ids, labels, self.config)


MODEL_TYPE = "gpt2"
CONFIG = GPT2Config
HEADS = {"base": GPT2Model, "causal_lm": GPT2LMHeadModel,
         "sequence_classification": GPT2ForSequenceClassification}
