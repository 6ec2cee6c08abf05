"""`dl.autograd.functional`: derivatives of a function of tensors, as torch's functions are
called: vjp, jvp, jacobian, hessian, vhp, hvp.

Each takes `func` and `inputs` (a tensor or a tuple of them) and answers in the same shape:
a tensor for a tensor, a tuple for a tuple. Everything is built on reverse mode: a
Jacobian-vector product is the vector-Jacobian product of a vector-Jacobian product
(linear in its vector, so differentiating it once more gives J v), and a Jacobian is one
vector-Jacobian product per output element (reverse mode) or one Jacobian-vector product
per input element (forward-mode strategy). `vectorize=True` is accepted for torch's
signatures and computes the same rows; the engine has no batched backward to run them at
once.
"""

from __future__ import annotations

from ..errors import AutogradError, ShapeError
from ..tensor import Tensor

__all__ = ["vjp", "jvp", "jacobian", "hessian", "vhp", "hvp"]


def _as_tuple(x, what: str, fn_name: str) -> tuple[bool, tuple]:
    """(whether `x` was a tuple, `x` as a tuple of tensors)."""
    is_tuple = isinstance(x, tuple | list)
    items = tuple(x) if is_tuple else (x,)
    for i, t in enumerate(items):
        if not isinstance(t, Tensor):
            raise TypeError(f"{fn_name}: {what} {i} is a {type(t).__name__}; valid: a Tensor "
                            "or a tuple of Tensors")
    return is_tuple, items


def _prepare(inputs: tuple, create_graph: bool) -> tuple:
    """Inputs the function's graph starts from: connected to the callers' graph when a graph
    of the result is asked for, else fresh leaves."""
    if create_graph:
        return tuple(t.view_as(t) if t.requires_grad else t.detach().requires_grad_()
                     for t in inputs)
    return tuple(t.detach().requires_grad_() for t in inputs)


def _finish(results, create_graph: bool) -> tuple:
    return tuple(r if create_graph else r.detach() for r in results)


def _zeros_like(t: Tensor) -> Tensor:
    return Tensor._make(t._device.xp.zeros(t.shape, dtype=t._data.dtype), t._device)


def _ones_like(t: Tensor) -> Tensor:
    return Tensor._make(t._device.xp.ones(t.shape, dtype=t._data.dtype), t._device)


def _grads(outputs, inputs, grad_outputs, create_graph: bool, strict: bool, fn_name: str,
           what: str = "output"):
    """d<outputs, grad_outputs>/d inputs, zeros for an input the outputs do not depend on
    (an error with `strict`)."""
    from . import grad

    pairs = [(o, g) for o, g in zip(outputs, grad_outputs, strict=True) if o.requires_grad]
    if not pairs:
        found = [None] * len(inputs)
    else:
        found = grad([o for o, _ in pairs], list(inputs), [g for _, g in pairs],
                     retain_graph=True, create_graph=create_graph, allow_unused=True)
    result = []
    for i, (g, x) in enumerate(zip(found, inputs, strict=True)):
        if g is None:
            if strict:
                raise AutogradError(f"{fn_name}: the {what} of the user-provided function is "
                                    f"independent of input {i}; this is not allowed in strict "
                                    "mode")
            g = _zeros_like(x)
        result.append(g)
    return tuple(result)


def _outputs(func, inputs: tuple, fn_name: str) -> tuple[bool, tuple]:
    return _as_tuple(func(*inputs), "output", fn_name)


def _vectors(v, like: tuple, fn_name: str, what: str) -> tuple:
    """The user's vectors, checked against the shapes of `like`; None for a single
    one-element tensor means a vector of one 1."""
    if v is None:
        if len(like) != 1 or like[0].numel() != 1:
            raise ShapeError(f"{fn_name}: v can be None only when the {what} is a single "
                             f"tensor with one element, got shapes "
                             f"{[tuple(t.shape) for t in like]}")
        return (_ones_like(like[0]),)
    _, vs = _as_tuple(v, "v", fn_name)
    if len(vs) != len(like) or any(a.shape != b.shape for a, b in zip(vs, like, strict=True)):
        raise ShapeError(f"{fn_name}: v has shapes {[tuple(t.shape) for t in vs]}; valid: "
                         f"the shapes of the {what}, {[tuple(t.shape) for t in like]}")
    return vs


def _shaped(is_tuple: bool, items: tuple):
    return items if is_tuple else items[0]


def vjp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """(func(inputs), v^T J): the vector-Jacobian product at `inputs`."""
    name = "vjp"
    inputs_tuple, xs = _as_tuple(inputs, "input", name)
    xs = _prepare(xs, create_graph)
    outputs_tuple, outs = _outputs(func, xs, name)
    vs = _vectors(v, outs, name, "output")
    grads = _grads(outs, xs, vs, create_graph, strict, name)
    return (_shaped(outputs_tuple, _finish(outs, create_graph)),
            _shaped(inputs_tuple, _finish(grads, create_graph)))


