"""Cosine annealing (SGDR, Loshchilov & Hutter, https://arxiv.org/abs/1608.03983):
CosineAnnealingLR and CosineAnnealingWarmRestarts."""

from __future__ import annotations

import math

from ._checks import check_int, check_real
from .base import LRScheduler, group_values


class CosineAnnealingLR(LRScheduler):
    """Anneals the lr from its initial value to `eta_min` along half a cosine over `T_max`
    epochs: lr = eta_min + (base_lr - eta_min) * (1 + cos(pi * epoch / T_max)) / 2.

    As in PyTorch the lr is updated recursively (each step scales the distance to
    `eta_min` by the ratio of successive cosine terms), so it composes with other
    schedulers; past `T_max` it climbs back along the cosine rather than restarting.
    """

    def __init__(self, optimizer, T_max: int, eta_min: float = 0.0, last_epoch: int = -1):
        self.T_max = check_int("CosineAnnealingLR", "T_max", T_max, 1)
        self.eta_min = check_real("CosineAnnealingLR", "eta_min", eta_min, 0.0)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        lrs = group_values(self.optimizer, "lr")
        if self._is_initial:
            return lrs
        epoch, period = self.last_epoch, self.T_max
        if (epoch - 1 - period) % (2 * period) == 0:
            # Leaving the minimum, where the ratio of cosine terms would divide by zero.
            rise = 1 - math.cos(math.pi / period)
            return [lr + (base - self.eta_min) * rise / 2 for base, lr in zip(self.base_lrs, lrs)]
        ratio = (1 + math.cos(math.pi * epoch / period)) / \
            (1 + math.cos(math.pi * (epoch - 1) / period))
        return [ratio * (lr - self.eta_min) + self.eta_min for lr in lrs]

    def _closed_form_lr(self) -> list[float]:
        cosine = 1 + math.cos(math.pi * self.last_epoch / self.T_max)
        return [self.eta_min + (base - self.eta_min) * cosine / 2 for base in self.base_lrs]


class CosineAnnealingWarmRestarts(LRScheduler):
    """Cosine annealing that restarts at the initial lr: the first period lasts `T_0`
    epochs and each next one `T_mult` times longer; lr = eta_min + (base_lr - eta_min) *
    (1 + cos(pi * T_cur / T_i)) / 2, with `T_cur` the epochs since the last restart and
    `T_i` the current period.

    `step(epoch)` also accepts a fractional epoch (e.g. `epoch + batch / batches`) to
    anneal within an epoch, and may jump to any epoch.
    """

    def __init__(self, optimizer, T_0: int, T_mult: int = 1, eta_min: float = 0.0,
                 last_epoch: int = -1):
        self.T_0 = check_int("CosineAnnealingWarmRestarts", "T_0", T_0, 1)
        self.T_i = self.T_0
        self.T_mult = check_int("CosineAnnealingWarmRestarts", "T_mult", T_mult, 1)
        self.eta_min = check_real("CosineAnnealingWarmRestarts", "eta_min", eta_min, 0.0)
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        cosine = 1 + math.cos(math.pi * self.T_cur / self.T_i)
        return [self.eta_min + (base - self.eta_min) * cosine / 2 for base in self.base_lrs]

    def step(self, epoch: float | None = None) -> None:
        """Advance one epoch, or go to `epoch` (a number >= 0, fractional allowed)."""
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur = self.T_cur + 1
            if self.T_cur >= self.T_i:
                self.T_cur = self.T_cur % self.T_i
                self.T_i = self.T_i * self.T_mult
        else:
            check_real(self._name, "epoch", epoch, 0.0)
            self._locate(epoch)
        self.last_epoch = math.floor(epoch)
        self._apply(self.get_lr())

    def _locate(self, epoch: float) -> None:
        """Set `T_cur` and `T_i` for `epoch`, counting whole periods from the start."""
        if epoch < self.T_0:
            self.T_i = self.T_0
            self.T_cur = epoch
        elif self.T_mult == 1:
            self.T_cur = epoch % self.T_0
        else:
            # Periods T_0 * T_mult**k for k < n sum to T_0 * (T_mult**n - 1) / (T_mult - 1).
            n = int(math.log(epoch / self.T_0 * (self.T_mult - 1) + 1, self.T_mult))
            self.T_cur = epoch - self.T_0 * (self.T_mult ** n - 1) / (self.T_mult - 1)
            self.T_i = self.T_0 * self.T_mult ** n
