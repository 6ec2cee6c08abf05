"""`PreTrainedModel`: loading HuggingFace checkpoints into dl.free modules and writing them back
under HuggingFace's weight names; plus the output records, activations and losses the model
families share.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, ClassVar, NamedTuple

import dlfree as dl
from dlfree import CheckpointError, Tensor, nn
from dlfree import functional as F
from dlfree.dtypes import as_dtype

import numpy as np

from .configuration import PretrainedConfig
from .hub import check_sizes, config_from, read_config, read_weights, resolve_folder, write_weights

__all__ = ["PreTrainedModel", "LoadReport", "ModelOutput", "BaseModelOutput",
           "BaseModelOutputWithPooling", "BaseModelOutputWithPast", "MaskedLMOutput",
           "SequenceClassifierOutput", "TokenClassifierOutput", "QuestionAnsweringModelOutput",
           "MultipleChoiceModelOutput", "Seq2SeqModelOutput", "Seq2SeqLMOutput",
           "ImageClassifierOutput",
           "CausalLMOutputWithPast", "ACTIVATIONS", "get_activation", "embedding", "padding_mask",
           "sequence_classification_loss", "token_classification_loss", "span_loss"]

logger = logging.getLogger("dlfree.hf")


# ---------------------------------------------------------------------- outputs
@dataclass
class ModelOutput:
    """A model's results as named fields (as transformers' outputs): `out.logits`,
    `out["logits"]`, or by position over the fields that are set (`out[0]`)."""

    def to_tuple(self) -> tuple:
        return tuple(getattr(self, f.name) for f in fields(self)
                     if getattr(self, f.name) is not None)

    def keys(self) -> list[str]:
        return [f.name for f in fields(self) if getattr(self, f.name) is not None]

    def __getitem__(self, key):
        if isinstance(key, str):
            if key not in self.keys():
                raise KeyError(f"{type(self).__name__} has no field {key!r} set; it has "
                               f"{', '.join(self.keys())}")
            return getattr(self, key)
        return self.to_tuple()[key]


@dataclass
class BaseModelOutput(ModelOutput):
    last_hidden_state: Tensor | None = None
    hidden_states: tuple[Tensor, ...] | None = None


@dataclass
class BaseModelOutputWithPooling(ModelOutput):
    last_hidden_state: Tensor | None = None
    pooler_output: Tensor | None = None
    hidden_states: tuple[Tensor, ...] | None = None


@dataclass
class BaseModelOutputWithPast(ModelOutput):
    last_hidden_state: Tensor | None = None
    past_key_values: Any = None
    hidden_states: tuple[Tensor, ...] | None = None


@dataclass
class MaskedLMOutput(ModelOutput):
    loss: Tensor | None = None
    logits: Tensor | None = None
    hidden_states: tuple[Tensor, ...] | None = None


@dataclass
class SequenceClassifierOutput(ModelOutput):
    loss: Tensor | None = None
    logits: Tensor | None = None
    hidden_states: tuple[Tensor, ...] | None = None


@dataclass
class TokenClassifierOutput(ModelOutput):
    loss: Tensor | None = None
    logits: Tensor | None = None
    hidden_states: tuple[Tensor, ...] | None = None


@dataclass
class QuestionAnsweringModelOutput(ModelOutput):
    loss: Tensor | None = None
    start_logits: Tensor | None = None
    end_logits: Tensor | None = None
    hidden_states: tuple[Tensor, ...] | None = None


@dataclass
class MultipleChoiceModelOutput(ModelOutput):
    loss: Tensor | None = None
    logits: Tensor | None = None
    hidden_states: tuple[Tensor, ...] | None = None


@dataclass
class ImageClassifierOutput(ModelOutput):
    loss: Tensor | None = None
    logits: Tensor | None = None
    hidden_states: tuple[Tensor, ...] | None = None


@dataclass
class Seq2SeqModelOutput(ModelOutput):
    last_hidden_state: Tensor | None = None
    past_key_values: Any = None
    decoder_hidden_states: tuple[Tensor, ...] | None = None
    encoder_last_hidden_state: Tensor | None = None
    encoder_hidden_states: tuple[Tensor, ...] | None = None


@dataclass
class Seq2SeqLMOutput(ModelOutput):
    loss: Tensor | None = None
    logits: Tensor | None = None
    past_key_values: Any = None
    decoder_hidden_states: tuple[Tensor, ...] | None = None
    encoder_last_hidden_state: Tensor | None = None
    encoder_hidden_states: tuple[Tensor, ...] | None = None


@dataclass
class CausalLMOutputWithPast(ModelOutput):
    loss: Tensor | None = None
    logits: Tensor | None = None
    past_key_values: Any = None
    hidden_states: tuple[Tensor, ...] | None = None


# ------------------------------------------------------------ shared building blocks
def _quick_gelu(x: Tensor) -> Tensor:
    return x * F.sigmoid(1.702 * x)


# transformers' names for activations (config.hidden_act) and what they compute.
ACTIVATIONS = {
    "gelu": F.gelu,
    "gelu_new": lambda x: F.gelu(x, approximate="tanh"),
    "gelu_pytorch_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "gelu_fast": lambda x: F.gelu(x, approximate="tanh"),
    "quick_gelu": _quick_gelu,
    "relu": F.relu,
    "silu": F.silu,
    "swish": F.silu,
    "tanh": F.tanh,
}


def get_activation(name: str):
    """The function for a transformers activation name (`"gelu"`, `"gelu_new"`, `"silu"`)."""
    try:
        return ACTIVATIONS[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown activation {name!r}; valid: "
                         f"{', '.join(sorted(ACTIVATIONS))}") from None


def embedding(num_embeddings: int, embedding_dim: int, padding_idx: int | None = None):
    """An `nn.Embedding` whose table is left for `post_init` or the checkpoint to fill
    (drawing a 30k-row table only to overwrite it would cost most of a load)."""
    return nn.Embedding(num_embeddings, embedding_dim, padding_idx=padding_idx,
                        _weight=dl.empty(num_embeddings, embedding_dim))


def padding_mask(attention_mask: Tensor | None, batch: int, length: int) -> Tensor | None:
    """transformers' attention_mask (1 = attend, 0 = padding), (batch, keys) or
    (batch, queries, keys), as a bool mask that broadcasts over heads for
    `F.scaled_dot_product_attention`."""
    if attention_mask is None:
        return None
    if not isinstance(attention_mask, Tensor):
        attention_mask = dl.as_tensor(attention_mask)
    if attention_mask.ndim == 2 and tuple(attention_mask.shape) == (batch, length):
        return (attention_mask != 0).reshape(batch, 1, 1, length)
    if attention_mask.ndim == 3 and attention_mask.shape[0] == batch \
            and attention_mask.shape[-1] == length:
        return (attention_mask != 0).unsqueeze(1)
    raise dl.ShapeError(f"attention_mask must have shape (batch, sequence) = {(batch, length)} "
                        f"or (batch, queries, {length}); got {tuple(attention_mask.shape)}")


def sequence_classification_loss(logits: Tensor, labels: Tensor, config: PretrainedConfig):
    """transformers' sequence-classification loss: mean squared error for regression
    (one label), cross-entropy for integer labels, and per-label binary cross-entropy for
    multi-label float targets, unless `config.problem_type` names one."""
    if not isinstance(labels, Tensor):
        labels = dl.as_tensor(labels)
    num_labels = config.num_labels
    problem = config.problem_type
    if problem is None:
        if num_labels == 1:
            problem = "regression"
        elif not labels.is_floating_point():
            problem = "single_label_classification"
        else:
            problem = "multi_label_classification"
    if problem == "regression":
        if num_labels == 1:
            return F.mse_loss(logits.squeeze(-1), labels.squeeze(-1).to(logits.dtype))
        return F.mse_loss(logits, labels.to(logits.dtype))
    if problem == "single_label_classification":
        return F.cross_entropy(logits.reshape(-1, num_labels), labels.reshape(-1).long())
    return F.binary_cross_entropy_with_logits(logits, labels.to(logits.dtype))


def token_classification_loss(logits: Tensor, labels: Tensor) -> Tensor:
    """Cross-entropy per token; label -100 marks tokens left out (padding, sub-words)."""
    if not isinstance(labels, Tensor):
        labels = dl.as_tensor(labels)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1).long())


def span_loss(start_logits: Tensor, end_logits: Tensor, start_positions, end_positions):
    """Extractive QA loss (transformers'): mean of the start and end cross-entropies;
    positions outside the sequence are clamped to its length and then ignored."""
    length = start_logits.shape[-1]
    losses = []
    for logits, positions in ((start_logits, start_positions), (end_logits, end_positions)):
        if not isinstance(positions, Tensor):
            positions = dl.as_tensor(positions)
        positions = positions.reshape(-1).long().clamp(0, length)
        losses.append(F.cross_entropy(logits, positions, ignore_index=length))
    return (losses[0] + losses[1]) / 2


# ------------------------------------------------------------------------ loading
class LoadReport(NamedTuple):
    """What loading a checkpoint found: the model's weights the checkpoint lacked (they
    keep their fresh initialisation, as a new head's do), and checkpoint weights the model
    has no place for."""

    missing_keys: list[str]
    unexpected_keys: list[str]


_init_skipped = [False]


@contextlib.contextmanager
def _skipping_init():
    # from_pretrained overwrites the weights: initialise only what the checkpoint lacks.
    previous, _init_skipped[0] = _init_skipped[0], True
    try:
        yield
    finally:
        _init_skipped[0] = previous


def _as_load_dtype(dtype, config: PretrainedConfig):
    if dtype is None:
        return None
    if dtype == "auto":
        stored = config.torch_dtype
        return dl.float32 if stored in (None, "bfloat16") else as_dtype(stored)
    resolved = as_dtype(dtype)
    if not resolved.is_floating_point:
        raise TypeError(f"from_pretrained: dtype must be a floating dtype (float16, float32, "
                        f"float64) or 'auto', got {dtype!r}")
    return resolved


class PreTrainedModel(nn.Module):
    """Base of every HuggingFace-compatible model: holds `config`, initialises weights as
    transformers does, and loads from / saves to checkpoint folders.

    Subclasses set `config_class` and `base_model_prefix` (the attribute under which a
    head model holds its base model, e.g. "bert"), list `_tied_weights` as (target,
    source) parameter names tied when `config.tie_word_embeddings`, and call
    `self.post_init()` at the end of `__init__`. `_convert_on_load` / `_convert_on_export`
    translate checkpoint weights (host NumPy arrays) to and from the module's own layout.
    """

    config_class: ClassVar[type] = PretrainedConfig
    base_model_prefix: ClassVar[str] = ""
    _tied_weights: ClassVar[list[tuple[str, str]]] = []
    # Checkpoint entries that are not weights (older transformers saved some buffers).
    _ignore_on_load: ClassVar[list[str]] = [r"(^|\.)position_ids$"]

    def __init__(self, config: PretrainedConfig):
        super().__init__()
        if not isinstance(config, self.config_class):
            raise TypeError(f"{type(self).__name__} needs a {self.config_class.__name__}, got "
                            f"{type(config).__name__}")
        self.config = config

    # --------------------------------------------------------------- weights
    def post_init(self) -> None:
        """Initialise every weight (unless from_pretrained is about to load them) and tie."""
        if not _init_skipped[0]:
            self.apply(self._init_weights)  # children first, so a parent can refine them
        self.tie_weights()

    def _init_weights(self, module: nn.Module) -> None:
        """transformers' initialisation: N(0, initializer_range) for linear and embedding
        weights, zero biases and padding rows, unit norm scales."""
        std = getattr(self.config, "initializer_range", 0.02)
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, 0.0, std)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, 0.0, std)
            if module.padding_idx is not None:
                with dl.no_grad():
                    module.weight[module.padding_idx] = 0.0
        elif isinstance(module, (nn.LayerNorm, nn.RMSNorm)):
            if module.weight is not None:
                nn.init.ones_(module.weight)
            if getattr(module, "bias", None) is not None:
                nn.init.zeros_(module.bias)

    def tie_weights(self) -> None:
        """Make each `_tied_weights` target the very parameter of its source (the masked-LM
        decoder shares the word embeddings), when `config.tie_word_embeddings`."""
        if not self.config.tie_word_embeddings:
            return
        for target, source in self._tied_weights:
            path, _, name = target.rpartition(".")
            setattr(self.get_submodule(path), name, self.get_parameter(source))

    def _convert_on_load(self, state: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Checkpoint names and layouts to this module's (identity by default)."""
        return state

    def _convert_on_export(self, state: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """This module's names and layouts to the checkpoint's (identity by default)."""
        return state

    def _match_prefix(self, state: dict, own: dict) -> dict:
        # A head checkpoint into a base model drops the prefix; a base checkpoint into a
        # head model gains it (transformers' rule).
        prefix = self.base_model_prefix
        if not prefix:
            return state
        start = prefix + "."
        expects = any(k.startswith(start) for k in own)
        has = any(k.startswith(start) for k in state)
        if expects and not has:
            return {start + k: v for k, v in state.items()}
        if has and not expects:
            return {k[len(start):] if k.startswith(start) else k: v for k, v in state.items()}
        return state

    def load_checkpoint_state(self, state: dict[str, np.ndarray],
                              strict: bool = False) -> LoadReport:
        """Load a checkpoint's weights (by HuggingFace name) into this model. Shapes are
        checked before anything is written; missing and unexpected names are returned
        (and, with `strict`, raised as a CheckpointError naming them)."""
        own = self.state_dict(keep_vars=True)
        state = self._match_prefix(self._convert_on_load(dict(state)), own)
        ignore = re.compile("|".join(self._ignore_on_load)) if self._ignore_on_load else None
        unexpected = [k for k in state if k not in own and not (ignore and ignore.search(k))]
        loaded_ids = {id(own[k]) for k in state if k in own}
        missing = [k for k in own if id(own[k]) not in loaded_ids]
        if strict and (missing or unexpected):
            raise CheckpointError(f"{type(self).__name__}: the checkpoint does not fit: "
                                  + _describe(missing, unexpected))
        if _init_skipped[0]:
            for owner in {k.rpartition(".")[0] for k in missing}:
                module = self.get_submodule(owner)
                self._init_weights(module)
        first = {}
        for key in state:  # a tied parameter is loaded once, from its first name
            if key in own and id(own[key]) not in first:
                first[id(own[key])] = key
        self.load_state_dict({k: state[k] for k in first.values()}, strict=False)
        return LoadReport(missing, unexpected)

    # ------------------------------------------------------------- from / to
    @classmethod
    def from_config(cls, config: PretrainedConfig) -> PreTrainedModel:
        """A freshly initialised model (training mode) for `config`."""
        return cls(config)

    @classmethod
    def from_pretrained(cls, name_or_path: str | os.PathLike, revision: str | None = None,
                        cache_dir: str | os.PathLike | None = None,
                        local_files_only: bool = False, dtype=None, device=None, *,
                        config: PretrainedConfig | None = None, strict: bool = False,
                        output_loading_info: bool = False, **config_overrides):
        """Load a model from a checkpoint folder or a hub repo id, in eval mode.

        `dtype` casts floating weights (a dl dtype, its name, or "auto" for the checkpoint's
        `torch_dtype`; float32 by default); `device` places them. `config_overrides` change
        config fields (`num_labels=3`). Weights the checkpoint lacks (a new head) are
        initialised and reported, as are checkpoint weights the model does not use, on the
        "dlfree.hf" logger and in `model.load_report`; `strict=True` makes either an error.
        `output_loading_info=True` returns (model, LoadReport)."""
        folder = resolve_folder(name_or_path, revision=revision, cache_dir=cache_dir,
                                local_files_only=local_files_only)
        if config is None:
            config = config_from(cls.config_class, read_config(folder), folder,
                                 **config_overrides)
        elif config_overrides:
            config = config.replace(**config_overrides)
        load_dtype = _as_load_dtype(dtype, config)
        state = read_weights(folder)
        check_sizes(config, state, folder)
        with _skipping_init():
            model = cls(config)
            if load_dtype is not None or device is not None:
                model.to(device=device, dtype=load_dtype)
            report = model.load_checkpoint_state(state, strict=strict)
        if report.missing_keys or report.unexpected_keys:
            logger.warning("%s from %s: %s", cls.__name__, folder,
                           _describe(report.missing_keys, report.unexpected_keys))
        model.load_report = report
        model.eval()
        return (model, report) if output_loading_info else model

    def save_pretrained(self, save_directory: str | os.PathLike,
                        max_shard_size: int | str = "5GB") -> Path:
        """Write `config.json` and the weights under HuggingFace names (`model.safetensors`,
        or shards with an index above `max_shard_size`, e.g. "5GB", "200MB") so that
        transformers' `from_pretrained` loads the folder. Tied weights are written once."""
        folder = Path(save_directory)
        if folder.exists() and not folder.is_dir():
            raise CheckpointError(f"save_pretrained: {folder} is a file; give a folder")
        folder.mkdir(parents=True, exist_ok=True)
        state = self.state_dict(keep_vars=True)
        tied_targets = {target for target, _ in self._tied_weights}
        kept_ids: dict[int, str] = {}
        for key in sorted(state, key=lambda k: k in tied_targets):  # sources claim first
            kept_ids.setdefault(id(state[key]), key)
        kept = set(kept_ids.values())
        arrays = {k: v.detach().cpu().numpy() for k, v in state.items() if k in kept}
        arrays = self._convert_on_export(arrays)
        floating = [p.dtype for p in self.parameters() if p.is_floating_point()]
        config = self.config.replace(architectures=[type(self).__name__],
                                     torch_dtype=floating[0].name if floating else None)
        config.save_pretrained(folder)
        write_weights(arrays, folder, max_shard_size)
        return folder


def _describe(missing: list[str], unexpected: list[str]) -> str:
    parts = []
    if missing:
        parts.append(f"weights missing from the checkpoint (newly initialised): "
                     f"{', '.join(missing)}")
    if unexpected:
        parts.append(f"checkpoint weights the model does not use: {', '.join(unexpected)}")
    return "; ".join(parts)
