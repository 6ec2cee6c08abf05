"""Parity cases for scaled_dot_product_attention (see parity.py), dropout and errors."""

from __future__ import annotations

import math

import dlfree as dl
from dlfree import DTypeError, ShapeError

import numpy as np
import pytest
import torch

from support.parity import Case, run_family
from support.specs import Bool, Fixed, Float


def sdpa(m, *args, **kwargs):
    fn = dl.functional.scaled_dot_product_attention if m is dl else \
        torch.nn.functional.scaled_dot_product_attention
    return fn(*args, **kwargs)


def composed(m, q, k, v, attn_mask=None, is_causal=False, enable_gqa=False):
    """torch's attention as plain differentiable ops (torch's CPU kernel for 4-D inputs has no
    double backward, this formula does); dl.free's op itself for `m is dl`."""
    if m is dl:
        return sdpa(dl, q, k, v, attn_mask=attn_mask, is_causal=is_causal, enable_gqa=enable_gqa)
    if enable_gqa:
        groups = q.shape[-3] // k.shape[-3]
        k, v = k.repeat_interleave(groups, -3), v.repeat_interleave(groups, -3)
    scores = q @ k.mT / math.sqrt(q.shape[-1])
    if is_causal:
        causal = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).tril()
        scores = scores.masked_fill(~causal, -math.inf)
    if attn_mask is not None:
        scores = scores.masked_fill(~attn_mask, -math.inf) if attn_mask.dtype == torch.bool \
            else scores + attn_mask
    return scores.softmax(-1) @ v


Q, K, V = (2, 3, 4, 8), (2, 3, 6, 8), (2, 3, 6, 5)
MASK = Bool((4, 6))
# a bool mask with one query row masked out entirely (torch then gives zeros)
DEAD_ROW = Fixed([[True, False, True, True, False, True], [False] * 6,
                  [True] * 6, [False, True, False, False, False, True]], dtype=bool)

def _heads_from_projection(m, qkv):
    """q, k, v split from one (B, L, 3 * H * E) projection and viewed as (B, H, L, E):
    strided, non-contiguous heads, as in a transformer block."""
    q, k, v = qkv.split(8, dim=-1)
    heads = [t.reshape(2, 5, 2, 4).transpose(1, 2) for t in (q, k, v)]
    return composed(m, *heads, is_causal=True).transpose(1, 2).reshape(2, 5, 8)


