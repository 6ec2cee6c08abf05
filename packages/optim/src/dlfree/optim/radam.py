"""RAdam, as torch.optim.RAdam: Liu et al., "On the Variance of the Adaptive Learning Rate
and Beyond", ICLR 2020.
"""

from __future__ import annotations

from dlfree import zeros_like

from ._foreach import add_to_param_, decay_average_of_squares_, decayed_grad, lerp_
from .optimizer import Optimizer


class RAdam(Optimizer):
    """Rectified Adam: momentum SGD while the variance of the adaptive rate is intractable
    (rho_t <= 5), then Adam scaled by the variance rectification term.

    `decoupled_weight_decay` shrinks the parameters directly (as AdamW) instead of adding
    an L2 term to the gradient.
    """

    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0,
                 decoupled_weight_decay: bool = False, *, maximize: bool = False):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      decoupled_weight_decay=decoupled_weight_decay,
                                      maximize=maximize))

    def _validate(self, group: dict) -> None:
        self._check("lr", group["lr"], lambda v: v >= 0, ">= 0")
        self._check_betas(group["betas"])
        self._check_nonnegative(group, "eps", "weight_decay")
        self._check_flags(group, "decoupled_weight_decay", "maximize")

    def _update(self, group: dict, params: list) -> None:
        lr, (beta1, beta2), eps = group["lr"], group["betas"], group["eps"]
        rho_inf = 2 / (1 - beta2) - 1
        for p in params:
            xp = p.device.xp
            state = self.state[p]
            if not state:
                state["step"] = 0
                state["exp_avg"] = zeros_like(p)
                state["exp_avg_sq"] = zeros_like(p)
            state["step"] += 1
            step = state["step"]
            grad = decayed_grad(p, group, self._scratch(p, 0))
            exp_avg, exp_avg_sq = state["exp_avg"].array, state["exp_avg_sq"].array
            tmp, update = self._scratch(p, 1), self._scratch(p, 2)
            lerp_(xp, exp_avg, grad, 1 - beta1, tmp)
            decay_average_of_squares_(xp, exp_avg_sq, grad, beta2, tmp)
            bias_correction2 = 1 - beta2 ** step
            xp.divide(exp_avg, 1 - beta1 ** step, out=update)
            xp.multiply(update, lr, out=update)
            rho_t = rho_inf - 2 * step * beta2 ** step / bias_correction2
            if rho_t > 5.0:
                rect = ((rho_t - 4) * (rho_t - 2) * rho_inf /
                        ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
                adaptive = xp.sqrt(exp_avg_sq, out=tmp)
                xp.add(adaptive, eps, out=adaptive)
                xp.divide(bias_correction2 ** 0.5, adaptive, out=adaptive)
                xp.multiply(update, adaptive, out=update)
                xp.multiply(update, rect, out=update)
            add_to_param_(p, update, -1.0)
