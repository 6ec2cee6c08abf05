"""Per-tensor array kernels the optimizers share: in place, with `out=`, on the tensor's `xp`.

Each mirrors one torch in-place op (lerp_, addcmul_, ...) on raw arrays, so an update costs
a few fused passes over memory and no temporaries beyond the optimizer's scratch arrays.
"""

from __future__ import annotations

from dlfree import Tensor, as_tensor


def update_grad(p: Tensor, maximize: bool, weight_decay: float, out):
    """`p`'s gradient as the update uses it, as an array; `p.grad` itself is never changed.

    Negated when maximizing, plus `weight_decay * p` (L2 penalty) when that is nonzero;
    the result is then written to `out`, else `p.grad`'s own array is returned.
    """
    xp = p.device.xp
    grad = p.grad.array
    if weight_decay != 0:
        xp.multiply(p.array, weight_decay, out=out)
        (xp.subtract if maximize else xp.add)(out, grad, out=out)
        return out
    if maximize:
        return xp.negative(grad, out=out)
    return grad


def decayed_grad(p: Tensor, group: dict, out):
    """The gradient an Adam-family update uses: with `decoupled_weight_decay`, the weights
    shrink by lr * weight_decay first (AdamW's rule) and the gradient is left as it is;
    otherwise weight decay is the L2 penalty `update_grad` adds."""
    weight_decay, decoupled = group["weight_decay"], group["decoupled_weight_decay"]
    if weight_decay != 0 and decoupled:
        p.mul_(1 - group["lr"] * weight_decay)
    return update_grad(p, group["maximize"], 0 if decoupled else weight_decay, out)


def lerp_(xp, target, end, weight: float, tmp) -> None:
    """target += weight * (end - target), with torch's formula for each side of 0.5."""
    xp.subtract(end, target, out=tmp)
    if abs(weight) < 0.5:
        xp.multiply(tmp, weight, out=tmp)
        xp.add(target, tmp, out=target)
    else:
        xp.multiply(tmp, 1 - weight, out=tmp)
        xp.subtract(end, tmp, out=target)


def addcmul_(xp, target, a, b, value: float, tmp) -> None:
    """target += value * a * b (torch's `addcmul_`)."""
    if value == 1:
        xp.multiply(a, b, out=tmp)
    else:
        xp.multiply(a, value, out=tmp)
        xp.multiply(tmp, b, out=tmp)
    xp.add(target, tmp, out=target)


def decay_average_of_squares_(xp, average, grad, beta: float, tmp) -> None:
    """average = beta * average + (1 - beta) * grad**2: the second-moment estimate."""
    xp.multiply(average, beta, out=average)
    addcmul_(xp, average, grad, grad, 1 - beta, tmp)


def add_to_param_(p: Tensor, update, alpha: float = 1.0) -> None:
    """p += alpha * update, through a tensor in-place op so `p`'s version counter advances."""
    if alpha == -1:
        p.sub_(as_tensor(update))
    else:
        p.add_(as_tensor(update), alpha=alpha)


def norm(xp, array):
    """The Euclidean norm of all elements, as a device scalar (one BLAS-style pass)."""
    flat = array.reshape(-1)
    return xp.sqrt(xp.dot(flat, flat))
