"""The differentiable ops, one module per family; importing this binds the Tensor methods.

The tensor families below are exported as `dl.*`; the neural-network families
(activation, attention, conv, dropout, embedding, linear, loss, norm, pool, resample) are
gathered by `dlfree.functional` instead, and `recurrent` is the recurrence that dlfree-nn's
RNN layers call.
"""

import importlib

from . import (  # noqa: F401
    activation,
    attention,
    conv,
    dropout,
    embedding,
    linear,
    loss,
    norm,
    pool,
    recurrent,
    resample,
)
from .cast import *  # noqa: F403
from .combining import *  # noqa: F403
from .comparison import *  # noqa: F403
from .complex_numbers import *  # noqa: F403
from .counting import *  # noqa: F403
from .decomposition import *  # noqa: F403
from .elementwise import *  # noqa: F403
from .grouped import *  # noqa: F403
from .householder import *  # noqa: F403
from .indexing import *  # noqa: F403
from .inplace import *  # noqa: F403
from .linalg import *  # noqa: F403
from .placing import *  # noqa: F403
from .pointwise import *  # noqa: F403
from .products import *  # noqa: F403
from .reduction import *  # noqa: F403
from .sampling import *  # noqa: F403
from .shape import *  # noqa: F403
from .softmax import *  # noqa: F403
from .sorting import *  # noqa: F403
from .special import *  # noqa: F403
from .statistics import *  # noqa: F403

TENSOR_FAMILIES = ("cast", "comparison", "elementwise", "indexing", "inplace", "linalg",
                   "reduction", "grouped", "shape", "softmax", "combining", "counting", "placing",
                   "pointwise", "products", "sampling", "sorting", "special", "statistics",
                   "complex_numbers", "decomposition", "householder")
__all__ = [name for family in TENSOR_FAMILIES
           for name in importlib.import_module(f"{__name__}.{family}").__all__]
