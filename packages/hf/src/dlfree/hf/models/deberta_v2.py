"""DeBERTa-v2 and v3 (He et al., 2021): BERT's layout with disentangled attention — content
and relative-position terms scored separately (content-to-position "c2p", position-to-content
"p2c") over a table of relative-position embeddings, optionally log-bucketed
(`position_buckets`) and projected by the content weights (`share_att_key`, as v3) — with
transformers' weight names (`deberta.encoder.layer.0.attention.self.query_proj`, ...)."""

from __future__ import annotations

import dlfree as dl
from dlfree import functional as F
from dlfree import nn

import attrs
import numpy as np

from ..configuration import (
    PretrainedConfig,
    boolean,
    non_negative_int,
    one_of,
    optional,
    positive_float,
    positive_int,
    probability,
    token_id,
)
from ..modeling import (
    ACTIVATIONS,
    BaseModelOutput,
    SequenceClassifierOutput,
    embedding,
    get_activation,
    sequence_classification_loss,
)
from .bert import (
    BertForQuestionAnswering,
    BertForTokenClassification,
    BertPreTrainedModel,
    BertSelfOutput,
)
from .decoder import run_layers
from .encoder import (
    as_input_ids,
    flatten_choices,
    masked_lm_output,
    multiple_choice_output,
    optional_ids,
)

__all__ = ["DebertaV2Config", "DebertaV2PreTrainedModel", "DebertaV2Model",
           "DebertaV2ForMaskedLM", "DebertaV2ForSequenceClassification",
           "DebertaV2ForTokenClassification", "DebertaV2ForQuestionAnswering",
           "DebertaV2ForMultipleChoice", "relative_positions"]

_ATTENTION_TYPES = ("c2p", "p2c")


def _attention_types(value):
    """pos_att_type as a list: configs hold a list or a "p2c|c2p" string."""
    if isinstance(value, str):
        return [part.strip() for part in value.lower().split("|") if part.strip()]
    return value


def _known_types(instance, attribute, value) -> None:
    if value is None:
        return
    if not isinstance(value, list) or not set(value) <= set(_ATTENTION_TYPES):
        raise ValueError(f"DebertaV2Config.pos_att_type must be a list of {_ATTENTION_TYPES} "
                         f"(or a 'p2c|c2p' string), got {value!r}")


