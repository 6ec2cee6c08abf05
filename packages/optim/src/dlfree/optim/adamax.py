"""Adamax, as torch.optim.Adamax: the infinity-norm variant of Adam from Kingma & Ba,
"Adam: A Method for Stochastic Optimization", ICLR 2015, section 7.1.
"""

from __future__ import annotations

from dlfree import zeros_like

from ._foreach import add_to_param_, lerp_, update_grad
from .optimizer import Optimizer


class Adamax(Optimizer):
    """Adam with v replaced by an exponentially weighted infinity norm of the gradients:
    u = max(beta2 * u, |g| + eps), and the step is lr / (1 - beta1**t) * m / u."""

    def __init__(self, params, lr: float = 2e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, *, maximize: bool = False):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      maximize=maximize))

    def _validate(self, group: dict) -> None:
        self._check("lr", group["lr"], lambda v: v >= 0, ">= 0")
        self._check_betas(group["betas"])
        self._check_nonnegative(group, "eps", "weight_decay")
        self._check_flag("maximize", group["maximize"])

    def _update(self, group: dict, params: list) -> None:
        lr, (beta1, beta2), eps = group["lr"], group["betas"], group["eps"]
        for p in params:
            xp = p.device.xp
            state = self.state[p]
            if not state:
                state["step"] = 0
                state["exp_avg"] = zeros_like(p)
                state["exp_inf"] = zeros_like(p)
            state["step"] += 1
            grad = update_grad(p, group["maximize"], group["weight_decay"], self._scratch(p, 0))
            exp_avg, exp_inf = state["exp_avg"].array, state["exp_inf"].array
            tmp = self._scratch(p, 1)
            lerp_(xp, exp_avg, grad, 1 - beta1, tmp)
            xp.multiply(exp_inf, beta2, out=exp_inf)
            xp.abs(grad, out=tmp)
            xp.add(tmp, eps, out=tmp)
            xp.maximum(exp_inf, tmp, out=exp_inf)
            step_size = lr / (1 - beta1 ** state["step"])
            add_to_param_(p, xp.divide(exp_avg, exp_inf, out=tmp), -step_size)
