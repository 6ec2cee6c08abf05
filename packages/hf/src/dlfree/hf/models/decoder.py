"""What the decoder-only families (GPT-2, the LLaMA family) share: checking token ids, default
positions after a cache, the causal attention mask with padding and a sliding window, the
layer loop, last-token pooling for sequence classification, and the causal-LM head's loss.
"""

from __future__ import annotations

import dlfree as dl
from dlfree import DTypeError, ShapeError, Tensor
from dlfree import functional as F
from dlfree.export import is_tracing

from ..generation.cache import KVCache
from ..modeling import (
    ACTIVATIONS,
    BaseModelOutputWithPast,
    CausalLMOutputWithPast,
    SequenceClassifierOutput,
    sequence_classification_loss,
)

__all__ = ["known_activation", "token_ids", "check_cache", "default_positions", "causal_mask",
           "run_layers", "last_token_pool", "causal_lm_loss", "causal_lm_output",
           "last_token_classifier_output"]


def known_activation(instance, attribute, value) -> None:
    """attrs validator: the name of an activation in `ACTIVATIONS`."""
    if value not in ACTIVATIONS:
        raise ValueError(f"{type(instance).__name__}.{attribute.name} must be one of "
                         f"{', '.join(sorted(ACTIVATIONS))}; got {value!r}")


def token_ids(input_ids) -> Tensor:
    """`input_ids` as a (batch, sequence) integer tensor, or a clear error."""
    if input_ids is None:
        raise ValueError("input_ids is required: a (batch, sequence) tensor of token ids")
    ids = input_ids if isinstance(input_ids, Tensor) else dl.as_tensor(input_ids)
    if ids.ndim != 2:
        raise ShapeError(f"input_ids must be (batch, sequence), got shape {tuple(ids.shape)}")
    if ids.is_floating_point() or ids.dtype == dl.bool:
        raise DTypeError(f"input_ids must hold integer token ids, got {ids.dtype}")
    return ids


def check_cache(past_key_values, use_cache: bool) -> KVCache | None:
    """The cache to read and extend: the one given, a new one if `use_cache`, else None."""
    if past_key_values is None:
        return KVCache() if use_cache else None
    if not isinstance(past_key_values, KVCache):
        raise TypeError(f"past_key_values must be a dlfree.hf.generation.KVCache (returned by a "
                        f"previous call with use_cache=True), got {type(past_key_values).__name__}")
    return past_key_values


def default_positions(length: int, past: int, device) -> Tensor:
    """Positions past .. past + length - 1 as a (1, length) tensor (transformers' default when
    no position_ids are given)."""
    return dl.arange(past, past + length, device=device).unsqueeze(0)


def _as_mask(attention_mask, batch: int, keys: int) -> Tensor:
    mask = attention_mask if isinstance(attention_mask, Tensor) else dl.as_tensor(attention_mask)
    if tuple(mask.shape) != (batch, keys):
        raise ShapeError(f"attention_mask must be (batch, cached + new tokens) = {(batch, keys)} "
                         f"(1 = attend, 0 = padding), got {tuple(mask.shape)}")
    return mask


def causal_mask(attention_mask, batch: int, queries: int, keys: int,
                window: int | None = None, device=None) -> tuple[Tensor | None, bool]:
    """The attention mask of `queries` new tokens that are the last of `keys` positions, as
    (bool mask or None, is_causal) for `F.scaled_dot_product_attention`.

    Query i (at position keys - queries + i) sees key j when j <= its position, when
    `attention_mask[:, j]` is 1 (0 marks padding), and, with a sliding `window`, when j is
    one of the `window` latest positions (transformers' `kv_idx > q_idx - window`). Without
    padding or an active window the mask is left to `is_causal` (or dropped for one query)."""
    padded = attention_mask is not None
    if padded:
        attention_mask = _as_mask(attention_mask, batch, keys)
        # a traced graph keeps the mask whatever the traced input's padding
        padded = is_tracing() or not bool(attention_mask.all())
        device = attention_mask.device
    windowed = window is not None and keys > window
    past = keys - queries
    if not padded and not windowed:
        if past == 0:
            return None, True
        if queries == 1:
            return None, False
    # built with ops, so that a traced graph follows the sequence length
    query_at = dl.arange(past, keys, device=device)[:, None]
    key_at = dl.arange(keys, device=device)[None, :]
    allowed = key_at <= query_at
    if windowed:
        allowed = allowed & (key_at > query_at - window)
    allowed = allowed[None, None]
    if padded:
        allowed = allowed & (attention_mask != 0)[:, None, None, :]
    return allowed, False


