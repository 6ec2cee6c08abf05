"""Text generation for causal LMs and encoder–decoders: the KV caches, logits processors,
decoding loops and the mixins that give models `generate`."""

from .cache import EncoderDecoderCache, KVCache
from .generate import DEFAULT_MAX_LENGTH, GenerationMixin
from .logits import (
    LogitsProcessor,
    LogitsProcessorList,
    RepetitionPenaltyLogitsProcessor,
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
)
from .seq2seq import Seq2SeqGenerationMixin
