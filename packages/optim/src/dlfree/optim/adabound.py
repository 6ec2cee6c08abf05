"""AdaBound and AMSBound: Adam whose per-element step is clipped into bounds that close in
on an SGD learning rate, as torch_optimizer 0.3.0's `AdaBound`.

Luo et al., "Adaptive Gradient Methods with Dynamic Bound of Learning Rate", ICLR 2019
(arXiv:1902.09843).
"""

from __future__ import annotations

import math

from dlfree import zeros_like

from ._foreach import add_to_param_
from .optimizer import Optimizer


class AdaBound(Optimizer):
    """Adam early in training, SGD with learning rate `final_lr` in the limit.

    Per step t, with g = gradient + weight_decay * p (L2 penalty):

        m = beta1 * m + (1 - beta1) * g;   v = beta2 * v + (1 - beta2) * g**2
        (amsbound: v_hat = max over steps of v, used in place of v)
        step = lr * sqrt(1 - beta2**t) / (1 - beta1**t) / (sqrt(v) + eps)
        f = final_lr * lr / base_lr
        p -= clip(step, f * (1 - 1 / (gamma * t + 1)), f * (1 + 1 / (gamma * t))) * m

    `base_lr` is each group's lr when the group was added (kept in the group, so it is
    saved by `state_dict`), which makes a scheduler's decay of `lr` scale `final_lr` too.
    Defaults are torch_optimizer 0.3.0's. Unlike there, gamma = 0 is rejected (its upper
    bound divides by gamma) and groups added later are updated too.
    """

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), final_lr: float = 0.1,
                 gamma: float = 1e-3, eps: float = 1e-8, weight_decay: float = 0,
                 amsbound: bool = False):
        super().__init__(params, dict(lr=lr, betas=betas, final_lr=final_lr, gamma=gamma,
                                      eps=eps, weight_decay=weight_decay, amsbound=amsbound))

    def add_param_group(self, param_group: dict) -> None:
        """Add a group; its current lr becomes its `base_lr` unless the dict sets one."""
        super().add_param_group(param_group)
        group = self.param_groups[-1]
        group.setdefault("base_lr", group["lr"])

    def _validate(self, group: dict) -> None:
        self._check("lr", group["lr"], lambda v: v >= 0, ">= 0")
        self._check_betas(group["betas"])
        self._check("final_lr", group["final_lr"], lambda v: v >= 0, ">= 0")
        self._check("gamma", group["gamma"], lambda v: 0 < v < 1, "in (0, 1)")
        self._check_nonnegative(group, "eps", "weight_decay")
        self._check_flag("amsbound", group["amsbound"])
        if "base_lr" in group:
            self._check("base_lr", group["base_lr"], lambda v: v > 0, "> 0")

    def _update(self, group: dict, params: list) -> None:
        beta1, beta2 = group["betas"]
        lr, gamma, weight_decay = group["lr"], group["gamma"], group["weight_decay"]
        final_lr = group["final_lr"] * lr / group["base_lr"]
        for p in params:
            xp, kernels = p.device.xp, p.device.backend
            state = self.state[p]
            if not state:
                state["step"] = 0
                state["exp_avg"] = zeros_like(p)
                state["exp_avg_sq"] = zeros_like(p)
                if group["amsbound"]:
                    state["max_exp_avg_sq"] = zeros_like(p)
            state["step"] += 1
            step = state["step"]
            x = p.array
            exp_avg, exp_avg_sq = state["exp_avg"].array, state["exp_avg_sq"].array

            # One scratch array holds the decayed gradient, then its square, then the step.
            work = self._scratch(p)
            grad = p.grad.array
            if weight_decay != 0:
                xp.multiply(x, weight_decay, out=work)
                grad = xp.add(work, grad, out=work)
            xp.multiply(exp_avg, beta1, out=exp_avg)
            kernels.add_scaled(exp_avg, grad, 1 - beta1)
            xp.multiply(grad, grad, out=work)
            xp.multiply(exp_avg_sq, beta2, out=exp_avg_sq)
            kernels.add_scaled(exp_avg_sq, work, 1 - beta2)
            second = exp_avg_sq
            if group["amsbound"]:
                second = state["max_exp_avg_sq"].array
                xp.maximum(second, exp_avg_sq, out=second)

            step_size = lr * math.sqrt(1 - beta2 ** step) / (1 - beta1 ** step)
            lower = final_lr * (1 - 1 / (gamma * step + 1))
            upper = final_lr * (1 + 1 / (gamma * step))
            xp.sqrt(second, out=work)
            xp.add(work, group["eps"], out=work)
            xp.divide(step_size, work, out=work)
            xp.clip(work, lower, upper, out=work)
            xp.multiply(work, exp_avg, out=work)
            add_to_param_(p, work, -1)
