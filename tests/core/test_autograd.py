"""The autograd engine: accumulation, graph freeing, autograd.grad, higher order, hooks."""

from __future__ import annotations

import dlfree as dl
from dlfree.autograd import Function

import numpy as np
import pytest
import torch


def _pair(values, dtype="float64"):
    a = np.asarray(values, dtype=dtype)
    return dl.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)


def test_gradients_accumulate_across_backward_calls():
    x, tx = _pair([1.0, -2.0, 3.0])
    for _ in range(2):
        (x * x).sum().backward()
        (tx * tx).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())
    np.testing.assert_allclose(x.grad.numpy(), 4 * np.array([1.0, -2.0, 3.0]))


def test_second_backward_without_retain_graph_fails_and_names_the_op():
    x = dl.tensor([1.0, 2.0], requires_grad=True)
    y = (x.exp() * 2).sum()
    y.backward()
    with pytest.raises(dl.AutogradError, match="second time.*retain_graph=True"):
        y.backward()


def test_retain_graph_allows_a_second_backward():
    x = dl.tensor([1.0, 2.0], requires_grad=True)
    y = (x.exp() * x).sum()
    y.backward(retain_graph=True)
    first = x.grad.numpy().copy()
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * first)


def test_backward_frees_saved_tensors_as_it_walks():
    x = dl.tensor([1.0, 2.0], requires_grad=True)
    h = x.exp()
    y = (h * x).sum()
    y.backward()
    assert h.grad_fn._freed and y.grad_fn._freed
    assert "_out" not in h.grad_fn.__dict__  # exp's saved output was dropped


def test_autograd_grad_returns_without_touching_dot_grad():
    x, tx = _pair([0.5, 1.5])
    (g,) = dl.autograd.grad((x.sin() * x).sum(), x)
    (tg,) = torch.autograd.grad((tx.sin() * tx).sum(), tx)
    assert x.grad is None
    np.testing.assert_allclose(g.numpy(), tg.numpy())


def test_autograd_grad_unused_input():
    x = dl.tensor([1.0], requires_grad=True)
    z = dl.tensor([2.0], requires_grad=True)
    y = (x * 3).sum()
    with pytest.raises(dl.AutogradError, match="allow_unused=True"):
        dl.autograd.grad(y, [x, z], retain_graph=True)
    gx, gz = dl.autograd.grad(y, [x, z], allow_unused=True)
    assert gz is None and gx.item() == 3.0


def test_grad_with_respect_to_an_intermediate_tensor():
    x, tx = _pair([0.3, -0.7, 1.1])
    h, th = x * 2, tx * 2
    (g,) = dl.autograd.grad((h.tanh() ** 2).sum(), h)
    (tg,) = torch.autograd.grad((th.tanh() ** 2).sum(), th)
    np.testing.assert_allclose(g.numpy(), tg.numpy(), rtol=1e-12)


def test_hessian_vector_product_matches_torch():
    rs = np.random.default_rng(0)
    xv, vv, wv = rs.standard_normal(5), rs.standard_normal(5), rs.standard_normal((5, 5))
    x, tx = _pair(xv)

    def f(m, x, w):
        return ((x @ w).tanh() * x.exp()).sum() + (x ** 3).sum()

    (g,) = dl.autograd.grad(f(dl, x, dl.tensor(wv)), x, create_graph=True)
    (hv,) = dl.autograd.grad((g * dl.tensor(vv)).sum(), x)
    (tg,) = torch.autograd.grad(f(torch, tx, torch.tensor(wv)), tx, create_graph=True)
    (thv,) = torch.autograd.grad((tg * torch.tensor(vv)).sum(), tx)
    np.testing.assert_allclose(hv.numpy(), thv.numpy(), rtol=1e-10)


def test_third_derivative():
    x = dl.tensor(1.5, dtype=dl.float64, requires_grad=True)
    y = x ** 4
    (d1,) = dl.autograd.grad(y, x, create_graph=True)
    (d2,) = dl.autograd.grad(d1, x, create_graph=True)
    (d3,) = dl.autograd.grad(d2, x)
    assert d1.item() == pytest.approx(4 * 1.5 ** 3)
    assert d2.item() == pytest.approx(12 * 1.5 ** 2)
    assert d3.item() == pytest.approx(24 * 1.5)


def test_backward_create_graph_gives_differentiable_leaf_grad():
    x = dl.tensor([2.0], dtype=dl.float64, requires_grad=True)
    (x ** 3).sum().backward(create_graph=True)
    assert x.grad.requires_grad
    (gg,) = dl.autograd.grad(x.grad.sum(), x)
    assert gg.item() == pytest.approx(12.0)


