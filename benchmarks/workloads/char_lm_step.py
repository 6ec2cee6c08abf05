"""One training step of examples/char_lm.py's model (see char_lm_model.py; no dropout):
forward, next-token cross-entropy, backward and AdamW (lr 1e-3, weight decay 0.1), on a
batch of 16 windows of 128 fixed random token ids, float32. The weights start as the same
fixed N(0, 0.02²) numbers in both frameworks; every `step()` returns the loss, which the
smoke test compares for two consecutive steps (the second depends on every gradient
through the update).
"""

import numpy as np

from .char_lm_model import CONTEXT, VOCAB, dlfree_model, torch_model
from .plan import Plan

NAME = "char_lm_step"
DESCRIPTION = ("char-level GPT (4 layers x 128, 4 heads, context 128, vocab 60) training "
               "step: fwd + bwd + AdamW, batch 16 x 128, float32")
UNIT = "ms"
REFERENCE = "torch"
TARGETS = {"torch": 1.3}
PLANS = {"full": Plan(rounds=11, iterations=5, warmup=3),
         "quick": Plan(rounds=3, iterations=1, warmup=1)}

BATCH = 16
INIT_STD = 0.02
LR, WEIGHT_DECAY = 1e-3, 0.1


def _batch() -> tuple[np.ndarray, np.ndarray]:
    """(inputs, targets), each (BATCH, CONTEXT) int64, the targets one token further on."""
    ids = np.random.default_rng(1).integers(0, VOCAB, (BATCH, CONTEXT + 1))
    return ids[:, :-1].copy(), ids[:, 1:].copy()


def build_dlfree():
    """nn.CausalTransformer, F.cross_entropy and optim.AdamW, as examples/char_lm.py."""
    import dlfree as dl
    from dlfree import functional as F
    from dlfree import optim

    model = dlfree_model(INIT_STD)
    optimizer = optim.AdamW(model.parameters(), lr=LR, weight_decay=WEIGHT_DECAY)
    inputs, targets = (dl.tensor(a) for a in _batch())

    def step():
        loss = F.cross_entropy(model(inputs).flatten(0, 1), targets.flatten())
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        return loss

    return step


def build_torch():
    """The same model written for PyTorch, F.cross_entropy and torch.optim.AdamW."""
    import torch
    import torch.nn.functional as F

    model = torch_model(INIT_STD)
    optimizer = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=WEIGHT_DECAY)
    inputs, targets = (torch.from_numpy(a) for a in _batch())

    def step():
        loss = F.cross_entropy(model(inputs).flatten(0, 1), targets.flatten())
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return loss

    return step


BUILDERS = {"dlfree": build_dlfree, "torch": build_torch}
