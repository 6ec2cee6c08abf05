"""Schedulers made of schedulers: SequentialLR (one after another) and ChainedScheduler
(all at once)."""

from __future__ import annotations

import bisect
from collections.abc import Iterable

from ._checks import check_int
from .base import LRScheduler, check_optimizer, group_values
from .plateau import ReduceLROnPlateau


def check_children(owner: str, optimizer, schedulers) -> list:
    """Return `schedulers` as a list if it is a non-empty sequence of schedulers stepped
    without arguments, all on `optimizer`."""
    if isinstance(schedulers, LRScheduler) or not isinstance(schedulers, Iterable):
        raise TypeError(f"{owner}: schedulers must be a list of schedulers, got "
                        f"{type(schedulers).__name__}")
    schedulers = list(schedulers)
    if not schedulers:
        raise ValueError(f"{owner}: schedulers is empty; give at least one scheduler")
    for i, scheduler in enumerate(schedulers):
        if not isinstance(scheduler, LRScheduler):
            raise TypeError(f"{owner}: scheduler {i} is a {type(scheduler).__name__}, not an "
                            "LRScheduler")
        if isinstance(scheduler, ReduceLROnPlateau):
            raise ValueError(f"{owner}: scheduler {i} is a ReduceLROnPlateau, whose step needs "
                             "a metric; it cannot be combined, step it on its own")
        if scheduler.optimizer is not optimizer:
            raise ValueError(f"{owner}: scheduler {i} ({type(scheduler).__name__}) belongs to "
                             "another optimizer; every scheduler must use the same optimizer")
    return schedulers


def undo_initial_steps(scheduler: LRScheduler) -> None:
    """Step back the epoch counters that constructing `scheduler` advanced."""
    if isinstance(scheduler, CompositeScheduler):
        for child in scheduler._schedulers:
            undo_initial_steps(child)
    else:
        scheduler.last_epoch -= 1


class CompositeScheduler(LRScheduler):
    """A scheduler made of schedulers: saves and restores their states with its own."""

    _not_state = (*LRScheduler._not_state, "_schedulers")

    def state_dict(self) -> dict:
        state = super().state_dict()
        state["_schedulers"] = [child.state_dict() for child in self._schedulers]
        return state

    def _load_state(self, state_dict: dict) -> None:
        saved = state_dict["_schedulers"]
        if not isinstance(saved, list) or len(saved) != len(self._schedulers):
            count = len(saved) if isinstance(saved, list) else type(saved).__name__
            raise ValueError(f"{self._name}.load_state_dict: the state holds {count} "
                             f"schedulers, this one {len(self._schedulers)}")
        for child, child_state in zip(self._schedulers, saved):
            child.load_state_dict(child_state)
        super()._load_state(state_dict)


class SequentialLR(CompositeScheduler):
    """Runs `schedulers` one after another, switching at each epoch in `milestones`.

    The first runs from epoch 0; scheduler k + 1 takes over at milestones[k], starting at
    its own epoch 0 from the initial lrs (its closed form at 0). Construction undoes the
    steps the schedulers took when they were built, resets the lrs to `initial_lr` and
    takes the first scheduler's step 0. Only the first may itself be composite.
    """

    def __init__(self, optimizer, schedulers, milestones, last_epoch: int = -1):
        owner = "SequentialLR"
        check_optimizer(optimizer, owner)
        schedulers = check_children(owner, optimizer, schedulers)
        for i, scheduler in enumerate(schedulers[1:], start=1):
            if isinstance(scheduler, CompositeScheduler):
                raise ValueError(f"{owner}: scheduler {i} is a {type(scheduler).__name__}, "
                                 "which cannot restart at a milestone; only the first "
                                 "scheduler may be composite")
        milestones = list(milestones) if isinstance(milestones, Iterable) else milestones
        if not isinstance(milestones, list) or len(milestones) != len(schedulers) - 1:
            raise ValueError(f"{owner}: milestones must be a list of {len(schedulers) - 1} "
                             f"epochs (one fewer than the schedulers), got {milestones!r}")
        for i, milestone in enumerate(milestones):
            check_int(owner, f"milestones[{i}]", milestone, milestones[i - 1] + 1 if i else 1)
        self._schedulers = schedulers
        self._milestones = milestones
        self.optimizer = optimizer
        self.last_epoch = check_int(owner, "last_epoch", last_epoch, -1) + 1
        for group in optimizer.param_groups:
            group["lr"] = group["initial_lr"]
        self.base_lrs = group_values(optimizer, "initial_lr")
        undo_initial_steps(self)
        first = self._schedulers[bisect.bisect_right(milestones, 0)]
        first._initial_step()
        self._last_lr = first.get_last_lr()

    def step(self) -> None:
        self.last_epoch += 1
        index = bisect.bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[index]
        if index > 0 and self._milestones[index - 1] == self.last_epoch:
            scheduler._jump_to(0)
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()


class ChainedScheduler(CompositeScheduler):
    """Steps all of `schedulers` at every step, in order, so their effects multiply (for
    chainable schedulers), e.g. ConstantLR's factor on top of ExponentialLR's decay.

    `optimizer` defaults to the schedulers'; construction leaves the lrs as they are.
    """

    def __init__(self, schedulers, optimizer=None):
        owner = "ChainedScheduler"
        if optimizer is None:
            if isinstance(schedulers, Iterable) and not isinstance(schedulers, LRScheduler):
                schedulers = list(schedulers)
                optimizer = getattr(schedulers[0], "optimizer", None) if schedulers else None
        else:
            check_optimizer(optimizer, owner)
        self._schedulers = check_children(owner, optimizer, schedulers)
        self.optimizer = optimizer
        self._last_lr = group_values(optimizer, "lr")

    def step(self) -> None:
        for scheduler in self._schedulers:
            scheduler.step()
        self._last_lr = group_values(self.optimizer, "lr")
