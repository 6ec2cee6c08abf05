"""Lion: the sign of an interpolated momentum, with decoupled weight decay.

Chen et al., "Symbolic Discovery of Optimization Algorithms", NeurIPS 2023
(arXiv:2302.06675), Algorithm 2.
"""

from __future__ import annotations

from dlfree import zeros_like

from ._foreach import add_to_param_
from .optimizer import Optimizer


class Lion(Optimizer):
    """Steps of size lr in every element (plus decay), along the sign of a momentum blend.

    Per step, with g the gradient:

        c = beta1 * m + (1 - beta1) * g
        p -= lr * (sign(c) + weight_decay * p)
        m = beta2 * m + (1 - beta2) * g

    The paper's defaults betas=(0.9, 0.99); its advice is an lr 3-10x smaller than
    AdamW's and a weight decay 3-10x larger, hence lr=1e-4 here.
    """

    def __init__(self, params, lr: float = 1e-4, betas=(0.9, 0.99), weight_decay: float = 0.0):
        super().__init__(params, dict(lr=lr, betas=betas, weight_decay=weight_decay))

    def _validate(self, group: dict) -> None:
        self._check("lr", group["lr"], lambda v: v >= 0, ">= 0")
        self._check_betas(group["betas"])
        self._check("weight_decay", group["weight_decay"], lambda v: v >= 0, ">= 0")

    def _update(self, group: dict, params: list) -> None:
        beta1, beta2 = group["betas"]
        lr, weight_decay = group["lr"], group["weight_decay"]
        for p in params:
            xp, kernels = p.device.xp, p.device.backend
            state = self.state[p]
            if not state:
                state["exp_avg"] = zeros_like(p)
            grad, exp_avg = p.grad.array, state["exp_avg"].array

            direction = self._scratch(p)
            xp.multiply(exp_avg, beta1, out=direction)
            kernels.add_scaled(direction, grad, 1 - beta1)
            xp.sign(direction, out=direction)
            if weight_decay != 0:
                p.mul_(1 - lr * weight_decay)
            add_to_param_(p, direction, -lr)

            xp.multiply(exp_avg, beta2, out=exp_avg)
            kernels.add_scaled(exp_avg, grad, 1 - beta2)
