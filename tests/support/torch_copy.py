"""Copy weights between a torch.nn module and its dlfree.nn twin by state_dict, and check
the twins against each other (forward values, input and parameter gradients, state).

    tm, dm = torch.nn.Linear(3, 2), dl.nn.Linear(3, 2)
    torch_to_dl(tm, dm)                       # or dl_to_torch(dm, tm)
    check_pair(dm, tm, [Float((4, 3))])       # forward + backward parity

Inputs are specs of support.specs (`Float`, `Int`, `Bool`, `Fixed`), built identically for
both libraries from one seed, floats in float32. Tolerances are the project's float32 ones:
forward rtol = atol = 1e-5, gradients rtol = atol = 1e-4.
"""

from __future__ import annotations

from collections.abc import Callable

import dlfree as dl

import numpy as np
import torch

from support.specs import Float, as_spec, make_arrays, wants_grad

FWD_TOL = {"rtol": 1e-5, "atol": 1e-5}
GRAD_TOL = {"rtol": 1e-4, "atol": 1e-4}


def to_numpy(t) -> np.ndarray:
    """A copy of a torch or dl.free tensor as a NumPy array on the host."""
    if isinstance(t, torch.Tensor):
        return t.detach().cpu().numpy().copy()
    return np.array(t.detach().cpu())


def torch_to_dl(torch_module: torch.nn.Module, dl_module, strict: bool = True):
    """Load the torch module's state_dict into the dl.free module (by name)."""
    state = {k: to_numpy(v) for k, v in torch_module.state_dict().items()}
    return dl_module.load_state_dict(state, strict=strict)


def dl_to_torch(dl_module, torch_module: torch.nn.Module, strict: bool = True):
    """Load the dl.free module's state_dict into the torch module (by name)."""
    state = {k: torch.from_numpy(to_numpy(v)) for k, v in dl_module.state_dict().items()}
    return torch_module.load_state_dict(state, strict=strict)


def assert_same_state(dl_module, torch_module: torch.nn.Module, tol: dict = FWD_TOL) -> None:
    """The same state_dict keys in the same order, the same shapes and dtype kinds, and
    close values."""
    ours, theirs = dl_module.state_dict(), torch_module.state_dict()
    assert list(ours) == list(theirs), f"state_dict keys {list(ours)} != torch {list(theirs)}"
    for key in theirs:
        a, b = to_numpy(ours[key]), to_numpy(theirs[key])
        assert a.shape == b.shape, f"{key}: shape {a.shape} != torch {b.shape}"
        assert a.dtype.kind == b.dtype.kind, f"{key}: dtype {a.dtype} != torch {b.dtype}"
        np.testing.assert_allclose(a, b, err_msg=key, **tol)


def build_inputs(specs, seed: int = 0, device: str = "cpu"):
    """Matching (dl.free inputs, torch inputs), floats in float32; float inputs with `grad`
    require it."""
    ours, theirs = [], []
    for spec, a in zip(map(as_spec, specs), make_arrays(specs, seed)):
        if isinstance(spec, Float):
            a = a.astype(np.float32)
        ours.append(dl.tensor(a, device=device, requires_grad=wants_grad(spec)))
        theirs.append(torch.tensor(a, requires_grad=wants_grad(spec)))
    return ours, theirs


def _outputs(out) -> list:
    return list(out) if isinstance(out, tuple | list) else [out]


def _is_float(t) -> bool:
    return to_numpy(t).dtype.kind == "f"


def check_pair(dl_module, torch_module, specs, call: Callable | None = None, seed: int = 0,
               grad: bool = True, device: str = "cpu") -> None:
    """Run both modules (or functions) on the same inputs and compare every output; then
    backpropagate the same random output gradient and compare the gradients of the inputs
    and of every parameter (by name). `call(module, *inputs)` replaces `module(*inputs)`."""
    call = call or (lambda module, *xs: module(*xs))
    ours_in, theirs_in = build_inputs(specs, seed, device)
    ours, theirs = _outputs(call(dl_module, *ours_in)), _outputs(call(torch_module, *theirs_in))
    assert len(ours) == len(theirs), f"{len(ours)} outputs, torch gives {len(theirs)}"
    for i, (o, t) in enumerate(zip(ours, theirs)):
        a, b = to_numpy(o), to_numpy(t)
        assert a.shape == b.shape, f"output {i}: shape {a.shape} != torch {b.shape}"
        assert a.dtype.kind == b.dtype.kind, f"output {i}: dtype {a.dtype} != torch {b.dtype}"
        np.testing.assert_allclose(a, b, err_msg=f"output {i}", **FWD_TOL)
    if not grad:
        return
    rs = np.random.default_rng(seed + 1)
    pairs = [(o, t, rs.standard_normal(tuple(t.shape)).astype(np.float32))
             for o, t in zip(ours, theirs) if _is_float(t) and t.requires_grad]
    assert pairs, "no differentiable output"
    dl.autograd.backward([o for o, _, _ in pairs], [dl.tensor(g, device=device)
                                                   for _, _, g in pairs])
    torch.autograd.backward([t for _, t, _ in pairs], [torch.tensor(g) for _, _, g in pairs])
    for i, (a, b) in enumerate(zip(ours_in, theirs_in)):
        if b.requires_grad:
            _compare_grad(a.grad, b.grad, f"gradient of input {i}")
    if not hasattr(torch_module, "named_parameters"):  # two plain functions: no parameters
        return
    ours_params = dict(dl_module.named_parameters())
    theirs_params = dict(torch_module.named_parameters())
    assert list(ours_params) == list(theirs_params)
    for name, p in theirs_params.items():
        _compare_grad(ours_params[name].grad, p.grad, f"gradient of parameter {name}")


def _compare_grad(ours, theirs, what: str) -> None:
    if theirs is None or not torch.any(theirs):
        assert ours is None or not np.any(to_numpy(ours)), f"{what}: torch has none"
        return
    assert ours is not None, f"{what}: missing"
    np.testing.assert_allclose(to_numpy(ours), to_numpy(theirs), err_msg=what, **GRAD_TOL)


def zero_grads(*modules) -> None:
    """Clear the parameter gradients of dl.free and torch modules alike."""
    for module in modules:
        for p in module.parameters():
            p.grad = None
