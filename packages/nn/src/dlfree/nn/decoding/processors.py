"""Logits processors: each maps (input_ids, scores) to new scores for the next token, with
transformers' semantics (so the same settings give the same distribution). They work on the
backend arrays: no autograd, and a step stays on its device.
"""

from __future__ import annotations

import math

import dlfree as dl
from dlfree import Tensor

__all__ = ["LogitsProcessor", "LogitsProcessorList", "TemperatureLogitsWarper",
           "TopKLogitsWarper", "TopPLogitsWarper", "RepetitionPenaltyLogitsProcessor"]


class LogitsProcessor:
    """Base class: `processor(input_ids, scores)` returns the processed scores, where
    input_ids (batch, sequence) are the tokens so far and scores (batch, vocab) the next
    token's logits."""

    def __call__(self, input_ids: Tensor, scores: Tensor) -> Tensor:
        return dl.as_tensor(self.process(input_ids.array, scores.array, scores.device.xp))

    def process(self, input_ids, scores, xp):
        """The same on backend arrays (`xp` is their array module)."""
        raise NotImplementedError(f"{type(self).__name__} does not define process()")


class LogitsProcessorList(list):
    """Processors applied in order."""

    def __call__(self, input_ids: Tensor, scores: Tensor) -> Tensor:
        if not self:
            return scores
        return dl.as_tensor(self.process(input_ids.array, scores.array, scores.device.xp))

    def process(self, input_ids, scores, xp):
        for processor in self:
            scores = processor.process(input_ids, scores, xp)
        return scores


def _number(value, name: str, low: float, low_open: bool, high: float = math.inf) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value) \
            or value < low or (low_open and value == low) or value > high:
        bound = f"> {low}" if low_open else f">= {low}"
        valid = f"a number {bound}" + (f" and <= {high}" if high < math.inf else "")
        raise ValueError(f"{name} must be {valid}, got {value!r}")
    return float(value)


def _integer(value, name: str, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
    return value


def _min_tokens(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name}: min_tokens_to_keep must be an int >= 1, got {value!r}")
    return value


class TemperatureLogitsWarper(LogitsProcessor):
    """scores / temperature: below 1 sharpens the distribution, above 1 flattens it."""

    def __init__(self, temperature: float):
        self.temperature = _number(temperature, "temperature", 0.0, low_open=True)

    def process(self, input_ids, scores, xp):
        return scores / self.temperature


class TopKLogitsWarper(LogitsProcessor):
    """Keep the `top_k` highest scores (and any tied with the k-th), set the rest to
    `filter_value`."""

    def __init__(self, top_k: int, filter_value: float = -math.inf, min_tokens_to_keep: int = 1):
        self.top_k = max(_integer(top_k, "top_k", 1),
                         _min_tokens(min_tokens_to_keep, "TopKLogitsWarper"))
        self.filter_value = filter_value

    def process(self, input_ids, scores, xp):
        vocab = scores.shape[-1]
        k = min(self.top_k, vocab)
        kth_largest = xp.partition(scores, vocab - k, axis=-1)[..., vocab - k, None]
        return xp.where(scores < kth_largest, scores.dtype.type(self.filter_value), scores)


class TopPLogitsWarper(LogitsProcessor):
    """Nucleus sampling: keep the most likely tokens whose probabilities sum to at least
    `top_p` (at least `min_tokens_to_keep` of them), set the rest to `filter_value`."""

    def __init__(self, top_p: float, filter_value: float = -math.inf, min_tokens_to_keep: int = 1):
        self.top_p = _number(top_p, "top_p", 0.0, low_open=False, high=1.0)
        self.filter_value = filter_value
        self.min_tokens_to_keep = _min_tokens(min_tokens_to_keep, "TopPLogitsWarper")

    def process(self, input_ids, scores, xp):
        order = xp.argsort(scores, axis=-1, kind="stable")
        ascending = xp.take_along_axis(scores, order, axis=-1)
        probs = xp.exp(ascending - ascending[..., -1:])
        probs /= probs.sum(axis=-1, keepdims=True)
        # a token goes when the less likely ones before it (itself included) hold at most
        # 1 - top_p of the mass
        removed = xp.cumsum(probs, axis=-1) <= 1 - self.top_p
        removed[..., -self.min_tokens_to_keep:] = False
        drop = xp.take_along_axis(removed, xp.argsort(order, axis=-1), axis=-1)
        return xp.where(drop, scores.dtype.type(self.filter_value), scores)


class RepetitionPenaltyLogitsProcessor(LogitsProcessor):
    """Discourage tokens already in the sequence (Keskar et al., 2019): their scores are
    divided by `penalty` when positive and multiplied by it when negative, once per token.
    `prompt_ignore_length` (an int, or one per row) skips that many leading tokens of each
    row: transformers passes the left padding, so pad tokens are not penalised."""

    def __init__(self, penalty: float, prompt_ignore_length=None):
        self.penalty = _number(penalty, "repetition_penalty", 0.0, low_open=True)
        self.prompt_ignore_length = prompt_ignore_length

    def process(self, input_ids, scores, xp):
        batch, vocab = scores.shape
        ignore = self.prompt_ignore_length
        ids = xp.minimum(input_ids, vocab)  # ids the scores do not cover are not penalised
        if ignore is not None:
            ignore = ignore.array if isinstance(ignore, Tensor) else xp.asarray(ignore)
            positions = xp.arange(ids.shape[1])
            ids = xp.where(positions[None, :] < ignore.reshape(-1, 1), vocab, ids)
        seen = xp.zeros((batch, vocab + 1), dtype=bool)
        seen[xp.arange(batch)[:, None], ids] = True
        penalised = xp.where(scores < 0, scores * self.penalty, scores / self.penalty)
        return xp.where(seen[:, :vocab], penalised, scores)
