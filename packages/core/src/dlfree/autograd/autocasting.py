"""Autocast as a mechanism of `Function.apply`: the per-thread region settings, the policy
an op declares, and the casts made at the entry of the ops that declare one.

An op states its policy once: a `Function` subclass in its class attribute `autocast`, or a
public op that checks or combines its inputs before reaching its Functions with the
`autocast_policy` decorator. The policies:

- "lower": floating inputs other than float64 go to the region's lower dtype (float16),
  for the ops that are fast and safe in it (matrix products, convolutions, attention);
- "float32": the same inputs go to float32, for the ops that need its range or precision
  (softmax, the norms, sums, the losses, exp and log);
- "promote": all floating inputs go to the widest floating dtype among them, for the ops
  that combine several inputs and want one dtype.

float64 and integer tensors are never cast, nothing is cast while backward runs (each op's
backward computes in the dtypes its forward chose, as in torch), and the casts are recorded
(`AutocastCast`), so float32 weights get float32 gradients. `dlfree.amp` is the user's side:
`amp.autocast` sets the settings kept here, and `amp.policies()` lists the declarations.

The settings live here, not in `amp`, because `Function.apply` reads them on every call:
autograd then needs nothing from `amp`, and `amp` imports autograd, in one direction.
"""

from __future__ import annotations

import functools
import inspect

from .. import dtypes
from ..tensor import Tensor
from .autocast_state import AUTOCAST
from .function import Function
from .grad_mode import STATE

__all__ = ["POLICIES", "autocast_policy", "cast_inputs", "policies"]

POLICIES = ("lower", "float32", "promote")

_FLOAT32 = dtypes.float32.np
_FLOAT64 = dtypes.float64.np


# ----------------------------------------------------------------------- the casts
class AutocastCast(Function):
    """`x.astype(dtype)` made by autocast; backward casts the gradient back to the source
    dtype, so that float32 weights get float32 gradients.

    It keeps nothing for backward, so backward never frees it: the cached cast of a weight
    can serve every graph built in one region, as torch's cast cache does.
    """

    keeps_bfloat16 = False  # the dtype asked for, whatever the input's

    def forward(self, x, dtype):
        self.source = dtypes.from_np(x.dtype)
        return x.astype(dtype)

    def backward(self, g):
        return (g.to(self.source),)

    def release(self) -> None:
        """Nothing to drop (see the class docstring)."""


def cast_inputs(policy: str, tensors: tuple) -> tuple:
    """`tensors` (non-tensors pass through) cast as `policy` says; what `Function.apply`
    calls inside a region for a Function that declares a policy."""
    if STATE.backward:  # each op runs in the dtype its forward chose, as in torch
        return tensors
    if policy == "lower":
        target = None
    elif policy == "float32":
        target = _FLOAT32
    elif policy == "promote":
        target = _widest(tensors)
        if target is None:
            return tensors
    else:
        raise ValueError(f"autocast: unknown policy {policy!r}; valid: {', '.join(POLICIES)}")
    return tuple([_cast(t, target) for t in tensors])


def _eligible(t) -> bool:
    """A floating tensor on a device type that the current region autocasts."""
    return isinstance(t, Tensor) and dtypes.kind(t._data.dtype) == "f" and \
        AUTOCAST.lower_dtype(t._device.type) is not None


def _widest(tensors):
    """The widest floating dtype among the eligible tensors (None when there is none)."""
    found = [t._data.dtype for t in tensors if _eligible(t)]
    return max(found, key=lambda d: d.itemsize) if found else None


def _cast(t, target):
    """`t` in `target` (None: its device's lower dtype) if autocast casts it, else `t`."""
    if not isinstance(t, Tensor):
        return t
    source = t._data.dtype
    if dtypes.kind(source) != "f" or source == _FLOAT64:
        return t
    lower = AUTOCAST.lower_dtype(t._device.type)
    if lower is None:
        return t
    dtype = lower if target is None else target
    if source == dtype:
        return t
    if not (AUTOCAST.cache_enabled and AUTOCAST.depth and STATE.enabled and t.requires_grad
            and t.grad_fn is None and t._view is None):
        return AutocastCast.apply(t, dtype=dtype)
    # a weight: cast once per region; its version tells an in-place update (a step) apart
    key = (id(t), dtype)
    hit = AUTOCAST.cache.get(key)
    if hit is not None and hit[0] is t and hit[1] == t._vc[0]:
        return hit[2]
    out = AutocastCast.apply(t, dtype=dtype)
    AUTOCAST.cache[key] = (t, t._vc[0], out)
    return out


# ------------------------------------------------------- policies of composite ops
_DECLARED: dict = {}  # public op name -> the policy its autocast_policy declares


def check_policy(policy, where: str) -> None:
    """Raise unless `policy` is one of POLICIES or None (no policy)."""
    if policy is not None and policy not in POLICIES:
        raise ValueError(f"{where}: unknown autocast policy {policy!r}; valid: "
                         f"{', '.join(map(repr, POLICIES))} or None")