@attrs.define(kw_only=True, slots=False)
class DebertaV2Config(PretrainedConfig):
    """transformers' DebertaV2Config fields (deberta-v2-xlarge's values by default) and the
    keys v3 checkpoints add (position_buckets, share_att_key, norm_rel_ebd)."""

    model_type = "deberta-v2"

    vocab_size: int = attrs.field(default=128100, validator=positive_int)
    hidden_size: int = attrs.field(default=1536, validator=positive_int)
    num_hidden_layers: int = attrs.field(default=24, validator=positive_int)
    num_attention_heads: int = attrs.field(default=24, validator=positive_int)
    intermediate_size: int = attrs.field(default=6144, validator=positive_int)
    hidden_act: str = attrs.field(default="gelu", validator=one_of(*ACTIVATIONS))
    hidden_dropout_prob: float = attrs.field(default=0.1, validator=probability)
    attention_probs_dropout_prob: float = attrs.field(default=0.1, validator=probability)
    max_position_embeddings: int = attrs.field(default=512, validator=positive_int)
    type_vocab_size: int = attrs.field(default=0, validator=non_negative_int)
    initializer_range: float = attrs.field(default=0.02, validator=positive_float)
    layer_norm_eps: float = attrs.field(default=1e-7, validator=positive_float)
    relative_attention: bool = attrs.field(default=False, validator=boolean)
    max_relative_positions: int = -1
    position_buckets: int = -1
    share_att_key: bool = attrs.field(default=False, validator=boolean)
    norm_rel_ebd: str = "none"
    position_biased_input: bool = attrs.field(default=True, validator=boolean)
    pos_att_type: list[str] | None = attrs.field(default=None, converter=_attention_types,
                                                 validator=_known_types)
    pooler_dropout: float = attrs.field(default=0.0, validator=probability)
    pooler_hidden_act: str = attrs.field(default="gelu", validator=one_of(*ACTIVATIONS))
    embedding_size: int | None = attrs.field(default=None, validator=optional(positive_int))
    cls_dropout: float | None = attrs.field(default=None, validator=optional(probability))
    legacy: bool = attrs.field(default=True, validator=boolean)
    pad_token_id: int | None = attrs.field(default=0, validator=token_id)

    def __attrs_post_init__(self) -> None:
        # resolved, so config.json never says null (transformers reads null as the size)
        if self.embedding_size is None:
            self.embedding_size = self.hidden_size
        super().__attrs_post_init__()

    @property
    def classifier_dropout(self) -> None:  # BERT's token classifier falls back to hidden's
        return None

    @property
    def position_table(self) -> int:
        """Half the rows of the relative-position table: the buckets, else the largest
        distance (max_relative_positions, or max_position_embeddings when unset)."""
        if self.position_buckets > 0:
            return self.position_buckets
        return self.max_distance

    @property
    def max_distance(self) -> int:
        return self.max_relative_positions if self.max_relative_positions >= 1 \
            else self.max_position_embeddings

    def validate(self) -> None:
        if self.hidden_size % self.num_attention_heads:
            raise ValueError(f"DebertaV2Config: hidden_size ({self.hidden_size}) must be "
                             f"divisible by num_attention_heads ({self.num_attention_heads})")
        if self.extra.get("conv_kernel_size", 0):
            raise ValueError("DebertaV2Config: conv_kernel_size > 0 (the convolution beside the "
                             "first layer) is not supported by dl.free's DeBERTa-v2")
        if self.extra.get("pooler_hidden_size", self.hidden_size) != self.hidden_size:
            raise ValueError("DebertaV2Config: pooler_hidden_size must equal hidden_size (the "
                             "classifier reads hidden_size features)")


def relative_positions(length: int, buckets: int, max_distance: int) -> np.ndarray:
    """(length, length) relative positions query - key; with `buckets` > 0, distances past
    buckets / 2 fall into log-spaced buckets up to `max_distance` (transformers'
    make_log_bucket_position, in float32 as it computes)."""
    ids = np.arange(length)
    relative = ids[:, None] - ids[None, :]
    if buckets <= 0 or max_distance <= 0:
        return relative
    mid = buckets // 2
    sign = np.sign(relative)
    distance = np.where((relative < mid) & (relative > -mid), mid - 1, np.abs(relative))
    logs = np.ceil(np.log(distance.astype(np.float32) / np.float32(mid))
                   / np.log(np.float32((max_distance - 1) / mid)) * np.float32(mid - 1)) + mid
    return np.where(distance <= mid, relative, logs * sign).astype(np.int64)


# ------------------------------------------------------------------------ layers
class DebertaV2Embeddings(nn.Module):
    """Word (+ absolute position, if position_biased_input) (+ token type, if any)
    embeddings, projected to the hidden size when embedding_size differs, LayerNorm, padding
    zeroed, dropout."""

    def __init__(self, config: DebertaV2Config):
        super().__init__()
        width = config.embedding_size
        self.word_embeddings = embedding(config.vocab_size, width,
                                         padding_idx=config.pad_token_id)
        self.position_embeddings = embedding(config.max_position_embeddings, width) \
            if config.position_biased_input else None
        self.token_type_embeddings = embedding(config.type_vocab_size, width) \
            if config.type_vocab_size > 0 else None
        self.embed_proj = nn.Linear(width, config.hidden_size, bias=False) \
            if width != config.hidden_size else None
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, input_ids, token_type_ids, position_ids, mask):
        embeddings = self.word_embeddings(input_ids)
        if self.position_embeddings is not None:
            if position_ids is None:
                position_ids = dl.arange(input_ids.shape[1], device=input_ids.device).unsqueeze(0)
            embeddings = embeddings + self.position_embeddings(position_ids)
        if self.token_type_embeddings is not None:
            if token_type_ids is None:
                token_type_ids = dl.zeros(*input_ids.shape, dtype=dl.int64,
                                          device=input_ids.device)
            embeddings = embeddings + self.token_type_embeddings(token_type_ids)
        if self.embed_proj is not None:
            embeddings = self.embed_proj(embeddings)
        embeddings = self.LayerNorm(embeddings) * mask.unsqueeze(-1).to(embeddings.dtype)
        return self.dropout(embeddings)


