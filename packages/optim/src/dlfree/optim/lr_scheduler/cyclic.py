"""CyclicLR: cyclical learning rates (Smith, https://arxiv.org/abs/1506.01186)."""

from __future__ import annotations

import math

from ._checks import check_choice, check_flag, check_int, check_real
from ._momentum import momentum_bounds, set_momentum, uses_beta1
from .base import (
    LRScheduler,
    callable_state,
    check_optimizer,
    load_callable_state,
    per_group,
)


class CyclicLR(LRScheduler):
    """Cycles the lr between `base_lr` and `max_lr` along a triangle, stepped once per batch.

    A cycle rises for `step_size_up` steps and falls for `step_size_down` (default: the
    same). At step t, with cycle = floor(1 + t / (up + down)) and x = 1 + t / (up + down) -
    cycle (the position in the cycle, 0 to 1), the height h is x / r while x <= r = up / (up
    + down), else (x - 1) / (r - 1); then

        lr = base_lr + (max_lr - base_lr) * h * scale_fn(s)

    with s = cycle (`scale_mode="cycle"`) or t (`"iterations"`). The modes fix scale_fn:
    "triangular" 1; "triangular2" 1 / 2**(cycle - 1), halving each cycle; "exp_range"
    gamma**t. A custom `scale_fn` (values in [0, 1]) replaces the mode. With
    `cycle_momentum`, momentum (or beta1) runs inversely: max_momentum - (max_momentum -
    base_momentum) * h * scale_fn(s). `base_lr`, `max_lr` and the momenta may be lists with
    one value per param group.
    """

    _not_state = (*LRScheduler._not_state, "_scale_fn_custom")

    def __init__(self, optimizer, base_lr, max_lr, step_size_up: int = 2000,
                 step_size_down: int | None = None, mode: str = "triangular",
                 gamma: float = 1.0, scale_fn=None, scale_mode: str = "cycle",
                 cycle_momentum: bool = True, base_momentum=0.8, max_momentum=0.9,
                 last_epoch: int = -1):
        owner = "CyclicLR"
        check_optimizer(optimizer, owner)
        base_lrs = [check_real(owner, "base_lr", lr, 0.0)
                    for lr in per_group(owner, "base_lr", optimizer, base_lr)]
        self.max_lrs = [check_real(owner, "max_lr", lr, 0.0)
                        for lr in per_group(owner, "max_lr", optimizer, max_lr)]
        up = check_int(owner, "step_size_up", step_size_up, 1)
        down = up if step_size_down is None else \
            check_int(owner, "step_size_down", step_size_down, 1)
        self.total_size = float(up + down)
        self.step_ratio = up / self.total_size
        if scale_fn is None:
            check_choice(owner, "mode", mode, ("triangular", "triangular2", "exp_range"))
            scale_mode = "iterations" if mode == "exp_range" else "cycle"
        elif not callable(scale_fn):
            raise TypeError(f"{owner}: scale_fn must be a function of one number or None, got "
                            f"a {type(scale_fn).__name__}")
        self.mode = mode
        self.gamma = check_real(owner, "gamma", gamma, 0.0, low_open=True)
        self._scale_fn_custom = scale_fn
        self.scale_mode = check_choice(owner, "scale_mode", scale_mode, ("cycle", "iterations"))
        self.cycle_momentum = check_flag(owner, "cycle_momentum", cycle_momentum)
        if last_epoch == -1:
            for group, lr in zip(optimizer.param_groups, base_lrs):
                group["lr"] = lr
        if cycle_momentum:
            self.use_beta1 = uses_beta1(owner, optimizer)
            self.base_momentums, self.max_momentums = momentum_bounds(
                owner, optimizer, base_momentum, max_momentum)
            if last_epoch == -1:
                for group, low, high in zip(optimizer.param_groups, self.base_momentums,
                                            self.max_momentums):
                    set_momentum(group, high, self.use_beta1)
                    group["max_momentum"] = high
                    group["base_momentum"] = low
        super().__init__(optimizer, last_epoch)
        # The constructor's step used the groups' initial_lr (as PyTorch does); from here
        # on the cycle runs between the base_lr given and max_lr.
        self.base_lrs = base_lrs

    def scale_fn(self, x: float) -> float:
        """The amplitude's scale at cycle (or iteration) `x`, from the mode or `scale_fn`."""
        if self._scale_fn_custom is not None:
            return self._scale_fn_custom(x)
        if self.mode == "triangular":
            return 1.0
        if self.mode == "triangular2":
            return 1 / (2.0 ** (x - 1))
        return self.gamma ** x

    def get_lr(self) -> list[float]:
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle
        # The triangle's height: rising while x <= step_ratio, then falling.
        rising = x <= self.step_ratio
        height = x / self.step_ratio if rising else (x - 1) / (self.step_ratio - 1)
        scale = self.scale_fn(cycle if self.scale_mode == "cycle" else self.last_epoch)
        lrs = [base + (top - base) * height * scale
               for base, top in zip(self.base_lrs, self.max_lrs)]
        if self.cycle_momentum:
            for group, low, high in zip(self.optimizer.param_groups, self.base_momentums,
                                        self.max_momentums):
                set_momentum(group, high - (high - low) * height * scale, self.use_beta1)
        return lrs

    def state_dict(self) -> dict:
        state = super().state_dict()
        state["_scale_fn_custom"] = callable_state(self._scale_fn_custom)
        return state

    def _load_state(self, state_dict: dict) -> None:
        super()._load_state(state_dict)
        load_callable_state(self._scale_fn_custom, state_dict["_scale_fn_custom"])
