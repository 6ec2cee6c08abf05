"""DistilBERT (Sanh et al., 2019): a six-layer BERT without token types or pooler, with its own
weight names (`distilbert.transformer.layer.0.attention.q_lin.weight`, ...)."""

from __future__ import annotations

import dlfree as dl
from dlfree import functional as F
from dlfree import nn

import attrs
import numpy as np

from ..configuration import (
    PretrainedConfig,
    boolean,
    one_of,
    positive_float,
    positive_int,
    probability,
    token_id,
)
from ..modeling import (
    ACTIVATIONS,
    BaseModelOutput,
    PreTrainedModel,
    embedding,
    get_activation,
)
from .encoder import (
    LayerStack,
    encode,
    flatten_choices,
    masked_lm_output,
    multiple_choice_output,
    question_answering_output,
    self_attention,
    sequence_classifier_output,
    span_label_count,
    token_classifier_output,
)

__all__ = ["DistilBertConfig", "DistilBertPreTrainedModel", "DistilBertModel",
           "DistilBertForMaskedLM", "DistilBertForSequenceClassification",
           "DistilBertForTokenClassification", "DistilBertForQuestionAnswering",
           "DistilBertForMultipleChoice"]

LAYER_NORM_EPS = 1e-12  # fixed in DistilBERT, not a config field


@attrs.define(kw_only=True, slots=False)
class DistilBertConfig(PretrainedConfig):
    """transformers' DistilBertConfig fields (distilbert-base-uncased's values by default)."""

    model_type = "distilbert"
    attribute_map = {"hidden_size": "dim", "num_attention_heads": "n_heads",
                     "num_hidden_layers": "n_layers"}

    vocab_size: int = attrs.field(default=30522, validator=positive_int)
    max_position_embeddings: int = attrs.field(default=512, validator=positive_int)
    sinusoidal_pos_embds: bool = attrs.field(default=False, validator=boolean)
    n_layers: int = attrs.field(default=6, validator=positive_int)
    n_heads: int = attrs.field(default=12, validator=positive_int)
    dim: int = attrs.field(default=768, validator=positive_int)
    hidden_dim: int = attrs.field(default=3072, validator=positive_int)
    dropout: float = attrs.field(default=0.1, validator=probability)
    attention_dropout: float = attrs.field(default=0.1, validator=probability)
    activation: str = attrs.field(default="gelu", validator=one_of(*ACTIVATIONS))
    initializer_range: float = attrs.field(default=0.02, validator=positive_float)
    qa_dropout: float = attrs.field(default=0.1, validator=probability)
    seq_classif_dropout: float = attrs.field(default=0.2, validator=probability)
    pad_token_id: int | None = attrs.field(default=0, validator=token_id)

    def validate(self) -> None:
        if self.dim % self.n_heads:
            raise ValueError(f"{type(self).__name__}: dim ({self.dim}) must be divisible by "
                             f"n_heads ({self.n_heads})")


def sinusoidal_table(positions: int, dim: int) -> np.ndarray:
    """The fixed sin/cos position table (sin on even columns, cos on odd)."""
    angles = np.arange(positions)[:, None] / np.power(10000.0, 2 * (np.arange(dim) // 2) / dim)
    table = np.empty((positions, dim))
    table[:, 0::2] = np.sin(angles[:, 0::2])
    table[:, 1::2] = np.cos(angles[:, 1::2])
    return table


class Embeddings(nn.Module):
    """Word + position embeddings, LayerNorm, dropout."""

    def __init__(self, config: DistilBertConfig):
        super().__init__()
        self.word_embeddings = embedding(config.vocab_size, config.dim,
                                            padding_idx=config.pad_token_id)
        self.position_embeddings = embedding(config.max_position_embeddings, config.dim)
        self.LayerNorm = nn.LayerNorm(config.dim, eps=LAYER_NORM_EPS)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, input_ids, position_ids=None):
        length = input_ids.shape[1]
        if length > self.position_embeddings.num_embeddings:
            raise dl.ShapeError(f"DistilBERT: sequence length {length} exceeds "
                                f"max_position_embeddings "
                                f"{self.position_embeddings.num_embeddings}; truncate the input")
        if position_ids is None:
            position_ids = dl.arange(length, device=input_ids.device).unsqueeze(0)
        embeddings = self.word_embeddings(input_ids) + self.position_embeddings(position_ids)
        return self.dropout(self.LayerNorm(embeddings))


class MultiHeadSelfAttention(nn.Module):
    """Self-attention with q_lin/k_lin/v_lin/out_lin, all heads at once."""

    def __init__(self, config: DistilBertConfig):
        super().__init__()
        self.n_heads = config.n_heads
        self.q_lin = nn.Linear(config.dim, config.dim)
        self.k_lin = nn.Linear(config.dim, config.dim)
        self.v_lin = nn.Linear(config.dim, config.dim)
        self.out_lin = nn.Linear(config.dim, config.dim)
        self.dropout_p = config.attention_dropout

    def forward(self, hidden_states, mask=None):
        return self.out_lin(self_attention(hidden_states, self.q_lin, self.k_lin, self.v_lin,
                                           self.n_heads, mask,
                                           self.dropout_p if self.training else 0.0))


class FFN(nn.Module):
    def __init__(self, config: DistilBertConfig):
        super().__init__()
        self.lin1 = nn.Linear(config.dim, config.hidden_dim)
        self.lin2 = nn.Linear(config.hidden_dim, config.dim)
        self.activation = get_activation(config.activation)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x):
        return self.dropout(self.lin2(self.activation(self.lin1(x))))


