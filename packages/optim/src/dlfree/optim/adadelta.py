"""Adadelta, as torch.optim.Adadelta: Zeiler, "ADADELTA: An Adaptive Learning Rate
Method", 2012.
"""

from __future__ import annotations

from dlfree import zeros_like

from ._foreach import add_to_param_, decay_average_of_squares_, update_grad
from .optimizer import Optimizer


class Adadelta(Optimizer):
    """Scales the gradient by RMS(past updates) / RMS(gradients), both running averages
    with rate `rho`; `lr` multiplies the resulting step (1.0 in the paper)."""

    def __init__(self, params, lr: float = 1.0, rho: float = 0.9, eps: float = 1e-6,
                 weight_decay: float = 0, *, maximize: bool = False):
        super().__init__(params, dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay,
                                      maximize=maximize))

    def _validate(self, group: dict) -> None:
        self._check("lr", group["lr"], lambda v: v >= 0, ">= 0")
        self._check("rho", group["rho"], lambda v: 0 <= v <= 1, "in [0, 1]")
        self._check_nonnegative(group, "eps", "weight_decay")
        self._check_flag("maximize", group["maximize"])

    def _update(self, group: dict, params: list) -> None:
        lr, rho, eps = group["lr"], group["rho"], group["eps"]
        for p in params:
            xp = p.device.xp
            state = self.state[p]
            if not state:
                state["step"] = 0
                state["square_avg"] = zeros_like(p)
                state["acc_delta"] = zeros_like(p)
            state["step"] += 1
            grad = update_grad(p, group["maximize"], group["weight_decay"], self._scratch(p, 0))
            square_avg, acc_delta = state["square_avg"].array, state["acc_delta"].array
            std, delta = self._scratch(p, 1), self._scratch(p, 2)
            decay_average_of_squares_(xp, square_avg, grad, rho, std)
            xp.add(square_avg, eps, out=std)
            xp.sqrt(std, out=std)
            xp.add(acc_delta, eps, out=delta)
            xp.sqrt(delta, out=delta)
            xp.divide(delta, std, out=delta)
            xp.multiply(delta, grad, out=delta)
            decay_average_of_squares_(xp, acc_delta, delta, rho, std)
            add_to_param_(p, delta, -lr)
