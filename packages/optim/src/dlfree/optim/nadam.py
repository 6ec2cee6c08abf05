"""NAdam, as torch.optim.NAdam: Dozat, "Incorporating Nesterov Momentum into Adam",
ICLR 2016 workshop; with the momentum schedule mu_t = beta1 * (1 - 0.5 * 0.96**(t * psi)).
"""

from __future__ import annotations

from dlfree import float32, float64, get_default_dtype, tensor, zeros_like

from ._foreach import add_to_param_, decay_average_of_squares_, decayed_grad, lerp_
from .optimizer import Optimizer


class NAdam(Optimizer):
    """Adam with Nesterov momentum: the step mixes the current gradient and the momentum,
    weighted by a warming-up momentum schedule (`momentum_decay` is its psi).

    `decoupled_weight_decay` shrinks the parameters directly (as AdamW) instead of adding
    an L2 term to the gradient.
    """

    def __init__(self, params, lr: float = 2e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, momentum_decay: float = 4e-3,
                 decoupled_weight_decay: bool = False, *, maximize: bool = False):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      momentum_decay=momentum_decay,
                                      decoupled_weight_decay=decoupled_weight_decay,
                                      maximize=maximize))

    def _validate(self, group: dict) -> None:
        self._check("lr", group["lr"], lambda v: v >= 0, ">= 0")
        self._check_betas(group["betas"])
        self._check_nonnegative(group, "eps", "weight_decay", "momentum_decay")
        self._check_flags(group, "decoupled_weight_decay", "maximize")

    def _update(self, group: dict, params: list) -> None:
        lr, (beta1, beta2), eps = group["lr"], group["betas"], group["eps"]
        psi = group["momentum_decay"]
        for p in params:
            xp = p.device.xp
            state = self.state[p]
            if not state:
                state["step"] = 0
                # A 0-d tensor in torch's scalar dtype, so the product rounds as torch's does.
                scalar_dtype = float64 if get_default_dtype() is float64 else float32
                state["mu_product"] = tensor(1.0, dtype=scalar_dtype)
                state["exp_avg"] = zeros_like(p)
                state["exp_avg_sq"] = zeros_like(p)
            state["step"] += 1
            step = state["step"]
            grad = decayed_grad(p, group, self._scratch(p, 0))
            mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * psi))
            mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * psi))
            mu_product = state["mu_product"].mul_(mu).item()
            exp_avg, exp_avg_sq = state["exp_avg"].array, state["exp_avg_sq"].array
            tmp, quotient = self._scratch(p, 1), self._scratch(p, 2)
            lerp_(xp, exp_avg, grad, 1 - beta1, tmp)
            decay_average_of_squares_(xp, exp_avg_sq, grad, beta2, tmp)
            denom = xp.divide(exp_avg_sq, 1 - beta2 ** step, out=tmp)
            xp.sqrt(denom, out=denom)
            xp.add(denom, eps, out=denom)
            add_to_param_(p, xp.divide(grad, denom, out=quotient),
                          -lr * (1.0 - mu) / (1.0 - mu_product))
            add_to_param_(p, xp.divide(exp_avg, denom, out=quotient),
                          -lr * mu_next / (1.0 - mu_product * mu_next))
