"""Text generation for causal LMs: the KV cache, logits processors, decoding loops and the
`GenerationMixin` that gives models `generate`."""

from .cache import KVCache
from .generate import DEFAULT_MAX_LENGTH, GenerationMixin
from .logits import (
    LogitsProcessor,
    LogitsProcessorList,
    RepetitionPenaltyLogitsProcessor,
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
)
