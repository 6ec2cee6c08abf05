"""Schedulers driven by the user's functions of the epoch: LambdaLR and MultiplicativeLR."""

from __future__ import annotations

from .base import LRScheduler, callable_state, group_values, load_callable_state, per_group


def _check_lambdas(owner: str, optimizer, lr_lambda) -> list:
    fns = per_group(owner, "lr_lambda", optimizer, lr_lambda)
    for i, fn in enumerate(fns):
        if not callable(fn):
            raise TypeError(f"{owner}: lr_lambda must be a function of the epoch (or one per "
                            f"param group), but entry {i} is a {type(fn).__name__}")
    return fns


class _LambdaScheduler(LRScheduler):
    """Keeps one function per param group; its state dict keeps no functions, only the
    attributes of callable objects, which are restored into the scheduler's own callables."""

    _not_state = (*LRScheduler._not_state, "lr_lambdas")

    def __init__(self, optimizer, lr_lambda, last_epoch: int = -1):
        self.lr_lambdas = _check_lambdas(type(self).__name__, optimizer, lr_lambda)
        super().__init__(optimizer, last_epoch)

    def state_dict(self) -> dict:
        state = super().state_dict()
        state["lr_lambdas"] = [callable_state(fn) for fn in self.lr_lambdas]
        return state

    def _load_state(self, state_dict: dict) -> None:
        saved = state_dict["lr_lambdas"]
        if len(saved) != len(self.lr_lambdas):
            raise ValueError(f"{self._name}.load_state_dict: the state has {len(saved)} "
                             f"lr_lambdas, this scheduler {len(self.lr_lambdas)}")
        super()._load_state(state_dict)
        for fn, fn_state in zip(self.lr_lambdas, saved):
            load_callable_state(fn, fn_state)


class LambdaLR(_LambdaScheduler):
    """Sets the lr to the initial lr times a function of the epoch: lr = base_lr *
    lr_lambda(epoch). `lr_lambda` is one function, or a list with one per param group."""

    def get_lr(self) -> list[float]:
        return [base * fn(self.last_epoch) for fn, base in zip(self.lr_lambdas, self.base_lrs)]


class MultiplicativeLR(_LambdaScheduler):
    """Multiplies the lr by a function of the epoch every epoch after the first:
    lr(epoch) = lr(epoch - 1) * lr_lambda(epoch). `lr_lambda` is one function, or a list
    with one per param group."""

    def get_lr(self) -> list[float]:
        lrs = group_values(self.optimizer, "lr")
        if self._is_initial:
            return lrs
        return [lr * fn(self.last_epoch) for fn, lr in zip(self.lr_lambdas, lrs)]
