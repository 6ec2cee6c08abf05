"""LinearWarmup: a linear warm-up in front of any scheduler ("warmup then cosine" in one line)."""

from __future__ import annotations

from ._checks import check_int, check_real
from .base import LRScheduler, check_optimizer
from .compose import CompositeScheduler
from .plateau import ReduceLROnPlateau


class LinearWarmup(LRScheduler):
    """Raises the lr linearly for `warmup_steps` steps, then hands over to `after`.

    At step t (`last_epoch`), with base_lr each group's initial lr:

        t < warmup_steps:   lr = base_lr * (start_factor + (1 - start_factor) * t / warmup_steps)
        t >= warmup_steps:  lr = the lr that `after` sets at its own step t - warmup_steps,
                            when run alone from base_lr (base_lr itself if `after` is None)

    Build `after` on the same optimizer first; "warm up for 100 steps, then cosine to 0 by
    step N" is

        LinearWarmup(optimizer, 100, after=CosineAnnealingLR(optimizer, T_max=N - 100))

    The default start_factor=0 starts from lr 0. With start_factor > 0 the sequence equals
    `SequentialLR(optimizer, [LinearLR(optimizer, start_factor, 1.0, warmup_steps), after],
    milestones=[warmup_steps])` for every `after` but MultiplicativeLR (which SequentialLR
    starts from the last warm-up lr, times its factor). Not chainable: the warm-up sets the
    lr outright. `after` may not be composite or a ReduceLROnPlateau.
    """

    _not_state = (*LRScheduler._not_state, "after")

    def __init__(self, optimizer, warmup_steps: int, after: LRScheduler | None = None,
                 start_factor: float = 0.0, last_epoch: int = -1):
        owner = "LinearWarmup"
        check_optimizer(optimizer, owner)
        self.warmup_steps = check_int(owner, "warmup_steps", warmup_steps, 0)
        self.start_factor = check_real(owner, "start_factor", start_factor, 0.0, 1.0)
        if after is not None:
            unfit = CompositeScheduler | ReduceLROnPlateau
            if not isinstance(after, LRScheduler) or isinstance(after, unfit):
                raise TypeError(f"{owner}: after must be a scheduler such as CosineAnnealingLR "
                                f"(not composite, not ReduceLROnPlateau) or None, got "
                                f"{type(after).__name__}")
            if after.optimizer is not optimizer:
                raise ValueError(f"{owner}: after ({type(after).__name__}) belongs to another "
                                 "optimizer; build it on the optimizer given here")
        self.after = after
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        step = self.last_epoch
        if step < self.warmup_steps:
            rise = 1 - self.start_factor
            return [base * (self.start_factor + rise * step / self.warmup_steps)
                    for base in self.base_lrs]
        if self.after is None:
            return list(self.base_lrs)
        if step == self.warmup_steps:
            # `after` starts over from the initial lrs, as if just constructed.
            for group, base in zip(self.optimizer.param_groups, self.base_lrs):
                group["lr"] = base
            self.after._restart()
        else:
            self.after.step()
        return self.after.get_last_lr()

    def state_dict(self) -> dict:
        state = super().state_dict()
        state["after"] = None if self.after is None else self.after.state_dict()
        return state

    def _load_state(self, state_dict: dict) -> None:
        saved = state_dict["after"]
        if (saved is None) != (self.after is None):
            raise ValueError(f"{self._name}.load_state_dict: the state was saved "
                             f"{'without' if saved is None else 'with'} an `after` scheduler, "
                             f"and this one has {'none' if self.after is None else 'one'}")
        if saved is not None:
            self.after.load_state_dict(saved)
        super()._load_state(state_dict)