class DisentangledSelfAttention(nn.Module):
    """Content-to-content scores plus, with relative attention, content-to-position (query
    against the position table's keys, at each pair's relative position) and
    position-to-content (keys against the table's queries) scores, all scaled by
    sqrt(head_dim × the number of terms)."""

    def __init__(self, config: DebertaV2Config):
        super().__init__()
        self.num_heads = config.num_attention_heads
        self.head_dim = config.hidden_size // config.num_attention_heads
        width = config.hidden_size
        self.query_proj = nn.Linear(width, width)
        self.key_proj = nn.Linear(width, width)
        self.value_proj = nn.Linear(width, width)
        self.relative = config.relative_attention
        self.types = list(config.pos_att_type or []) if self.relative else []
        self.share_att_key = config.share_att_key
        self.span = config.position_table
        if self.relative and not self.share_att_key:
            if "c2p" in self.types:
                self.pos_key_proj = nn.Linear(width, width)
            if "p2c" in self.types:
                self.pos_query_proj = nn.Linear(width, width)
        self.pos_dropout = nn.Dropout(config.hidden_dropout_prob)
        self.dropout = nn.Dropout(config.attention_probs_dropout_prob)

    def _heads(self, x):
        return x.reshape(x.shape[0], x.shape[1], self.num_heads, self.head_dim).transpose(1, 2)

    def forward(self, hidden_states, mask, relative_pos, rel_embeddings):
        query = self._heads(self.query_proj(hidden_states))
        key = self._heads(self.key_proj(hidden_states))
        value = self._heads(self.value_proj(hidden_states))
        # the square root taken in float32, as transformers does whatever the dtype
        scale = float(np.sqrt(np.float32(self.head_dim * (1 + len(self.types)))))
        scores = query @ (key.transpose(-1, -2) / scale)
        if self.relative and self.types:
            scores = scores + self._position_scores(query, key, relative_pos,
                                                    self.pos_dropout(rel_embeddings), scale)
        scores = scores.masked_fill(~mask, float(np.finfo(scores.dtype.name).min))
        probs = self.dropout(F.softmax(scores, dim=-1))
        context = probs @ value
        batch, _, length, _ = context.shape
        return context.transpose(1, 2).reshape(batch, length, -1)

    def _position_scores(self, query, key, relative_pos: np.ndarray, rel_embeddings, scale):
        table = rel_embeddings[:2 * self.span].unsqueeze(0)
        batch, heads, length, _ = query.shape
        shape = (batch, heads, length, length)
        device = query.device
        score = 0
        if "c2p" in self.types:
            projection = self.key_proj if self.share_att_key else self.pos_key_proj
            position_keys = self._heads(projection(table))
            index = np.clip(relative_pos + self.span, 0, 2 * self.span - 1)
            c2p = query @ position_keys.transpose(-1, -2)
            score = score + c2p.gather(-1, dl.as_tensor(index, device=device).expand(*shape)) \
                / scale
        if "p2c" in self.types:
            projection = self.query_proj if self.share_att_key else self.pos_query_proj
            position_queries = self._heads(projection(table))
            index = np.clip(-relative_pos + self.span, 0, 2 * self.span - 1)
            p2c = key @ position_queries.transpose(-1, -2)
            p2c = p2c.gather(-1, dl.as_tensor(index, device=device).expand(*shape))
            score = score + p2c.transpose(-1, -2) / scale
        return score


class DebertaV2Attention(nn.Module):
    def __init__(self, config: DebertaV2Config):
        super().__init__()
        self.self = DisentangledSelfAttention(config)
        self.output = BertSelfOutput(config)

    def forward(self, hidden_states, mask, relative_pos, rel_embeddings):
        return self.output(self.self(hidden_states, mask, relative_pos, rel_embeddings),
                           hidden_states)


