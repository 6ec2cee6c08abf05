"""`dlfree.functional` (imported as `F`): the neural-network ops with PyTorch's signatures.

Each op lives in its family's module under `dlfree.ops`; this module gathers them.
"""

from __future__ import annotations

from .ops.activation import *  # noqa: F403
from .ops.attention import *  # noqa: F403
from .ops.conv import *  # noqa: F403
from .ops.dropout import *  # noqa: F403
from .ops.elementwise import logsigmoid, sigmoid, tanh  # noqa: F401
from .ops.embedding import *  # noqa: F403
from .ops.linear import *  # noqa: F403
from .ops.loss import *  # noqa: F403
from .ops.norm import *  # noqa: F403
from .ops.pool import *  # noqa: F403
from .ops.resample import *  # noqa: F403
from .ops.softmax import log_softmax, softmax  # noqa: F401