CASES = [
    Case("sdpa", lambda m, q, k, v: sdpa(m, q, k, v), [Q, K, V]),
    Case("sdpa_heads_split_from_projection", _heads_from_projection, [(2, 5, 24)],
         gradgrad=True),
    Case("sdpa_3d", lambda m, q, k, v: sdpa(m, q, k, v), [(3, 4, 8), (3, 6, 8), (3, 6, 8)],
         gradgrad=True),
    Case("sdpa_2d", lambda m, q, k, v: sdpa(m, q, k, v), [(4, 8), (6, 8), (6, 5)]),
    Case("sdpa_value_dim", lambda m, q, k, v: sdpa(m, q, k, v), [Q, K, V], gradgrad=True),
    Case("sdpa_scale", lambda m, q, k, v: sdpa(m, q, k, v, scale=0.7), [Q, K, V]),
    Case("sdpa_batch1", lambda m, q, k, v: sdpa(m, q, k, v, is_causal=True),
         [(1, 1, 5, 4), (1, 1, 5, 4), (1, 1, 5, 4)]),
    Case("sdpa_causal", lambda m, q, k, v: sdpa(m, q, k, v, is_causal=True),
         [(2, 3, 6, 8), K, V]),
    Case("sdpa_causal_more_queries", lambda m, q, k, v: sdpa(m, q, k, v, is_causal=True),
         [(2, 3, 7, 8), (2, 3, 4, 8), (2, 3, 4, 5)]),
    Case("sdpa_causal_more_keys", lambda m, q, k, v: sdpa(m, q, k, v, is_causal=True), [Q, K, V]),
    Case("sdpa_bool_mask", lambda m, q, k, v, a: sdpa(m, q, k, v, attn_mask=a), [Q, K, V, MASK]),
    Case("sdpa_bool_mask_per_head", lambda m, q, k, v, a: sdpa(m, q, k, v, attn_mask=a),
         [Q, K, V, Bool((2, 3, 4, 6))]),
    Case("sdpa_dead_row", lambda m, q, k, v, a: sdpa(m, q, k, v, attn_mask=a),
         [Q, K, V, DEAD_ROW]),
    # scores beyond ±60 take the softmax path that subtracts each row's max
    Case("sdpa_large_scores", lambda m, q, k, v: sdpa(m, q, k, v, is_causal=True),
         [Float((2, 3, 6, 8), -9.0, 9.0), Float(K, -9.0, 9.0), V]),
    Case("sdpa_large_scores_dead_row", lambda m, q, k, v, a: sdpa(m, q, k, v, attn_mask=a),
         [Float(Q, -9.0, 9.0), Float(K, -9.0, 9.0), V, DEAD_ROW]),
    Case("sdpa_float_mask", lambda m, q, k, v, a: sdpa(m, q, k, v, attn_mask=a),
         [Q, K, V, (4, 6)], gradgrad=True),
    Case("sdpa_float_mask_broadcast", lambda m, q, k, v, a: sdpa(m, q, k, v, attn_mask=a),
         [Q, K, V, (3, 1, 6)]),
    Case("sdpa_gqa", lambda m, q, k, v: sdpa(m, q, k, v, enable_gqa=True),
         [(2, 6, 4, 8), K, V]),
    Case("sdpa_gqa_causal", lambda m, q, k, v: sdpa(m, q, k, v, is_causal=True, enable_gqa=True),
         [(2, 4, 5, 8), (2, 2, 5, 8), (2, 2, 5, 8)]),
    Case("sdpa_broadcast_batch", lambda m, q, k, v: sdpa(m, q, k, v),
         [Q, (1, 3, 6, 8), (2, 1, 6, 5)]),
    # second derivatives, against torch's autograd of the plain formula
    Case("sdpa_gradgrad", lambda m, q, k, v: composed(m, q, k, v), [Q, K, V], gradgrad=True),
    Case("sdpa_causal_gradgrad", lambda m, q, k, v: composed(m, q, k, v, is_causal=True),
         [(2, 3, 6, 8), K, V], gradgrad=True),
    Case("sdpa_mask_gradgrad", lambda m, q, k, v, a: composed(m, q, k, v, attn_mask=a),
         [Q, K, V, Fixed(np.arange(24).reshape(4, 6) % 3 != 1)], gradgrad=True),
    Case("sdpa_gqa_gradgrad", lambda m, q, k, v: composed(m, q, k, v, enable_gqa=True),
         [(2, 4, 5, 8), (2, 2, 5, 8), (2, 2, 5, 8)], gradgrad=True),
]

test_forward, test_grad, test_gradcheck, test_gradgrad = run_family(CASES)


# ------------------------------------------------------------------------ dropout
def _identity_attention(p, seed, length=64, batch=(4, 2)):
    """With q = k = 0 and v = I the output is the dropped attention matrix itself."""
    dl.manual_seed(seed)
    q = dl.zeros(*batch, length, 8)
    v = dl.eye(length).expand(*batch, length, length)
    return dl.functional.scaled_dot_product_attention(q, q, v, dropout_p=p).numpy()


def test_dropout_drops_the_expected_share_and_rescales():
    p, length = 0.3, 64
    out = _identity_attention(p, seed=0, length=length)
    dropped = np.mean(out == 0)
    assert abs(dropped - p) < 0.02  # 32768 draws: the standard error is 0.0025
    np.testing.assert_allclose(out[out != 0], 1 / ((1 - p) * length), rtol=1e-6)
    assert abs(out.sum(-1).mean() - 1) < 0.02  # the rescaling keeps the expectation


def test_dropout_is_reproducible_under_manual_seed():
    first, again = _identity_attention(0.5, seed=7), _identity_attention(0.5, seed=7)
    np.testing.assert_array_equal(first, again)
    assert np.any(first != _identity_attention(0.5, seed=8))


