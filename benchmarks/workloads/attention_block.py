"""Forward and backward of a causal self-attention block, float32.

x (8, 128, 256) requires grad; qkv = linear(x, Wqkv (768, 256), bqkv), split into q, k
and v, each reshaped to (8, 128, 4, 64) and transposed to 4 heads (8, 4, 128, 64);
causal scaled dot-product attention; heads transposed and merged back to (8, 128, 256);
out = linear(that, Wo (256, 256), bo). The backward pass starts from a fixed random
output gradient and produces the gradients of x and of all four weights. Inputs,
weights and the output gradient are fixed random numbers, the same for every
framework. Every `step()` returns (out, grad x, grad Wqkv, grad bqkv, grad Wo, grad bo),
which the smoke test compares across frameworks.
"""

import math

import numpy as np

from .plan import Plan

NAME = "attention_block"
DESCRIPTION = "causal self-attention block, x (8,128,256), 4 heads of 64, fwd+bwd, float32"
UNIT = "ms"
TARGETS = {"torch": 1.5}
PLANS = {"full": Plan(rounds=21, iterations=10, warmup=5),
         "quick": Plan(rounds=3, iterations=3, warmup=2)}

BATCH, LENGTH, HEADS, HEAD_DIM = 8, 128, 4, 64
DIM = HEADS * HEAD_DIM
# the GEMMs forward (qkv and output projections, scores and mixing), twice that backward
FLOPS = 3 * 2 * BATCH * LENGTH * (3 * DIM * DIM + DIM * DIM + 2 * LENGTH * DIM)


def _problem():
    """x (B, T, D), [Wqkv (3D, D), bqkv (3D,), Wo (D, D), bo (D,)], output gradient."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((BATCH, LENGTH, DIM), dtype=np.float32)
    scale = np.float32(1 / math.sqrt(DIM))
    params = [rng.standard_normal((3 * DIM, DIM), dtype=np.float32) * scale,
              rng.standard_normal(3 * DIM, dtype=np.float32) * np.float32(0.1),
              rng.standard_normal((DIM, DIM), dtype=np.float32) * scale,
              rng.standard_normal(DIM, dtype=np.float32) * np.float32(0.1)]
    grad_out = rng.standard_normal((BATCH, LENGTH, DIM), dtype=np.float32)
    return x, params, grad_out


def _autograd_step(F, x, params, grad_out):
    """The block in a framework with torch's API (`F` its functional module); dl.free and
    torch run this same code, so the comparison is call for call."""
    w_qkv, b_qkv, w_o, b_o = params

    def step():
        x.grad = None
        for p in params:
            p.grad = None
        q, k, v = F.linear(x, w_qkv, b_qkv).split(DIM, dim=-1)
        q, k, v = (t.reshape(BATCH, LENGTH, HEADS, HEAD_DIM).transpose(1, 2) for t in (q, k, v))
        heads = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        out = F.linear(heads.transpose(1, 2).reshape(BATCH, LENGTH, DIM), w_o, b_o)
        out.backward(grad_out)
        return (out, x.grad, *(p.grad for p in params))

    return step


def build_dlfree():
    """Public API only (`dlfree.functional`), gradients cleared every step."""
    import dlfree as dl
    import dlfree.functional as F

    x_np, params_np, g_np = _problem()
    return _autograd_step(F, dl.tensor(x_np, requires_grad=True),
                          [dl.Parameter(p) for p in params_np], dl.tensor(g_np))


def build_numpy():
    """By hand: 2-d GEMMs for the projections; batched matmuls over (batch, heads) for the
    attention, its softmax forward and backward written out; the causal mask is an
    additive -inf upper triangle made once."""
    x, (w_qkv, b_qkv, w_o, b_o), grad_out = _problem()
    rows = BATCH * LENGTH
    x2d, grad_out2d = x.reshape(rows, DIM), grad_out.reshape(rows, DIM)
    scale = np.float32(1 / math.sqrt(HEAD_DIM))
    mask = np.triu(np.full((LENGTH, LENGTH), -np.inf, dtype=np.float32), k=1)
    grad_qkv = np.empty((rows, 3 * DIM), dtype=np.float32)
    # grad_qkv as (3, B, heads, T, head_dim) views, where dq, dk and dv are written
    grad_heads = grad_qkv.reshape(BATCH, LENGTH, 3, HEADS, HEAD_DIM).transpose(2, 0, 3, 1, 4)

    def step():
        qkv = x2d @ w_qkv.T
        qkv += b_qkv
        # (3, B, heads, T, head_dim) views of the projections
        q, k, v = qkv.reshape(BATCH, LENGTH, 3, HEADS, HEAD_DIM).transpose(2, 0, 3, 1, 4)
        probs = q @ k.transpose(0, 1, 3, 2)  # (B, heads, T, T)
        probs *= scale
        probs += mask
        probs -= probs.max(axis=-1, keepdims=True)
        np.exp(probs, out=probs)
        probs /= probs.sum(axis=-1, keepdims=True)
        heads = probs @ v  # (B, heads, T, head_dim)
        merged = heads.transpose(0, 2, 1, 3).reshape(rows, DIM)
        out = merged @ w_o.T
        out += b_o
        # backward
        grad_w_o, grad_b_o = grad_out2d.T @ merged, grad_out2d.sum(axis=0)
        grad_heads_o = (grad_out2d @ w_o).reshape(BATCH, LENGTH, HEADS, HEAD_DIM)
        grad_heads_o = grad_heads_o.transpose(0, 2, 1, 3)
        np.matmul(probs.transpose(0, 1, 3, 2), grad_heads_o, out=grad_heads[2])  # dv
        grad_scores = grad_heads_o @ v.transpose(0, 1, 3, 2)  # d probs, then d scores
        # softmax: d scores = probs * (d probs - rowsum(d probs * probs)); masked probs are 0
        row_dot = np.einsum("bhij,bhij->bhi", grad_scores, probs)
        grad_scores -= row_dot[..., None]
        grad_scores *= probs
        grad_scores *= scale
        np.matmul(grad_scores, k, out=grad_heads[0])  # dq
        np.matmul(grad_scores.transpose(0, 1, 3, 2), q, out=grad_heads[1])  # dk
        grad_w_qkv, grad_b_qkv = grad_qkv.T @ x2d, grad_qkv.sum(axis=0)
        grad_x = (grad_qkv @ w_qkv).reshape(x.shape)
        return out.reshape(x.shape), grad_x, grad_w_qkv, grad_b_qkv, grad_w_o, grad_b_o

    return step


def build_torch():
    """`torch.nn.functional` (`linear`, `scaled_dot_product_attention`) and autograd."""
    import torch
    import torch.nn.functional as F

    x_np, params_np, g_np = _problem()
    return _autograd_step(F, torch.tensor(x_np, requires_grad=True),
                          [torch.tensor(p, requires_grad=True) for p in params_np],
                          torch.from_numpy(g_np))


BUILDERS = {"dlfree": build_dlfree, "numpy": build_numpy, "torch": build_torch}
