"""split, chunk and unbind: one backward node takes every piece's gradient at once.

The parity tables check the pieces' values and gradients with every piece used; these
tests cover what the joint backward changes: pieces that get no gradient, an input with
other consumers besides its pieces, double backward through a subset of pieces, hooks
and autograd.grad on pieces, and a second backward through pieces the first one skipped.
Every gradient is compared with PyTorch's (float64, rtol 1e-12).
"""

from __future__ import annotations

import dlfree as dl

import numpy as np
import pytest
import torch

RTOL = 1e-12
SHAPE = (3, 7, 2)

SPLITS = {
    "split_int": lambda t: t.split(3, 1),
    "split_sizes": lambda t: t.split([1, 0, 4, 2], 1),
    "chunk": lambda t: t.chunk(3, -2),
    "unbind": lambda t: t.unbind(1),
    "split_dim0": lambda t: t.split(1),
}


def _pair(rng, shape=SHAPE):
    data = rng.standard_normal(shape)
    return dl.tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)


def _loss(pieces, used):
    """A nonlinear loss of the pieces at positions `used` (repeats count twice)."""
    return sum(((pieces[i] ** 3) * (i + 1)).sum() for i in used)


def _close(ours, theirs):
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=RTOL,
                               atol=RTOL)


@pytest.mark.parametrize("used", [(0,), (1, 2), (0, 2, 2), (2, 0, 1)],
                         ids=["first", "middle", "repeated", "reversed"])
@pytest.mark.parametrize("split", SPLITS.values(), ids=SPLITS.keys())
def test_gradient_of_some_pieces_matches_torch(rng, split, used):
    x, xt = _pair(rng)
    _loss(split(x), used).backward()
    _loss(split(xt), used).backward()
    _close(x.grad, xt.grad)


@pytest.mark.parametrize("split", SPLITS.values(), ids=SPLITS.keys())
def test_input_with_other_consumers(rng, split):
    """The pieces' joint gradient adds to the gradient from the input's other uses, and
    two splits of one input stay separate."""
    x, xt = _pair(rng)
    for m, t in ((dl, x), (torch, xt)):
        loss = _loss(split(t), (0, 1)) + (m.sin(t) * t).sum() + _loss(t.unbind(-1), (1,))
        loss.backward()
    _close(x.grad, xt.grad)


@pytest.mark.parametrize("used", [(0, 1, 2), (1,)], ids=["all", "one"])
@pytest.mark.parametrize("split", SPLITS.values(), ids=SPLITS.keys())
def test_double_backward_matches_torch(rng, split, used):
    x, xt = _pair(rng)
    weight = rng.standard_normal(SHAPE)
    (grad,) = dl.autograd.grad(_loss(split(x), used), x, create_graph=True)
    (grad_t,) = torch.autograd.grad(_loss(split(xt), used), xt, create_graph=True)
    _close(grad, grad_t)
    (grad * dl.tensor(weight)).sum().backward()
    (grad_t * torch.tensor(weight)).sum().backward()
    _close(x.grad, xt.grad)


def test_second_backward_through_other_pieces_needs_no_retain_graph(rng):
    """As in torch: split keeps no tensors for backward, so each piece's loss can be
    backpropagated on its own."""
    x, xt = _pair(rng)
    for t in (x, xt):
        first, second, third = t.split(3, 1)
        (first ** 2).sum().backward()
        (third * 3).sum().backward()
    _close(x.grad, xt.grad)


def test_hooks_and_retain_grad_on_pieces_see_the_piece_gradient(rng):
    x, _ = _pair(rng)
    seen = []
    first, second = x.chunk(2, 1)
    first.register_hook(lambda g: seen.append(g.numpy().copy()))
    second.retain_grad()
    second.register_hook(lambda g: g * 10)
    (first * 2 + 0).sum().backward(retain_graph=True)
    ((second * first[:, :3]) ** 2).sum().backward()
    np.testing.assert_array_equal(seen[0], np.full(first.shape, 2.0))
    expected_second = 2 * second.detach().numpy() * first[:, :3].detach().numpy() ** 2
    np.testing.assert_allclose(second.grad.numpy(), expected_second, rtol=RTOL)
    assert x.grad[:, 4:].numpy() == pytest.approx(10 * expected_second, rel=RTOL)


def test_autograd_grad_with_respect_to_a_piece_and_the_input(rng):
    x, xt = _pair(rng)
    ours, theirs = x.split(2, 1), xt.split(2, 1)
    grads = dl.autograd.grad(_loss(ours, (1, 3)), (ours[1], x))
    grads_t = torch.autograd.grad(_loss(theirs, (1, 3)), (theirs[1], xt))
    for g, gt in zip(grads, grads_t, strict=True):
        _close(g, gt)


def test_one_node_gathers_all_pieces_and_backward_writes_one_new_array(rng):
    x, _ = _pair(rng)
    pieces = x.split(2, 1)
    joint = {p.grad_fn.next_edges[0] for p in pieces}
    assert len(joint) == 1 and joint.pop().next_edges == (x,)
    (pieces[0].sum() + pieces[3].sum()).backward()
    grad = x.grad.numpy()
    assert grad.flags.c_contiguous and grad.base is None
    expected = np.zeros(SHAPE)
    expected[:, :2] = expected[:, 6:] = 1
    np.testing.assert_array_equal(grad, expected)


def test_without_grad_the_pieces_are_plain_views(rng):
    x, _ = _pair(rng)
    with dl.no_grad():
        pieces = x.unbind(0)
    assert all(p.grad_fn is None and not p.requires_grad for p in pieces)
    assert all(np.shares_memory(p.numpy(), x.detach().numpy()) for p in pieces)
    constant = dl.tensor(rng.standard_normal(SHAPE))
    assert all(p.grad_fn is None and p._vc is constant._vc for p in constant.split(4, 1))


def test_float32_pieces_give_a_float32_gradient(rng):
    x = dl.tensor(rng.standard_normal(SHAPE).astype(np.float32), requires_grad=True)
    q, k, v = x.split([2, 3, 2], 1)
    (q.sum() * 2 + v.sum()).backward()
    assert x.grad.dtype == dl.float32
    np.testing.assert_array_equal(x.grad.numpy()[:, :2], 2)
    np.testing.assert_array_equal(x.grad.numpy()[:, 2:5], 0)
    np.testing.assert_array_equal(x.grad.numpy()[:, 5:], 1)
