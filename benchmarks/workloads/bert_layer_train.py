"""One AdamW training step of a BERT-base encoder layer, batch 8 x 128 tokens, float32.

Hidden 768, 12 heads of 64, FFN 3072 with exact GELU, post-LN as in BERT:
h = LayerNorm(x + Wo attention(Wq x, Wk x, Wv x)), out = LayerNorm(h + W2 gelu(W1 h)),
no dropout, no mask. The loss is the mean squared error of out against a fixed target. A
step is forward, backward and an AdamW update (lr 1e-4, weight decay 0.01) of all 16
parameters, with the gradients cleared for the next step. Data and initial weights are
fixed random numbers, the same for every framework. Every `step()` returns the loss,
which the smoke test compares with the next step's (it depends on every update).
"""

import numpy as np

from .plan import Plan

NAME = "bert_layer_train"
DESCRIPTION = "AdamW step, BERT-base encoder layer (768, 12 heads, FFN 3072, post-LN), 8x128"
UNIT = "ms"
REFERENCE = "torch"
TARGETS = {"torch": 1.2}
PLANS = {"full": Plan(rounds=11, iterations=3, warmup=2),
         "quick": Plan(rounds=3, iterations=1, warmup=1)}

BATCH, LENGTH, HEADS, HEAD_DIM, FFN = 8, 128, 12, 64, 3072
DIM = HEADS * HEAD_DIM
LR, WEIGHT_DECAY, EPS = 1e-4, 0.01, 1e-12
# the GEMMs forward (four DIMxDIM projections, the two FFN ones, scores and mixing) and
# twice that backward
FLOPS = 3 * 2 * BATCH * LENGTH * (4 * DIM * DIM + 2 * DIM * FFN + 2 * LENGTH * DIM)


def _problem():
    """Input and target (B, T, DIM) and the parameters in `_loss`'s order."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((BATCH, LENGTH, DIM), dtype=np.float32)
    target = rng.standard_normal((BATCH, LENGTH, DIM), dtype=np.float32)

    def linear(out_size, in_size):
        return [rng.standard_normal((out_size, in_size), dtype=np.float32) * np.float32(0.02),
                rng.standard_normal(out_size, dtype=np.float32) * np.float32(0.02)]

    def norm():
        return [np.ones(DIM, np.float32), np.zeros(DIM, np.float32)]

    params = (linear(DIM, DIM) + linear(DIM, DIM) + linear(DIM, DIM) + linear(DIM, DIM)
              + norm() + linear(FFN, DIM) + linear(DIM, FFN) + norm())
    return (x, target), None, params


def _loss(F, x, target, params):
    """The layer and its loss in a framework with torch's API (`F` its functional module);
    dl.free and torch run this same code."""
    wq, bq, wk, bk, wv, bv, wo, bo, g1, c1, w1, b1, w2, b2, g2, c2 = params

    def heads(t):
        return t.reshape(BATCH, LENGTH, HEADS, HEAD_DIM).transpose(1, 2)

    q, k, v = (heads(F.linear(x, w, b)) for w, b in ((wq, bq), (wk, bk), (wv, bv)))
    mixed = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(BATCH, LENGTH, DIM)
    h = F.layer_norm(x + F.linear(mixed, wo, bo), (DIM,), g1, c1, EPS)
    out = F.layer_norm(h + F.linear(F.gelu(F.linear(h, w1, b1)), w2, b2), (DIM,), g2, c2, EPS)
    return F.mse_loss(out, target)


def _build(framework, tensor):
    """The step in `framework` (dlfree or torch, same API) with its AdamW."""
    (x_np, target_np), _, params_np = _problem()
    x, target = tensor(x_np), tensor(target_np)
    params = [tensor(p.copy()).requires_grad_() for p in params_np]
    optimizer = framework.optim.AdamW(params, lr=LR, weight_decay=WEIGHT_DECAY)
    F = framework.nn.functional

    def step():
        loss = _loss(F, x, target, params)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return loss

    return step


def build_dlfree():
    """Public API only, written as the torch version is, with dlfree.optim.AdamW."""
    import dlfree as dl
    import dlfree.nn
    import dlfree.optim  # noqa: F401

    return _build(dl, dl.tensor)


def build_torch():
    """Plain PyTorch: `torch.nn.functional` ops and `optim.AdamW`."""
    import torch

    return _build(torch, torch.from_numpy)


BUILDERS = {"dlfree": build_dlfree, "torch": build_torch}
