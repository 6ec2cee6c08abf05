"""Pieces the bidirectional encoder families (BERT, RoBERTa, DistilBERT, ALBERT) share: input
checks, multi-head self-attention, the layer stack and a run through embeddings and layers, the
multiple-choice reshaping, and the task heads' outputs and losses."""

from __future__ import annotations

import dlfree as dl
from dlfree import functional as F
from dlfree import nn

from ..configuration import PretrainedConfig
from ..modeling import (
    MaskedLMOutput,
    MultipleChoiceModelOutput,
    QuestionAnsweringModelOutput,
    SequenceClassifierOutput,
    TokenClassifierOutput,
    padding_mask,
    sequence_classification_loss,
    span_loss,
    token_classification_loss,
)


def as_input_ids(input_ids):
    """`input_ids` as an integer (batch, sequence) tensor, or a clear error."""
    if input_ids is None:
        raise ValueError("input_ids is required: a (batch, sequence) tensor of token ids")
    ids = input_ids if isinstance(input_ids, dl.Tensor) else dl.as_tensor(input_ids)
    if ids.ndim != 2:
        raise dl.ShapeError(f"input_ids must be (batch, sequence), got shape {tuple(ids.shape)}")
    if ids.is_floating_point():
        raise dl.DTypeError(f"input_ids must hold integer token ids, got {ids.dtype}")
    return ids


def optional_ids(ids):
    """Optional position or token-type ids as a tensor (None stays None)."""
    return ids if ids is None or isinstance(ids, dl.Tensor) else dl.as_tensor(ids)


def self_attention(hidden_states, query: nn.Linear, key: nn.Linear, value: nn.Linear,
                   num_heads: int, mask, dropout_p: float):
    """All heads of scaled dot-product self-attention at once; (batch, sequence, width) in,
    the heads' contexts concatenated back to (batch, sequence, width) out."""
    batch, length, width = hidden_states.shape

    def split_heads(x):
        return x.reshape(batch, length, num_heads, width // num_heads).transpose(1, 2)

    context = F.scaled_dot_product_attention(
        split_heads(query(hidden_states)), split_heads(key(hidden_states)),
        split_heads(value(hidden_states)), attn_mask=mask, dropout_p=dropout_p)
    return context.transpose(1, 2).reshape(batch, length, width)


class LayerStack(nn.Module):
    """The encoder's layers (`layer`, an nn.ModuleList the subclass fills) run in order."""

    layer: nn.ModuleList

    def forward(self, hidden_states, mask=None, output_hidden_states: bool = False):
        """The last hidden states, and every layer's input and the last output if asked."""
        states = [hidden_states] if output_hidden_states else None
        for layer in self.layer:
            hidden_states = layer(hidden_states, mask)
            if states is not None:
                states.append(hidden_states)
        return hidden_states, (tuple(states) if states is not None else None)


def encode(embeddings: nn.Module, layers: LayerStack, input_ids, attention_mask,
           output_hidden_states: bool, *optional_inputs):
    """An encoder's (last hidden states, every layer's input and the last output if asked):
    the checked `input_ids` and the `optional_inputs` (position or token-type ids, or None)
    through `embeddings`, then `layers` under `attention_mask` (1 = token, 0 = padding)."""
    input_ids = as_input_ids(input_ids)
    batch, length = input_ids.shape
    hidden = embeddings(input_ids, *map(optional_ids, optional_inputs))
    return layers(hidden, padding_mask(attention_mask, batch, length), output_hidden_states)


def span_label_count(config: PretrainedConfig) -> int:
    """The span classifier's width (2: start and end), or an error for another num_labels."""
    if config.num_labels != 2:
        raise ValueError(f"question answering predicts a start and an end per token, so "
                         f"num_labels must be 2; the config has {config.num_labels}")
    return 2


def masked_lm_output(logits, labels, hidden_states) -> MaskedLMOutput:
    """Masked-LM logits with their loss when `labels` (-100 where not masked) are given."""
    loss = token_classification_loss(logits, labels) if labels is not None else None
    return MaskedLMOutput(loss=loss, logits=logits, hidden_states=hidden_states)


def sequence_classifier_output(logits, labels, config: PretrainedConfig,
                               hidden_states) -> SequenceClassifierOutput:
    """Sequence logits with the loss for `config.problem_type` when `labels` are given."""
    loss = sequence_classification_loss(logits, labels, config) if labels is not None else None
    return SequenceClassifierOutput(loss=loss, logits=logits, hidden_states=hidden_states)


def token_classifier_output(logits, labels, hidden_states) -> TokenClassifierOutput:
    """Per-token logits with their loss when `labels` are given."""
    loss = token_classification_loss(logits, labels) if labels is not None else None
    return TokenClassifierOutput(loss=loss, logits=logits, hidden_states=hidden_states)


def question_answering_output(qa_outputs: nn.Linear, sequence_output, start_positions,
                              end_positions, hidden_states) -> QuestionAnsweringModelOutput:
    """Start and end logits (batch, sequence) from the span classifier, with the span loss
    when both positions are given."""
    start, end = qa_outputs(sequence_output).split(1, dim=-1)
    start, end = start.squeeze(-1), end.squeeze(-1)
    loss = span_loss(start, end, start_positions, end_positions) \
        if start_positions is not None and end_positions is not None else None
    return QuestionAnsweringModelOutput(loss=loss, start_logits=start, end_logits=end,
                                        hidden_states=hidden_states)


def flatten_choices(input_ids, *optional_inputs):
    """Multiple-choice inputs (batch, choices, sequence) as (batch * choices, sequence) ones
    for the encoder, and the number of choices; None stays None."""
    if input_ids is None:
        raise ValueError("input_ids is required: a (batch, choices, sequence) tensor of "
                         "token ids, one sequence per (context, choice) pair")
    ids = input_ids if isinstance(input_ids, dl.Tensor) else dl.as_tensor(input_ids)
    if ids.ndim != 3:
        raise dl.ShapeError(f"multiple choice takes input_ids of shape (batch, choices, "
                            f"sequence), got {tuple(ids.shape)}")
    flat = [None if x is None else optional_ids(x).reshape(-1, x.shape[-1])
            for x in optional_inputs]
    return ids.shape[1], ids.reshape(-1, ids.shape[-1]), *flat


def multiple_choice_output(scores, num_choices: int, labels,
                           hidden_states) -> MultipleChoiceModelOutput:
    """One score per (context, choice) sequence as (batch, choices) logits, with the
    cross-entropy over the choices when `labels` (the right choice's index) are given."""
    logits = scores.reshape(-1, num_choices)
    loss = token_classification_loss(logits, labels) if labels is not None else None
    return MultipleChoiceModelOutput(loss=loss, logits=logits, hidden_states=hidden_states)
