"""Greedy generation with the KV cache from a tiny GPT-2: dl.free's `generate` against
transformers' on torch, float32.

The model has 4 layers, 256 wide, 4 heads, a vocabulary of 4096 and 256 positions, with
fixed random weights (seed 0, N(0, 0.2²) so that the logits are far apart and greedy
choices are not near-ties), written as a temporary checkpoint folder that each framework
loads. It has no end token, so every run makes all its tokens. A step continues one prompt of 32
fixed random tokens by 64 new tokens; tokens/s is 64 / the step's time. Every `step()`
returns the (1, 96) token ids, which the smoke test compares (two steps: the same ids).
"""

import json
from pathlib import Path

import numpy as np

from . import generation
from .plan import Plan

NAME = "gpt_generation"
DESCRIPTION = ("tiny GPT-2 (4 layers x 256, vocab 4096) greedy generate with the KV cache, "
               "prompt 32 + 64 new tokens, batch 1")
UNIT = "ms"
REFERENCE = "transformers"
TARGETS = {"transformers": 1.5}
PLANS = {"full": Plan(rounds=11, iterations=3, warmup=2),
         "quick": Plan(rounds=3, iterations=1, warmup=1)}

LAYERS, WIDTH, HEADS, VOCAB, POSITIONS = 4, 256, 4, 4096, 256
# Read when a step runs, so that the smoke test can generate fewer tokens.
PROMPT, NEW_TOKENS = 32, 64
INIT_STD = 0.2


def _weights() -> dict:
    """The GPT2LMHeadModel state under transformers' names (Conv1D weights stored
    (in, out)); the output layer is tied to `wte`, so it is not stored."""
    rng = np.random.default_rng(0)

    def normal(*shape):
        return rng.standard_normal(shape, dtype=np.float32) * np.float32(INIT_STD)

    def norm(prefix):
        return {f"{prefix}.weight": np.ones(WIDTH, np.float32),
                f"{prefix}.bias": np.zeros(WIDTH, np.float32)}

    state = {"transformer.wte.weight": normal(VOCAB, WIDTH),
             "transformer.wpe.weight": normal(POSITIONS, WIDTH), **norm("transformer.ln_f")}
    for i in range(LAYERS):
        block = f"transformer.h.{i}"
        state.update({**norm(f"{block}.ln_1"), **norm(f"{block}.ln_2"),
                      f"{block}.attn.c_attn.weight": normal(WIDTH, 3 * WIDTH),
                      f"{block}.attn.c_attn.bias": normal(3 * WIDTH),
                      f"{block}.attn.c_proj.weight": normal(WIDTH, WIDTH),
                      f"{block}.attn.c_proj.bias": normal(WIDTH),
                      f"{block}.mlp.c_fc.weight": normal(WIDTH, 4 * WIDTH),
                      f"{block}.mlp.c_fc.bias": normal(4 * WIDTH),
                      f"{block}.mlp.c_proj.weight": normal(4 * WIDTH, WIDTH),
                      f"{block}.mlp.c_proj.bias": normal(WIDTH)})
    return state


def _write_checkpoint(folder: str) -> str:
    """Write config.json and model.safetensors into `folder`; return it."""
    from safetensors.numpy import save_file

    config = {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "vocab_size": VOCAB,
              "n_positions": POSITIONS, "n_embd": WIDTH, "n_layer": LAYERS, "n_head": HEADS,
              "activation_function": "gelu_new", "layer_norm_epsilon": 1e-5,
              "tie_word_embeddings": True, "bos_token_id": None, "eos_token_id": None,
              "pad_token_id": None}
    (Path(folder) / "config.json").write_text(json.dumps(config))
    save_file(_weights(), str(Path(folder) / "model.safetensors"), metadata={"format": "pt"})
    return folder


def _prompt() -> np.ndarray:
    return np.random.default_rng(1).integers(0, VOCAB, (1, PROMPT))


def build_dlfree():
    """`AutoModelForCausalLM.from_pretrained(...).generate(max_new_tokens=64)`."""
    return generation.build_dlfree("AutoModelForCausalLM", _write_checkpoint, _prompt(),
                                   lambda: NEW_TOKENS)


def build_transformers():
    """transformers' `AutoModelForCausalLM.from_pretrained(...).generate(max_new_tokens=64)`,
    greedy, in eval mode (generate runs without gradients)."""
    return generation.build_transformers("AutoModelForCausalLM", _write_checkpoint, _prompt(),
                                         lambda: NEW_TOKENS)


BUILDERS = {"dlfree": build_dlfree, "transformers": build_transformers}