class DebertaV2Intermediate(nn.Module):
    def __init__(self, config: DebertaV2Config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.intermediate_size)
        self.activation = get_activation(config.hidden_act)

    def forward(self, hidden_states):
        return self.activation(self.dense(hidden_states))


class DebertaV2Layer(nn.Module):
    def __init__(self, config: DebertaV2Config):
        super().__init__()
        self.attention = DebertaV2Attention(config)
        self.intermediate = DebertaV2Intermediate(config)
        self.output = BertSelfOutput(config, config.intermediate_size)

    def forward(self, hidden_states, mask, relative_pos, rel_embeddings):
        attended = self.attention(hidden_states, mask, relative_pos, rel_embeddings)
        return self.output(self.intermediate(attended), attended)


class DebertaV2Encoder(nn.Module):
    """The layers, with the relative-position table (`rel_embeddings`, layer-normed when
    norm_rel_ebd says "layer_norm") they share."""

    def __init__(self, config: DebertaV2Config):
        super().__init__()
        self.layer = nn.ModuleList([DebertaV2Layer(config)
                                    for _ in range(config.num_hidden_layers)])
        self.relative = config.relative_attention
        self.buckets, self.max_distance = config.position_buckets, config.max_distance
        if self.relative:
            self.rel_embeddings = embedding(2 * config.position_table, config.hidden_size)
        self.normed = "layer_norm" in [part.strip() for part in
                                       config.norm_rel_ebd.lower().split("|")]
        if self.normed:
            self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)

    def forward(self, hidden_states, mask, output_hidden_states: bool):
        """`mask` (batch, 1, queries, keys): which pairs attend."""
        relative_pos = table = None
        if self.relative:
            relative_pos = relative_positions(hidden_states.shape[1], self.buckets,
                                              self.max_distance)
            table = self.rel_embeddings.weight
            if self.normed:
                table = self.LayerNorm(table)
        args = [(mask, relative_pos, table)] * len(self.layer)
        out = run_layers(hidden_states, self.layer, args, lambda h: h, None,
                         output_hidden_states)
        return out.last_hidden_state, out.hidden_states


class ContextPooler(nn.Module):
    """activation(dense(dropout(first token's state))), the classifiers' sentence vector."""

    def __init__(self, config: DebertaV2Config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.dropout = nn.Dropout(config.pooler_dropout)
        self.activation = get_activation(config.pooler_hidden_act)

    def forward(self, hidden_states):
        return self.activation(self.dense(self.dropout(hidden_states[:, 0])))


# ------------------------------------------------------------------------ models
class DebertaV2PreTrainedModel(BertPreTrainedModel):
    """DeBERTa-v2's config class, weight prefix and base model, shared by the heads (BERT's
    token classifier and span head under these names)."""

    config_class = DebertaV2Config
    base_model_prefix = "deberta"
    # v3 checkpoints may carry an absolute position table their config does not use
    _ignore_on_load = [*BertPreTrainedModel._ignore_on_load, r"position_embeddings"]

    @classmethod
    def base_model_class(cls):
        return DebertaV2Model

    def _add_base_model(self, config: DebertaV2Config, add_pooling_layer: bool = False):
        self.deberta = DebertaV2Model(config)  # no pooling layer: the heads pool themselves


class DebertaV2Model(DebertaV2PreTrainedModel):
    """The DeBERTa-v2 encoder: `last_hidden_state` (batch, sequence, hidden)."""

    def __init__(self, config: DebertaV2Config):
        super().__init__(config)
        self.embeddings = DebertaV2Embeddings(config)
        self.encoder = DebertaV2Encoder(config)
        self.post_init()

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None,
                position_ids=None, output_hidden_states: bool = False):
        """`attention_mask` (batch, sequence): 1 for tokens, 0 for padding."""
        ids = as_input_ids(input_ids)
        batch, length = ids.shape
        mask = dl.ones(batch, length, device=ids.device) if attention_mask is None \
            else optional_ids(attention_mask)
        if tuple(mask.shape) == (batch, length):  # a pair attends when both are tokens
            tokens = mask
            pairs = (mask.unsqueeze(1) * mask.unsqueeze(2)).unsqueeze(1) != 0
        elif tuple(mask.shape) == (batch, length, length):
            tokens = (mask.sum(-2) > 0).to(dl.float32)
            pairs = mask.unsqueeze(1) != 0
        else:
            raise dl.ShapeError(f"attention_mask must have shape (batch, sequence) = "
                                f"{(batch, length)} or (batch, queries, keys), got "
                                f"{tuple(mask.shape)}")
        hidden = self.embeddings(ids, optional_ids(token_type_ids), optional_ids(position_ids),
                                 tokens)
        last, states = self.encoder(hidden, pairs, output_hidden_states)
        return BaseModelOutput(last_hidden_state=last, hidden_states=states)