def test_backward_with_explicit_gradient_and_inputs():
    x, tx = _pair([1.0, 2.0, 3.0])
    w, tw = _pair([0.5, 0.5, 0.5])
    gv = np.array([1.0, -1.0, 2.0])
    (x * w).backward(dl.tensor(gv), inputs=[x])
    (tx * tw).backward(torch.tensor(gv), inputs=[tx])
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())
    assert w.grad is None and tw.grad is None


def test_leaf_grads_never_alias_each_other():
    a = dl.tensor([1.0, 2.0], requires_grad=True)
    b = dl.tensor([3.0, 4.0], requires_grad=True)
    (a + b).sum().backward()
    assert not np.shares_memory(a.grad.numpy(), b.grad.numpy())
    a.grad.add_(1)
    np.testing.assert_allclose(b.grad.numpy(), [1.0, 1.0])


def test_no_grad_enable_grad_set_grad_enabled():
    x = dl.tensor([1.0], requires_grad=True)
    with dl.no_grad():
        y = x * 2
        with dl.enable_grad():
            z = x * 2
    assert not y.requires_grad and y.grad_fn is None
    assert z.requires_grad

    @dl.no_grad()
    def f(t):
        return t * 3

    assert not f(x).requires_grad
    dl.set_grad_enabled(False)
    try:
        assert not (x * 2).requires_grad
    finally:
        dl.set_grad_enabled(True)
    with dl.set_grad_enabled(False):
        assert not dl.is_grad_enabled()
    assert dl.is_grad_enabled()


def test_detach_shares_memory_and_version():
    x = dl.tensor([1.0, 2.0], requires_grad=True)
    y = x * 1
    d = y.detach()
    assert not d.requires_grad and d.grad_fn is None
    assert np.shares_memory(d.numpy(), y.detach().numpy())
    d.add_(1)
    assert y._vc[0] == 1


def test_requires_grad_only_for_floats():
    with pytest.raises(dl.DTypeError, match="floating-point"):
        dl.tensor([1, 2]).requires_grad_()


def test_hooks_on_leaf_and_non_leaf():
    x, tx = _pair([1.0, 2.0])
    seen = []
    handle = x.register_hook(lambda g: g * 10)
    h = x * 3
    h.register_hook(lambda g: seen.append(g.numpy().copy()))
    h.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [30.0, 30.0])
    np.testing.assert_allclose(seen[0], [1.0, 1.0])
    handle.remove()
    x.grad = None
    (x * 3).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 3.0])


def test_retain_grad():
    x, tx = _pair([1.0, -2.0])
    h, th = x.exp(), tx.exp()
    h.retain_grad()
    th.retain_grad()
    (h * h).sum().backward()
    (th * th).sum().backward()
    assert h.retains_grad
    np.testing.assert_allclose(h.grad.numpy(), th.grad.numpy())


def test_a_non_leafs_hooks_are_its_nodes_declared_pre_hooks():
    x, tx = _pair([1.0, 2.0])
    h, th = x * 3, tx * 3
    assert Function.pre_hooks is None and h.grad_fn.pre_hooks is None  # none until one is added
    handle = h.register_hook(lambda g: g * 2)
    th.register_hook(lambda g: g * 2)
    h.retain_grad()
    th.retain_grad()
    assert list(h.grad_fn.pre_hooks) == [handle.key, "_retain"]
    h.sum().backward()
    th.sum().backward()
    assert list(h.grad_fn.pre_hooks) == [handle.key, "_retain"]  # release() keeps them
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())
    np.testing.assert_allclose(h.grad.numpy(), th.grad.numpy())


def test_accumulate_grad_adds_into_grad_without_aliasing_the_gradient():
    from dlfree.autograd.engine import accumulate_grad

    leaf = dl.zeros(3, requires_grad=True)
    broadcast = dl.ones(1).expand(3)  # a read-only view: .grad must get its own memory
    accumulate_grad(leaf, broadcast)
    accumulate_grad(leaf, dl.tensor([1.0, 2.0, 3.0]))
    assert leaf.grad.tolist() == [2.0, 3.0, 4.0] and broadcast.tolist() == [1.0, 1.0, 1.0]
    accumulate_grad(leaf, dl.tensor([1, 1, 1], dtype=dl.float64))  # cast to the leaf's dtype
    assert leaf.grad.dtype == dl.float32 and leaf.grad.tolist() == [3.0, 4.0, 5.0]


