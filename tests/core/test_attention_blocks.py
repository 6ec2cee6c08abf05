"""scaled_dot_product_attention on the CPU works through cache blocks of the batch, on the
intra-op threads, skipping the keys a padding mask hides at the end of each block: the
output and every gradient match torch's attention written as plain ops (float64, 1e-10),
bit for bit whether one thread or several ran the blocks."""

from __future__ import annotations

import importlib
import math

import dlfree as dl

import numpy as np
import pytest
import torch

attention = importlib.import_module("dlfree.ops.attention")

B, H, L, S, E = 5, 4, 12, 10, 8
ITEM_BYTES = H * L * S * 8  # float64 scores of one batch item
LENGTHS = [10, 4, 0, 7, 1]  # keys each item may see; the third sees none


@pytest.fixture(autouse=True)
def two_items_a_block(monkeypatch):
    """Blocks (0, 2), (2, 4), (4, 5) of the batch."""
    monkeypatch.setattr(attention, "_BLOCK_BYTES", 2 * ITEM_BYTES)
    before = dl.get_num_threads()
    yield
    dl.set_num_threads(before)


def reference(q, k, v, mask=None, is_causal=False):
    scores = q @ k.mT / math.sqrt(q.shape[-1])
    if is_causal:
        scores = scores.masked_fill(~torch.ones(L, S, dtype=torch.bool).tril(), -math.inf)
    if mask is not None:
        scores = scores.masked_fill(~mask, -math.inf)
    return scores.softmax(-1) @ v


def run(framework, arrays, mask, grad, **kwargs):
    """The output and, with `grad`, the gradients of q, k and v for output gradient g."""
    *qkv, g = arrays
    if framework is dl:
        inputs = [dl.tensor(a, requires_grad=grad) for a in qkv]
        out = dl.functional.scaled_dot_product_attention(
            *inputs, attn_mask=None if mask is None else dl.tensor(mask), **kwargs)
    else:
        inputs = [torch.tensor(a, requires_grad=grad) for a in qkv]
        out = reference(*inputs, mask=None if mask is None else torch.tensor(mask), **kwargs)
    if not grad:
        return [out.numpy()]
    out.backward((dl if framework is dl else torch).tensor(g))
    return [out.detach().numpy()] + [t.grad.numpy() for t in inputs]


def padding_mask(lengths):
    return (np.arange(S)[None, :] < np.array(lengths)[:, None])[:, None, None, :]


def arrays(q_batch=B, kv_batch=B, seed=0):
    rs = np.random.default_rng(seed)
    return [rs.standard_normal((q_batch, H, L, E)), rs.standard_normal((kv_batch, H, S, E)),
            rs.standard_normal((kv_batch, H, S, E)), rs.standard_normal((B, H, L, E))]


def threaded_equals_serial(data, mask, grad, **kwargs):
    dl.set_num_threads(1)
    serial = run(dl, data, mask, grad, **kwargs)
    dl.set_num_threads(3)
    threaded = run(dl, data, mask, grad, **kwargs)
    for a, b in zip(threaded, serial, strict=True):
        np.testing.assert_array_equal(a, b)
    return serial


@pytest.mark.parametrize("grad", [False, True], ids=["no_grad", "grad"])
def test_padding_mask_over_blocks(grad):
    data, mask = arrays(), padding_mask(LENGTHS)
    ours = threaded_equals_serial(data, mask, grad)
    ref = run(torch, data, mask, grad)
    seen = [i for i, n in enumerate(LENGTHS) if n]
    for a, b in zip(ours, ref, strict=True):
        np.testing.assert_allclose(a[seen], b[seen], rtol=1e-10, atol=1e-12)
    # the item that sees no key: zero output, and no gradient reaches its inputs
    for a in ours:
        np.testing.assert_array_equal(a[2], 0)


