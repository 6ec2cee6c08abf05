"""Decoding for any model that returns next-token logits and keeps a cache: `Sampler`
(greedy, temperature, top-k, top-p, repetition penalty, seeded) and `BeamSearch`, on the
logits processors and decoding loops that dlfree-hf's `generate` uses too."""

from .loops import beam_search, decode, draw
from .processors import (
    LogitsProcessor,
    LogitsProcessorList,
    RepetitionPenaltyLogitsProcessor,
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
)
from .sampler import BeamSearch, ModelFeed, Sampler

__all__ = ["Sampler", "BeamSearch", "ModelFeed", "decode", "beam_search", "draw",
           "LogitsProcessor", "LogitsProcessorList", "RepetitionPenaltyLogitsProcessor",
           "TemperatureLogitsWarper", "TopKLogitsWarper", "TopPLogitsWarper"]
