"""`autocast`: run a region's ops in float16 where that is safe and in float32 where not."""

from __future__ import annotations

import functools

from .. import dtypes
from ..autograd.autocast_state import AUTOCAST, snapshot, use_settings
from ..errors import DTypeError

# float16, and bfloat16 through ml_dtypes on the CPU only (CuPy has no bfloat16)
_LOWER_DTYPES = ("float16", "bfloat16")


class autocast:
    """Mixed precision for a region: a context manager and a function decorator.

    Inside it, on `device_type` ("cpu", "cuda"; every device type when None), each op
    follows the policy it declares (`dlfree.amp.policies()` lists them): the ops that are
    fast and safe in lower precision ("lower": matrix products, convolutions, attention)
    cast their floating inputs to `dtype`, the ops that need range or precision
    ("float32": softmax, the norms, sums, the losses, exp and log) compute in float32 and
    return float32, and the ops that combine inputs ("promote": cat, addcmul, ...) cast them
    to the widest among them. Other ops run in their inputs' dtype and promote mixed inputs
    as usual (float16 + float32 gives float32). float64 and integer tensors are never cast,
    nor are in-place ops. The casts are recorded, so the gradients of float32 weights come
    back in float32; backward runs each op in the dtype its forward used, so call it inside
    or after the region alike.

    This is the policy of torch.autocast on CUDA with float16 (torch's CPU policy differs:
    it defaults to bfloat16 and keeps fewer ops in float32). float16 on the CPU is for
    checking a model's numerics, not for speed. Regions nest, `autocast(enabled=False)`
    inside one turns it off for a block, and the setting is per thread.
    `cache_enabled` lets a region cast each weight (a leaf that requires grad) once, however
    many ops use it.
    """

    def __init__(self, device_type: str | None = None, dtype=dtypes.float16,
                 enabled: bool = True, cache_enabled: bool = True):
        if device_type is not None:
            _check_device_type(device_type)
        dtype = dtypes.float16 if dtype is None else dtypes.as_dtype(dtype)
        if dtype.name not in _LOWER_DTYPES:
            raise DTypeError(f"autocast: dtype must be dlfree.float16 or dlfree.bfloat16, got "
                             f"{dtype!r}")
        if dtype.name == "bfloat16" and device_type == "cuda":
            raise DTypeError("autocast: bfloat16 regions run on the CPU only (CuPy has no "
                             "bfloat16); use dtype=dlfree.float16 on cuda")
        self.device_type = device_type
        self.dtype = dtype
        self.enabled = bool(enabled)
        self.cache_enabled = bool(cache_enabled)
        self._outer: list = []  # the settings each open `with` replaced, innermost last

    def __enter__(self) -> autocast:
        current, default, _ = snapshot()
        self._outer.append((current, default, AUTOCAST.cache_enabled))
        lower = self.dtype.np if self.enabled else None
        if self.device_type is None:
            use_settings(({}, lower, self.cache_enabled))
        else:
            use_settings(({**current, self.device_type: lower}, default, self.cache_enabled))
        AUTOCAST.depth += 1
        return self

    def __exit__(self, *exc) -> bool:
        AUTOCAST.depth -= 1
        use_settings(self._outer.pop())
        if AUTOCAST.depth == 0:  # the casts cached for the region's forward are stale now
            AUTOCAST.cache.clear()
        return False

    def __call__(self, fn):
        """Use as a decorator: every call of `fn` runs in a region with these settings."""
        settings = (self.device_type, self.dtype, self.enabled, self.cache_enabled)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with autocast(*settings):
                return fn(*args, **kwargs)

        return wrapper


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """Whether ops on `device_type` are autocast here (on any device type when None)."""
    if device_type is None:
        return AUTOCAST.on
    return AUTOCAST.lower_dtype(device_type) is not None


def get_autocast_dtype(device_type: str):
    """The dtype autocast gives lower-precision ops on `device_type` (None when it is off)."""
    lower = AUTOCAST.lower_dtype(device_type)
    return None if lower is None else dtypes.from_np(lower)


def _check_device_type(device_type) -> None:
    valid = "a device type such as 'cpu' or 'cuda' (no index)"
    if not isinstance(device_type, str):
        raise TypeError(f"autocast: device_type must be {valid}, got {device_type!r}")
    if ":" in device_type:
        raise ValueError(f"autocast: device_type must be {valid}, got {device_type!r}")
    if device_type in ("cpu", "cuda"):
        return
    from .. import registry

    known = sorted({b.device_type for _, b in registry.backends.items()} | {"cpu", "cuda"})
    if device_type not in known:
        raise ValueError(f"autocast: unknown device_type {device_type!r}; valid: "
                         f"{', '.join(known)}")
