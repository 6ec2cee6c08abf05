"""Greedy encoder–decoder generation with the KV cache from a tiny T5: dl.free's `generate`
against transformers' on torch, float32.

The model is T5-shaped (original T5: ReLU feed-forward, head tied to the embeddings): 4
encoder and 4 decoder layers, d_model 256, 4 heads of 64, d_ff 1024, a vocabulary of 4096,
with fixed random weights (seed 0, N(0, 0.2²), so that the logits are far apart and greedy
choices are not near-ties), written as a temporary checkpoint folder that each framework
loads. It has no end token, so every run makes all its tokens. A step encodes one prompt of
32 fixed random tokens once and decodes 64 new tokens after the start token; tokens/s is
64 / the step's time. Every `step()` returns the (1, 65) decoder ids, which the smoke test
compares.
"""

import json
from pathlib import Path

import numpy as np

from . import generation
from .plan import Plan

NAME = "t5_generation"
DESCRIPTION = ("tiny T5 (4+4 layers x 256, vocab 4096) greedy generate, encoder once and the "
               "KV cache, prompt 32 + 64 new tokens, batch 1")
UNIT = "ms"
REFERENCE = "transformers"
TARGETS = {"transformers": 1.5}
PLANS = {"full": Plan(rounds=11, iterations=3, warmup=2),
         "quick": Plan(rounds=3, iterations=1, warmup=1)}

LAYERS, WIDTH, HEADS, HEAD_DIM, FEED_FORWARD, VOCAB, BUCKETS = 4, 256, 4, 64, 1024, 4096, 32
# Read when a step runs, so that the smoke test can generate fewer tokens.
PROMPT, NEW_TOKENS = 32, 64
INIT_STD = 0.2


def _weights() -> dict:
    """The T5ForConditionalGeneration state under transformers' names; the head and both
    stacks' embeddings are `shared`, stored once."""
    rng = np.random.default_rng(0)
    inner = HEADS * HEAD_DIM

    def normal(*shape):
        return rng.standard_normal(shape, dtype=np.float32) * np.float32(INIT_STD)

    state = {"shared.weight": normal(VOCAB, WIDTH)}
    for stack in ("encoder", "decoder"):
        state[f"{stack}.final_layer_norm.weight"] = np.ones(WIDTH, np.float32)
        state[f"{stack}.block.0.layer.0.SelfAttention.relative_attention_bias.weight"] = \
            normal(BUCKETS, HEADS)
        attentions = ["SelfAttention"] + (["EncDecAttention"] if stack == "decoder" else [])
        for i in range(LAYERS):
            block = f"{stack}.block.{i}.layer"
            for k, attention in enumerate(attentions):
                state[f"{block}.{k}.layer_norm.weight"] = np.ones(WIDTH, np.float32)
                for name in ("q", "k", "v"):
                    state[f"{block}.{k}.{attention}.{name}.weight"] = normal(inner, WIDTH)
                state[f"{block}.{k}.{attention}.o.weight"] = normal(WIDTH, inner)
            last = len(attentions)
            state[f"{block}.{last}.layer_norm.weight"] = np.ones(WIDTH, np.float32)
            state[f"{block}.{last}.DenseReluDense.wi.weight"] = normal(FEED_FORWARD, WIDTH)
            state[f"{block}.{last}.DenseReluDense.wo.weight"] = normal(WIDTH, FEED_FORWARD)
    return state


def _write_checkpoint(folder: str) -> str:
    """Write config.json and model.safetensors into `folder`; return it."""
    from safetensors.numpy import save_file

    config = {"model_type": "t5", "architectures": ["T5ForConditionalGeneration"],
              "vocab_size": VOCAB, "d_model": WIDTH, "d_kv": HEAD_DIM, "d_ff": FEED_FORWARD,
              "num_layers": LAYERS, "num_decoder_layers": LAYERS, "num_heads": HEADS,
              "relative_attention_num_buckets": BUCKETS, "feed_forward_proj": "relu",
              "tie_word_embeddings": True, "decoder_start_token_id": 0, "pad_token_id": 0,
              "eos_token_id": None}
    (Path(folder) / "config.json").write_text(json.dumps(config))
    save_file(_weights(), str(Path(folder) / "model.safetensors"), metadata={"format": "pt"})
    return folder


def _prompt() -> np.ndarray:
    return np.random.default_rng(1).integers(1, VOCAB, (1, PROMPT))


def build_dlfree():
    """`AutoModelForSeq2SeqLM.from_pretrained(...).generate(max_new_tokens=64)`."""
    return generation.build_dlfree("AutoModelForSeq2SeqLM", _write_checkpoint, _prompt(),
                                   lambda: NEW_TOKENS)


def build_transformers():
    """transformers' `AutoModelForSeq2SeqLM.from_pretrained(...).generate(max_new_tokens=64)`,
    greedy, in eval mode (generate runs without gradients)."""
    return generation.build_transformers("AutoModelForSeq2SeqLM", _write_checkpoint, _prompt(),
                                         lambda: NEW_TOKENS)


BUILDERS = {"dlfree": build_dlfree, "transformers": build_transformers}
