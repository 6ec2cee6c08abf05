"""In-place ops: version counters, history rewriting, leaf protection, views, setitem."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import dlfree as dl


def _pair(values):
    a = np.asarray(values, dtype=np.float64)
    return dl.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)


def test_version_counter_counts_in_place_ops():
    x = dl.zeros(3)
    assert x._vc[0] == 0
    x.add_(1)
    x.mul_(2)
    x += 1
    x.zero_()
    assert x._vc[0] == 4
    np.testing.assert_array_equal(x.numpy(), 0)


def test_modified_saved_input_raises_naming_the_op():
    x = dl.tensor([1.0, 2.0], requires_grad=True)
    h = x * 1
    y = (h * h).sum()
    h.add_(1)
    with pytest.raises(dl.AutogradError, match=r"modified by an in-place operation.*"
                                               r"MulBackward.*version 1, expected version 0"):
        y.backward()


def test_modified_saved_output_raises():
    x = dl.tensor([1.0, 2.0], requires_grad=True)
    h = x.tanh()
    h.mul_(2)
    with pytest.raises(dl.AutogradError, match="TanhBackward"):
        h.sum().backward()


def test_in_place_chain_on_non_leaf_matches_torch():
    x, tx = _pair([0.5, -1.0, 2.0])
    w, tw = _pair([1.5, 0.5, -0.5])
    for m, a, b in ((dl, x, w), (torch, tx, tw)):
        h = a * 2
        h.add_(b, alpha=3)
        h.mul_(b)
        h.sub_(1)
        h.div_(2.0)
        h += a
        h.exp_()
        h.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-12)


def test_in_place_on_leaf_that_requires_grad_is_refused():
    w = dl.tensor([1.0], requires_grad=True)
    with pytest.raises(dl.AutogradError, match="leaf tensor that requires grad"):
        w.add_(1)
    with pytest.raises(dl.AutogradError, match="leaf tensor that requires grad"):
        w += 1


def test_no_grad_update_of_parameters_matches_torch():
    w, tw = _pair([1.0, -2.0])
    for m, p in ((dl, w), (torch, tw)):
        (p * p * 3).sum().backward()
        with m.no_grad():
            p.sub_(p.grad, alpha=0.1)
            p.mul_(0.5)
    np.testing.assert_allclose(w.detach().numpy(), tw.detach().numpy())
    assert w.is_leaf and w.requires_grad


def test_dtype_of_in_place_result_must_fit():
    i = dl.zeros(2, dtype=dl.int64)
    with pytest.raises(dl.DTypeError, match="can't be cast"):
        i.add_(0.5)
    with pytest.raises(dl.DTypeError):
        i.div_(2)
    f = dl.zeros(2, dtype=dl.float32)
    f.add_(dl.ones(2, dtype=dl.float64))
    assert f.dtype == dl.float32 and f.tolist() == [1.0, 1.0]


def test_in_place_shape_must_fit():
    x = dl.zeros(3)
    with pytest.raises(dl.ShapeError):
        x.add_(dl.ones(2, 3))


def test_fill_zero_copy():
    x, tx = _pair([1.0, 2.0, 3.0])
    s, ts = _pair(4.0)
    for a, v in ((x, s), (tx, ts)):
        h = a * 1
        h.fill_(v)
        (h * a).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())
    np.testing.assert_allclose(s.grad.numpy(), ts.grad.numpy())
    y, ty = _pair([1.0, 1.0])
    src, tsrc = _pair([5.0, 6.0])
    for a, b in ((y, src), (ty, tsrc)):
        h = a * 2
        h.copy_(b * 3)
        (h * h).sum().backward()
    np.testing.assert_allclose(src.grad.numpy(), tsrc.grad.numpy())
    assert np.all(y.grad.numpy() == 0)


def test_random_fills_are_seeded():
    dl.manual_seed(3)
    a = dl.empty(4).uniform_(-1, 1)
    dl.manual_seed(3)
    b = dl.empty(4).uniform_(-1, 1)
    assert a.tolist() == b.tolist()
    assert -1 <= a.numpy().min() and a.numpy().max() < 1
    n = dl.empty(20000, dtype=dl.float64).normal_(2.0, 0.5)
    assert abs(n.numpy().mean() - 2.0) < 0.02 and abs(n.numpy().std() - 0.5) < 0.02
