"""ReduceLROnPlateau: cut the lr when a monitored metric stops improving."""

from __future__ import annotations

import math

from ._checks import check_choice, check_int, check_real
from .base import LRScheduler, check_optimizer, group_values, per_group


class ReduceLROnPlateau(LRScheduler):
    """Multiplies the lr by `factor` once the metric passed to `step(metric)` has not
    improved for more than `patience` steps.

    The metric improves on the best so far when, in mode "min", it is below best * (1 -
    threshold) (`threshold_mode="rel"`) or best - threshold ("abs"); in mode "max", above
    best * (1 + threshold) or best + threshold. After a cut, `cooldown` steps pass (their
    bad steps uncounted) before counting resumes. A group's lr never goes below its
    `min_lr` (one value, or one per group), and a cut smaller than `eps` is skipped.
    Unlike the other schedulers it does not touch the lrs when constructed.
    """

    def __init__(self, optimizer, mode: str = "min", factor: float = 0.1, patience: int = 10,
                 threshold: float = 1e-4, threshold_mode: str = "rel", cooldown: int = 0,
                 min_lr=0, eps: float = 1e-8):
        owner = "ReduceLROnPlateau"
        self.optimizer = check_optimizer(optimizer, owner)
        self.mode = check_choice(owner, "mode", mode, ("min", "max"))
        self.factor = check_real(owner, "factor", factor, 0.0, 1.0, high_open=True)
        self.patience = check_int(owner, "patience", patience, 0)
        self.threshold = check_real(owner, "threshold", threshold, 0.0)
        self.threshold_mode = check_choice(owner, "threshold_mode", threshold_mode,
                                           ("rel", "abs"))
        self.cooldown = check_int(owner, "cooldown", cooldown, 0)
        self.min_lrs = [check_real(owner, "min_lr", lr, 0.0)
                        for lr in per_group(owner, "min_lr", optimizer, min_lr)]
        # A single min_lr also covers param groups added later.
        self.default_min_lr = None if isinstance(min_lr, list | tuple) else min_lr
        self.eps = check_real(owner, "eps", eps, 0.0)
        self.last_epoch = 0
        self._last_lr = group_values(optimizer, "lr")
        self.best = math.inf if mode == "min" else -math.inf
        self.num_bad_epochs = 0
        self.cooldown_counter = 0

    @property
    def in_cooldown(self) -> bool:
        """Whether the steps after a cut are still passing."""
        return self.cooldown_counter > 0

    def step(self, metrics) -> None:
        """Record this epoch's metric (a number, or a one-element tensor) and cut the lr if
        it has stopped improving."""
        try:
            current = float(metrics)
        except (TypeError, ValueError):
            raise TypeError(f"{self._name}.step: metrics must be a number or a one-element "
                            f"tensor, got {type(metrics).__name__}") from None
        self.last_epoch += 1
        if self._is_better(current):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        if self.num_bad_epochs > self.patience:
            self._reduce_lr()
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = group_values(self.optimizer, "lr")

    def _is_better(self, value: float) -> bool:
        if self.mode == "min":
            if self.threshold_mode == "rel":
                return value < self.best * (1.0 - self.threshold)
            return value < self.best - self.threshold
        if self.threshold_mode == "rel":
            return value > self.best * (self.threshold + 1.0)
        return value > self.best + self.threshold

    def _reduce_lr(self) -> None:
        groups = self.optimizer.param_groups
        if len(groups) != len(self.min_lrs) and self.default_min_lr is not None:
            self.min_lrs = [self.default_min_lr] * len(groups)
        if len(groups) != len(self.min_lrs):
            raise ValueError(f"{self._name}: the optimizer has {len(groups)} param groups but "
                             f"min_lr was given for {len(self.min_lrs)}; after adding a group, "
                             "set min_lrs to a list with one value per group")
        for group, floor in zip(groups, self.min_lrs):
            old = float(group["lr"])
            new = max(old * self.factor, floor)
            if old - new > self.eps:
                group["lr"] = new
