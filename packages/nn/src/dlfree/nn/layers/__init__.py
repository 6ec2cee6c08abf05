"""The layer library, one module per family; `dlfree.nn` re-exports every class."""

from .activation import *  # noqa: F403
from .activation import __all__ as _activation
from .conv import *  # noqa: F403
from .conv import __all__ as _conv
from .dropout import *  # noqa: F403
from .dropout import __all__ as _dropout
from .embedding import *  # noqa: F403
from .embedding import __all__ as _embedding
from .lazy import *  # noqa: F403
from .lazy import __all__ as _lazy
from .linear import *  # noqa: F403
from .linear import __all__ as _linear
from .loss import *  # noqa: F403
from .loss import __all__ as _loss
from .normalization import *  # noqa: F403
from .normalization import __all__ as _normalization
from .padding import *  # noqa: F403
from .padding import __all__ as _padding
from .pooling import *  # noqa: F403
from .pooling import __all__ as _pooling
from .shape import *  # noqa: F403
from .shape import __all__ as _shape
from .sync_batch_norm import *  # noqa: F403
from .sync_batch_norm import __all__ as _sync_batch_norm

LAYERS = tuple(_linear + _embedding + _conv + _pooling + _normalization + _sync_batch_norm
               + _dropout + _shape + _activation + _padding + _lazy)
LOSSES = tuple(_loss)
__all__ = [*LAYERS, *LOSSES]