class TransformerBlock(nn.Module):
    """Post-norm block: attention + residual, sa_layer_norm; FFN + residual,
    output_layer_norm."""

    def __init__(self, config: DistilBertConfig):
        super().__init__()
        self.attention = MultiHeadSelfAttention(config)
        self.sa_layer_norm = nn.LayerNorm(config.dim, eps=LAYER_NORM_EPS)
        self.ffn = FFN(config)
        self.output_layer_norm = nn.LayerNorm(config.dim, eps=LAYER_NORM_EPS)

    def forward(self, hidden_states, mask=None):
        attended = self.sa_layer_norm(self.attention(hidden_states, mask) + hidden_states)
        return self.output_layer_norm(self.ffn(attended) + attended)


class Transformer(LayerStack):
    def __init__(self, config: DistilBertConfig):
        super().__init__()
        self.layer = nn.ModuleList([TransformerBlock(config) for _ in range(config.n_layers)])


class DistilBertPreTrainedModel(PreTrainedModel):
    """DistilBERT's config class, weight prefix and initialisation (fixed sinusoidal
    positions when `sinusoidal_pos_embds`)."""

    config_class = DistilBertConfig
    base_model_prefix = "distilbert"

    def _init_weights(self, module: nn.Module) -> None:
        super()._init_weights(module)
        if isinstance(module, Embeddings) and self.config.sinusoidal_pos_embds:
            weight = module.position_embeddings.weight
            table = sinusoidal_table(self.config.max_position_embeddings, self.config.dim)
            with dl.no_grad():
                weight.copy_(dl.as_tensor(table, dtype=weight.dtype, device=weight.device))


class DistilBertModel(DistilBertPreTrainedModel):
    """The DistilBERT encoder: `last_hidden_state` (batch, sequence, dim)."""

    def __init__(self, config: DistilBertConfig):
        super().__init__(config)
        self.embeddings = Embeddings(config)
        self.transformer = Transformer(config)
        self.post_init()

    def forward(self, input_ids=None, attention_mask=None, position_ids=None,
                output_hidden_states: bool = False):
        """`attention_mask` (batch, sequence): 1 for tokens, 0 for padding."""
        last, states = encode(self.embeddings, self.transformer, input_ids, attention_mask,
                              output_hidden_states, position_ids)
        return BaseModelOutput(last_hidden_state=last, hidden_states=states)


class DistilBertForMaskedLM(DistilBertPreTrainedModel):
    """Scores over the vocabulary for every position; the projector shares the word
    embeddings. `labels` (-100 where not masked) gives the masked-LM loss."""
    _tied_weights = [("vocab_projector.weight", "distilbert.embeddings.word_embeddings.weight")]

    def __init__(self, config: DistilBertConfig):
        super().__init__(config)
        self.activation = get_activation(config.activation)
        self.distilbert = DistilBertModel(config)
        self.vocab_transform = nn.Linear(config.dim, config.dim)
        self.vocab_layer_norm = nn.LayerNorm(config.dim, eps=LAYER_NORM_EPS)
        self.vocab_projector = nn.Linear(config.dim, config.vocab_size)
        self.post_init()

    def forward(self, input_ids=None, attention_mask=None, position_ids=None, labels=None,
                output_hidden_states: bool = False):
        out = self.distilbert(input_ids, attention_mask, position_ids, output_hidden_states)
        hidden = self.vocab_layer_norm(self.activation(self.vocab_transform(
            out.last_hidden_state)))
        logits = self.vocab_projector(hidden)
        return masked_lm_output(logits, labels, out.hidden_states)


