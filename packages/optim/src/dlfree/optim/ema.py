"""EMA: an exponential moving average of parameter values, to evaluate with averaged weights."""

from __future__ import annotations

import numbers
from contextlib import contextmanager

from dlfree import Tensor, no_grad


class EMA:
    """Keeps a shadow copy of each tensor that trails it as an exponential moving average.

    Each `update()` (call it after `optimizer.step()`) sets, for every tensor p,

        shadow = d * shadow + (1 - d) * p

    with d = decay, or with `use_num_updates=True` d = min(decay, (1 + n) / (10 + n)) at
    the n-th update, so early averages are not dominated by the initial weights
    (TensorFlow's `ExponentialMovingAverage` rule). The shadows start as copies of the
    tensors. `average_parameters()` evaluates with the averages and restores the trained
    values exactly; `swap()` exchanges the two; `copy_to()` keeps the averages for good.
    """

    def __init__(self, parameters, decay: float = 0.999, use_num_updates: bool = False):
        if isinstance(parameters, Tensor):
            parameters = [parameters]
        params = list(parameters)
        if not params:
            raise ValueError("EMA: got an empty parameter list; pass the tensors to average "
                             "(e.g. model.parameters())")
        for i, p in enumerate(params):
            if not isinstance(p, Tensor) or not p.is_floating_point():
                what = repr(p.dtype) if isinstance(p, Tensor) else type(p).__name__
                raise TypeError(f"EMA: parameter {i} is {what}; only floating-point tensors "
                                "can be averaged")
        if len({id(p) for p in params}) != len(params):
            raise ValueError("EMA: the same tensor is listed twice; list each once")
        _check_decay(decay)
        if not isinstance(use_num_updates, bool):
            raise ValueError(f"EMA: use_num_updates must be True or False, got "
                             f"{use_num_updates!r}")
        self.params = params
        self.decay = decay
        self.use_num_updates = use_num_updates
        self.num_updates = 0
        with no_grad():
            self.shadow = [p.detach().clone() for p in params]
        self._swapped = False

    def current_decay(self) -> float:
        """The decay the next `update()` will use."""
        if not self.use_num_updates:
            return self.decay
        n = self.num_updates + 1
        return min(self.decay, (1 + n) / (10 + n))

    def update(self) -> None:
        """Move every shadow toward its tensor's current value."""
        self._refuse_while_swapped("update")
        decay = self.current_decay()
        self.num_updates += 1
        for p, shadow in zip(self.params, self.shadow):
            average = shadow.array
            p.device.xp.multiply(average, decay, out=average)
            p.device.backend.add_scaled(average, p.array, 1 - decay)

    def swap(self) -> None:
        """Exchange each tensor's values with its shadow's (twice restores them exactly)."""
        with no_grad():
            for p, shadow in zip(self.params, self.shadow):
                trained = p.array.copy()
                p[...] = shadow
                shadow.array[...] = trained
        self._swapped = not self._swapped

    @contextmanager
    def average_parameters(self):
        """Within the block the tensors hold their averages; afterwards, their own values."""
        self._refuse_while_swapped("average_parameters")
        self.swap()
        try:
            yield self
        finally:
            self.swap()

    def copy_to(self) -> None:
        """Overwrite each tensor with its average (e.g. at the end of training)."""
        self._refuse_while_swapped("copy_to")
        with no_grad():
            for p, shadow in zip(self.params, self.shadow):
                p[...] = shadow

    def _refuse_while_swapped(self, method: str) -> None:
        if self._swapped:
            raise RuntimeError(f"EMA.{method}: the averages are swapped into the tensors; "
                               "call swap() again first")

    # ----------------------------------------------------------------- state dicts
    def state_dict(self) -> dict:
        """decay, use_num_updates, num_updates and copies of the shadows (in tensor order)."""
        self._refuse_while_swapped("state_dict")
        return {"decay": self.decay, "use_num_updates": self.use_num_updates,
                "num_updates": self.num_updates,
                "shadow": [shadow.clone() for shadow in self.shadow]}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore what `state_dict` saved; shadows are copied to each tensor's dtype and
        device, and must match it in number and shape."""
        self._refuse_while_swapped("load_state_dict")
        expected = {"decay", "use_num_updates", "num_updates", "shadow"}
        if not isinstance(state_dict, dict) or set(state_dict) != expected:
            got = sorted(state_dict) if isinstance(state_dict, dict) else type(state_dict)
            raise ValueError(f"EMA.load_state_dict: expected a dict with keys "
                             f"{sorted(expected)}, got {got}")
        _check_decay(state_dict["decay"])
        saved = state_dict["shadow"]
        if len(saved) != len(self.params):
            raise ValueError(f"EMA.load_state_dict: the saved state has {len(saved)} shadows, "
                             f"this EMA averages {len(self.params)} tensors")
        for i, (shadow, p) in enumerate(zip(saved, self.params)):
            if tuple(shadow.shape) != tuple(p.shape):
                raise ValueError(f"EMA.load_state_dict: shadow {i} has shape "
                                 f"{tuple(shadow.shape)}, its tensor {tuple(p.shape)}")
        self.shadow = [s.detach().to(device=p.device, dtype=p.dtype).clone()
                       for s, p in zip(saved, self.params)]
        self.decay = state_dict["decay"]
        self.use_num_updates = state_dict["use_num_updates"]
        self.num_updates = state_dict["num_updates"]


def _check_decay(decay) -> None:
    if isinstance(decay, bool) or not isinstance(decay, numbers.Real) or not 0 <= decay <= 1:
        raise ValueError(f"EMA: decay must be in [0, 1], got {decay!r}")