class LegacyDebertaV2PredictionHead(nn.Module):
    """The original masked-LM head (`cls.predictions`): dense to the embedding size,
    activation, LayerNorm, decoder over the vocabulary (tied to the word embeddings)."""

    def __init__(self, config: DebertaV2Config):
        super().__init__()
        width = config.embedding_size
        self.transform = _Transform(config, width)
        self.decoder = nn.Linear(width, config.vocab_size)
        self.bias = nn.Parameter(dl.zeros(config.vocab_size))

    def forward(self, hidden_states):
        return self.decoder(self.transform(hidden_states))


class _Transform(nn.Module):
    def __init__(self, config: DebertaV2Config, width: int):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, width)
        self.activation = get_activation(config.hidden_act)
        self.LayerNorm = nn.LayerNorm(width, eps=config.layer_norm_eps)

    def forward(self, hidden_states):
        return self.LayerNorm(self.activation(self.dense(hidden_states)))


class LegacyDebertaV2OnlyMLMHead(nn.Module):
    def __init__(self, config: DebertaV2Config):
        super().__init__()
        self.predictions = LegacyDebertaV2PredictionHead(config)

    def forward(self, hidden_states):
        return self.predictions(hidden_states)


class DebertaV2LMPredictionHead(_Transform):
    """DeBERTa's own masked-LM head (`lm_predictions.lm_head`, `legacy: false`): dense,
    activation, LayerNorm, then scores against the word embeddings plus `bias`."""

    def __init__(self, config: DebertaV2Config):
        super().__init__(config, config.hidden_size)
        self.bias = nn.Parameter(dl.zeros(config.vocab_size))

    def forward(self, hidden_states, word_embeddings):
        return super().forward(hidden_states) @ word_embeddings.weight.t() + self.bias


class DebertaV2OnlyMLMHead(nn.Module):
    def __init__(self, config: DebertaV2Config):
        super().__init__()
        self.lm_head = DebertaV2LMPredictionHead(config)


class DebertaV2ForMaskedLM(DebertaV2PreTrainedModel):
    """Scores over the vocabulary for every position: the legacy head tied to the word
    embeddings, or with `legacy: false` DeBERTa's head scoring against them; `labels`
    (-100 where not masked) gives the masked-LM loss."""

    _tied_weights = [("cls.predictions.decoder.weight",
                      "deberta.embeddings.word_embeddings.weight"),
                     ("cls.predictions.decoder.bias", "cls.predictions.bias")]

    def __init__(self, config: DebertaV2Config):
        super().__init__(config)
        self.deberta = DebertaV2Model(config)
        if config.legacy:
            self.cls = LegacyDebertaV2OnlyMLMHead(config)
        else:  # scores against the embeddings themselves: nothing to tie
            self._tied_weights = []
            self.lm_predictions = DebertaV2OnlyMLMHead(config)
        self.post_init()

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None,
                position_ids=None, labels=None, output_hidden_states: bool = False):
        out = self.deberta(input_ids, attention_mask, token_type_ids, position_ids,
                           output_hidden_states)
        if self.config.legacy:
            logits = self.cls(out.last_hidden_state)
        else:
            logits = self.lm_predictions.lm_head(out.last_hidden_state,
                                                 self.deberta.embeddings.word_embeddings)
        return masked_lm_output(logits, labels, out.hidden_states)


