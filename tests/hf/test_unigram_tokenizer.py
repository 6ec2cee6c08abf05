"""XLM-RoBERTa's SentencePiece (Unigram) tokenizer: a tiny vocabulary trained here, made into
transformers' XLMRobertaTokenizer and saved; dl.free's AutoTokenizer must give transformers'
ids, masks and decoded text on the same folder."""

from __future__ import annotations

from dlfree.hf.tokenizer import AutoTokenizer

import numpy as np
import pytest

transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")

CORPUS = ["The quick brown fox jumps over the lazy dog.", "Le renard brun saute par-dessus.",
          "Der schnelle braune Fuchs springt.", "dl.free runs XLM-RoBERTa on NumPy."] * 20
TEXTS = ["The quick fox", "Le renard saute, dl.free!", "", "unseen Wörter ☃ 日本"]
PAIRS = ["a pair", "der Fuchs", "", "x"]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """A 120-piece Unigram vocabulary with XLM-R's layout: <s> <pad> </s> <unk> first (ids
    0-3), <mask> last."""
    import json

    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    trained = Tokenizer(models.Unigram())
    trained.pre_tokenizer = pre_tokenizers.Metaspace()
    trained.train_from_iterator(CORPUS, trainers.UnigramTrainer(
        vocab_size=120, special_tokens=["<s>", "<pad>", "</s>", "<unk>"], unk_token="<unk>"))
    vocab = [tuple(entry) for entry in json.loads(trained.to_str())["model"]["vocab"]]
    path = tmp_path_factory.mktemp("xlmr-tokenizer")
    transformers.XLMRobertaTokenizer(vocab=[*vocab, ("<mask>", 0.0)]).save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def both(folder):
    return AutoTokenizer.from_pretrained(folder), transformers.AutoTokenizer.from_pretrained(folder)


def test_ids_equal_transformers(both):
    ours, theirs = both
    assert theirs.unk_token_id == 3 and theirs.mask_token_id == len(theirs) - 1
    for text in TEXTS:
        assert ours(text)["input_ids"] == theirs(text)["input_ids"], text
        assert ours.tokenize(text) == theirs.tokenize(text), text
    # <s> A </s></s> B </s>; an empty pair is tested in a batch (a single call with
    # text_pair="" is taken for no pair by transformers)
    assert ours(TEXTS, PAIRS)["input_ids"] == theirs(TEXTS, PAIRS)["input_ids"]


def test_padded_batch_has_no_token_types(both):
    ours, theirs = both
    mine = ours(TEXTS, PAIRS, padding=True, return_tensors="np")
    expected = theirs(TEXTS, PAIRS, padding=True, return_tensors="np")
    assert sorted(mine) == sorted(expected) == ["attention_mask", "input_ids"]
    for name in expected:
        np.testing.assert_array_equal(mine[name], expected[name], err_msg=name)
    assert (mine["input_ids"][mine["attention_mask"] == 0] == ours.pad_token_id).all()


def test_decode_equals_transformers(both):
    ours, theirs = both
    for text in TEXTS:
        ids = theirs(text)["input_ids"]
        for skip in (False, True):
            assert ours.decode(ids, skip_special_tokens=skip) == \
                theirs.decode(ids, skip_special_tokens=skip), (text, skip)
