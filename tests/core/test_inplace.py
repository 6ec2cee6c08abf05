"""In-place ops: version counters, history rewriting, leaf protection, views, setitem."""

from __future__ import annotations

import dlfree as dl

import numpy as np
import pytest
import torch


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
    for a, b in ((x, w), (tx, tw)):
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
    assert a.numpy().min() >= -1 and a.numpy().max() < 1
    n = dl.empty(20000, dtype=dl.float64).normal_(2.0, 0.5)
    assert abs(n.numpy().mean() - 2.0) < 0.02 and abs(n.numpy().std() - 0.5) < 0.02


@pytest.mark.parametrize("index", [
    1, slice(1, 3), (slice(None), 0), [0, 2], (Ellipsis, 1), "mask",
], ids=["int", "slice", "column", "list", "ellipsis", "mask"])
def test_setitem_is_differentiable_like_torch(index):
    rs = np.random.default_rng(0)
    base = rs.standard_normal((4, 3))
    x, tx = dl.tensor(base, requires_grad=True), torch.tensor(base, requires_grad=True)
    if index == "mask":
        index = base > 0
        index_dl, index_th = dl.tensor(index), torch.tensor(index)
    else:
        index_dl = index_th = index
    region = tuple(torch.zeros(4, 3)[index_th].shape)
    vals = rs.standard_normal(region)
    v, tv = dl.tensor(vals, requires_grad=True), torch.tensor(vals, requires_grad=True)
    for a, b, idx in ((x, v, index_dl), (tx, tv, index_th)):
        h = a * 2
        h[idx] = b * 3
        (h * h).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(v.grad.numpy(), tv.grad.numpy(), rtol=1e-12)


def test_setitem_without_recording_writes_in_place():
    x = dl.zeros(2, 3)
    x[0] = 1.5
    x[1, dl.tensor([0, 2])] = dl.tensor([7.0, 8.0])
    x[:, 1] += 1
    assert x.tolist() == [[1.5, 2.5, 1.5], [7.0, 1.0, 8.0]]
    assert x._vc[0] == 4
    with pytest.raises(dl.ShapeError, match="does not fit"):
        x[0] = dl.ones(4)
    with pytest.raises(IndexError, match="out of bounds"):
        x[5] = 1.0


def test_setitem_on_leaf_requiring_grad_is_refused():
    w = dl.zeros(3, requires_grad=True)
    with pytest.raises(dl.AutogradError, match="leaf tensor"):
        w[0] = 1.0


def test_setitem_into_a_constant_buffer_records_the_value():
    w, tw = _pair([1.0, 2.0])
    buf, tbuf = dl.zeros(3, dtype=dl.float64), torch.zeros(3, dtype=torch.float64)
    buf[1:] = w.exp()
    tbuf[1:] = tw.exp()
    assert buf.requires_grad and not buf.is_leaf
    (buf * buf).sum().backward()
    (tbuf * tbuf).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy())


def test_in_place_on_a_view_writes_back_into_the_base():
    x, tx = _pair([[1.0, 2.0], [3.0, 4.0]])
    for a in (x, tx):
        h = a * 1
        row = h[0]
        row.mul_(3)          # h's first row is now three times as large
        col = h[:, 1]
        col.add_(a[:, 0])    # and its second column gained a[:, 0]
        (h * h).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12)


def test_in_place_on_a_view_of_a_leaf_is_refused():
    w = dl.zeros(2, 2, requires_grad=True)
    with pytest.raises(dl.AutogradError, match="view of a leaf"):
        w[0].add_(1)


@pytest.mark.parametrize("grad", [False, True])
def test_overwrites_replace_nan_and_inf_already_there(grad):
    src = dl.tensor([1.0, 2.0, 3.0], requires_grad=grad)
    for overwrite in (lambda t: t.copy_(src), lambda t: t.fill_(7.0),
                      lambda t: t.fill_(dl.tensor(7.0)), lambda t: t.zero_()):
        t = dl.tensor([np.nan, np.inf, -np.inf])
        with dl.set_grad_enabled(grad):
            overwrite(t)
        assert np.isfinite(t.detach().numpy()).all()
    with pytest.raises(dl.ShapeError, match=r"copy_: src of shape \(4,\).*\(3,\)"):
        dl.zeros(3).copy_(dl.zeros(4))


@pytest.mark.parametrize("op", ["mul_", "div_", "add_", "sub_"])
def test_fast_in_place_arithmetic_is_as_quiet_as_out_of_place(op):
    t = dl.tensor([np.inf, 0.0, 1.0])
    getattr(t, op)(dl.tensor([0.0, 0.0, np.inf]) if op in ("mul_", "div_") else -np.inf)
    expected = getattr(np, {"mul_": "multiply", "div_": "divide", "add_": "add",
                            "sub_": "subtract"}[op])
    with np.errstate(all="ignore"):
        want = expected(np.array([np.inf, 0.0, 1.0]), np.array([0.0, 0.0, np.inf])
                        if op in ("mul_", "div_") else -np.inf)
    np.testing.assert_array_equal(t.numpy(), want)


def test_increment_version_marks_a_change_made_outside_the_ops():
    """As torch.autograd.graph.increment_version: a compiled loop that wrote a tensor's
    array says so, and backward then refuses what was saved of it, through its views too."""
    x = dl.tensor(np.ones(4), requires_grad=True)
    base = x * 1
    view = base[1:]
    y = (view * view).sum()  # saves the view
    dl.autograd.graph.increment_version(base)
    with pytest.raises(dl.AutogradError, match="modified by an in-place operation"):
        y.backward()
    with pytest.raises(dl.DTypeError, match="expected a Tensor, got ndarray"):
        dl.autograd.graph.increment_version(np.ones(2))
