"""XLM-RoBERTa (Conneau et al., 2020): RoBERTa's architecture and weight names under its own
`model_type` ("xlm-roberta") and class names, with a SentencePiece (Unigram) vocabulary."""

from __future__ import annotations

import attrs

from ..configuration import positive_int
from .roberta import (
    RobertaConfig,
    RobertaForMaskedLM,
    RobertaForMultipleChoice,
    RobertaForQuestionAnswering,
    RobertaForSequenceClassification,
    RobertaForTokenClassification,
    RobertaModel,
    RobertaPreTrainedModel,
)

__all__ = ["XLMRobertaConfig", "XLMRobertaPreTrainedModel", "XLMRobertaModel",
           "XLMRobertaForMaskedLM", "XLMRobertaForSequenceClassification",
           "XLMRobertaForTokenClassification", "XLMRobertaForQuestionAnswering",
           "XLMRobertaForMultipleChoice"]


@attrs.define(kw_only=True, slots=False)
class XLMRobertaConfig(RobertaConfig):
    """transformers' XLMRobertaConfig: RoBERTa's fields with XLM-R's own defaults."""

    model_type = "xlm-roberta"

    vocab_size: int = attrs.field(default=30522, validator=positive_int)


class XLMRobertaPreTrainedModel(RobertaPreTrainedModel):
    """XLM-RoBERTa's config class and base model; the weight prefix stays "roberta"."""

    config_class = XLMRobertaConfig

    @classmethod
    def base_model_class(cls) -> type[RobertaModel]:
        return XLMRobertaModel


class XLMRobertaModel(XLMRobertaPreTrainedModel, RobertaModel):
    """The XLM-RoBERTa encoder: `last_hidden_state` and, with the pooling layer,
    `pooler_output`."""


class XLMRobertaForMaskedLM(XLMRobertaPreTrainedModel, RobertaForMaskedLM):
    """Scores over the vocabulary for every position (decoder tied to the word embeddings)."""


class XLMRobertaForSequenceClassification(XLMRobertaPreTrainedModel,
                                          RobertaForSequenceClassification):
    """RoBERTa's classification head on <s>."""


class XLMRobertaForTokenClassification(XLMRobertaPreTrainedModel,
                                       RobertaForTokenClassification):
    """A linear classifier on every token's hidden state (NER, tagging)."""


class XLMRobertaForQuestionAnswering(XLMRobertaPreTrainedModel, RobertaForQuestionAnswering):
    """Start and end logits of the answer span over the tokens (extractive QA)."""


class XLMRobertaForMultipleChoice(XLMRobertaPreTrainedModel, RobertaForMultipleChoice):
    """One score per choice from the pooled output of each (context, choice) sequence."""


MODEL_TYPE = "xlm-roberta"
CONFIG = XLMRobertaConfig
HEADS = {"base": XLMRobertaModel, "masked_lm": XLMRobertaForMaskedLM,
         "sequence_classification": XLMRobertaForSequenceClassification,
         "token_classification": XLMRobertaForTokenClassification,
         "question_answering": XLMRobertaForQuestionAnswering,
         "multiple_choice": XLMRobertaForMultipleChoice}
