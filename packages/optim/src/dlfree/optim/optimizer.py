"""`Optimizer`: the base class every dl.free optimizer derives from (PyTorch's contract)."""

from __future__ import annotations

import copy
import numbers
from collections import defaultdict
from collections.abc import Callable, Iterable

from dlfree import Tensor, enable_grad, no_grad


class Optimizer:
    """Updates parameters from their gradients; holds param groups and per-parameter state.

    `params` is an iterable of tensors, or of dicts (param groups) each holding "params"
    and any hyperparameters that differ from `defaults`. After construction:

    - `param_groups`: a list of dicts, each with "params" (a list of tensors) and every
      hyperparameter, filled from `defaults` where the group did not set it;
    - `state`: parameter tensor -> dict of its state, created lazily by the first step.

    Writing an optimizer means overriding two methods:

    - `_validate(self, group)`: check a dict of hyperparameters with `self._check`; it is
      called on `defaults` and on every group added, so bad values fail early, naming them.
    - `_update(self, group, params)`: update `params` (the group's tensors that have a
      gradient, all on one device; never empty) using `group`'s hyperparameters. It runs
      under `no_grad` and in that device's op context (NumPy's floating-point warnings
      silenced, as in every dl.free op; CuPy's current device set).
      Create state with `state = self.state[p]` (a dict, empty before the first step), keep
      state tensors as `Tensor`s (they are saved by `state_dict`) and scalars as Python
      numbers. Never modify `p.grad`. Write into `p` with in-place tensor ops so its
      version counter advances: `p.add_`, `p.sub_`, `p.mul_` cost one ufunc with `out=`
      under no_grad, and `_foreach.add_to_param_(p, array, alpha)` adds a raw array. The
      arithmetic on the way may use raw arrays (`t.array`, `p.device.xp`, `out=`), and
      `self._scratch(p, slot)` lends temporary arrays shaped like `p`.
    """

    def __init__(self, params, defaults: dict):
        if not isinstance(defaults, dict):
            raise TypeError(f"{self._name}: defaults must be a dict of hyperparameters, got "
                            f"{type(defaults).__name__}")
        self._validate(defaults)
        self.defaults = defaults
        self.state: defaultdict[Tensor, dict] = defaultdict(dict)
        self.param_groups: list[dict] = []
        self._scratch_arrays: dict = {}
        if isinstance(params, Tensor | dict | set) or not isinstance(params, Iterable):
            raise TypeError(
                f"{self._name}: params must be an iterable (list) of tensors or of param-group "
                f"dicts, got {type(params).__name__}"
            )
        groups = list(params)
        if not groups:
            raise ValueError(f"{self._name}: got an empty parameter list; pass at least one "
                             "tensor (e.g. model.parameters())")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    # ----------------------------------------------------------------- for subclasses
    def _validate(self, group: dict) -> None:
        """Check the hyperparameters in `group` (override; see the class docstring)."""

    def _update(self, group: dict, params: list[Tensor]) -> None:
        """Apply one update to `params` with `group`'s hyperparameters (override)."""
        raise NotImplementedError(f"{self._name} does not implement _update(group, params)")

    def _check(self, name: str, value, ok: Callable[[float], bool], valid: str) -> None:
        """Raise ValueError naming `name` unless `value` is a real number with `ok(value)`."""
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not ok(value):
            raise ValueError(f"{self._name}: {name} must be {valid}, got {value!r}")

    def _check_nonnegative(self, group: dict, *names: str) -> None:
        """`_check` each named hyperparameter of `group` for being >= 0."""
        for name in names:
            self._check(name, group[name], lambda v: v >= 0, ">= 0")

    def _check_flags(self, group: dict, *names: str) -> None:
        """`_check_flag` each named hyperparameter of `group`."""
        for name in names:
            self._check_flag(name, group[name])

    def _check_flag(self, name: str, value) -> None:
        """Raise ValueError naming `name` unless `value` is True or False."""
        if not isinstance(value, bool):
            raise ValueError(f"{self._name}: {name} must be True or False, got {value!r}")

    def _check_betas(self, betas) -> None:
        """Raise ValueError unless `betas` is a pair of numbers, each in [0, 1)."""
        if not isinstance(betas, tuple | list) or len(betas) != 2:
            raise ValueError(f"{self._name}: betas must be a pair (beta1, beta2), got {betas!r}")
        for i, beta in enumerate(betas):
            self._check(f"betas[{i}]", beta, lambda v: 0 <= v < 1, "in [0, 1)")

    def _scratch(self, p: Tensor, slot: int = 0):
        """A temporary array of `p`'s shape, dtype and device, reused across calls.

        Its contents are undefined. Each `slot` is one array that serves every parameter
        of that dtype and device, so a slot's array is valid until its next `_scratch`.
        """
        array = p.array
        key = (p.device, array.dtype, slot)
        buf = self._scratch_arrays.get(key)
        if buf is None or buf.size < array.size:
            buf = p.device.xp.empty_like(array, shape=(max(array.size, 1),))
            self._scratch_arrays[key] = buf
        return buf[:array.size].reshape(array.shape)

    @property
    def _name(self) -> str:
        return type(self).__name__

    # ----------------------------------------------------------------- the public API
    def add_param_group(self, param_group: dict) -> None:
        """Add a group of parameters (with its own hyperparameters) to optimize."""
        if not isinstance(param_group, dict):
            raise TypeError(f"{self._name}: a param group must be a dict with a 'params' key, "
                            f"got {type(param_group).__name__}")
        if "params" not in param_group:
            raise ValueError(f"{self._name}: a param group needs a 'params' key; got keys "
                             f"{sorted(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set | dict) or not isinstance(params, Iterable):
            raise TypeError(f"{self._name}: a group's 'params' must be a tensor or an ordered "
                            f"iterable (list) of tensors, got {type(params).__name__}")
        params = list(params)
        for i, p in enumerate(params):
            self._check_param(p, i)
        if len({id(p) for p in params}) != len(params):
            raise ValueError(f"{self._name}: a param group lists the same tensor twice; "
                             "each parameter may appear once")
        taken = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in taken for p in params):
            raise ValueError(f"{self._name}: some parameters appear in more than one param "
                             "group; each parameter may belong to one group only")
        group = {**self.defaults, **param_group, "params": params}
        self._validate(group)
        self.param_groups.append(group)

    def _check_param(self, p, index: int) -> None:
        if not isinstance(p, Tensor):
            raise TypeError(f"{self._name}: parameter {index} is a {type(p).__name__}, not a "
                            "Tensor; pass tensors (e.g. model.parameters())")
        if not p.is_floating_point():
            raise TypeError(f"{self._name}: parameter {index} has dtype {p.dtype!r}; only "
                            "floating-point tensors can be optimized")
        if not p.is_leaf:
            raise ValueError(f"{self._name}: parameter {index} is not a leaf tensor (it has a "
                             "grad_fn); optimize leaves such as dl.Parameter, or detach() it")

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset every parameter's gradient: to None (the default), or to zeros in place."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    p.grad.detach_()
                    p.grad.zero_()

    def gradients_are_finite(self) -> bool:
        """Whether every parameter's gradient is free of NaN and inf (parameters without a
        gradient are skipped): the cheap guard for a training loop, to skip a bad step or
        stop before it spoils the weights.

        Each gradient gets one reduction on its device, and the per-tensor answers are
        combined there, so the host waits once per device (on CuPy) instead of once per
        tensor; on NumPy the same structure costs nothing extra.
        """
        flags: dict = {}
        for group in self.param_groups:
            for p in group["params"]:
                g = p.grad
                if g is not None:
                    flags.setdefault(g.device, []).append(g.device.xp.isfinite(g.array).all())
        # one read back per device: the synchronisation
        return all(bool(device.xp.stack(found).all()) for device, found in flags.items())

    def step(self, closure: Callable[[], Tensor] | None = None):
        """Update every parameter that has a gradient; return `closure()`'s loss if given.

        `closure` re-evaluates the model and its gradients; it runs with grad enabled.
        """
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        with no_grad():
            for group in self.param_groups:
                by_device: dict = {}
                for p in group["params"]:
                    if p.grad is not None:
                        by_device.setdefault(p.device, []).append(p)
                for device, params in by_device.items():
                    with device.context():
                        self._update(group, params)
        return loss

    # ----------------------------------------------------------------- state dicts
    def state_dict(self) -> dict:
        """The optimizer's state in PyTorch's layout, with copies of the state tensors.

        {"state": {index: {name: value}}, "param_groups": [{hyperparameters...,
        "params": [index, ...]}]}, where indices count parameters across groups in order.
        """
        index: dict[int, int] = {}
        groups = []
        for group in self.param_groups:
            ids = []
            for p in group["params"]:
                index.setdefault(id(p), len(index))
                ids.append(index[id(p)])
            packed = {k: copy.deepcopy(v) for k, v in group.items() if k != "params"}
            packed["params"] = ids
            groups.append(packed)
        state = {index[id(p)]: {k: _copy_value(v) for k, v in s.items()}
                 for p, s in self.state.items() if id(p) in index}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore state saved by `state_dict` (ours or PyTorch's, tensors converted).

        The groups must match this optimizer's in number and size, and the state tensors
        its parameters in shape. State tensors are copied to each parameter's device, and
        those with dimensions to its floating dtype; a 0-d "step" becomes a Python int.
        """
        if not isinstance(state_dict, dict) or set(state_dict) != {"state", "param_groups"}:
            keys = sorted(state_dict) if isinstance(state_dict, dict) else type(state_dict)
            raise ValueError(f"{self._name}.load_state_dict: expected a dict with keys "
                             f"'state' and 'param_groups', got {keys}")
        saved_groups = state_dict["param_groups"]
        if len(saved_groups) != len(self.param_groups):
            raise ValueError(f"{self._name}.load_state_dict: the saved state has "
                             f"{len(saved_groups)} param groups, this optimizer has "
                             f"{len(self.param_groups)}")
        by_index: dict = {}
        for i, (saved, group) in enumerate(zip(saved_groups, self.param_groups)):
            if len(saved["params"]) != len(group["params"]):
                raise ValueError(f"{self._name}.load_state_dict: param group {i} has "
                                 f"{len(saved['params'])} parameters in the saved state and "
                                 f"{len(group['params'])} here")
            by_index.update(zip(saved["params"], group["params"]))
        new_state: defaultdict[Tensor, dict] = defaultdict(dict)
        for index, saved in state_dict["state"].items():
            if isinstance(index, str) and index.isdigit():  # keys that went through JSON
                index = int(index)
            if index not in by_index:
                raise ValueError(f"{self._name}.load_state_dict: state for parameter "
                                 f"{index}, which no param group lists")
            p = by_index[index]
            new_state[p] = {k: self._load_value(k, v, p, index) for k, v in saved.items()}
        new_groups = []
        for saved, group in zip(saved_groups, self.param_groups):
            restored = {**self.defaults,
                        **{k: copy.deepcopy(v) for k, v in saved.items() if k != "params"}}
            restored["params"] = group["params"]
            self._validate(restored)
            new_groups.append(restored)
        self.state = new_state
        self.param_groups = new_groups

    def _load_value(self, key: str, value, p: Tensor, index):
        if not isinstance(value, Tensor):
            return copy.deepcopy(value)
        if key == "step" and value.ndim == 0:
            return int(value.item())
        self._check_state_shape(key, value, p, index)
        # Statistics shaped like the parameter take its dtype (a float32 checkpoint loads
        # into a float64 model); 0-d scalars keep theirs, so a resumed run is bit-exact.
        cast = value.is_floating_point() and value.ndim > 0
        return value.detach().to(device=p.device, dtype=p.dtype if cast else None).clone()

    def _check_state_shape(self, key: str, value: Tensor, p: Tensor, index) -> None:
        """A state tensor is 0-d, or has `p`'s dimensions, each equal to `p`'s or 1.

        (The `1`s admit factored statistics kept with keepdim; override for others.)
        """
        shape, want = tuple(value.shape), tuple(p.shape)
        if shape and (len(shape) != len(want) or
                      any(s not in (w, 1) for s, w in zip(shape, want))):
            raise ValueError(f"{self._name}.load_state_dict: state {key!r} of parameter "
                             f"{index} has shape {shape}, but the parameter has shape {want}")

    def __repr__(self) -> str:
        lines = [f"{self._name} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            lines += [f"    {k}: {group[k]}" for k in sorted(group) if k != "params"]
        lines.append(")")
        return "\n".join(lines)


def _copy_value(value):
    if isinstance(value, Tensor):
        return value.detach().clone()
    return copy.deepcopy(value)
