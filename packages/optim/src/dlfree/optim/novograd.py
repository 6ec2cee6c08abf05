"""NovoGrad: momentum over layer-wise normalised gradients, as torch_optimizer 0.3.0's.

Ginsburg et al., "Stochastic Gradient Methods with Layer-wise Adaptive Moments for
Training of Deep Networks" (arXiv:1905.11286).
"""

from __future__ import annotations

from dlfree import zeros, zeros_like

from ._foreach import add_to_param_
from .optimizer import Optimizer


class NovoGrad(Optimizer):
    """SGD with momentum on gradients divided by a running norm, one scalar per tensor.

    Per step, with g the gradient:

        v = ||g||**2 while v is 0 (the first step), else beta2 * v + (1 - beta2) * ||g||**2
        d = g / (sqrt(v) + eps) + weight_decay * p      (v -> max over steps with amsgrad)
        m = beta1 * m + (1 - beta1) * d                 ((1 - beta1) only with grad_averaging)
        p -= lr * m

    Defaults are torch_optimizer 0.3.0's, including betas=(0.95, 0). Unlike that
    implementation, the gradient is left untouched (it divides `p.grad` in place), and
    the second moment takes the parameter's dtype (it uses float32 whatever the parameter).
    """

    def __init__(self, params, lr: float = 1e-3, betas=(0.95, 0), eps: float = 1e-8,
                 weight_decay: float = 0, grad_averaging: bool = False, amsgrad: bool = False):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      grad_averaging=grad_averaging, amsgrad=amsgrad))

    def _validate(self, group: dict) -> None:
        self._check("lr", group["lr"], lambda v: v >= 0, ">= 0")
        self._check_betas(group["betas"])
        self._check_nonnegative(group, "eps", "weight_decay")
        self._check_flags(group, "grad_averaging", "amsgrad")

    def _update(self, group: dict, params: list) -> None:
        beta1, beta2 = group["betas"]
        amsgrad, weight_decay = group["amsgrad"], group["weight_decay"]
        for p in params:
            xp, kernels = p.device.xp, p.device.backend
            state = self.state[p]
            if not state:
                state["step"] = 0
                state["exp_avg"] = zeros_like(p)
                state["exp_avg_sq"] = zeros((), dtype=p.dtype, device=p.device)
                if amsgrad:
                    state["max_exp_avg_sq"] = zeros((), dtype=p.dtype, device=p.device)
            state["step"] += 1
            x, grad = p.array, p.grad.array
            exp_avg, exp_avg_sq = state["exp_avg"].array, state["exp_avg_sq"].array

            flat = grad.reshape(-1)
            sq_norm = xp.dot(flat, flat)
            # Selected on the device rather than branched on, so a GPU is not synchronised.
            blended = exp_avg_sq * beta2 + sq_norm * (1 - beta2)
            exp_avg_sq[...] = xp.where(exp_avg_sq == 0, sq_norm, blended)
            second = exp_avg_sq
            if amsgrad:
                second = state["max_exp_avg_sq"].array
                xp.maximum(second, exp_avg_sq, out=second)

            direction = self._scratch(p)
            xp.divide(grad, xp.sqrt(second) + group["eps"], out=direction)
            if weight_decay != 0:
                kernels.add_scaled(direction, x, weight_decay)
            xp.multiply(exp_avg, beta1, out=exp_avg)
            if group["grad_averaging"]:
                kernels.add_scaled(exp_avg, direction, 1 - beta1)
            else:
                xp.add(exp_avg, direction, out=exp_avg)
            add_to_param_(p, exp_avg, -group["lr"])
