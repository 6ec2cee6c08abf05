"""Lookahead: wraps any optimizer; every k steps, slow weights move toward the fast ones.

Zhang, Lucas, Hinton and Ba, "Lookahead Optimizer: k steps forward, 1 step back",
NeurIPS 2019 (arXiv:1907.08610), Algorithm 1.
"""

from __future__ import annotations

import numbers

from dlfree import Tensor, no_grad

from .optimizer import Optimizer


class Lookahead:
    """The inner ("fast") optimizer steps as usual; after every k-th step, for each parameter

        slow += alpha * (fast - slow);   fast = slow

    The slow weights start as each parameter's value when it first takes a step here.
    `param_groups`, `state`, `defaults`, `add_param_group` and `zero_grad` are the inner
    optimizer's, so LR schedulers and gradient clipping work on a Lookahead unchanged.
    """

    def __init__(self, optimizer: Optimizer, k: int = 5, alpha: float = 0.5):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"Lookahead: optimizer must be a dlfree.optim.Optimizer, got "
                            f"{type(optimizer).__name__}")
        _check_k(k)
        _check_alpha(alpha)
        self.optimizer = optimizer
        self.k = k
        self.alpha = alpha
        self.slow_params: dict[Tensor, Tensor] = {}
        self.step_count = 0

    @property
    def param_groups(self) -> list[dict]:
        return self.optimizer.param_groups

    @property
    def state(self):
        return self.optimizer.state

    @property
    def defaults(self) -> dict:
        return self.optimizer.defaults

    def add_param_group(self, param_group: dict) -> None:
        """Add a group to the inner optimizer; its slow weights start at its first step."""
        self.optimizer.add_param_group(param_group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        self.optimizer.zero_grad(set_to_none)

    def step(self, closure=None):
        """One inner step (returning `closure()`'s loss if given), then the slow update
        if this was the k-th step since the last one."""
        with no_grad():
            for p in self._params():
                if p not in self.slow_params:
                    self.slow_params[p] = p.detach().clone()
        loss = self.optimizer.step(closure)
        self.step_count += 1
        if self.step_count % self.k == 0:
            self._pull_back()
        return loss

    def _pull_back(self) -> None:
        with no_grad():
            for p in self._params():
                slow = self.slow_params[p]
                xp = p.device.xp
                difference = xp.subtract(p.array, slow.array)
                p.device.backend.add_scaled(slow.array, difference, self.alpha)
                p[...] = slow

    def _params(self):
        return [p for group in self.param_groups for p in group["params"]]

    # ----------------------------------------------------------------- state dicts
    def state_dict(self) -> dict:
        """The inner optimizer's state dict, copies of the slow weights keyed by parameter
        index (counted across groups, as the inner state is), k, alpha and the step count."""
        slow = {i: self.slow_params[p].clone() for i, p in enumerate(self._params())
                if p in self.slow_params}
        return {"optimizer": self.optimizer.state_dict(), "slow_params": slow, "k": self.k,
                "alpha": self.alpha, "step_count": self.step_count}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore what `state_dict` saved; slow weights are copied to each parameter's
        dtype and device, and must match its shape."""
        expected = {"optimizer", "slow_params", "k", "alpha", "step_count"}
        if not isinstance(state_dict, dict) or set(state_dict) != expected:
            got = sorted(state_dict) if isinstance(state_dict, dict) else type(state_dict)
            raise ValueError(f"Lookahead.load_state_dict: expected a dict with keys "
                             f"{sorted(expected)}, got {got}")
        _check_k(state_dict["k"])
        _check_alpha(state_dict["alpha"])
        params = self._params()
        slow_params = {}
        for index, slow in state_dict["slow_params"].items():
            if not isinstance(index, int) or not 0 <= index < len(params):
                raise ValueError(f"Lookahead.load_state_dict: slow weights for parameter "
                                 f"{index!r}, but the optimizer has {len(params)} parameters")
            p = params[index]
            if tuple(slow.shape) != tuple(p.shape):
                raise ValueError(f"Lookahead.load_state_dict: slow weights of parameter "
                                 f"{index} have shape {tuple(slow.shape)}, the parameter "
                                 f"{tuple(p.shape)}")
            slow_params[p] = slow.detach().to(device=p.device, dtype=p.dtype).clone()
        self.optimizer.load_state_dict(state_dict["optimizer"])
        self.slow_params = slow_params
        self.k, self.alpha = state_dict["k"], state_dict["alpha"]
        self.step_count = state_dict["step_count"]

    def __repr__(self) -> str:
        return f"Lookahead(k={self.k}, alpha={self.alpha}, optimizer={self.optimizer!r})"


def _check_k(k) -> None:
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 1:
        raise ValueError(f"Lookahead: k (inner steps per slow update) must be an integer "
                         f">= 1, got {k!r}")


def _check_alpha(alpha) -> None:
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or not 0 < alpha <= 1:
        raise ValueError(f"Lookahead: alpha (the slow weights' step toward the fast ones) "
                         f"must be in (0, 1], got {alpha!r}")