def test_per_query_mask_and_no_mask_over_blocks():
    data = arrays(seed=1)
    rs = np.random.default_rng(2)
    mask = rs.random((B, 1, L, S)) < 0.7
    mask[..., 0] = True  # every row sees a key
    for m in (mask, None):
        ours = threaded_equals_serial(data, m, grad=True)
        for a, b in zip(ours, run(torch, data, m, grad=True), strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_causal_over_blocks():
    data = arrays(seed=3)
    ours = threaded_equals_serial(data, None, grad=True, is_causal=True)
    for a, b in zip(ours, run(torch, data, None, grad=True, is_causal=True), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("q_batch, kv_batch", [(1, B), (B, 1)])
def test_inputs_broadcast_along_the_blocked_dim(q_batch, kv_batch):
    """A batch of 1 is shared by every block; the padding mask still gives each its keys."""
    data, mask = arrays(q_batch, kv_batch, seed=4), padding_mask([10, 4, 3, 7, 1])
    ours = threaded_equals_serial(data, mask, grad=True)
    for a, b in zip(ours, run(torch, data, mask, grad=True), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_dropout_over_blocks_is_the_same_on_any_thread_count():
    data, mask = arrays(seed=5), padding_mask([10, 4, 3, 7, 1])
    results = []
    for n in (1, 3):
        dl.set_num_threads(n)
        dl.manual_seed(0)
        results.append(run(dl, data, mask, grad=True, dropout_p=0.3))
    for a, b in zip(*results, strict=True):
        np.testing.assert_array_equal(a, b)


def test_blocks_hold_about_the_budget_of_scores():
    assert attention._batch_blocks((5, 4), (5, 4), L * S * 8) == [(0, 2), (2, 4), (4, 5)]
    assert attention._batch_blocks((5, 4), (1, 4), L * S * 8) == [(None, None)]
    assert attention._batch_blocks((), (), L * S * 8) == [(None, None)]
    # one item larger than the budget still makes a block of its own
    assert attention._batch_blocks((2, 4), (2, 4), 10 * ITEM_BYTES) == [(0, 1), (1, 2)]


def test_float_mask_and_its_gradient_over_blocks():
    q, k, v, g = arrays(seed=6)
    bias = np.random.default_rng(7).standard_normal((B, 1, L, S))
    results = []
    for n in (1, 3):
        dl.set_num_threads(n)
        inputs = [dl.tensor(a, requires_grad=True) for a in (q, k, v, bias)]
        out = dl.functional.scaled_dot_product_attention(*inputs[:3], attn_mask=inputs[3])
        out.backward(dl.tensor(g))
        results.append([out.detach().numpy()] + [t.grad.numpy() for t in inputs])
    for a, b in zip(*results, strict=True):
        np.testing.assert_array_equal(a, b)
    inputs = [torch.tensor(a, requires_grad=True) for a in (q, k, v, bias)]
    out = torch.nn.functional.scaled_dot_product_attention(*inputs[:3], attn_mask=inputs[3])
    out.backward(torch.tensor(g))
    expected = [out.detach().numpy()] + [t.grad.numpy() for t in inputs]
    for a, b in zip(results[0], expected, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def _float16_case(kind):
    """float16 inputs whose scores reach 40 (e^40 overflows float16; float32's fast path
    would take them), or whose values are large enough that unnormalised weights times V
    overflow float16."""
    rs = np.random.default_rng(8)
    if kind == "large_scores":
        q = np.full((2, 2, 6, 8), math.sqrt(40 * math.sqrt(8) / 8))
        q += rs.uniform(-0.05, 0.05, q.shape)
        return q, q[..., ::-1, :].copy(), rs.standard_normal((2, 2, 6, 8))
    return (rs.standard_normal((2, 3, 128, 16)), rs.standard_normal((2, 3, 128, 16)),
            rs.standard_normal((2, 3, 128, 16)) * 2000)


@pytest.mark.parametrize("grad", [False, True], ids=["no_grad", "grad"])
@pytest.mark.parametrize("kind", ["large_scores", "large_values"])
def test_float16_stays_finite_where_float32_shortcuts_would_overflow(kind, grad):
    q, k, v = (a.astype(np.float16) for a in _float16_case(kind))
    inputs = [dl.tensor(a, requires_grad=grad) for a in (q, k, v)]
    with dl.set_grad_enabled(grad):
        out = dl.functional.scaled_dot_product_attention(*inputs).numpy() if not grad else \
            dl.functional.scaled_dot_product_attention(*inputs).detach().numpy()
    expected = reference(*(torch.tensor(a.astype(np.float32)) for a in (q, k, v))).numpy()
    assert np.isfinite(out).all()
    # float16 scores near 40 are rounded to 1/32, which moves weights by ~1.6 %
    tolerance = 0.05 if kind == "large_scores" else 4e-3
    np.testing.assert_allclose(out, expected, rtol=0, atol=tolerance * np.abs(expected).max())
