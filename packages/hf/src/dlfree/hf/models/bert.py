"""BERT (Devlin et al., 2019): the encoder, its pooler and the task heads, with transformers'
module and weight names (`bert.encoder.layer.0.attention.self.query.weight`, ...)."""

from __future__ import annotations

import dlfree as dl
from dlfree import functional as F
from dlfree import nn
from dlfree.export import is_tracing

import attrs

from ..configuration import (
    PretrainedConfig,
    one_of,
    optional,
    positive_float,
    positive_int,
    probability,
    token_id,
)
from ..modeling import (
    ACTIVATIONS,
    BaseModelOutputWithPooling,
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

__all__ = ["BertConfig", "BertPreTrainedModel", "BertModel", "BertForMaskedLM",
           "BertForSequenceClassification", "BertForTokenClassification",
           "BertForQuestionAnswering", "BertForMultipleChoice", "BertSelfAttention",
           "BertEncoder", "BertPooler"]


@attrs.define(kw_only=True, slots=False)
class BertConfig(PretrainedConfig):
    """transformers' BertConfig fields (bert-base-uncased's values by default)."""

    model_type = "bert"

    vocab_size: int = attrs.field(default=30522, validator=positive_int)
    hidden_size: int = attrs.field(default=768, validator=positive_int)
    num_hidden_layers: int = attrs.field(default=12, validator=positive_int)
    num_attention_heads: int = attrs.field(default=12, validator=positive_int)
    intermediate_size: int = attrs.field(default=3072, validator=positive_int)
    hidden_act: str = attrs.field(default="gelu", validator=one_of(*ACTIVATIONS))
    hidden_dropout_prob: float = attrs.field(default=0.1, validator=probability)
    attention_probs_dropout_prob: float = attrs.field(default=0.1, validator=probability)
    max_position_embeddings: int = attrs.field(default=512, validator=positive_int)
    type_vocab_size: int = attrs.field(default=2, validator=positive_int)
    initializer_range: float = attrs.field(default=0.02, validator=positive_float)
    layer_norm_eps: float = attrs.field(default=1e-12, validator=positive_float)
    position_embedding_type: str = attrs.field(default="absolute", validator=one_of("absolute"))
    classifier_dropout: float | None = attrs.field(default=None, validator=optional(probability))
    pad_token_id: int | None = attrs.field(default=0, validator=token_id)

    def validate(self) -> None:
        if self.hidden_size % self.num_attention_heads:
            raise ValueError(f"{type(self).__name__}: hidden_size ({self.hidden_size}) must be "
                             f"divisible by num_attention_heads ({self.num_attention_heads})")
        for flag in ("is_decoder", "add_cross_attention"):
            if self.extra.get(flag):
                raise ValueError(f"{type(self).__name__}.{flag}=True is not supported: "
                                 "dl.free's BERT family is a bidirectional encoder")


# ------------------------------------------------------------------------ layers
class BertEmbeddings(nn.Module):
    """Word + position + token-type embeddings, then LayerNorm and dropout; `width` is the
    hidden size unless the family factorises its embeddings (ALBERT)."""

    def __init__(self, config: BertConfig, width: int | None = None):
        super().__init__()
        width = width or config.hidden_size
        self.word_embeddings = embedding(config.vocab_size, width,
                                         padding_idx=config.pad_token_id)
        self.position_embeddings = embedding(config.max_position_embeddings, width)
        self.token_type_embeddings = embedding(config.type_vocab_size, width)
        self.LayerNorm = nn.LayerNorm(width, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def position_ids(self, input_ids):
        """Absolute positions 0..L-1 (RoBERTa overrides this)."""
        return dl.arange(input_ids.shape[1], device=input_ids.device).unsqueeze(0)

    def forward(self, input_ids, token_type_ids=None, position_ids=None):
        if position_ids is None:
            position_ids = self.position_ids(input_ids)
        if position_ids.shape[-1] and not is_tracing() and int(position_ids.max()) >= \
                self.position_embeddings.num_embeddings:
            raise dl.ShapeError(f"{type(self).__name__}: the sequence needs position "
                                f"{int(position_ids.max())}, but max_position_embeddings is "
                                f"{self.position_embeddings.num_embeddings}; truncate the input")
        if token_type_ids is None:
            token_type_ids = dl.zeros(*input_ids.shape, dtype=dl.int64, device=input_ids.device)
        embeddings = (self.word_embeddings(input_ids)
                      + self.token_type_embeddings(token_type_ids)
                      + self.position_embeddings(position_ids))
        return self.dropout(self.LayerNorm(embeddings))


class BertSelfAttention(nn.Module):
    """Multi-head self-attention: all heads at once through scaled_dot_product_attention."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.num_heads = config.num_attention_heads
        self.query = nn.Linear(config.hidden_size, config.hidden_size)
        self.key = nn.Linear(config.hidden_size, config.hidden_size)
        self.value = nn.Linear(config.hidden_size, config.hidden_size)
        self.dropout_p = config.attention_probs_dropout_prob

    def forward(self, hidden_states, mask=None):
        return self_attention(hidden_states, self.query, self.key, self.value, self.num_heads,
                              mask, self.dropout_p if self.training else 0.0)


class BertSelfOutput(nn.Module):
    """Projection to the hidden size, dropout, residual and LayerNorm after attention (and,
    as BertOutput, after the feed-forward)."""

    def __init__(self, config: BertConfig, in_features: int | None = None):
        super().__init__()
        self.dense = nn.Linear(in_features or config.hidden_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, hidden_states, residual):
        return self.LayerNorm(self.dropout(self.dense(hidden_states)) + residual)


class BertAttention(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.self = BertSelfAttention(config)
        self.output = BertSelfOutput(config)

    def forward(self, hidden_states, mask=None):
        return self.output(self.self(hidden_states, mask), hidden_states)


class BertIntermediate(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.intermediate_size)
        self.activation = get_activation(config.hidden_act)

    def forward(self, hidden_states):
        return self.activation(self.dense(hidden_states))


class BertOutput(BertSelfOutput):
    """Feed-forward down-projection, dropout, residual and LayerNorm."""

    def __init__(self, config: BertConfig):
        super().__init__(config, config.intermediate_size)


class BertLayer(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.attention = BertAttention(config)
        self.intermediate = BertIntermediate(config)
        self.output = BertOutput(config)

    def forward(self, hidden_states, mask=None):
        attended = self.attention(hidden_states, mask)
        return self.output(self.intermediate(attended), attended)


class BertEncoder(LayerStack):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.layer = nn.ModuleList([BertLayer(config) for _ in range(config.num_hidden_layers)])


class BertPooler(nn.Module):
    """tanh(dense(first token's hidden state)): the sentence vector the classifier reads."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)

    def forward(self, hidden_states):
        return F.tanh(self.dense(hidden_states[:, 0]))


# ------------------------------------------------------------------------ models
class BertPreTrainedModel(PreTrainedModel):
    """BERT's config class and weight prefix, shared by the base model and the heads, which
    hold their base model under `base_model_prefix` (RoBERTa's heads reuse these with their
    own prefix and base model)."""

    config_class = BertConfig
    base_model_prefix = "bert"

    @classmethod
    def base_model_class(cls) -> type[PreTrainedModel]:
        return BertModel

    def _add_base_model(self, config: BertConfig, add_pooling_layer: bool = False) -> None:
        setattr(self, self.base_model_prefix,
                self.base_model_class()(config, add_pooling_layer=add_pooling_layer))

    def _run_base_model(self, *inputs):
        return getattr(self, self.base_model_prefix)(*inputs)


class BertModel(BertPreTrainedModel):
    """The BERT encoder: `last_hidden_state` (batch, sequence, hidden) and, with the pooling
    layer, `pooler_output` (batch, hidden)."""

    embeddings_class: type[nn.Module] = BertEmbeddings
    encoder_class: type[nn.Module] = BertEncoder
    pooler_class: type[nn.Module] = BertPooler

    def __init__(self, config: BertConfig, add_pooling_layer: bool = True):
        super().__init__(config)
        self.embeddings = self.embeddings_class(config)
        self.encoder = self.encoder_class(config)
        self.pooler = self.pooler_class(config) if add_pooling_layer else None
        self.post_init()

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None,
                position_ids=None, output_hidden_states: bool = False):
        """`attention_mask` (batch, sequence): 1 for tokens, 0 for padding."""
        last, states = encode(self.embeddings, self.encoder, input_ids, attention_mask,
                              output_hidden_states, token_type_ids, position_ids)
        pooled = self.pooler(last) if self.pooler is not None else None
        return BaseModelOutputWithPooling(last_hidden_state=last, pooler_output=pooled,
                                          hidden_states=states)


class BertPredictionHeadTransform(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.activation = get_activation(config.hidden_act)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)

    def forward(self, hidden_states):
        return self.LayerNorm(self.activation(self.dense(hidden_states)))


class BertLMPredictionHead(nn.Module):
    """Transform, then scores over the vocabulary; tied, the decoder's bias is `bias`."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.bias = nn.Parameter(dl.zeros(config.vocab_size))
        self.transform = BertPredictionHeadTransform(config)
        self.decoder = nn.Linear(config.hidden_size, config.vocab_size)

    def forward(self, hidden_states):
        return self.decoder(self.transform(hidden_states))


class BertOnlyMLMHead(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.predictions = BertLMPredictionHead(config)

    def forward(self, hidden_states):
        return self.predictions(hidden_states)


class BertForMaskedLM(BertPreTrainedModel):
    """Scores over the vocabulary for every position; the decoder shares the word
    embeddings. `labels` (-100 where not masked) gives the masked-LM loss."""
    _tied_weights = [("cls.predictions.decoder.weight", "bert.embeddings.word_embeddings.weight"),
                     ("cls.predictions.decoder.bias", "cls.predictions.bias")]
    mlm_head = ("cls", BertOnlyMLMHead)  # (attribute, class): the weight names follow it

    def __init__(self, config: BertConfig):
        super().__init__(config)
        self._add_base_model(config)
        name, head_class = self.mlm_head
        setattr(self, name, head_class(config))
        self.post_init()

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None,
                position_ids=None, labels=None, output_hidden_states: bool = False):
        out = self._run_base_model(input_ids, attention_mask, token_type_ids, position_ids,
                                   output_hidden_states)
        logits = getattr(self, self.mlm_head[0])(out.last_hidden_state)
        return masked_lm_output(logits, labels, out.hidden_states)


def classifier_dropout_rate(config: BertConfig) -> float:
    return config.classifier_dropout if config.classifier_dropout is not None \
        else config.hidden_dropout_prob


class BertLinearClassifierModel(BertPreTrainedModel):
    """Dropout and a linear `classifier` on the pooled output (when `pooled`) or on every
    token's hidden state: what the sequence and token classifiers share."""

    pooled = False

    def __init__(self, config: BertConfig):
        super().__init__(config)
        self._add_base_model(config, add_pooling_layer=self.pooled)
        self.dropout = nn.Dropout(classifier_dropout_rate(config))
        self.classifier = nn.Linear(config.hidden_size, config.num_labels)
        self.post_init()

    def _classify(self, *inputs):
        """(logits, hidden states) of the base model run on `inputs`."""
        out = self._run_base_model(*inputs)
        features = out.pooler_output if self.pooled else out.last_hidden_state
        return self.classifier(self.dropout(features)), out.hidden_states


class BertForSequenceClassification(BertLinearClassifierModel):
    """A linear classifier on the pooled output; `labels` gives the loss for
    `config.problem_type` (regression, single- or multi-label)."""

    pooled = True

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None,
                position_ids=None, labels=None, output_hidden_states: bool = False):
        logits, states = self._classify(input_ids, attention_mask, token_type_ids,
                                        position_ids, output_hidden_states)
        return sequence_classifier_output(logits, labels, self.config, states)


class BertForTokenClassification(BertLinearClassifierModel):
    """A linear classifier on every token's hidden state (NER, tagging)."""

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None,
                position_ids=None, labels=None, output_hidden_states: bool = False):
        logits, states = self._classify(input_ids, attention_mask, token_type_ids,
                                        position_ids, output_hidden_states)
        return token_classifier_output(logits, labels, states)


class BertForQuestionAnswering(BertPreTrainedModel):
    """Start and end logits of the answer span over the tokens (extractive QA)."""

    def __init__(self, config: BertConfig):
        super().__init__(config)
        self._add_base_model(config)
        self.qa_outputs = nn.Linear(config.hidden_size, span_label_count(config))
        self.post_init()

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None,
                position_ids=None, start_positions=None, end_positions=None,
                output_hidden_states: bool = False):
        out = self._run_base_model(input_ids, attention_mask, token_type_ids, position_ids,
                                   output_hidden_states)
        return question_answering_output(self.qa_outputs, out.last_hidden_state,
                                         start_positions, end_positions, out.hidden_states)


