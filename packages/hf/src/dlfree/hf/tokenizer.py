"""`AutoTokenizer`: a HuggingFace fast tokenizer (`tokenizer.json`, run by the `tokenizers`
library) with transformers' call signature, returning dl.free tensors.

Special tokens, the maximum length and the padding side come from `tokenizer_config.json`
and `special_tokens_map.json`, as transformers reads them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

import dlfree as dl
from dlfree import CheckpointError, Tensor

import numpy as np
import tokenizers

from .hub import resolve_folder

__all__ = ["AutoTokenizer", "PreTrainedTokenizer", "BatchEncoding", "SPECIAL_ROLES"]

TOKENIZER_FILE = "tokenizer.json"
TOKENIZER_CONFIG_FILE = "tokenizer_config.json"
SPECIAL_TOKENS_MAP_FILE = "special_tokens_map.json"

SPECIAL_ROLES = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token",
                 "mask_token")
# transformers stores "no limit" as int(1e30); such a length is no limit here too.
_NO_LIMIT = int(1e30)
# The tokenizer classes whose models take token_type_ids (transformers' model_input_names);
# every other class returns input_ids and attention_mask only.
_TOKEN_TYPE_CLASSES = {"Bert", "Canine", "DPRQuestionEncoder", "Deberta", "DebertaV2", "FNet",
                       "LayoutLMv2", "Lxmert", "MarkupLM", "MobileBert", "Tapas"}
_TRUNCATION = {True: "longest_first", "longest_first": "longest_first",
               "only_first": "only_first", "only_second": "only_second",
               False: None, "do_not_truncate": None}
_PADDING = {True: "longest", "longest": "longest", "max_length": "max_length",
            False: None, "do_not_pad": None}
_RETURN_TENSORS = (None, "dl", "np")
# transformers' clean-up of spaces that WordPiece decoding leaves before punctuation.
_CLEAN_UP = ((" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"),
             (" 'm", "'m"), (" 's", "'s"), (" 've", "'ve"), (" 're", "'re"))


class BatchEncoding(dict):
    """What a tokenizer call returns: a dict of `input_ids`, `attention_mask`, ... (also
    readable as attributes), plus the `tokenizers` encodings behind each row, which map tokens
    back to words and to the text they came from."""

    def __init__(self, data: dict, encodings: list[tokenizers.Encoding]):
        super().__init__(data)
        self.encodings = encodings

    def __getattr__(self, name: str):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"BatchEncoding has no {name!r}; it holds "
                                 f"{', '.join(self)}") from None

    def _encoding(self, row: int) -> tokenizers.Encoding:
        if not 0 <= row < len(self.encodings):
            raise IndexError(f"BatchEncoding: row {row} is out of range; it has "
                             f"{len(self.encodings)} rows")
        return self.encodings[row]

    def tokens(self, row: int = 0) -> list[str]:
        """The tokens of `row` (padding included)."""
        return self._encoding(row).tokens

    def word_ids(self, row: int = 0) -> list[int | None]:
        """For each token of `row`, the index of the word it belongs to (None for special
        and padding tokens)."""
        return self._encoding(row).word_ids

    def sequence_ids(self, row: int = 0) -> list[int | None]:
        """For each token of `row`, 0 for the first text, 1 for `text_pair`, None for
        special and padding tokens."""
        return self._encoding(row).sequence_ids

    def to(self, device) -> BatchEncoding:
        """The same encoding with its dl.free tensors on `device`."""
        moved = {k: v.to(device) if isinstance(v, Tensor) else v for k, v in self.items()}
        return BatchEncoding(moved, self.encodings)


class _SpecialToken:
    """A special-token attribute (`tokenizer.pad_token`), settable to another token string;
    with `as_id`, its id (`tokenizer.pad_token_id`, None when unset)."""

    def __init__(self, role: str, as_id: bool = False):
        self.role, self.as_id = role, as_id

    def __get__(self, tokenizer, owner=None):
        if tokenizer is None:
            return self
        token = tokenizer._special[self.role]
        return tokenizer.convert_tokens_to_ids(token) if self.as_id and token else token

    def __set__(self, tokenizer, value) -> None:
        if self.as_id:
            value = tokenizer.convert_ids_to_tokens(value) if value is not None else None
        tokenizer._set_special(self.role, value)


def _token_content(value, where: str) -> str | None:
    """A special token as written in the config files: a string, or transformers'
    serialised AddedToken ({"content": ...})."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("content"), str):
        return value["content"]
    raise CheckpointError(f"{where}: a special token must be a string or an object with "
                          f"'content', got {value!r}")


