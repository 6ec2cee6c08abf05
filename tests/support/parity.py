"""The shared op-parity harness: one table row per op case, checked against PyTorch.

A `Case` names a call written once for both libraries, `fn(m, *inputs)` with `m` being
`dlfree` or `torch`, and its inputs (specs of support.specs). The checks, which `run_family`
turns into tests, then verify on a given device:

* forward values in float32 (rtol 1e-5, atol 1e-6) and the output dtype and shape;
* gradients in float32 for a random output gradient (rtol 1e-4, atol 1e-4);
* `dl.autograd.gradcheck` in float64 against central differences;
* with `gradgrad=True`, second derivatives in float64 against torch's double backward.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import dlfree as dl

import numpy as np
import torch

from support.specs import Float, as_spec, make_arrays, wants_grad

FWD_RTOL, FWD_ATOL = 1e-5, 1e-6
GRAD_RTOL, GRAD_ATOL = 1e-4, 1e-4


@dataclass
class Case:
    name: str
    fn: Callable
    inputs: list
    grad: bool = True
    gradcheck: bool = True
    gradgrad: bool = False
    fwd_tol: tuple = (FWD_RTOL, FWD_ATOL)
    grad_tol: tuple = (GRAD_RTOL, GRAD_ATOL)
    dtypes: tuple = ("float32",)
    marks: tuple = field(default_factory=tuple)

    def __str__(self) -> str:
        return self.name


def cubed(fn):
    """`fn` with each output cubed: a linear op's second derivative is zero in both libraries
    and checks nothing, while the cube's runs through the op's backward."""

    def call(m, *xs):
        out = fn(m, *xs)
        if isinstance(out, dl.Tensor | torch.Tensor):
            return out ** 3
        return tuple(o ** 3 for o in out)

    return call


def _build(case, arrays, float_dtype, device):
    """Matching dl.free and torch inputs (floats cast to `float_dtype`)."""
    dl_in, th_in = [], []
    for spec, a in zip(map(as_spec, case.inputs), arrays):
        if isinstance(spec, Float):
            a = a.astype(float_dtype)
        dl_in.append(dl.tensor(a, device=device, requires_grad=wants_grad(spec) and case.grad))
        th_in.append(torch.tensor(a, requires_grad=wants_grad(spec) and case.grad))
    return dl_in, th_in


def _as_list(out):
    if isinstance(out, dl.Tensor | torch.Tensor):
        return [out]
    return list(out)


def _np(t) -> np.ndarray:
    if isinstance(t, torch.Tensor):
        return t.detach().numpy(force=True)  # force: torch's "zero tensors" refuse numpy()
    return np.asarray(t.detach())


def _float_outputs(outs):
    return [o for o in outs if o.dtype in (dl.float32, dl.float64, torch.float32, torch.float64)]


def check_forward(case: Case, device: str, seed: int = 0):
    arrays = make_arrays(case.inputs, seed)
    for dt in case.dtypes:
        dl_in, th_in = _build(case, arrays, dt, device)
        ours = _as_list(case.fn(dl, *dl_in))
        ref = _as_list(case.fn(torch, *th_in))
        assert len(ours) == len(ref), f"{case.name}: {len(ours)} outputs, torch gives {len(ref)}"
        for i, (o, r) in enumerate(zip(ours, ref)):
            assert tuple(o.shape) == tuple(r.shape), \
                f"{case.name}[{i}]: shape {tuple(o.shape)} != torch {tuple(r.shape)}"
            assert str(o.dtype).split(".")[-1] == str(r.dtype).split(".")[-1], \
                f"{case.name}[{i}]: dtype {o.dtype} != torch {r.dtype}"
            np.testing.assert_allclose(_np(o), _np(r), *case.fwd_tol,
                                       err_msg=f"{case.name}: output {i} ({dt})")


def check_grad(case: Case, device: str, seed: int = 0):
    arrays = make_arrays(case.inputs, seed)
    dl_in, th_in = _build(case, arrays, "float32", device)
    ours = _float_outputs(_as_list(case.fn(dl, *dl_in)))
    ref = _float_outputs(_as_list(case.fn(torch, *th_in)))
    rs = np.random.default_rng(seed + 1)
    gouts = [rs.standard_normal(tuple(r.shape)).astype(np.float32) for r in ref]
    pairs = [(o, r, g) for o, r, g in zip(ours, ref, gouts) if r.requires_grad]
    assert pairs, f"{case.name}: no differentiable output"
    dl.autograd.backward([o for o, _, _ in pairs], [dl.tensor(g, device=device)
                                                   for _, _, g in pairs])
    torch.autograd.backward([r for _, r, _ in pairs], [torch.tensor(g) for _, _, g in pairs])
    for i, (a, b) in enumerate(zip(dl_in, th_in)):
        if not b.requires_grad:
            continue
        if b.grad is None:
            assert a.grad is None or not np.any(_np(a.grad)), f"{case.name}: input {i}"
            continue
        assert a.grad is not None, f"{case.name}: no gradient for input {i}"
        assert a.grad.shape == a.shape and a.grad.dtype == a.dtype
        np.testing.assert_allclose(_np(a.grad), _np(b.grad), *case.grad_tol,
                                   err_msg=f"{case.name}: gradient of input {i}")


def check_gradcheck(case: Case, device: str, seed: int = 0):
    arrays = make_arrays(case.inputs, seed)
    dl_in, _ = _build(case, arrays, "float64", device)

    def fn(*xs):
        return [o for o in _float_outputs(_as_list(case.fn(dl, *xs))) if o.requires_grad]

    assert dl.autograd.gradcheck(fn, dl_in, eps=1e-6, atol=1e-5, rtol=1e-4)


def check_gradgrad(case: Case, device: str, seed: int = 0):
    """d/dx <grad_x(<f(x), u>), v> against torch, in float64."""
    arrays = make_arrays(case.inputs, seed)
    dl_in, th_in = _build(case, arrays, "float64", device)
    rs = np.random.default_rng(seed + 2)
    results = []
    for m, xs in ((dl, dl_in), (torch, th_in)):
        outs = _float_outputs(_as_list(case.fn(m, *xs)))
        outs = [o for o in outs if o.requires_grad]
        wrt = [x for x in xs if x.requires_grad]
        us = [m.tensor(rs.standard_normal(tuple(o.shape))) for o in outs]
        gs = m.autograd.grad(outs, wrt, us, create_graph=True, allow_unused=True)
        vs = [rs.standard_normal(tuple(x.shape)) for x in wrt]
        total = sum((g * m.tensor(v)).sum() for g, v in zip(gs, vs)
                    if g is not None and g.requires_grad)
        if not isinstance(total, dl.Tensor | torch.Tensor):
            results.append(None)
            continue
        ggs = m.autograd.grad([total], wrt, allow_unused=True)
        results.append([None if g is None else _np(g) for g in ggs])
        rs = np.random.default_rng(seed + 2)  # the same u and v for both libraries
    ours, ref = results
    assert (ours is None) == (ref is None), f"{case.name}: second derivative exists only in one"
    if ref is None:
        return
    for i, (a, b) in enumerate(zip(ours, ref)):
        if b is None:
            assert a is None or not np.any(a), f"{case.name}: input {i}"
            continue
        if a is None:  # no graph on our side; torch may return explicit zeros instead
            assert not np.any(b), f"{case.name}: no second derivative for input {i}"
            continue
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-8,
                                   err_msg=f"{case.name}: second derivative of input {i}")


def parametrize(cases: list[Case], kind: str):
    """pytest params over `cases` for one check kind, skipping cases that opt out."""
    import pytest

    keep = {"forward": lambda c: True, "grad": lambda c: c.grad,
            "gradcheck": lambda c: c.grad and c.gradcheck, "gradgrad": lambda c: c.gradgrad}[kind]
    return [pytest.param(c, id=c.name, marks=c.marks) for c in cases if keep(c)]


def run_family(cases: list[Case]):
    """Test functions for one op family: forward, grad, gradcheck and gradgrad, per device."""
    import pytest

    @pytest.mark.parametrize("case", parametrize(cases, "forward"))
    def test_forward(case, device):
        check_forward(case, device)

    @pytest.mark.parametrize("case", parametrize(cases, "grad"))
    def test_grad(case, device):
        check_grad(case, device)

    @pytest.mark.parametrize("case", parametrize(cases, "gradcheck"))
    def test_gradcheck(case, device):
        check_gradcheck(case, device)

    @pytest.mark.parametrize("case", parametrize(cases, "gradgrad"))
    def test_gradgrad(case, device):
        check_gradgrad(case, device)

    return test_forward, test_grad, test_gradcheck, test_gradgrad
