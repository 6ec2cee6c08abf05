"""SGD: stochastic gradient descent with (Nesterov) momentum, as torch.optim.SGD.

Nesterov momentum: Sutskever et al., "On the importance of initialization and momentum
in deep learning", ICML 2013.
"""

from __future__ import annotations

from dlfree import as_tensor

from ._foreach import add_to_param_, update_grad
from .optimizer import Optimizer


class SGD(Optimizer):
    """Gradient descent, optionally with momentum (heavy-ball or Nesterov) and L2 decay.

    With momentum m: buf = m * buf + (1 - dampening) * g (buf = g on the first step),
    and the step direction is buf, or g + m * buf for Nesterov.
    """

    def __init__(self, params, lr: float = 1e-3, momentum: float = 0, dampening: float = 0,
                 weight_decay: float = 0, nesterov: bool = False, *, maximize: bool = False):
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov,
                                      maximize=maximize))

    def _validate(self, group: dict) -> None:
        self._check_nonnegative(group, "lr", "momentum")
        self._check("dampening", group["dampening"], lambda v: 0 <= v <= 1, "in [0, 1]")
        self._check("weight_decay", group["weight_decay"], lambda v: v >= 0, ">= 0")
        self._check_flags(group, "nesterov", "maximize")
        if group["nesterov"] and (group["momentum"] <= 0 or group["dampening"] != 0):
            raise ValueError(f"{self._name}: nesterov=True needs momentum > 0 and dampening = 0, "
                             f"got momentum={group['momentum']!r}, "
                             f"dampening={group['dampening']!r}")

    def _update(self, group: dict, params: list) -> None:
        lr, momentum = group["lr"], group["momentum"]
        dampening, nesterov = group["dampening"], group["nesterov"]
        for p in params:
            xp = p.device.xp
            grad = update_grad(p, group["maximize"], group["weight_decay"], self._scratch(p, 0))
            if momentum != 0:
                state = self.state[p]
                buf = state.get("momentum_buffer")
                if buf is None:
                    buf = state["momentum_buffer"] = as_tensor(grad.copy())
                else:
                    tmp = self._scratch(p, 1)
                    xp.multiply(buf.array, momentum, out=buf.array)
                    xp.multiply(grad, 1 - dampening, out=tmp)
                    xp.add(buf.array, tmp, out=buf.array)
                if nesterov:
                    step = self._scratch(p, 1)
                    xp.multiply(buf.array, momentum, out=step)
                    grad = xp.add(grad, step, out=step)
                else:
                    grad = buf.array
            add_to_param_(p, grad, -lr)