def deberta_classification_loss(logits, labels, config: DebertaV2Config):
    """DeBERTa's own rule when config.problem_type is unset (transformers'): mean squared
    error for one label; cross-entropy over the rows whose label is >= 0 for one class index
    per row; the cross-entropy against soft targets for (batch, num_labels) label
    distributions. A set problem_type takes the usual loss."""
    labels = labels if isinstance(labels, dl.Tensor) else dl.as_tensor(labels)
    if config.problem_type is not None:
        return sequence_classification_loss(logits, labels, config)
    if config.num_labels == 1:
        return F.mse_loss(logits.reshape(-1), labels.reshape(-1).to(logits.dtype))
    if labels.ndim == 1 or labels.shape[-1] == 1:
        index = labels.reshape(-1).long()
        return F.cross_entropy(logits, dl.where(index >= 0, index, -100), ignore_index=-100)
    return -(F.log_softmax(logits, dim=-1) * labels.to(logits.dtype)).sum(-1).mean()


def _cls_dropout(config: DebertaV2Config) -> float:
    return config.cls_dropout if config.cls_dropout is not None else config.hidden_dropout_prob


class DebertaV2ForSequenceClassification(DebertaV2PreTrainedModel):
    """The context pooler ([CLS]), dropout and a linear classifier; `labels` gives the loss
    (see deberta_classification_loss)."""

    def __init__(self, config: DebertaV2Config):
        super().__init__(config)
        self.deberta = DebertaV2Model(config)
        self.pooler = ContextPooler(config)
        self.classifier = nn.Linear(config.hidden_size, config.num_labels)
        self.dropout = nn.Dropout(_cls_dropout(config))
        self.post_init()

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None,
                position_ids=None, labels=None, output_hidden_states: bool = False):
        out = self.deberta(input_ids, attention_mask, token_type_ids, position_ids,
                           output_hidden_states)
        logits = self.classifier(self.dropout(self.pooler(out.last_hidden_state)))
        loss = None
        if labels is not None:
            loss = deberta_classification_loss(logits, labels, self.config)
            if self.config.problem_type is None and self.config.num_labels == 1:
                logits = logits.reshape(-1)  # as transformers returns them for this loss
        return SequenceClassifierOutput(loss=loss, logits=logits, hidden_states=out.hidden_states)


class DebertaV2ForTokenClassification(DebertaV2PreTrainedModel, BertForTokenClassification):
    """A linear classifier on every token's hidden state (NER, tagging)."""


class DebertaV2ForQuestionAnswering(DebertaV2PreTrainedModel, BertForQuestionAnswering):
    """Start and end logits of the answer span over the tokens (extractive QA)."""


class DebertaV2ForMultipleChoice(DebertaV2PreTrainedModel):
    """One score per choice: the context pooler on each (context, choice) sequence, dropout
    and a linear scorer; `labels` gives the cross-entropy over the choices."""

    def __init__(self, config: DebertaV2Config):
        super().__init__(config)
        self.deberta = DebertaV2Model(config)
        self.pooler = ContextPooler(config)
        self.classifier = nn.Linear(config.hidden_size, 1)
        self.dropout = nn.Dropout(_cls_dropout(config))
        self.post_init()

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None,
                position_ids=None, labels=None, output_hidden_states: bool = False):
        choices, *flat = flatten_choices(input_ids, attention_mask, token_type_ids,
                                         position_ids)
        out = self.deberta(*flat, output_hidden_states)
        scores = self.classifier(self.dropout(self.pooler(out.last_hidden_state)))
        return multiple_choice_output(scores, choices, labels, out.hidden_states)


MODEL_TYPE = "deberta-v2"
CONFIG = DebertaV2Config
HEADS = {"base": DebertaV2Model, "masked_lm": DebertaV2ForMaskedLM,
         "sequence_classification": DebertaV2ForSequenceClassification,
         "token_classification": DebertaV2ForTokenClassification,
         "question_answering": DebertaV2ForQuestionAnswering,
         "multiple_choice": DebertaV2ForMultipleChoice}
