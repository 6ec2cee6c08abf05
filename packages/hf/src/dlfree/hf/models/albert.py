"""ALBERT (Lan et al., 2020): BERT with factorised embeddings (a small `embedding_size`
projected up to the hidden size) and one set of layer weights shared by every layer of a
group, with transformers' weight names (`albert.encoder.albert_layer_groups.0...`)."""

from __future__ import annotations

import dlfree as dl
from dlfree import functional as F
from dlfree import nn

import attrs

from ..configuration import (
    PretrainedConfig,
    one_of,
    positive_float,
    positive_int,
    probability,
    token_id,
)
from ..modeling import ACTIVATIONS, get_activation
from .bert import (
    BertEmbeddings,
    BertForMaskedLM,
    BertForMultipleChoice,
    BertForQuestionAnswering,
    BertForSequenceClassification,
    BertForTokenClassification,
    BertModel,
    BertPreTrainedModel,
)
from .encoder import LayerStack, self_attention

__all__ = ["AlbertConfig", "AlbertPreTrainedModel", "AlbertModel", "AlbertForMaskedLM",
           "AlbertForSequenceClassification", "AlbertForTokenClassification",
           "AlbertForQuestionAnswering", "AlbertForMultipleChoice"]


@attrs.define(kw_only=True, slots=False)
class AlbertConfig(PretrainedConfig):
    """transformers' AlbertConfig fields (albert-xxlarge's shapes by default, as there)."""

    model_type = "albert"
    # BERT's heads read `classifier_dropout`; ALBERT names it classifier_dropout_prob.
    attribute_map = {"classifier_dropout": "classifier_dropout_prob"}

    vocab_size: int = attrs.field(default=30000, validator=positive_int)
    embedding_size: int = attrs.field(default=128, validator=positive_int)
    hidden_size: int = attrs.field(default=4096, validator=positive_int)
    num_hidden_layers: int = attrs.field(default=12, validator=positive_int)
    num_hidden_groups: int = attrs.field(default=1, validator=positive_int)
    num_attention_heads: int = attrs.field(default=64, validator=positive_int)
    intermediate_size: int = attrs.field(default=16384, validator=positive_int)
    inner_group_num: int = attrs.field(default=1, validator=positive_int)
    hidden_act: str = attrs.field(default="gelu_new", validator=one_of(*ACTIVATIONS))
    hidden_dropout_prob: float = attrs.field(default=0.0, validator=probability)
    attention_probs_dropout_prob: float = attrs.field(default=0.0, validator=probability)
    max_position_embeddings: int = attrs.field(default=512, validator=positive_int)
    type_vocab_size: int = attrs.field(default=2, validator=positive_int)
    initializer_range: float = attrs.field(default=0.02, validator=positive_float)
    layer_norm_eps: float = attrs.field(default=1e-12, validator=positive_float)
    classifier_dropout_prob: float = attrs.field(default=0.1, validator=probability)
    pad_token_id: int | None = attrs.field(default=0, validator=token_id)
    bos_token_id: int | None = attrs.field(default=2, validator=token_id)
    eos_token_id: int | list[int] | None = attrs.field(default=3, validator=token_id)

    def validate(self) -> None:
        if self.hidden_size % self.num_attention_heads:
            raise ValueError(f"AlbertConfig: hidden_size ({self.hidden_size}) must be divisible "
                             f"by num_attention_heads ({self.num_attention_heads})")
        if self.num_hidden_groups > self.num_hidden_layers:
            raise ValueError(f"AlbertConfig: num_hidden_groups ({self.num_hidden_groups}) must "
                             f"not exceed num_hidden_layers ({self.num_hidden_layers}): every "
                             "group of shared weights serves at least one layer")
        if self.extra.get("position_embedding_type", "absolute") != "absolute":
            raise ValueError(f"AlbertConfig: position_embedding_type "
                             f"{self.extra['position_embedding_type']!r} is not supported; "
                             "dl.free's ALBERT has absolute positions")


# ------------------------------------------------------------------------ layers
class AlbertEmbeddings(BertEmbeddings):
    """BERT's embeddings at the (smaller) `embedding_size`."""

    def __init__(self, config: AlbertConfig):
        super().__init__(config, width=config.embedding_size)


class AlbertAttention(nn.Module):
    """Self-attention, its output projection, dropout, residual and LayerNorm in one module
    (ALBERT's weight layout: `attention.query`, `attention.dense`, `attention.LayerNorm`)."""

    def __init__(self, config: AlbertConfig):
        super().__init__()
        self.num_heads = config.num_attention_heads
        self.query = nn.Linear(config.hidden_size, config.hidden_size)
        self.key = nn.Linear(config.hidden_size, config.hidden_size)
        self.value = nn.Linear(config.hidden_size, config.hidden_size)
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.output_dropout = nn.Dropout(config.hidden_dropout_prob)
        self.dropout_p = config.attention_probs_dropout_prob

    def forward(self, hidden_states, mask=None):
        context = self_attention(hidden_states, self.query, self.key, self.value,
                                 self.num_heads, mask, self.dropout_p if self.training else 0.0)
        return self.LayerNorm(hidden_states + self.output_dropout(self.dense(context)))


