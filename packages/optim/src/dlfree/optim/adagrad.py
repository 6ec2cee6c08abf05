"""Adagrad, as torch.optim.Adagrad: Duchi, Hazan & Singer, "Adaptive Subgradient Methods
for Online Learning and Stochastic Optimization", JMLR 2011.
"""

from __future__ import annotations

from dlfree import full_like

from ._foreach import add_to_param_, addcmul_, update_grad
from .optimizer import Optimizer


class Adagrad(Optimizer):
    """Divides each coordinate's step by the root of its summed squared gradients.

    The learning rate decays as lr / (1 + (t - 1) * lr_decay); the sums start at
    `initial_accumulator_value`.
    """

    def __init__(self, params, lr: float = 1e-2, lr_decay: float = 0, weight_decay: float = 0,
                 initial_accumulator_value: float = 0, eps: float = 1e-10, *,
                 maximize: bool = False):
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value,
                                      eps=eps, maximize=maximize))

    def _validate(self, group: dict) -> None:
        self._check_nonnegative(group, "lr", "lr_decay", "weight_decay")
        self._check("initial_accumulator_value", group["initial_accumulator_value"],
                    lambda v: v >= 0, ">= 0")
        self._check("eps", group["eps"], lambda v: v >= 0, ">= 0")
        self._check_flag("maximize", group["maximize"])

    def _update(self, group: dict, params: list) -> None:
        lr, lr_decay, eps = group["lr"], group["lr_decay"], group["eps"]
        for p in params:
            xp = p.device.xp
            state = self.state[p]
            if not state:
                state["step"] = 0
                state["sum"] = full_like(p, group["initial_accumulator_value"])
            state["step"] += 1
            grad = update_grad(p, group["maximize"], group["weight_decay"], self._scratch(p, 0))
            clr = lr / (1 + (state["step"] - 1) * lr_decay)
            total, std = state["sum"].array, self._scratch(p, 1)
            addcmul_(xp, total, grad, grad, 1, std)
            xp.sqrt(total, out=std)
            xp.add(std, eps, out=std)
            add_to_param_(p, xp.divide(grad, std, out=std), -clr)