def run_layers(hidden: Tensor, layers, layer_args, final_norm, cache: KVCache | None,
               output_hidden_states: bool) -> BaseModelOutputWithPast:
    """`hidden` through each layer (called as `layer(hidden, *args)` with its entry of
    `layer_args`) and `final_norm`; with `output_hidden_states`, every layer's input and the
    final output are kept, as transformers does."""
    states = [] if output_hidden_states else None
    for layer, args in zip(layers, layer_args):
        if states is not None:
            states.append(hidden)
        hidden = layer(hidden, *args)
    hidden = final_norm(hidden)
    if states is not None:
        states.append(hidden)
    return BaseModelOutputWithPast(last_hidden_state=hidden, past_key_values=cache,
                                   hidden_states=tuple(states) if states else None)


def last_token_pool(values: Tensor, input_ids: Tensor, pad_token_id) -> Tensor:
    """Each row's values (batch, sequence, ...) at its last token that is not padding
    (transformers' rule for decoder-only sequence classifiers: the rightmost non-pad token,
    so left and right padding both work). Without a pad token only a batch of one is
    unambiguous."""
    batch = values.shape[0]
    if pad_token_id is None:
        if batch != 1:
            raise ValueError("sequence classification of a batch larger than 1 needs "
                             "config.pad_token_id, to find each row's last real token")
        return values[:, -1]
    if isinstance(pad_token_id, list):
        raise ValueError(f"config.pad_token_id must be one token id for sequence "
                         f"classification, got {pad_token_id}")
    positions = dl.arange(input_ids.shape[1], device=input_ids.device)
    last = (positions * (input_ids != pad_token_id).long()).argmax(-1)
    return values[dl.arange(batch, device=values.device), last]


def causal_lm_loss(logits: Tensor, labels) -> Tensor:
    """Mean next-token cross-entropy: position t predicts labels[t + 1]; label -100 is
    ignored (transformers' causal-LM loss, labels being the input ids themselves)."""
    labels = labels if isinstance(labels, Tensor) else dl.as_tensor(labels)
    if tuple(labels.shape) != tuple(logits.shape[:2]):
        raise ShapeError(f"labels must be (batch, sequence) = {tuple(logits.shape[:2])}, got "
                         f"{tuple(labels.shape)}")
    vocab = logits.shape[-1]
    shifted = logits[:, :-1].reshape(-1, vocab)
    if shifted.dtype == dl.float16:  # as transformers, the loss of half logits in float32
        shifted = shifted.float()
    return F.cross_entropy(shifted, labels[:, 1:].reshape(-1).long(), ignore_index=-100)


def causal_lm_output(lm_head, out: BaseModelOutputWithPast, labels,
                     logits_to_keep: int) -> CausalLMOutputWithPast:
    """A causal-LM head's output on the base model's `out`: `logits_to_keep=n` scores only the
    last n positions (generation needs one), and `labels` give the next-token loss."""
    hidden = out.last_hidden_state
    if logits_to_keep:
        hidden = hidden[:, -logits_to_keep:]
    logits = lm_head(hidden)
    loss = causal_lm_loss(logits, labels) if labels is not None else None
    return CausalLMOutputWithPast(loss=loss, logits=logits, past_key_values=out.past_key_values,
                                  hidden_states=out.hidden_states)


def last_token_classifier_output(score, out: BaseModelOutputWithPast, input_ids: Tensor,
                                 labels, config) -> SequenceClassifierOutput:
    """A sequence classifier's output: `score` on each row's last non-padding token, and the
    loss for `config.problem_type` when `labels` are given."""
    logits = score(last_token_pool(out.last_hidden_state, input_ids, config.pad_token_id))
    loss = sequence_classification_loss(logits, labels, config) if labels is not None else None
    return SequenceClassifierOutput(loss=loss, logits=logits, hidden_states=out.hidden_states)
