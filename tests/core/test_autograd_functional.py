"""dl.autograd.functional and dl.func against torch.autograd.functional and torch.func,
in float64 (agreement to 1e-12: the same products in another order)."""

from __future__ import annotations

import dlfree as dl

import numpy as np
import pytest
import torch

TOL = dict(rtol=1e-12, atol=1e-12)
RS = np.random.default_rng(0)
X = RS.standard_normal(3)
Y = RS.standard_normal((2, 3))
V_OUT = (RS.standard_normal(2), RS.standard_normal(3))  # vectors the shape of outputs
V_IN = (RS.standard_normal(3), RS.standard_normal((2, 3)))


def pair(a, b):
    """Two outputs of two inputs; the same code runs on both libraries' tensors."""
    return (a.sin() * b).sum(0) ** 2, (a.exp() * b[0]).tanh()


def scalar(a, b):
    return ((a.sin() * b).sum() ** 2 + (a * a).sum() * b.cos().sum())


def single(a):
    return a.exp() * a.sin()


def assert_same(ours, ref):
    if isinstance(ref, tuple | list):
        assert isinstance(ours, tuple) and len(ours) == len(ref)
        for o, r in zip(ours, ref):
            assert_same(o, r)
        return
    assert tuple(ours.shape) == tuple(ref.shape)
    np.testing.assert_allclose(ours.detach().numpy(), ref.detach().numpy(), **TOL)


@pytest.mark.parametrize("name, func, inputs, v", [
    ("vjp", pair, (X, Y), (V_OUT[1], V_IN[0])),
    ("vjp", single, X, V_OUT[1]),
    ("vjp", scalar, (X, Y), None),
    ("jvp", pair, (X, Y), V_IN),
    ("jvp", single, X, V_OUT[1]),
    ("vhp", scalar, (X, Y), V_IN),
    ("hvp", scalar, (X, Y), V_IN),
    ("vhp", lambda a: (a.sin() * a).sum(), X, V_OUT[1]),
])
def test_products_match_torch(name, func, inputs, v):
    as_dl, as_torch = (lambda x: tuple(dl.tensor(a) for a in x) if isinstance(x, tuple)
                       else dl.tensor(x)), \
        (lambda x: tuple(torch.tensor(a) for a in x) if isinstance(x, tuple) else torch.tensor(x))
    ours = getattr(dl.autograd.functional, name)(func, as_dl(inputs),
                                                 None if v is None else as_dl(v))
    ref = getattr(torch.autograd.functional, name)(func, as_torch(inputs),
                                                   None if v is None else as_torch(v))
    assert_same(ours, ref)
    assert not any(t.requires_grad for t in ours[1:] if isinstance(t, dl.Tensor))


@pytest.mark.parametrize("strategy", ["reverse-mode", "forward-mode"])
@pytest.mark.parametrize("func, inputs", [(pair, (X, Y)), (single, X), (scalar, (X, Y))])
def test_jacobian_matches_torch(func, inputs, strategy):
    tupled = isinstance(inputs, tuple)
    ours = dl.autograd.functional.jacobian(
        func, tuple(map(dl.tensor, inputs)) if tupled else dl.tensor(inputs), strategy=strategy)
    # torch's forward mode runs through TorchScript; its reverse mode gives the same matrix
    ref = torch.autograd.functional.jacobian(
        func, tuple(map(torch.tensor, inputs)) if tupled else torch.tensor(inputs))
    assert_same(ours, ref)


@pytest.mark.parametrize("inputs", [(X, Y), X])
def test_hessian_matches_torch(inputs):
    tupled = isinstance(inputs, tuple)
    func = scalar if tupled else (lambda a: (a.sin() * a).sum() * a.exp().sum())
    ours = dl.autograd.functional.hessian(
        func, tuple(map(dl.tensor, inputs)) if tupled else dl.tensor(inputs))
    ref = torch.autograd.functional.hessian(
        func, tuple(map(torch.tensor, inputs)) if tupled else torch.tensor(inputs))
    assert_same(ours, ref)


