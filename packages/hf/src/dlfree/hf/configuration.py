"""`PretrainedConfig`: a model's `config.json` as a validated attrs class.

Each model family subclasses it with its own fields; keys a class does not know are kept in
`extra`, so a config read from the hub is written back with nothing lost.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, ClassVar

import attrs

__all__ = ["PretrainedConfig", "positive_int", "non_negative_int", "probability", "boolean",
           "positive_float", "one_of", "optional", "token_id"]


# ------------------------------------------------------------------ validators
def _name(instance, attribute) -> str:
    return f"{type(instance).__name__}.{attribute.name}"


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def positive_int(instance, attribute, value) -> None:
    """attrs validator: an int > 0."""
    if not _is_int(value) or value <= 0:
        raise ValueError(f"{_name(instance, attribute)} must be a positive int, got {value!r}")


def non_negative_int(instance, attribute, value) -> None:
    """attrs validator: an int >= 0."""
    if not _is_int(value) or value < 0:
        raise ValueError(f"{_name(instance, attribute)} must be an int >= 0, got {value!r}")


def probability(instance, attribute, value) -> None:
    """attrs validator: a number in [0, 1] (dropout rates)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise ValueError(f"{_name(instance, attribute)} must be a number in [0, 1], "
                         f"got {value!r}")


def boolean(instance, attribute, value) -> None:
    """attrs validator: true or false (not 0/1 or a string)."""
    if not isinstance(value, bool):
        raise ValueError(f"{_name(instance, attribute)} must be true or false, got {value!r}")


