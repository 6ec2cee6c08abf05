"""`GradScaler`: dynamic loss scaling, so that float16 gradients neither underflow nor
overflow, with torch.amp.GradScaler's schedule and checks."""

from __future__ import annotations

import math
import numbers

import numpy as np

from .. import dtypes
from ..autograd.grad_mode import no_grad
from ..tensor import Tensor

_READY, _UNSCALED, _STEPPED = "ready", "unscaled", "stepped"
_STATE_KEYS = ("scale", "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker")


class GradScaler:
    """Scales the loss up before backward and the gradients back down before the step.

    Small float16 gradients underflow to zero; multiplying the loss by a large scale keeps
    them representable. `step` divides the gradients by the scale and skips the optimizer
    step when any of them is inf or nan (the scale was too large for this batch); `update`
    then multiplies the scale by `backoff_factor`, or by `growth_factor` after
    `growth_interval` steps in a row without a skip. One iteration:

        with dl.amp.autocast():
            loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)   # optional: to clip or inspect the true gradients
        scaler.step(optimizer)
        scaler.update()

    Any optimizer with `param_groups` and `step()` works. The gradients must be float32
    (keep float32 weights; autocast casts them for the forward), as in torch. With
    `enabled=False` every method passes through, so one loop serves both precisions.
    The scale lives on the host as a float32 value; the device of the scaled loss is where
    it is applied.
    """

    def __init__(self, init_scale: float = 2.0**16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000,
                 enabled: bool = True):
        _check_real("init_scale", init_scale, _positive_finite,
                    "a positive finite number (the device is that of the scaled loss)")
        self._check_factors(growth_factor, backoff_factor, growth_interval)
        self._enabled = bool(enabled)
        self._init_scale = float(init_scale)
        self._scale: float | None = None  # None until the first scale(), as torch's lazy init
        self._growth_factor = float(growth_factor)
        self._backoff_factor = float(backoff_factor)
        self._growth_interval = int(growth_interval)
        self._growth_tracker = 0
        self._optimizers: dict = {}  # id(optimizer) -> {"stage", "found_inf"} this iteration

    # ------------------------------------------------------------ the iteration
    def scale(self, outputs):
        """`outputs` (a tensor, or a list or tuple of them) times the current scale."""
        if not self._enabled:
            return outputs
        if self._scale is None:
            self._scale = _float32(self._init_scale)
        return self._scaled(outputs)

    def _scaled(self, outputs):
        if isinstance(outputs, Tensor):
            # a 0-d float32 tensor, so that the product promotes as torch's does
            return outputs * Tensor(self._scale, dtype=dtypes.float32, device=outputs.device)
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self._scaled(o) for o in outputs)
        raise TypeError(f"GradScaler.scale: outputs must be a Tensor or a list or tuple of "
                        f"Tensors, got {type(outputs).__name__}")

    def unscale_(self, optimizer) -> None:
        """Divide `optimizer`'s gradients by the scale in place, and note whether any is
        inf or nan. Optional: `step` does it when it has not been done this iteration."""
        if not self._enabled:
            return
        self._require_scale("unscale_")
        state = self._state(optimizer)
        if state["stage"] == _UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the "
                               "last update().")
        if state["stage"] == _STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        state["found_inf"] = _unscale_grads(optimizer, _float32(1.0 / self._scale))
        state["stage"] = _UNSCALED

    def step(self, optimizer, *args, **kwargs):
        """Unscale (unless done), then `optimizer.step(*args, **kwargs)` if every gradient
        is finite; returns what that step returns, or None when the step was skipped."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is "
                               "enabled.")
        self._require_scale("step")
        state = self._state(optimizer)
        if state["stage"] == _STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] == _READY:
            self.unscale_(optimizer)
        if state["found_inf"] is None:
            raise RuntimeError("GradScaler.step: the optimizer has no gradients to check (no "
                               "parameter has a .grad); call backward() on the scaled loss "
                               "before step()")
        result = None if state["found_inf"] else optimizer.step(*args, **kwargs)
        state["stage"] = _STEPPED
        return result

    def update(self, new_scale=None) -> None:
        """End the iteration: back off after a skipped step, grow after `growth_interval`
        good ones; or set the scale to `new_scale` (a number or a 1-element tensor)."""
        if not self._enabled:
            return
        self._require_scale("update")
        if new_scale is not None:
            self._scale = _float32(_as_number(new_scale))
        else:
            found = [s["found_inf"] for s in self._optimizers.values()
                     if s["found_inf"] is not None]
            if not found:
                raise RuntimeError("GradScaler.update: no inf checks were recorded since the "
                                   "last update(); call step(optimizer) (or unscale_) first")
            self._advance(any(found))
        self._optimizers = {}

    def _advance(self, found_inf: bool) -> None:
        """torch's schedule: the products are taken in double and stored in float32."""
        if found_inf:
            self._scale = _float32(self._scale * self._backoff_factor)
            self._growth_tracker = 0
            return
        self._growth_tracker += 1
        if self._growth_tracker == self._growth_interval:
            grown = _float32(self._scale * self._growth_factor)
            if math.isfinite(grown):  # past float32's range the scale stays where it is
                self._scale = grown
            self._growth_tracker = 0

    # ------------------------------------------------------------ settings
    def get_scale(self) -> float:
        """The current scale (init_scale before the first scale(); 1.0 when disabled)."""
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else self._scale

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        self._check_factors(new_factor, self._backoff_factor, self._growth_interval)
        self._growth_factor = float(new_factor)

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        self._check_factors(self._growth_factor, new_factor, self._growth_interval)
        self._backoff_factor = float(new_factor)

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        self._check_factors(self._growth_factor, self._backoff_factor, new_interval)
        self._growth_interval = int(new_interval)

    def is_enabled(self) -> bool:
        return self._enabled

    def state_dict(self) -> dict:
        """The scale and schedule as JSON-able values (torch's keys); {} when disabled."""
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval,
                "_growth_tracker": self._growth_tracker}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore what `state_dict` returned (a no-op when disabled, as torch)."""
        if not self._enabled:
            return
        if not isinstance(state_dict, dict) or not state_dict:
            raise ValueError("GradScaler.load_state_dict: the state dict is empty or not a dict, "
                             "possibly saved from a disabled GradScaler; valid: the dict "
                             f"state_dict() returns, with keys {list(_STATE_KEYS)}")
        missing = [k for k in _STATE_KEYS if k not in state_dict]
        if missing:
            raise ValueError(f"GradScaler.load_state_dict: missing keys {missing}; valid: the "
                             f"dict state_dict() returns, with keys {list(_STATE_KEYS)}")
        scale = state_dict["scale"]
        _check_real("scale", scale, _positive_finite, "a positive finite number")
        self._check_factors(state_dict["growth_factor"], state_dict["backoff_factor"],
                            state_dict["growth_interval"])
        tracker = state_dict["_growth_tracker"]
        if not isinstance(tracker, numbers.Integral) or tracker < 0:
            raise ValueError(f"GradScaler.load_state_dict: _growth_tracker must be a "
                             f"non-negative int, got {tracker!r}")
        self._init_scale = float(scale)
        if self._scale is not None:
            self._scale = _float32(scale)
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._growth_tracker = int(tracker)

    # ------------------------------------------------------------ helpers
    @staticmethod
    def _check_factors(growth_factor, backoff_factor, growth_interval) -> None:
        _check_real("growth_factor", growth_factor, lambda v: v > 1.0, "a number > 1.0")
        _check_real("backoff_factor", backoff_factor, lambda v: 0.0 < v < 1.0,
                    "a number in (0, 1)")
        _check_real("growth_interval", growth_interval, lambda v: v >= 1, "a positive int",
                    numbers.Integral)

    def _require_scale(self, method: str) -> None:
        if self._scale is None:
            raise RuntimeError(f"GradScaler.{method}: no loss has been scaled yet; call "
                               "scaler.scale(loss).backward() earlier in the iteration")

    def _state(self, optimizer) -> dict:
        if not hasattr(optimizer, "param_groups"):
            raise TypeError(f"GradScaler: expected an optimizer with param_groups and step(), "
                            f"got {type(optimizer).__name__}")
        return self._optimizers.setdefault(id(optimizer),
                                           {"stage": _READY, "found_inf": None})


def _unscale_grads(optimizer, inv_scale: float):
    """Multiply every gradient by `inv_scale` in place; True if any was inf or nan before,
    None if there were no gradients. Each gradient is read once for the check, whose
    per-tensor results are combined on their device: one host sync per device."""
    finite: dict = {}
    with no_grad():
        for group in optimizer.param_groups:
            for p in group["params"]:
                g = p.grad
                if g is None:
                    continue
                if g._data.dtype == np.float16:
                    raise ValueError("Attempting to unscale FP16 gradients: GradScaler needs "
                                     "float32 gradients; keep the parameters in float32 and let "
                                     "autocast cast them for the forward")
                finite.setdefault(g._device, []).append(g._device.xp.isfinite(g._data).all())
                g.mul_(inv_scale)
    if not finite:
        return None
    return not all(bool(dev.xp.stack(flags).all()) for dev, flags in finite.items())


def _float32(value: float) -> float:
    """`value` rounded to float32, as torch keeps the scale (inf past float32's range)."""
    with np.errstate(over="ignore"):
        return float(np.float32(value))


def _as_number(new_scale) -> float:
    if isinstance(new_scale, Tensor):
        if new_scale.numel() != 1 or new_scale.requires_grad:
            raise ValueError("GradScaler.update: new_scale must be a float or a 1-element "
                             f"tensor that does not require grad, got a tensor of shape "
                             f"{tuple(new_scale.shape)}")
        new_scale = new_scale.item()
    _check_real("new_scale", new_scale, _positive_finite, "a positive finite number")
    return float(new_scale)


def _positive_finite(value) -> bool:
    return 0 < value < math.inf


def _check_real(name: str, value, valid, what: str, kind=numbers.Real) -> None:
    """Raise unless `value` is a number of `kind` (not a bool) for which `valid(value)` holds."""
    if isinstance(value, bool) or not isinstance(value, kind):
        raise TypeError(f"GradScaler: {name} must be {what}, got {value!r}")
    if not valid(value):
        raise ValueError(f"GradScaler: {name} must be {what}, got {value!r}")