def test_detect_anomaly_names_the_op_and_its_call_site():
    x = dl.tensor([0.0, 1.0], requires_grad=True)
    with dl.autograd.detect_anomaly():
        y = x.sqrt().sum()  # sqrt'(0) is inf
        with pytest.raises(dl.AutogradError, match=r"SqrtBackward produced inf at element 0 "
                           r"of shape \(2,\) in the gradient for input 0") as info:
            y.backward()
    assert "test_autograd.py" in str(info.value)


def test_deep_graph_does_not_recurse():
    x = dl.tensor([1.0], dtype=dl.float64, requires_grad=True)
    y = x
    for _ in range(5000):
        y = y * 1.0001
    y.sum().backward()
    assert x.grad.item() == pytest.approx(1.0001 ** 5000)


class _WrongSquare(Function):
    saves = (0,)

    def forward(self, x):
        return x * x

    def backward(self, g):
        (x,) = self.saved_tensors
        return (g * x * 3,)  # wrong on purpose: d(x^2)/dx is 2x


class _Square(_WrongSquare):
    def backward(self, g):
        (x,) = self.saved_tensors
        return (g * x * 2,)


def test_custom_function_and_gradcheck_catches_a_wrong_rule():
    x = dl.tensor([0.5, -1.5], dtype=dl.float64, requires_grad=True)
    assert dl.autograd.gradcheck(_Square.apply, (x,))
    assert dl.autograd.gradgradcheck(_Square.apply, (x,))
    assert not dl.autograd.gradcheck(_WrongSquare.apply, (x,), raise_exception=False)
    with pytest.raises(dl.AutogradError, match="Jacobian mismatch for input 0"):
        dl.autograd.gradcheck(_WrongSquare.apply, (x,))


def test_gradcheck_requires_float64():
    x = dl.tensor([1.0], requires_grad=True)
    with pytest.raises(dl.DTypeError, match="float64"):
        dl.autograd.gradcheck(lambda t: t * 2, (x,))


def test_multiple_roots_in_one_backward():
    x, tx = _pair([1.0, 2.0])
    a, b = x.exp().sum(), (x * x).sum()
    ta, tb = tx.exp().sum(), (tx * tx).sum()
    dl.autograd.backward([a, b])
    torch.autograd.backward([ta, tb])
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())


def test_cast_is_differentiable_and_grad_keeps_leaf_dtype():
    x = dl.tensor([1.0, 2.0], dtype=dl.float32, requires_grad=True)
    (x.double() ** 2).sum().backward()
    assert x.grad.dtype == dl.float32
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0])


def test_post_accumulate_grad_hook_runs_once_the_leaf_gradient_is_complete():
    """The hook sees the summed `.grad` of a leaf used twice, and it runs as soon as the last
    op feeding the leaf has run: before backward reaches the ops nearer the input."""
    x = dl.tensor([1.0, 2.0], requires_grad=True)
    w1 = dl.tensor([3.0, 4.0], requires_grad=True)
    w2 = dl.tensor([5.0, 6.0], requires_grad=True)
    events = []
    w2.register_post_accumulate_grad_hook(
        lambda t: events.append(("w2", t.grad.numpy().copy())))
    w1.register_post_accumulate_grad_hook(lambda t: events.append(("w1", None)))
    a = x * w1
    a.register_hook(lambda g: events.append(("a", None)))
    b = a * w2 + w2 * w2  # w2 feeds two ops; its hook must wait for both
    b.sum().backward()
    assert [name for name, _ in events] == ["w2", "a", "w1"]
    np.testing.assert_allclose(events[0][1], (x * w1).detach().numpy() + 2 * w2.detach().numpy())


def test_post_accumulate_grad_hook_handle_and_misuse():
    w = dl.tensor([1.0], requires_grad=True)
    calls = []
    handle = w.register_post_accumulate_grad_hook(calls.append)
    (w * 2).sum().backward()
    (w * 2).sum().backward(inputs=[w])
    assert calls == [w, w] and w.grad.item() == 4.0
    handle.remove()
    (w * 2).sum().backward()
    assert len(calls) == 2
    with pytest.raises(dl.AutogradError, match="leaf tensors"):
        (w * 2).register_post_accumulate_grad_hook(calls.append)
    with pytest.raises(dl.AutogradError, match="does not require grad"):
        dl.tensor([1.0]).register_post_accumulate_grad_hook(calls.append)