def _read_json(path: Path) -> dict:
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise CheckpointError(f"{path} is not valid JSON: {e}") from None
    if not isinstance(data, dict):
        raise CheckpointError(f"{path} must hold a JSON object, got {type(data).__name__}")
    return data


def _uses_token_types(tokenizer_class: str | None, model_type: str | None) -> bool:
    if tokenizer_class:
        stem = tokenizer_class.removesuffix("Fast").removesuffix("Tokenizer")
        return stem in _TOKEN_TYPE_CLASSES
    if model_type:
        return model_type.replace("-", "").replace("_", "") in \
            {name.lower() for name in _TOKEN_TYPE_CLASSES}
    return False


def _as_id_list(ids, what: str) -> list[int]:
    if isinstance(ids, (Tensor, np.ndarray)):
        ids = ids.tolist()
    if isinstance(ids, (int, np.integer)) and not isinstance(ids, bool):
        return [int(ids)]
    if not isinstance(ids, Sequence) or not all(
            isinstance(i, (int, np.integer)) and not isinstance(i, bool) for i in ids):
        raise TypeError(f"{what} expects a token id or a flat sequence of token ids "
                        f"(list, 1-d array or tensor), got {ids!r:.80}")
    return [int(i) for i in ids]


class PreTrainedTokenizer:
    """A fast tokenizer with transformers' interface: call it on a text or a batch to get
    `input_ids` and `attention_mask` (and `token_type_ids` where the model takes them);
    `decode` turns ids back into text. Usually made by `AutoTokenizer.from_pretrained`."""

    bos_token = _SpecialToken("bos_token")
    eos_token = _SpecialToken("eos_token")
    unk_token = _SpecialToken("unk_token")
    sep_token = _SpecialToken("sep_token")
    pad_token = _SpecialToken("pad_token")
    cls_token = _SpecialToken("cls_token")
    mask_token = _SpecialToken("mask_token")
    bos_token_id = _SpecialToken("bos_token", as_id=True)
    eos_token_id = _SpecialToken("eos_token", as_id=True)
    unk_token_id = _SpecialToken("unk_token", as_id=True)
    sep_token_id = _SpecialToken("sep_token", as_id=True)
    pad_token_id = _SpecialToken("pad_token", as_id=True)
    cls_token_id = _SpecialToken("cls_token", as_id=True)
    mask_token_id = _SpecialToken("mask_token", as_id=True)

    def __init__(self, tokenizer: tokenizers.Tokenizer, *, model_max_length: int | None = None,
                 padding_side: str = "right", truncation_side: str = "right",
                 model_input_names: Sequence[str] = ("input_ids", "attention_mask"),
                 additional_special_tokens: Sequence[str] = (),
                 clean_up_tokenization_spaces: bool = False, **special_tokens):
        if not isinstance(tokenizer, tokenizers.Tokenizer):
            raise TypeError(f"PreTrainedTokenizer wraps a tokenizers.Tokenizer, got "
                            f"{type(tokenizer).__name__}")
        unknown = set(special_tokens) - set(SPECIAL_ROLES)
        if unknown:
            raise TypeError(f"PreTrainedTokenizer: unknown arguments {sorted(unknown)}; the "
                            f"special tokens are {', '.join(SPECIAL_ROLES)}")
        for name, side in (("padding_side", padding_side), ("truncation_side", truncation_side)):
            if side not in ("left", "right"):
                raise ValueError(f"PreTrainedTokenizer: {name} must be 'left' or 'right', "
                                 f"got {side!r}")
        if model_max_length is not None and (not isinstance(model_max_length, int)
                                             or model_max_length <= 0):
            raise ValueError(f"PreTrainedTokenizer: model_max_length must be a positive int or "
                             f"None (no limit), got {model_max_length!r}")
        self.backend_tokenizer = tokenizer
        # tokenizer.json may carry padding and truncation settings (all-MiniLM-L6-v2 pads
        # everything to 128); as in transformers, each call sets its own.
        tokenizer.no_padding()
        tokenizer.no_truncation()
        self.model_max_length = None if model_max_length is None or \
            model_max_length >= _NO_LIMIT else model_max_length
        self.padding_side = padding_side
        self.truncation_side = truncation_side
        self.model_input_names = list(model_input_names)
        self.clean_up_tokenization_spaces = clean_up_tokenization_spaces
        self._special = dict.fromkeys(SPECIAL_ROLES)
        for role, token in special_tokens.items():
            self._set_special(role, token)
        self.additional_special_tokens = list(additional_special_tokens)
        for token in self.additional_special_tokens:
            self._require_in_vocab(token, "additional_special_tokens")

    # ------------------------------------------------------------------ loading
    @classmethod
    def from_pretrained(cls, name_or_path: str | os.PathLike, revision: str | None = None,
                        cache_dir: str | os.PathLike | None = None,
                        local_files_only: bool = False, **overrides) -> PreTrainedTokenizer:
        """The tokenizer of a folder or hub repo id: `tokenizer.json`, with special tokens,
        `model_max_length`, `padding_side` and `model_input_names` from
        `tokenizer_config.json` / `special_tokens_map.json`; `overrides` replace those."""
        folder = resolve_folder(name_or_path, revision=revision, cache_dir=cache_dir,
                                local_files_only=local_files_only)
        path = folder / TOKENIZER_FILE
        if not path.is_file():
            others = [p.name for p in folder.iterdir() if p.suffix in (".txt", ".model")]
            raise CheckpointError(
                f"{folder} has no {TOKENIZER_FILE}; dl.free reads fast tokenizers only"
                f"{f' (this folder has {others})' if others else ''}. Write one with "
                "transformers: `AutoTokenizer.from_pretrained(folder).save_pretrained(folder)`")
        try:
            backend = tokenizers.Tokenizer.from_file(os.fspath(path))
        except Exception as e:  # tokenizers raises a bare Exception for a bad file
            raise CheckpointError(f"{path} is not a tokenizers file: {e}") from None
        config = _read_json(folder / TOKENIZER_CONFIG_FILE)
        special_map = _read_json(folder / SPECIAL_TOKENS_MAP_FILE)
        kwargs = {}
        for role in SPECIAL_ROLES:
            value = special_map.get(role, config.get(role))
            kwargs[role] = _token_content(value, f"{folder} ({role})")
        extra = special_map.get("additional_special_tokens",
                                config.get("additional_special_tokens",
                                           config.get("extra_special_tokens")))
        if isinstance(extra, dict):  # transformers 5 names them: {"image_token": "<img>"}
            extra = list(extra.values())
        kwargs["additional_special_tokens"] = [
            _token_content(t, f"{folder} (additional_special_tokens)") for t in extra or ()]
        names = config.get("model_input_names")
        if names is None:
            model_type = _read_json(folder / "config.json").get("model_type")
            names = ["input_ids", "token_type_ids", "attention_mask"] \
                if _uses_token_types(config.get("tokenizer_class"), model_type) \
                else ["input_ids", "attention_mask"]
        kwargs.update(model_max_length=config.get("model_max_length"),
                      padding_side=config.get("padding_side", "right"),
                      truncation_side=config.get("truncation_side", "right"),
                      model_input_names=names,
                      clean_up_tokenization_spaces=bool(
                          config.get("clean_up_tokenization_spaces", False)))
        kwargs.update(overrides)
        return cls(backend, **kwargs)

    def save_pretrained(self, save_directory: str | os.PathLike) -> Path:
        """Write `tokenizer.json` and `tokenizer_config.json` into a folder, so that this
        class and transformers' `AutoTokenizer` load it back."""
        folder = Path(save_directory)
        folder.mkdir(parents=True, exist_ok=True)
        self.backend_tokenizer.save(os.fspath(folder / TOKENIZER_FILE))
        config = {"tokenizer_class": "TokenizersBackend", "backend": "tokenizers",
                  "model_max_length": self.model_max_length or _NO_LIMIT,
                  "padding_side": self.padding_side, "truncation_side": self.truncation_side,
                  "model_input_names": self.model_input_names,
                  "clean_up_tokenization_spaces": self.clean_up_tokenization_spaces,
                  **{role: token for role, token in self._special.items() if token},
                  "additional_special_tokens": self.additional_special_tokens}
        (folder / TOKENIZER_CONFIG_FILE).write_text(json.dumps(config, indent=2) + "\n",
                                                   encoding="utf-8")
        return folder

    # ---------------------------------------------------------- special tokens
    def _require_in_vocab(self, token: str, role: str) -> None:
        if self.backend_tokenizer.token_to_id(token) is None:
            raise ValueError(f"{role} {token!r} is not in the tokenizer's vocabulary; give a "
                             "token it has (e.g. the eos token as the pad token)")

    def _set_special(self, role: str, token: str | None) -> None:
        if token is not None:
            if not isinstance(token, str):
                raise TypeError(f"{role} must be a token string or None, got {token!r}")
            self._require_in_vocab(token, role)
        self._special[role] = token

    @property
    def all_special_tokens(self) -> list[str]:
        """The special tokens, each once: those of the roles, then the additional ones."""
        tokens = [t for t in self._special.values() if t] + self.additional_special_tokens
        return list(dict.fromkeys(tokens))

    @property
    def all_special_ids(self) -> list[int]:
        return self.convert_tokens_to_ids(self.all_special_tokens)

    # --------------------------------------------------------------- vocabulary
    @property
    def vocab_size(self) -> int:
        """The size of the base vocabulary (without added tokens), as transformers'."""
        return self.backend_tokenizer.get_vocab_size(with_added_tokens=False)

    def __len__(self) -> int:
        """The vocabulary with added tokens: the smallest embedding table that fits."""
        return self.backend_tokenizer.get_vocab_size(with_added_tokens=True)

    def get_vocab(self) -> dict[str, int]:
        return self.backend_tokenizer.get_vocab(with_added_tokens=True)

    def convert_ids_to_tokens(self, ids, skip_special_tokens: bool = False):
        """The token string of an id, or the list of them for a sequence of ids."""
        single = isinstance(ids, (int, np.integer)) and not isinstance(ids, bool)
        tokens = []
        skipped = set(self.all_special_ids) if skip_special_tokens else set()
        for i in _as_id_list(ids, "convert_ids_to_tokens"):
            token = self.backend_tokenizer.id_to_token(i)
            if token is None:
                raise ValueError(f"convert_ids_to_tokens: id {i} is not in the vocabulary "
                                 f"(0..{len(self) - 1})")
            if i not in skipped:
                tokens.append(token)
        return tokens[0] if single else tokens

    def convert_tokens_to_ids(self, tokens):
        """The id of a token string (the unknown token's id if it has none), or the list of
        them for a list of tokens."""
        if isinstance(tokens, str):
            token_id = self.backend_tokenizer.token_to_id(tokens)
            return token_id if token_id is not None else self.unk_token_id
        return [self.convert_tokens_to_ids(t) for t in tokens]

    def convert_tokens_to_string(self, tokens: Sequence[str]) -> str:
        """Join tokens into text as decoding does (`["hug", "##ging"]` -> "hugging")."""
        decoder = self.backend_tokenizer.decoder
        return decoder.decode(list(tokens)) if decoder is not None else " ".join(tokens)

    # ----------------------------------------------------------------- encoding
    def tokenize(self, text: str, text_pair: str | None = None,
                 add_special_tokens: bool = False) -> list[str]:
        """The tokens of a text (without special tokens unless asked), never truncated or
        padded (whatever the last call configured)."""
        self._configure(False, False, None, 0, None)
        return self.backend_tokenizer.encode(text, text_pair,
                                             add_special_tokens=add_special_tokens).tokens

    def encode(self, text: str, text_pair: str | None = None, add_special_tokens: bool = True,
               **kwargs) -> list[int]:
        """The ids of one text (or pair), as a list."""
        return self(text, text_pair, add_special_tokens=add_special_tokens, **kwargs)["input_ids"]

    def _configure(self, padding, truncation, max_length, stride, pad_to_multiple_of) -> None:
        backend = self.backend_tokenizer
        if truncation not in _TRUNCATION:
            raise ValueError(f"truncation must be True, False or one of 'longest_first', "
                             f"'only_first', 'only_second', 'do_not_truncate'; got "
                             f"{truncation!r}")
        if padding not in _PADDING:
            raise ValueError(f"padding must be True, False or one of 'longest', 'max_length', "
                             f"'do_not_pad'; got {padding!r}")
        if max_length is not None and (not isinstance(max_length, int) or max_length <= 0):
            raise ValueError(f"max_length must be a positive int or None, got {max_length!r}")
        limit = max_length if max_length is not None else self.model_max_length
        strategy = _TRUNCATION[truncation]
        if strategy is not None and limit is not None:
            if stride >= limit:
                raise ValueError(f"stride ({stride}) must be smaller than the maximum length "
                                 f"({limit}): windows overlap by stride tokens")
            backend.enable_truncation(limit, stride=stride, strategy=strategy,
                                      direction=self.truncation_side)
        else:
            backend.no_truncation()
        pad = _PADDING[padding]
        if pad is None:
            backend.no_padding()
            return
        if self.pad_token is None:
            raise ValueError("padding was asked for, but the tokenizer has no pad token; set "
                             "one, e.g. `tokenizer.pad_token = tokenizer.eos_token`")
        if pad == "max_length" and limit is None:
            raise ValueError("padding='max_length' needs max_length: this tokenizer has no "
                             "model_max_length")
        backend.enable_padding(direction=self.padding_side, pad_id=self.pad_token_id,
                               pad_type_id=0, pad_token=self.pad_token,
                               length=limit if pad == "max_length" else None,
                               pad_to_multiple_of=pad_to_multiple_of)

    @staticmethod
    def _inputs(text, text_pair) -> tuple[list, bool]:
        """The batch to encode (texts or (text, pair) tuples) and whether it was one text."""
        single = isinstance(text, str)
        texts = [text] if single else text
        if not isinstance(texts, (list, tuple)) or not texts or \
                not all(isinstance(t, str) for t in texts):
            raise TypeError(f"text must be a string or a non-empty list of strings, got "
                            f"{text!r:.80}")
        if text_pair is None:
            return list(texts), single
        pairs = [text_pair] if isinstance(text_pair, str) else text_pair
        if not isinstance(pairs, (list, tuple)) or not all(isinstance(t, str) for t in pairs):
            raise TypeError(f"text_pair must be a string or a list of strings, got "
                            f"{text_pair!r:.80}")
        if len(pairs) != len(texts) or isinstance(text_pair, str) != single:
            raise ValueError(f"text_pair must match text (a string for a string, a list of "
                             f"the same length for a list): {len(texts)} text(s) but "
                             f"{len(pairs)} pair(s)")
        return list(zip(texts, pairs)), single

    def __call__(self, text, text_pair=None, padding: bool | str = False,
                 truncation: bool | str = False, max_length: int | None = None, stride: int = 0,
                 pad_to_multiple_of: int | None = None, return_tensors: str | None = None,
                 return_token_type_ids: bool | None = None, return_attention_mask: bool = True,
                 return_offsets_mapping: bool = False, return_special_tokens_mask: bool = False,
                 return_overflowing_tokens: bool = False,
                 add_special_tokens: bool = True) -> BatchEncoding:
        """Encode a text, a list of texts, or pairs (`text_pair`, e.g. question and context).

        `padding`: False, True (to the longest in the batch) or "max_length"; `truncation`:
        False, True ("longest_first"), "only_first" or "only_second", to `max_length` (the
        tokenizer's `model_max_length` when None). `return_tensors`: None (lists), "np" or
        "dl" (int64 arrays or tensors of shape (batch, sequence); one text gives a batch of
        one). `return_overflowing_tokens` keeps what truncation cut off as extra rows, each
        overlapping the previous one by `stride` tokens, with `overflow_to_sample_mapping`.
        `offset_mapping` gives each token's (start, end) characters in its text."""
        if return_tensors not in _RETURN_TENSORS:
            raise ValueError(f"return_tensors must be one of {_RETURN_TENSORS}, got "
                             f"{return_tensors!r}")
        if not isinstance(stride, int) or stride < 0:
            raise ValueError(f"stride must be an int >= 0, got {stride!r}")
        inputs, single = self._inputs(text, text_pair)
        self._configure(padding, truncation, max_length, stride, pad_to_multiple_of)
        try:
            encodings = self.backend_tokenizer.encode_batch(
                inputs, add_special_tokens=add_special_tokens)
        except Exception as e:  # tokenizers raises a bare Exception, e.g. for truncation
            raise ValueError(f"the tokenizer could not encode this batch with truncation="
                             f"{truncation!r}, max_length={max_length!r}: {e}. With "
                             "'only_first'/'only_second' that sequence must be long enough to "
                             "cut; truncation=True cuts the longer of each pair") from None
        rows, sample = [], []
        for i, encoding in enumerate(encodings):
            parts = [encoding, *encoding.overflowing] if return_overflowing_tokens else [encoding]
            rows += parts
            sample += [i] * len(parts)
        if return_token_type_ids is None:
            return_token_type_ids = "token_type_ids" in self.model_input_names
        fields = {"input_ids": [e.ids for e in rows]}
        if return_token_type_ids:
            fields["token_type_ids"] = [e.type_ids for e in rows]
        if return_attention_mask:
            fields["attention_mask"] = [e.attention_mask for e in rows]
        if return_special_tokens_mask:
            fields["special_tokens_mask"] = [e.special_tokens_mask for e in rows]
        if return_offsets_mapping:
            fields["offset_mapping"] = [e.offsets for e in rows]
        if return_overflowing_tokens:
            fields["overflow_to_sample_mapping"] = sample
        if return_tensors is not None:
            fields = {k: self._as_tensor(k, v, return_tensors) for k, v in fields.items()}
        elif single and not return_overflowing_tokens:
            fields = {k: v[0] for k, v in fields.items()}
        return BatchEncoding(fields, rows)

    @staticmethod
    def _as_tensor(name: str, rows: list, kind: str):
        """One field as an int64 array or tensor; its rows must be of one length."""
        lengths = {len(r) for r in rows if isinstance(r, list)}
        if len(lengths) > 1:
            raise ValueError(f"cannot make one tensor of sequences of different lengths "
                             f"({sorted(lengths)}); pass padding=True (and truncation=True "
                             "for texts longer than the model accepts)")
        array = np.asarray(rows, dtype=np.int64)
        if name == "offset_mapping":
            array = array.reshape(len(rows), -1, 2)  # also for empty rows
        return dl.as_tensor(array) if kind == "dl" else array

    # ----------------------------------------------------------------- decoding
    def decode(self, token_ids, skip_special_tokens: bool = False,
               clean_up_tokenization_spaces: bool | None = None) -> str:
        """The text of a sequence of ids (a list, 1-d array or tensor)."""
        text = self.backend_tokenizer.decode(_as_id_list(token_ids, "decode"),
                                             skip_special_tokens=skip_special_tokens)
        clean = self.clean_up_tokenization_spaces if clean_up_tokenization_spaces is None \
            else clean_up_tokenization_spaces
        # As transformers: the clean-up suits WordPiece and would remove real spaces from
        # byte-level BPE output, so BPE models never get it.
        if clean and type(self.backend_tokenizer.model).__name__ != "BPE":
            for before, after in _CLEAN_UP:
                text = text.replace(before, after)
        return text

    def batch_decode(self, sequences, skip_special_tokens: bool = False,
                     clean_up_tokenization_spaces: bool | None = None) -> list[str]:
        """The texts of a batch of id sequences (a list of lists, a 2-d array or tensor)."""
        if isinstance(sequences, (Tensor, np.ndarray)):
            if sequences.ndim != 2:
                raise ValueError(f"batch_decode expects a 2-d (batch, sequence) array, got "
                                 f"shape {tuple(sequences.shape)}")
            sequences = sequences.tolist()
        return [self.decode(s, skip_special_tokens, clean_up_tokenization_spaces)
                for s in sequences]

    def __repr__(self) -> str:
        return (f"PreTrainedTokenizer(vocab_size={self.vocab_size}, model_max_length="
                f"{self.model_max_length}, padding_side={self.padding_side!r}, special_tokens="
                f"{ {r: t for r, t in self._special.items() if t} })")


class AutoTokenizer:
    """`AutoTokenizer.from_pretrained(path or repo id)`: the folder's fast tokenizer."""

    def __init__(self):
        raise TypeError("AutoTokenizer is not instantiated: use "
                        "AutoTokenizer.from_pretrained(path)")

    @staticmethod
    def from_pretrained(name_or_path: str | os.PathLike, revision: str | None = None,
                        cache_dir: str | os.PathLike | None = None,
                        local_files_only: bool = False, **overrides) -> PreTrainedTokenizer:
        """As `PreTrainedTokenizer.from_pretrained`."""
        return PreTrainedTokenizer.from_pretrained(name_or_path, revision=revision,
                                                   cache_dir=cache_dir,
                                                   local_files_only=local_files_only,
                                                   **overrides)
