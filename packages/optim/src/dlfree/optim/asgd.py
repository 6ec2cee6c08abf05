"""ASGD, as torch.optim.ASGD: averaged stochastic gradient descent, Polyak & Juditsky,
"Acceleration of Stochastic Approximation by Averaging", SIAM J. Control Optim. 1992, with
the decaying step sizes of Bottou, "Large-Scale Machine Learning with Stochastic Gradient
Descent", COMPSTAT 2010.
"""

from __future__ import annotations

from dlfree import get_default_dtype, tensor, zeros_like

from ._foreach import add_to_param_, update_grad
from .optimizer import Optimizer


class ASGD(Optimizer):
    """SGD with a step size eta_t = lr / (1 + lambd * lr * t) ** alpha, a weight decay of
    lambd * eta_t, and the running average `ax` of the iterates from step t0 on (state
    "ax": the averaged parameters, which evaluation may use in place of the last ones).
    """

    def __init__(self, params, lr: float = 1e-2, lambd: float = 1e-4, alpha: float = 0.75,
                 t0: float = 1e6, weight_decay: float = 0, *, maximize: bool = False):
        super().__init__(params, dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0,
                                      weight_decay=weight_decay, maximize=maximize))

    def _validate(self, group: dict) -> None:
        self._check_nonnegative(group, "lr", "lambd", "alpha", "t0", "weight_decay")
        self._check_flag("maximize", group["maximize"])

    def _update(self, group: dict, params: list) -> None:
        lr, lambd, alpha, t0 = group["lr"], group["lambd"], group["alpha"], group["t0"]
        for p in params:
            state = self.state[p]
            if not state:
                state.update(step=0, eta=_scalar(lr), mu=_scalar(1.0), ax=zeros_like(p))
            state["step"] += 1
            grad = update_grad(p, group["maximize"], group["weight_decay"], self._scratch(p, 0))
            eta, mu = float(state["eta"]), float(state["mu"])
            p.mul_(1 - lambd * eta)
            add_to_param_(p, grad, -eta)
            ax = state["ax"].array
            if mu != 1:
                ax += (p.array - ax) * mu
            else:
                ax[...] = p.array
            state["eta"] = _scalar(lr / (1 + lambd * lr * state["step"]) ** alpha)
            state["mu"] = _scalar(1 / max(1, state["step"] - t0))


def _scalar(value: float):
    """eta and mu as torch keeps them: 0-d tensors of the default floating dtype (so a
    float32 default rounds them, as in torch, and checkpoints carry them as tensors)."""
    return tensor(value, dtype=get_default_dtype())