def positive_float(instance, attribute, value) -> None:
    """attrs validator: a number > 0 (epsilons, scales)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(f"{_name(instance, attribute)} must be a number > 0, got {value!r}")


def one_of(*choices):
    """attrs validator: one of `choices`."""
    def check(instance, attribute, value) -> None:
        if value not in choices:
            raise ValueError(f"{_name(instance, attribute)} must be one of "
                             f"{', '.join(map(repr, choices))}; got {value!r}")
    return check


def optional(validator):
    """attrs validator: None, or what `validator` accepts."""
    def check(instance, attribute, value) -> None:
        if value is not None:
            validator(instance, attribute, value)
    return check


def token_id(instance, attribute, value) -> None:
    """attrs validator: a token id, a list of them (several end tokens), or None."""
    if value is None or _is_int(value):
        return
    if isinstance(value, list) and all(_is_int(v) for v in value):  # several eos ids
        return
    raise ValueError(f"{_name(instance, attribute)} must be a token id (int), a list of them "
                     f"or null, got {value!r}")


def _labels(value) -> dict[int, str] | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ValueError(f"id2label must be a dict of class index to label, got "
                         f"{type(value).__name__}")
    try:
        return {int(k): str(v) for k, v in value.items()}
    except ValueError:
        raise ValueError(f"id2label keys must be class indices, got {sorted(value)}") from None


# ---------------------------------------------------------------------- config
@attrs.define(kw_only=True, slots=False)
class PretrainedConfig:
    """The fields every family shares. Subclasses set `model_type` and add theirs (each
    validated, so a bad `config.json` fails with the field's name); `attribute_map` lets
    a family answer to the common names (`hidden_size`) under its own (`dim`)."""

    model_type: ClassVar[str] = ""
    attribute_map: ClassVar[dict[str, str]] = {}

    architectures: list[str] | None = None
    id2label: dict[int, str] | None = attrs.field(default=None, converter=_labels)
    label2id: dict[str, int] | None = None
    num_labels: int | None = attrs.field(default=None, validator=optional(positive_int))
    problem_type: str | None = attrs.field(
        default=None, validator=optional(one_of("regression", "single_label_classification",
                                                "multi_label_classification")))
    tie_word_embeddings: bool = attrs.field(default=True, validator=boolean)
    torch_dtype: str | None = None
    pad_token_id: int | list[int] | None = attrs.field(default=None, validator=token_id)
    bos_token_id: int | list[int] | None = attrs.field(default=None, validator=token_id)
    eos_token_id: int | list[int] | None = attrs.field(default=None, validator=token_id)
    extra: dict[str, Any] = attrs.field(factory=dict)

    def __attrs_post_init__(self) -> None:
        if self.id2label is not None:
            if self.num_labels is not None and self.num_labels != len(self.id2label):
                raise ValueError(f"{type(self).__name__}: num_labels={self.num_labels} but "
                                 f"id2label has {len(self.id2label)} labels; give one of them")
            self.num_labels = len(self.id2label)
        else:
            self.num_labels = self.num_labels or 2
            self.id2label = {i: f"LABEL_{i}" for i in range(self.num_labels)}
        if self.label2id is None or set(self.label2id.values()) != set(self.id2label):
            self.label2id = {label: i for i, label in self.id2label.items()}
        self.validate()

    def validate(self) -> None:
        """Checks across fields (e.g. heads dividing the hidden size); subclasses extend it.
        Raise ValueError naming the fields and what would be valid."""

    def __getattr__(self, name: str):
        # Only reached for names that are not attributes: the family's aliases.
        target = type(self).attribute_map.get(name)
        if target is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        return getattr(self, target)

    # ------------------------------------------------------------ dict form
    @classmethod
    def _field_names(cls) -> set[str]:
        return {a.name for a in attrs.fields(cls)} - {"extra"}

    @classmethod
    def from_dict(cls, data: dict, **overrides) -> PretrainedConfig:
        """Build from a `config.json` dict; `overrides` replace its values. Unknown keys go
        to `extra`. A field with an invalid value raises ValueError naming it."""
        if not isinstance(data, dict):
            raise TypeError(f"{cls.__name__}.from_dict expects a dict, got {type(data).__name__}")
        data = {**data, **overrides}
        model_type = data.pop("model_type", None)
        if cls.model_type and model_type not in (None, cls.model_type):
            raise ValueError(f"{cls.__name__} is for model_type {cls.model_type!r}, but the "
                             f"config says {model_type!r}; use AutoConfig to pick the class")
        stored_dtype = data.pop("dtype", None)  # transformers >= 5 writes "dtype"
        data.setdefault("torch_dtype", stored_dtype)
        for alias, field in cls.attribute_map.items():
            if alias in data and field not in data:
                data[field] = data.pop(alias)
        if "num_labels" in overrides and "id2label" not in overrides:
            data.pop("id2label", None)
            data.pop("label2id", None)
        names = cls._field_names()
        known = {k: v for k, v in data.items() if k in names}
        extra = {k: v for k, v in data.items() if k not in names}
        return cls(**known, extra=extra)

    def to_dict(self) -> dict[str, Any]:
        """The `config.json` form: fields, `model_type` and the kept unknown keys, sorted."""
        data = dict(self.extra)
        for field in attrs.fields(type(self)):
            if field.name in ("extra", "num_labels"):  # num_labels is implied by id2label
                continue
            value = getattr(self, field.name)
            if field.name == "id2label":
                value = {str(k): v for k, v in value.items()}
            data[field.name] = value
        if self.torch_dtype is not None:
            data["dtype"] = data.pop("torch_dtype")
        else:
            data.pop("torch_dtype")
        data["model_type"] = self.model_type
        return dict(sorted(data.items()))

    def to_json_string(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

    def replace(self, **changes) -> PretrainedConfig:
        """A copy with `changes` applied and validated again (`num_labels=5` resets the
        labels, as transformers does)."""
        return type(self).from_dict(self.to_dict(), **changes)

    # -------------------------------------------------------------- files
    @classmethod
    def from_pretrained(cls, name_or_path: str | os.PathLike, revision: str | None = None,
                        cache_dir: str | os.PathLike | None = None,
                        local_files_only: bool = False, **overrides) -> PretrainedConfig:
        """Read `config.json` from a local folder or a hub repo id (see `dlfree.hf.hub`)."""
        from .hub import config_from, read_config, resolve_folder

        folder = resolve_folder(name_or_path, revision=revision, cache_dir=cache_dir,
                                local_files_only=local_files_only)
        return config_from(cls, read_config(folder), folder, **overrides)

    def save_pretrained(self, save_directory: str | os.PathLike) -> Path:
        """Write `config.json` into `save_directory` (created if needed); returns its path."""
        from dlfree.io import atomic_write

        folder = Path(save_directory)
        folder.mkdir(parents=True, exist_ok=True)
        return atomic_write(folder / "config.json", self.to_json_string().encode())