class BertForMultipleChoice(BertPreTrainedModel):
    """One score per choice: each (context, choice) sequence of the (batch, choices,
    sequence) inputs through the encoder, and a linear scorer on its pooled output;
    `labels` (the right choice's index) gives the cross-entropy over the choices."""

    def __init__(self, config: BertConfig):
        super().__init__(config)
        self._add_base_model(config, add_pooling_layer=True)
        self.dropout = nn.Dropout(self.choice_dropout_rate(config))
        self.classifier = nn.Linear(config.hidden_size, 1)
        self.post_init()

    @staticmethod
    def choice_dropout_rate(config: BertConfig) -> float:
        return classifier_dropout_rate(config)

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None,
                position_ids=None, labels=None, output_hidden_states: bool = False):
        choices, *flat = flatten_choices(input_ids, attention_mask, token_type_ids,
                                         position_ids)
        out = self._run_base_model(*flat, output_hidden_states)
        scores = self.classifier(self.dropout(out.pooler_output))
        return multiple_choice_output(scores, choices, labels, out.hidden_states)


MODEL_TYPE = "bert"
CONFIG = BertConfig
HEADS = {"base": BertModel, "masked_lm": BertForMaskedLM,
         "sequence_classification": BertForSequenceClassification,
         "token_classification": BertForTokenClassification,
         "question_answering": BertForQuestionAnswering,
         "multiple_choice": BertForMultipleChoice}