@pytest.mark.parametrize("is_causal", [False, True])
def test_dropout_gradients_match_the_same_mask_in_torch(is_causal):
    p, seed = 0.4, 3
    rs = np.random.default_rng(0)
    q, k, v, g = (rs.standard_normal(s) for s in ((2, 3, 6, 8), K, V, (2, 3, 6, 5)))

    def attend(q, k, v):
        return dl.functional.scaled_dot_product_attention(q, k, v, dropout_p=p,
                                                          is_causal=is_causal)

    # recover the kept-and-rescaled mask from a run with v = I under the same seed
    dl.manual_seed(seed)
    weights = attend(dl.tensor(q), dl.tensor(k), dl.eye(6, dtype=dl.float64).expand(2, 3, 6, 6))
    causal = torch.ones(6, 6, dtype=torch.bool).tril() if is_causal else None
    probs = torch.softmax(_masked(torch.tensor(q) @ torch.tensor(k).mT / math.sqrt(8), causal), -1)
    mask = torch.nan_to_num(torch.tensor(weights.numpy()) / probs)  # 0/0 where masked

    dl.manual_seed(seed)
    ours = [dl.tensor(a, requires_grad=True) for a in (q, k, v)]
    out = attend(*ours)
    out.backward(dl.tensor(g))
    ref = [torch.tensor(a, requires_grad=True) for a in (q, k, v)]
    scores = _masked(ref[0] @ ref[1].mT / math.sqrt(8), causal)
    expected = (torch.softmax(scores, -1) * mask) @ ref[2]
    expected.backward(torch.tensor(g))
    np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy(), rtol=1e-10)
    for a, b in zip(ours, ref, strict=True):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-9, atol=1e-12)


def _masked(scores, allowed):
    return scores if allowed is None else scores.masked_fill(~allowed, -math.inf)


def test_dropout_p1_gives_zeros():
    q = dl.randn(2, 3, 4)
    assert not np.any(dl.functional.scaled_dot_product_attention(q, q, q, dropout_p=1.0).numpy())


# ------------------------------------------------------------------------- errors
@pytest.mark.parametrize("shapes, kwargs, error, message", [
    ((Q, (2, 3, 6, 7), V), {}, ShapeError,
     r"scaled_dot_product_attention: expected query \(\.\.\., L, E\), key \(\.\.\., S, E\) .*"
     r"key \(2, 3, 6, 7\)"),
    ((Q, K, (2, 3, 5, 5)), {}, ShapeError, r"scaled_dot_product_attention: expected query"),
    (((2, 4, 4, 8), K, V), {}, ShapeError,
     r"the batch and head dims of .* do not broadcast; pass enable_gqa=True"),
    (((2, 4, 4, 8), K, V), {"enable_gqa": True}, ShapeError,
     r"with enable_gqa, the query heads \(dim -3\) must be a multiple of the key/value heads"),
    ((Q, K, V), {"attn_mask": dl.ones(5, 6, dtype=dl.bool)}, ShapeError,
     r"attn_mask of shape \(5, 6\) does not broadcast to the attention scores \(2, 3, 4, 6\)"),
    ((Q, K, V), {"attn_mask": dl.ones(4, 6, dtype=dl.int64)}, DTypeError,
     r"attn_mask must be bool or floating, got dlfree.int64"),
    ((Q, K, V), {"dropout_p": 1.5}, ValueError, r"dropout_p must be in \[0, 1\], got 1.5"),
    ((Q, K, V), {"attn_mask": dl.ones(4, 6, dtype=dl.bool), "is_causal": True}, ValueError,
     r"pass either attn_mask or is_causal=True, not both"),
])
def test_error_messages(shapes, kwargs, error, message):
    q, k, v = (dl.randn(*s) for s in shapes)
    with pytest.raises(error, match=message):
        dl.functional.scaled_dot_product_attention(q, k, v, **kwargs)


def test_mixed_dtypes_are_refused():
    q = dl.randn(2, 4, 8)
    with pytest.raises(DTypeError, match=r"one floating dtype, got dlfree.float32, "
                                         r"dlfree.float64 and dlfree.float32"):
        dl.functional.scaled_dot_product_attention(q, q.double(), q)
