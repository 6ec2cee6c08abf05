"""`LRScheduler`, the base of the learning-rate schedulers (PyTorch's contract), and the
helpers the schedulers share."""

from __future__ import annotations

import copy
import types

from ._checks import check_int


class LRScheduler:
    """Sets the learning rates of an optimizer's param groups as training advances.

    Construction writes `initial_lr` into every param group that lacks one, takes
    `base_lrs` from those, and takes step 0 at once, so the optimizer's first step already
    uses the schedule's first lr. Each `step()` (called after `optimizer.step()`) adds one to
    `last_epoch` and writes `get_lr()` into `group["lr"]`; `get_last_lr()` reports them.

    Most schedulers are "chainable", as in PyTorch: `get_lr` scales each group's current lr
    rather than recomputing it from `base_lrs`, so two schedulers on one optimizer compose
    (see `ChainedScheduler`), and the lr sequence equals PyTorch's to the last bit.
    A subclass implements `get_lr()`, the lrs for `last_epoch`, and may implement
    `_closed_form_lr()`, the lrs for `last_epoch` from `base_lrs` alone, which `SequentialLR`
    uses when it hands over to the scheduler.

    `state_dict()` holds every attribute except the optimizer, as plain Python data (no
    tensors, no functions), so it can be written to a checkpoint without pickle.
    `last_epoch` other than -1 resumes a schedule; the groups must then hold `initial_lr`.
    """

    # Attributes that are references to live objects or transient flags, not state.
    _not_state: tuple[str, ...] = ("optimizer", "_is_initial")
    # True while the constructor takes its step; some schedulers keep the lr then.
    _is_initial = False

    def __init__(self, optimizer, last_epoch: int = -1):
        self.optimizer = check_optimizer(optimizer, self._name)
        self.last_epoch = check_int(self._name, "last_epoch", last_epoch, -1)
        groups = optimizer.param_groups
        if last_epoch == -1:
            for group in groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            missing = [i for i, group in enumerate(groups) if "initial_lr" not in group]
            if missing:
                raise ValueError(
                    f"{self._name}: resuming at last_epoch={last_epoch} needs 'initial_lr' in "
                    f"every param group, but groups {missing} lack it; load the optimizer's "
                    "state_dict first, or start a new schedule with last_epoch=-1")
        self.base_lrs = [group["initial_lr"] for group in groups]
        self._initial_step()

    @property
    def _name(self) -> str:
        return type(self).__name__

    def _initial_step(self) -> None:
        """Take the constructor's step (to `last_epoch + 1`, i.e. step 0 for a new schedule)."""
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def get_lr(self) -> list[float]:
        """The lrs for `last_epoch`, one per param group; `step()` calls it and writes them.

        To read the current lrs use `get_last_lr()`: some schedulers change state here.
        """
        raise NotImplementedError(f"{self._name} does not implement get_lr()")

    def _closed_form_lr(self) -> list[float]:
        """The lrs for `last_epoch` computed from `base_lrs` alone (by default `get_lr()`)."""
        return self.get_lr()

    def step(self) -> None:
        """Advance the schedule by one epoch (or batch) and set the groups' lrs."""
        self.last_epoch += 1
        self._apply(self.get_lr())

    def _jump_to(self, epoch: int) -> None:
        """Set `last_epoch` to `epoch` and the lrs from the closed form (a hand-over)."""
        self.last_epoch = epoch
        self._apply(self._closed_form_lr())

    def _restart(self) -> None:
        """Start over at step 0 as the constructor does (the lrs must be back at base)."""
        self.last_epoch = -1
        self._initial_step()

    def _apply(self, lrs: list[float]) -> None:
        for group, lr in zip(self.optimizer.param_groups, lrs, strict=True):
            group["lr"] = lr
        self._last_lr = group_values(self.optimizer, "lr")

    def get_last_lr(self) -> list[float]:
        """The lrs the last step set, one per param group."""
        return list(self._last_lr)

    def state_dict(self) -> dict:
        """The scheduler's state: a copy of every attribute except the optimizer."""
        return {key: copy.deepcopy(value) for key, value in vars(self).items()
                if key not in self._not_state}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore state saved by `state_dict()` of a scheduler of this class and settings.

        Load the optimizer's state too: chainable schedulers continue from its lrs.
        """
        if not isinstance(state_dict, dict):
            raise TypeError(f"{self._name}.load_state_dict: expected a dict from state_dict(), "
                            f"got {type(state_dict).__name__}")
        expected = set(self.state_dict())
        if set(state_dict) != expected:
            missing = sorted(expected - set(state_dict))
            unexpected = sorted(set(state_dict) - expected)
            raise ValueError(f"{self._name}.load_state_dict: the state does not belong to this "
                             f"scheduler: missing keys {missing}, unexpected keys {unexpected}")
        self._load_state(state_dict)

    def _load_state(self, state_dict: dict) -> None:
        """Set the attributes from a state whose keys have been checked."""
        for key, value in state_dict.items():
            if key not in self._not_state:
                setattr(self, key, copy.deepcopy(value))


def check_optimizer(optimizer, owner: str):
    """Return `optimizer` if it has `param_groups`: a non-empty list of dicts with an 'lr'."""
    groups = getattr(optimizer, "param_groups", None)
    if not isinstance(groups, list) or not groups or \
            not all(isinstance(group, dict) and "lr" in group for group in groups):
        raise TypeError(f"{owner}: expected an optimizer (an object whose param_groups is a "
                        f"list of dicts with an 'lr'), got {type(optimizer).__name__}")
    return optimizer


def group_values(optimizer, key: str) -> list:
    """`group[key]` for every param group of `optimizer`."""
    return [group[key] for group in optimizer.param_groups]


def per_group(owner: str, name: str, optimizer, value) -> list:
    """`value` once per param group: a list or tuple of that length, or one value repeated."""
    count = len(optimizer.param_groups)
    if isinstance(value, list | tuple):
        if len(value) != count:
            raise ValueError(f"{owner}: {name} has {len(value)} values, but the optimizer has "
                             f"{count} param groups; give one value, or one per group")
        return list(value)
    return [value] * count


def callable_state(fn) -> dict | None:
    """What a state dict keeps of a user's callable: the attributes of a callable object,
    nothing of a plain function or lambda (their code is not data)."""
    if isinstance(fn, types.FunctionType) or not hasattr(fn, "__dict__"):
        return None
    return copy.deepcopy(vars(fn))


def load_callable_state(fn, state: dict | None) -> None:
    """Restore attributes saved by `callable_state` into the callable object `fn`."""
    if state is None:
        return
    if callable_state(fn) is None:
        raise ValueError(f"load_state_dict: the state holds attributes of a callable object, "
                         f"but the scheduler's function here is {fn!r}, which keeps none")
    vars(fn).update(copy.deepcopy(state))