class DistilBertForSequenceClassification(DistilBertPreTrainedModel):
    """On the first token: pre_classifier, ReLU, dropout, classifier; `labels` gives the
    loss for `config.problem_type` (regression, single- or multi-label)."""

    def __init__(self, config: DistilBertConfig):
        super().__init__(config)
        self.distilbert = DistilBertModel(config)
        self.pre_classifier = nn.Linear(config.dim, config.dim)
        self.classifier = nn.Linear(config.dim, config.num_labels)
        self.dropout = nn.Dropout(config.seq_classif_dropout)
        self.post_init()

    def forward(self, input_ids=None, attention_mask=None, position_ids=None, labels=None,
                output_hidden_states: bool = False):
        out = self.distilbert(input_ids, attention_mask, position_ids, output_hidden_states)
        pooled = F.relu(self.pre_classifier(out.last_hidden_state[:, 0]))
        logits = self.classifier(self.dropout(pooled))
        return sequence_classifier_output(logits, labels, self.config, out.hidden_states)


class DistilBertForTokenClassification(DistilBertPreTrainedModel):
    """A linear classifier on every token's hidden state (NER, tagging)."""

    def __init__(self, config: DistilBertConfig):
        super().__init__(config)
        self.distilbert = DistilBertModel(config)
        self.dropout = nn.Dropout(config.dropout)
        self.classifier = nn.Linear(config.dim, config.num_labels)
        self.post_init()

    def forward(self, input_ids=None, attention_mask=None, position_ids=None, labels=None,
                output_hidden_states: bool = False):
        out = self.distilbert(input_ids, attention_mask, position_ids, output_hidden_states)
        logits = self.classifier(self.dropout(out.last_hidden_state))
        return token_classifier_output(logits, labels, out.hidden_states)


class DistilBertForQuestionAnswering(DistilBertPreTrainedModel):
    """Start and end logits of the answer span over the tokens (extractive QA)."""

    def __init__(self, config: DistilBertConfig):
        super().__init__(config)
        self.distilbert = DistilBertModel(config)
        self.qa_outputs = nn.Linear(config.dim, span_label_count(config))
        self.dropout = nn.Dropout(config.qa_dropout)
        self.post_init()

    def forward(self, input_ids=None, attention_mask=None, position_ids=None,
                start_positions=None, end_positions=None, output_hidden_states: bool = False):
        out = self.distilbert(input_ids, attention_mask, position_ids, output_hidden_states)
        return question_answering_output(self.qa_outputs, self.dropout(out.last_hidden_state),
                                         start_positions, end_positions, out.hidden_states)


class DistilBertForMultipleChoice(DistilBertPreTrainedModel):
    """One score per choice: on each (context, choice) sequence's first token,
    pre_classifier, ReLU, dropout and a linear scorer; `labels` (the right choice's index)
    gives the cross-entropy over the choices."""

    def __init__(self, config: DistilBertConfig):
        super().__init__(config)
        self.distilbert = DistilBertModel(config)
        self.pre_classifier = nn.Linear(config.dim, config.dim)
        self.classifier = nn.Linear(config.dim, 1)
        self.dropout = nn.Dropout(config.seq_classif_dropout)
        self.post_init()

    def forward(self, input_ids=None, attention_mask=None, position_ids=None, labels=None,
                output_hidden_states: bool = False):
        choices, *flat = flatten_choices(input_ids, attention_mask, position_ids)
        out = self.distilbert(*flat, output_hidden_states)
        pooled = F.relu(self.pre_classifier(out.last_hidden_state[:, 0]))
        scores = self.classifier(self.dropout(pooled))
        return multiple_choice_output(scores, choices, labels, out.hidden_states)


MODEL_TYPE = "distilbert"
CONFIG = DistilBertConfig
HEADS = {"base": DistilBertModel, "masked_lm": DistilBertForMaskedLM,
         "sequence_classification": DistilBertForSequenceClassification,
         "token_classification": DistilBertForTokenClassification,
         "question_answering": DistilBertForQuestionAnswering,
         "multiple_choice": DistilBertForMultipleChoice}
