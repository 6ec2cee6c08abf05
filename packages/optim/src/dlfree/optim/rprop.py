"""Rprop, as torch.optim.Rprop: Riedmiller & Braun, "A Direct Adaptive Method for Faster
Backpropagation Learning: The RPROP Algorithm", ICNN 1993.
"""

from __future__ import annotations

from dlfree import full_like, zeros_like

from ._foreach import add_to_param_
from .optimizer import Optimizer


class Rprop(Optimizer):
    """Steps each coordinate by its own step size against the gradient's sign only.

    A coordinate whose gradient kept its sign grows its step by etas[1], one whose sign
    flipped shrinks it by etas[0] and skips this update (its remembered gradient becomes
    0); step sizes start at `lr` and stay within `step_sizes`.
    """

    def __init__(self, params, lr: float = 1e-2, etas: tuple = (0.5, 1.2),
                 step_sizes: tuple = (1e-6, 50), *, maximize: bool = False):
        super().__init__(params, dict(lr=lr, etas=tuple(etas), step_sizes=tuple(step_sizes),
                                      maximize=maximize))

    def _validate(self, group: dict) -> None:
        self._check_nonnegative(group, "lr")
        etas, sizes = group["etas"], group["step_sizes"]
        if len(etas) != 2 or not 0 < etas[0] < 1 < etas[1]:
            raise ValueError(f"Rprop: etas must be (etaminus, etaplus) with 0 < etaminus < 1 "
                             f"< etaplus, got {etas!r}")
        if len(sizes) != 2 or not 0 <= sizes[0] <= sizes[1]:
            raise ValueError(f"Rprop: step_sizes must be (min, max) with 0 <= min <= max, got "
                             f"{sizes!r}")
        self._check_flag("maximize", group["maximize"])

    def _update(self, group: dict, params: list) -> None:
        (shrink, grow), (smallest, largest) = group["etas"], group["step_sizes"]
        for p in params:
            xp = p.device.xp
            state = self.state[p]
            if not state:
                state["step"] = 0
                state["prev"] = zeros_like(p)
                state["step_size"] = full_like(p, group["lr"])
            state["step"] += 1
            grad = p.grad.array.copy()  # an array even for a 0-d parameter
            if group["maximize"]:
                xp.negative(grad, out=grad)
            prev, step_size = state["prev"].array, state["step_size"].array
            agreement = xp.sign(grad * prev)
            factor = xp.where(agreement > 0, grow, xp.where(agreement < 0, shrink, 1.0))
            xp.clip(step_size * factor.astype(step_size.dtype), smallest, largest, out=step_size)
            grad[agreement < 0] = 0  # a flipped sign: no step now, and no flip seen next time
            add_to_param_(p, xp.sign(grad) * step_size, -1)
            prev[...] = grad