class AlbertLayer(nn.Module):
    """Attention, then the feed-forward (ffn, activation, ffn_output) with a residual into
    `full_layer_layer_norm`."""

    def __init__(self, config: AlbertConfig):
        super().__init__()
        self.full_layer_layer_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.attention = AlbertAttention(config)
        self.ffn = nn.Linear(config.hidden_size, config.intermediate_size)
        self.ffn_output = nn.Linear(config.intermediate_size, config.hidden_size)
        self.activation = get_activation(config.hidden_act)

    def forward(self, hidden_states, mask=None):
        attended = self.attention(hidden_states, mask)
        return self.full_layer_layer_norm(
            self.ffn_output(self.activation(self.ffn(attended))) + attended)


class AlbertLayerGroup(nn.Module):
    """`inner_group_num` layers whose weights every use of the group shares."""

    def __init__(self, config: AlbertConfig):
        super().__init__()
        self.albert_layers = nn.ModuleList([AlbertLayer(config)
                                            for _ in range(config.inner_group_num)])


class AlbertTransformer(LayerStack):
    """The embeddings projected to the hidden size, then `num_hidden_layers` uses of the
    layer groups: use i runs group i * num_hidden_groups // num_hidden_layers (so with
    one group, the same weights run every time)."""

    def __init__(self, config: AlbertConfig):
        super().__init__()
        self.uses, self.groups = config.num_hidden_layers, config.num_hidden_groups
        self.embedding_hidden_mapping_in = nn.Linear(config.embedding_size, config.hidden_size)
        self.albert_layer_groups = nn.ModuleList([AlbertLayerGroup(config)
                                                  for _ in range(config.num_hidden_groups)])

    @property
    def layer(self):  # the layers in the order they run, shared weights repeated
        return [layer for use in range(self.uses)
                for layer in self.albert_layer_groups[use * self.groups // self.uses].albert_layers]

    def forward(self, hidden_states, mask=None, output_hidden_states: bool = False):
        return super().forward(self.embedding_hidden_mapping_in(hidden_states), mask,
                               output_hidden_states)


class AlbertPooler(nn.Linear):
    """tanh(linear(first token's hidden state)); a bare Linear in the checkpoint
    (`albert.pooler.weight`)."""

    def __init__(self, config: AlbertConfig):
        super().__init__(config.hidden_size, config.hidden_size)

    def forward(self, hidden_states):
        return F.tanh(super().forward(hidden_states[:, 0]))


class AlbertMLMHead(nn.Module):
    """dense down to the embedding size, activation, LayerNorm, then scores over the
    vocabulary (tied: the decoder is the word embeddings and its bias is `bias`)."""

    def __init__(self, config: AlbertConfig):
        super().__init__()
        self.LayerNorm = nn.LayerNorm(config.embedding_size, eps=config.layer_norm_eps)
        self.bias = nn.Parameter(dl.zeros(config.vocab_size))
        self.dense = nn.Linear(config.hidden_size, config.embedding_size)
        self.decoder = nn.Linear(config.embedding_size, config.vocab_size)
        self.activation = get_activation(config.hidden_act)

    def forward(self, hidden_states):
        return self.decoder(self.LayerNorm(self.activation(self.dense(hidden_states))))


# ------------------------------------------------------------------------ models
class AlbertPreTrainedModel(BertPreTrainedModel):
    """ALBERT's config class, weight prefix and base model; the heads are BERT's under these
    names where ALBERT's have the same layout."""

    config_class = AlbertConfig
    base_model_prefix = "albert"

    @classmethod
    def base_model_class(cls) -> type[BertModel]:
        return AlbertModel


class AlbertModel(AlbertPreTrainedModel, BertModel):
    """The ALBERT encoder: `last_hidden_state` and, with the pooling layer,
    `pooler_output`."""

    embeddings_class = AlbertEmbeddings
    encoder_class = AlbertTransformer
    pooler_class = AlbertPooler


class AlbertForMaskedLM(AlbertPreTrainedModel, BertForMaskedLM):
    """Scores over the vocabulary for every position; the decoder shares the word
    embeddings. `labels` (-100 where not masked) gives the masked-LM loss."""
    _tied_weights = [("predictions.decoder.weight", "albert.embeddings.word_embeddings.weight"),
                     ("predictions.decoder.bias", "predictions.bias")]
    mlm_head = ("predictions", AlbertMLMHead)


class AlbertForSequenceClassification(AlbertPreTrainedModel, BertForSequenceClassification):
    """A linear classifier on the pooled output."""


class AlbertForTokenClassification(AlbertPreTrainedModel, BertForTokenClassification):
    """A linear classifier on every token's hidden state (NER, tagging)."""


class AlbertForQuestionAnswering(AlbertPreTrainedModel, BertForQuestionAnswering):
    """Start and end logits of the answer span over the tokens (extractive QA)."""


class AlbertForMultipleChoice(AlbertPreTrainedModel, BertForMultipleChoice):
    """One score per choice from the pooled output of each (context, choice) sequence."""


MODEL_TYPE = "albert"
CONFIG = AlbertConfig
HEADS = {"base": AlbertModel, "masked_lm": AlbertForMaskedLM,
         "sequence_classification": AlbertForSequenceClassification,
         "token_classification": AlbertForTokenClassification,
         "question_answering": AlbertForQuestionAnswering,
         "multiple_choice": AlbertForMultipleChoice}
