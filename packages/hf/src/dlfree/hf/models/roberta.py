"""RoBERTa (Liu et al., 2019): BERT's encoder with positions counted from the padding index
and its own masked-LM and classification heads (`roberta.`, `lm_head.`, `classifier.`)."""

from __future__ import annotations

import dlfree as dl
from dlfree import functional as F
from dlfree import nn

import attrs

from ..configuration import positive_int, token_id
from ..modeling import embedding
from .bert import (
    BertConfig,
    BertEmbeddings,
    BertForMaskedLM,
    BertForMultipleChoice,
    BertForQuestionAnswering,
    BertForTokenClassification,
    BertModel,
    BertPreTrainedModel,
    classifier_dropout_rate,
)
from .encoder import sequence_classifier_output

__all__ = ["RobertaConfig", "RobertaPreTrainedModel", "RobertaModel", "RobertaForMaskedLM",
           "RobertaForSequenceClassification", "RobertaForTokenClassification",
           "RobertaForQuestionAnswering", "RobertaForMultipleChoice"]


@attrs.define(kw_only=True, slots=False)
class RobertaConfig(BertConfig):
    """transformers' RobertaConfig: BertConfig's fields with RoBERTa's special tokens."""

    model_type = "roberta"

    vocab_size: int = attrs.field(default=50265, validator=positive_int)
    pad_token_id: int | None = attrs.field(default=1, validator=token_id)
    bos_token_id: int | None = attrs.field(default=0, validator=token_id)
    eos_token_id: int | list[int] | None = attrs.field(default=2, validator=token_id)


class RobertaEmbeddings(BertEmbeddings):
    """BERT's embeddings, but a token's position is padding_idx + 1 + its index among the
    non-padding tokens, and padding tokens get position padding_idx."""

    def __init__(self, config: RobertaConfig):
        super().__init__(config)
        self.padding_idx = config.pad_token_id
        self.position_embeddings = embedding(config.max_position_embeddings,
                                                config.hidden_size, padding_idx=self.padding_idx)

    def position_ids(self, input_ids):
        real = (input_ids != self.padding_idx).long()
        return dl.cumsum(real, dim=1) * real + self.padding_idx


class RobertaPreTrainedModel(BertPreTrainedModel):
    """RoBERTa's config class, weight prefix and base model, shared by the base model and the
    heads (which are BERT's heads under these names unless RoBERTa's differ)."""

    config_class = RobertaConfig
    base_model_prefix = "roberta"

    @classmethod
    def base_model_class(cls) -> type[BertModel]:
        return RobertaModel


class RobertaModel(RobertaPreTrainedModel, BertModel):
    """The RoBERTa encoder: `last_hidden_state` and, with the pooling layer,
    `pooler_output`."""

    embeddings_class = RobertaEmbeddings


class RobertaLMHead(nn.Module):
    """dense, gelu, layer_norm, then scores over the vocabulary (tied, the decoder's bias
    is `bias`)."""

    def __init__(self, config: RobertaConfig):
        super().__init__()
        self.bias = nn.Parameter(dl.zeros(config.vocab_size))
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.layer_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.decoder = nn.Linear(config.hidden_size, config.vocab_size)

    def forward(self, features):
        return self.decoder(self.layer_norm(F.gelu(self.dense(features))))


class RobertaForMaskedLM(RobertaPreTrainedModel, BertForMaskedLM):
    """Scores over the vocabulary for every position; the decoder shares the word
    embeddings. `labels` (-100 where not masked) gives the masked-LM loss."""
    _tied_weights = [("lm_head.decoder.weight", "roberta.embeddings.word_embeddings.weight"),
                     ("lm_head.decoder.bias", "lm_head.bias")]
    mlm_head = ("lm_head", RobertaLMHead)


class RobertaClassificationHead(nn.Module):
    """On the first token (<s>): dropout, dense, tanh, dropout, out_proj."""

    def __init__(self, config: RobertaConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.dropout = nn.Dropout(classifier_dropout_rate(config))
        self.out_proj = nn.Linear(config.hidden_size, config.num_labels)

    def forward(self, features):
        x = self.dropout(F.tanh(self.dense(self.dropout(features[:, 0]))))
        return self.out_proj(x)


class RobertaForSequenceClassification(RobertaPreTrainedModel):
    """RoBERTa's classification head on <s>; `labels` gives the loss for
    `config.problem_type` (regression, single- or multi-label)."""

    def __init__(self, config: RobertaConfig):
        super().__init__(config)
        self._add_base_model(config)
        self.classifier = RobertaClassificationHead(config)
        self.post_init()

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None,
                position_ids=None, labels=None, output_hidden_states: bool = False):
        out = self._run_base_model(input_ids, attention_mask, token_type_ids, position_ids,
                                   output_hidden_states)
        logits = self.classifier(out.last_hidden_state)
        return sequence_classifier_output(logits, labels, self.config, out.hidden_states)


class RobertaForTokenClassification(RobertaPreTrainedModel, BertForTokenClassification):
    """A linear classifier on every token's hidden state (NER, tagging)."""


class RobertaForQuestionAnswering(RobertaPreTrainedModel, BertForQuestionAnswering):
    """Start and end logits of the answer span over the tokens (extractive QA)."""


class RobertaForMultipleChoice(RobertaPreTrainedModel, BertForMultipleChoice):
    """One score per choice from the pooled output of each (context, choice) sequence."""

    @staticmethod
    def choice_dropout_rate(config: BertConfig) -> float:
        return config.hidden_dropout_prob  # RoBERTa's scorer ignores classifier_dropout


MODEL_TYPE = "roberta"
CONFIG = RobertaConfig
HEADS = {"base": RobertaModel, "masked_lm": RobertaForMaskedLM,
         "sequence_classification": RobertaForSequenceClassification,
         "token_classification": RobertaForTokenClassification,
         "question_answering": RobertaForQuestionAnswering,
         "multiple_choice": RobertaForMultipleChoice}
