"""LAMB: Adam with a layer-wise trust ratio, as torch_optimizer 0.3.0's `Lamb`.

You et al., "Large Batch Optimization for Deep Learning: Training BERT in 76 minutes",
ICLR 2020 (arXiv:1904.00962).
"""

from __future__ import annotations

import math

from dlfree import zeros_like

from ._foreach import add_to_param_, norm
from .optimizer import Optimizer


class LAMB(Optimizer):
    """Adam's step direction, rescaled per parameter tensor by ||p|| / ||direction||.

    Per step t, with g the gradient:

        m = beta1 * m + (1 - beta1) * g;   v = beta2 * v + (1 - beta2) * g**2
        r = m / (sqrt(v) + eps) + weight_decay * p
        trust = min(||p||, clamp_value) / ||r||   (1 where either norm is 0)
        p -= lr * c * trust * r

    where c = sqrt(1 - beta2**t) / (1 - beta1**t) with `debias=True`, else 1 (the paper's
    v3 drops the bias correction). `adam=True` fixes trust at 1, which makes this Adam
    with decoupled weight decay: a baseline to compare with. Defaults, including
    eps=1e-6, are torch_optimizer 0.3.0's. Unlike there, `clamp_value`, `adam` and
    `debias` are per-group hyperparameters (saved with the groups in `state_dict`).
    """

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-6,
                 weight_decay: float = 0, clamp_value: float = 10, adam: bool = False,
                 debias: bool = False):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      clamp_value=clamp_value, adam=adam, debias=debias))

    def _validate(self, group: dict) -> None:
        self._check("lr", group["lr"], lambda v: v >= 0, ">= 0")
        self._check_betas(group["betas"])
        self._check_nonnegative(group, "eps", "weight_decay", "clamp_value")
        self._check_flags(group, "adam", "debias")

    def _update(self, group: dict, params: list) -> None:
        beta1, beta2 = group["betas"]
        eps, weight_decay = group["eps"], group["weight_decay"]
        for p in params:
            xp, kernels = p.device.xp, p.device.backend
            state = self.state[p]
            if not state:
                state["step"] = 0
                state["exp_avg"] = zeros_like(p)
                state["exp_avg_sq"] = zeros_like(p)
            state["step"] += 1
            step = state["step"]
            x, grad = p.array, p.grad.array
            exp_avg, exp_avg_sq = state["exp_avg"].array, state["exp_avg_sq"].array
            direction = self._scratch(p)

            xp.multiply(exp_avg, beta1, out=exp_avg)
            kernels.add_scaled(exp_avg, grad, 1 - beta1)
            xp.multiply(grad, grad, out=direction)
            xp.multiply(exp_avg_sq, beta2, out=exp_avg_sq)
            kernels.add_scaled(exp_avg_sq, direction, 1 - beta2)

            xp.sqrt(exp_avg_sq, out=direction)
            xp.add(direction, eps, out=direction)
            xp.divide(exp_avg, direction, out=direction)
            if weight_decay != 0:
                kernels.add_scaled(direction, x, weight_decay)

            scale = group["lr"]
            if group["debias"]:
                scale *= math.sqrt(1 - beta2 ** step) / (1 - beta1 ** step)
            if not group["adam"]:
                # The ratio stays a device scalar: reading it on the host would synchronise
                # a GPU once per parameter.
                weight_norm = xp.minimum(norm(xp, x), group["clamp_value"])
                direction_norm = norm(xp, direction)
                usable = (weight_norm > 0) & (direction_norm > 0)
                ratio = xp.where(usable, weight_norm / xp.where(usable, direction_norm, 1), 1)
                scale = (ratio * scale).astype(x.dtype)
            xp.multiply(direction, scale, out=direction)
            add_to_param_(p, direction, -1)
