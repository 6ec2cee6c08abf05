"""LARS: SGD with momentum and a layer-wise learning rate from a trust ratio.

You, Gitman and Ginsburg, "Large Batch Training of Convolutional Networks"
(arXiv:1708.03888), Algorithm 1.
"""

from __future__ import annotations

from dlfree import zeros_like

from ._foreach import add_to_param_, norm
from .optimizer import Optimizer


class LARS(Optimizer):
    """Momentum SGD whose step for each tensor is scaled to a fraction of that tensor's norm.

    Per step, with g the gradient and the paper's notation (lr is its global rate gamma):

        local_lr = trust_coefficient * ||p|| / (||g|| + weight_decay * ||p|| + eps)
        v = momentum * v + lr * local_lr * (g + weight_decay * p)
        p -= v

    local_lr is 1 where ||p|| or ||g|| is 0 (a zero-initialised tensor would never move
    otherwise). As in the paper, lr enters the velocity, so a schedule changes the step
    from the next update on. Groups with `exclude_from_lars=True`, meant for biases and
    normalisation parameters (as in SimCLR and BYOL), get neither the trust ratio nor
    weight decay: v = momentum * v + lr * g. With momentum 0 no velocity is kept.
    """

    def __init__(self, params, lr: float = 1.0, momentum: float = 0.9,
                 weight_decay: float = 0.0, trust_coefficient: float = 0.001,
                 eps: float = 1e-8, exclude_from_lars: bool = False):
        super().__init__(params, dict(lr=lr, momentum=momentum, weight_decay=weight_decay,
                                      trust_coefficient=trust_coefficient, eps=eps,
                                      exclude_from_lars=exclude_from_lars))

    def _validate(self, group: dict) -> None:
        self._check("lr", group["lr"], lambda v: v >= 0, ">= 0")
        self._check("momentum", group["momentum"], lambda v: 0 <= v < 1, "in [0, 1)")
        self._check("weight_decay", group["weight_decay"], lambda v: v >= 0, ">= 0")
        self._check("trust_coefficient", group["trust_coefficient"], lambda v: v > 0, "> 0")
        self._check("eps", group["eps"], lambda v: v >= 0, ">= 0")
        self._check_flag("exclude_from_lars", group["exclude_from_lars"])

    def _update(self, group: dict, params: list) -> None:
        lr, momentum, weight_decay = group["lr"], group["momentum"], group["weight_decay"]
        for p in params:
            xp = p.device.xp
            x, grad = p.array, p.grad.array
            step = self._scratch(p)
            if group["exclude_from_lars"]:
                xp.multiply(grad, lr, out=step)
            else:
                xp.multiply(x, weight_decay, out=step)
                xp.add(step, grad, out=step)
                # Device scalars throughout, so a GPU is not synchronised per tensor.
                weight_norm, grad_norm = norm(xp, x), norm(xp, grad)
                usable = (weight_norm > 0) & (grad_norm > 0)
                denominator = grad_norm + weight_decay * weight_norm + group["eps"]
                local_lr = xp.where(usable, group["trust_coefficient"] * weight_norm /
                                    xp.where(usable, denominator, 1), 1)
                xp.multiply(step, (lr * local_lr).astype(x.dtype), out=step)
            if momentum != 0:
                state = self.state[p]
                if not state:
                    state["momentum_buffer"] = zeros_like(p)
                velocity = state["momentum_buffer"].array
                xp.multiply(velocity, momentum, out=velocity)
                xp.add(velocity, step, out=velocity)
                step = velocity
            add_to_param_(p, step, -1)

