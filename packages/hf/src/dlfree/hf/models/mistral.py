"""Mistral (Jiang et al., 2023): the LLaMA architecture with no projection biases and an
optional sliding attention window, under transformers' Mistral names.

The cache keeps every position; the window is applied in the attention mask (the same
result as transformers' rolling cache).
"""

from __future__ import annotations

import attrs

from ..configuration import optional, positive_int
from .llama import LlamaFamilyConfig, family_heads

__all__ = ["MistralConfig", "MistralModel", "MistralForCausalLM",
           "MistralForSequenceClassification"]


@attrs.define(kw_only=True, slots=False)
class MistralConfig(LlamaFamilyConfig):
    """transformers' MistralConfig fields (Mistral-7B-v0.1's values by default)."""

    model_type = "mistral"

    intermediate_size: int = attrs.field(default=14336, validator=positive_int)
    num_key_value_heads: int | None = attrs.field(default=8, validator=optional(positive_int))
    max_position_embeddings: int = attrs.field(default=4096 * 32, validator=positive_int)
    head_dim: int | None = attrs.field(default=None, validator=optional(positive_int))
    sliding_window: int | None = attrs.field(default=4096, validator=optional(positive_int))

    def __attrs_post_init__(self) -> None:
        if self.head_dim is None:
            self.head_dim = self.hidden_size // self.num_attention_heads
        super().__attrs_post_init__()

    def sliding_window_of(self, layer: int) -> int | None:
        return self.sliding_window


MODEL_TYPE = "mistral"
CONFIG = MistralConfig
HEADS = family_heads("Mistral", MistralConfig, __name__)
MistralModel, MistralForCausalLM, MistralForSequenceClassification = HEADS.values()
