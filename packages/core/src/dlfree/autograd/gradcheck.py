"""Numerical gradient checks: analytic Jacobians against central finite differences."""

from __future__ import annotations

import numpy as np

from ..errors import AutogradError, DTypeError


def _outputs(fn, inputs):
    from ..tensor import Tensor

    out = fn(*inputs)
    return [out] if isinstance(out, Tensor) else [o for o in out if o is not None]


def _numerical_jacobian(fn, inputs, i, eps):
    """d(all outputs, flattened)/d(inputs[i]) by central differences, one column per element."""
    x = inputs[i]
    flat = x._data.reshape(-1)  # a view: perturbs the tensor in place
    columns = []
    for k in range(flat.size):
        orig = flat[k].item()
        flat[k] = orig + eps
        plus = [o.detach().numpy().astype(np.float64).ravel() for o in _outputs(fn, inputs)]
        flat[k] = orig - eps
        minus = [o.detach().numpy().astype(np.float64).ravel() for o in _outputs(fn, inputs)]
        flat[k] = orig
        columns.append(np.concatenate([(p - m) / (2 * eps) for p, m in zip(plus, minus)])
                       if plus else np.zeros(0))
    if not columns:  # an empty input: a Jacobian with no columns
        return np.zeros((sum(o.numel() for o in _outputs(fn, inputs)), 0))
    return np.stack(columns, axis=1)


def _analytic_jacobians(fn, inputs, wrt):
    """One row of every Jacobian per output element, via vector-Jacobian products."""
    from ..creation import zeros_like
    from . import grad

    outs = _outputs(fn, inputs)
    sizes = [o.numel() for o in outs]
    jac = [np.zeros((sum(sizes), inputs[i].numel())) for i in wrt]
    row = 0
    for j, out in enumerate(outs):
        if not out.requires_grad:
            row += sizes[j]
            continue
        for k in range(sizes[j]):
            seed = zeros_like(out)
            seed._data.reshape(-1)[k] = 1
            gs = grad([out], [inputs[i] for i in wrt], [seed], retain_graph=True,
                      allow_unused=True)
            for col, g in enumerate(gs):
                if g is not None:
                    jac[col][row + k] = g.detach().numpy().astype(np.float64).ravel()
        row += sizes[j]
    return jac


def gradcheck(fn, inputs, *, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
              raise_exception: bool = True) -> bool:
    """Check the gradients of `fn` at `inputs` (float64 tensors) against finite differences.

    Returns True when every analytic Jacobian entry is within `atol + rtol * |numerical|`;
    otherwise raises `AutogradError` naming the input and the largest difference (or
    returns False with `raise_exception=False`).
    """
    from ..tensor import Tensor

    inputs = tuple(inputs) if isinstance(inputs, tuple | list) else (inputs,)
    wrt = [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]
    for i in wrt:
        if inputs[i]._data.dtype != np.float64:
            raise DTypeError(f"gradcheck: input {i} is {inputs[i].dtype!r}; finite differences "
                             "need float64 inputs, e.g. x.double()")
    analytic = _analytic_jacobians(fn, inputs, wrt)
    for col, i in enumerate(wrt):
        numeric = _numerical_jacobian(fn, inputs, i, eps)
        if numeric.shape != analytic[col].shape or not np.allclose(
                analytic[col], numeric, rtol=rtol, atol=atol):
            diff = np.abs(analytic[col] - numeric).max() if numeric.size else float("nan")
            if raise_exception:
                raise AutogradError(
                    f"gradcheck: Jacobian mismatch for input {i} (max abs difference {diff:.3g}, "
                    f"atol={atol}, rtol={rtol})\nnumerical:\n{numeric}\nanalytical:\n"
                    f"{analytic[col]}"
                )
            return False
    return True


def gradgradcheck(fn, inputs, grad_outputs=None, *, eps: float = 1e-6, atol: float = 1e-5,
                  rtol: float = 1e-3, raise_exception: bool = True, seed: int = 0) -> bool:
    """Check second derivatives: gradcheck the map (inputs, v) -> vector-Jacobian product."""
    from ..tensor import Tensor
    from . import grad

    inputs = tuple(inputs) if isinstance(inputs, tuple | list) else (inputs,)
    wrt = [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]
    outs = _outputs(fn, inputs)
    if grad_outputs is None:
        rs = np.random.default_rng(seed)
        grad_outputs = [Tensor(rs.standard_normal(o.shape), requires_grad=True) for o in outs]
    n = len(inputs)

    def vjp(*args):
        xs, vs = args[:n], args[n:]
        os_ = _outputs(fn, xs)
        gs = grad(os_, [xs[i] for i in wrt], list(vs), create_graph=True, allow_unused=True)
        return tuple(g for g in gs if g is not None)

    return gradcheck(vjp, inputs + tuple(grad_outputs), eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)
