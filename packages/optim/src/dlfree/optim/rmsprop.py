"""RMSprop, as torch.optim.RMSprop: Hinton, "Neural Networks for Machine Learning",
lecture 6e (2012); the centered form from Graves, "Generating Sequences With Recurrent
Neural Networks", 2013.
"""

from __future__ import annotations

from dlfree import zeros_like

from ._foreach import add_to_param_, decay_average_of_squares_, lerp_, update_grad
from .optimizer import Optimizer


class RMSprop(Optimizer):
    """Divides the gradient by a running root mean square of recent gradients.

    `centered` subtracts the squared running mean of the gradient first (an estimate of
    its variance); `momentum` accumulates the scaled gradients into a velocity.
    """

    def __init__(self, params, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0, momentum: float = 0, centered: bool = False, *,
                 maximize: bool = False):
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay,
                                      momentum=momentum, centered=centered, maximize=maximize))

    def _validate(self, group: dict) -> None:
        self._check("lr", group["lr"], lambda v: v >= 0, ">= 0")
        self._check("alpha", group["alpha"], lambda v: 0 <= v <= 1, "in [0, 1]")
        self._check_nonnegative(group, "eps", "weight_decay", "momentum")
        self._check_flags(group, "centered", "maximize")

    def _update(self, group: dict, params: list) -> None:
        lr, alpha, eps = group["lr"], group["alpha"], group["eps"]
        momentum, centered = group["momentum"], group["centered"]
        for p in params:
            xp = p.device.xp
            state = self.state[p]
            if not state:
                state["step"] = 0
                state["square_avg"] = zeros_like(p)
                if momentum > 0:
                    state["momentum_buffer"] = zeros_like(p)
                if centered:
                    state["grad_avg"] = zeros_like(p)
            state["step"] += 1
            grad = update_grad(p, group["maximize"], group["weight_decay"], self._scratch(p, 0))
            square_avg = state["square_avg"].array
            tmp, avg = self._scratch(p, 1), self._scratch(p, 2)
            decay_average_of_squares_(xp, square_avg, grad, alpha, tmp)
            if centered:
                grad_avg = state["grad_avg"].array
                lerp_(xp, grad_avg, grad, 1 - alpha, tmp)
                xp.multiply(grad_avg, grad_avg, out=avg)
                xp.subtract(square_avg, avg, out=avg)
                xp.sqrt(avg, out=avg)
            else:
                xp.sqrt(square_avg, out=avg)
            xp.add(avg, eps, out=avg)
            xp.divide(grad, avg, out=avg)
            if momentum > 0:
                buf = state["momentum_buffer"].array
                xp.multiply(buf, momentum, out=buf)
                xp.add(buf, avg, out=buf)
                add_to_param_(p, buf, -lr)
            else:
                add_to_param_(p, avg, -lr)
