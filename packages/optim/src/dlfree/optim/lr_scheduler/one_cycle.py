"""OneCycleLR: the 1cycle policy (Smith & Topin, https://arxiv.org/abs/1708.07120)."""

from __future__ import annotations

import math

from ._checks import check_choice, check_flag, check_int, check_real
from ._momentum import momentum_bounds, set_momentum, uses_beta1
from .base import LRScheduler, check_optimizer, per_group


class OneCycleLR(LRScheduler):
    """Warms the lr up from max_lr / div_factor to `max_lr`, then anneals it to
    max_lr / div_factor / final_div_factor, over `total_steps` batches (or `epochs *
    steps_per_epoch`); momentum (or beta1) runs inversely, between `max_momentum` and
    `base_momentum`.

    The phases end at step pct_start * total_steps - 1 (warm-up) and total_steps - 1.
    With `three_phase`, a second phase mirrors the first back to the initial lr (ending at
    2 * pct_start * total_steps - 2) and a third anneals to the minimum. Within a phase
    from value a to b, at fraction p of its steps, the value is b + (a - b) * (1 + cos(pi *
    p)) / 2 (`anneal_strategy="cos"`) or a + (b - a) * p ("linear"). The groups hold
    "initial_lr", "max_lr", "min_lr" (and "max_momentum", "base_momentum"), as in PyTorch.
    Stepping past `total_steps` is an error. Not chainable: it sets the lr outright.
    """

    def __init__(self, optimizer, max_lr, total_steps: int | None = None,
                 epochs: int | None = None, steps_per_epoch: int | None = None,
                 pct_start: float = 0.3, anneal_strategy: str = "cos",
                 cycle_momentum: bool = True, base_momentum=0.85, max_momentum=0.95,
                 div_factor: float = 25.0, final_div_factor: float = 1e4,
                 three_phase: bool = False, last_epoch: int = -1):
        owner = "OneCycleLR"
        check_optimizer(optimizer, owner)
        if total_steps is not None:
            self.total_steps = check_int(owner, "total_steps", total_steps, 1)
        elif epochs is not None and steps_per_epoch is not None:
            self.total_steps = check_int(owner, "epochs", epochs, 1) * \
                check_int(owner, "steps_per_epoch", steps_per_epoch, 1)
        else:
            raise ValueError(f"{owner}: give total_steps, or both epochs and steps_per_epoch")
        check_real(owner, "pct_start", pct_start, 0.0, 1.0)
        self._anneal_func_type = check_choice(owner, "anneal_strategy", anneal_strategy,
                                              ("cos", "linear"))
        max_lrs = [check_real(owner, "max_lr", lr, 0.0, low_open=True)
                   for lr in per_group(owner, "max_lr", optimizer, max_lr)]
        check_real(owner, "div_factor", div_factor, 0.0, low_open=True)
        check_real(owner, "final_div_factor", final_div_factor, 0.0, low_open=True)
        self._schedule_phases = _phases(self.total_steps, pct_start,
                                        check_flag(owner, "three_phase", three_phase))
        self.cycle_momentum = check_flag(owner, "cycle_momentum", cycle_momentum)
        if last_epoch == -1:
            for group, top in zip(optimizer.param_groups, max_lrs):
                group["initial_lr"] = top / div_factor
                group["max_lr"] = top
                group["min_lr"] = group["initial_lr"] / final_div_factor
        if cycle_momentum:
            self.use_beta1 = uses_beta1(owner, optimizer)
            bases, maxes = momentum_bounds(owner, optimizer, base_momentum, max_momentum)
            if last_epoch == -1:
                for group, low, high in zip(optimizer.param_groups, bases, maxes):
                    set_momentum(group, high, self.use_beta1)
                    group["max_momentum"] = high
                    group["base_momentum"] = low
        super().__init__(optimizer, last_epoch)

    def _anneal(self, start: float, end: float, pct: float) -> float:
        if self._anneal_func_type == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def get_lr(self) -> list[float]:
        step = self.last_epoch
        if step > self.total_steps:
            raise ValueError(f"OneCycleLR: stepped {step} times, but total_steps is "
                             f"{self.total_steps}; make total_steps cover the whole run")
        lrs = []
        for group in self.optimizer.param_groups:
            start = 0.0
            for i, phase in enumerate(self._schedule_phases):
                end = phase["end_step"]
                if step <= end or i == len(self._schedule_phases) - 1:
                    # A phase of no steps (e.g. pct_start * total_steps == 1) is at its end.
                    pct = (step - start) / (end - start) if end != start else 1.0
                    lrs.append(self._anneal(group[phase["start_lr"]], group[phase["end_lr"]],
                                            pct))
                    if self.cycle_momentum:
                        momentum = self._anneal(group[phase["start_momentum"]],
                                                group[phase["end_momentum"]], pct)
                        set_momentum(group, momentum, self.use_beta1)
                    break
                start = end
        return lrs


def _phases(total_steps: int, pct_start: float, three_phase: bool) -> list[dict]:
    """The phases: the step each ends at and the group keys of its start and end values."""
    def phase(end_step, start_lr, end_lr, start_momentum, end_momentum):
        return {"end_step": end_step, "start_lr": start_lr, "end_lr": end_lr,
                "start_momentum": start_momentum, "end_momentum": end_momentum}

    warmup = phase(float(pct_start * total_steps) - 1, "initial_lr", "max_lr",
                   "max_momentum", "base_momentum")
    if not three_phase:
        return [warmup, phase(total_steps - 1, "max_lr", "min_lr",
                              "base_momentum", "max_momentum")]
    return [warmup,
            phase(float(2 * pct_start * total_steps) - 2, "max_lr", "initial_lr",
                  "base_momentum", "max_momentum"),
            phase(total_steps - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum")]
