"""Adam, as torch.optim.Adam: Kingma & Ba, "Adam: A Method for Stochastic Optimization",
ICLR 2015; AMSGrad from Reddi et al., "On the Convergence of Adam and Beyond", ICLR 2018.
"""

from __future__ import annotations

from dlfree import zeros_like

from ._foreach import add_to_param_, decay_average_of_squares_, decayed_grad, lerp_
from .optimizer import Optimizer


class Adam(Optimizer):
    """Adaptive moments: steps along m / (sqrt(v) + eps), both bias-corrected.

    m and v are exponential averages of the gradient and its square (rates `betas`).
    `weight_decay` adds an L2 term to the gradient, or with `decoupled_weight_decay`
    shrinks the parameter directly, which is AdamW. `amsgrad` divides by the running
    maximum of v instead of v.
    """

    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, amsgrad: bool = False, *,
                 maximize: bool = False, decoupled_weight_decay: bool = False):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      amsgrad=amsgrad, maximize=maximize,
                                      decoupled_weight_decay=decoupled_weight_decay))

    def _validate(self, group: dict) -> None:
        self._check("lr", group["lr"], lambda v: v >= 0, ">= 0")
        self._check_betas(group["betas"])
        self._check_nonnegative(group, "eps", "weight_decay")
        self._check_flags(group, "amsgrad", "maximize", "decoupled_weight_decay")

    def _update(self, group: dict, params: list) -> None:
        lr, (beta1, beta2), eps = group["lr"], group["betas"], group["eps"]
        amsgrad = group["amsgrad"]
        for p in params:
            xp = p.device.xp
            state = self.state[p]
            if not state:
                state["step"] = 0
                state["exp_avg"] = zeros_like(p)
                state["exp_avg_sq"] = zeros_like(p)
                if amsgrad:
                    state["max_exp_avg_sq"] = zeros_like(p)
            state["step"] += 1
            step = state["step"]
            grad = decayed_grad(p, group, self._scratch(p, 0))
            exp_avg, exp_avg_sq = state["exp_avg"].array, state["exp_avg_sq"].array
            tmp = self._scratch(p, 1)
            lerp_(xp, exp_avg, grad, 1 - beta1, tmp)
            decay_average_of_squares_(xp, exp_avg_sq, grad, beta2, tmp)
            step_size = lr / (1 - beta1 ** step)
            bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
            if amsgrad:
                max_sq = state["max_exp_avg_sq"].array
                xp.maximum(max_sq, exp_avg_sq, out=max_sq)
                exp_avg_sq = max_sq
            # m / (sqrt(v) / c + eps) == c * m / (sqrt(v) + c * eps): one pass fewer.
            denom = xp.sqrt(exp_avg_sq, out=tmp)
            xp.add(denom, eps * bias_correction2_sqrt, out=denom)
            add_to_param_(p, xp.divide(exp_avg, denom, out=denom),
                          -step_size * bias_correction2_sqrt)
