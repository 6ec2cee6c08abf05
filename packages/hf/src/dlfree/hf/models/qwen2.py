"""Qwen2 (Yang et al., 2024): the LLaMA architecture with biases on the query, key and value
projections, and a sliding window on the layers from `max_window_layers` on when
`use_sliding_window` is set, under transformers' Qwen2 names.
"""

from __future__ import annotations

import attrs

from ..configuration import non_negative_int, optional, positive_int, token_id
from .llama import LlamaFamilyConfig, family_heads

__all__ = ["Qwen2Config", "Qwen2Model", "Qwen2ForCausalLM", "Qwen2ForSequenceClassification"]

LAYER_TYPES = ("full_attention", "sliding_attention")


@attrs.define(kw_only=True, slots=False)
class Qwen2Config(LlamaFamilyConfig):
    """transformers' Qwen2Config fields (Qwen2-7B's values by default). `layer_types` says
    per layer whether it attends through the sliding window; when absent it follows
    `use_sliding_window` and `max_window_layers`, as in transformers."""

    model_type = "qwen2"

    vocab_size: int = attrs.field(default=151936, validator=positive_int)
    intermediate_size: int = attrs.field(default=22016, validator=positive_int)
    num_key_value_heads: int | None = attrs.field(default=32, validator=optional(positive_int))
    max_position_embeddings: int = attrs.field(default=32768, validator=positive_int)
    use_sliding_window: bool = False
    sliding_window: int | None = attrs.field(default=4096, validator=optional(positive_int))
    max_window_layers: int = attrs.field(default=28, validator=non_negative_int)
    layer_types: list[str] | None = None
    bos_token_id: int | list[int] | None = attrs.field(default=None, validator=token_id)
    eos_token_id: int | list[int] | None = attrs.field(default=None, validator=token_id)

    def validate(self) -> None:
        super().validate()
        if self.layer_types is None:
            return
        if not isinstance(self.layer_types, list) or len(self.layer_types) != \
                self.num_hidden_layers or any(t not in LAYER_TYPES for t in self.layer_types):
            raise ValueError(f"Qwen2Config.layer_types must list one of {LAYER_TYPES} per "
                             f"layer ({self.num_hidden_layers}), got {self.layer_types!r}")
        if "sliding_attention" in self.layer_types and self.window is None:
            raise ValueError("Qwen2Config: layer_types has sliding_attention layers, but "
                             "use_sliding_window is false or sliding_window is null")

    @property
    def window(self) -> int | None:
        """The sliding window in effect (None unless use_sliding_window)."""
        return self.sliding_window if self.use_sliding_window else None

    def projection_biases(self) -> tuple[bool, bool]:
        return True, False

    def sliding_window_of(self, layer: int) -> int | None:
        if self.layer_types is not None:
            return self.window if self.layer_types[layer] == "sliding_attention" else None
        return self.window if self.window is not None and layer >= self.max_window_layers \
            else None


MODEL_TYPE = "qwen2"
CONFIG = Qwen2Config
HEADS = family_heads("Qwen2", Qwen2Config, __name__)
Qwen2Model, Qwen2ForCausalLM, Qwen2ForSequenceClassification = HEADS.values()
