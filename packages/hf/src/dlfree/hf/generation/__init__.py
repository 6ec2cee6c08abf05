"""Text generation for causal LMs and encoder–decoders: the KV caches and the mixins that give
models `generate`, on the logits processors and decoding loops of dlfree.nn.decoding
(re-exported here under the names transformers users know)."""

from dlfree.nn.decoding import (
    LogitsProcessor,
    LogitsProcessorList,
    RepetitionPenaltyLogitsProcessor,
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
)

from .cache import EncoderDecoderCache, KVCache
from .generate import DEFAULT_MAX_LENGTH, GenerationMixin
from .seq2seq import Seq2SeqGenerationMixin
