"""Character-level text: CharText's vocabulary, encode/decode and next-token windows,
TinyShakespeare from a folder (and its message when input.txt is missing), and the shipped
public-domain text."""

from __future__ import annotations

import dlfree as dl
from dlfree.data import DataLoader
from dlfree.data.datasets import CharText, TinyShakespeare, sonnets

import numpy as np
import pytest


def test_the_vocabulary_is_the_sorted_characters_and_round_trips():
    data = CharText("hello world", seq_len=3)
    assert data.chars == [" ", "d", "e", "h", "l", "o", "r", "w"] and data.vocab_size == 8
    ids = data.encode("hold")
    assert ids.dtype == np.int64 and ids.tolist() == [3, 5, 4, 1]
    assert data.decode(ids) == data.decode(dl.tensor(ids)) == data.decode([3, 5, 4, 1]) == "hold"


def test_windows_are_inputs_and_the_next_characters():
    text = "abcdefghij"
    data = CharText(text, seq_len=4)
    assert len(data) == 2  # windows at 0 and 4; the one at 8 has no next characters for 4
    inputs, targets = data[1]
    assert inputs.dtype == targets.dtype == np.int64 and inputs.shape == targets.shape == (4,)
    assert data.decode(inputs) == "efgh" and data.decode(targets) == "fghi"
    assert data.decode(data[-1][0]) == "efgh"
    every = CharText(text, seq_len=4, stride=1)
    assert len(every) == 6
    assert [every.decode(every[i][1]) for i in (0, 5)] == ["bcde", "ghij"]


def test_a_loader_batches_windows_as_int64_tensors():
    data = CharText(sonnets(), seq_len=32)
    inputs, targets = next(iter(DataLoader(data, batch_size=8)))
    assert inputs.shape == targets.shape == (8, 32) and inputs.dtype == dl.int64
    np.testing.assert_array_equal(inputs.numpy()[:, 1:], targets.numpy()[:, :-1])


def test_the_shipped_text_is_the_sonnets():
    text = sonnets()
    assert text.startswith("I\n\nFrom fairest creatures we desire increase,")
    assert "Shall I compare thee to a summer's day?" in text
    assert 20_000 < len(text.encode()) < 300_000
    assert CharText(text, 64).vocab_size == len(set(text))


@pytest.mark.parametrize(("call", "error", "message"), [
    (lambda: CharText("abc", seq_len=3), ValueError, "at least 4 characters"),
    (lambda: CharText("abcd", seq_len=0), ValueError, "seq_len must be an integer >= 1"),
    (lambda: CharText("abcd", seq_len=2, stride=0), ValueError, "stride must be"),
    (lambda: CharText(b"abcd", seq_len=2), TypeError, "text must be a str"),
    (lambda: CharText("abcd", 2, vocabulary="abca"), ValueError, "each character once"),
    (lambda: CharText("abcd", 2, vocabulary="abc"), ValueError, "'d' is not in the vocab"),
    (lambda: CharText("abcd", 2).encode("abz"), ValueError, "'z' is not in the vocabulary"),
    (lambda: CharText("abcd", 2).decode([0, 4]), ValueError, r"in \[0, 4\), got 4"),
    (lambda: CharText("abcd", 2).decode([-1]), ValueError, "got -1"),
    (lambda: CharText("abcdefg", 2)[3], IndexError, "out of range for 3 windows"),
])
def test_bad_input_is_refused_with_what_is_valid(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_tiny_shakespeare_splits_one_file_with_one_vocabulary(tmp_path):
    text = sonnets()
    (tmp_path / "input.txt").write_text(text, encoding="utf-8")
    train = TinyShakespeare(tmp_path, seq_len=16)
    val = TinyShakespeare(tmp_path, seq_len=16, split="val")
    assert train.chars == val.chars == sorted(set(text))
    cut = int(len(text) * 0.9)
    assert train.decode(train[0][0]) == text[:16]
    assert val.decode(val[0][0]) == text[cut:cut + 16]
    assert len(train.data) + len(val.data) == len(text)


def test_tiny_shakespeare_without_the_file_says_where_to_get_it(tmp_path):
    with pytest.raises(FileNotFoundError, match=rf"{tmp_path / 'input.txt'} does not exist; "
                                                r"download input.txt from https://\S+"):
        TinyShakespeare(tmp_path, seq_len=8)
    with pytest.raises(ValueError, match="split must be 'train' or 'val'"):
        TinyShakespeare(tmp_path, seq_len=8, split="test")
    (tmp_path / "input.txt").write_bytes(b"\x89PNG\r\n\x1a\n")
    with pytest.raises(ValueError, match="input.txt is not UTF-8 text"):
        TinyShakespeare(tmp_path, seq_len=8)
