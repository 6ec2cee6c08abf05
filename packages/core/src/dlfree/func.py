"""`dl.func`: function transforms in torch.func's spelling, `grad` and `vmap`.

`grad(f)` is the function that returns f's gradient (reverse mode, through
`dl.autograd.grad`). `vmap(f)` maps f over a dimension of its tensor arguments by calling
it once per slice and stacking the results, so every op supports it and a function
written for one example runs on a batch; what it does not give is torch's speed from one
batched kernel. Random ops draw different numbers per slice (torch's
`randomness="different"`).
"""

from __future__ import annotations

import numbers

from .errors import AutogradError, ShapeError
from .tensor import Tensor

__all__ = ["grad", "grad_and_value", "vmap"]


def _argnums(argnums, n_args: int, fn_name: str) -> tuple:
    nums = (argnums,) if isinstance(argnums, numbers.Integral) else tuple(argnums)
    for a in nums:
        if not -n_args <= a < n_args:
            raise ShapeError(f"{fn_name}: argnums {argnums} for a call with {n_args} "
                             f"argument(s); valid: 0 to {n_args - 1}")
    return tuple(a % n_args for a in nums)


def grad_and_value(func, argnums=0, has_aux: bool = False):
    """The function returning (gradient, value) of `func`, a function to a one-element
    tensor (or to (that tensor, aux) with `has_aux`): the gradient with respect to the
    argument `argnums` (a tuple of gradients for a tuple of argnums)."""
    from .autograd import enable_grad
    from .autograd import grad as autograd_grad

    def wrapper(*args, **kwargs):
        nums = _argnums(argnums, len(args), "func.grad")
        args = list(args)
        # an argument that already requires grad comes from an enclosing transform (or the
        # caller's graph): the gradient then stays differentiable, so grad(grad(f)) works
        nested = any(isinstance(args[a], Tensor) and args[a].requires_grad for a in nums)
        for a in nums:
            if not isinstance(args[a], Tensor):
                raise TypeError(f"func.grad: argument {a} is a {type(args[a]).__name__}; "
                                "valid: a Tensor")
            args[a] = args[a].view_as(args[a]) if args[a].requires_grad else \
                args[a].detach().requires_grad_()
        with enable_grad():
            out = func(*args, **kwargs)
            value, aux = out if has_aux else (out, None)
            if not isinstance(value, Tensor) or value.numel() != 1:
                raise AutogradError("func.grad: the function must return a tensor with one "
                                    f"element, got {getattr(value, 'shape', type(value))}")
            if not value.requires_grad:
                grads = tuple(args[a] * 0 for a in nums)
            else:
                grads = autograd_grad(value.reshape(()), [args[a] for a in nums],
                                      create_graph=nested, allow_unused=True)
                grads = tuple(args[a] * 0 if g is None else g for a, g in zip(nums, grads))
            if not nested:
                grads = tuple(g.detach() for g in grads)
                value, aux = value.detach(), aux
        result = grads[0] if isinstance(argnums, numbers.Integral) else grads
        return (result, (value, aux)) if has_aux else (result, value)

    return wrapper


def grad(func, argnums=0, has_aux: bool = False):
    """The function returning the gradient of `func` (and its aux with `has_aux`); the
    gradient is differentiable, so `grad(grad(f))` is the second derivative."""
    both = grad_and_value(func, argnums, has_aux)

    def wrapper(*args, **kwargs):
        g, value = both(*args, **kwargs)
        return (g, value[1]) if has_aux else g

    return wrapper


def _slices(arg, dim, i: int):
    return arg if dim is None else arg.select(dim, i)


def vmap(func, in_dims=0, out_dims=0):
    """`func` mapped over dimension `in_dims` of its tensor arguments (an int for all, or
    one int or None per argument), with the results stacked along `out_dims`."""
    from .ops.shape import stack

    def wrapper(*args):
        dims = in_dims if isinstance(in_dims, tuple | list) else (in_dims,) * len(args)
        if len(dims) != len(args):
            raise ShapeError(f"vmap: in_dims {in_dims} for {len(args)} argument(s); valid: "
                             "one int or None per argument")
        dims = [None if not isinstance(a, Tensor) else d for a, d in zip(args, dims)]
        sizes = {a.shape[d] for a, d in zip(args, dims) if d is not None}
        if len(sizes) != 1:
            raise ShapeError(f"vmap: the mapped dimensions have sizes {sorted(sizes)}; valid: "
                             "one size shared by every mapped argument (and at least one)")
        (n,) = sizes
        results = [func(*[_slices(a, d, i) for a, d in zip(args, dims)]) for i in range(n)]
        if isinstance(results[0], tuple):
            outs = out_dims if isinstance(out_dims, tuple) else (out_dims,) * len(results[0])
            return tuple(stack([r[k] for r in results], outs[k])
                         for k in range(len(results[0])))
        return stack(results, out_dims)

    return wrapper
