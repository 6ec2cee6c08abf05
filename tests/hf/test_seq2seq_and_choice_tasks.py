"""The task helpers of the new shapes against transformers: `text2text` and `dlfree hf
generate` on a tiny T5 with a SentencePiece (Unigram) tokenizer trained here, against
transformers' generate and decode; `choose` (multiple choice) against a transformers
multiple-choice model's scores."""

from __future__ import annotations

import json

from dlfree import cli
from dlfree.hf import AutoModelForMultipleChoice, AutoModelForSeq2SeqLM
from dlfree.hf.tasks import choose, text2text
from dlfree.hf.tokenizer import AutoTokenizer

import numpy as np
import pytest

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

CORPUS = ["translate English to German: the house is wonderful.", "summarize: a long text",
          "question: who runs T5 on NumPy? context: dl.free does."] * 20
PROMPTS = ["translate English to German: the house", "summarize: a wonderful long text here"]


def unigram_vocab(specials: list[str], size: int) -> list[tuple[str, float]]:
    """A Unigram vocabulary trained on CORPUS, `specials` first."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    trained = Tokenizer(models.Unigram())
    trained.pre_tokenizer = pre_tokenizers.Metaspace()
    trained.train_from_iterator(CORPUS, trainers.UnigramTrainer(
        vocab_size=size, special_tokens=specials, unk_token="<unk>"))
    return [tuple(entry) for entry in json.loads(trained.to_str())["model"]["vocab"]]


@pytest.fixture(scope="module")
def tiny_t5(tmp_path_factory, one_torch_thread):
    """(folder, transformers model, transformers tokenizer): a T5 tokenizer (no sentinel
    tokens) and a random gated-GELU T5 sized to it, whose shared table is drawn small so that
    greedy decoding does not just repeat its start token."""
    folder = tmp_path_factory.mktemp("tiny-t5")
    tokenizer = transformers.T5Tokenizer(vocab=unigram_vocab(["<pad>", "</s>", "<unk>"], 90),
                                         extra_ids=0)
    tokenizer.save_pretrained(folder)
    torch.manual_seed(0)
    config = transformers.T5Config(vocab_size=len(tokenizer), d_model=32, d_kv=8, d_ff=37,
                                   num_layers=2, num_heads=4, feed_forward_proj="gated-gelu",
                                   relative_attention_num_buckets=8, decoder_start_token_id=0)
    model = transformers.T5ForConditionalGeneration(config).eval()
    with torch.no_grad():
        model.shared.weight.mul_(0.05)
    model.save_pretrained(folder)
    return folder, model, tokenizer


def transformers_texts(tiny_t5, prompts, **settings) -> list[str]:
    _, model, tokenizer = tiny_t5
    encoding = tokenizer(prompts, padding=True, return_tensors="pt")
    with torch.no_grad():
        out = model.generate(**encoding, **settings)
    return tokenizer.batch_decode(out, skip_special_tokens=True)


@pytest.mark.parametrize("beams", [1, 3])
def test_text2text_matches_transformers(tiny_t5, beams):
    folder, _, _ = tiny_t5
    model, tokenizer = AutoModelForSeq2SeqLM.from_pretrained(folder), \
        AutoTokenizer.from_pretrained(folder)
    expected = transformers_texts(tiny_t5, PROMPTS, max_new_tokens=10, num_beams=beams)
    assert any(expected), "the tiny model must generate some text"
    results = text2text(model, tokenizer, PROMPTS, max_new_tokens=10, num_beams=beams)
    assert results == [{"generated_text": text} for text in expected]
    assert text2text(model, tokenizer, PROMPTS[1], max_new_tokens=10, num_beams=beams) == \
        {"generated_text": transformers_texts(tiny_t5, PROMPTS[1:], max_new_tokens=10,
                                              num_beams=beams)[0]}


def test_text2text_several_sequences_per_prompt(tiny_t5):
    folder, _, _ = tiny_t5
    model, tokenizer = AutoModelForSeq2SeqLM.from_pretrained(folder), \
        AutoTokenizer.from_pretrained(folder)
    expected = transformers_texts(tiny_t5, PROMPTS, max_new_tokens=6, num_beams=3,
                                  num_return_sequences=2)
    results = text2text(model, tokenizer, PROMPTS, max_new_tokens=6, num_beams=3,
                        num_return_sequences=2)
    assert results == [[{"generated_text": t} for t in expected[:2]],
                       [{"generated_text": t} for t in expected[2:]]]


def test_text2text_refuses_a_model_without_a_decoder(tiny_t5):
    from dlfree.hf import T5EncoderModel

    folder, _, _ = tiny_t5
    with pytest.raises(TypeError, match=r"encoder–decoder with an LM head"):
        text2text(T5EncoderModel.from_pretrained(folder), AutoTokenizer.from_pretrained(folder),
                  "x")


@pytest.mark.parametrize("beams", [1, 3])
def test_cli_generate_answers_with_t5(capsys, tiny_t5, beams):
    folder, _, _ = tiny_t5
    code = cli.main(["hf", "generate", str(folder), PROMPTS[0], "--max-new-tokens", "10",
                     "--num-beams", str(beams)])
    out = capsys.readouterr().out
    assert code == 0
    assert out == transformers_texts(tiny_t5, PROMPTS[:1], max_new_tokens=10,
                                     num_beams=beams)[0] + "\n"


# ------------------------------------------------------------------ multiple choice
def test_choose_matches_transformers_scores(tmp_path, one_torch_thread):
    tokenizer = transformers.XLMRobertaTokenizer(
        vocab=[*unigram_vocab(["<s>", "<pad>", "</s>", "<unk>"], 90), ("<mask>", 0.0)])
    tokenizer.save_pretrained(tmp_path)
    torch.manual_seed(0)
    config = transformers.XLMRobertaConfig(vocab_size=len(tokenizer), hidden_size=32,
                                           num_hidden_layers=2, num_attention_heads=4,
                                           intermediate_size=37, initializer_range=0.2)
    theirs = transformers.XLMRobertaForMultipleChoice(config).eval()
    theirs.save_pretrained(tmp_path)
    question, options = "who runs T5 on NumPy?", ["dl.free does.", "a long text", "the house"]
    encoding = tokenizer([question] * 3, options, padding=True, return_tensors="pt")
    with torch.no_grad():
        logits = theirs(**{k: v[None] for k, v in encoding.items()}).logits[0].numpy()
    expected = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
    result = choose(AutoModelForMultipleChoice.from_pretrained(tmp_path),
                    AutoTokenizer.from_pretrained(tmp_path), question, options)
    np.testing.assert_allclose(result["scores"], expected, rtol=0, atol=1e-5)
    assert result["choice"] == int(expected.argmax())
    assert result["answer"] == options[result["choice"]]