def test_create_graph_lets_the_result_be_differentiated_again():
    results = []
    for m in (dl, torch):
        x = m.tensor(X, requires_grad=True)
        _, hv = m.autograd.functional.hvp(lambda a: (a.sin() * a ** 2).sum(), x,
                                          m.tensor(V_OUT[1]), create_graph=True)
        (g,) = m.autograd.grad(hv.sum(), x)
        results.append(g)
    assert_same(*results)


def test_strict_refuses_an_output_independent_of_an_input():
    with pytest.raises(dl.AutogradError, match="independent of input 1.*strict mode"):
        dl.autograd.functional.vjp(lambda a, b: a * 2, (dl.tensor(X), dl.tensor(Y)),
                                   dl.tensor(X), strict=True)
    # without strict, that input's product is zeros, as torch gives
    _, (ga, gb) = dl.autograd.functional.vjp(lambda a, b: a * 2, (dl.tensor(X), dl.tensor(Y)),
                                             dl.tensor(X))
    assert not gb.numpy().any() and gb.shape == (2, 3)


@pytest.mark.parametrize("call, message", [
    (lambda: dl.autograd.functional.vjp(single, dl.tensor(X)),
     r"v can be None only when the output is a single tensor with one element"),
    (lambda: dl.autograd.functional.jvp(single, dl.tensor(X), dl.tensor(Y)),
     r"jvp: v has shapes \[\(2, 3\)\]; valid: the shapes of the input, \[\(3,\)\]"),
    (lambda: dl.autograd.functional.hessian(single, dl.tensor(X)),
     r"hessian: the function must return a single tensor with one element, got \(3,\)"),
])
def test_bad_calls_say_what_is_valid(call, message):
    with pytest.raises(dl.ShapeError, match=message):
        call()


def test_func_grad_matches_torch_func_and_nests():
    for argnums in (0, (0, 1)):
        ours = dl.func.grad(scalar, argnums)(dl.tensor(X), dl.tensor(Y))
        ref = torch.func.grad(scalar, argnums)(torch.tensor(X), torch.tensor(Y))
        assert_same(ours, ref)
    ours = dl.func.grad(lambda a: dl.func.grad(scalar)(a, dl.tensor(Y)).sum())(dl.tensor(X))
    ref = torch.func.grad(lambda a: torch.func.grad(scalar)(a, torch.tensor(Y)).sum())(
        torch.tensor(X))
    assert_same(ours, ref)
    assert not ours.requires_grad


def test_func_grad_with_aux_returns_it():
    g, aux = dl.func.grad(lambda a: ((a ** 2).sum(), "aux"), has_aux=True)(dl.tensor(X))
    np.testing.assert_allclose(g.numpy(), 2 * X, **TOL)
    assert aux == "aux"


def test_vmap_maps_over_the_given_dims_like_torch():
    w = RS.standard_normal((3, 4))
    for in_dims, out_dims in (((0, None), 0), ((1, None), (1, 0))):
        def f(a, b):
            return (a @ b).tanh(), a.sum()

        ours = dl.func.vmap(f, in_dims, out_dims)(dl.tensor(Y.T if out_dims else Y),
                                                 dl.tensor(w))
        ref = torch.func.vmap(f, in_dims, out_dims)(torch.tensor(Y.T if out_dims else Y),
                                                    torch.tensor(w))
        assert_same(ours, ref)
    # per-example gradients: vmap of grad
    ours = dl.func.vmap(dl.func.grad(scalar), (None, 0))(dl.tensor(X), dl.tensor(Y[:, None]))
    ref = torch.func.vmap(torch.func.grad(scalar), (None, 0))(torch.tensor(X),
                                                              torch.tensor(Y[:, None]))
    assert_same(ours, ref)


def test_vmap_refuses_mapped_dims_of_different_sizes():
    with pytest.raises(dl.ShapeError, match=r"vmap: the mapped dimensions have sizes \[2, 3\]"):
        dl.func.vmap(lambda a, b: a + b)(dl.zeros(2, 3), dl.zeros(3, 3))
