"""The differentiable ops, one module per family; importing this binds the Tensor methods."""

import importlib

from .cast import *  # noqa: F403
from .comparison import *  # noqa: F403
from .elementwise import *  # noqa: F403
from .indexing import *  # noqa: F403
from .inplace import *  # noqa: F403
from .linalg import *  # noqa: F403
from .reduction import *  # noqa: F403
from .shape import *  # noqa: F403
from .softmax import *  # noqa: F403

FAMILIES = ("cast", "comparison", "elementwise", "indexing", "inplace", "linalg", "reduction",
            "shape", "softmax")
__all__ = [name for family in FAMILIES
           for name in importlib.import_module(f"{__name__}.{family}").__all__]
