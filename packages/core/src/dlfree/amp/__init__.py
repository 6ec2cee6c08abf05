"""Mixed precision: `autocast` regions that run ops in float16 where safe, the table of
each op's autocast `policies()`, and `GradScaler`, the dynamic loss scaling that keeps
float16 gradients representable."""

from ..autograd.autocasting import policies
from .autocast_mode import autocast, get_autocast_dtype, is_autocast_enabled
from .grad_scaler import GradScaler

__all__ = ["autocast", "GradScaler", "is_autocast_enabled", "get_autocast_dtype", "policies"]
