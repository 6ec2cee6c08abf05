"""Helpers the decoder-only tests (GPT-2, the LLaMA family, generation) share: padded token
batches, running both libraries on them, and comparing outputs, losses and gradients."""

from __future__ import annotations

import dlfree as dl

import numpy as np
import pytest

torch = pytest.importorskip("torch")

VOCAB, PAD = 99, 0
ATOL = 1e-4  # float32, logits of order one (initializer_range 0.2)


def padded_batch(padding: str, length: int, pads: int, seed: int):
    """(ids, mask): two rows of `length` random tokens, the second padded by `pads` on the
    left or right (mask 0 and the pad id), or not at all for "none"."""
    ids = np.random.default_rng(seed).integers(3, VOCAB, size=(2, length))
    mask = np.ones_like(ids)
    if padding == "left":
        ids[1, :pads], mask[1, :pads] = PAD, 0
    elif padding == "right":
        ids[1, length - pads:], mask[1, length - pads:] = PAD, 0
    return ids, mask


def run_hf(model, ids, mask, **kwargs):
    """transformers' outputs for NumPy ids and mask, without gradients."""
    with torch.no_grad():
        return model(torch.as_tensor(ids), attention_mask=torch.as_tensor(mask), **kwargs)


def run_dl(model, ids, mask, **kwargs):
    """dl.free's outputs for NumPy ids and mask, without gradients."""
    with dl.no_grad():
        return model(dl.tensor(ids), attention_mask=dl.tensor(mask), **kwargs)


def assert_real_tokens_close(ours, theirs, mask, atol=ATOL):
    """Equal at every position that is not padding (what a padded position computes is
    never read: real tokens do not attend to it)."""
    ours, theirs = ours.numpy(), theirs.numpy()
    assert ours.shape == theirs.shape
    real = mask.astype(bool)
    np.testing.assert_allclose(ours[real], theirs[real], rtol=0, atol=atol)


def assert_lm_logits_match(ours, theirs, ids, mask):
    """A causal LM loaded from `theirs`' checkpoint loaded every weight and gives its logits
    at the real tokens."""
    assert not ours.load_report.missing_keys and not ours.load_report.unexpected_keys
    expected = run_hf(theirs, ids, mask).logits
    assert float(expected.abs().max()) > 0.5  # so that ATOL is a tight bound
    assert_real_tokens_close(run_dl(ours, ids, mask).logits, expected, mask)


def assert_hidden_states_match(ours, theirs, ids, mask):
    """A base model's last hidden state and every layer's input (`output_hidden_states`)
    equal transformers' at the real tokens, for a two-layer model."""
    expected = run_hf(theirs, ids, mask, output_hidden_states=True)
    got = run_dl(ours, ids, mask, output_hidden_states=True)
    assert_real_tokens_close(got.last_hidden_state, expected.last_hidden_state, mask)
    assert len(got.hidden_states) == len(expected.hidden_states) == 3
    for mine, reference in zip(got.hidden_states, expected.hidden_states):
        assert_real_tokens_close(mine, reference, mask)


def assert_classifier_logits_match(ours, theirs, ids, mask):
    """A sequence classifier's (2, 3) logits equal transformers'."""
    expected = run_hf(theirs, ids, mask).logits.numpy()
    got = run_dl(ours, ids, mask).logits.numpy()
    assert got.shape == (2, 3)
    np.testing.assert_allclose(got, expected, rtol=0, atol=ATOL)


def lm_labels(ids, mask):
    """The ids as causal-LM labels, -100 (ignored) at padding."""
    return np.where(mask == 1, ids, -100)


def assert_lm_loss_matches(ours, theirs, ids, mask):
    """The causal-LM loss on the ids themselves equals transformers'."""
    labels = lm_labels(ids, mask)
    expected = run_hf(theirs, ids, mask, labels=torch.as_tensor(labels)).loss.item()
    got = run_dl(ours, ids, mask, labels=dl.tensor(labels)).loss.item()
    assert got == pytest.approx(expected, abs=1e-5)


def assert_loss_gradients_match(ours, theirs, ids, mask, transposed=()):
    """Every parameter's gradient of the causal-LM loss equals transformers' (transposed
    for the parameter names ending in one of `transposed`)."""
    labels = lm_labels(ids, mask)
    theirs.zero_grad()
    theirs(torch.as_tensor(ids), attention_mask=torch.as_tensor(mask),
           labels=torch.as_tensor(labels)).loss.backward()
    ours(dl.tensor(ids), attention_mask=dl.tensor(mask), labels=dl.tensor(labels)).loss.backward()
    expected = dict(theirs.named_parameters())
    for name, param in ours.named_parameters():
        reference = expected[name].grad.numpy()
        if name.endswith(transposed):
            reference = reference.T
        np.testing.assert_allclose(param.grad.numpy(), reference, rtol=0,
                                   atol=1e-5 * max(1.0, np.abs(reference).max()), err_msg=name)
    theirs.zero_grad()
