"""Schedulers that scale the lr by fixed rules: StepLR, MultiStepLR, ExponentialLR,
ConstantLR, LinearLR and PolynomialLR."""

from __future__ import annotations

import bisect

from ._checks import check_int, check_real
from .base import LRScheduler, group_values


class StepLR(LRScheduler):
    """Multiplies the lr by `gamma` every `step_size` epochs: lr = base_lr * gamma**(epoch //
    step_size)."""

    def __init__(self, optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1):
        self.step_size = check_int("StepLR", "step_size", step_size, 1)
        self.gamma = check_real("StepLR", "gamma", gamma, 0.0, low_open=True)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return group_values(self.optimizer, "lr")
        return [lr * self.gamma for lr in group_values(self.optimizer, "lr")]

    def _closed_form_lr(self) -> list[float]:
        return [base * self.gamma ** (self.last_epoch // self.step_size) for base in self.base_lrs]


class MultiStepLR(LRScheduler):
    """Multiplies the lr by `gamma` at each epoch in `milestones` (by gamma**n at an epoch
    listed n times): lr = base_lr * gamma**(number of milestones <= epoch)."""

    def __init__(self, optimizer, milestones, gamma: float = 0.1, last_epoch: int = -1):
        try:
            milestones = list(milestones)
        except TypeError:
            raise ValueError("MultiStepLR: milestones must be a list of epoch numbers, got "
                             f"{milestones!r}") from None
        self.milestones = sorted(check_int("MultiStepLR", "each milestone", m, 0)
                                 for m in milestones)
        self.gamma = check_real("MultiStepLR", "gamma", gamma, 0.0, low_open=True)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        hits = self.milestones.count(self.last_epoch)
        if hits == 0:
            return group_values(self.optimizer, "lr")
        return [lr * self.gamma ** hits for lr in group_values(self.optimizer, "lr")]

    def _closed_form_lr(self) -> list[float]:
        passed = bisect.bisect_right(self.milestones, self.last_epoch)
        return [base * self.gamma ** passed for base in self.base_lrs]


class ExponentialLR(LRScheduler):
    """Multiplies the lr by `gamma` every epoch: lr = base_lr * gamma**epoch."""

    def __init__(self, optimizer, gamma: float, last_epoch: int = -1):
        self.gamma = check_real("ExponentialLR", "gamma", gamma, 0.0, low_open=True)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        # The constructor's step keeps the lr, so a resumed schedule does not skip ahead.
        if self._is_initial:
            return group_values(self.optimizer, "lr")
        return [lr * self.gamma for lr in group_values(self.optimizer, "lr")]

    def _closed_form_lr(self) -> list[float]:
        return [base * self.gamma ** self.last_epoch for base in self.base_lrs]


class ConstantLR(LRScheduler):
    """Runs at `factor` times the lr for the first `total_iters` epochs, then at the lr:
    lr = base_lr * (factor if epoch < total_iters else 1)."""

    def __init__(self, optimizer, factor: float = 1.0 / 3, total_iters: int = 5,
                 last_epoch: int = -1):
        self.factor = check_real("ConstantLR", "factor", factor, 0.0, 1.0, low_open=True)
        self.total_iters = check_int("ConstantLR", "total_iters", total_iters, 1)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        lrs = group_values(self.optimizer, "lr")
        if self.last_epoch == 0:
            return [lr * self.factor for lr in lrs]
        if self.last_epoch != self.total_iters:
            return lrs
        return [lr * (1.0 / self.factor) for lr in lrs]

    def _closed_form_lr(self) -> list[float]:
        reached = self.last_epoch >= self.total_iters
        return [base * (self.factor + reached * (1 - self.factor)) for base in self.base_lrs]


class LinearLR(LRScheduler):
    """Moves the lr's factor linearly from `start_factor` to `end_factor` over `total_iters`
    epochs, then holds it: lr = base_lr * (start + (end - start) * min(epoch, total_iters) /
    total_iters)."""

    def __init__(self, optimizer, start_factor: float = 1.0 / 3, end_factor: float = 1.0,
                 total_iters: int = 5, last_epoch: int = -1):
        self.start_factor = check_real("LinearLR", "start_factor", start_factor, 0.0, 1.0,
                                       low_open=True)
        self.end_factor = check_real("LinearLR", "end_factor", end_factor, 0.0, 1.0)
        self.total_iters = check_int("LinearLR", "total_iters", total_iters, 1)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        lrs = group_values(self.optimizer, "lr")
        if self.last_epoch == 0:
            return [lr * self.start_factor for lr in lrs]
        if self._is_initial or self.last_epoch > self.total_iters:
            return lrs
        # The ratio of this epoch's factor to the previous one's.
        span = self.end_factor - self.start_factor
        ratio = 1.0 + span / (self.total_iters * self.start_factor + (self.last_epoch - 1) * span)
        return [lr * ratio for lr in lrs]

    def _closed_form_lr(self) -> list[float]:
        span = self.end_factor - self.start_factor
        done = min(self.total_iters, self.last_epoch)
        return [base * (self.start_factor + span * done / self.total_iters)
                for base in self.base_lrs]


class PolynomialLR(LRScheduler):
    """Decays the lr to zero over `total_iters` epochs along a polynomial, then holds it:
    lr = base_lr * (1 - min(epoch, total_iters) / total_iters)**power."""

    def __init__(self, optimizer, total_iters: int = 5, power: float = 1.0,
                 last_epoch: int = -1):
        self.total_iters = check_int("PolynomialLR", "total_iters", total_iters, 1)
        self.power = check_real("PolynomialLR", "power", power, 0.0)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        lrs = group_values(self.optimizer, "lr")
        if self._is_initial or self.last_epoch > self.total_iters:
            return lrs
        # The ratio of this epoch's value of the polynomial to the previous one's.
        ratio = ((1.0 - self.last_epoch / self.total_iters)
                 / (1.0 - (self.last_epoch - 1) / self.total_iters)) ** self.power
        return [lr * ratio for lr in lrs]

    def _closed_form_lr(self) -> list[float]:
        left = 1.0 - min(self.total_iters, self.last_epoch) / self.total_iters
        return [base * left ** self.power for base in self.base_lrs]
