"""Auto classes: pick the config and model class from `config.json`'s `model_type` through
`dl.registry.architectures`, so a family added by any plugin loads the same way.
"""

from __future__ import annotations

import os

from dlfree import CheckpointError, PluginError, registry
from dlfree.errors import MissingPluginError

from .configuration import PretrainedConfig
from .hub import config_from, read_config, resolve_folder

__all__ = ["AutoConfig", "AutoModel", "AutoModelForMaskedLM",
           "AutoModelForSequenceClassification", "AutoModelForTokenClassification",
           "AutoModelForQuestionAnswering", "AutoModelForMultipleChoice", "AutoModelForCausalLM",
           "AutoModelForSeq2SeqLM", "AutoModelForImageClassification",
           "architecture_for"]


def architecture_for(model_type, where: str = "the config"):
    """The registered architecture (config class and heads) for `model_type`."""
    if not isinstance(model_type, str) or not model_type:
        raise CheckpointError(f"{where} has no 'model_type' (got {model_type!r}); it names the "
                         "model family, e.g. 'bert', and the Auto classes need it")
    try:
        return registry.architectures.get(model_type)
    except PluginError as e:
        raise MissingPluginError(f"{where} has model_type {model_type!r}, which no installed "
                                 f"plugin provides: {e}. A family is added by a plugin "
                                 "implementing dlfree_register_architectures") from None


class AutoConfig:
    """`AutoConfig.from_pretrained(path)` gives the family's config class, filled in."""

    def __init__(self):
        raise TypeError("AutoConfig is not instantiated: use AutoConfig.from_pretrained(path) "
                        "or AutoConfig.for_model(model_type, **fields)")

    @staticmethod
    def from_pretrained(name_or_path: str | os.PathLike, revision: str | None = None,
                        cache_dir: str | os.PathLike | None = None,
                        local_files_only: bool = False, **overrides) -> PretrainedConfig:
        folder = resolve_folder(name_or_path, revision=revision, cache_dir=cache_dir,
                                local_files_only=local_files_only)
        data = read_config(folder)
        arch = architecture_for(data.get("model_type"), f"{folder / 'config.json'}")
        return config_from(arch.config_cls, data, folder, **overrides)

    @staticmethod
    def for_model(model_type: str, /, **fields) -> PretrainedConfig:
        """A config of the family `model_type` with `fields` (the rest default)."""
        return architecture_for(model_type, "for_model").config_cls.from_dict(fields)


class _AutoModel:
    """Dispatch to the registered family's class for one head."""

    head = "base"

    def __init__(self):
        raise TypeError(f"{type(self).__name__} is not instantiated: use "
                        f"{type(self).__name__}.from_pretrained(path) or .from_config(config)")

    @classmethod
    def model_class(cls, model_type: str, where: str = "the config"):
        """The model class registered for `model_type` and this head."""
        arch = architecture_for(model_type, where)
        try:
            return arch.heads[cls.head]
        except KeyError:
            raise ValueError(f"{cls.__name__}: the {model_type!r} family has no {cls.head!r} "
                             f"model; it provides: {', '.join(sorted(arch.heads))}") from None

    @classmethod
    def from_config(cls, config: PretrainedConfig):
        """A freshly initialised model of this head for `config`."""
        return cls.model_class(config.model_type, type(config).__name__)(config)

    @classmethod
    def from_pretrained(cls, name_or_path: str | os.PathLike, revision: str | None = None,
                        cache_dir: str | os.PathLike | None = None,
                        local_files_only: bool = False, dtype=None, device=None, *,
                        config: PretrainedConfig | None = None, **kwargs):
        """As the family's `from_pretrained` (see `PreTrainedModel.from_pretrained`)."""
        folder = resolve_folder(name_or_path, revision=revision, cache_dir=cache_dir,
                                local_files_only=local_files_only)
        model_type = config.model_type if config is not None else \
            read_config(folder).get("model_type")
        model_cls = cls.model_class(model_type, f"{folder / 'config.json'}")
        return model_cls.from_pretrained(folder, dtype=dtype, device=device, config=config,
                                         **kwargs)


class AutoModel(_AutoModel):
    """The family's base model (hidden states, no task head)."""

    head = "base"


class AutoModelForMaskedLM(_AutoModel):
    head = "masked_lm"


class AutoModelForSequenceClassification(_AutoModel):
    head = "sequence_classification"


class AutoModelForTokenClassification(_AutoModel):
    head = "token_classification"


class AutoModelForQuestionAnswering(_AutoModel):
    head = "question_answering"


class AutoModelForMultipleChoice(_AutoModel):
    head = "multiple_choice"


class AutoModelForCausalLM(_AutoModel):
    head = "causal_lm"


class AutoModelForSeq2SeqLM(_AutoModel):
    """An encoder–decoder with its LM head (T5ForConditionalGeneration)."""

    head = "seq2seq_lm"


class AutoModelForImageClassification(_AutoModel):
    """An image classifier (ViTForImageClassification)."""

    head = "image_classification"