def jvp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """(func(inputs), J v): the Jacobian-vector product, as the derivative in u of the
    vector-Jacobian product u^T J (which is linear in u)."""
    name = "jvp"
    inputs_tuple, xs = _as_tuple(inputs, "input", name)
    xs = _prepare(xs, create_graph)
    vs = _vectors(v, xs, name, "input")
    outputs_tuple, outs = _outputs(func, xs, name)
    us = tuple(_zeros_like(o).requires_grad_() for o in outs)
    u_grads = _grads(outs, xs, us, True, strict, name)
    products = _grads(u_grads, us, vs, create_graph, strict, name)
    return (_shaped(outputs_tuple, _finish(outs, create_graph)),
            _shaped(outputs_tuple, _finish(products, create_graph)))


def _unit(like: Tensor, k: int) -> Tensor:
    seed = _zeros_like(like)
    seed._data.reshape(-1)[k] = 1
    return seed


def _stack_rows(rows: list, shape: tuple, like: Tensor) -> Tensor:
    from ..ops.shape import stack

    if not rows:
        return Tensor._make(like._device.xp.zeros(shape, dtype=like._data.dtype), like._device)
    return stack(rows).reshape(shape)


def jacobian(func, inputs, create_graph: bool = False, strict: bool = False,
             vectorize: bool = False, strategy: str = "reverse-mode"):
    """d func(inputs) / d inputs: for each output and input, a tensor of shape
    output.shape + input.shape (nested tuples when func or inputs give tuples)."""
    name = "jacobian"
    if strategy not in ("reverse-mode", "forward-mode"):
        raise ValueError(f"{name}: strategy={strategy!r}; valid: 'reverse-mode', "
                         "'forward-mode'")
    inputs_tuple, xs = _as_tuple(inputs, "input", name)
    xs = _prepare(xs, create_graph)
    outputs_tuple, outs = _outputs(func, xs, name)
    if strategy == "reverse-mode":
        # per output: one row of every input's block per output element
        table = []
        for out in outs:
            rows = [_grads([out], xs, [_unit(out, k)], create_graph, strict, name)
                    for k in range(out.numel())]
            table.append(tuple(_stack_rows([r[i] for r in rows], tuple(out.shape) + tuple(
                x.shape), x) for i, x in enumerate(xs)))
    else:
        # per input element: one column of every output's block, by a Jacobian-vector product
        us = tuple(_zeros_like(o).requires_grad_() for o in outs)
        u_grads = _grads(outs, xs, us, True, strict, name)
        columns = []  # columns[i][k]: d outputs / d xs[i].flat[k]
        for i, x in enumerate(xs):
            per_input = []
            for k in range(x.numel()):
                vs = tuple(_unit(x, k) if m == i else _zeros_like(y) for m, y in enumerate(xs))
                per_input.append(_grads(u_grads, us, vs, create_graph, strict, name))
            columns.append(per_input)
        table = []
        for j, out in enumerate(outs):
            blocks = []
            for i, x in enumerate(xs):
                cols = [c[j].reshape(-1) for c in columns[i]]
                block = _stack_rows(cols, (x.numel(), out.numel()), x)
                blocks.append(block.mT.reshape(*out.shape, *x.shape))
            table.append(tuple(blocks))
    table = [tuple(_finish(row, create_graph)) for row in table]
    per_output = [_shaped(inputs_tuple, row) for row in table]
    return tuple(per_output) if outputs_tuple else per_output[0]


def _scalar_function(func, fn_name: str):
    """`func` checked to return a single tensor of one element (a Hessian's function)."""

    def checked(*xs):
        out = func(*xs)
        if not isinstance(out, Tensor) or out.numel() != 1:
            shape = tuple(out.shape) if isinstance(out, Tensor) else type(out).__name__
            raise ShapeError(f"{fn_name}: the function must return a single tensor with one "
                             f"element, got {shape}")
        return out.reshape(())

    return checked


def hessian(func, inputs, create_graph: bool = False, strict: bool = False,
            vectorize: bool = False, outer_jacobian_strategy: str = "reverse-mode"):
    """The Hessian of a scalar function: the Jacobian of its gradient (for tuple inputs, a
    tuple of tuples, block [i][j] of shape inputs[i].shape + inputs[j].shape)."""
    name = "hessian"
    scalar = _scalar_function(func, name)
    inputs_tuple, xs = _as_tuple(inputs, "input", name)

    def gradient(*ys):
        out = scalar(*ys)
        return _grads([out], ys, [_ones_like(out)], True, strict, name)

    result = jacobian(gradient, xs, create_graph, strict, vectorize,
                      outer_jacobian_strategy)
    return result if inputs_tuple else result[0][0]


def vhp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """(func(inputs), v^T H): the vector-Hessian product of a scalar function."""
    name = "vhp"
    scalar = _scalar_function(func, name)
    inputs_tuple, xs = _as_tuple(inputs, "input", name)
    xs = _prepare(xs, create_graph)
    vs = _vectors(v, xs, name, "input")
    out = scalar(*xs)
    grads = _grads([out], xs, [_ones_like(out)], True, strict, name)
    products = _grads(grads, xs, vs, create_graph, strict, name, "gradient")
    return (_finish((out,), create_graph)[0],
            _shaped(inputs_tuple, _finish(products, create_graph)))


def hvp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """(func(inputs), H v): the Hessian-vector product of a scalar function, which equals
    v^T H for a twice continuously differentiable function (the Hessian is symmetric)."""
    return vhp(func, inputs, v, create_graph, strict)
