"""Character-level text for language models: `CharText` (a character vocabulary and
next-token pairs over a string), `TinyShakespeare` (the standard `input.txt` from a folder)
and `sonnets()`, a small public-domain text shipped with dl.free."""

from __future__ import annotations

import numbers
import os
from pathlib import Path

import numpy as np

from ..dataset import Dataset

_TEXTS = Path(__file__).with_name("texts")
TINY_SHAKESPEARE_URL = ("https://raw.githubusercontent.com/karpathy/char-rnn/master/data/"
                        "tinyshakespeare/input.txt")


def sonnets() -> str:
    """53 of Shakespeare's Sonnets (1609, public domain; see texts/README.md), about 32 KB:
    a text that ships with dl.free, for examples and tests that need one offline."""
    return (_TEXTS / "sonnets.txt").read_text(encoding="utf-8")


def _positive(value, name: str, owner: str) -> int:
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{owner}: {name} must be an integer >= 1, got {value!r}")
    return int(value)


class CharText(Dataset):
    """Windows of a text as next-token pairs, one token per character.

    The vocabulary is the text's distinct characters in sorted order (or `vocabulary`,
    which must hold every character of the text: give the full corpus's so that a split
    shares it). Item i is `(inputs, targets)`, two int64 arrays of length `seq_len`: the
    ids of characters [i·stride, i·stride + seq_len) and of the characters one further on.
    `stride` defaults to `seq_len`, so an epoch reads the text once, window after window;
    `stride=1` gives every offset.
    """

    def __init__(self, text: str, seq_len: int, stride: int | None = None,
                 vocabulary: str | None = None):
        owner = type(self).__name__
        if not isinstance(text, str):
            raise TypeError(f"{owner}: text must be a str, got {type(text).__name__}")
        self.seq_len = _positive(seq_len, "seq_len", owner)
        self.stride = self.seq_len if stride is None else _positive(stride, "stride", owner)
        if len(text) < seq_len + 1:
            raise ValueError(f"{owner}: a window of seq_len = {seq_len} needs a text of at "
                             f"least {seq_len + 1} characters (inputs and the next one), got "
                             f"{len(text)}")
        if vocabulary is None:
            vocabulary = "".join(sorted(set(text)))
        elif len(set(vocabulary)) != len(vocabulary):
            raise ValueError(f"{owner}: vocabulary must list each character once")
        self.chars = list(vocabulary)
        self._ids = {c: i for i, c in enumerate(self.chars)}
        self.data = self.encode(text)

    @property
    def vocab_size(self) -> int:
        """How many distinct characters (token ids 0 .. vocab_size - 1)."""
        return len(self.chars)

    def encode(self, text: str) -> np.ndarray:
        """The int64 ids of `text`'s characters; a character outside the vocabulary is an
        error naming it."""
        try:
            return np.fromiter((self._ids[c] for c in text), dtype=np.int64, count=len(text))
        except KeyError as e:
            raise ValueError(f"{type(self).__name__}.encode: the character {e.args[0]!r} is "
                             f"not in the vocabulary of {self.vocab_size} characters") from None

    def decode(self, ids) -> str:
        """The text of token ids (a sequence of ints, an array or a 1-D tensor)."""
        ids = ids.tolist() if hasattr(ids, "tolist") else list(ids)
        bad = [i for i in ids if isinstance(i, bool) or not isinstance(i, numbers.Integral)
               or not 0 <= i < self.vocab_size]
        if bad:
            raise ValueError(f"{type(self).__name__}.decode: ids must be integers in "
                             f"[0, {self.vocab_size}), got {bad[0]!r}")
        return "".join([self.chars[i] for i in ids])

    def __len__(self) -> int:
        return (len(self.data) - 1 - self.seq_len) // self.stride + 1

    def __getitem__(self, index):
        count = len(self)
        if not isinstance(index, numbers.Integral) or not -count <= index < count:
            raise IndexError(f"{type(self).__name__}: index {index!r} is out of range for "
                             f"{count} windows")
        start = (index % count) * self.stride
        window = self.data[start:start + self.seq_len + 1]
        return window[:-1], window[1:]


class TinyShakespeare(CharText):
    """The tiny-shakespeare corpus (about 1.1 MB of Shakespeare's plays, the standard
    `input.txt` of char-rnn) read from `root/input.txt`; nothing is downloaded.

    `split="train"` is the first 90 % of the text and "val" the rest, both with the
    vocabulary of the whole file (65 characters); windows as in `CharText`.
    """

    SPLITS = ("train", "val")

    def __init__(self, root: str | os.PathLike, seq_len: int, split: str = "train",
                 stride: int | None = None):
        if split not in self.SPLITS:
            raise ValueError(f"TinyShakespeare: split must be 'train' or 'val', got {split!r}")
        self.root, self.split = Path(root), split
        path = self.root / "input.txt"
        if not path.is_file():
            raise FileNotFoundError(f"TinyShakespeare: {path} does not exist; download "
                                    f"input.txt from {TINY_SHAKESPEARE_URL} and put it in "
                                    f"{self.root}")
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as e:
            raise ValueError(f"TinyShakespeare: {path} is not UTF-8 text ({e.reason} at byte "
                             f"{e.start}); is it the right file?") from None
        cut = int(len(text) * 0.9)
        part = text[:cut] if split == "train" else text[cut:]
        super().__init__(part, seq_len, stride, vocabulary="".join(sorted(set(text))))
