"""The differentiable ops, one module per family; importing this binds the Tensor methods."""

from . import cast, comparison, elementwise, indexing, linalg, reduction, shape, softmax
from .cast import *  # noqa: F403
from .comparison import *  # noqa: F403
from .elementwise import *  # noqa: F403
from .indexing import *  # noqa: F403
from .linalg import *  # noqa: F403
from .reduction import *  # noqa: F403
from .shape import *  # noqa: F403
from .softmax import *  # noqa: F403

__all__ = [name for family in (cast, comparison, elementwise, indexing, linalg, reduction,
                               shape, softmax) for name in family.__all__]