def autocast_policy(policy: str | None, *, exclude: tuple = (), dtype_arg: str | None = None):
    """Declare the autocast policy of a public op that reaches its Functions only after
    checking, promoting or combining its inputs (linear, the losses, sum, ...), so that the
    casts come first, as torch makes them at the op's entry.

    Inside a region, the decorated op's tensor arguments (also those in a list or tuple
    argument) are cast as `policy` says, except the arguments named in `exclude` (batch
    norm's running statistics, updated in place); when the caller passes the argument
    named `dtype_arg` (not None), the op computes in that dtype and is not cast. The op's
    own inner ops then run without autocast, as torch runs an autocast op's kernels: a loss
    that is cast to float32 is not cast again inside. Policy None declares an op that is
    never autocast and whose inner ops are not either: in-place ops, which keep their
    tensor's dtype.

    Outside a region the wrapper only reads one flag and calls the op.
    """
    check_policy(policy, "autocast_policy")

    def declare(fn):
        params = inspect.signature(fn).parameters.values()
        names = [p.name for p in params]
        unknown = [n for n in (*exclude, dtype_arg) if n is not None and n not in names]
        if unknown:
            raise ValueError(f"autocast_policy: {fn.__name__} has no argument(s) {unknown}; "
                             f"valid: {names}")
        positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY,
                                                            p.POSITIONAL_OR_KEYWORD)]
        star = next((p.name for p in params if p.kind is p.VAR_POSITIONAL), None)
        cast = _CastCall(fn, policy, positional, star, frozenset(exclude), dtype_arg)

        @functools.wraps(fn)
        def op(*args, **kwargs):
            if not AUTOCAST.on:
                return fn(*args, **kwargs)
            return cast(args, kwargs)

        op.autocast = policy
        if policy is not None:
            _declare(fn.__name__, policy, f"autocast_policy on {fn.__qualname__}")
        return op

    return declare


def _declare(name: str, policy: str, where: str) -> None:
    known = _DECLARED.setdefault(name, policy)
    if known != policy:
        raise ValueError(f"{where}: op {name!r} already has autocast policy {known!r}, not "
                         f"{policy!r}; one name, one policy")


class _CastCall:
    """A decorated op called inside a region: its arguments cast, its body run with autocast
    off (see `autocast_policy`)."""

    def __init__(self, fn, policy, positional: list, star, exclude: frozenset, dtype_arg):
        self.fn, self.policy, self.exclude = fn, policy, exclude
        self.names, self.star_name = positional, star  # the names of positional arguments
        self.dtype_arg = dtype_arg
        self.dtype_index = positional.index(dtype_arg) if dtype_arg in positional else None

    def __call__(self, args: tuple, kwargs: dict):
        if self.policy is not None and not STATE.backward and not self._explicit_dtype(
                args, kwargs):
            args, kwargs = self._cast(args, kwargs)
        AUTOCAST.on = False
        try:
            return self.fn(*args, **kwargs)
        finally:
            AUTOCAST.on = True

    def _explicit_dtype(self, args: tuple, kwargs: dict) -> bool:
        if self.dtype_arg is None:
            return False
        if self.dtype_index is not None and self.dtype_index < len(args):
            return args[self.dtype_index] is not None
        return kwargs.get(self.dtype_arg) is not None

    def _name(self, i: int) -> str:
        return self.names[i] if i < len(self.names) else self.star_name

    def _cast(self, args: tuple, kwargs: dict) -> tuple:
        """The arguments with their tensors cast together (promote needs them all)."""
        slots = [("args", i, a) for i, a in enumerate(args) if self._name(i) not in self.exclude]
        slots += [("kwargs", k, a) for k, a in kwargs.items() if k not in self.exclude]
        tensors = []
        for _, _, a in slots:
            if isinstance(a, Tensor):
                tensors.append(a)
            elif isinstance(a, list | tuple):
                tensors.extend(t for t in a if isinstance(t, Tensor))
        if not tensors:
            return args, kwargs
        cast = iter(cast_inputs(self.policy, tuple(tensors)))
        args, kwargs = list(args), dict(kwargs)
        for where, key, a in slots:
            if isinstance(a, Tensor):
                a = next(cast)
            elif isinstance(a, list | tuple) and any(isinstance(t, Tensor) for t in a):
                a = type(a)(next(cast) if isinstance(t, Tensor) else t for t in a)
            else:
                continue
            if where == "args":
                args[key] = a
            else:
                kwargs[key] = a
        return tuple(args), kwargs


# ------------------------------------------------------------------------ the table
def policies() -> dict:
    """{op name: policy} for every op that declares one, sorted by name.

    A Function appears under its class name in lower case (Atan2 as "atan2"), a public op
    decorated with `autocast_policy` under its function name. Both come from the
    declarations themselves, so an op added with a policy is listed with it.
    """
    table = dict(_DECLARED)
    for cls in _subclasses(Function):
        if cls.autocast is None:
            continue
        check_policy(cls.autocast, f"Function {cls.__qualname__}")
        name = cls.__name__.lower()
        known = table.setdefault(name, cls.autocast)
        if known != cls.autocast:
            raise ValueError(f"autocast: op {name!r} has two policies, {known!r} and "
                             f"{cls.autocast!r} (Function {cls.__qualname__}); one name, one "
                             "policy")
    return dict(sorted(table.items()))


def _subclasses(cls) -> list:
    found = []
    for sub in cls.__subclasses__():
        found.append(sub)
        found.extend(_subclasses(sub))
    return found
