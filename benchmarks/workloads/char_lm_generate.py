"""Greedy generation through the key/value cache from examples/char_lm.py's model (see
char_lm_model.py), batch 1, float32: a prompt of 16 fixed random tokens passes through the
model once, then each of 96 new tokens is fed alone and attends to the cache; tokens/s is
96 / the step's time. The weights are fixed N(0, 0.2²) numbers (so that the logits are far
apart and greedy choices are not near-ties). Every `step()` returns the (1, 112) token
ids, which the smoke test compares.
"""

import numpy as np

from .char_lm_model import VOCAB, dlfree_model, torch_model
from .plan import Plan

NAME = "char_lm_generate"
DESCRIPTION = ("char-level GPT (4 layers x 128, context 128) greedy decoding with the KV "
               "cache, prompt 16 + 96 new tokens, batch 1")
UNIT = "ms"
REFERENCE = "torch"
TARGETS = {"torch": 1.5}
PLANS = {"full": Plan(rounds=11, iterations=3, warmup=2),
         "quick": Plan(rounds=3, iterations=1, warmup=1)}

INIT_STD = 0.2
# Read when a step runs, so that the smoke test can generate fewer tokens.
PROMPT, NEW_TOKENS = 16, 96


def _prompt() -> np.ndarray:
    return np.random.default_rng(1).integers(0, VOCAB, (1, PROMPT))


def build_dlfree():
    """`model.new_cache()`, the prompt, then one argmax token at a time under no_grad."""
    import dlfree as dl

    model = dlfree_model(INIT_STD).eval()
    prompt = dl.tensor(_prompt())

    def step():
        cache, ids = model.new_cache(), [prompt]
        with dl.no_grad():
            logits = model(prompt, cache=cache)
            for i in range(NEW_TOKENS):
                token = logits[:, -1].argmax(-1, keepdim=True)
                ids.append(token)
                if i + 1 < NEW_TOKENS:
                    logits = model(token, cache=cache)
        return dl.cat(ids, 1)

    return step


def build_torch():
    """The same loop on the PyTorch model and its preallocated cache, under
    torch.inference_mode."""
    import torch

    model = torch_model(INIT_STD).eval()
    prompt = torch.from_numpy(_prompt())

    def step():
        cache, ids = {}, [prompt]
        with torch.inference_mode():
            logits = model(prompt, cache=cache)
            for i in range(NEW_TOKENS):
                token = logits[:, -1].argmax(-1, keepdim=True)
                ids.append(token)
                if i + 1 < NEW_TOKENS:
                    logits = model(token, cache=cache)
        return torch.cat(ids, 1)

    return step


BUILDERS = {"dlfree": build_dlfree, "torch": build_torch}
